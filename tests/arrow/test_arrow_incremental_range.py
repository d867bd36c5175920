"""Which commits an incremental query returns rows of, by the table version's rules (no Spark):
version 6 ranges requested times, versions 8/9 completion times (Hudi 1.x), begin excluded and end
included on both; checked against Hudi in tests/interop/test_hudi_1x_incremental.py."""
from __future__ import annotations

from tablespec.engine.reader import incremental_commits
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.timeline.active import Timeline
from tablespec.hudi.timeline.instant import Instant

A, B, C, D = "20250101000000010", "20250101000000020", "20250101000000030", "20250101000000040"


def _layout_2() -> Timeline:
    """A requested before B but completed after it (two writers); C a clean, not a commit."""
    instants = [Instant(A, "commit", "completed", D), Instant(B, "commit", "completed", C),
                Instant(C, "clean", "completed", C), Instant("20250101000000050", "commit", "inflight")]
    return Timeline(LocalStorage(), "/t", instants, ".hoodie/timeline")


def _times(instants) -> list[str]:
    return [i.timestamp for i in instants]


def test_versions_8_and_9_range_completion_times():
    timeline = _layout_2()
    assert _times(incremental_commits(timeline, "0")) == [B, A]   # in completion order
    assert _times(incremental_commits(timeline, B)) == [B, A]     # B completed at C, after B
    assert _times(incremental_commits(timeline, C)) == [A]        # begin excluded
    assert _times(incremental_commits(timeline, "0", C)) == [B]   # end included; A completed later
    assert _times(incremental_commits(timeline, D)) == []


def test_version_6_ranges_requested_times():
    timeline = Timeline(LocalStorage(), "/t", [Instant(A, "commit", "completed"), Instant(B, "replacecommit", "completed"),
                                               Instant(C, "commit", "inflight")])
    assert _times(incremental_commits(timeline, A)) == [B]
    assert _times(incremental_commits(timeline, "0", A)) == [A]
    assert _times(incremental_commits(timeline, B)) == []

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


def test_versions_8_and_9_slice_a_merge_on_read_range_by_the_files_it_wrote(tmp_path):
    """d4 writes a log file; compaction C is requested; d5 (completed while C is pending) writes a log
    file; C completes after d5. A range of d4 and d5 reads both log files and not C's base file, as
    Hudi 1.0.2 and 1.2 read it (tests/interop/test_hudi_1x_incremental.py); the slice as of d5 (C's,
    by completion time) holds d5's log file only."""
    import json

    from tablespec.hudi.fs_view import FileSystemView
    from tablespec.hudi.merge_on_read import incremental_slices

    d0, d4, c, d5 = "20250101000000100", "20250101000000400", "20250101000000500", "20250101000000600"
    names = {d0: f"f1_0-1-0_{d0}.parquet", d4: f".f1_{d4}.log.1_0-1-0", c: f"f1_0-1-0_{c}.parquet",
             d5: f".f1_{d5}.log.1_0-1-0"}
    (tmp_path / "p").mkdir()
    timeline_dir = tmp_path / ".hoodie" / "timeline"
    timeline_dir.mkdir(parents=True)
    instants = [Instant(d0, "deltacommit", "completed", "20250101000000110"),
                Instant(d4, "deltacommit", "completed", "20250101000000410"),
                Instant(c, "commit", "completed", "20250101000000700"),
                Instant(d5, "deltacommit", "completed", "20250101000000610")]
    for instant in instants:
        (tmp_path / "p" / names[instant.timestamp]).write_bytes(b"x")
        stat = {"fileId": "f1", "path": f"p/{names[instant.timestamp]}", "partitionPath": "p", "prevCommit": "null"}
        (timeline_dir / instant.file_name).write_text(json.dumps({"partitionToWriteStats": {"p": [stat]}}))
    timeline = Timeline(LocalStorage(), str(tmp_path), instants, ".hoodie/timeline")
    view = FileSystemView.build(LocalStorage(), str(tmp_path), timeline, ["p"])
    assert [f.file_name.base_instant for f in view.latest_slices(as_of=d5)[0].log_files] == [d5]

    [read] = incremental_slices(view, incremental_commits(timeline, "20250101000000400", "20250101000000610"))
    assert read.base_file is None and [f.file_name.base_instant for f in read.log_files] == [d4, d5]
    [read] = incremental_slices(view, incremental_commits(timeline, "20250101000000410", "20250101000000610"))
    assert [f.file_name.base_instant for f in read.log_files] == [d5]
    [read] = incremental_slices(view, incremental_commits(timeline, "20250101000000400"))   # C in the range
    assert read.base_file is not None and read.base_file.file_name.instant == c and \
        [f.file_name.base_instant for f in read.log_files] == [d5]

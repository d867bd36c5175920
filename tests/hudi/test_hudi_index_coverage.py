"""Which data commits the record-level index has seen, from the marks on real timeline files."""
from __future__ import annotations

import pytest

from tablespec.hudi import index_coverage as coverage
from tablespec.hudi.commit import CommitMetadata, WriteStat
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.timeline import Timeline, TimelineWriter

ST = LocalStorage()


def ts(n: int) -> str:
    return f"2024010100000{n:04d}"


def commit(base, n: int, extra: dict | None = None, files=(("p1", "fg1", 3),), replaced=None, action="commit",
           complete=True):
    """Request, start and (unless `complete` is false) complete one instant writing `files`."""
    writer = TimelineWriter(ST, str(base))
    inflight = writer.start(writer.request(action, ts(n)))
    if complete:
        stats = {}
        for partition, fid, rows in files:
            stats.setdefault(partition, []).append(WriteStat(file_id=fid, path=f"{partition}/{fid}_0-0-0_{ts(n)}.parquet",
                                                             partition_path=partition, num_writes=rows))
        writer.complete(inflight, CommitMetadata(partition_to_write_stats=stats, extra_metadata=dict(extra or {}),
                                                 operation_type="UPSERT", partition_to_replace_file_ids=replaced))
    return inflight


def unseen(base) -> list[str]:
    return [i.timestamp for i in coverage.unseen_commits(Timeline.load(ST, str(base)))]


@pytest.fixture
def base(tmp_path):
    (tmp_path / ".hoodie").mkdir()
    return tmp_path


def test_only_unmarked_data_commits_after_the_build_are_unseen(base):
    commit(base, 1)                                               # before the build: covered by it
    commit(base, 2, coverage.build_marks(Timeline.load(ST, str(base))), files=())
    commit(base, 3, coverage.delta_marks())                       # tablespec wrote its delta
    commit(base, 4)                                               # Apache Hudi
    commit(base, 5, files=())                                     # no data (e.g. a schema commit)
    commit(base, 6, files=(("p2", "fg2", 5),), replaced={"p1": ["fg1"]}, action="replacecommit")
    assert unseen(base) == [ts(4), ts(6)]
    todo = coverage.catch_up(Timeline.load(ST, str(base)))
    assert todo.estimate() == {"commits": 2, "file_groups": 2, "rows": 5}
    assert coverage.commit_file_groups(Timeline.load(ST, str(base)), todo.instants) == {("p1", "fg1"): 0,
                                                                                        ("p2", "fg2"): 5}
    with pytest.raises(coverage.IndexBehind, match=f"{ts(4)}.commit, {ts(6)}.replacecommit.*tablespec apply"):
        coverage.refuse_unseen(Timeline.load(ST, str(base)), str(base), "a lookup")
    commit(base, 7, coverage.catch_up_marks(todo.instants), files=())
    assert unseen(base) == [] and coverage.catch_up(Timeline.load(ST, str(base))) is None
    commit(base, 8)
    assert unseen(base) == [ts(8)]


def test_a_write_pending_at_the_build_is_unseen_once_it_completes(base):
    straggler = commit(base, 1, complete=False)                   # e.g. a Hudi writer, still running
    marks = coverage.build_marks(Timeline.load(ST, str(base)))
    assert marks[coverage.PENDING] == ts(1)
    commit(base, 2, marks, files=())
    assert unseen(base) == []
    TimelineWriter(ST, str(base)).complete(straggler, CommitMetadata(
        partition_to_write_stats={"p1": [WriteStat(file_id="fg9", path="p1/x.parquet", partition_path="p1")]}))
    assert unseen(base) == [ts(1)]


def test_without_a_build_every_unmarked_data_commit_is_unseen(base):
    """A table created RECORD_LEVEL has no build: its index covers what tablespec marked."""
    commit(base, 1, coverage.delta_marks())
    commit(base, 2)
    assert unseen(base) == [ts(2)]

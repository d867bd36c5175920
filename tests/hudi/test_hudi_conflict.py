"""The optimistic conflict check: which commits completed since an action's basis touch its file groups."""
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.formats.naming import bucket_file_id
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.timeline.active import Timeline, TimelineWriter
from tablespec.hudi.timeline.conflict import ALL_PARTITIONS, Footprint, WriteConflictError, find_conflicts

ST = LocalStorage()


def _commit(base, ts, writes=(), replaced=None, action="commit"):
    w = TimelineWriter(ST, base)
    inflight = w.start(w.request(action, ts))
    stats = {}
    for partition, fid in writes:
        stats.setdefault(partition, []).append(WriteStat(file_id=fid, path=f"{partition}/{fid}_0-0-0_{ts}.parquet",
                                                         partition_path=partition))
    w.complete(inflight, CommitMetadata(partition_to_write_stats=stats, operation_type="UPSERT",
                                        partition_to_replace_file_ids=replaced))


def _ours(writes=(), replaced=None, partitions=()):
    stats = {}
    for p, f in writes:
        stats.setdefault(p, []).append(WriteStat(file_id=f, partition_path=p))
    return Footprint.of(CommitMetadata(partition_to_write_stats=stats, partition_to_replace_file_ids=replaced),
                        partitions)


def test_only_commits_completed_after_the_basis_count(tmp_path):
    base = str(tmp_path)
    _commit(base, "20261101000000000", [("a", "fg1")])
    basis = Timeline.load(ST, base)
    assert find_conflicts(basis, Timeline.load(ST, base), "20261101000000500", _ours([("a", "fg1")])) == []
    _commit(base, "20261101000000100", [("a", "fg1"), ("b", "fg2")])   # started before ours, finished after
    conflicts = find_conflicts(basis, Timeline.load(ST, base), "20261101000000500", _ours([("a", "fg1")]))
    assert [(c.instant, c.file_groups) for c in conflicts] == [("20261101000000100", ("a/fg1",))]


def test_disjoint_file_groups_do_not_conflict(tmp_path):
    base = str(tmp_path)
    basis = Timeline.load(ST, base)
    _commit(base, "20261101000000100", [("a", "new-fg")])
    assert find_conflicts(basis, Timeline.load(ST, base), "x", _ours([("a", "fg1")], {"a": ["fg2"]})) == []


def test_replaced_file_groups_conflict_both_ways(tmp_path):
    base = str(tmp_path)
    basis = Timeline.load(ST, base)
    _commit(base, "20261101000000100", [("a", "fg9")], replaced={"a": ["fg1"]}, action="replacecommit")
    now = Timeline.load(ST, base)
    assert find_conflicts(basis, now, "x", _ours([("a", "fg1")]))[0].file_groups == ("a/fg1",)   # we update what they replaced
    assert find_conflicts(basis, now, "x", _ours(replaced={"a": ["fg9"]}))[0].file_groups == ("a/fg9",)


def test_a_relayout_conflicts_with_new_file_groups_in_its_partitions(tmp_path):
    base = str(tmp_path)
    basis = Timeline.load(ST, base)
    _commit(base, "20261101000000100", [("a", "brand-new"), ("b", "other")])
    now = Timeline.load(ST, base)
    ours = _ours(replaced={"a": ["fg1"]}, partitions=["a"])
    assert [c.file_groups for c in find_conflicts(basis, now, "x", ours)] == [("a (new file groups)",)]
    assert find_conflicts(basis, now, "x", _ours(replaced={"c": ["fg1"]}, partitions=["c"])) == []
    everything = find_conflicts(basis, now, "x", _ours(partitions=[ALL_PARTITIONS]))
    assert everything[0].file_groups == ("a (new file groups)", "b (new file groups)")


def test_bucketed_tables_compare_buckets(tmp_path):
    base = str(tmp_path)
    basis = Timeline.load(ST, base)
    _commit(base, "20261101000000100", [("a", bucket_file_id(3) + "-0")])
    now = Timeline.load(ST, base)
    mine = _ours([("a", bucket_file_id(3) + "-0")])   # another uuid, same bucket
    assert find_conflicts(basis, now, "x", mine) == []
    assert find_conflicts(basis, now, "x", mine, bucketed=True)[0].file_groups == ("a/bucket 3",)


def test_own_instant_and_index_commits_are_not_candidates(tmp_path):
    base = str(tmp_path)
    basis = Timeline.load(ST, base)
    _commit(base, "20261101000000100", [("a", "fg1")])
    _commit(base, "20261101000000200")   # no write stats (a schema or index commit)
    assert find_conflicts(basis, Timeline.load(ST, base), "20261101000000100", _ours([("a", "fg1")])) == []


def test_error_names_instant_and_file_groups(tmp_path):
    base = str(tmp_path)
    basis = Timeline.load(ST, base)
    _commit(base, "20261101000000100", [("a", f"fg{i}") for i in range(7)])
    conflicts = find_conflicts(basis, Timeline.load(ST, base), "x", _ours([("a", f"fg{i}") for i in range(7)]))
    message = str(WriteConflictError(base, "20261101000000900", conflicts))
    assert "commit 20261101000000100 (a/fg0, a/fg1, a/fg2, a/fg3, a/fg4 and 2 more)" in message
    assert "Instant 20261101000000900 was rolled back" in message and "tablespec plan" in message

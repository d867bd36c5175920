"""Scheduling clustering is pure: hand-built observed states in, plans and actions out."""
from __future__ import annotations

import dataclasses

from test_builder import BASE, actions, load, state_for
from tablespec.hudi.clustering import Layout
from tablespec.hudi.instant import Instant
from tablespec.plan.clustering import clustering_plan
from tablespec.state import FileGroupState

MiB = 1024 * 1024
SIMPLE = BASE.replace("index: {type: BUCKET, numBuckets: 16}", "index: {type: SIMPLE}")


def with_clustering(text: str, clustering: str) -> str:
    return text + f"  clustering: {clustering}\n"


def files(*sizes_by_partition: tuple[str, list[int]]) -> tuple[FileGroupState, ...]:
    return tuple(FileGroupState(p, f"{p[-2:]}-{i:02d}-0", "20261121000000000", s, f"{p[-2:]}-{i:02d}-0_0-1-2_1.parquet")
                 for p, sizes in sizes_by_partition for i, s in enumerate(sizes))


def state(text: str, groups, commits: int = 4, **kw):
    return dataclasses.replace(state_for(text), file_groups=groups, commits_since_clustering=commits, **kw)


def spec(text: str):
    return load(text)[0].spec


def test_not_due_before_every_n_commits():
    text = with_clustering(SIMPLE, "{everyNCommits: 5}")
    groups = files(("d=01", [MiB] * 4))
    assert clustering_plan(spec(text), state(text, groups, commits=4)) is None
    assert clustering_plan(spec(text), state(text, groups, commits=5)) is not None


def test_stitching_takes_small_files_and_caps_group_bytes_and_count():
    text = with_clustering(SIMPLE, "{targetFileSize: 100MiB, smallFileLimit: 60MiB, maxBytesPerGroup: 200MiB, "
                                   "maxGroups: 3}")
    groups = files(("d=01", [70 * MiB, 50 * MiB, 50 * MiB, 50 * MiB, 50 * MiB, 10 * MiB]), ("d=02", [5 * MiB]))
    plan = clustering_plan(spec(text), state(text, groups))
    # the 70 MiB file is big enough; d=02 has one file (nothing to stitch); 210 MiB -> 200 + 10 MiB
    assert [(g.partition, len(g.slices), g.input_bytes // MiB, g.num_output_file_groups) for g in plan.groups] == [
        ("d=01", 4, 200, 2)]
    assert plan.layout == Layout()
    many = files(("d=01", [2 * MiB] * 10), ("d=02", [2 * MiB] * 10), ("d=03", [2 * MiB] * 10), ("d=04", [MiB] * 2))
    small_groups = with_clustering(SIMPLE, "{maxBytesPerGroup: 5MiB, maxGroups: 4}")
    assert len(clustering_plan(spec(small_groups), state(small_groups, many)).groups) == 4


def test_sorted_layouts_keep_single_files_and_record_the_layout():
    text = with_clustering(SIMPLE, "{strategy: HILBERT, sortColumns: [customer_id, amount]}")
    plan = clustering_plan(spec(text), state(text, files(("d=01", [MiB]), ("d=02", [MiB, MiB]))))
    assert [len(g.slices) for g in plan.groups] == [2, 1]
    assert plan.layout.params() == {"hoodie.clustering.plan.strategy.sort.columns": "customer_id,amount",
                                    "hoodie.layout.optimize.strategy": "hilbert"}


def test_layout_change_is_due_at_once_and_takes_every_file():
    text = with_clustering(SIMPLE, "{strategy: ZORDER, sortColumns: [customer_id, amount]}")
    groups = files(("d=01", [200 * MiB, MiB]))
    st = state(text, groups, commits=0, last_clustering="20261120000000000",
               last_clustering_layout=Layout("SORT", ("customer_id",)))
    act, = actions(text, st)
    assert act.kind == "clustering" and "differs from the last clustering's (SORT(customer_id)" in act.reasons[0]
    assert act.params["groups"][0]["input_files"] == 2
    same = dataclasses.replace(st, last_clustering_layout=Layout("ZORDER", ("customer_id", "amount")))
    assert actions(text, same) == []


def test_small_file_count_trigger_and_partition_filters():
    text = with_clustering(SIMPLE, "{maxSmallFiles: 3, everyNCommits: 100, latestPartitions: 1}")
    groups = files(("d=01", [MiB] * 3), ("d=02", [MiB] * 2))
    assert clustering_plan(spec(text), state(text, groups, commits=1)) is None  # 2 small files in the latest partition
    groups = files(("d=01", [MiB] * 3), ("d=02", [MiB] * 4))
    plan = clustering_plan(spec(text), state(text, groups, commits=1))
    assert {g.partition for g in plan.groups} == {"d=02"}
    regex = with_clustering(SIMPLE, "{partitionFilter: 'd=0[1]'}")
    assert {g.partition for g in clustering_plan(spec(regex), state(regex, groups)).groups} == {"d=01"}


def test_bucket_tables_get_one_group_per_bucket_file_group():
    text = with_clustering(BASE, "{strategy: SORT, sortColumns: [customer_id]}")
    groups = (FileGroupState("d=01", "00000000-aaaa-0", "1", MiB, "00000000-aaaa-0_0-1-2_1.parquet"),
              FileGroupState("d=01", "00000001-bbbb-0", "1", MiB, "00000001-bbbb-0_0-1-2_1.parquet"))
    plan = clustering_plan(spec(text), state(text, groups))
    assert [([s.file_id for s in g.slices], g.num_output_file_groups) for g in plan.groups] == [
        (["00000000-aaaa-0"], 1), (["00000001-bbbb-0"], 1)]
    unsorted = with_clustering(BASE, "{strategy: NONE}")
    assert clustering_plan(spec(unsorted), state(unsorted, groups)) is None  # nothing to stitch within a bucket


def test_pending_plan_is_run_first_and_its_file_groups_are_not_planned_again():
    text = with_clustering(SIMPLE, "{}")
    groups = files(("d=01", [MiB] * 4))
    first = clustering_plan(spec(text), state(text, groups))
    pending = {Instant("20261121000000001", "replacecommit", "requested"): first}
    st = state(text, groups, pending=tuple(pending), pending_clustering=pending)
    plan = actions(text, st)
    assert [(a.kind, a.params.get("instant")) for a in plan] == [("clustering", "20261121000000001")]
    assert clustering_plan(spec(text), st) is None  # every small file is under the pending plan
    inflight = {Instant("20261121000000001", "replacecommit", "inflight"): first}
    running = state(text, groups, pending=tuple(inflight), pending_clustering=inflight)
    assert actions(text, running) == []  # its writer is alive: left alone


def test_files_the_last_clustering_wrote_do_not_make_it_due_again():
    """A clustering of small partitions writes small files; they are as laid out as they get, so
    they neither count towards maxSmallFiles nor get rewritten alone (plan -> apply -> plan settles)."""
    text = with_clustering(SIMPLE, "{strategy: SORT, sortColumns: [customer_id], maxSmallFiles: 2, everyNCommits: 3}")
    last = "20261121000000000"  # files() writes every file at this instant
    clustered = files(("d=01", [MiB]), ("d=02", [MiB]), ("d=03", [MiB]), ("d=04", [MiB]))
    st = state(text, clustered, commits=0, last_clustering=last, last_clustering_layout=Layout("SORT", ("customer_id",)))
    assert clustering_plan(spec(text), st) is None
    assert actions(text, st) == []
    # new small files count, and a partition with new data is clustered with the old output
    fresh = clustered + (FileGroupState("d=04", "04-new-0", "20261121000000009", MiB, "04-new-0_0-1-2_9.parquet"),) * 1
    fresh += tuple(FileGroupState("d=03", f"03-new{i}-0", "20261121000000009", MiB, f"03-new{i}-0_0-1-2_9.parquet")
                   for i in range(2))
    plan = clustering_plan(spec(text), state(text, fresh, commits=1, last_clustering=last,
                                             last_clustering_layout=Layout("SORT", ("customer_id",))))
    assert sorted((g.partition, len(g.slices)) for g in plan.groups) == [("d=03", 3), ("d=04", 2)]
    # every N commits, files of partitions without new data are not re-sorted alone
    due = state(text, clustered + fresh[4:5], commits=3, last_clustering=last,
                last_clustering_layout=Layout("SORT", ("customer_id",)))
    assert [(g.partition, len(g.slices)) for g in clustering_plan(spec(text), due).groups] == [("d=04", 2)]


def test_a_layout_switch_cut_short_by_max_groups_continues_until_every_file_is_laid_out():
    text = with_clustering(SIMPLE, "{strategy: ZORDER, sortColumns: [customer_id, amount], maxGroups: 1, "
                                   "everyNCommits: 3}")
    switch = "20261121000000005"  # the first ZORDER clustering, after SORT ones
    old = files(("d=01", [200 * MiB]), ("d=02", [300 * MiB]))  # written before the switch, big
    new = (FileGroupState("d=03", "03-z-0", switch, 200 * MiB, "03-z-0_0-1-2_5.parquet"),)
    zorder = Layout("ZORDER", ("customer_id", "amount"))
    st = state(text, old + new, commits=0, last_clustering=switch, last_clustering_layout=zorder, relayout_since=switch)
    act, = actions(text, st)
    assert "2 file(s) still predate the switch to ZORDER(customer_id, amount)" in act.reasons[0]
    plan = clustering_plan(spec(text), st)
    assert [(g.partition, len(g.slices)) for g in plan.groups] == [("d=02", 1)]  # maxGroups: one at a time
    done = dataclasses.replace(st, file_groups=new + (dataclasses.replace(old[0], base_instant="20261121000000007"),
                                                      dataclasses.replace(old[1], base_instant=switch)),
                               last_clustering="20261121000000007")
    assert clustering_plan(spec(text), done) is None
    # due by commits as well: both reasons; switched again: only the new switch is the reason
    both, = actions(text, dataclasses.replace(st, commits_since_clustering=4))
    assert [r.split(" ")[1:3] for r in both.reasons] == [["file(s)", "still"], ["commits", "since"]]
    assert both.reasons[1].endswith("; everyNCommits is 3")  # reasons are not split at their own "; "
    again = with_clustering(SIMPLE, "{strategy: HILBERT, sortColumns: [customer_id, amount], maxGroups: 1}")
    switched, = [a for a in actions(again, st) if a.kind == "clustering"]
    assert len(switched.reasons) == 1 and "differs from the last clustering's" in switched.reasons[0]


def test_relayout_start_is_the_first_clustering_of_the_latest_layout_after_another():
    from tablespec.hudi.clustering import relayout_start
    s, z = Layout("SORT", ("a",)), Layout("ZORDER", ("a", "b"))
    assert relayout_start([]) is None
    assert relayout_start([("1", z), ("2", z)]) is None  # never switched
    assert relayout_start([("1", s), ("2", z), ("3", z)]) == "2"
    assert relayout_start([("1", z), ("2", s), ("3", z)]) == "3"

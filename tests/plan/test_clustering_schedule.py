"""Scheduling clustering is pure: hand-built observed states in, plans and actions out."""
from __future__ import annotations

import dataclasses

from test_builder import BASE, actions, load, state_for

from tablespec.hudi.services.clustering import ClusteringGroup, ClusteringPlan, Layout, SliceInfo
from tablespec.hudi.timeline.instant import Instant
from tablespec.plan.clustering import clustering_plan, describe_coverage, spec_coverage
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
    st = state(text, groups, commits=0, clusterings=(("20261120000000000", Layout("SORT", ("customer_id",))),))
    act, = actions(text, st)
    assert act.kind == "clustering" and "differs from the last clustering's (SORT(customer_id)" in act.reasons[0]
    assert act.params.groups[0].input_files == 2
    same = dataclasses.replace(st, clusterings=(("20261120000000000", Layout("ZORDER", ("customer_id", "amount"))),))
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
    assert [(a.kind, getattr(a.params, "instant", None)) for a in plan] == [("clustering", "20261121000000001")]
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
    sort = ((last, Layout("SORT", ("customer_id",))),)
    st = state(text, clustered, commits=0, clusterings=sort)
    assert clustering_plan(spec(text), st) is None
    assert actions(text, st) == []
    # new small files count, and a partition with new data is clustered with the old output
    fresh = clustered + (FileGroupState("d=04", "04-new-0", "20261121000000009", MiB, "04-new-0_0-1-2_9.parquet"),) * 1
    fresh += tuple(FileGroupState("d=03", f"03-new{i}-0", "20261121000000009", MiB, f"03-new{i}-0_0-1-2_9.parquet")
                   for i in range(2))
    plan = clustering_plan(spec(text), state(text, fresh, commits=1, clusterings=sort))
    assert sorted((g.partition, len(g.slices)) for g in plan.groups) == [("d=03", 3), ("d=04", 2)]
    # every N commits, files of partitions without new data are not re-sorted alone
    due = state(text, clustered + fresh[4:5], commits=3, clusterings=sort)
    assert [(g.partition, len(g.slices)) for g in clustering_plan(spec(text), due).groups] == [("d=04", 2)]


def test_a_layout_switch_cut_short_by_max_groups_continues_until_every_file_is_laid_out():
    text = with_clustering(SIMPLE, "{strategy: ZORDER, sortColumns: [customer_id, amount], maxGroups: 1, "
                                   "everyNCommits: 3}")
    switch = "20261121000000005"  # the first ZORDER clustering, after a SORT one
    old = files(("d=01", [200 * MiB]), ("d=02", [300 * MiB]))  # written before the switch, big
    new = (FileGroupState("d=03", "03-z-0", switch, 200 * MiB, "03-z-0_0-1-2_5.parquet"),)
    zorder = Layout("ZORDER", ("customer_id", "amount"))
    history = (("20261121000000003", Layout("SORT", ("customer_id",))), (switch, zorder))
    st = state(text, old + new, commits=0, clusterings=history)
    first, second = actions(text, st)  # maxGroups: one group per step
    assert "2 file(s) still predate the last clustering with ZORDER(customer_id, amount)" in first.reasons[0]
    assert [a.params.step.model_dump() for a in (first, second)] == [
        {"number": 1, "of": 2, "file_groups": 1, "of_file_groups": 2},
        {"number": 2, "of": 2, "file_groups": 1, "of_file_groups": 2}]
    assert second.reasons == ["step 2 of 2: the groups beyond maxGroups (1) of step 1"]
    plan = clustering_plan(spec(text), st)
    assert [(g.partition, len(g.slices)) for g in plan.groups] == [("d=02", 1)]  # the largest partition first
    # step 1 ran: step 2 is what is left, and is still due
    after = dataclasses.replace(st, file_groups=new + (old[0], dataclasses.replace(old[1], base_instant="20261121000000007")),
                                clusterings=history + (("20261121000000007", zorder),))
    step2, = actions(text, after)
    assert step2.params.groups == second.params.groups and "1 file(s) still predate" in step2.reasons[0]
    done = dataclasses.replace(after, file_groups=new + (dataclasses.replace(old[0], base_instant="20261121000000008"),
                                                         after.file_groups[-1]),
                               clusterings=after.clusterings + (("20261121000000008", zorder),))
    assert clustering_plan(spec(text), done) is None
    assert spec_coverage(spec(text), done)["percent"] == 100
    # due by commits as well: both reasons; switched again: only the new switch is the reason
    both = actions(text, dataclasses.replace(st, commits_since_clustering=4))[0]
    assert [r.split(" ")[1:3] for r in both.reasons] == [["file(s)", "still"], ["commits", "since"]]
    assert both.reasons[1].endswith("; everyNCommits is 3")  # reasons are not split at their own "; "
    again = with_clustering(SIMPLE, "{strategy: HILBERT, sortColumns: [customer_id, amount], maxGroups: 1}")
    switched = [a for a in actions(again, st) if a.kind == "clustering"]
    assert len(switched) == 3 and [a.params.step.number for a in switched] == [1, 2, 3]
    assert len(switched[0].reasons) == 1 and "differs from the last clustering's" in switched[0].reasons[0]


def test_a_spec_gaining_a_sorted_layout_lays_the_table_out_at_once_in_bounded_steps():
    """Not after everyNCommits: the declared layout is a promise about the data already there."""
    text = with_clustering(SIMPLE, "{strategy: SORT, sortColumns: [customer_id], maxGroups: 2, maxBytesPerGroup: 1MiB}")
    groups = files(("d=01", [MiB] * 3), ("d=02", [2 * MiB] * 2))
    gaining = state(text, groups, commits=1)
    gaining = dataclasses.replace(gaining, config=state_for(SIMPLE).config)  # the table's settings: no clustering
    acts = actions(text, gaining)
    assert [a.kind for a in acts] == ["update_settings", "clustering", "clustering", "clustering"]
    assert "declares layout SORT(customer_id)" in acts[1].reasons[0]
    assert [a.params.step.file_groups for a in acts[1:]] == [2, 2, 1]
    assert {a.params.step.of_file_groups for a in acts[1:]} == {5}
    assert spec_coverage(spec(text), gaining) == {
        "layout": "SORT(customer_id)", "file_groups": 5, "laid_out": 0, "percent": 0, "bytes": 7 * MiB,
        "laid_out_bytes": 0, "partitions": 2, "table_partitions": 2}
    # a table created with the layout: its new writes wait for everyNCommits
    assert actions(text, state(text, groups, commits=1)) == []


def test_each_step_apply_runs_is_the_step_the_plan_showed():
    """Apply plans each step again from the table the steps before it left: a partition a step cut
    short comes first, although it is no longer the largest."""
    text = with_clustering(SIMPLE, "{strategy: SORT, sortColumns: [customer_id], maxGroups: 3, maxBytesPerGroup: 1MiB}")
    st = dataclasses.replace(state(text, files(("d=01", [MiB] * 4), ("d=02", [MiB] * 3)), commits=0),
                             config=state_for(SIMPLE).config)
    steps = [a.params.groups for a in actions(text, st) if a.kind == "clustering"]
    assert [[g.partition for g in step] for step in steps] == [["d=01"] * 3, ["d=01", "d=02", "d=02"], ["d=02"]]
    planned = clustering_plan(spec(text), st)
    for number, instant in enumerate(("20261121000000007", "20261121000000008"), 1):  # run a step: its outputs
        taken = {(s.partition, s.file_id) for g in planned.groups for s in g.slices}
        st = dataclasses.replace(st, config=state_for(text).config, clusterings=st.clusterings + (
            (instant, Layout("SORT", ("customer_id",))),), file_groups=tuple(
            dataclasses.replace(fg, base_instant=instant) if (fg.partition, fg.file_id) in taken else fg
            for fg in st.file_groups))
        planned = clustering_plan(spec(text), st)
        assert [len(g.slices) for g in planned.groups] == [1] * len(steps[number])
        assert [g.partition for g in planned.groups] == [g.partition for g in steps[number]]
    assert clustering_plan(spec(text), dataclasses.replace(st, file_groups=tuple(
        dataclasses.replace(fg, base_instant="20261121000000008") for fg in st.file_groups))) is None


def test_coverage_counts_file_groups_a_clustering_with_the_declared_layout_wrote():
    """A file group rewritten since (an upsert) is not laid out as declared, whatever its order."""
    text = with_clustering(SIMPLE, "{strategy: ZORDER, sortColumns: [customer_id, amount], partitionFilter: 'd=0[12]'}")
    z, s = Layout("ZORDER", ("customer_id", "amount")), Layout("SORT", ("customer_id",))
    groups = (FileGroupState("d=01", "a-0", "20261121000000005", 3 * MiB, "a-0_0-1-2_5.parquet"),  # by ZORDER
              FileGroupState("d=01", "b-0", "20261121000000007", MiB, "b-0_0-1-2_7.parquet"),      # upserted since
              FileGroupState("d=02", "c-0", "20261121000000003", MiB, "c-0_0-1-2_3.parquet"),      # by SORT
              FileGroupState("d=03", "d-0", "20261121000000001", MiB, "d-0_0-1-2_1.parquet"))      # not clustered
    st = state(text, groups, commits=1, clusterings=(("20261121000000003", s), ("20261121000000005", z)))
    cov = spec_coverage(spec(text), st)
    assert (cov["laid_out"], cov["file_groups"], cov["percent"], cov["laid_out_bytes"]) == (1, 3, 33, 3 * MiB)
    assert describe_coverage(cov) == ("clustered as declared (ZORDER(customer_id, amount)): 1/3 file groups (33%) "
                                      "in the 2 of 3 partitions it clusters, 3.0 MiB of 5.0 MiB")
    assert spec_coverage(spec(with_clustering(SIMPLE, "{}")), st) is None  # NONE promises no order


def test_a_pending_plan_merging_buckets_or_sorting_by_a_nested_column_is_discarded_not_offered_to_run():
    """Hudi 1.2 plans every log-only bucket of a partition into one group; run, it would merge buckets
    (and a sort by a struct has no order): `plan` offers to discard such a plan, before apply changes
    anything (it would otherwise store the spec's settings first and then refuse the run)."""
    text = with_clustering(BASE, "{strategy: SORT, sortColumns: [customer_id]}")
    groups = (FileGroupState("d=01", "00000000-aaaa-0", "1", MiB, "00000000-aaaa-0_0-1-2_1.parquet"),
              FileGroupState("d=01", "00000001-bbbb-0", "1", MiB, "00000001-bbbb-0_0-1-2_1.parquet"))
    merging = ClusteringPlan((ClusteringGroup(tuple(SliceInfo("d=01", g.file_id, f"d=01/{g.base_file}")
                                                    for g in groups)),), Layout("SORT", ("customer_id",)))
    each = dataclasses.replace(merging, groups=tuple(ClusteringGroup((s,)) for s in merging.groups[0].slices))
    nested_text = BASE.replace("{name: amount, type: \"decimal(12,2)\"}", "{name: amount, type: \"struct<a:int>\"}")
    cases = [(text, merging, "it would merge or split buckets of a BUCKET table (a group of bucket(s) 0, 1 in "
                             "partition 'd=01' into 1 file group(s)"),
             (nested_text, dataclasses.replace(each, layout=Layout("SORT", ("amount",))),
              "it sorts by amount, not primitive columns")]
    for spec_text, pending_plan, why in cases:
        pending = {Instant("20261121000000001", "replacecommit", "requested"): pending_plan}
        [action] = actions(spec_text, state(spec_text, groups, pending=tuple(pending), pending_clustering=pending))
        assert (action.kind, action.params.discard_plans) == ("rollback", ["20261121000000001"]), action
        assert f"clustering plan 20261121000000001 can no longer run ({why}" in action.reasons[0], action.reasons
    pending = {Instant("20261121000000001", "replacecommit", "requested"): each}   # one bucket a group: it runs
    [run] = actions(text, state(text, groups, pending=tuple(pending), pending_clustering=pending))
    assert (run.kind, run.params.instant) == ("clustering", "20261121000000001")


def test_log_only_file_groups_are_clustered_sized_by_their_log_files():
    """A merge-on-read file group of log files only (Hudi 1.x writes them: BUCKET with non-blocking
    concurrency) is taken like any slice, weighed by its log files, and recorded in the plan with an
    empty data file path as Hudi 1.2 records one; a bucket table keeps one group per bucket."""
    from tablespec.hudi.services.clustering import decode_plan, encode_plan
    from tablespec.hudi.timeline.active import avro_content
    log = ".00000001-bbbb-0_20261121000000002.log.1_0-1-2"
    groups = (FileGroupState("d=01", "00000000-aaaa-0", "1", MiB, "00000000-aaaa-0_0-1-2_1.parquet"),
              FileGroupState("d=01", "00000001-bbbb-0", "20261121000000002", 0, "", 1, 3 * MiB, (log,)))
    text = with_clustering(BASE, "{strategy: SORT, sortColumns: [customer_id]}")
    plan = clustering_plan(spec(text), state(text, groups))
    assert [[(s.file_id, s.file_name, s.log_names, s.size // MiB) for s in g.slices] for g in plan.groups] == [
        [("00000000-aaaa-0", "00000000-aaaa-0_0-1-2_1.parquet", (), 1)], [("00000001-bbbb-0", None, (log,), 3)]]
    stored = avro_content(encode_plan(plan), "x.replacecommit.requested")
    assert [s["dataFilePath"] for g in stored["clusteringPlan"]["inputGroups"] for s in g["slices"]][1] == ""
    slices = lambda p: [(s.file_id, s.data_file, s.delta_files) for g in p.groups for s in g.slices]  # noqa: E731
    assert slices(decode_plan(stored, "x.replacecommit.requested")) == slices(plan)
    stitched = with_clustering(SIMPLE, "{strategy: NONE, smallFileLimit: 4MiB}")   # small by its log bytes
    plan = clustering_plan(spec(stitched), state(stitched, groups))
    assert [sorted(s.file_id for s in g.slices) for g in plan.groups] == [["00000000-aaaa-0", "00000001-bbbb-0"]]

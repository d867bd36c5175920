"""The cleaner (KEEP_LATEST_COMMITS) on tables written here with real files, checked against hudi-rs."""
import io
import json

import fastavro
import hudi
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tablespec.engine.reader import ReadError, snapshot_files
from tablespec.errors import StalePlanError, TablespecError
from tablespec.hudi.config import TableConfig, init_table
from tablespec.hudi.formats.avro import to_avro_schema
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.formats.naming import META_COLUMNS, BaseFileName, new_file_id, write_token
from tablespec.hudi.formats.partition import write_partition_metadata
from tablespec.hudi.fs_view import FileSystemView
from tablespec.hudi.io import LocalStorage, join
from tablespec.hudi.services.clean import (
    CLEAN_METADATA_SCHEMA,
    CLEANER_PLAN_SCHEMA,
    CleanPlan,
    earliest_commit_to_retain,
    earliest_readable_instant,
    execute_clean,
    plan_clean,
    resume_pending_cleans,
    schedule_clean,
)
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import Timeline, TimelineWriter
from tablespec.hudi.timeline.instant import Instant, new_instant_time
from tablespec.types import parse_type

ST = LocalStorage()
COLUMNS = [("id", parse_type("string"), True), ("value", parse_type("long"), True),
           ("part", parse_type("string"), True)]
SCHEMA = json.dumps(to_avro_schema(COLUMNS, "cleaned"), separators=(",", ":"))
A, B = "part=a", "part=b"


def _table(tmp_path) -> str:
    base = str(tmp_path / "cleaned")
    init_table(ST, base, TableConfig(name="cleaned", database="default", record_key_fields=["id"],
                                     partition_fields=["part"], hive_style_partitioning=True,
                                     key_generator_class="org.apache.hudi.keygen.SimpleKeyGenerator",
                                     create_schema=SCHEMA))
    return base


def _base_file(base, partition, file_id, instant, rows) -> WriteStat:
    name = BaseFileName(file_id, write_token(0, 1, 1), instant).format()
    rel = f"{partition}/{name}"
    data = {"_hoodie_commit_time": [instant] * len(rows),
            "_hoodie_commit_seqno": [f"{instant}_0_{n}" for n in range(len(rows))],
            "_hoodie_record_key": [k for k, _ in rows], "_hoodie_partition_path": [partition] * len(rows),
            "_hoodie_file_name": [name] * len(rows),
            "id": [k for k, _ in rows], "value": [v for _, v in rows], "part": [partition.split("=")[1]] * len(rows)}
    assert tuple(data)[:5] == META_COLUMNS
    pq.write_table(pa.table(data, schema=pa.schema([(k, pa.int64() if k == "value" else pa.string()) for k in data])),
                   join(base, rel))
    size = len(ST.read_bytes(join(base, rel)))
    return WriteStat(file_id=file_id, path=rel, prev_commit="null", num_writes=len(rows), num_inserts=len(rows),
                     total_write_bytes=size, partition_path=partition, file_size_in_bytes=size)


def _write(base, groups, action="commit", operation="UPSERT", replaced=None, complete=True) -> str:
    """One instant writing `groups` {(partition, file_id): [(key, value), ...]}; left inflight unless `complete`."""
    timeline = Timeline.load(ST, base)
    ts = new_instant_time(timeline.instants[-1].timestamp if timeline.instants else None)
    writer = TimelineWriter(ST, base)
    inflight = writer.start(writer.request(action, ts))
    stats = {}
    for (partition, file_id), rows in groups.items():
        write_partition_metadata(ST, base, partition, ts)
        stats.setdefault(partition, []).append(_base_file(base, partition, file_id, ts, rows))
    if complete:
        writer.complete(inflight, CommitMetadata(stats, extra_metadata={"schema": SCHEMA}, operation_type=operation,
                                                 partition_to_replace_file_ids=replaced))
    return ts


def _updates(base, n, fg_a, fg_b=None) -> list[str]:
    """n commits rewriting file group fg_a of partition a (value = commit number); the first
    also creates fg_b in partition b, which is never updated."""
    out = []
    for k in range(1, n + 1):
        groups = {(A, fg_a): [("1", k), ("2", 10 * k)]}
        if k == 1 and fg_b:
            groups[(B, fg_b)] = [("3", 3)]
        out.append(_write(base, groups, operation="INSERT" if k == 1 else "UPSERT"))
    return out


def _state(base):
    timeline = Timeline.load(ST, base)
    return timeline, FileSystemView.build(ST, base, timeline)


def _plan(base, keep):
    timeline, view = _state(base)
    return plan_clean(base, timeline, view, keep)


def _slices(base, as_of=None):
    _, view = _state(base)
    return sorted((s.partition, s.file_id, s.base_instant, s.base_file.name) for s in view.latest_slices(as_of=as_of))


def _hudi_rs_slices(base, as_of=None):
    table = hudi.HudiTableBuilder.from_base_uri(base).build()
    options = hudi.HudiReadOptions().with_as_of_timestamp(as_of) if as_of else None
    return sorted((s.partition_path, s.file_id, s.creation_instant_time, s.base_file_name)
                  for s in table.get_file_slices(options))


def _hudi_rs_rows(base):
    rows = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(base).build().read())
    return sorted(zip(rows["id"].to_pylist(), rows["value"].to_pylist()))


def _rows_as_of(base, as_of):
    files = snapshot_files(HudiTable.open(base), as_of)
    return sorted((r["id"], r["value"]) for f in files for r in pq.read_table(f, columns=["id", "value"]).to_pylist())


def _data_files(base):
    return sorted(f.path[len(base) + 1:] for f in ST.walk_files(base)
                  if "/.hoodie" not in f.path and f.name.endswith(".parquet"))


def _avro_records(base, file_name, schema):
    return list(fastavro.reader(io.BytesIO(ST.read_bytes(join(base, ".hoodie", file_name))), reader_schema=schema))


# --- retention -------------------------------------------------------------------------------

def test_plan_clean_within_retention_none(tmp_path):
    base = _table(tmp_path)
    timeline, view = _state(base)
    assert plan_clean(base, timeline, view, 10) is None  # empty table
    commits = _updates(base, 10, new_file_id(), new_file_id())
    assert _plan(base, 10) is None  # ten commits, ten kept
    assert earliest_commit_to_retain(Timeline.load(ST, base), 10) is None
    # Retaining from the second commit, the first commit's slice is the newest before it: Hudi keeps it.
    assert earliest_commit_to_retain(Timeline.load(ST, base), 9) is not None and _plan(base, 9) is None
    assert [f.path.split("_")[-1] for f in _plan(base, 8).files_to_delete] == [f"{commits[0]}.parquet"]


def test_plan_clean_keep_commits_below_one_raises(tmp_path):
    base = _table(tmp_path)
    _updates(base, 2, new_file_id())
    with pytest.raises(TablespecError, match="keep_commits must be at least 1"):
        _plan(base, 0)


def test_clean_twelve_commits_deletes_old_slices_snapshot_unchanged(tmp_path):
    base = _table(tmp_path)
    fg_a, fg_b = new_file_id(), new_file_id()
    commits = _updates(base, 12, fg_a, fg_b)
    slices, rows = _slices(base), _hudi_rs_rows(base)
    assert rows == [("1", 12), ("2", 120), ("3", 3)]
    plan = _plan(base, 9)
    assert plan.earliest_instant_to_retain == Instant(commits[3], "commit")
    assert plan.last_completed_commit == commits[-1]
    old = [f"{A}/{BaseFileName(fg_a, write_token(0, 1, 1), c).format()}" for c in commits[:2]]
    # commits[2]'s slice is the newest before the earliest commit to retain (Hudi keeps it);
    # fg_b's only slice is still read
    assert [f.path for f in plan.files_to_delete] == old
    assert plan.partitions == (A,) and plan.bytes == sum(ST.info(join(base, p)).size for p in old)
    assert plan.to_dict() == {"earliest_instant_to_retain": commits[3], "partitions": 1, "files": 2,
                              "bytes_to_free": plan.bytes}

    result = execute_clean(HudiTable.open(base), plan)
    assert sorted(result.deleted_files) == [join(base, p) for p in old] and result.failed_files == ()
    assert result.bytes_freed == plan.bytes and result.earliest_instant_to_retain == commits[3]
    assert not any(ST.exists(join(base, p)) for p in old)
    assert len(_data_files(base)) == 11  # ten slices of fg_a (commits[2:]), one of fg_b
    timeline = Timeline.load(ST, base)
    assert timeline.head == Instant(result.clean_instant, "clean") and result.clean_instant > commits[-1]
    assert earliest_readable_instant(timeline) == commits[3]
    assert _slices(base) == slices == _hudi_rs_slices(base)
    assert _hudi_rs_rows(base) == rows
    assert _plan(base, 9) is None  # plan -> apply -> plan: nothing left to clean


def test_time_travel_within_retention_works_cleaned_instant_raises(tmp_path):
    base = _table(tmp_path)
    commits = _updates(base, 12, new_file_id(), new_file_id())
    before = {c: _rows_as_of(base, c) for c in commits}
    execute_clean(HudiTable.open(base), _plan(base, 10))
    for c in commits[2:]:
        assert _rows_as_of(base, c) == before[c]
        assert all(ST.exists(f) for f in snapshot_files(HudiTable.open(base), c))
        assert _slices(base, c) == _hudi_rs_slices(base, c)
    for c in commits[:2]:
        with pytest.raises(ReadError, match=rf"instant {c} has been cleaned.*earliest instant still readable "
                                            rf"is {commits[2]}"):
            snapshot_files(HudiTable.open(base), c)
    assert snapshot_files(HudiTable.open(base)) == snapshot_files(HudiTable.open(base), commits[-1])


def test_replaced_groups_deleted_once_no_retained_instant_reads_them(tmp_path):
    base = _table(tmp_path)
    fg_a, fg_b, fg_c = new_file_id(), new_file_id(), new_file_id()
    c1 = _write(base, {(A, fg_a): [("1", 1)], (B, fg_b): [("3", 3)]}, operation="INSERT")
    c2 = _write(base, {(A, fg_a): [("1", 2)]})
    c3 = _write(base, {(A, fg_c): [("1", 2)]}, action="replacecommit", operation="CLUSTER", replaced={A: [fg_a]})
    c4 = _write(base, {(A, fg_c): [("1", 4)]})
    c5 = _write(base, {(A, fg_c): [("1", 5)]})
    name = {(fg, c): f"{A}/{BaseFileName(fg, write_token(0, 1, 1), c).format()}"
            for fg in (fg_a, fg_c) for c in (c1, c2, c3, c4, c5)}

    # Hudi keeps a group replaced at or after the earliest commit to retain whole (only groups
    # replaced strictly before it go): retaining from c2 or from the replacecommit c3 itself,
    # there is nothing to clean.
    assert earliest_commit_to_retain(Timeline.load(ST, base), 4) == Instant(c2, "commit")
    assert _plan(base, 4) is None
    assert earliest_commit_to_retain(Timeline.load(ST, base), 3) == Instant(c3, "replacecommit")
    assert _plan(base, 3) is None
    plan = _plan(base, 2)  # retains from c4: fg_a (replaced at c3) goes whole; fg_c's c3 is its newest before c4
    assert sorted(f.path for f in plan.files_to_delete) == sorted([name[fg_a, c1], name[fg_a, c2]])
    execute_clean(HudiTable.open(base), plan)
    assert _rows_as_of(base, c4) == [("1", 4), ("3", 3)]
    assert _rows_as_of(base, c5) == [("1", 5), ("3", 3)] == _hudi_rs_rows(base)
    assert _slices(base) == _hudi_rs_slices(base)
    assert fg_a not in {f.split("/")[1][:len(fg_a)] for f in _data_files(base)}
    with pytest.raises(ReadError, match="cleaned"):
        snapshot_files(HudiTable.open(base), c3)
    plan = _plan(base, 1)  # retains from c5: the replacing group's first slice goes too
    assert [f.path for f in plan.files_to_delete] == [name[fg_c, c3]]
    execute_clean(HudiTable.open(base), plan)
    assert _rows_as_of(base, c5) == [("1", 5), ("3", 3)] == _hudi_rs_rows(base)
    assert sorted(_data_files(base)) == sorted([name[fg_c, c4], name[fg_c, c5],
                                                f"{B}/{BaseFileName(fg_b, write_token(0, 1, 1), c1).format()}"])


def test_pending_write_caps_retention_and_its_files_survive(tmp_path):
    base = _table(tmp_path)
    fg_a, fg_b = new_file_id(), new_file_id()
    commits = _updates(base, 4, fg_a)
    pending = _write(base, {(A, fg_a): [("1", 99)], (B, fg_b): [("3", 99)]}, complete=False)
    commits += [_write(base, {(A, fg_a): [("1", k)]}) for k in range(5, 14)]
    timeline = Timeline.load(ST, base)
    assert earliest_commit_to_retain(timeline, 12) == Instant(commits[1], "commit")  # before the pending write
    for keep in (3, 9, 10):  # never past the last commit completed before the pending write began
        assert earliest_commit_to_retain(timeline, keep) == Instant(commits[3], "commit")
    plan = _plan(base, 3)  # commits[2]'s slice is the newest before commits[3]: Hudi keeps it
    assert [f.path.split("_")[-1] for f in plan.files_to_delete] == [f"{c}.parquet" for c in commits[:2]]
    execute_clean(HudiTable.open(base), plan)
    assert ST.exists(join(base, B, BaseFileName(fg_b, write_token(0, 1, 1), pending).format()))
    assert ST.exists(join(base, A, BaseFileName(fg_a, write_token(0, 1, 1), pending).format()))
    assert _rows_as_of(base, commits[3]) == [("1", 4), ("2", 40)]


def test_pending_clustering_plan_keeps_the_slices_it_reads(tmp_path):
    base = _table(tmp_path)
    fg_a = new_file_id()
    commits = _updates(base, 4, fg_a)
    plan_ts = new_instant_time(commits[-1])
    clustering = {"clusteringPlan": {"inputGroups": [{"slices": [{"fileId": fg_a, "partitionPath": A}]}]}}
    TimelineWriter(ST, base).request("replacecommit", plan_ts, json.dumps(clustering).encode())
    commits += [_write(base, {(A, fg_a): [("1", k)]}) for k in range(5, 9)]
    plan = _plan(base, 2)
    assert plan.earliest_instant_to_retain.timestamp == commits[3]  # not past the scheduled clustering
    execute_clean(HudiTable.open(base), plan)
    read_by_plan = BaseFileName(fg_a, write_token(0, 1, 1), commits[3]).format()
    assert ST.exists(join(base, A, read_by_plan))
    # commits[2]'s slice is the newest before the earliest commit to retain: Hudi keeps it too
    assert [f.split("_")[-1] for f in _data_files(base)] == [f"{c}.parquet" for c in commits[2:]]


def test_savepoint_protects_its_slices(tmp_path):
    base = _table(tmp_path)
    fg_a = new_file_id()
    commits = _updates(base, 7, fg_a)
    ST.write_bytes(join(base, ".hoodie", f"{commits[1]}.savepoint"), b"")
    plan = _plan(base, 2)
    # commits[1] is savepointed, commits[5:] retained, commits[4] the newest slice before them
    deleted = (commits[0], commits[2], commits[3])
    assert [f.path.split("_")[-1] for f in plan.files_to_delete] == [f"{c}.parquet" for c in deleted]
    execute_clean(HudiTable.open(base), plan)
    assert _rows_as_of(base, commits[1]) == [("1", 2), ("2", 20)]  # a savepoint stays readable
    with pytest.raises(ReadError, match="cleaned"):
        snapshot_files(HudiTable.open(base), commits[2])


# --- the transaction ---------------------------------------------------------------------------

def test_clean_instant_files_parse_with_hudi_schemas(tmp_path):
    base = _table(tmp_path)
    fg_a = new_file_id()
    commits = _updates(base, 5, fg_a)
    plan = _plan(base, 2)
    assert len(plan.files_to_delete) == 2
    result = execute_clean(HudiTable.open(base), plan, clean_ts=new_instant_time(commits[-1]))
    ts = result.clean_instant
    names = sorted(f.name for f in ST.list_dir(join(base, ".hoodie")) if f.name.startswith(ts))
    assert names == [f"{ts}.clean", f"{ts}.clean.inflight", f"{ts}.clean.requested"]
    for name in (f"{ts}.clean.requested", f"{ts}.clean.inflight"):
        [record] = _avro_records(base, name, CLEANER_PLAN_SCHEMA)
        assert record["earliestInstantToRetain"] == {"timestamp": commits[3], "action": "commit", "state": "COMPLETED"}
        assert (record["policy"], record["version"], record["lastCompletedCommitTimestamp"]) == \
            ("KEEP_LATEST_COMMITS", 2, commits[-1])
        assert record["filesToBeDeletedPerPartition"] == {} and record["partitionsToBeDeleted"] == []
        assert record["filePathsToBeDeletedPerPartition"] == {
            A: [{"filePath": join(base, f.path), "isBootstrapBaseFile": False} for f in plan.files_to_delete]}
    [meta] = _avro_records(base, f"{ts}.clean", CLEAN_METADATA_SCHEMA)
    files = [f.path.split("/")[-1] for f in plan.files_to_delete]
    assert {k: meta[k] for k in ("startCleanTime", "totalFilesDeleted", "earliestCommitToRetain",
                                 "lastCompletedCommitTimestamp", "version", "bootstrapPartitionMetadata")} == \
        {"startCleanTime": ts, "totalFilesDeleted": 2, "earliestCommitToRetain": commits[3],
         "lastCompletedCommitTimestamp": commits[-1], "version": 2, "bootstrapPartitionMetadata": {}}
    assert meta["partitionMetadata"] == {A: {"partitionPath": A, "policy": "KEEP_LATEST_COMMITS",
                                             "deletePathPatterns": files, "successDeleteFiles": files,
                                             "failedDeleteFiles": [], "isPartitionDeleted": False}}
    timeline = Timeline.load(ST, base)
    assert timeline.read_metadata(Instant(ts, "clean")) == meta
    assert timeline.read_metadata(Instant(ts, "clean", "requested"))["policy"] == "KEEP_LATEST_COMMITS"


@pytest.mark.parametrize("crash", ["after_requested", "mid_delete", "before_completed"])
def test_clean_interrupted_is_resumed(tmp_path, crash):
    base = _table(tmp_path)
    commits = _updates(base, 12, new_file_id(), new_file_id())
    rows, slices = _hudi_rs_rows(base), _slices(base)
    plan = _plan(base, 9)
    assert len(plan.files_to_delete) == 2  # mid_delete deletes one of them
    requested = schedule_clean(HudiTable.open(base), plan)
    if crash != "after_requested":
        TimelineWriter(ST, base).start(requested, ST.read_bytes(join(base, ".hoodie", requested.file_name)))
        for f in plan.files_to_delete[: 1 if crash == "mid_delete" else None]:
            ST.delete(join(base, f.path))
    # The table reads as before (or after) the clean meanwhile, by hudi-rs and tablespec.
    assert _hudi_rs_rows(base) == rows and _slices(base) == slices
    timeline = Timeline.load(ST, base)
    assert [str(i) for i in timeline.pending()] == [str(requested.to("requested" if crash == "after_requested"
                                                                     else "inflight"))]
    if crash != "after_requested":  # files may be gone already: time travel before E is refused
        assert earliest_readable_instant(timeline) == commits[3]
    [result] = resume_pending_cleans(HudiTable.open(base))
    assert result.clean_instant == requested.timestamp
    assert sorted(result.deleted_files) == [join(base, f.path) for f in plan.files_to_delete]
    assert Timeline.load(ST, base).pending() == ()
    assert not any(ST.exists(join(base, f.path)) for f in plan.files_to_delete)
    assert _hudi_rs_rows(base) == rows and _slices(base) == slices
    assert resume_pending_cleans(HudiTable.open(base)) == [] and _plan(base, 9) is None


def test_resume_clean_scheduled_by_hudi_v1_plan(tmp_path):
    """A version-1 plan (file names per partition) and file: URIs in a version-2 plan both resolve."""
    base = _table(tmp_path)
    commits = _updates(base, 5, new_file_id(), new_file_id())
    plan = _plan(base, 2)
    first, second = plan.files_to_delete
    record = {"earliestInstantToRetain": {"timestamp": commits[3], "action": "commit", "state": "COMPLETED"},
              "policy": "KEEP_LATEST_COMMITS", "version": 1,
              "filesToBeDeletedPerPartition": {A: [first.path.split("/")[-1]]}}
    out = io.BytesIO()
    fastavro.writer(out, CLEANER_PLAN_SCHEMA, [record])
    ts = new_instant_time(commits[-1])
    TimelineWriter(ST, base).request("clean", ts, out.getvalue())
    [result] = resume_pending_cleans(HudiTable.open(base))
    assert result.deleted_files == (join(base, first.path),) and ST.exists(join(base, second.path))

    record.update(version=2, filesToBeDeletedPerPartition={}, filePathsToBeDeletedPerPartition={
        A: [{"filePath": "file:" + join(base, second.path), "isBootstrapBaseFile": False}]})
    out = io.BytesIO()
    fastavro.writer(out, CLEANER_PLAN_SCHEMA, [record])
    TimelineWriter(ST, base).request("clean", new_instant_time(ts), out.getvalue())
    [result] = resume_pending_cleans(HudiTable.open(base))
    assert result.deleted_files == (join(base, second.path),) and not ST.exists(join(base, second.path))


def test_stale_clean_plan_refused(tmp_path):
    base = _table(tmp_path)
    commits = _updates(base, 4, new_file_id())
    plan = _plan(base, 2)
    stale = CleanPlan(Instant(new_instant_time(commits[-1]), "commit"), commits[-1], plan.files_to_delete)
    with pytest.raises(StalePlanError, match="plan the clean again"):
        execute_clean(HudiTable.open(base), stale)
    assert all(ST.exists(join(base, f.path)) for f in plan.files_to_delete)


def test_no_clean_means_every_completed_commit_readable(tmp_path):
    base = _table(tmp_path)
    commits = _updates(base, 3, new_file_id())
    assert earliest_readable_instant(Timeline.load(ST, base)) is None
    assert _rows_as_of(base, commits[0]) == [("1", 1), ("2", 10)]

"""Rolling back failed writes: timeline transaction, files, crash recovery, and hudi-rs agreeing."""
import io
import json
import os
import time

import fastavro
import hudi
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tablespec.errors import TablespecError
from tablespec.hudi.config import TableConfig, init_table
from tablespec.hudi.formats.avro import to_avro_schema
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.formats.naming import BaseFileName, new_file_id, write_token
from tablespec.hudi.formats.partition import write_partition_metadata
from tablespec.hudi.fs_view import FileSystemView
from tablespec.hudi.io import LocalStorage, join
from tablespec.hudi.services.rollback import (
    ROLLBACK_PLAN_SCHEMA,
    RollbackResult,
    pending_to_roll_back,
    recover,
    resume_pending_rollbacks,
    rollback,
)
from tablespec.hudi.table import HudiTable, Location
from tablespec.hudi.timeline.active import Timeline, TimelineWriter
from tablespec.hudi.timeline.heartbeat import Heartbeat, heartbeat_path
from tablespec.hudi.timeline.instant import Instant, new_instant_time
from tablespec.types import parse_type

ST = LocalStorage()
COLUMNS = [(name, parse_type(kind), True) for name, kind in (("id", "string"), ("value", "long"), ("part", "string"))]
SCHEMA = json.dumps(to_avro_schema(COLUMNS, "rb"), separators=(",", ":"))
HOUR_AGO = time.time() - 3600


# --- a small table written with tablespec's format layer and pyarrow ------------------------

def _base_file(storage, base, partition, file_id, instant, rows):
    name = BaseFileName(file_id, write_token(0, 1, 1), instant).format()
    data = {"_hoodie_commit_time": [instant] * len(rows),
            "_hoodie_commit_seqno": [f"{instant}_0_{n}" for n in range(len(rows))],
            "_hoodie_record_key": [k for k, _ in rows], "_hoodie_partition_path": [partition] * len(rows),
            "_hoodie_file_name": [name] * len(rows), "id": [k for k, _ in rows], "value": [v for _, v in rows],
            "part": [partition.split("=")[1]] * len(rows)}
    schema = pa.schema([(k, pa.int64() if k == "value" else pa.string()) for k in data])
    path = join(base, partition, name)
    write_partition_metadata(storage, base, partition, instant)
    sink = io.BytesIO()
    pq.write_table(pa.table(data, schema=schema), sink)
    storage.write_bytes(path, sink.getvalue())
    size = len(sink.getvalue())
    return WriteStat(file_id=file_id, path=f"{partition}/{name}", num_writes=len(rows), num_inserts=len(rows),
                     total_write_bytes=size, partition_path=partition, file_size_in_bytes=size)


def _write(base, files, action="commit", complete=True):
    """Write {(partition, file_id): rows} as one instant; a failed write stops before completing
    and leaves a stale heartbeat and Hudi-style markers, as a killed writer does."""
    instants = Timeline.load(ST, base).instants
    ts = new_instant_time(instants[-1].timestamp if instants else None)
    writer = TimelineWriter(ST, base)
    inflight = writer.start(writer.request(action, ts))
    stats = {}
    for (partition, file_id), rows in files.items():
        stats.setdefault(partition, []).append(_base_file(ST, base, partition, file_id, ts, rows))
        ST.write_bytes(join(base, ".hoodie/.temp", ts, partition, f"{file_id}.parquet.marker.CREATE"), b"")
    if complete:
        writer.complete(inflight, CommitMetadata(stats, extra_metadata={"schema": SCHEMA}, operation_type="UPSERT"))
        ST.delete_tree(join(base, ".hoodie/.temp", ts))
    else:
        ST.touch(heartbeat_path(base, ts))
        os.utime(heartbeat_path(base, ts), (HOUR_AGO, HOUR_AGO))
    return ts


@pytest.fixture
def table(tmp_path):
    """A table with one commit (part=a: 1, 2; part=b: 3) and the file group ids used."""
    return _make_table(str(tmp_path / "rb"))


def _make_table(base):
    init_table(ST, base, TableConfig(name="rb", database="default", record_key_fields=["id"],
                                     partition_fields=["part"], hive_style_partitioning=True,
                                     key_generator_class="org.apache.hudi.keygen.SimpleKeyGenerator",
                                     create_schema=SCHEMA))
    a, b = new_file_id(), new_file_id()
    c1 = _write(base, {("part=a", a): [("1", 1), ("2", 2)], ("part=b", b): [("3", 3)]})
    return base, {"a": a, "b": b, "c1": c1}


def _fail(base, ids):
    """An upsert that dies: rewrites group a, adds a group to part=b and a new partition part=c."""
    return _write(base, {("part=a", ids["a"]): [("1", 10), ("2", 20)], ("part=b", new_file_id()): [("4", 4)],
                         ("part=c", new_file_id()): [("5", 5)]}, complete=False)


def _data_files(base):
    return sorted(os.path.relpath(os.path.join(d, f), base) for d, dirs, files in os.walk(base)
                  if "/." not in d[len(base):] for f in files if not f.startswith("."))


def _state(base):
    """What readers see: our file slices, hudi-rs's file slices and rows."""
    ours = sorted((s.partition, s.file_id, s.base_instant, s.base_file.name)
                  for s in FileSystemView.build(ST, base, Timeline.load(ST, base)).latest_slices())
    rs = hudi.HudiTableBuilder.from_base_uri(base).build()
    slices = sorted((s.partition_path, s.file_id, s.creation_instant_time, s.base_file_name)
                    for s in rs.get_file_slices())
    rows = pa.Table.from_batches(rs.read())
    return ours, slices, sorted(zip(rows["id"].to_pylist(), rows["value"].to_pylist(),
                                    rows["_hoodie_commit_time"].to_pylist()))


def _timeline_files(base):
    return sorted(f for f in os.listdir(join(base, ".hoodie")) if f[0].isdigit())


# --- rollback of a failed write -------------------------------------------------------------

def test_rollback_of_inflight_commit_restores_the_table(table):
    base, ids = table
    before, files_before = _state(base), _data_files(base)
    assert before[0] == before[1] and [r[:2] for r in before[2]] == [("1", 1), ("2", 2), ("3", 3)]
    failed = _fail(base, ids)
    written = [f for f in _data_files(base) if failed in f]
    assert len(written) == 3 and _state(base) == before  # readers ignore the inflight instant
    timeline = Timeline.load(ST, base)
    assert [str(i) for i in timeline.pending()] == [f"{failed}.commit[inflight]"]

    result = rollback(HudiTable.open(base), timeline.pending()[0])

    assert isinstance(result, RollbackResult) and result.instant == Instant(failed, "commit", "inflight")
    assert result.deleted_files == sorted(join(base, f) for f in written)
    assert result.rollback_instant > failed
    r = result.rollback_instant
    assert _timeline_files(base) == [f"{ids['c1']}.commit", f"{ids['c1']}.commit.requested", f"{ids['c1']}.inflight",
                                     f"{r}.rollback", f"{r}.rollback.inflight", f"{r}.rollback.requested"]
    assert [f for f in _data_files(base) if failed in f] == []
    assert set(_data_files(base)) == set(files_before)  # partition metadata files are hidden: left alone
    assert os.path.exists(join(base, "part=c/.hoodie_partition_metadata"))
    assert not os.path.exists(heartbeat_path(base, failed))
    assert not os.path.exists(join(base, ".hoodie/.temp", failed))
    assert _state(base) == before

    timeline = Timeline.load(ST, base)
    assert timeline.pending() == () and timeline.last("rollback") == Instant(r, "rollback")
    meta = timeline.read_metadata(Instant(r, "rollback"))
    assert meta["startRollbackTime"] == r and meta["commitsRollback"] == [failed]
    assert meta["totalFilesDeleted"] == 3 and meta["version"] == 1 and meta["timeTakenInMillis"] >= 0
    assert meta["instantsRollback"] == [{"commitTime": failed, "action": "commit"}]
    assert sorted(meta["partitionMetadata"]) == ["part=a", "part=b", "part=c"]
    part_a = meta["partitionMetadata"]["part=a"]
    assert part_a["partitionPath"] == "part=a" and part_a["failedDeleteFiles"] == []
    assert [os.path.relpath(p, base) for p in part_a["successDeleteFiles"]] == [f for f in written if "part=a" in f]
    assert part_a["rollbackLogFiles"] == {} and part_a["logFilesFromFailedCommit"] == {}
    plan = timeline.read_metadata(Instant(r, "rollback", "requested"))
    assert plan["instantToRollback"] == {"commitTime": failed, "action": "commit"} and plan["version"] == 1
    assert sorted(f for req in plan["RollbackRequests"] for f in req["filesToBeDeleted"]) == result.deleted_files
    assert (ST.read_bytes(join(base, ".hoodie", f"{r}.rollback.inflight"))) == b""


def _full_name(schema):
    return schema["name"] if "." in schema["name"] else f"{schema['namespace']}.{schema['name']}"


def test_rollback_files_carry_hudis_avro_schemas(table):
    base, ids = table
    r = rollback(HudiTable.open(base), Instant(_fail(base, ids), "commit", "inflight")).rollback_instant
    expected = {
        "rollback.requested": ("org.apache.hudi.avro.model.HoodieRollbackPlan",
                               ["instantToRollback", "RollbackRequests", "version"]),
        "rollback": ("org.apache.hudi.avro.model.HoodieRollbackMetadata",
                     ["startRollbackTime", "timeTakenInMillis", "totalFilesDeleted", "commitsRollback",
                      "partitionMetadata", "version", "instantsRollback"]),
    }
    for suffix, (name, fields) in expected.items():
        with open(join(base, ".hoodie", f"{r}.{suffix}"), "rb") as f:
            reader = fastavro.reader(f)
            schema = reader.writer_schema
            assert _full_name(schema) == name
            assert [x["name"] for x in schema["fields"]] == fields
            assert len(list(reader)) == 1
    with open(join(base, ".hoodie", f"{r}.rollback"), "rb") as f:
        schema = fastavro.reader(f).writer_schema
    partition = schema["fields"][4]["type"]["values"]
    assert _full_name(partition) == "org.apache.hudi.avro.model.HoodieRollbackPartitionMetadata"
    assert [x["name"] for x in partition["fields"]] == ["partitionPath", "successDeleteFiles", "failedDeleteFiles",
                                                        "rollbackLogFiles", "logFilesFromFailedCommit"]
    assert [x["name"] for x in schema["fields"][6]["type"]["items"]["fields"]] == ["commitTime", "action"]


def test_requested_only_commit_is_rolled_back(table):
    base, ids = table
    before = _state(base)
    ts = new_instant_time(ids["c1"])
    TimelineWriter(ST, base).request("commit", ts)  # the writer died right after requesting
    [found] = pending_to_roll_back(HudiTable.open(base), tolerance_seconds=60)
    assert found == Instant(ts, "commit", "requested")
    result = rollback(HudiTable.open(base), found)
    assert result.deleted_files == [] and result.instant == found
    r = result.rollback_instant
    assert _timeline_files(base)[-3:] == [f"{r}.rollback", f"{r}.rollback.inflight", f"{r}.rollback.requested"]
    assert Timeline.load(ST, base).pending() == () and _state(base) == before


def test_rollback_is_idempotent_and_refuses_what_is_not_a_failed_write(table):
    base, ids = table
    failed = _fail(base, ids)
    first = rollback(HudiTable.open(base), Instant(failed, "commit", "inflight"))
    again = rollback(HudiTable.open(base), Instant(failed, "commit", "inflight"))
    assert again.rollback_instant == first.rollback_instant and again.deleted_files == first.deleted_files
    assert [i.action for i in Timeline.load(ST, base).instants] == ["commit", "rollback"]
    with pytest.raises(TablespecError, match="is completed"):
        rollback(HudiTable.open(base), Instant(ids["c1"], "commit"))
    with pytest.raises(TablespecError, match="no instant 20990101000000000"):
        rollback(HudiTable.open(base), Instant("20990101000000000", "commit", "inflight"))


def test_live_heartbeat_is_not_rolled_back_and_dead_ones_are(table):
    base, ids = table
    dead = _fail(base, ids)
    live = new_instant_time(dead)
    with Heartbeat(ST, base, live, interval_seconds=0.05):
        writer = TimelineWriter(ST, base)
        writer.start(writer.request("commit", live))
        handle = HudiTable.open(base)
        assert pending_to_roll_back(handle, tolerance_seconds=60) == [Instant(dead, "commit", "inflight")]
        assert pending_to_roll_back(handle, tolerance_seconds=7200) == []  # dead one's beat: 1 h ago
        results = recover(HudiTable.open(base), tolerance_seconds=60)
        assert [r.instant.timestamp for r in results] == [dead]
        assert [str(i) for i in Timeline.load(ST, base).pending()] == [f"{live}.commit[inflight]"]
        assert os.path.exists(heartbeat_path(base, live))
    # the live writer died without completing: its heartbeat is gone, so it is rolled back next
    assert [r.instant.timestamp for r in recover(HudiTable.open(base), tolerance_seconds=60)] == [live]
    assert Timeline.load(ST, base).pending() == ()


_CLUSTERING = fastavro.parse_schema({
    "type": "record", "name": "HoodieRequestedReplaceMetadata", "namespace": "org.apache.hudi.avro.model",
    "fields": [{"name": "operationType", "type": ["null", "string"], "default": None},
               {"name": "clusteringPlan", "default": None, "type": ["null", {
                   "type": "record", "name": "HoodieClusteringPlan",
                   "fields": [{"name": "version", "type": ["int", "null"], "default": 1}]}]},
               {"name": "version", "type": ["int", "null"], "default": 1}]})


def _clustering_plan():
    out = io.BytesIO()
    fastavro.writer(out, _CLUSTERING, [{"operationType": "CLUSTER", "clusteringPlan": {"version": 1}, "version": 1}])
    return out.getvalue()


def test_scheduled_clustering_plan_is_left_alone_and_a_dead_execution_keeps_its_plan(table):
    base, ids = table
    ts = new_instant_time(ids["c1"])
    writer = TimelineWriter(ST, base)
    plan = _clustering_plan()
    requested = writer.request("replacecommit", ts, plan)
    handle = HudiTable.open(base)
    assert pending_to_roll_back(handle, tolerance_seconds=0) == []
    assert recover(HudiTable.open(base), tolerance_seconds=0) == []
    with pytest.raises(TablespecError, match="scheduled clustering plan"):
        rollback(HudiTable.open(base), requested)
    # executing it, the clusterer dies after writing one file
    writer.start(requested)
    _base_file(ST, base, "part=a", new_file_id(), ts, [("1", 1), ("2", 2)])
    [result] = recover(HudiTable.open(base), tolerance_seconds=60)
    assert result.instant == Instant(ts, "replacecommit", "inflight") and len(result.deleted_files) == 1
    assert [str(i) for i in Timeline.load(ST, base).pending()] == [f"{ts}.replacecommit[requested]"]
    assert ST.read_bytes(join(base, ".hoodie", requested.file_name)) == plan
    meta = Timeline.load(ST, base).read_metadata(Instant(result.rollback_instant, "rollback"))
    assert meta["instantsRollback"] == [{"commitTime": ts, "action": "replacecommit"}]


def test_failed_insert_overwrite_replacecommit_is_rolled_back(table):
    base, ids = table
    before = _state(base)
    failed = _write(base, {("part=a", new_file_id()): [("9", 9)]}, action="replacecommit", complete=False)
    [found] = pending_to_roll_back(HudiTable.open(base), tolerance_seconds=60)
    assert found == Instant(failed, "replacecommit", "inflight")
    rollback(HudiTable.open(base), found)
    assert Timeline.load(ST, base).pending() == () and _state(base) == before


# --- crashes ---------------------------------------------------------------------------------

class Crash(Exception):
    """The process died."""


class CrashingStorage(LocalStorage):
    """Local storage whose process dies just before its n-th change to the table."""

    def __init__(self, crash_at=None):
        self.crash_at, self.changes = crash_at, 0

    def _change(self):
        self.changes += 1
        if self.changes == self.crash_at:
            raise Crash(self.changes)

    def write_bytes(self, path, data):
        self._change()
        super().write_bytes(path, data)

    def write_atomic(self, path, data):
        self._change()
        super().write_atomic(path, data)

    def create_exclusive(self, path, data=b""):
        self._change()
        super().create_exclusive(path, data)

    def delete(self, path):
        self._change()
        super().delete(path)

    def delete_tree(self, path):
        self._change()
        super().delete_tree(path)

    def rename(self, src, dst):
        self._change()
        super().rename(src, dst)

    def touch(self, path):
        self._change()
        super().touch(path)


def test_a_crash_at_any_step_of_a_rollback_is_repaired_by_recover(tmp_path):
    counting = CrashingStorage()
    base, ids = _make_table(str(tmp_path / "count"))
    rollback(HudiTable(Location(base, counting)), Instant(_fail(base, ids), "commit", "inflight"))
    steps = counting.changes
    assert steps == 10  # request, start, 3 data files, markers, inflight + requested, heartbeat, complete
    for crash_at in range(1, steps + 1):
        base, ids = _make_table(str(tmp_path / f"crash{crash_at}"))
        before, files_before = _state(base), _data_files(base)
        failed = _fail(base, ids)
        with pytest.raises(Crash):
            rollback(HudiTable(Location(base, CrashingStorage(crash_at))), Instant(failed, "commit", "inflight"))
        assert _state(base) == before, crash_at  # readers never see the half-done rollback
        results = recover(HudiTable.open(base), tolerance_seconds=60)
        assert [r.instant.timestamp for r in results] == [failed], crash_at
        timeline = Timeline.load(ST, base)
        assert timeline.pending() == () and [i.action for i in timeline.instants] == ["commit", "rollback"], crash_at
        meta = timeline.read_metadata(timeline.instants[-1])
        assert meta["commitsRollback"] == [failed] and meta["totalFilesDeleted"] == 3, crash_at
        assert _data_files(base) == files_before and _state(base) == before, crash_at
        assert not os.path.exists(heartbeat_path(base, failed))
        assert not os.path.exists(join(base, ".hoodie/.temp", failed))
        assert recover(HudiTable.open(base), tolerance_seconds=60) == []


def test_leftover_rollback_written_by_hudi_is_finished(table):
    """A rollback Hudi planned (full file: URIs) and left inflight after deleting some files."""
    base, ids = table
    before = _state(base)
    failed = _fail(base, ids)
    written = sorted(join(base, f) for f in _data_files(base) if failed in f)
    plan = io.BytesIO()
    fastavro.writer(plan, ROLLBACK_PLAN_SCHEMA, [{
        "instantToRollback": {"commitTime": failed, "action": "commit"},
        "RollbackRequests": [{"partitionPath": os.path.relpath(os.path.dirname(p), base), "fileId": "",
                              "latestBaseInstant": "", "filesToBeDeleted": [f"file:{p}"],
                              "logBlocksToBeDeleted": {}} for p in written],
        "version": 1}])
    r = new_instant_time(failed)
    writer = TimelineWriter(ST, base)
    writer.start(writer.request("rollback", r, plan.getvalue()))
    os.remove(written[0])
    handle = HudiTable.open(base)
    assert pending_to_roll_back(handle, tolerance_seconds=60) == []  # already being rolled back
    assert _state(base) == before  # hudi-rs reads the table with a pending rollback on the timeline
    [result] = resume_pending_rollbacks(HudiTable.open(base))
    assert result.rollback_instant == r and result.deleted_files == written
    assert Timeline.load(ST, base).pending() == () and _state(base) == before
    assert rollback(HudiTable.open(base), Instant(failed, "commit", "inflight")).rollback_instant == r  # already done


def test_table_stays_writable_after_a_rollback(table):
    base, ids = table
    rollback(HudiTable.open(base), Instant(_fail(base, ids), "commit", "inflight"))
    c2 = _write(base, {("part=a", ids["a"]): [("1", 100), ("2", 200)]})
    ours, slices, rows = _state(base)
    assert ours == slices and [r[:2] for r in rows] == [("1", 100), ("2", 200), ("3", 3)]
    assert Timeline.load(ST, base).commits()[-1].timestamp == c2

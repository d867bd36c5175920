"""Table versions 8 and 9, written: timeline layout 2 instants (requested and inflight as in layout 1,
completed as `<requested>_<completion>.<action>` with Avro commit metadata), completion times after
every time on the timeline, clustering plans under their own action, cleans and rollbacks.

Everything is read back through the readers of test_hudi_layout2.py (which Hudi 1.2.0's own tables
check); tests/interop/test_hudi_1x_writes.py compares the encoding with the files Hudi 1.2.0 writes."""
from __future__ import annotations

import io
import json

import fastavro
import pytest
from test_hudi_layout2 import T5, _version_9_table

from tablespec.errors import HudiFormatError
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.formats.commit_avro import encode_commit_metadata
from tablespec.hudi.services.clean import CleanFile, CleanPlan, execute_clean
from tablespec.hudi.services.rollback import rollback
from tablespec.hudi.timeline.active import TimelineWriter, avro_content
from tablespec.hudi.timeline.instant import CLUSTERING, Instant, new_instant_time, plan_action

SCHEMA = '{"type":"record","name":"orders_record","fields":[{"name":"id","type":"string"}]}'


def _metadata(instant: str, replaced: dict | None = None, operation: str = "UPSERT") -> CommitMetadata:
    stat = WriteStat(file_id="fg-9", path=f"p/fg-9_0-1-2_{instant}.parquet", prev_commit="null", num_writes=2,
                     num_inserts=2, total_write_bytes=100, partition_path="p", file_size_in_bytes=100)
    return CommitMetadata(partition_to_write_stats={"p": [stat]}, operation_type=operation,
                          extra_metadata={"schema": SCHEMA}, partition_to_replace_file_ids=replaced)


def _names(table) -> set[str]:
    return {p.name for p in (table.storage.list_dir(table.timeline.meta)) if not p.is_dir}


def test_a_completion_follows_the_metadata_tables(tmp_path):
    """`after` (the metadata table's deltacommit for the instant, completed first under the same lock):
    the data completion is strictly later, also when the clock has not moved past it."""
    table = _version_9_table(tmp_path)
    writer = TimelineWriter.of(table.timeline)
    ts = new_instant_time(after=table.timeline.latest_time)
    inflight = writer.start(writer.request("commit", ts))
    metadata_done = new_instant_time(after=new_instant_time(after=ts))   # a little ahead of the clock
    done = writer.complete(inflight, _metadata(ts), after=metadata_done)
    assert done.completion > metadata_done > ts


def test_a_commit_completes_as_requested_underscore_completion(tmp_path):
    table = _version_9_table(tmp_path)
    writer = TimelineWriter.of(table.timeline)
    assert writer.layout == 2 and writer.meta.endswith(".hoodie/timeline")
    before = table.timeline.latest_time
    ts = new_instant_time(after=before)
    requested = writer.request("commit", ts)
    inflight = writer.start(requested)
    assert {f"{ts}.commit.requested", f"{ts}.inflight"} <= _names(table)
    done = writer.complete(inflight, _metadata(ts))
    assert done.timestamp == ts and done.completion is not None and done.completion > ts > before
    assert done.file_name == f"{ts}_{done.completion}.commit" and done.file_name in _names(table)

    table.refresh()
    assert table.timeline.head == done and table.timeline.head.completion == done.completion
    read = table.timeline.commit_metadata(done)   # read back as Avro, the form Hudi 1.x writes
    assert table.timeline.read_bytes(done).startswith(b"Obj\x01")
    assert read.operation_type == "UPSERT" and read.schema and read.partition_to_replace_file_ids is None
    [stat] = read.write_stats()
    assert (stat.file_id, stat.path, stat.num_inserts, stat.file_size_in_bytes) == ("fg-9", f"p/fg-9_0-1-2_{ts}.parquet", 2, 100)
    assert writer.is_completed(requested) and writer.completed_file(requested) == done
    with pytest.raises(HudiFormatError, match="already completed"):
        writer.complete(inflight, _metadata(ts))
    with pytest.raises(HudiFormatError, match="is completed"):
        writer.delete_instant(requested)


def test_the_completion_time_is_after_every_time_on_the_timeline(tmp_path):
    """A completion time on the timeline later than the clock (another writer's skewed clock) still
    orders before ours: ours is strictly after it, as Hudi's TimeGenerator guarantees."""
    table = _version_9_table(tmp_path)
    future = "20991231235959990"
    (tmp_path / ".hoodie" / "timeline" / f"20250101000000007_{future}.commit").write_bytes(
        encode_commit_metadata(_metadata("20250101000000007"), replace=False))
    table.refresh()
    assert table.timeline.latest_time == future
    writer = TimelineWriter.of(table.timeline)
    with pytest.raises(HudiFormatError, match=f"not after the latest instant {future}"):
        writer.request("commit", "20991231235959000")   # a requested time before a completion time: refused
    ts = new_instant_time(after=table.timeline.latest_time)
    assert ts == "20991231235959991"
    done = writer.complete(writer.start(writer.request("commit", ts)), _metadata(ts))
    assert done.completion == "20991231235959992"
    table.refresh()
    assert table.timeline.completion_order()[-1] == done


def test_a_clustering_plan_runs_under_its_own_action(tmp_path):
    table = _version_9_table(tmp_path)
    writer = TimelineWriter.of(table.timeline)
    assert plan_action(writer.layout) == CLUSTERING and plan_action(1) == "replacecommit"
    plan = table.timeline.read_bytes(Instant(T5, CLUSTERING, "requested"))
    ts = new_instant_time(after=table.timeline.latest_time)
    requested = writer.request(plan_action(writer.layout), ts, plan)
    inflight = writer.start(requested)
    assert inflight.file_name == f"{ts}.clustering.inflight"
    done = writer.complete(inflight, _metadata(ts, replaced={"p": ["fg-4"]}, operation="CLUSTER"))
    assert done.action == "replacecommit" and done.file_name == f"{ts}_{done.completion}.replacecommit"
    table.refresh()
    assert table.timeline.commit_metadata(done).partition_to_replace_file_ids == {"p": ["fg-4"]}
    assert "fg-4" in table.timeline.replaced_file_ids()["p"]
    raw = table.timeline.read_bytes(done)
    assert fastavro.reader(io.BytesIO(raw)).writer_schema["name"].endswith("HoodieReplaceCommitMetadata")


def test_the_avro_schema_is_hudi_1_2s():
    """The fields Hudi 1.2's HoodieCommitMetadata files declare, in its order, with its Java string hints."""
    raw = encode_commit_metadata(_metadata("20250101000000011"), replace=False)
    reader = fastavro.reader(io.BytesIO(raw))
    schema = json.loads(reader.metadata["avro.schema"])
    assert [f["name"] for f in schema["fields"]] == [
        "partitionToWriteStats", "compacted", "extraMetadata", "version", "operationType"]
    stat = schema["fields"][0]["type"][1]["values"]["items"]
    names = [f["name"] for f in stat["fields"]]
    assert names[:3] == ["fileId", "path", "prevCommit"] and names[-3:] == ["totalLogSizeCompacted", "tempPath", "numUpdates"]
    assert len(names) == 31 and stat["fields"][0]["type"][1] == {"type": "string", "avro.java.string": "String"}
    [record] = list(reader)
    written = record["partitionToWriteStats"]["p"][0]
    assert written["totalLogReadTimeMs"] == 0 and written["logFiles"] is None and record["version"] is None
    assert avro_content(raw, "x")["extraMetadata"] == {"schema": SCHEMA}


def test_a_rollback_completes_in_layout_2(tmp_path):
    """A write that died after its inflight file: the rollback deletes its files and completes as
    `R_C.rollback`; the rolled-back instant's files are gone."""
    table = _version_9_table(tmp_path)
    writer = TimelineWriter.of(table.timeline)
    ts = new_instant_time(after=table.timeline.latest_time)
    writer.start(writer.request("commit", ts))
    (tmp_path / "p").mkdir(exist_ok=True)
    data = tmp_path / "p" / f"fg-9_0-1-2_{ts}.parquet"
    data.write_bytes(b"x")
    table.refresh()
    result = rollback(table, Instant(ts, "commit", "inflight"))
    assert not data.exists() and not any(n.startswith(ts) for n in _names(table))
    table.refresh()
    [rb] = [i for i in table.timeline.completed() if i.action == "rollback"]
    assert rb.timestamp == result.rollback_instant and f"{rb.timestamp}_{rb.completion}.rollback" in _names(table)
    assert rb.completion is not None and rb.completion > rb.timestamp > ts
    metadata = table.timeline.read_metadata(rb)
    assert metadata["commitsRollback"] == [ts] and metadata["instantsRollback"] == [{"commitTime": ts, "action": "commit"}]


def test_a_clean_completes_in_layout_2(tmp_path):
    table = _version_9_table(tmp_path)
    (tmp_path / "p").mkdir(exist_ok=True)
    old = tmp_path / "p" / "fg-2_0-1-2_20250101000000002.parquet"
    old.write_bytes(b"x")
    retain = next(i for i in table.timeline.completed() if i.timestamp == "20250101000000004")
    plan = CleanPlan(retain, retain.timestamp, (CleanFile("p", "p/" + old.name, 1),))
    execute_clean(table, plan)
    assert not old.exists()
    table.refresh()
    [clean] = [i for i in table.timeline.completed() if i.action == "clean"]
    assert clean.completion is not None and clean.completion > clean.timestamp
    assert f"{clean.timestamp}_{clean.completion}.clean" in _names(table)
    assert table.timeline.read_metadata(clean)["totalFilesDeleted"] == 1
    assert (tmp_path / ".hoodie" / "timeline" / f"{clean.timestamp}.clean.inflight").read_bytes() == b""   # as Hudi 1.2

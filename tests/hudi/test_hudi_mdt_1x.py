"""The metadata table of a version 9 table, kept as Apache Hudi 1.x lays it out (mdt/layout.py's
`Format`): its timeline in `.hoodie/metadata/.hoodie/timeline/`, completed instants named
`<requested>_<completion>.<action>` holding Avro, a log file per deltacommit named by it, file slices
by completion time, compactions and rollbacks at new instant times.

The metadata table starts as Hudi 1.2.0 creates it for a new table (measured: an empty `files`
base file and an empty log file at `00000000000000000`); tests/interop/test_hudi_1x_metadata_table.py
has Hudi 1.2.0 read and validate what tablespec writes."""
from __future__ import annotations

import io

import fastavro
import pytest

from tablespec.errors import HudiFormatError
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.formats.commit_avro import encode_commit_metadata
from tablespec.hudi.formats.logfile import delete_block, encode_block
from tablespec.hudi.formats.naming import BaseFileName, LogFileName, new_file_id
from tablespec.hudi.formats.partition import write_partition_metadata
from tablespec.hudi.formats.properties import format_properties
from tablespec.hudi.io import LocalStorage, join
from tablespec.hudi.mdt import compaction, instants, layout, reader, writer
from tablespec.hudi.mdt.compaction import MAX_DELTA_COMMITS
from tablespec.hudi.mdt.records import SCHEMA_JSON, base_hfile, from_commit, listing_records
from tablespec.hudi.services.rollback import rollback
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import Timeline, TimelineWriter, avro_content
from tablespec.hudi.timeline.instant import COMMIT, Instant, new_instant_time

ST = LocalStorage()
INIT = "00000000000000000"
TIMELINE = ".hoodie/timeline"


def _table(tmp_path) -> str:
    """A version 9 table with a metadata table as Hudi 1.2.0 creates it (its `files` partition)."""
    base = str(tmp_path / "t")
    props = {"hoodie.table.name": "t", "hoodie.table.type": "COPY_ON_WRITE", "hoodie.table.version": "9",
             "hoodie.timeline.layout.version": "2", "hoodie.timeline.path": "timeline",
             "hoodie.timeline.history.path": "history", "hoodie.table.recordkey.fields": "id",
             "hoodie.table.partition.fields": "part", "hoodie.table.keygenerator.type": "SIMPLE",
             "hoodie.table.base.file.format": "PARQUET", "hoodie.table.metadata.partitions": "files",
             "hoodie.table.metadata.partitions.inflight": ""}
    ST.write_bytes(join(base, ".hoodie", "hoodie.properties"), format_properties(props).encode())
    ST.mkdirs(join(base, TIMELINE))
    fmt = layout.V2
    for state in ("requested", "inflight"):
        instants.write_instant_file(ST, base, layout.instant_file(INIT, layout.DELTA_COMMIT, state), fmt=fmt)
    name = layout.base_file_name(INIT, token="0-5-4")
    data = base_hfile(listing_records({}), name)
    ST.write_bytes(join(layout.partition_path(base), name), data)
    ST.write_bytes(join(layout.partition_path(base), LogFileName(layout.FILE_ID, INIT, 1, "0-0-0").format()),
                   encode_block(delete_block(INIT, ())))
    stat = writer.write_stat(f"files/{name}", "null", 1, len(data), inserts=True)
    instants.complete_instant(ST, base, INIT, layout.DELTA_COMMIT,
                              writer.completed_metadata([stat], "BULK_INSERT_PREPPED", fmt), fmt)
    return base


def _start(base: str) -> tuple[str, Instant]:
    timeline = HudiTable.open(base).timeline
    ts = new_instant_time(after=timeline.latest_time)
    timeline_writer = TimelineWriter(ST, base, TIMELINE)
    return ts, timeline_writer.start(timeline_writer.request(COMMIT, ts))


def _files(base: str, ts: str, groups: dict[tuple[str, str], int]) -> CommitMetadata:
    stats: dict[str, list[WriteStat]] = {}
    for (partition, file_id), size in groups.items():
        write_partition_metadata(ST, base, partition, ts)
        rel = f"{partition}/{BaseFileName(file_id, '0-1-0', ts).format()}"
        ST.write_bytes(join(base, rel), b"x" * size)
        stats.setdefault(partition, []).append(WriteStat(file_id=file_id, path=rel, prev_commit="null",
                                                         partition_path=partition, file_size_in_bytes=size))
    return CommitMetadata(stats, operation_type="UPSERT", extra_metadata={"schema": SCHEMA_JSON})


def _commit(base: str, groups: dict[tuple[str, str], int]) -> Instant:
    ts, inflight = _start(base)
    metadata = _files(base, ts, groups)
    writer.record(HudiTable.open(base), ts, from_commit(metadata))
    return TimelineWriter(ST, base, TIMELINE).complete(inflight, metadata)


def _metadata_timeline(base: str) -> dict[str, layout.MetaInstant]:
    return {i.timestamp: i for i in layout.timeline(ST, base, layout.V2)}


def _assert_listing_is_storage(base: str) -> None:
    listed, stored = reader.listing(HudiTable.open(base)), writer.list_data_files(ST, base)
    assert listed.partitions == set(stored) and listed.files == stored


def test_format_follows_the_data_tables_version(tmp_path):
    base = _table(tmp_path)
    assert layout.Format.of(HudiTable.open(base).config) == layout.V2 and layout.Format.of(None) == layout.V1
    assert layout.timeline_path(base, layout.V2).endswith(".hoodie/metadata/.hoodie/timeline")
    assert layout.timeline(ST, base) == []          # read as 0.15 lays it out, it has no instants


def test_a_deltacommit_is_named_and_filled_as_hudi_1x_writes_it(tmp_path):
    base = _table(tmp_path)
    fg = new_file_id()
    first = _commit(base, {("a", fg): 10, ("b", new_file_id()): 5})
    delta = _metadata_timeline(base)[first.timestamp]
    assert delta.completed and delta.completion and delta.timestamp < delta.completion < first.completion
    folder = layout.timeline_path(base, layout.V2)
    names = {i.name for i in ST.list_dir(folder)}
    assert {f"{first.timestamp}.deltacommit.requested", f"{first.timestamp}.deltacommit.inflight",
            f"{first.timestamp}_{delta.completion}.deltacommit"} <= names
    content = avro_content(ST.read_bytes(join(folder, delta.file_name)), delta.file_name)
    [stat] = content["partitionToWriteStats"]["files"]
    log = f".files-0000-0_{first.timestamp}.log.1_0-0-0"
    assert (stat["path"], stat["prevCommit"], stat["logFiles"], stat["baseFile"]) == (
        f"files/{log}", first.timestamp, [log], "")
    assert avro_content(ST.read_bytes(join(folder, f"{first.timestamp}.deltacommit.inflight")), "inflight")
    assert ST.exists(join(layout.partition_path(base), log))
    _assert_listing_is_storage(base)

    # a second deltacommit: its own log file, in the same slice (the base file at INIT)
    second = _commit(base, {("a", fg): 11})
    table = HudiTable.open(base)
    current = layout.latest_slice(ST, base, layout.completions(list(_metadata_timeline(base).values())),
                                  fmt=layout.V2)
    assert current is not None and current.base_instant == INIT
    assert [n.base_instant for n, _ in current.log_files] == [INIT, first.timestamp, second.timestamp]
    assert reader.listing(table).files["a"] == {BaseFileName(fg, "0-1-0", first.timestamp).format(): 10,
                                                BaseFileName(fg, "0-1-0", second.timestamp).format(): 11}

    # a deltacommit whose data instant is still pending is not read
    ts, _ = _start(base)
    writer.record(HudiTable.open(base), ts, from_commit(_files(base, ts, {("c", new_file_id()): 3})))
    assert "c" not in reader.listing(HudiTable.open(base)).partitions


def test_compaction_takes_a_new_instant_and_later_log_files_join_its_slice(tmp_path):
    base = _table(tmp_path)
    fg = new_file_id()
    for n in range(MAX_DELTA_COMMITS - 2):
        _commit(base, {("a", fg): 10 + n})
    assert compaction.compact_if_due(HudiTable.open(base)) is None      # 9 deltacommits, the initial one too
    last = _commit(base, {("b", new_file_id()): 7})
    done = compaction.compact_if_due(HudiTable.open(base))
    assert done is not None and len(done.timestamp) == 17 and done.timestamp > last.completion
    assert done.completion and done.completion > done.timestamp
    folder = layout.timeline_path(base, layout.V2)
    completed = fastavro.reader(io.BytesIO(ST.read_bytes(join(folder, done.file_name))))
    record = next(completed)
    assert record["compacted"] and record["operationType"] == "COMPACT"
    plan = next(fastavro.reader(io.BytesIO(ST.read_bytes(join(folder, f"{done.timestamp}.compaction.requested")))))
    [operation] = plan["operations"]
    assert plan["missingSchedulePartitions"] == [] and len(operation["deltaFilePaths"]) == MAX_DELTA_COMMITS
    assert operation["baseInstantTime"] == INIT
    _assert_listing_is_storage(base)

    later = _commit(base, {("a", fg): 40})
    current = layout.latest_slice(ST, base, layout.completions(list(_metadata_timeline(base).values())),
                                  fmt=layout.V2)
    assert current is not None and current.base_instant == done.timestamp
    assert [n.base_instant for n, _ in current.log_files] == [later.timestamp]
    _assert_listing_is_storage(base)


def test_a_rollback_removes_the_recorded_deltacommit_at_a_new_instant(tmp_path):
    base = _table(tmp_path)
    _commit(base, {("a", new_file_id()): 10})
    ts, inflight = _start(base)          # a write that died after its metadata deltacommit
    writer.record(HudiTable.open(base), ts, from_commit(_files(base, ts, {("a", new_file_id()): 4})))
    assert _metadata_timeline(base)[ts].completed
    done = rollback(HudiTable.open(base), inflight)
    meta = _metadata_timeline(base)
    assert ts not in meta and meta[done.rollback_instant].completed         # its deletions recorded
    [undone] = [i for i in meta.values() if i.action == "rollback"]
    assert undone.completed and undone.completion and len(undone.timestamp) == 17
    assert undone.timestamp > done.rollback_instant
    plan = avro_content(ST.read_bytes(join(layout.timeline_path(base, layout.V2),
                                           f"{undone.timestamp}.rollback.requested")), "plan")
    assert plan["instantToRollback"]["commitTime"] == ts
    assert not [i for i in ST.list_dir(layout.partition_path(base)) if ts in i.name]
    assert ts in reader.valid_instants(Timeline(ST, base, HudiTable.open(base).timeline.instants, TIMELINE),
                                       list(meta.values()))        # Hudi's rule: why the deltacommit had to go
    _assert_listing_is_storage(base)


def test_commit_bytes_are_avro_on_1x_and_json_on_0_15():
    metadata = CommitMetadata({}, operation_type="UPSERT_PREPPED")
    assert avro_content(instants.commit_bytes(metadata, layout.V2), "1.x") == avro_content(
        encode_commit_metadata(metadata, replace=False), "expected")
    assert instants.commit_bytes(metadata, layout.V1) == metadata.to_json()


def test_a_damaged_metadata_timeline_file_name_is_refused_not_read_as_pending(tmp_path):
    """The metadata table's completed deltacommit with a malformed completion time (or none, in 1.x)
    would read as pending and be rolled back: refused in one line naming the file."""
    base = _table(tmp_path)
    folder = layout.timeline_path(base, layout.V2)
    [done] = [i for i in layout.timeline(ST, base, layout.V2) if i.completed]
    for damaged in (f"{INIT}_2026112800182X509.deltacommit", f"{INIT}_2026112800182350.deltacommit",
                    f"{INIT}.deltacommit"):
        ST.write_bytes(join(folder, damaged), ST.read_bytes(join(folder, done.file_name)))
        ST.delete(join(folder, done.file_name))
        with pytest.raises(HudiFormatError, match=rf"^{join(folder, damaged)}: not a metadata table timeline file"):
            layout.timeline(ST, base, layout.V2)
        ST.write_bytes(join(folder, done.file_name), ST.read_bytes(join(folder, damaged)))
        ST.delete(join(folder, damaged))
    assert layout.timeline(ST, base, layout.V2)[-1].completed

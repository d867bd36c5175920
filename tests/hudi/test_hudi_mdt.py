"""The metadata table's `files` partition (tablespec.hudi.mdt) on tables written here: initialized
from the storage, a deltacommit per data instant counted only once the data instant completes,
cleans and rollbacks recorded as deletions; the listing it gives always equals the storage.
(tests/interop/test_hudi_metadata_table.py has Apache Hudi judge the same files.)"""
from __future__ import annotations

import io

import fastavro
import pytest

from tablespec.errors import HudiFormatError
from tablespec.hudi.config import TableConfig, init_table, read_table_config
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.formats.hfile import ALL_PARTITIONS_KEY, HFileReader
from tablespec.hudi.formats.logfile import BlockType, Header, read_blocks
from tablespec.hudi.formats.naming import BaseFileName, LogFileName, new_file_id
from tablespec.hudi.formats.partition import write_partition_metadata
from tablespec.hudi.fs_view import FileSystemView
from tablespec.hudi.io import LocalStorage, join
from tablespec.hudi.mdt import column_stats, column_stats_init, column_stats_reader, compaction, layout, reader, writer
from tablespec.hudi.mdt.column_stats import COLUMN_STATS, ColumnRange
from tablespec.hudi.mdt.record_index import HashedChange
from tablespec.hudi.mdt.records import STORED_SCHEMA_JSON, FilesChange, from_clean, from_commit
from tablespec.hudi.services.clean import execute_clean, plan_clean
from tablespec.hudi.services.rollback import rollback
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import Timeline, TimelineWriter, avro_record
from tablespec.hudi.timeline.instant import COMMIT, REPLACE_COMMIT, Instant, new_instant_time

ST = LocalStorage()


def _table(tmp_path, partitioned: bool = True) -> str:
    base = str(tmp_path / "t")
    init_table(ST, base, TableConfig(name="t", database="default", record_key_fields=["id"],
                                     partition_fields=["part"] if partitioned else [],
                                     key_generator_class="org.apache.hudi.keygen.SimpleKeyGenerator"))
    return base


def _start(base: str, action: str = COMMIT) -> tuple[str, Instant]:
    timeline = Timeline.load(ST, base)
    ts = new_instant_time(timeline.instants[-1].timestamp if timeline.instants else None)
    writer_ = TimelineWriter(ST, base)
    return ts, writer_.start(writer_.request(action, ts))


def _files(base: str, ts: str, groups: dict[tuple[str, str], int], prev: str = "null", **meta) -> CommitMetadata:
    """Base files (bytes of the given sizes) for {(partition, file_id): size}, and their commit metadata."""
    stats: dict[str, list[WriteStat]] = {}
    for (partition, file_id), size in groups.items():
        write_partition_metadata(ST, base, partition, ts)
        rel = join(partition, BaseFileName(file_id, "0-1-0", ts).format()).lstrip("/")
        ST.write_bytes(join(base, rel), b"x" * size)
        stats.setdefault(partition, []).append(WriteStat(file_id=file_id, path=rel, prev_commit=prev,
                                                         partition_path=partition, file_size_in_bytes=size))
    return CommitMetadata(stats, operation_type="UPSERT", **meta)


def _commit(base: str, groups: dict[tuple[str, str], int], recorded: bool = True, **meta) -> str:
    """A commit of `groups`, recorded in the metadata table (when it has one) before it completes."""
    ts, inflight = _start(base, REPLACE_COMMIT if "partition_to_replace_file_ids" in meta else COMMIT)
    metadata = _files(base, ts, groups, **meta)
    if recorded:
        writer.record(HudiTable.open(base), ts, from_commit(metadata))
    TimelineWriter(ST, base).complete(inflight, metadata)
    return ts


def _assert_listing_is_storage(base: str) -> None:
    listed, stored = reader.listing(HudiTable.open(base)), writer.list_data_files(ST, base)
    assert listed.partitions == set(stored)
    assert listed.files == stored


@pytest.mark.parametrize("partitioned", [True, False])
def test_initialize_lists_the_storage_and_names_the_files_partition(tmp_path, partitioned):
    base = _table(tmp_path, partitioned)
    parts = ("a", "b") if partitioned else ("",)
    fg = {p: new_file_id() for p in parts}
    _commit(base, {(p, fg[p]): 10 + i for i, p in enumerate(parts)}, recorded=False)
    head = _commit(base, {(parts[0], fg[parts[0]]): 30}, recorded=False)

    instant = writer.initialize(HudiTable.open(base))
    assert instant == head + "010" and len(instant) == 20
    assert writer.is_enabled(HudiTable.open(base))
    props = read_table_config(ST, base).extra
    assert props["hoodie.table.metadata.partitions"] == "files" and props["hoodie.table.metadata.partitions.inflight"] == ""
    mdt = read_table_config(ST, layout.table_path(base))
    assert (mdt.name, mdt.table_type, mdt.base_file_format, mdt.populate_meta_fields) == \
        ("t_metadata", "MERGE_ON_READ", "HFILE", False)
    assert [(i.timestamp, i.action, i.state) for i in layout.timeline(ST, base)] == [(instant, "deltacommit", "completed")]
    _assert_listing_is_storage(base)
    assert sum(len(f) for f in reader.listing(HudiTable.open(base)).files.values()) == len(parts) + 1

    folder = layout.partition_path(base)
    hfile = HFileReader(ST.read_bytes(join(folder, layout.base_file_name(instant))))
    keys = [k for k, _ in hfile.records()]
    assert keys == sorted([ALL_PARTITIONS_KEY.encode()] + [(p or ".").encode() for p in parts])
    assert hfile.file_info[b"schema"] == STORED_SCHEMA_JSON.encode()
    (log,) = [b for b in read_blocks(ST.read_bytes(join(folder, LogFileName(layout.FILE_ID, instant, 1, "0-0-0").format())))]
    assert log.type == BlockType.DELETE and log.instant == instant
    assert ST.exists(join(folder, ".hoodie_partition_metadata"))


def test_initialize_refuses_pending_instants_and_a_second_time_and_replaces_a_leftover(tmp_path):
    base = _table(tmp_path)
    assert writer.initialize(HudiTable.open(base)) == "00000000000000010"       # a table without instants
    with pytest.raises(HudiFormatError, match="already exists"):
        writer.initialize(HudiTable.open(base))

    other = _table(tmp_path / "other")
    _commit(other, {("a", new_file_id()): 5}, recorded=False)
    ts, _ = _start(other)
    with pytest.raises(HudiFormatError, match="pending"):
        writer.initialize(HudiTable.open(other))
    assert not ST.exists(layout.table_path(other))

    third = _table(tmp_path / "third")
    ST.write_bytes(join(layout.partition_path(third), "stale"), b"left by a crash before hoodie.properties named it")
    writer.initialize(HudiTable.open(third))
    assert not ST.exists(join(layout.partition_path(third), "stale"))


def test_a_deltacommit_counts_once_its_data_instant_completes(tmp_path):
    base = _table(tmp_path)
    fg = new_file_id()
    _commit(base, {("a", fg): 10}, recorded=False)
    init = writer.initialize(HudiTable.open(base))

    ts, inflight = _start(base)
    metadata = _files(base, ts, {("a", fg): 20, ("b", new_file_id()): 7})
    writer.record(HudiTable.open(base), ts, from_commit(metadata))
    assert layout.timeline(ST, base)[-1] == layout.MetaInstant(ts, "deltacommit", "completed")
    before = reader.listing(HudiTable.open(base))            # the data instant is still inflight: its files are not listed
    assert before.partitions == {"a"} and len(before.files["a"]) == 1
    TimelineWriter(ST, base).complete(inflight, metadata)
    _assert_listing_is_storage(base)

    log = LogFileName(layout.FILE_ID, init, 2, "0-0-0")
    (block,) = read_blocks(ST.read_bytes(join(layout.partition_path(base), log.format())))
    assert block.type == BlockType.HFILE_DATA and block.header[Header.INSTANT_TIME] == ts
    stat = CommitMetadata.from_json(ST.read_bytes(join(layout.meta_path(base), f"{ts}.deltacommit"))).write_stats()[0]
    assert (stat.file_id, stat.prev_commit, stat.path) == (layout.FILE_ID, init, f"files/{log.format()}")
    assert stat.extra["logFiles"][-1] == log.format() and stat.extra["baseFile"] == layout.base_file_name(init)


def test_an_unfinished_metadata_deltacommit_is_replaced_on_retry(tmp_path):
    base = _table(tmp_path)
    writer.initialize(HudiTable.open(base))
    ts, inflight = _start(base)
    metadata = _files(base, ts, {("a", new_file_id()): 10})
    writer.record(HudiTable.open(base), ts, FilesChange(added={"a": {"stale-name.parquet": 1}}))
    ST.delete(join(layout.meta_path(base), f"{ts}.deltacommit"))      # died before completing it
    assert layout.timeline(ST, base)[-1].state == "inflight"
    with pytest.raises(HudiFormatError, match="already recorded"):
        writer.record(HudiTable.open(base), layout.timeline(ST, base)[0].timestamp, FilesChange())
    writer.record(HudiTable.open(base), ts, from_commit(metadata))
    TimelineWriter(ST, base).complete(inflight, metadata)
    _assert_listing_is_storage(base)
    logs = [i.name for i in ST.list_dir(layout.partition_path(base)) if ".log." in i.name]
    assert len(logs) == 2                                      # the first attempt's log file is gone


def test_cleans_and_rollbacks_are_recorded_as_deletions(tmp_path):
    base = _table(tmp_path)
    fg = new_file_id()
    writer.initialize(HudiTable.open(base))
    first = _commit(base, {("a", fg): 10, ("b", new_file_id()): 5})
    for size in (11, 12):
        _commit(base, {("a", fg): size}, prev=first)
    timeline = Timeline.load(ST, base)
    plan = plan_clean(base, timeline, FileSystemView.build(ST, base, timeline), keep_commits=1)
    assert plan is not None and plan.files_to_delete
    clean = execute_clean(HudiTable.open(base), plan)   # records itself in the metadata table
    assert clean.clean_instant in {i.timestamp for i in layout.timeline(ST, base) if i.completed}
    _assert_listing_is_storage(base)

    ts, inflight = _start(base)          # a write that died after its metadata deltacommit
    metadata = _files(base, ts, {("a", fg): 13, ("c", new_file_id()): 4})
    writer.record(HudiTable.open(base), ts, from_commit(metadata))
    done = rollback(HudiTable.open(base), inflight)   # records its deletions, rolls back the deltacommit
    meta = {i.timestamp: i for i in layout.timeline(ST, base)}
    assert meta[done.rollback_instant].completed and ts not in meta
    assert meta[done.rollback_instant + "006"] == layout.MetaInstant(done.rollback_instant + "006", "rollback", "completed")
    assert ts in reader.valid_instants(Timeline.load(ST, base), layout.timeline(ST, base))  # Hudi's rule
    # the failed write's new partition keeps its (empty) folder, which the rolled-back deltacommit named, as in Hudi
    stored = writer.list_data_files(ST, base)
    assert stored["c"] == {}
    listed = reader.listing(HudiTable.open(base))
    assert "c" not in listed.partitions and listed.partitions == set(stored) - {"c"}
    assert listed.files == {p: f for p, f in stored.items() if p != "c"}


def test_a_metadata_deltacommit_that_did_not_complete_counts_in_no_partition(tmp_path):
    """A metadata deltacommit not completed on the metadata timeline never counts, even for a data instant the
    data table counts (Hudi's log reader skips its blocks): its column stats are not read, as the record
    index's and `files`' are not (reader.latest_slices, the one place that decides)."""
    base = _table(tmp_path)
    fg = new_file_id()
    first = _commit(base, {("a", fg): 10}, recorded=False)
    writer.initialize(HudiTable.open(base))
    table = HudiTable.open(base)
    with table.transaction_lock("column stats build"):
        column_stats_init.initialize(table, {}, [COLUMN_STATS], None)
    ts, inflight = _start(base)
    metadata = _files(base, ts, {("a", fg): 12}, prev=first)
    name = BaseFileName(fg, "0-1-0", ts).format()
    stats = column_stats.column_stats_record("a", ColumnRange(name, "v", "long", 1, 2, 2, 0, 10, 10), False)
    writer.record(HudiTable.open(base), ts, from_commit(metadata), stats={COLUMN_STATS: HashedChange(records=[stats])})
    TimelineWriter(ST, base).complete(inflight, metadata)
    key = column_stats.column_stats_key("v", "a", name)
    assert set(column_stats_reader.stored(HudiTable.open(base), COLUMN_STATS, [key]) or ()) == {key}
    ST.delete(join(layout.timeline_path(base), f"{ts}.deltacommit"))     # its metadata deltacommit left inflight
    assert column_stats_reader.stored(HudiTable.open(base), COLUMN_STATS, [key]) == {}


def test_records_of_a_change_are_hudis():
    change = from_commit(CommitMetadata({"a": [WriteStat(path="a/f1.parquet", file_size_in_bytes=3),
                                               WriteStat(path="a/f1.parquet", file_size_in_bytes=5)],
                                         "": [WriteStat(path="f2.parquet", file_size_in_bytes=1)]}))
    records = change.records()
    assert [k for k, _ in records] == [".", ALL_PARTITIONS_KEY, "a"]     # HFile order: bytes
    by_key = dict(records)
    assert by_key[ALL_PARTITIONS_KEY]["type"] == 1 and by_key["a"]["type"] == 2
    assert by_key["a"]["filesystemMetadata"] == {"f1.parquet": {"size": 5, "isDeleted": False}}
    assert by_key[ALL_PARTITIONS_KEY]["filesystemMetadata"] == {".": {"size": 0, "isDeleted": False},
                                                                "a": {"size": 0, "isDeleted": False}}
    dropped = from_commit(CommitMetadata({}, operation_type="DELETE_PARTITION", partition_to_replace_file_ids={"a": ["x"]}))
    assert dropped.records() == [(ALL_PARTITIONS_KEY, {"key": ALL_PARTITIONS_KEY, "type": 1, "filesystemMetadata": {
        "a": {"size": 0, "isDeleted": True}}})]
    assert from_clean({"partitionMetadata": {"a": {"successDeleteFiles": ["f1.parquet"]}}}).records()[0][1][
        "filesystemMetadata"] == {"f1.parquet": {"size": 0, "isDeleted": True}}
    assert FilesChange().empty and FilesChange().records() == []


class _FolderAsked(LocalStorage):
    """Local files, counting the questions about what `folder` holds (a listing, or whether an entry is a folder)."""

    def __init__(self, folder: str):
        self.folder, self.count = folder.rstrip("/"), 0

    def is_dir(self, path):
        self.count += path.rstrip("/").rsplit("/", 1)[0] == self.folder
        return super().is_dir(path)

    def list_dir(self, path):
        self.count += path.rstrip("/") == self.folder
        return super().list_dir(path)


def test_compaction_when_hudi_would_and_a_died_one_is_finished(tmp_path):
    base = _table(tmp_path)
    fg = new_file_id()
    init = writer.initialize(HudiTable.open(base))
    commits = [_commit(base, {("a", fg): 10 + n, ("b", new_file_id()): 1}) for n in range(8)]
    assert compaction.compaction_due(Timeline.load(ST, base), layout.timeline(ST, base)) is None   # 9 deltacommits
    ts, inflight = _start(base)
    metadata = _files(base, ts, {("a", fg): 30})
    writer.record(HudiTable.open(base), ts, from_commit(metadata))
    assert compaction.compact_if_due(HudiTable.open(base)) is None           # its data instant is still pending
    TimelineWriter(ST, base).complete(inflight, metadata)
    assert compaction.compaction_due(Timeline.load(ST, base), layout.timeline(ST, base)) == ts + "001"

    due = ts + "001"
    asked = _FolderAsked(layout.table_path(base))
    ST.create_exclusive(join(layout.meta_path(base), f"{due}.compaction.requested"),
                        avro_record(compaction.PLAN_SCHEMA, compaction.plan(asked, base, due)))
    assert asked.count == 1            # which partitions exist: one listing of the metadata table's folder
    assert compaction.compaction_due(Timeline.load(ST, base), layout.timeline(ST, base)) is None   # one is pending
    _assert_listing_is_storage(base)                      # a scheduled compaction changes nothing for readers
    later = _commit(base, {("a", fg): 40})                # the next deltacommit finishes it first
    done = [i for i in layout.timeline(ST, base) if i.action == "compaction"]
    assert done == [layout.MetaInstant(due, "compaction", "completed")]
    folder = layout.partition_path(base)
    assert ST.exists(join(folder, layout.base_file_name(due)))
    assert ST.exists(join(folder, LogFileName(layout.FILE_ID, due, 1, "0-0-0").format()))   # the new slice's log
    _assert_listing_is_storage(base)
    plan = fastavro.reader(io.BytesIO(ST.read_bytes(join(layout.meta_path(base), f"{due}.compaction.requested"))))
    (operation,) = next(plan)["operations"]
    assert operation["dataFilePath"] == layout.base_file_name(init) and len(operation["deltaFilePaths"]) == 10
    completed = CommitMetadata.from_json(ST.read_bytes(join(layout.meta_path(base), f"{due}.commit")))
    assert completed.compacted and completed.operation_type == "COMPACT"
    assert commits and later > due[:17]

"""Writing the metadata table's `files` partition as Apache Hudi 0.15 does.

`initialize` builds it from a listing of the data table's files: the metadata table's
hoodie.properties, a deltacommit `<latest data instant>010` holding an HFile base file of every
partition's files and an empty log file (a delete block) that starts the file group's log, then
the data table's hoodie.properties naming `files` (from then on Hudi readers use it; a crash
before leaves a folder no reader uses, which the next `initialize` deletes, as Hudi does).

`record` writes one deltacommit at a data instant's time: a new log file in the latest file
slice holding one HFILE_DATA block of the instant's records (on a Hudi 1.x table, in 1.x's
layout: `layout.Format`). Call it after the instant's data
files are written and before the data instant completes: readers ignore a metadata deltacommit
whose data instant is not completed (`reader.valid_instants`), so a crash in between leaves a
table whose listing is still the completed instants'.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from tablespec.errors import HudiFormatError
from tablespec.hudi import keys
from tablespec.hudi.config import TableConfig, init_table, named_partitions, write_table_config
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.formats.logfile import BlockType, delete_block, encode_block, read_blocks
from tablespec.hudi.formats.naming import BaseFileName, LogFileName
from tablespec.hudi.formats.partition import discover_partitions, write_partition_metadata
from tablespec.hudi.io import Storage, join
from tablespec.hudi.mdt import compaction, layout
from tablespec.hudi.mdt.instants import commit_bytes, complete_instant, write_instant_file
from tablespec.hudi.mdt.layout import FILE_ID, FILES, V1, WRITE_TOKEN, Format, LogAppend, MetaInstant
from tablespec.hudi.mdt.record_index import RECORD_INDEX, HashedChange, RecordIndexChange, hashed_appends, log_appends
from tablespec.hudi.mdt.records import FilesChange, base_hfile, data_block, listing_records, schema_json
from tablespec.hudi.metadata_table import INFLIGHT_KEY, PARTITIONS_KEY

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

PAYLOAD_CLASS = "org.apache.hudi.metadata.HoodieMetadataPayload"
KEY_GENERATOR = "org.apache.hudi.metadata.HoodieTableMetadataKeyGenerator"
MERGER_STRATEGY = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"      # Hudi's default record merger strategy id


# The metadata table's hoodie.properties as Hudi 1.2 creates it (measured), beside its name.
PROPERTIES_1X = {keys.TABLE_TYPE.name: "MERGE_ON_READ", keys.TABLE_VERSION.name: "9", keys.INITIAL_VERSION.name: "9",
                 keys.TIMELINE_LAYOUT_VERSION.name: "2", keys.TIMELINE_PATH.name: "timeline",
                 keys.TIMELINE_HISTORY_PATH.name: "history", keys.ARCHIVELOG_FOLDER.name: "history",
                 keys.RECORD_KEY_FIELDS.name: "key", keys.KEY_GENERATOR_TYPE.name: "HOODIE_TABLE_METADATA",
                 keys.POPULATE_META_FIELDS.name: "false", keys.BASE_FILE_FORMAT.name: "HFILE",
                 keys.DROP_PARTITION_COLUMNS.name: "false", keys.RECORD_MERGE_MODE.name: "CUSTOM",
                 keys.RECORD_MERGE_STRATEGY_ID.name: "00000000-0000-0000-0000-000000000000",
                 keys.COMPACTION_PAYLOAD_CLASS.name: PAYLOAD_CLASS}


def metadata_properties_1x(data: TableConfig) -> dict[str, str]:
    """The metadata table's hoodie.properties on a Hudi 1.x data table (versions 8 and 9)."""
    return {keys.TABLE_NAME.name: f"{data.name}_metadata", **PROPERTIES_1X}


def metadata_config(data: TableConfig) -> TableConfig:
    """The metadata table's hoodie.properties, as Hudi 0.15 creates it."""
    return TableConfig(name=f"{data.name}_metadata", table_type="MERGE_ON_READ", record_key_fields=["key"],
                       key_generator_class=KEY_GENERATOR, populate_meta_fields=False, base_file_format="HFILE",
                       drop_partition_columns=False,
                       extra={keys.COMPACTION_PAYLOAD_CLASS.name: PAYLOAD_CLASS,
                              keys.COMPACTION_MERGER_STRATEGY.name: MERGER_STRATEGY},
                       _present=frozenset({"name", "table_type", "version", "timeline_layout_version",
                                           "record_key_fields", "key_generator_class", "populate_meta_fields",
                                           "base_file_format", "drop_partition_columns", "archivelog_folder"}))


def is_enabled(table: HudiTable) -> bool:
    """Whether the data table's hoodie.properties (as the handle read them) name the `files`
    partition (readers use it)."""
    return FILES in named_partitions(table.config)


def list_data_files(storage: Storage, base: str, up_to: str | None = None) -> dict[str, dict[str, int]]:
    """Partition -> base file name -> size of every data file on the storage written at or before
    `up_to`, as Hudi lists a table to initialize its metadata table."""
    listing: dict[str, dict[str, int]] = {}
    for partition in discover_partitions(storage, base):
        files = listing.setdefault(partition, {})
        for info in storage.list_dir(join(base, partition)):
            name = BaseFileName.parse(info.name) if not info.is_dir else None
            if name is not None and (up_to is None or name.instant <= up_to):
                files[info.name] = info.size
    return listing


def write_stat(path: str, prev_commit: str, records: int, size: int, inserts: bool, partition: str = FILES,
          file_id: str = FILE_ID, **delta: Any) -> WriteStat:
    return WriteStat(file_id=file_id, path=path, prev_commit=prev_commit, num_writes=records,
                     num_inserts=records if inserts else 0, num_update_writes=0 if inserts else records,
                     total_write_bytes=size, partition_path=partition, file_size_in_bytes=size,
                     runtime_stats={"totalScanTime": 0, "totalUpsertTime": 0, "totalCreateTime": 0}, extra=delta)


def _by_partition(stats: Iterable[WriteStat]) -> dict[str, list[WriteStat]]:
    out: dict[str, list[WriteStat]] = {}
    for stat in stats:
        out.setdefault(stat.partition_path or FILES, []).append(stat)
    return out


def completed_metadata(stats: Iterable[WriteStat], operation: str, fmt: Format = V1) -> bytes:
    """A completed metadata deltacommit's HoodieCommitMetadata: its write stats by partition."""
    return commit_bytes(CommitMetadata(_by_partition(stats), extra_metadata={"schema": schema_json(fmt.is_1x)},
                                       operation_type=operation), fmt)


def initialize(table: HudiTable, listing: Mapping[str, Mapping[str, int]] | None = None) -> str:
    """Build the metadata table's `files` partition of the table from `listing` (partition ->
    file name -> size; by default the data files on the storage) and name it in
    hoodie.properties. Returns the initializing instant. Call under the table lock, with the
    handle read under it and no data instant pending (Hudi refuses to initialize then too).
    The handle is refreshed: hoodie.properties and .hoodie/ changed."""
    storage, base, config = table.storage, table.base, table.config
    if config is None:
        raise HudiFormatError(f"{base}: no Hudi table to build a metadata table for")
    timeline = table.timeline
    if timeline.pending():
        raise HudiFormatError(f"{base}: cannot build the metadata table while instants are pending: "
                              + ", ".join(str(i) for i in timeline.pending()))
    if is_enabled(table):
        raise HudiFormatError(f"{base}: the metadata table's files partition already exists")
    storage.delete_tree(layout.table_path(base))       # a leftover no reader uses
    fmt = Format.of(config)
    head = timeline.head
    instant = layout.init_instant(head.timestamp if head else None, fmt)
    if listing is None:
        listing = list_data_files(storage, base, head.timestamp if head else None)

    mdt = layout.table_path(base)
    if fmt.is_1x:
        props = metadata_properties_1x(config)
        init_table(storage, mdt, TableConfig.from_properties(props), props)
    else:
        init_table(storage, mdt, metadata_config(config))
    write_instant_file(storage, base, layout.instant_file(instant, layout.DELTA_COMMIT, "requested"), fmt=fmt)
    write_instant_file(storage, base, layout.instant_file(instant, layout.DELTA_COMMIT, "inflight"), fmt=fmt)
    write_partition_metadata(storage, mdt, FILES, instant)
    first_log = LogFileName(FILE_ID, instant, 1, WRITE_TOKEN)
    storage.write_bytes(join(layout.partition_path(base), first_log.format()),
                        encode_block(delete_block(instant, ())))
    name = layout.base_file_name(instant)
    records = listing_records(listing)
    data = base_hfile(records, name, fmt.is_1x)
    storage.write_bytes(join(layout.partition_path(base), name), data)
    stat = write_stat(f"{FILES}/{name}", "null", len(records), len(data), inserts=True)
    if fmt.is_1x:   # a completion time under Hudi's lock (the caller's), Avro, as Hudi 1.2 writes it
        complete_instant(storage, base, instant, layout.DELTA_COMMIT,
                         completed_metadata([stat], "BULK_INSERT_PREPPED", fmt), fmt)
    else:
        write_instant_file(storage, base, layout.instant_file(instant, layout.DELTA_COMMIT),
                           completed_metadata([stat], "BULK_INSERT"))
    write_table_config(storage, base, config.with_updates(extra={**config.extra, PARTITIONS_KEY: FILES,
                                                                 INFLIGHT_KEY: ""}))
    table.refresh()
    return instant


def instant_log_files(storage: Storage, base: str, instant: str) -> list[str]:
    """The log files, in every metadata partition, holding only `instant`'s blocks (or a torn
    tail): tablespec writes one per file group and deltacommit, so these are the deltacommit's."""
    found = []
    for folder in storage.list_dir(layout.table_path(base)):
        if not folder.is_dir or folder.name.startswith("."):
            continue
        for info in storage.list_dir(folder.path):
            log = LogFileName.parse(info.name)
            if log is None or log.extension != "log":
                continue
            blocks = list(read_blocks(storage.read_bytes(info.path)))
            if blocks and all(b.instant == instant or b.type == BlockType.CORRUPT for b in blocks):
                found.append(info.path)
    return sorted(found)


def _drop_failed_attempt(storage: Storage, base: str, instant: str, timeline: list[MetaInstant],
                         fmt: Format = V1) -> None:
    """Remove what an earlier, unfinished deltacommit at `instant` left (its log files, its
    requested and inflight files), so its blocks never count once `instant` completes."""
    pending = next((i for i in timeline if i.timestamp == instant), None)
    if pending is None:
        return
    if pending.completed:
        raise HudiFormatError(f"{layout.table_path(base)}: instant {instant} is already recorded in the metadata table")
    for path in instant_log_files(storage, base, instant):
        storage.delete(path)
    for state in ("inflight", "requested"):
        storage.delete(join(layout.timeline_path(base, fmt), layout.instant_file(instant, pending.action, state)))


def record(table: HudiTable, instant: str, change: FilesChange,
           record_index: RecordIndexChange | None = None,
           timeline: list[MetaInstant] | None = None,
           stats: Mapping[str, HashedChange] | None = None) -> MetaInstant:
    """Write the metadata table's deltacommit at data instant `instant` for `change` (and, on a
    table with Hudi's record index, `record_index`: the keys the instant wrote or deleted; `stats`:
    the changes of hashed-key partitions such as `column_stats`, by partition); call
    before the data instant completes (see the module's docstring). `timeline`: the metadata
    table's, as the caller just listed it (not listed again unless a compaction or an earlier
    attempt of `instant` was left pending)."""
    storage, base = table.storage, table.base
    fmt = Format.of(table.config)
    if timeline is None:
        timeline = layout.timeline(storage, base, fmt)
    if not timeline:
        raise HudiFormatError(f"{base}: the table has no metadata table to record {instant} in")
    if any(i.action == layout.COMPACTION and not i.completed for i in timeline):
        compaction.finish_pending(table)
        timeline = layout.timeline(storage, base, fmt)
    if any(i.timestamp == instant for i in timeline):
        _drop_failed_attempt(storage, base, instant, timeline, fmt)
        timeline = layout.timeline(storage, base, fmt)
    completed = layout.completions(timeline)
    current = layout.latest_slice(storage, base, completed, fmt=fmt)
    if current is None:
        raise HudiFormatError(f"{layout.partition_path(base)}: no completed file slice of {FILE_ID}")
    records = change.records()
    appends = [LogAppend(current, (data_block(instant, records, fmt.is_1x),), len(records))] if records else []
    if record_index is not None and not record_index.empty:
        slices = layout.latest_slices(storage, base, completed, RECORD_INDEX, fmt)
        if not slices:
            raise HudiFormatError(f"{layout.partition_path(base, RECORD_INDEX)}: the table has no record index")
        appends += log_appends(slices, instant, record_index, fmt.is_1x)
    for partition, found in sorted((stats or {}).items()):
        if found.empty:
            continue
        slices = layout.latest_slices(storage, base, completed, partition, fmt)
        if not slices:
            raise HudiFormatError(f"{layout.partition_path(base, partition)}: the metadata partition has no file group")
        appends += hashed_appends(slices, instant, partition, found, fmt.is_1x)
    write_instant_file(storage, base, layout.instant_file(instant, layout.DELTA_COMMIT, "requested"), fmt=fmt)
    planned = [(a.slice, a.records) for a in appends] or [(current, 0)]
    inflight = CommitMetadata(_by_partition(
        WriteStat(file_id=s.file_id, prev_commit=s.base_instant, num_update_writes=n, partition_path=s.partition)
        for s, n in planned), operation_type="UPSERT_PREPPED")
    write_instant_file(storage, base, layout.instant_file(instant, layout.DELTA_COMMIT, "inflight"),
                       commit_bytes(inflight, fmt), fmt)
    # no appends (an instant that changed no file: a schema commit): a deltacommit without log blocks, as Hudi's
    written = [_append(storage, base, a, instant, fmt) for a in appends]
    return complete_instant(storage, base, instant, layout.DELTA_COMMIT, completed_metadata(written, "UPSERT_PREPPED", fmt),
                            fmt)


def _append(storage: Storage, base: str, append: LogAppend, instant: str, fmt: Format = V1) -> WriteStat:
    """Write a deltacommit's new log file in one file group; its write stat (Hudi 1.x: the log file
    and its stat are the deltacommit's own, as 1.x writes them)."""
    current = append.slice
    log = current.new_log(instant, WRITE_TOKEN, fmt)
    data = b"".join(encode_block(b) for b in append.blocks)
    storage.write_bytes(join(layout.partition_path(base, current.partition), log.format()), data)
    if fmt.is_1x:
        return write_stat(f"{current.partition}/{log.format()}", instant, append.records, len(data), inserts=False,
                          partition=current.partition, file_id=current.file_id, logVersion=log.version,
                          logOffset=0, baseFile="", logFiles=[log.format()])
    logs = [n.format() for n, _ in current.log_files] + [log.format()]
    return write_stat(f"{current.partition}/{log.format()}", current.base_instant, append.records, len(data),
                 inserts=False, partition=current.partition, file_id=current.file_id, logVersion=log.version,
                 logOffset=0, baseFile=current.base_file or "", logFiles=logs, recordsStats={"val": None})


__all__ = ["completed_metadata", "initialize", "instant_log_files", "is_enabled", "list_data_files",
           "metadata_config", "record", "write_instant_file", "write_stat"]

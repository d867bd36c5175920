"""Writing the metadata table's `files` partition as Apache Hudi 0.15 does.

`initialize` builds it from a listing of the data table's files: the metadata table's
hoodie.properties, a deltacommit `<latest data instant>010` holding an HFile base file of every
partition's files and an empty log file (a delete block) that starts the file group's log, then
the data table's hoodie.properties naming `files` (from then on Hudi readers use it; a crash
before leaves a folder no reader uses, which the next `initialize` deletes, as Hudi does).

`record` writes one deltacommit at a data instant's time: a new log file in the latest file
slice holding one HFILE_DATA block of the instant's records. Call it after the instant's data
files are written and before the data instant completes: readers ignore a metadata deltacommit
whose data instant is not completed (`reader.valid_instants`), so a crash in between leaves a
table whose listing is still the completed instants'.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tablespec.errors import HudiFormatError
from tablespec.hudi import keys
from tablespec.hudi.commit import CommitMetadata, WriteStat
from tablespec.hudi.config import TableConfig, init_table, write_table_config
from tablespec.hudi.io import Storage, join
from tablespec.hudi.logfile import BlockType, Header, LogBlock, encode_block, read_blocks
from tablespec.hudi.mdt import compaction, layout
from tablespec.hudi.mdt.layout import FILE_ID, FILES, WRITE_TOKEN, MetaInstant
from tablespec.hudi.mdt.records import SCHEMA_JSON, FilesChange, base_hfile, data_block, listing_records
from tablespec.hudi.metadata_table import INFLIGHT_KEY, PARTITIONS_KEY
from tablespec.hudi.naming import BaseFileName, LogFileName
from tablespec.hudi.partition import discover_partitions, write_partition_metadata

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

PAYLOAD_CLASS = "org.apache.hudi.metadata.HoodieMetadataPayload"
KEY_GENERATOR = "org.apache.hudi.metadata.HoodieTableMetadataKeyGenerator"
MERGER_STRATEGY = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"      # Hudi's default record merger strategy id
# An empty HoodieDeleteBlock (block version 3, then the length and Avro bytes of an empty list).
EMPTY_DELETE_CONTENT = b"\x00\x00\x00\x03\x00\x00\x00\x01\x00"


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
    config = table.config
    names = (config.extra.get(PARTITIONS_KEY, "") if config else "").split(",")
    return FILES in (n.strip() for n in names)


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


def _write_instant_file(storage: Storage, base: str, name: str, content: bytes = b"") -> None:
    try:
        storage.create_exclusive(join(layout.meta_path(base), name), content)
    except FileExistsError:
        raise HudiFormatError(f"{join(layout.meta_path(base), name)} already exists") from None


def _stat(path: str, prev_commit: str, records: int, size: int, inserts: bool, **delta: Any) -> WriteStat:
    return WriteStat(file_id=FILE_ID, path=path, prev_commit=prev_commit, num_writes=records,
                     num_inserts=records if inserts else 0, num_update_writes=0 if inserts else records,
                     total_write_bytes=size, partition_path=FILES, file_size_in_bytes=size,
                     runtime_stats={"totalScanTime": 0, "totalUpsertTime": 0, "totalCreateTime": 0}, extra=delta)


def _completed_metadata(stat: WriteStat, operation: str) -> bytes:
    return CommitMetadata({FILES: [stat]}, extra_metadata={"schema": SCHEMA_JSON}, operation_type=operation).to_json()


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
    head = timeline.head
    instant = layout.init_instant(head.timestamp if head else None)
    if listing is None:
        listing = list_data_files(storage, base, head.timestamp if head else None)

    mdt = layout.table_path(base)
    init_table(storage, mdt, metadata_config(config))
    _write_instant_file(storage, base, layout.instant_file(instant, layout.DELTA_COMMIT, "requested"))
    _write_instant_file(storage, base, layout.instant_file(instant, layout.DELTA_COMMIT, "inflight"))
    write_partition_metadata(storage, mdt, FILES, instant)
    first_log = LogFileName(FILE_ID, instant, 1, WRITE_TOKEN)
    storage.write_bytes(join(layout.partition_path(base), first_log.format()),
                        encode_block(LogBlock(BlockType.DELETE, {Header.INSTANT_TIME: instant}, EMPTY_DELETE_CONTENT)))
    name = layout.base_file_name(instant)
    records = listing_records(listing)
    data = base_hfile(records, name)
    storage.write_bytes(join(layout.partition_path(base), name), data)
    stat = _stat(f"{FILES}/{name}", "null", len(records), len(data), inserts=True)
    _write_instant_file(storage, base, layout.instant_file(instant, layout.DELTA_COMMIT),
                        _completed_metadata(stat, "BULK_INSERT"))
    write_table_config(storage, base, config.with_updates(extra={**config.extra, PARTITIONS_KEY: FILES,
                                                                 INFLIGHT_KEY: ""}))
    table.refresh()
    return instant


def _drop_failed_attempt(storage: Storage, base: str, instant: str, timeline: list[MetaInstant]) -> None:
    """Remove what an earlier, unfinished deltacommit at `instant` left (its log files, its
    requested and inflight files), so its blocks never count once `instant` completes."""
    pending = next((i for i in timeline if i.timestamp == instant), None)
    if pending is None:
        return
    if pending.completed:
        raise HudiFormatError(f"{layout.table_path(base)}: instant {instant} is already recorded in the metadata table")
    folder = layout.partition_path(base)
    for info in storage.list_dir(folder):
        log = LogFileName.parse(info.name)
        if log is None or log.file_id != FILE_ID:
            continue
        blocks = list(read_blocks(storage.read_bytes(info.path)))
        if blocks and all(b.instant == instant or b.type == BlockType.CORRUPT for b in blocks):
            storage.delete(info.path)
    for state in ("inflight", "requested"):
        storage.delete(join(layout.meta_path(base), layout.instant_file(instant, pending.action, state)))


def record(table: HudiTable, instant: str, change: FilesChange,
           timeline: list[MetaInstant] | None = None) -> MetaInstant:
    """Write the metadata table's deltacommit at data instant `instant` for `change`; call before
    the data instant completes (see the module's docstring). `timeline`: the metadata table's,
    as the caller just listed it (not listed again unless a compaction or an earlier attempt of
    `instant` was left pending)."""
    storage, base = table.storage, table.base
    if timeline is None:
        timeline = layout.timeline(storage, base)
    if not timeline:
        raise HudiFormatError(f"{base}: the table has no metadata table to record {instant} in")
    if any(i.action == layout.COMPACTION and not i.completed for i in timeline):
        compaction.finish_pending(table)
        timeline = layout.timeline(storage, base)
    if any(i.timestamp == instant for i in timeline):
        _drop_failed_attempt(storage, base, instant, timeline)
        timeline = layout.timeline(storage, base)
    completed = {i.timestamp for i in timeline if i.completed}
    current = layout.latest_slice(storage, base, completed)
    if current is None:
        raise HudiFormatError(f"{layout.partition_path(base)}: no completed file slice of {FILE_ID}")
    records = change.records()
    _write_instant_file(storage, base, layout.instant_file(instant, layout.DELTA_COMMIT, "requested"))
    inflight = CommitMetadata({FILES: [WriteStat(file_id=FILE_ID, prev_commit=current.base_instant,
                                                 num_update_writes=len(records))]},
                              operation_type="UPSERT_PREPPED")
    _write_instant_file(storage, base, layout.instant_file(instant, layout.DELTA_COMMIT, "inflight"), inflight.to_json())
    if not records:   # an instant that changed no file (a schema commit): a deltacommit with no log block, as Hudi's
        _write_instant_file(storage, base, layout.instant_file(instant, layout.DELTA_COMMIT),
                            CommitMetadata({}, extra_metadata={"schema": SCHEMA_JSON},
                                           operation_type="UPSERT_PREPPED").to_json())
        return MetaInstant(instant, layout.DELTA_COMMIT, "completed")
    log = LogFileName(FILE_ID, current.base_instant, current.next_log_version, WRITE_TOKEN)
    data = encode_block(data_block(instant, records))
    storage.write_bytes(join(layout.partition_path(base), log.format()), data)
    logs = [n.format() for n, _ in current.log_files] + [log.format()]
    stat = _stat(f"{FILES}/{log.format()}", current.base_instant, len(records), len(data), inserts=False,
                 logVersion=log.version, logOffset=0, baseFile=current.base_file or "", logFiles=logs,
                 recordsStats={"val": None})
    _write_instant_file(storage, base, layout.instant_file(instant, layout.DELTA_COMMIT),
                        _completed_metadata(stat, "UPSERT_PREPPED"))
    return MetaInstant(instant, layout.DELTA_COMMIT, "completed")


__all__ = ["initialize", "is_enabled", "list_data_files", "metadata_config", "record"]

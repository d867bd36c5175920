"""Building Hudi's record index (the metadata table's `record_index` partition) as Apache Hudi 0.15
and 1.2 bootstrap it; `writer.record` then keeps it in every metadata deltacommit.

`initialize` takes the location of every record of the table: one metadata deltacommit at
`<latest data instant><010 + n>` (0.15: the first suffix the metadata timeline does not have: the
`files` partition's initialization took `010` when both were built together; Hudi 1.x: the first
of `00000000000000000`, `...001`, ... it does not have, as HoodieBackedTableMetadataWriter's
generateUniqueInstantTime picks it, completed in 1.x's layout: `layout.Format`) writes, per file
group `record-index-NNNN-0`, a log file starting its log (an empty delete block) and an HFile
base file of its keys (none for a file group without keys), then (1.x) the index's definition
(index_defs.py), and hoodie.properties names `record_index` (from then on Hudi's writers and
readers use it). A crash before that leaves files no reader uses; the next `initialize` deletes
them and the failed deltacommit.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from tablespec.errors import HudiFormatError
from tablespec.hudi.config import write_table_config
from tablespec.hudi.formats import index_defs
from tablespec.hudi.formats.commit import CommitMetadata
from tablespec.hudi.formats.hfile import write_hfile
from tablespec.hudi.formats.logfile import delete_block, encode_block
from tablespec.hudi.formats.naming import LogFileName
from tablespec.hudi.formats.partition import write_partition_metadata
from tablespec.hudi.io import join
from tablespec.hudi.mdt import layout, writer
from tablespec.hudi.mdt.instants import complete_instant, write_instant_file
from tablespec.hudi.mdt.layout import DELTA_COMMIT, FILES, INIT_SUFFIX, SOLO_COMMIT_TIMESTAMP, WRITE_TOKEN, Format
from tablespec.hudi.mdt.record_index import (
    RECORD_INDEX,
    Location,
    by_file_group,
    encode_location,
    file_group_count,
    file_group_id,
)
from tablespec.hudi.mdt.records import stored_schema_json
from tablespec.hudi.metadata_table import INFLIGHT_KEY, PARTITIONS_KEY
from tablespec.hudi.timeline.active import avro_content

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

Entry = tuple[str, str, str, str]          # record key, data partition, file id, instant that wrote it


def partitions(table: HudiTable) -> list[str]:
    """The metadata partitions the data table's hoodie.properties (as the handle read them) name."""
    names = (table.config.extra.get(PARTITIONS_KEY, "") if table.config else "").split(",")
    return [n.strip() for n in names if n.strip()]


def is_enabled(table: HudiTable) -> bool:
    """Whether the table has Hudi's record index (its writers and readers use it)."""
    return RECORD_INDEX in partitions(table)


def _init_instant(head: str | None, taken: set[str], fmt: Format = layout.V1) -> str:
    stem, offset = layout.init_instant(head)[:-len(INIT_SUFFIX)], int(INIT_SUFFIX)
    if fmt.is_1x:        # 1.x: 17 digits from Hudi's "no instant" time, one millisecond apart
        stem, offset = SOLO_COMMIT_TIMESTAMP, 0
    while f"{stem}{offset:03d}" in taken:
        offset += 1
    return f"{stem}{offset:03d}"


def _is_init_instant(timestamp: str, fmt: Format) -> bool:
    """Whether a metadata deltacommit's time is one `_init_instant` gives (a partition's initialization)."""
    if fmt.is_1x:
        return len(timestamp) == len(SOLO_COMMIT_TIMESTAMP) + 3 and timestamp.startswith(SOLO_COMMIT_TIMESTAMP)
    return len(timestamp) == len(SOLO_COMMIT_TIMESTAMP) + 6


def _started_elsewhere(table: HudiTable) -> set[str]:
    """The instants that started a file of another metadata partition: Hudi 1.2 initializes
    column_stats and partition_stats of a table without files at a deltacommit writing nothing."""
    storage, root = table.storage, layout.table_path(table.base)
    folders = [i.path for i in storage.list_dir(root) if i.is_dir and i.name not in (".hoodie", RECORD_INDEX)]
    started = set()
    for listing in storage.list_dirs(folders).values():
        for info in listing:
            log, based = LogFileName.parse(info.name), layout.parse_base_file(info.name)
            started |= {log.base_instant} if log else {based[1]} if based else set()
    return started


def _drop_leftover(table: HudiTable, fmt: Format) -> None:
    """Delete what an earlier `initialize` that died left: the partition's folder, and its
    deltacommit (the metadata timeline's only initializing deltacommit not completed, or completed
    but writing nothing but `record_index`, that started no file of another partition)."""
    storage, base = table.storage, table.base
    storage.delete_tree(layout.partition_path(base, RECORD_INDEX))
    folder = layout.timeline_path(base, fmt)
    others = _started_elsewhere(table)
    for instant in layout.timeline(storage, base, fmt):
        if (instant.action != DELTA_COMMIT or not _is_init_instant(instant.timestamp, fmt)
                or instant.timestamp in others):
            continue
        if instant.completed:
            raw = storage.read_bytes(join(folder, instant.file_name))
            written = (avro_content(raw, instant.file_name).get("partitionToWriteStats") or {} if fmt.is_1x
                       else CommitMetadata.from_json(raw).partition_to_write_stats)
            if not set(written) <= {RECORD_INDEX}:
                continue
        for name in {instant.file_name, *(layout.instant_file(instant.timestamp, DELTA_COMMIT, state)
                                          for state in ("inflight", "requested"))}:
            storage.delete(join(folder, name))


def initialize(table: HudiTable, entries: Iterable[Entry], file_groups: int | None = None) -> str:
    """Build the record index from (key, partition, file id, instant) of every record of the table
    (the instant of the file slice holding it) with `file_groups` file groups (by default as many
    as Hudi would give it) and name it in hoodie.properties. Returns the initializing instant.
    Call under the table lock with no data instant pending, on a table whose metadata table has
    its `files` partition. The handle is refreshed."""
    storage, base, config = table.storage, table.base, table.config
    if config is None:
        raise HudiFormatError(f"{base}: no Hudi table to build a record index for")
    if FILES not in partitions(table):
        raise HudiFormatError(f"{base}: the record index needs the metadata table's files partition; build it first")
    if is_enabled(table):
        raise HudiFormatError(f"{base}: the metadata table's record_index partition already exists")
    if table.timeline.pending():
        raise HudiFormatError(f"{base}: cannot build the record index while instants are pending: "
                              + ", ".join(str(i) for i in table.timeline.pending()))
    fmt = Format.of(config)
    index_defs.check(storage, base, config)   # refused before the first change
    _drop_leftover(table, fmt)
    head = table.timeline.head
    instant = _init_instant(head.timestamp if head else None,
                            {i.timestamp for i in layout.timeline(storage, base, fmt)}, fmt)
    located = [(key, Location(partition, file_id, at)) for key, partition, file_id, at in entries]
    count = file_groups or file_group_count(len(located))
    groups = by_file_group(located, count)
    del located

    write_instant_file(storage, base, layout.instant_file(instant, DELTA_COMMIT, "requested"), fmt=fmt)
    write_instant_file(storage, base, layout.instant_file(instant, DELTA_COMMIT, "inflight"), fmt=fmt)
    write_partition_metadata(storage, layout.table_path(base), RECORD_INDEX, instant)
    folder = layout.partition_path(base, RECORD_INDEX)
    stats = []
    for index, records in enumerate(groups):
        file_id = file_group_id(index)
        first_log = LogFileName(file_id, instant, 1, WRITE_TOKEN)
        storage.write_bytes(join(folder, first_log.format()), encode_block(delete_block(instant, ())))
        if not records:
            continue
        name = layout.base_file_name(instant, file_id)
        data = write_hfile(((k, encode_location(loc, name, fmt.is_1x)) for k, loc in records),
                           {"schema": stored_schema_json(fmt.is_1x)})
        storage.write_bytes(join(folder, name), data)
        stats.append(writer.write_stat(f"{RECORD_INDEX}/{name}", "null", len(records), len(data), inserts=True,
                                  partition=RECORD_INDEX, file_id=file_id))
    operation = "BULK_INSERT_PREPPED" if fmt.is_1x else "BULK_INSERT"      # as each Hudi line names it
    complete_instant(storage, base, instant, DELTA_COMMIT, writer.completed_metadata(stats, operation, fmt), fmt)
    named = ",".join(sorted({*partitions(table), RECORD_INDEX}))
    if fmt.is_1x:   # Hudi 1.2 defines the index it initializes
        config = index_defs.with_record_index(storage, base, config)
    write_table_config(storage, base, config.with_updates(extra={**config.extra, PARTITIONS_KEY: named,
                                                                 INFLIGHT_KEY: ""}))
    table.refresh()
    return instant


__all__ = ["Entry", "initialize", "is_enabled", "partitions"]

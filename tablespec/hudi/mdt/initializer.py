"""Initializing one hashed-key partition of Hudi's metadata table (`record_index`, `column_stats`,
`partition_stats`) as Apache Hudi 0.15 and 1.2 bootstrap it; `writer.record` then keeps it in
every metadata deltacommit.

One metadata deltacommit at `<latest data instant><010 + n>` (0.15: the first suffix the metadata
timeline does not have: the `files` partition's initialization took `010` when both were built
together; Hudi 1.x: the first of `00000000000000000`, `...001`, ... it does not have, as
HoodieBackedTableMetadataWriter's generateUniqueInstantTime picks it, completed in 1.x's layout:
`layout.Format`) writes, per file group, a log file starting its log (an empty delete block) and an
HFile base file of its records (none for a file group without records). hoodie.properties name the
partition inflight (`hoodie.table.metadata.partitions.inflight`) before the first file, as Hudi
does, and ready (`hoodie.table.metadata.partitions`) after the deltacommit completed and (1.x) the
index is defined (index_defs.py): from then on Hudi's writers and readers use it. A crash before
that leaves an inflight partition no reader uses (plans drop it); the next `initialize` deletes
its files and its failed deltacommit first.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tablespec.errors import HudiFormatError
from tablespec.faults import crash_point
from tablespec.hudi.config import TableConfig, named_partitions, write_table_config
from tablespec.hudi.formats import index_defs
from tablespec.hudi.formats.commit import CommitMetadata
from tablespec.hudi.formats.hfile import write_hfile
from tablespec.hudi.formats.logfile import delete_block, encode_block
from tablespec.hudi.formats.naming import LogFileName
from tablespec.hudi.formats.partition import write_partition_metadata
from tablespec.hudi.io import Storage, join
from tablespec.hudi.mdt import layout, writer
from tablespec.hudi.mdt.instants import complete_instant, write_instant_file
from tablespec.hudi.mdt.layout import DELTA_COMMIT, FILES, INIT_SUFFIX, SOLO_COMMIT_TIMESTAMP, WRITE_TOKEN, Format
from tablespec.hudi.mdt.records import stored_schema_json
from tablespec.hudi.metadata_table import INFLIGHT_KEY, PARTITIONS_KEY
from tablespec.hudi.timeline.active import avro_content

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

# a file group's (key, record) pairs, sorted by key; `encode(record, base file name)` gives its stored bytes
Group = Sequence[tuple[str, Any]]
Written = tuple[int, str, int, int]      # a base file written: its file group's number, name, bytes, records


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


def _started_elsewhere(table: HudiTable, partition: str) -> set[str]:
    """The instants that started a file of another metadata partition: Hudi 1.2 initializes
    column_stats and partition_stats of a table without files at a deltacommit writing nothing."""
    storage, root = table.storage, layout.table_path(table.base)
    folders = [i.path for i in storage.list_dir(root) if i.is_dir and i.name not in (".hoodie", partition)]
    started = set()
    for listing in storage.list_dirs(folders).values():
        for info in listing:
            log, based = LogFileName.parse(info.name), layout.parse_base_file(info.name)
            started |= {log.base_instant} if log else {based[1]} if based else set()
    return started


def _drop_leftover(table: HudiTable, partition: str, fmt: Format) -> None:
    """Delete what an earlier `initialize` of `partition` that died left: its folder, and its
    deltacommit (an initializing deltacommit not completed, or completed but writing nothing but
    `partition`, that started no file of another partition)."""
    storage, base = table.storage, table.base
    storage.delete_tree(layout.partition_path(base, partition))
    folder = layout.timeline_path(base, fmt)
    others = _started_elsewhere(table, partition)
    for instant in layout.timeline(storage, base, fmt):
        if (instant.action != DELTA_COMMIT or not _is_init_instant(instant.timestamp, fmt)
                or instant.timestamp in others):
            continue
        if instant.completed:
            raw = storage.read_bytes(join(folder, instant.file_name))
            written = (avro_content(raw, instant.file_name).get("partitionToWriteStats") or {} if fmt.is_1x
                       else CommitMetadata.from_json(raw).partition_to_write_stats)
            if not set(written) <= {partition}:
                continue
        for name in {instant.file_name, *(layout.instant_file(instant.timestamp, DELTA_COMMIT, state)
                                          for state in ("inflight", "requested"))}:
            storage.delete(join(folder, name))


def _name(table: HudiTable, config: TableConfig, partition: str, ready: bool) -> None:
    """Name `partition` in hoodie.properties: inflight, or ready (and no longer inflight)."""
    inflight = [p for p in named_partitions(table.config, inflight=True) if p != partition] + ([] if ready else [partition])
    partitions = sorted({*named_partitions(table.config), partition}) if ready else named_partitions(table.config)
    write_table_config(table.storage, table.base, config.with_updates(extra={
        **config.extra, PARTITIONS_KEY: ",".join(partitions), INFLIGHT_KEY: ",".join(inflight)}))
    table.refresh()


def write_base_file(storage: Storage, base: str, partition: str, instant: str, group: str, records: Group,
                    encode: Callable[[Any, str], bytes], one_x: bool) -> tuple[str, int]:
    """Write file group `group`'s HFile base file of `records` (sorted by key, stored as
    `encode(record, base file name)`) at `instant`; returns its name and size. Executors call it
    for the file groups they build (`initialize_written`): in one step, so a retried or speculative
    task writing the same name never leaves a committed file truncated."""
    name = layout.base_file_name(instant, group)
    data = write_hfile(((k, encode(r, name)) for k, r in records), {"schema": stored_schema_json(one_x)})
    storage.write_atomic(join(layout.partition_path(base, partition), name), data)
    return name, len(data)


def initialize(table: HudiTable, partition: str, groups: Sequence[Group], file_id: Callable[[int], str],
               encode: Callable[[Any, str], bytes], define: Callable[[TableConfig], TableConfig] | None = None) -> str:
    """Build metadata partition `partition` with one file group per entry of `groups` (file group
    `file_id(n)` holds `groups[n]`, each record stored as `encode(record, base file name)`) and name
    it ready in hoodie.properties; `define` (Hudi 1.x) writes the index's definition and returns the
    config naming the definitions file. Returns the initializing instant. Call under the table lock
    and Hudi's transaction lock with no data instant pending, on a table whose metadata table has its
    `files` partition. The handle is refreshed."""
    def write(instant: str, one_x: bool) -> list[Written]:
        out = []
        for index, records in enumerate(groups):
            if records:
                out.append((index, *write_base_file(table.storage, table.base, partition, instant, file_id(index),
                                                    records, encode, one_x), len(records)))
                crash_point("during_metadata_partition_build")
        return out
    return initialize_written(table, partition, len(groups), file_id, write, define)


def initialize_written(table: HudiTable, partition: str, count: int, file_id: Callable[[int], str],
                       write: Callable[[str, bool], list[Written]],
                       define: Callable[[TableConfig], TableConfig] | None = None) -> str:
    """`initialize` with `count` file groups whose base files `write(instant, one_x)` writes (elsewhere:
    Spark executors, `write_base_file`) once the partition is named inflight and its deltacommit
    requested, returning (file group number, base file name, bytes, records) of each it wrote."""
    storage, base, config = table.storage, table.base, table.config
    if config is None:
        raise HudiFormatError(f"{base}: no Hudi table to build a {partition} partition for")
    if partition != FILES and FILES not in named_partitions(table.config):
        raise HudiFormatError(f"{base}: the metadata table's {partition} partition needs its files partition; "
                              "build it first")
    if partition in named_partitions(table.config):
        raise HudiFormatError(f"{base}: the metadata table's {partition} partition already exists")
    if table.timeline.pending():
        raise HudiFormatError(f"{base}: cannot build the metadata table's {partition} partition while instants are "
                              "pending: " + ", ".join(str(i) for i in table.timeline.pending()))
    fmt = Format.of(config)
    index_defs.check(storage, base, config)   # refused before the first change
    _name(table, config, partition, ready=False)
    _drop_leftover(table, partition, fmt)
    head = table.timeline.head
    instant = _init_instant(head.timestamp if head else None,
                            {i.timestamp for i in layout.timeline(storage, base, fmt)}, fmt)
    write_instant_file(storage, base, layout.instant_file(instant, DELTA_COMMIT, "requested"), fmt=fmt)
    write_instant_file(storage, base, layout.instant_file(instant, DELTA_COMMIT, "inflight"), fmt=fmt)
    write_partition_metadata(storage, layout.table_path(base), partition, instant)
    folder = layout.partition_path(base, partition)
    for index in range(count):
        first_log = LogFileName(file_id(index), instant, 1, WRITE_TOKEN)
        storage.write_bytes(join(folder, first_log.format()), encode_block(delete_block(instant, ())))
    stats = [writer.write_stat(f"{partition}/{name}", "null", records, size, inserts=True, partition=partition,
                               file_id=file_id(index))
             for index, name, size, records in sorted(write(instant, fmt.is_1x))]
    operation = "BULK_INSERT_PREPPED" if fmt.is_1x else "BULK_INSERT"      # as each Hudi line names it
    complete_instant(storage, base, instant, DELTA_COMMIT, writer.completed_metadata(stats, operation, fmt), fmt)
    config = table.table_config
    if fmt.is_1x and define is not None:   # Hudi 1.2 defines the index it initializes
        config = define(config)
    _name(table, config, partition, ready=True)
    return instant


__all__ = ["Group", "Written", "initialize", "initialize_written", "write_base_file"]

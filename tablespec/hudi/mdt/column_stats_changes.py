"""What a data instant does to the metadata table's `column_stats`, `partition_stats` and
`bloom_filters`, read from the Parquet footers of the base files it wrote (no pass over the data)
and the records of the log files a deltacommit wrote.

A commit, replacecommit or deltacommit adds each written file's column ranges; on table version 9
each partition it touched gets its statistics anew over that partition's latest file slices (the
files it wrote, and the base and log files of the others, a log file joining its slice), tight
bounds as Hudi 1.x writes them. Each base file written adds its footer's bloom filter (log files
have none in the partition, as Hudi's). A clean records each deleted file's ranges and filter as
deleted. A rollback needs nothing here: the metadata table's deltacommit of the rolled-back instant
is rolled back with it (sync.py), its records with it.
"""
from __future__ import annotations

import json
import posixpath
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from tablespec.errors import HudiFormatError
from tablespec.hudi.config import named_partitions
from tablespec.hudi.formats import index_defs
from tablespec.hudi.formats.logfile import BlockType, Header, avro_records, parquet_block_table, read_blocks
from tablespec.hudi.formats.naming import LogFileName
from tablespec.hudi.io import join
from tablespec.hudi.mdt import bloom_filters, column_stats, layout, secondary_index
from tablespec.hudi.mdt.base_reads import BaseFileReads
from tablespec.hudi.mdt.bloom_filters import BLOOM_FILTERS
from tablespec.hudi.mdt.column_stats import COLUMN_STATS, PARTITION_STATS, ColumnRange
from tablespec.hudi.mdt.record_index import HashedChange
from tablespec.types import Array, DataType, Map, Struct

if TYPE_CHECKING:
    from tablespec.hudi.config import TableConfig
    from tablespec.hudi.formats.commit import CommitMetadata
    from tablespec.hudi.mdt.records import FilesChange
    from tablespec.hudi.table import HudiTable

META_COLUMNS = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                "_hoodie_partition_path", "_hoodie_file_name")


def kept(table: HudiTable) -> tuple[str, ...]:
    """The data-skipping partitions the table's hoodie.properties name (ready) that tablespec keeps:
    `column_stats`, `bloom_filters`, and `partition_stats` on a version 9 table."""
    return kept_in(table.config)


def kept_in(config: TableConfig | None) -> tuple[str, ...]:
    """`kept` of a table with `config` (its hoodie.properties)."""
    names = named_partitions(config)
    one_x = config is not None and config.version >= 8
    return tuple(p for p in (COLUMN_STATS, PARTITION_STATS, BLOOM_FILTERS)
                 if p in names and (p != PARTITION_STATS or one_x))


def half_built(table: HudiTable) -> tuple[str, ...]:
    """The kept data-skipping partitions and secondary indexes hoodie.properties name that have no
    completed file group (a Hudi restore can roll back the instant that built one): nothing to append
    to, so they are dropped like a partition tablespec does not maintain, never trusted."""
    found = kept(table) + secondary_index.kept_in(table.config)
    if not found:
        return ()
    fmt = layout.Format.of(table.config)
    completed = layout.completions(layout.timeline(table.storage, table.base, fmt))
    return tuple(p for p in found if not table.storage.is_dir(layout.partition_path(table.base, p))
                 or not layout.latest_slices(table.storage, table.base, completed, p, fmt))


# what Hudi 1.x's writers index when their config names no columns: these meta columns (the other
# two differ per record), then the table's columns of primitive type, MAX_INDEXED_COLUMNS in all
INDEXED_META_COLUMNS = ("_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_record_key")
MAX_INDEXED_COLUMNS = 32   # hoodie.metadata.index.column.stats.max.columns.to.index


def hudi_default_columns(columns: Iterable[tuple[str, DataType]]) -> list[str]:
    """The columns Hudi 1.x indexes with no column list configured, for a table of `columns` (name,
    type): its index definition follows the schema as it evolves."""
    data = [name for name, dtype in columns if not name.startswith("_hoodie_") and not isinstance(dtype, (Struct, Array, Map))]
    return [*INDEXED_META_COLUMNS, *data][:MAX_INDEXED_COLUMNS]


def indexed_columns(table: HudiTable, defined: Mapping[str, Mapping[str, Any]] | None = None) -> Collection[str] | None:
    """The columns the table's column stats cover: on version 9 the index definition's source
    fields (`defined`: the definitions read already, else read); on version 6 (no definitions)
    every column Hudi 0.15 indexes (None)."""
    config = table.config
    if config is None or config.version < 8:
        return None
    fields = index_defs.source_fields(table.storage, table.base, config, COLUMN_STATS, defined)
    return None if fields is None else tuple(fields)


def _footer(table: HudiTable, path: str) -> pq.FileMetaData:
    with table.storage.open_input_file(join(table.base, path)) as f:
        return pq.read_metadata(f)


def _footer_ranges(table: HudiTable, path: str, columns: Collection[str] | None,
                   footer: pq.FileMetaData | None = None) -> list[ColumnRange]:
    """A file's column ranges: a base file's from its footer (`footer`: read already), a log file's
    over its data blocks' records."""
    name = posixpath.basename(path)
    if LogFileName.parse(name) is not None:
        return _log_ranges(table, path, columns)
    return column_stats.file_ranges(footer or _footer(table, path), name, columns)


# Avro primitive (or logical) type -> the Arrow type of the Parquet a block's records are measured in
_AVRO_ARROW = {"int": pa.int32(), "long": pa.int64(), "float": pa.float32(), "double": pa.float64(),
               "string": pa.string(), "boolean": pa.bool_(), "bytes": pa.binary(), "date": pa.date32(),
               "timestamp-micros": pa.timestamp("us", tz="UTC"), "timestamp-millis": pa.timestamp("ms", tz="UTC")}


def _arrow_field(field: dict[str, Any]) -> pa.Field | None:
    """The Arrow field of an Avro record field whose statistics Hudi keeps (None: not indexed)."""
    t = field.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), None)
    if isinstance(t, dict):
        if t.get("logicalType") == "decimal":
            return pa.field(field["name"], pa.decimal128(t["precision"], t.get("scale", 0)))
        t = t.get("logicalType") or t.get("type")
    arrow = _AVRO_ARROW.get(t) if isinstance(t, str) else None
    return None if arrow is None else pa.field(field["name"], arrow)


def _log_ranges(table: HudiTable, path: str, columns: Collection[str] | None) -> list[ColumnRange]:
    """A log file's column ranges over the records of its data blocks (delete blocks hold none), measured
    as the footer of a Parquet file holding them would give them."""
    tables = []
    for block in read_blocks(table.storage.read_bytes(join(table.base, path))):
        if block.type == BlockType.PARQUET_DATA:
            tables.append(parquet_block_table(block))
        elif block.type == BlockType.AVRO_DATA:
            fields = [f for f in json.loads(block.header[Header.SCHEMA]).get("fields") or ()
                      if (columns is None or f.get("name") in columns)]
            schema = pa.schema([a for a in map(_arrow_field, fields) if a is not None])
            tables.append(pa.Table.from_pylist([{n: r.get(n) for n in schema.names} for r in avro_records(block)],
                                               schema=schema))
    if not tables:
        return []
    sink = pa.BufferOutputStream()
    pq.write_table(pa.concat_tables(tables, promote_options="default"), sink)
    metadata = pq.read_metadata(pa.BufferReader(sink.getvalue()))
    return column_stats.file_ranges(metadata, posixpath.basename(path), columns)


def from_commit(table: HudiTable, instant: str, metadata: CommitMetadata, partitions: Collection[str],
                reads: BaseFileReads | None = None, defined: Mapping[str, Mapping[str, Any]] | None = None
                ) -> dict[str, HashedChange]:
    """The change of each kept partition (`partitions`, from `kept`) for a commit or replacecommit
    `instant` that has not completed yet (the handle's timeline shows it pending); the footers of the
    base files it wrote come through `reads` (the update's shared reads), the index definitions through
    `defined` (read once per commit) where given."""
    reads = reads or BaseFileReads(table.storage)
    one_x = table.config is not None and table.config.version >= 8
    columns = indexed_columns(table, defined)
    written: dict[str, dict[str, list[ColumnRange]]] = {}      # partition -> file id -> its ranges
    appended = {st.file_id for stats in metadata.partition_to_write_stats.values() for st in stats
                if st.path and LogFileName.parse(posixpath.basename(st.path)) is not None}
    out: dict[str, HashedChange] = {p: HashedChange() for p in partitions}
    for partition, stats in metadata.partition_to_write_stats.items():
        for stat in stats:
            if not stat.path:
                continue
            name = posixpath.basename(stat.path)
            footer = None if LogFileName.parse(name) is not None else \
                reads.read(join(table.base, stat.path), stat.file_size_in_bytes or None).footer
            if BLOOM_FILTERS in out and footer is not None:
                found = bloom_filters.footer_filter(footer)
                if found is None:
                    raise HudiFormatError(f"{join(table.base, stat.path)}: no bloom filter in its footer, which "
                                          f"the table's {BLOOM_FILTERS} partition needs")
                out[BLOOM_FILTERS].records.append(bloom_filters.bloom_filter_record(partition, name, instant, found))
            if COLUMN_STATS not in out and PARTITION_STATS not in out:
                continue
            ranges = _footer_ranges(table, stat.path, columns, footer)
            written.setdefault(partition, {})[stat.file_id] = ranges
            if COLUMN_STATS in out:
                out[COLUMN_STATS].records += [column_stats.column_stats_record(partition, r, one_x) for r in ranges]
    if PARTITION_STATS in out:
        replaced = metadata.partition_to_replace_file_ids or {}
        touched = sorted(set(written) | {p for p, ids in replaced.items() if ids})
        view = table.view_of(table.timeline, touched)
        for partition in touched:
            ranges = [r for rs in written.get(partition, {}).values() for r in rs]
            for group in view.file_groups(partition):
                if group.file_id in replaced.get(partition, ()) or (
                        group.file_id in written.get(partition, {}) and group.file_id not in appended):
                    continue   # a new base file replaces the slice; a new log file joins it
                current = group.latest_slice
                names = [current.base_file.name] if current.base_file is not None else []
                for name in [*names, *(f.file_name.format() for f in current.log_files)]:
                    ranges += _footer_ranges(table, f"{partition}/{name}" if partition else name, columns)
            out[PARTITION_STATS].records += [column_stats.partition_stats_record(partition, r)
                                     for r in column_stats.merged(ranges, column_stats.partition_name(partition))]
    return {p: change for p, change in out.items() if not change.empty}


def _schema_columns(table: HudiTable) -> list[str]:
    schema = table.timeline.latest_schema()
    fields = [f.get("name") for f in (json.loads(schema).get("fields") or [])] if schema else []
    return [*META_COLUMNS, *(f for f in fields if isinstance(f, str) and f not in META_COLUMNS)]


def from_removed(table: HudiTable, instant: str, change: FilesChange,
                 partitions: Collection[str]) -> dict[str, HashedChange]:
    """What a clean (`instant`) that deleted files does: each indexed column's statistics of each file
    and each base file's bloom filter go (Hudi 1.x: their keys in a delete block; 0.15: a record
    marked deleted)."""
    if not change.removed:
        return {}
    one_x = table.config is not None and table.config.version >= 8
    out = {}
    if BLOOM_FILTERS in partitions:
        based = [(p, n) for p, files in sorted(change.removed.items()) for n in sorted(files) if LogFileName.parse(n) is None]
        out[BLOOM_FILTERS] = HashedChange(deletes=[bloom_filters.key(p, n) for p, n in based]) if one_x else \
            HashedChange(records=[bloom_filters.deleted_record(p, n, instant) for p, n in based])
    if COLUMN_STATS not in partitions:
        return out
    columns = indexed_columns(table)
    names: Iterable[str] = columns if columns is not None else _schema_columns(table)
    gone = [(partition, name, column) for partition, files in change.removed.items() for name in files for column in names]
    if one_x:
        return {**out, COLUMN_STATS: HashedChange(deletes=[column_stats.column_stats_key(c, p, n) for p, n, c in gone])}
    return {**out, COLUMN_STATS: HashedChange(records=[column_stats.deleted_record(p, n, c, False) for p, n, c in gone])}


__all__ = ["from_commit", "from_removed", "half_built", "indexed_columns", "kept", "kept_in"]

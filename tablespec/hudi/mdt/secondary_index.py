"""Hudi 1.x's secondary indexes (`CREATE INDEX name ON t (column)`, table version 9): the metadata table's
`secondary_index_<name>` partition, as Apache Hudi 1.2.0 writes it (measured on a copy-on-write table
with its record index):

- one record per (value, record key): key `<escaped value>$<escaped record key>` (a backslash escapes
  `\\`, `$` and NUL; a null value is NUL alone), type 7, `SecondaryIndexMetadata.isDeleted` false, no
  other payload;
- file groups `secondary-index-<name with _ as ->-NNNN-0` (10 on a small table); a record lives in the
  file group of the Java hash of its key's prefix `<escaped value>$` (all keys of a value in one file
  group, which Hudi's lookups by value read alone);
- a commit appends, per file group touched, a data block of the new (value, key) pairs and a delete
  block of the pairs gone (an update changing the value deletes `old$key` and inserts `new$key`; a
  deleted key deletes `value$key`; an update keeping the value, or a clustering, writes nothing);
- the definition in `.hoodie/.index_defs/index.json`: `secondary_index_<name>`, type `secondary_index`,
  function `identity`, its column as the one source field, no options, version V2.

tablespec computes a commit's changes from the indexed column and key column of the base files it wrote
and of the slices they replace (copy-on-write rewrites a file group's whole base file), so clustering's
rewrite changes nothing, as a pair that survives is neither deleted nor inserted.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from tablespec.errors import HudiFormatError
from tablespec.hudi.formats.naming import LogFileName
from tablespec.hudi.io import join
from tablespec.hudi.mdt.layout import SECONDARY_INDEX_PREFIX
from tablespec.hudi.mdt.record_index import HashedChange, file_group_index
from tablespec.hudi.metadata_table import PARTITIONS_KEY

if TYPE_CHECKING:
    from tablespec.hudi.config import TableConfig
    from tablespec.hudi.formats.commit import CommitMetadata
    from tablespec.hudi.table import HudiTable

PREFIX = SECONDARY_INDEX_PREFIX
SECONDARY_INDEX_TYPE = 7
FILE_GROUPS = 10           # what Hudi 1.2 gives a small table's secondary index (measured)
KEY_COLUMN = "_hoodie_record_key"
_ESCAPED = ("\\", "$", "\0")
# Arrow types whose values Hudi 1.2 keys by their plain text (measured for int; the others print alike), and
# the spec's column types they are; the text of other types (double, date, timestamp, ...) is not measured
SUPPORTED = (pa.types.is_string, pa.types.is_large_string, pa.types.is_integer)
COLUMN_TYPES = ("string", "byte", "short", "int", "long")


def partition(name: str) -> str:
    """The metadata partition of index `name`."""
    return PREFIX + name


def definition(name: str, column: str) -> dict[str, Any]:
    """The index definition Hudi 1.2 writes for `CREATE INDEX name ON t (column)`."""
    return {"indexName": partition(name), "indexType": "secondary_index", "indexFunction": "identity",
            "sourceFields": [column], "indexOptions": {}, "version": "V2"}


def escape(text: str | None) -> str:
    if text is None:
        return "\0"
    return "".join("\\" + c if c in _ESCAPED else c for c in text)


def index_key(value: str | None, record_key: str) -> str:
    return f"{escape(value)}${escape(record_key)}"


def record_key(key: str) -> str:
    """The record key of an index key (its escapes undone)."""
    out, escaped = [], False
    for c in key[_separator(key) + 1:]:
        if escaped or c != "\\":
            out.append(c)
        escaped = not escaped and c == "\\"
    return "".join(out)


def file_group(key: str, count: int) -> int:
    """The file group of an index key: the hash of its value part with the separator."""
    cut = _separator(key)
    return file_group_index(key[:cut + 1], count)


def _separator(key: str) -> int:
    escaped = False
    for i, c in enumerate(key):
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == "$":
            return i
    raise HudiFormatError(f"secondary index key {key!r} has no separator")


def record(key: str) -> dict[str, Any]:
    return {"key": key, "type": SECONDARY_INDEX_TYPE, "SecondaryIndexMetadata": {"isDeleted": False}}


def named(config: TableConfig | None) -> tuple[str, ...]:
    """The secondary-index partitions hoodie.properties name ready."""
    names = (config.extra.get(PARTITIONS_KEY, "") if config else "").split(",")
    return tuple(n.strip() for n in names if n.strip().startswith(PREFIX))


def kept_in(config: TableConfig | None) -> tuple[str, ...]:
    """The secondary indexes tablespec keeps on a table with `config`: those hoodie.properties name on a
    version 9 copy-on-write table with Hudi's record index (others are dropped before a change)."""
    if config is None or config.version < 9 or config.table_type != "COPY_ON_WRITE":
        return ()
    names = {n.strip() for n in config.extra.get(PARTITIONS_KEY, "").split(",")}
    return named(config) if "record_index" in names else ()


def columns(table: HudiTable, partitions: Iterable[str]) -> dict[str, str]:
    """Partition -> indexed column, from the index definitions; refused where one is missing or
    is not an identity index of one column."""
    from tablespec.hudi.formats import index_defs
    out = {}
    for name in partitions:
        found = index_defs.definition(table.storage, table.base, table.config, name) if table.config else None
        fields = (found or {}).get("sourceFields")
        if not found or found.get("indexFunction", "identity") != "identity" or not isinstance(fields, list) \
                or len(fields) != 1 or not isinstance(fields[0], str):
            raise HudiFormatError(f"{table.base}: the metadata table's {name} partition has no definition of one "
                                  "indexed column in the table's index definitions; refused")
        out[name] = fields[0]
    return out


Pairs = set[tuple[str | None, str]]   # (value as Hudi keys it, record key)


def _pairs(table: HudiTable, path: str, size: int | None, columns: Iterable[str]) -> dict[str, Pairs]:
    """Column -> the (value, record key) pairs of every row of a base file: one read of the key and
    indexed columns; a column the file lacks (written before the column was added) is null in every row."""
    wanted = sorted(set(columns))
    with table.storage.open_input_file(path, size) as f:
        parquet = pq.ParquetFile(f)
        present = [c for c in wanted if c in parquet.schema_arrow.names]
        found = parquet.read(columns=[*present, KEY_COLUMN])
    keys = found.column(KEY_COLUMN).cast(pa.string()).to_pylist()
    out: dict[str, Pairs] = {}
    for column in wanted:
        if column not in present:
            out[column] = {(None, k) for k in keys}
            continue
        values = found.column(column)
        if not any(check(values.type) for check in SUPPORTED):
            raise HudiFormatError(f"{table.base}: the secondary index on column {column} of type {values.type}: "
                                  "tablespec keeps secondary indexes on string and integer columns only")
        out[column] = set(zip(values.cast(pa.string()).to_pylist(), keys))
    return out


def from_commit(table: HudiTable, metadata: CommitMetadata, indexed: Mapping[str, str]) -> dict[str, HashedChange]:
    """Partition -> what a commit or replacecommit (pending: the view is the one before it) does to each
    secondary index (`indexed`: partition -> column): pairs of the files it wrote that the slices it
    replaces lack are inserted, pairs of those slices it wrote nowhere are deleted."""
    written = {p: [s for s in stats if s.path] for p, stats in metadata.partition_to_write_stats.items()}
    replaced = metadata.partition_to_replace_file_ids or {}
    partitions = sorted({p for p, s in written.items() if s} | {p for p, ids in replaced.items() if ids})
    if not partitions or not indexed:
        return {}
    view = table.view_of(table.timeline, partitions)
    before = {(g.partition, g.file_id): g.latest_slice for g in view.file_groups()}
    old_files = {(p, s.file_id) for p, stats in written.items() for s in stats}
    old_files |= {(p, i) for p, ids in replaced.items() for i in ids}
    new: dict[str, Pairs] = {c: set() for c in indexed.values()}
    old: dict[str, Pairs] = {c: set() for c in indexed.values()}
    for stats in written.values():
        for stat in stats:
            path = stat.path or ""
            if LogFileName.parse(path.rsplit("/", 1)[-1]) is not None:
                raise HudiFormatError(f"{table.base}: secondary indexes are kept on copy-on-write tables only (a log "
                                      f"file {path} was written)")
            for column, pairs in _pairs(table, join(table.base, path), stat.file_size_in_bytes or None, new).items():
                new[column] |= pairs
    for key in old_files:
        slice_ = before.get(key)
        if slice_ is not None and slice_.base_file is not None:
            for column, pairs in _pairs(table, slice_.base_file.path, slice_.base_file.size, old).items():
                old[column] |= pairs
    return {name: HashedChange(records=[(k, record(k)) for k in sorted({index_key(*p) for p in new[c] - old[c]})],
                               deletes=sorted({index_key(*p) for p in old[c] - new[c]}), group=file_group)
            for name, c in sorted(indexed.items())}


def stored(table: HudiTable, name: str) -> dict[str, str]:
    """Every live index key of partition `name` -> the file group holding it, merged as readers merge
    the latest slices (a delete block's key removes it)."""
    from tablespec.hudi.mdt import layout, reader
    from tablespec.hudi.mdt.column_stats import latest
    storage, base = table.storage, table.base
    fmt = layout.Format.of(table.config)
    metadata = layout.timeline(storage, base, fmt)
    valid = reader.valid_instants(table.timeline, metadata)
    return {key: slice_.file_id for slice_ in layout.latest_slices(storage, base, layout.completions(metadata), name, fmt)
            for key in latest(reader.slice_records(storage, base, slice_, valid))}


def file_id(name: str, index: int) -> str:
    """File group `index` of the partition of index `name` (Hudi names it after the partition, `_` as `-`)."""
    return f"{partition(name).replace('_', '-')}-{index:04d}-0"


def initialize(table: HudiTable, name: str, column: str) -> str:
    """Build index `name` on `column` from the table's latest base files (their key and indexed columns, read
    on the driver) in one initializing deltacommit, its definition written and hoodie.properties naming it.
    Call as `initializer.initialize` says. Returns the initializing instant."""
    from tablespec.hudi.formats import index_defs
    from tablespec.hudi.mdt import initializer
    from tablespec.hudi.mdt.records import encode
    one_x = table.config is not None and table.config.version >= 8
    keys: set[str] = set()
    for slice_ in table.view.latest_slices():
        if slice_.base_file is not None:
            pairs = _pairs(table, slice_.base_file.path, slice_.base_file.size, (column,))[column]
            keys |= {index_key(*p) for p in pairs}
    groups: list[list[tuple[str, dict[str, Any]]]] = [[] for _ in range(FILE_GROUPS)]
    for key in sorted(keys, key=str.encode):
        groups[file_group(key, FILE_GROUPS)].append((key, record(key)))
    return initializer.initialize(table, partition(name), groups, lambda n: file_id(name, n),
                                  lambda rec, file_name: encode(rec, file_name, one_x),
                                  lambda config: index_defs.with_index(table.storage, table.base, config,
                                                                       definition(name, column)))


__all__ = ["COLUMN_TYPES", "FILE_GROUPS", "PREFIX", "columns", "definition", "escape", "file_group", "file_id", "from_commit",
           "index_key", "initialize", "kept_in", "named", "partition", "record", "record_key", "stored"]

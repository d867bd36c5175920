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

tablespec computes a commit's changes from the indexed column and key column of the rows it removes and
writes (copy-on-write rewrites a file group's whole base file), so clustering's rewrite changes nothing, as
a pair that survives is neither deleted nor inserted. A write's tasks hold those rows already (the stored
rows they merge, the rows they write): each reports its file groups' changes (`PairChanges`) and the driver
gathers them (`gathered`); the commits no task reports for (clustering, bucket rewrites, an overwrite) are
read on the driver from the files they wrote and replaced (`from_commit`).
"""
from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from tablespec.errors import HudiFormatError
from tablespec.hudi.config import named_partitions
from tablespec.hudi.formats.base_keys import KEY
from tablespec.hudi.formats.naming import LogFileName
from tablespec.hudi.io import Storage, join
from tablespec.hudi.mdt.base_reads import BaseFileReads
from tablespec.hudi.mdt.layout import SECONDARY_INDEX_PREFIX
from tablespec.hudi.mdt.record_index import HashedChange, file_group_index

if TYPE_CHECKING:
    from tablespec.hudi.config import TableConfig
    from tablespec.hudi.formats.commit import CommitMetadata
    from tablespec.hudi.table import HudiTable

PREFIX = SECONDARY_INDEX_PREFIX
SECONDARY_INDEX_TYPE = 7
FILE_GROUPS = 10           # what Hudi 1.2 gives a small table's secondary index (measured)
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
    return tuple(n for n in named_partitions(config) if n.startswith(PREFIX))


def kept_in(config: TableConfig | None) -> tuple[str, ...]:
    """The secondary indexes tablespec keeps on a table with `config`: those hoodie.properties name on a
    version 9 copy-on-write table with Hudi's record index (others are dropped before a change)."""
    if config is None or config.version < 9 or config.table_type != "COPY_ON_WRITE":
        return ()
    return named(config) if "record_index" in named_partitions(config) else ()


def columns(table: HudiTable, partitions: Iterable[str], defined: Mapping[str, Mapping[str, Any]] | None = None
            ) -> dict[str, str]:
    """Partition -> indexed column, from the index definitions (`defined`: as `index_defs.definitions`
    read them already, else read here, once for all); refused where one is missing or is not an
    identity index of one column."""
    from tablespec.hudi.formats import index_defs
    out: dict[str, str] = {}
    named = tuple(partitions)
    if defined is None:
        defined = index_defs.definitions(table.storage, table.base, table.config) if table.config and named else {}
    for name in named:
        found = defined.get(name)
        fields = (found or {}).get("sourceFields")
        if not found or found.get("indexFunction", "identity") != "identity" or not isinstance(fields, list) \
                or len(fields) != 1 or not isinstance(fields[0], str):
            raise HudiFormatError(f"{table.base}: the metadata table's {name} partition has no definition of one "
                                  "indexed column in the table's index definitions; refused")
        out[name] = fields[0]
    return out


Pairs = set[tuple[str | None, str]]   # (value as Hudi keys it, record key)


def refuse_unkeyable(where: str, column: str, kind: pa.DataType) -> None:
    """Refuse an index on a column whose values tablespec cannot key as Hudi does."""
    if not any(check(kind) for check in SUPPORTED):
        raise HudiFormatError(f"{where}: the secondary index on column {column} of type {kind}: "
                              "tablespec keeps secondary indexes on string and integer columns only")


def _pairs(where: str, found: pa.Table, columns: Iterable[str], keys: pa.Array | pa.ChunkedArray | None = None
           ) -> dict[str, Pairs]:
    """Column -> the (value, record key) pairs of every row of `found` (rows of the table at `where`: its
    key column, or `keys`, and those of `columns` it has); a column the rows lack (a file written before the
    column was added) is null in every row."""
    texts = (found.column(KEY) if keys is None else keys).cast(pa.string()).to_pylist()
    out: dict[str, Pairs] = {}
    for column in sorted(set(columns)):
        if column not in found.column_names:
            out[column] = {(None, k) for k in texts}
            continue
        values = found.column(column)
        refuse_unkeyable(where, column, values.type)
        out[column] = set(zip(values.cast(pa.string()).to_pylist(), texts))
    return out


Reported = dict[str, tuple[set[str], set[str]]]    # column -> (index keys inserted, index keys deleted)


class PairChanges:
    """What one write task does to the secondary indexes on `columns`, from the rows it holds anyway: the
    pairs of the stored rows its file groups lose (deleted or replaced) and of the rows it writes. Runs on
    executors, so the driver reads no base file for these indexes."""

    def __init__(self, where: str, columns: Iterable[str]):
        self.where = where
        self.removed: dict[str, Pairs] = {c: set() for c in columns}
        self.added: dict[str, Pairs] = {c: set() for c in self.removed}

    def remove(self, rows: pa.Table, keys: pa.Array | pa.ChunkedArray | None = None) -> None:
        """Stored rows (with their key column, or `keys`) a file group no longer holds."""
        for column, pairs in _pairs(self.where, rows, self.removed, keys).items():
            self.removed[column] |= pairs

    def add(self, rows: pa.Table, keys: pa.Array | pa.ChunkedArray) -> None:
        """Rows written (their record keys `keys`)."""
        for column, pairs in _pairs(self.where, rows, self.added, keys).items():
            self.added[column] |= pairs

    def report(self) -> str:
        """As JSON for the task's write stats: column -> [index keys inserted, index keys deleted]; a pair
        both removed and written (an update keeping the value) is neither."""
        return json.dumps({c: [sorted(index_key(*p) for p in self.added[c] - gone),
                               sorted(index_key(*p) for p in gone - self.added[c])]
                           for c, gone in self.removed.items()})


def gathered(reports: Iterable[str | None]) -> Reported | None:
    """The tasks' reports (`PairChanges.report`) of one commit joined: a pair one file group deleted and
    another inserted (a key moving partition with its value) is neither. None when a report is missing."""
    out: Reported = {}
    for text in reports:
        if text is None:
            return None
        for column, (inserted, deleted) in json.loads(text).items():
            both = out.setdefault(column, (set(), set()))
            both[0].update(inserted)
            both[1].update(deleted)
    return {c: (inserted - deleted, deleted - inserted) for c, (inserted, deleted) in out.items()}


def from_reported(indexed: Mapping[str, str], reported: Reported) -> dict[str, HashedChange]:
    """Partition -> what the tasks reported for each index (`indexed`: partition -> column)."""
    return {name: HashedChange(records=[(k, record(k)) for k in sorted(reported[c][0])],
                               deletes=sorted(reported[c][1]), group=file_group)
            for name, c in sorted(indexed.items())}


def from_commit(table: HudiTable, metadata: CommitMetadata, indexed: Mapping[str, str],
                reads: BaseFileReads | None = None) -> dict[str, HashedChange]:
    """Partition -> what a commit or replacecommit (pending: the view is the one before it) does to each
    secondary index (`indexed`: partition -> column): pairs of the files it wrote that the slices it
    replaces lack are inserted, pairs of those slices it wrote nowhere are deleted. The files are read
    through `reads` (the update's shared reads, with the key column and the indexed ones)."""
    written = {p: [s for s in stats if s.path] for p, stats in metadata.partition_to_write_stats.items()}
    replaced = metadata.partition_to_replace_file_ids or {}
    partitions = sorted({p for p, s in written.items() if s} | {p for p, ids in replaced.items() if ids})
    if not partitions or not indexed:
        return {}
    reads = reads or BaseFileReads(table.storage, (KEY, *indexed.values()))
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
            found = reads.read(join(table.base, path), stat.file_size_in_bytes or None).columns
            for column, pairs in _pairs(table.base, found, new).items():
                new[column] |= pairs
    for key in old_files:
        slice_ = before.get(key)
        if slice_ is not None and slice_.base_file is not None:
            found = reads.read(slice_.base_file.path, slice_.base_file.size).columns
            for column, pairs in _pairs(table.base, found, old).items():
                old[column] |= pairs
    return {name: HashedChange(records=[(k, record(k)) for k in sorted({index_key(*p) for p in new[c] - old[c]})],
                               deletes=sorted({index_key(*p) for p in old[c] - new[c]}), group=file_group)
            for name, c in sorted(indexed.items())}


def stored(table: HudiTable, name: str) -> dict[str, str]:
    """Every live index key of partition `name` -> the file group holding it, merged as readers merge
    the latest slices (a delete block's key removes it)."""
    from tablespec.hudi.mdt import reader
    from tablespec.hudi.mdt.column_stats import latest
    slices, valid = reader.latest_slices(table, name)
    return {key: slice_.file_id for slice_ in slices
            for key in latest(reader.slice_records(table.storage, table.base, slice_, valid))}


def file_id(name: str, index: int) -> str:
    """File group `index` of the partition of index `name` (Hudi names it after the partition, `_` as `-`)."""
    return f"{partition(name).replace('_', '-')}-{index:04d}-0"


def file_keys(storage: Storage, where: str, path: str, size: int | None, columns: Collection[str]) -> dict[str, set[str]]:
    """Column -> the index keys of every row of the base file at `path` of the table at `where`: one read of
    its key and indexed `columns` (what a build reads of each latest base file, on executors)."""
    found = BaseFileReads(storage, (KEY, *columns)).read(path, size).columns
    return {column: {index_key(*p) for p in pairs} for column, pairs in _pairs(where, found, columns).items()}


def initialize(table: HudiTable, name: str, column: str, keys: Iterable[str]) -> str:
    """Build index `name` on `column` holding `keys` (of the table's latest base files, `file_keys`) in one
    initializing deltacommit, its definition written and hoodie.properties naming it. Call as
    `initializer.initialize` says. Returns the initializing instant."""
    from tablespec.hudi.formats import index_defs
    from tablespec.hudi.mdt import initializer
    from tablespec.hudi.mdt.records import encode
    one_x = table.config is not None and table.config.version >= 8
    groups: list[list[tuple[str, dict[str, Any]]]] = [[] for _ in range(FILE_GROUPS)]
    for key in sorted(set(keys), key=str.encode):
        groups[file_group(key, FILE_GROUPS)].append((key, record(key)))
    return initializer.initialize(table, partition(name), groups, lambda n: file_id(name, n),
                                  lambda rec, file_name: encode(rec, file_name, one_x),
                                  lambda config: index_defs.with_index(table.storage, table.base, config,
                                                                       definition(name, column)))


__all__ = ["COLUMN_TYPES", "FILE_GROUPS", "PREFIX", "PairChanges", "Reported", "columns", "definition", "escape",
           "file_group", "file_id", "file_keys", "from_commit", "from_reported", "gathered", "index_key", "initialize",
           "kept_in", "named", "partition", "record", "record_key", "refuse_unkeyable", "stored"]

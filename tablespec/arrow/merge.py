"""The merge of one merge-on-read file slice: its base file's rows and its log blocks' records,
in order, into the rows a snapshot query returns (what executors run, one slice at a time, so
memory is bounded by a slice).

Each record key keeps one version. The log blocks' records are merged first, in order (block
order, then record order), by the rules' `mode`; a delete (a delete block's key, or a record whose
`_hoodie_is_deleted` is true) is a version too. The result then meets the base file's row by the
rules' `base_mode`. Under COMMIT_TIME ordering the later version wins; under EVENT_TIME ordering
the later wins unless the earlier's ordering value is greater, and a delete without an ordering
value always wins (Hudi's natural-order delete). Keys only the base file holds are taken as they
are, without a per-record step.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tablespec.arrow.align import align_to_schema, arrow_type
from tablespec.errors import TablespecError
from tablespec.hudi.config import TableConfig
from tablespec.hudi.formats.avro import from_avro_schema
from tablespec.hudi.formats.base_keys import base_file_keys
from tablespec.hudi.formats.logfile import BlockType, LogBlock, avro_records, delete_records, parquet_block_table
from tablespec.hudi.fs_view import FileSlice
from tablespec.hudi.io import Storage
from tablespec.hudi.merge_on_read import (
    EVENT_TIME,
    Counting,
    LogScan,
    MergeRules,
    SliceRead,
    counting,
    damaged,
    log_blocks,
    slice_reads,
)
from tablespec.hudi.timeline.active import Timeline
from tablespec.types import stored

RECORD_KEY, IS_DELETED = "_hoodie_record_key", "_hoodie_is_deleted"


@dataclass(frozen=True)
class _Version:
    ordering: Any
    deleted: bool
    table: int          # -1: the base file; else the index of the log table
    row: int


def _wins(mode: str, old: _Version, new: _Version) -> bool:
    if mode != EVENT_TIME:
        return True
    if new.deleted and new.ordering is None or old.deleted and old.ordering is None:
        return True
    if old.ordering is None or new.ordering is None:
        return new.ordering is not None or old.ordering is None
    return not old.ordering > new.ordering


def block_table(path: str, block: LogBlock, schema: pa.Schema) -> pa.Table:
    """A data block's records as `schema`'s columns (one the block lacks is null; `_hoodie_is_deleted`
    kept when the block has it)."""
    wanted = pa.schema([*schema, pa.field(IS_DELETED, pa.bool_())]) if IS_DELETED not in schema.names else schema
    try:
        if block.type == BlockType.AVRO_DATA:
            return pa.Table.from_pylist(avro_records(block), schema=wanted)
        return align_to_schema(parquet_block_table(block, wanted.names), wanted)
    except Exception as e:  # noqa: BLE001 - fastavro and pyarrow raise several types for bytes that are not records
        raise damaged(path, block, e) from None


def _decoded(path: str, block: LogBlock, schema: pa.Schema, ordering_field: str | None):
    """A block's versions as (key, ordering value, deleted, row) and, for a data block, its table."""
    if block.type == BlockType.DELETE:
        try:
            deleted = delete_records(block)
        except Exception as e:  # noqa: BLE001 - a counting block that does not decode is damage
            raise damaged(path, block, e) from None
        return None, [(k, o if o != 0 else None, True, 0) for k, _, o in deleted]
    table = block_table(path, block, schema)
    keys = table.column(RECORD_KEY).to_pylist()
    order = (table.column(ordering_field).to_pylist() if ordering_field in table.column_names
             else [None] * table.num_rows)
    flags = table.column(IS_DELETED).fill_null(False).to_pylist()
    return table, [(k, o, bool(d), r) for r, (k, o, d) in enumerate(zip(keys, order, flags))]


def merge_slice(base: pa.Table | None, blocks: Sequence[tuple[str, LogBlock]], rules: MergeRules,
                schema: pa.Schema, scan: LogScan | None = None) -> pa.Table:
    """The slice's rows as `schema` (`base`: the base file's rows as `schema`, None without one),
    merged as the module says; `scan` counts the logs' data records and merged keys."""
    base = schema.empty_table() if base is None else base
    tables: list[pa.Table] = []
    events: list[list[tuple[str, Any, bool, int, int]]] = []   # per block: (key, ordering, deleted, table, row)
    for path, block in blocks:
        table, found = _decoded(path, block, schema, rules.ordering_field)
        index = -2
        if table is not None:
            index = len(tables)
            tables.append(table)
            if scan is not None:
                scan.records += table.num_rows
        events.append([(k, o, d, index, r) for k, o, d, r in found])
    versions: dict[str, _Version] = {}
    for found in events:
        for key, ordering, deleted, index, row in found:
            old, new = versions.get(key), _Version(ordering, deleted, index, row)
            versions[key] = new if old is None or _wins(rules.mode, old, new) else old
    if scan is not None:
        scan.merged_keys = len(versions)
    in_logs = pc.is_in(base.column(RECORD_KEY), value_set=pa.array(list(versions), pa.string()))
    rows = pc.indices_nonzero(in_logs).to_pylist()
    if rows:    # keys the base file holds too: its row against the logs' version, by the base rule
        picked = base.take(pa.array(rows, pa.int64()))
        keys = picked.column(RECORD_KEY).to_pylist()
        order = (picked.column(rules.ordering_field).to_pylist() if rules.ordering_field in picked.column_names
                 else [None] * len(rows))
        for key, ordering, row in zip(keys, order, rows):
            old = _Version(ordering, False, -1, row)
            if not _wins(rules.base_mode, old, versions[key]):
                versions[key] = old
    live = [v for v in versions.values() if not v.deleted]
    parts = [base.filter(pc.invert(in_logs)), base.take(pa.array([v.row for v in live if v.table == -1], pa.int64()))]
    for index, table in enumerate(tables):
        if chosen := [v.row for v in live if v.table == index]:
            parts.append(table.take(pa.array(chosen, pa.int64())).select(schema.names))
    return pa.concat_tables(parts).combine_chunks()


def read_slice(storage: Storage, read: SliceRead, wanted: Counting, rules: MergeRules, schema: pa.Schema) -> pa.Table:
    """One file slice as a snapshot reads it: its base file (`schema`'s columns) merged with its log
    blocks that count."""
    base = read_base(storage, read, schema)
    blocks = log_blocks(storage, read, wanted)
    return merge_slice(base, blocks, rules, schema) if blocks else (base if base is not None else schema.empty_table())


def read_base(storage: Storage, read: SliceRead, schema: pa.Schema) -> pa.Table | None:
    """The slice's base file as `schema`'s columns (ones it predates null); None without one. Read
    on the task's own thread: each core runs a task, and a deltacommit reads a few columns of many
    small files, where Arrow's thread pool costs more than it decodes (measured: half the time)."""
    if read.base_path is None:
        return None
    with storage.open_input_file(read.base_path) as f:
        file = pq.ParquetFile(f)
        present = set(file.schema_arrow.names)
        return align_to_schema(file.read(columns=[n for n in schema.names if n in present], use_threads=False),
                               schema)


@dataclass(frozen=True)
class MergedKeys:
    """The slices with log files, whose keys a snapshot reads merged with their log blocks (plain
    data: executors read them too), by (partition, file id), as a file id can repeat across partitions."""
    reads: dict[tuple[str, str], SliceRead]
    wanted: Counting
    rules: MergeRules
    schema: pa.Schema       # the record key, and the ordering field the merge compares

    def keys(self, storage: Storage, partition: str, file_id: str) -> pa.Array:
        """The keys a snapshot read of the slice of `file_id` in `partition` returns."""
        read = self.reads[(partition, file_id)]
        return read_slice(storage, read, self.wanted, self.rules, self.schema).column(RECORD_KEY).combine_chunks()


def merged_keys(config: TableConfig, timeline: Timeline, slices: Iterable[FileSlice], where: str) -> MergedKeys | None:
    """How the keys of `slices` with log files are read (None: there are none). The ordering field is
    typed as the table's schema has it: a log-only slice, or a base file older than the field, cannot
    tell, and a merge without it lets the later version win where a greater ordering value must."""
    logged = [s for s in slices if s.log_files]
    if not logged:
        return None
    rules = MergeRules.of(config)
    fields = [pa.field(RECORD_KEY, pa.string())]
    if rules.ordering_field is not None:
        schema = timeline.latest_schema() or config.create_schema
        if schema is None:
            raise TablespecError(f"{where}: the table records no schema, so its ordering field "
                                 f"{rules.ordering_field} cannot be read from its log files")
        columns = {c.name: c.type for c in from_avro_schema(schema)}
        if rules.ordering_field in columns:
            fields.append(pa.field(rules.ordering_field, arrow_type(stored(columns[rules.ordering_field]))))
    wanted = counting(timeline)
    return MergedKeys({(r.partition, r.file_id): r for r in slice_reads(timeline, logged, wanted)}, wanted, rules,
                      pa.schema(fields))


def slice_keys(storage: Storage, merged: MergedKeys | None, s: FileSlice) -> pa.Array | None:
    """The record keys a snapshot reads from slice `s`: merged with its log files (`merged`: the slices'
    `merged_keys`), else its base file's; None: it has neither."""
    if merged is not None and s.log_files:
        return merged.keys(storage, s.partition, s.file_id)
    return base_file_keys(s.base_file.path, storage, s.base_file.size) if s.base_file is not None else None

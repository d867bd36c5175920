"""The merge of one merge-on-read file slice: its base file's rows and its log blocks' records,
in order, into the rows a snapshot query returns (what executors run, one slice at a time, so
memory is bounded by a slice).

Each record key keeps one version. The log blocks' records are merged first, in order (block
order, then record order), by the rules' `mode`; a delete (a delete block's key, or a record whose
`_hoodie_is_deleted` is true) is a version too. The result then meets the base file's row by the
rules' `base_mode`. Under COMMIT_TIME ordering the later version wins; under EVENT_TIME ordering
the later wins unless the earlier's ordering value is greater, and a delete without an ordering
value always wins (Hudi's natural-order delete). Keys only the base file holds are taken as they
are. No step is per record or per block: a slice's data records are gathered into one table and each
key's winner is found by one sort, so a slice with many small log files (a long run of
deltacommits) costs about what its records do.
"""
from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tablespec.arrow.align import align_to_schema, arrow_type
from tablespec.arrow.avro_columns import decode_columns, record_spans
from tablespec.arrow.avro_rows import RawFields, raw_fields, records_table, stored_as_wanted
from tablespec.errors import TablespecError
from tablespec.hudi.config import TableConfig
from tablespec.hudi.formats.avro import from_avro_schema
from tablespec.hudi.formats.base_keys import base_file_keys
from tablespec.hudi.formats.logfile import BlockType, Header, LogBlock, avro_records, delete_records, parquet_block_table
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
class _Deletes:
    """A delete block's keys with their ordering values (None: a natural delete)."""
    path: str
    block: LogBlock
    found: list[tuple[str, Any]]


class _LogRecords:
    """A slice's log records in order, as merge events: the data blocks' records gathered into one
    table (consecutive Avro blocks of one writer schema decoded together, column by column where the
    schema is flat, else into one list converted once: a slice of many small blocks pays the per-call
    costs once, not per block) and the delete blocks' keys, in segments of log order (a `range` of
    data rows, or `_Deletes`)."""

    def __init__(self, schema: pa.Schema, ordering_field: str | None):
        self.wanted = schema if IS_DELETED in schema.names else pa.schema([*schema, pa.field(IS_DELETED, pa.bool_())])
        self.ordering_field = ordering_field if ordering_field in schema.names else None
        self.tables: list[pa.Table] = []
        self.rows = 0                       # data rows gathered (tables and pending)
        # blocks not yet converted: with their records, or their `record_spans` to decode column by column
        self.pending: list[tuple[str, LogBlock, Any]] = []
        self.pending_fields: RawFields | None = None      # how the pending records decode
        self.segments: list[range | _Deletes] = []

    def add(self, path: str, block: LogBlock) -> None:
        """Take a data or delete block that counts; LogFileDamaged naming the file when it does not decode."""
        try:
            if block.type == BlockType.DELETE:
                self.segments.append(_Deletes(path, block, [(k, o if o != 0 else None)
                                                            for k, _, o in delete_records(block)]))
            elif block.type == BlockType.AVRO_DATA:
                text = block.header.get(Header.SCHEMA)
                fields = raw_fields(text, self.wanted) if text is not None else None
                if fields is not self.pending_fields:
                    self._flush()
                spans = _spans(block) if fields is not None and fields.columns is not None else None
                records = avro_records(block, writer_schema=fields.writer if fields is not None else None) \
                    if spans is None else spans
                self.pending.append((path, block, records))
                self.pending_fields = fields
                self._extend(len(records))
            else:
                self._flush()
                table = align_to_schema(parquet_block_table(block, self.wanted.names), self.wanted)
                self.tables.append(table)
                self._extend(table.num_rows)
        except Exception as e:  # noqa: BLE001 - fastavro and pyarrow raise several types for bytes that are not records
            raise damaged(path, block, e) from None

    def _extend(self, n: int) -> None:
        last = self.segments[-1] if self.segments else None
        if isinstance(last, range):          # data right after data: one segment
            self.segments[-1] = range(last.start, last.stop + n)
        else:
            self.segments.append(range(self.rows, self.rows + n))
        self.rows += n

    def _flush(self) -> None:
        if not self.pending:
            return
        fields = self.pending_fields
        assert fields is not None, "pending records were decoded by their schema's fields"
        if fields.columns is not None:
            try:
                table = decode_columns(fields.columns, [b.content for _, b, _ in self.pending],
                                       [spans for _, _, spans in self.pending])
                self.tables.append(stored_as_wanted(table, fields, self.wanted))
                self.pending = []
                return
            except Exception:  # noqa: BLE001 - bytes that are not records: decode block by block, to name it
                self.pending = [(p, b, self._records(p, b, fields)) for p, b, _ in self.pending]
        try:
            self.tables.append(records_table([r for _, _, rs in self.pending for r in rs], fields, self.wanted))
        except Exception:  # noqa: BLE001 - some block's records do not convert: name it
            for path, block, records in self.pending:
                try:
                    records_table(records, fields, self.wanted)
                except Exception as e:  # noqa: BLE001 - pyarrow raises several types for values of another type
                    raise damaged(path, block, e) from None
            raise
        self.pending = []

    @staticmethod
    def _records(path: str, block: LogBlock, fields: RawFields) -> list[dict[str, Any]]:
        try:
            return avro_records(block, writer_schema=fields.writer)
        except Exception as e:  # noqa: BLE001 - fastavro raises several types for bytes that are not records
            raise damaged(path, block, e) from None

    def data(self) -> pa.Table:
        """Every data record, in log order."""
        self._flush()
        return pa.concat_tables(self.tables) if self.tables else self.wanted.empty_table()

    def events(self, data: pa.Table) -> pa.Table:
        """One row per version in log order: key, ordering value, deleted, row (in `data`; -1 for a
        delete block's key)."""
        kind = self._ordering_type()
        keys, order, deleted, rows = [pa.array([], pa.string())], [pa.array([], kind)], [pa.array([], pa.bool_())], \
            [pa.array([], pa.int64())]
        for segment in self.segments:
            if isinstance(segment, range):
                part = data.slice(segment.start, len(segment))
                keys.extend(part.column(RECORD_KEY).chunks)      # chunks: a list of arrays concatenates at once
                order.extend(part.column(self.ordering_field).cast(kind).chunks if self.ordering_field
                             else [pa.nulls(part.num_rows, kind)])
                deleted.extend(part.column(IS_DELETED).fill_null(False).chunks)
                rows.append(pa.array(np.arange(segment.start, segment.stop, dtype=np.int64)))
                continue
            keys.append(pa.array([k for k, _ in segment.found], pa.string()))
            try:
                order.append(pa.array([o for _, o in segment.found], kind))
            except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
                raise damaged(segment.path, segment.block, e) from None
            deleted.append(pa.array([True] * len(segment.found)))
            rows.append(pa.array([-1] * len(segment.found), pa.int64()))
        return pa.table({"key": pa.chunked_array(keys, pa.string()), "ordering": pa.chunked_array(order, kind),
                         "deleted": pa.chunked_array(deleted, pa.bool_()),
                         "row": pa.chunked_array(rows, pa.int64())}).combine_chunks()

    def _ordering_type(self) -> pa.DataType:
        """The ordering values' type: the ordering field's; without it in the schema, what the delete
        blocks' values convert to (the data records have none)."""
        if self.ordering_field is not None:
            return self.wanted.field(self.ordering_field).type
        values = [o for s in self.segments if isinstance(s, _Deletes) for _, o in s.found]
        return pa.array(values).type if any(v is not None for v in values) else pa.null()


def _spans(block: LogBlock) -> np.ndarray | None:
    """The block's `record_spans`, or None when its framing is broken (the record-by-record decoder
    then names the damage)."""
    try:
        return record_spans(block.content)
    except (ValueError, struct.error):
        return None


def _latest_versions(events: pa.Table, mode: str) -> pa.Table:
    """Each key's winning version among `events` (in log order; kept in it), with `natural` added.
    COMMIT_TIME: the last. EVENT_TIME: after a key's last natural delete (which wins over everything
    before it and loses to anything after), the greatest ordering value, ties to the later; a version
    without an ordering value loses to one with it. A sort then each key's last: no per-record step."""
    seq = pa.array(np.arange(events.num_rows, dtype=np.int64))
    ordering = events.column("ordering")
    natural = pc.and_(events.column("deleted"), pc.is_null(ordering))
    events = events.append_column("natural", natural)
    columns = {"key": events.column("key"), "seq": seq}
    sort = [("key", "ascending")]
    if mode == EVENT_TIME:
        if pc.any(natural).as_py():      # (a plain upsert's logs have none: no grouping to pay for)
            last = pa.table({"key": columns["key"], "natural": pc.if_else(natural, seq, None)}) \
                .group_by("key").aggregate([("natural", "max")])
            cut = pc.take(last.column("natural_max"), pc.index_in(columns["key"], value_set=last.column("key")))
            columns["after"] = pc.fill_null(pc.greater_equal(seq, cut), True)
            sort.append(("after", "ascending"))
        columns["ordered"] = pc.is_valid(ordering)
        sort.append(("ordered", "ascending"))
        if not pa.types.is_null(ordering.type):
            columns["ordering"] = ordering
            sort.append(("ordering", "ascending"))
    order = pc.sort_indices(pa.table(columns), sort_keys=[*sort, ("seq", "ascending")])
    keys = pc.take(columns["key"], order)
    n = events.num_rows
    last_of_key = pa.concat_arrays([pc.not_equal(keys.slice(0, n - 1), keys.slice(1)).combine_chunks(),
                                    pa.array([True])]) if n else pa.array([], pa.bool_())
    winners = pc.filter(order, last_of_key)
    return events.take(pc.take(winners, pc.sort_indices(winners)))


def merge_slice(base: pa.Table | None, blocks: Sequence[tuple[str, LogBlock]], rules: MergeRules,
                schema: pa.Schema, scan: LogScan | None = None) -> pa.Table:
    """The slice's rows as `schema` (`base`: the base file's rows as `schema`, None without one),
    merged as the module says; `scan` counts the logs' data records and merged keys."""
    base = schema.empty_table() if base is None else base
    logs = _LogRecords(schema, rules.ordering_field)
    for path, block in blocks:
        logs.add(path, block)
    data = logs.data()
    latest = _latest_versions(logs.events(data), rules.mode)
    if scan is not None:
        scan.records += data.num_rows
        scan.merged_keys = latest.num_rows
    in_logs = pc.is_in(base.column(RECORD_KEY), value_set=latest.column("key"))
    picked = base.filter(in_logs)
    # keys the base file holds too: its row against the logs' version, by the base rule
    against = latest.take(pc.index_in(picked.column(RECORD_KEY), value_set=latest.column("key")))
    if rules.base_mode == EVENT_TIME and rules.ordering_field in picked.column_names and picked.num_rows:
        mine = picked.column(rules.ordering_field).cast(against.column("ordering").type)
        theirs = against.column("ordering")
        greater = pc.or_kleene(pc.is_null(theirs), pc.less(theirs, mine))
        base_wins = pc.fill_null(pc.and_(pc.invert(against.column("natural")), pc.and_(pc.is_valid(mine), greater)), False)
    else:
        base_wins = pa.array([False] * picked.num_rows, pa.bool_())
    beaten = pc.filter(against.column("key"), base_wins)
    live = latest.filter(pc.and_(pc.invert(latest.column("deleted")),
                                 pc.invert(pc.is_in(latest.column("key"), value_set=beaten))))
    parts = [base.filter(pc.invert(in_logs)), picked.filter(base_wins),
             data.take(live.column("row")).select(schema.names)]
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

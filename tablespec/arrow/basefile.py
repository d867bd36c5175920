"""Writing one Hudi base file (parquet) from an Arrow table, and reading back its footer keys.

What makes a parquet file a Hudi base file: the five meta columns first (all strings),
Hudi's parquet types (timestamps as micros, decimals as fixed-length bytes, byte/short as
plain int32 like Avro's `int`), and footer entries readers rely on:
`hoodie_min_record_key` / `hoodie_max_record_key` (the BLOOM index prunes files by them)
and `parquet.avro.schema` (parquet-avro readers take the file's Avro schema from it).

Rows are sorted by record key in Java's `String.compareTo` order (UTF-16 code units), the
order Hudi compares min/max keys in, unless the caller laid them out itself (clustering, or a
merge streamed through `BaseFileWriter`: footer min/max keys are the true ones either way).
The Hudi bloom filter (`DYNAMIC_V0`, Hudi's default sizes) is written on request: Apache
Hudi's BLOOM index (its Spark default) reads it from every file whose key range matches and
fails on a file without one, but it costs about 430 KB of footer per file. The file is
written under its final name: Hudi names are final, and the file stays invisible until its
instant completes.
"""
from __future__ import annotations

import functools
import json
import posixpath
from contextlib import ExitStack
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tablespec.arrow import bloom
from tablespec.hudi.io import LOCAL, Storage

META_COLUMNS = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                "_hoodie_partition_path", "_hoodie_file_name")
MIN_KEY = b"hoodie_min_record_key"
MAX_KEY = b"hoodie_max_record_key"
AVRO_SCHEMA = b"parquet.avro.schema"
# Distinct in every row: dictionary encoding would only be tried, overflow and fall back to plain.
UNIQUE_COLUMNS = ("_hoodie_commit_seqno", "_hoodie_record_key")
# UTF-8 lead bytes remapped so byte order equals UTF-16 code-unit order: U+E000..U+FFFF
# (leads 0xEE, 0xEF) sort after supplementary characters (leads 0xF0..0xF4, surrogates in UTF-16).
_UTF16_ORDER = np.arange(256, dtype=np.uint8)
_UTF16_ORDER[[0xEE, 0xEF, 0xF0, 0xF1, 0xF2, 0xF3, 0xF4]] = [0xF3, 0xF4, 0xEE, 0xEF, 0xF0, 0xF1, 0xF2]
_UTF16_ORDER_INVERSE = np.argsort(_UTF16_ORDER).astype(np.uint8)
ROW_GROUP_BYTES = 128 * 1024 * 1024  # Arrow bytes buffered per row group by BaseFileWriter


@dataclass(frozen=True)
class WrittenFile:
    path: str
    size: int
    num_rows: int
    min_key: str | None
    max_key: str | None


def write_base_file(path: str, table: pa.Table, *, commit_time: str, partition_path: str,
                    partition_id: int, record_keys, avro_schema_json: str,
                    preserve_meta: bool = False, bloom_filter: bool = False, compression: str = "snappy",
                    keep_order: bool = False, storage: Storage | None = None) -> WrittenFile:
    """Write `table` as the base file `path` (its name goes into `_hoodie_file_name`).

    `record_keys` holds each row's key (see `keys.record_keys`); `partition_id` is the
    Spark partition id of the writing task, used in `_hoodie_commit_seqno`
    (`<commit_time>_<partition_id>_<row>`). With `preserve_meta`, rows that carry a
    `_hoodie_commit_time` / `_hoodie_commit_seqno` keep them (a copy-on-write merge or
    clustering rewrites them unchanged); rows without get new ones. With `keep_order` the rows
    stay in the given order (a clustering layout) instead of being sorted by key.
    """
    keys = _checked_keys(record_keys, table.num_rows)
    if not keep_order:
        order = java_sort_indices(keys)
        table, keys = table.take(order), keys.take(order)
    with BaseFileWriter(path, table.schema, commit_time=commit_time, partition_path=partition_path,
                        partition_id=partition_id, avro_schema_json=avro_schema_json, preserve_meta=preserve_meta,
                        bloom_filter=bloom_filter, compression=compression, storage=storage) as writer:
        writer.write(table, keys)
        return writer.close()


class BaseFileWriter:
    """A base file written piece by piece, rows in the order given: a copy-on-write merge of a
    file group too large to hold streams its rows through one (`write_base_file` for the rules).

    Pieces are buffered into row groups of about `row_group_bytes` (Arrow bytes); the footer's
    min/max keys are tracked in Java order as pieces come, and with `bloom_filter` every key is
    kept (keys are small next to rows) for the filter written on `close`. Use as a context
    manager and call `close` inside it; an error leaves the file unfinished, as Hudi allows for
    a file of an instant that is rolled back."""

    def __init__(self, path: str, schema: pa.Schema, *, commit_time: str, partition_path: str, partition_id: int,
                 avro_schema_json: str, preserve_meta: bool = False, bloom_filter: bool = False,
                 compression: str = "snappy", storage: Storage | None = None, row_group_bytes: int = ROW_GROUP_BYTES):
        self.path, self.commit_time, self.partition_path = path, commit_time, partition_path
        self.partition_id, self.avro_schema_json, self.preserve_meta = partition_id, avro_schema_json, preserve_meta
        self.bloom_filter, self.row_group_bytes = bloom_filter, row_group_bytes
        self.data_schema, self.schema = _file_schemas(schema)
        self.rows = 0
        self._pending: list[pa.Table] = []
        self._pending_bytes = 0
        self._flushed = False
        self._min: bytes | None = None   # min/max keys as Java-order bytes (see `_java_comparable`)
        self._max: bytes | None = None
        self._keys: list[pa.Array] = []
        self._result: WrittenFile | None = None
        self._stack = ExitStack()
        self._sink = self._stack.enter_context((storage or LOCAL).open_output_stream(path))
        self._writer = self._stack.enter_context(
            pq.ParquetWriter(self._sink, self.schema, compression=compression, store_schema=False,
                             use_dictionary=[c for c in self.schema.names if c not in UNIQUE_COLUMNS]))

    def __enter__(self) -> BaseFileWriter:
        return self

    def __exit__(self, *exc) -> None:
        self._stack.__exit__(*exc)

    def write(self, table: pa.Table, record_keys) -> None:
        """Append `table`'s rows (their keys in `record_keys`) after those written so far."""
        keys = _checked_keys(record_keys, table.num_rows)
        n = table.num_rows
        # Preserved meta values are kept; new ones are built only where rows lack them (clustering has none to build).
        commit = _preserved(table, "_hoodie_commit_time") if self.preserve_meta else None
        if commit is None or commit.null_count:
            fresh = pa.repeat(pa.scalar(self.commit_time, pa.string()), n)
            commit = fresh if commit is None else pc.fill_null(commit, fresh)
        seqno = _preserved(table, "_hoodie_commit_seqno") if self.preserve_meta else None
        if seqno is None or seqno.null_count:
            rows = pa.array(np.arange(self.rows, self.rows + n, dtype=np.int64)).cast(pa.string())
            fresh = pc.binary_join_element_wise(f"{self.commit_time}_{self.partition_id}_", rows, "")
            seqno = fresh if seqno is None else pc.fill_null(seqno, fresh)
        meta = [commit, seqno, keys, pa.repeat(pa.scalar(self.partition_path, pa.string()), n),
                pa.repeat(pa.scalar(posixpath.basename(self.path), pa.string()), n)]
        data = table.drop_columns([c for c in META_COLUMNS if c in table.column_names]).cast(self.data_schema)
        out = pa.Table.from_arrays(meta + list(data.columns), schema=self.schema)
        if n:
            lo, hi = (v.as_py() for v in pc.min_max(_java_comparable(keys)).values())
            lo, hi = (v.encode() if isinstance(v, str) else v for v in (lo, hi))
            self._min = lo if self._min is None else min(self._min, lo)
            self._max = hi if self._max is None else max(self._max, hi)
        if self.bloom_filter:
            self._keys.append(keys)
        self.rows += n
        self._pending.append(out)
        self._pending_bytes += out.nbytes
        if self._pending_bytes >= self.row_group_bytes:
            self._flush()

    def _flush(self) -> None:
        self._writer.write_table(pa.concat_tables(self._pending) if self._pending else self.schema.empty_table())
        self._pending, self._pending_bytes, self._flushed = [], 0, True

    def close(self) -> WrittenFile:
        """Write what is buffered and the footer; the file is complete when the `with` block exits."""
        if self._result is None:
            if self._pending or not self._flushed:
                self._flush()
            min_key, max_key = (_java_string(k) if k is not None else None for k in (self._min, self._max))
            footer = {AVRO_SCHEMA: with_meta_fields(self.avro_schema_json).encode()}
            if self.rows and min_key is not None and max_key is not None:
                footer.update({MIN_KEY: min_key.encode(), MAX_KEY: max_key.encode()})
            if self.bloom_filter:
                keys = pa.concat_arrays(self._keys) if self._keys else pa.array([], pa.string())
                footer.update({bloom.FOOTER_KEY: bloom.build_bloom_filter(keys), bloom.TYPE_CODE_KEY: b"DYNAMIC_V0"})
            self._writer.add_key_value_metadata(footer)
            self._writer.close()
            self._result = WrittenFile(self.path, self._sink.tell(), self.rows, min_key, max_key)
        return self._result


@functools.lru_cache(maxsize=32)
def _file_schemas(schema: pa.Schema) -> tuple[pa.Schema, pa.Schema]:
    """The data columns in Hudi's types, and the file's schema (meta columns first), for rows of
    `schema`: derived once per schema, not per file (a write of many small file groups opens one each)."""
    data = pa.schema([pa.field(f.name, hudi_type(f.type), f.nullable) for f in schema if f.name not in META_COLUMNS])
    return data, pa.schema([pa.field(c, pa.string()) for c in META_COLUMNS] + list(data))


def _checked_keys(record_keys, n: int) -> pa.StringArray:
    keys = record_keys.combine_chunks() if isinstance(record_keys, pa.ChunkedArray) else pa.array(record_keys)
    keys = keys.cast(pa.string())
    if len(keys) != n:
        raise ValueError(f"{len(keys)} record keys for {n} rows")
    if keys.null_count:
        raise ValueError("record keys must not be null")
    return keys


def _preserved(table: pa.Table, column: str) -> pa.Array | None:
    return table.column(column).combine_chunks().cast(pa.string()) if column in table.column_names else None


def read_footer_keys(path: str, storage: Storage | None = None) -> tuple[str | None, str | None]:
    """(`hoodie_min_record_key`, `hoodie_max_record_key`) of a base file; None where absent."""
    with (storage or LOCAL).open_input_file(path) as f:
        meta = pq.read_metadata(f).metadata or {}
    min_key, max_key = (meta[k].decode() if k in meta else None for k in (MIN_KEY, MAX_KEY))
    return min_key, max_key


def java_sort_indices(keys: pa.StringArray) -> pa.UInt64Array:
    """Row order of `keys` by Java `String.compareTo` (UTF-16 code units), stable."""
    return pc.sort_indices(_java_comparable(keys))


def _java_comparable(keys: pa.StringArray) -> pa.Array:
    """`keys` as values whose byte order is Java's `String.compareTo` order: the keys themselves,
    or, when some character is at or above U+E000, binary with the UTF-8 lead bytes remapped."""
    data_buf = keys.buffers()[2]
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    if not (data >= 0xEE).any():  # no character at or above U+E000: UTF-8 order is UTF-16 order
        return keys
    return pa.Array.from_buffers(pa.binary(), len(keys), [keys.buffers()[0], keys.buffers()[1],
                                 pa.py_buffer(_UTF16_ORDER[data])], keys.null_count, keys.offset)


def within_java_range(keys: pa.StringArray, lo: str, hi: str) -> pa.BooleanArray:
    """Whether each key lies in [lo, hi] by Java's `String.compareTo`, the order of the footer's
    min/max record keys (UTF-8 byte order differs for characters at or above U+E000)."""
    both = _java_comparable(pa.concat_arrays([keys.cast(pa.string()), pa.array([lo, hi], pa.string())]))
    both = both.cast(pa.binary())
    n = len(keys)
    return pc.and_(pc.greater_equal(both.slice(0, n), both[n]), pc.less_equal(both.slice(0, n), both[n + 1]))


def _java_string(value: bytes) -> str:
    """The key behind the bytes of a `_java_comparable` value."""
    return _UTF16_ORDER_INVERSE[np.frombuffer(value, np.uint8)].tobytes().decode()


def hudi_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type whose parquet form matches what Hudi writes for a column of type `t`."""
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", "UTC" if t.tz is not None else None)
    if pa.types.is_int8(t) or pa.types.is_int16(t):
        return pa.int32()  # Avro has no byte/short: Hudi writes them as int
    if pa.types.is_date64(t):
        return pa.date32()
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_dictionary(t):
        return hudi_type(t.value_type)
    if pa.types.is_map(t):
        return pa.map_(hudi_type(t.key_type), pa.field(t.item_field.name, hudi_type(t.item_type), t.item_field.nullable))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return pa.list_(pa.field(t.value_field.name, hudi_type(t.value_type), t.value_field.nullable))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, hudi_type(f.type), f.nullable) for f in t])
    return t


@functools.lru_cache(maxsize=32)
def with_meta_fields(avro_schema_json: str) -> str:
    """The table's Avro schema with Hudi's five meta fields first, as Hudi puts it in footers."""
    schema = json.loads(avro_schema_json)
    names = [f["name"] for f in schema.get("fields", [])]
    if names[:5] != list(META_COLUMNS):
        meta = [{"name": c, "type": ["null", "string"], "doc": "", "default": None} for c in META_COLUMNS]
        schema["fields"] = meta + [f for f in schema.get("fields", []) if f["name"] not in META_COLUMNS]
    return json.dumps(schema, separators=(",", ":"))

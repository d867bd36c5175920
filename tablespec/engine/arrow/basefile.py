"""Writing one Hudi base file (parquet) from an Arrow table, and reading back its footer keys.

What makes a parquet file a Hudi base file: the five meta columns first (all strings),
Hudi's parquet types (timestamps as micros, decimals as fixed-length bytes, byte/short as
plain int32 like Avro's `int`), and footer entries readers rely on:
`hoodie_min_record_key` / `hoodie_max_record_key` (the BLOOM index prunes files by them)
and `parquet.avro.schema` (parquet-avro readers take the file's Avro schema from it).

Rows are sorted by record key in Java's `String.compareTo` order (UTF-16 code units), the
order Hudi compares min/max keys in, unless the caller laid them out itself (clustering). The Hudi bloom filter (`DYNAMIC_V0`, Hudi's default
sizes) is written on request: Apache Hudi's BLOOM index (its Spark default) reads it from
every file whose key range matches and fails on a file without one, but it costs about
430 KB of footer per file. The file is written under its final name: Hudi
names are final, and the file stays invisible until its instant completes.
"""
from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tablespec.engine.arrow import bloom
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
    keys = record_keys.combine_chunks() if isinstance(record_keys, pa.ChunkedArray) else pa.array(record_keys)
    keys = keys.cast(pa.string())
    if len(keys) != table.num_rows:
        raise ValueError(f"{len(keys)} record keys for {table.num_rows} rows")
    if keys.null_count:
        raise ValueError("record keys must not be null")
    if not keep_order:
        order = java_sort_indices(keys)
        table, keys = table.take(order), keys.take(order)
    n = table.num_rows

    commit = _preserved(table, "_hoodie_commit_time") if preserve_meta else None
    if commit is None or commit.null_count:
        fresh = pa.repeat(pa.scalar(commit_time, pa.string()), n)
        commit = fresh if commit is None else pc.fill_null(commit, fresh)
    seqno = _preserved(table, "_hoodie_commit_seqno") if preserve_meta else None
    if seqno is None or seqno.null_count:
        fresh = pc.binary_join_element_wise(f"{commit_time}_{partition_id}_",
                                            pa.array(np.arange(n, dtype=np.int64)).cast(pa.string()), "")
        seqno = fresh if seqno is None else pc.fill_null(seqno, fresh)
    meta = [commit, seqno, keys, pa.repeat(pa.scalar(partition_path, pa.string()), n),
            pa.repeat(pa.scalar(posixpath.basename(path), pa.string()), n)]
    data = table.drop_columns([c for c in META_COLUMNS if c in table.column_names])
    data = data.cast(pa.schema([pa.field(f.name, hudi_type(f.type), f.nullable) for f in data.schema]))

    if keep_order:
        min_key, max_key = java_min_max(keys)
    else:
        min_key, max_key = (keys[0].as_py(), keys[n - 1].as_py()) if n else (None, None)
    footer = {AVRO_SCHEMA: with_meta_fields(avro_schema_json).encode()}
    if n:
        footer.update({MIN_KEY: min_key.encode(), MAX_KEY: max_key.encode()})
    if bloom_filter:
        footer.update({bloom.FOOTER_KEY: bloom.build_bloom_filter(keys), bloom.TYPE_CODE_KEY: b"DYNAMIC_V0"})
    schema = pa.schema([pa.field(c, pa.string()) for c in META_COLUMNS] + list(data.schema))
    out = pa.Table.from_arrays(meta + list(data.columns), schema=schema)

    with (storage or LOCAL).open_output_stream(path) as sink:
        with pq.ParquetWriter(sink, schema, compression=compression, store_schema=False,
                              use_dictionary=[c for c in schema.names if c not in UNIQUE_COLUMNS]) as writer:
            writer.write_table(out)
            writer.add_key_value_metadata(footer)
        size = sink.tell()
    return WrittenFile(path, size, n, min_key, max_key)


def _preserved(table: pa.Table, column: str) -> pa.Array | None:
    return table.column(column).combine_chunks().cast(pa.string()) if column in table.column_names else None


def read_footer_keys(path: str, storage: Storage | None = None) -> tuple[str | None, str | None]:
    """(`hoodie_min_record_key`, `hoodie_max_record_key`) of a base file; None where absent."""
    with (storage or LOCAL).open_input_file(path) as f:
        meta = pq.read_metadata(f).metadata or {}
    return tuple(meta[k].decode() if k in meta else None for k in (MIN_KEY, MAX_KEY))


def java_min_max(keys: pa.StringArray) -> tuple[str | None, str | None]:
    """The least and greatest of `keys` by Java `String.compareTo` (None, None when empty)."""
    if not len(keys):
        return None, None
    if not _beyond_bmp_order(keys):
        extremes = pc.min_max(keys)
        return extremes["min"].as_py(), extremes["max"].as_py()
    order = java_sort_indices(keys)
    return keys[order[0].as_py()].as_py(), keys[order[-1].as_py()].as_py()


def _beyond_bmp_order(keys: pa.StringArray) -> bool:
    """Whether `keys` hold a character at or above U+E000, where UTF-8 order and UTF-16 order differ."""
    data_buf = keys.buffers()[2]
    return data_buf is not None and bool((np.frombuffer(data_buf, np.uint8) >= 0xEE).any())


def java_sort_indices(keys: pa.StringArray) -> pa.UInt64Array:
    """Row order of `keys` by Java `String.compareTo` (UTF-16 code units), stable."""
    if not _beyond_bmp_order(keys):
        return pc.sort_indices(keys)
    data = np.frombuffer(keys.buffers()[2], np.uint8)
    remapped = pa.Array.from_buffers(pa.binary(), len(keys), [keys.buffers()[0], keys.buffers()[1],
                                     pa.py_buffer(_UTF16_ORDER[data])], keys.null_count, keys.offset)
    return pc.sort_indices(remapped)


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


def with_meta_fields(avro_schema_json: str) -> str:
    """The table's Avro schema with Hudi's five meta fields first, as Hudi puts it in footers."""
    schema = json.loads(avro_schema_json)
    names = [f["name"] for f in schema.get("fields", [])]
    if names[:5] != list(META_COLUMNS):
        meta = [{"name": c, "type": ["null", "string"], "doc": "", "default": None} for c in META_COLUMNS]
        schema["fields"] = meta + [f for f in schema.get("fields", []) if f["name"] not in META_COLUMNS]
    return json.dumps(schema, separators=(",", ":"))

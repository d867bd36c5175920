"""Hudi's data-skipping indexes in the metadata table: `column_stats` (per base file and column:
min, max, counts, sizes) and, on table version 9, `partition_stats` (the same per data partition),
as Apache Hudi 0.15 and 1.2 write them (measured: docs/hudi-interop.md#data-skipping-indexes).
Pure conversions only.

A record's key is built from hashes, each base64 (with padding): XXHash64 (seed 0xdabadaba sign-
extended to 64 bits, big-endian bytes) of the column name, the same of the partition path (`.` for
the non-partitioned table's ""), and for `column_stats` the MD5 of the file name. Keys go to file
groups as record-index keys do (Java's String.hashCode of the key). A `column_stats` record is of
type 3, a `partition_stats` record of type 6 whose `fileName` is the partition path and whose bounds
are tight (`isTightBound`: computed over the partition's latest files). A file that left the
storage gets a record with `isDeleted` and no values. Hudi 0.15 holds dates in DateWrapper and
decimals in DecimalWrapper (scale 15); Hudi 1.x holds dates in IntWrapper and decimals as their
unscaled big-endian bytes (BytesWrapper), and names each value's type (`valueType`).
"""
from __future__ import annotations

import base64
import datetime as dt
import decimal
import functools
import hashlib
import struct
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

COLUMN_STATS, PARTITION_STATS = "column_stats", "partition_stats"
COLUMN_STATS_TYPE, PARTITION_STATS_TYPE = 3, 6
NON_PARTITIONED = "."
_SEED = 0xFFFFFFFFDABADABA            # Hudi's hash seed, an int sign-extended to a long
_M = (1 << 64) - 1
_P1, _P2, _P3, _P4, _P5 = (11400714785074694791, 14029467366897019727, 1609587929392839161,
                           9650029242287828579, 2870177450012600261)
_MODEL = "org.apache.hudi.avro.model."
DECIMAL_SCALE_V6 = 15                 # DecimalWrapper's scale (precision 30)
# Hudi 1.x's value types (HoodieValueTypeInfo.typeOrdinal) of the kinds tablespec writes.
TYPE_ORDINALS = {"boolean": 2, "int": 3, "long": 4, "float": 5, "double": 6, "string": 7, "binary": 8,
                 "decimal": 10, "date": 12, "timestamp": 16}


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _M, 31) * _P1) & _M


def xxhash64(data: bytes, seed: int = _SEED) -> int:
    """XXHash64 of `data` (the names hashed are short: plain Python is enough)."""
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + _P1 + _P2) & _M, (seed + _P2) & _M, seed & _M, (seed - _P1) & _M]
        while i + 32 <= n:
            v = [_round(v[j], struct.unpack_from("<Q", data, i + 8 * j)[0]) for j in range(4)]
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M
        for x in v:
            h = ((h ^ _round(0, x)) * _P1 + _P4) & _M
    else:
        h = (seed + _P5) & _M
    h = (h + n) & _M
    while i + 8 <= n:
        h = (_rotl(h ^ _round(0, struct.unpack_from("<Q", data, i)[0]), 27) * _P1 + _P4) & _M
        i += 8
    if i + 4 <= n:
        h = (_rotl(h ^ (struct.unpack_from("<I", data, i)[0] * _P1 & _M), 23) * _P2 + _P3) & _M
        i += 4
    while i < n:
        h = (_rotl(h ^ (data[i] * _P5 & _M), 11) * _P1) & _M
        i += 1
    h ^= h >> 33
    h = h * _P2 & _M
    h ^= h >> 29
    h = h * _P3 & _M
    return h ^ (h >> 32)


@functools.lru_cache(maxsize=4096)     # a read's keys repeat each column and partition per file
def name_id(name: str) -> str:
    """A column's or a partition's part of a key."""
    return base64.b64encode(xxhash64(name.encode("utf-8")).to_bytes(8, "big")).decode()


def file_id(file_name: str) -> str:
    return base64.b64encode(hashlib.md5(file_name.encode("utf-8")).digest()).decode()   # noqa: S324 - Hudi's key


def partition_name(partition: str) -> str:
    return partition or NON_PARTITIONED


def column_stats_key(column: str, partition: str, file_name: str) -> str:
    return name_id(column) + name_id(partition_name(partition)) + file_id(file_name)


def partition_stats_key(column: str, partition: str) -> str:
    return name_id(column) + name_id(partition_name(partition))


@dataclass(frozen=True)
class ColumnRange:
    """One column's statistics over a base file (or a partition's files): bounds as Parquet stores
    them (None where unknown or every value is null), value count (nulls included), sizes."""
    name: str                 # the file name (partition stats: the partition path)
    column: str
    kind: str                 # a key of TYPE_ORDINALS
    min: Any
    max: Any
    value_count: int
    null_count: int
    total_size: int
    total_uncompressed_size: int
    precision: int = 0        # decimals
    scale: int = 0


def kind_of(field: pa.Field) -> str | None:
    """A column's kind (a key of TYPE_ORDINALS), None where Hudi does not index it."""
    t = field.type
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return "int"
    if pa.types.is_int64(t):
        return "long"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "binary"
    if pa.types.is_decimal(t):
        return "decimal"
    if pa.types.is_date32(t):
        return "date"
    if pa.types.is_timestamp(t) and t.tz is not None:
        return "timestamp"
    return None                # nested, timestamp without zone, ...: not indexed


def indexable(schema: pa.Schema) -> list[str]:
    """The top-level columns of a base file's schema whose statistics Hudi keeps, in order."""
    return [f.name for f in schema if kind_of(f) is not None]


def _physical(value: Any, kind: str, scale: int) -> Any:
    """A Parquet statistic (as pyarrow gives it) as the value Hudi's wrappers hold: dates as days,
    timestamps as microseconds, decimals as Decimal."""
    if value is None:
        return None
    if kind == "date":
        return (value - dt.date(1970, 1, 1)).days
    if kind == "timestamp":
        moment = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        delta = moment - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    if kind == "decimal" and not isinstance(value, decimal.Decimal):
        return decimal.Decimal(value).scaleb(-scale)
    if kind == "binary" and isinstance(value, str):
        return value.encode("utf-8")
    return value


def file_ranges(metadata: pq.FileMetaData, file_name: str, columns: Collection[str] | None = None) -> list[ColumnRange]:
    """Each indexed column's range over a base file, from its footer (`columns`: those indexed;
    None: every column Hudi can index). A row group without bounds for a column with values
    leaves that column's bounds unknown (None), as Hudi reads the same footer."""
    schema = metadata.schema.to_arrow_schema()
    wanted = [f for f in schema if kind_of(f) is not None and (columns is None or f.name in columns)]
    index = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
    out = []
    for field in wanted:
        kind = kind_of(field)
        assert kind is not None
        position = index.get(field.name)
        if position is None:
            continue
        scale = field.type.scale if kind == "decimal" else 0
        lo = hi = None
        values = nulls = size = raw = 0
        known = True
        for g in range(metadata.num_row_groups):
            chunk = metadata.row_group(g).column(position)
            values += chunk.num_values
            size += chunk.total_compressed_size
            raw += chunk.total_uncompressed_size
            stats = chunk.statistics
            chunk_nulls = stats.null_count if stats is not None and stats.has_null_count else 0
            nulls += chunk_nulls
            if chunk.num_values == chunk_nulls:
                continue                  # only nulls: no bound to take
            if stats is None or not stats.has_min_max:
                known = False
                continue
            a, b = _physical(stats.min, kind, scale), _physical(stats.max, kind, scale)
            lo = a if lo is None or a < lo else lo
            hi = b if hi is None or b > hi else hi
        if not known:
            lo = hi = None
        out.append(ColumnRange(file_name, field.name, kind, lo, hi, values, nulls, size, raw,
                               field.type.precision if kind == "decimal" else 0, scale))
    return out


def merged(ranges: Iterable[ColumnRange], name: str) -> list[ColumnRange]:
    """Each column's range over many files (a partition's latest files): the widest bounds, counts and
    sizes summed; unknown where any file with values has unknown bounds."""
    by_column: dict[str, list[ColumnRange]] = {}
    for r in ranges:
        by_column.setdefault(r.column, []).append(r)
    out = []
    for column, found in by_column.items():
        with_values = [r for r in found if r.value_count > r.null_count]
        unknown = any(r.min is None or r.max is None for r in with_values)
        lo = None if unknown or not with_values else min(r.min for r in with_values)
        hi = None if unknown or not with_values else max(r.max for r in with_values)
        first = found[0]
        out.append(ColumnRange(name, column, first.kind, lo, hi, sum(r.value_count for r in found),
                               sum(r.null_count for r in found), sum(r.total_size for r in found),
                               sum(r.total_uncompressed_size for r in found), first.precision, first.scale))
    return out


def _java_bytes(unscaled: int) -> bytes:
    """Java's BigInteger.toByteArray: the shortest big-endian two's complement."""
    length = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
    return unscaled.to_bytes(length, "big", signed=True)


def _wrapped(value: Any, r: ColumnRange, one_x: bool) -> tuple[str, dict[str, Any]] | None:
    """A bound in the wrapper Hudi holds it in (fastavro's `(branch, value)` form of a union)."""
    if value is None:
        return None
    kind = r.kind
    if kind == "decimal":
        if one_x:
            unscaled = int(decimal.Decimal(value).scaleb(r.scale).to_integral_value())
            return _MODEL + "BytesWrapper", {"value": _java_bytes(unscaled)}
        return _MODEL + "DecimalWrapper", {"value": decimal.Decimal(value).quantize(decimal.Decimal(1).scaleb(-DECIMAL_SCALE_V6))}
    wrapper = {"boolean": "BooleanWrapper", "int": "IntWrapper", "long": "LongWrapper", "float": "FloatWrapper",
               "double": "DoubleWrapper", "string": "StringWrapper", "binary": "BytesWrapper",
               "date": "IntWrapper" if one_x else "DateWrapper", "timestamp": "LongWrapper"}[kind]
    return _MODEL + wrapper, {"value": value}


def _stats(r: ColumnRange, partition: str, one_x: bool, tight: bool, deleted: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "fileName": r.name, "columnName": r.column,
        "minValue": None if deleted else _wrapped(r.min, r, one_x),
        "maxValue": None if deleted else _wrapped(r.max, r, one_x),
        "valueCount": r.value_count, "nullCount": r.null_count, "totalSize": r.total_size,
        "totalUncompressedSize": r.total_uncompressed_size, "isDeleted": deleted}
    if one_x:
        out["isTightBound"] = tight
        out["valueType"] = None if deleted else {
            "typeOrdinal": TYPE_ORDINALS[r.kind],
            "additionalInfo": f"{r.precision},{r.scale}" if r.kind == "decimal" else None}
    return out


def column_stats_record(partition: str, r: ColumnRange, one_x: bool) -> tuple[str, dict[str, Any]]:
    """(key, HoodieMetadataRecord) of a file's column range."""
    return column_stats_key(r.column, partition, r.name), {
        "key": "", "type": COLUMN_STATS_TYPE, "filesystemMetadata": None,
        "ColumnStatsMetadata": _stats(r, partition, one_x, tight=False)}


def deleted_record(partition: str, file_name: str, column: str, one_x: bool) -> tuple[str, dict[str, Any]]:
    """The record saying a file left the storage: its column's statistics are gone."""
    stub = ColumnRange(file_name, column, "long", None, None, -1, -1, -1, -1)
    return column_stats_key(column, partition, file_name), {
        "key": "", "type": COLUMN_STATS_TYPE, "filesystemMetadata": None,
        "ColumnStatsMetadata": _stats(stub, partition, one_x, tight=False, deleted=True)}


def partition_stats_record(partition: str, r: ColumnRange) -> tuple[str, dict[str, Any]]:
    """(key, HoodieMetadataRecord) of a partition's column range (table version 9 only)."""
    return partition_stats_key(r.column, partition), {
        "key": "", "type": PARTITION_STATS_TYPE, "filesystemMetadata": None,
        "ColumnStatsMetadata": _stats(r, partition, True, tight=True)}


def latest(records: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, Mapping[str, Any]]:
    """Records of a column_stats, partition_stats, bloom_filters or secondary-index file group merged oldest
    first, as Hudi merges them: a key's newest record wins; a deleted one (or a delete block's key) removes the key."""
    out: dict[str, Mapping[str, Any]] = {}
    for key, record in records:
        stats = (record.get("ColumnStatsMetadata") or record.get("BloomFilterMetadata")
                 or record.get("SecondaryIndexMetadata") or {})
        if stats.get("isDeleted") or record.get("isDeleted"):
            out.pop(key, None)
        else:
            out[key] = record
    return out


__all__ = ["COLUMN_STATS", "PARTITION_STATS", "ColumnRange", "column_stats_key", "column_stats_record",
           "deleted_record", "file_ranges", "indexable", "kind_of", "latest", "merged", "partition_stats_key",
           "partition_stats_record", "xxhash64"]

"""Avro data blocks' records as Arrow columns without a Python object per timestamp, date or decimal.

fastavro turns a value of a logical type into a Python object (datetime, date, Decimal) that pyarrow
then turns back into the integer it was stored as: most of the cost of decoding a log block. Where a
top-level field's logical type stores exactly what the table's Arrow column holds (timestamp
microseconds or milliseconds into microseconds, date days, a decimal of the same scale and no greater
precision), the field is decoded as its underlying Avro type and the column converted in Arrow; any
other field (nested, evolved to another type) decodes as before.
"""
from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tablespec.arrow.avro_columns import ColumnsPlan, columns_plan

_MICROS = ("timestamp-micros", "local-timestamp-micros")
_MILLIS = ("timestamp-millis", "local-timestamp-millis")


@dataclass(frozen=True)
class RawFields:
    """How a writer schema's records decode: `writer` parsed for fastavro with the logical types of
    the fields in `stored` dropped; `stored`: field -> the Arrow type its stored values read as;
    `millis`: those of them that are timestamps in milliseconds; `columns`: how the records decode
    column by column into `schema(wanted)`, None when they must be decoded record by record."""
    writer: Any
    stored: dict[str, pa.DataType]
    millis: frozenset[str] = frozenset()
    columns: ColumnsPlan | None = None

    def schema(self, wanted: pa.Schema) -> pa.Schema:
        """`wanted` with those fields as their stored types."""
        return pa.schema([pa.field(f.name, self.stored[f.name]) if f.name in self.stored else f for f in wanted])


def _stored_type(logical: dict[str, Any], target: pa.DataType) -> pa.DataType | None:
    """The Arrow type a value of `logical` (an Avro type with a logicalType) is stored as, when it
    converts to `target` in Arrow; None when it does not."""
    kind = logical.get("logicalType")
    if kind in (*_MICROS, *_MILLIS) and logical.get("type") == "long":
        return pa.int64() if pa.types.is_timestamp(target) and target.unit == "us" else None
    if kind == "date" and logical.get("type") == "int":
        return pa.int32() if pa.types.is_date32(target) else None
    if kind == "decimal" and logical.get("type") in ("fixed", "bytes") and pa.types.is_decimal128(target):
        fits = logical.get("scale", 0) == target.scale and logical.get("precision", 0) <= target.precision
        return pa.binary() if fits else None
    return None


@functools.lru_cache(maxsize=64)
def raw_fields(text: str, wanted: pa.Schema) -> RawFields:
    """How records of the writer schema `text` (Avro JSON, a record) decode for `wanted`'s columns."""
    record = json.loads(text)
    stored: dict[str, pa.DataType] = {}
    millis = set()
    for field in record.get("fields", ()):
        if field["name"] not in wanted.names:
            continue
        branches = field["type"] if isinstance(field["type"], list) else [field["type"]]
        logical = [b for b in branches if isinstance(b, dict) and "logicalType" in b]
        if len(logical) != 1 or any(b != "null" and b is not logical[0] for b in branches):
            continue
        kind = _stored_type(logical[0], wanted.field(field["name"]).type)
        if kind is not None:
            stored[field["name"]] = kind
            if logical[0].pop("logicalType") in _MILLIS:
                millis.add(field["name"])
    fields = RawFields(fastavro.parse_schema(record), stored, frozenset(millis))
    return RawFields(fields.writer, stored, fields.millis, columns_plan(record, fields.schema(wanted)))


def records_table(records: Sequence[dict[str, Any]], fields: RawFields, wanted: pa.Schema) -> pa.Table:
    """Records decoded by `fields` as a table of `wanted` (fields a record lacks are null)."""
    return stored_as_wanted(pa.Table.from_pylist(list(records), schema=fields.schema(wanted)), fields, wanted)


def stored_as_wanted(table: pa.Table, fields: RawFields, wanted: pa.Schema) -> pa.Table:
    """A table of `fields.schema(wanted)` (the stored values of logical types) as `wanted`."""
    for name in fields.stored:
        i = table.schema.get_field_index(name)
        column, target = table.column(i).combine_chunks(), wanted.field(name).type
        if pa.types.is_decimal(target):
            column = _decimals(column, target)
        else:
            column = (pc.multiply_checked(column, 1000) if name in fields.millis else column).cast(target)
        table = table.set_column(i, wanted.field(name), column)
    return table


def _decimals(column: pa.Array, target: pa.DataType) -> pa.Array:
    """Big-endian two's complement unscaled values (Avro's decimal, at most 16 bytes) as `target`
    (decimal128): each sign-extended to 16 bytes and reversed, for every value at once."""
    n = len(column)
    binary = column.cast(pa.binary())
    offsets = np.frombuffer(binary.buffers()[1], np.int32, n + 1, binary.offset * 4)
    data = np.frombuffer(binary.buffers()[2], np.uint8) if binary.buffers()[2] is not None else np.zeros(0, np.uint8)
    lengths = np.diff(offsets).astype(np.int64)
    if (lengths > 16).any():
        raise ValueError("a decimal's unscaled value of more than 16 bytes")
    starts = offsets[:-1]
    first = np.where(lengths > 0, data[np.minimum(starts, len(data) - 1)], 0) if len(data) else np.zeros(n, np.uint8)
    wide = np.repeat(np.where(first >= 0x80, 0xFF, 0).astype(np.uint8)[:, None], 16, axis=1)
    to = np.repeat(np.arange(n) * 16 + 16 - lengths - starts, lengths) + np.arange(offsets[0], offsets[-1])
    wide.reshape(-1)[to] = data[offsets[0]:offsets[-1]]
    out = pa.Array.from_buffers(target, n, [None, pa.py_buffer(wide[:, ::-1].tobytes())])
    return pc.if_else(pc.is_valid(column), out, pa.scalar(None, target)) if column.null_count else out

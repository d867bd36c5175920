"""Rows of an older base file in the table's current schema.

Schema evolution rewrites no data, so a base file written before it may lack columns added
since (or nested struct fields) and hold narrower types (int where the table now has long,
decimal(10,2) where it has decimal(12,2)). Readers fill and cast; so must a copy-on-write merge
that carries such rows into a new file slice. The schema's column types read as `arrow_type`s.
"""
from __future__ import annotations

import pyarrow as pa

from tablespec.types import Array, DataType, Decimal, Map, Primitive

_ARROW = {
    "string": pa.string(), "int": pa.int32(), "long": pa.int64(), "short": pa.int16(), "byte": pa.int8(),
    "float": pa.float32(), "double": pa.float64(), "boolean": pa.bool_(), "date": pa.date32(),
    "timestamp": pa.timestamp("us", "UTC"), "timestamp_ntz": pa.timestamp("us"), "binary": pa.binary(),
}


def arrow_type(dt: DataType) -> pa.DataType:
    """A spec (or table schema) column type as the Arrow type its rows are read in."""
    if isinstance(dt, Primitive):
        return _ARROW[dt.name]
    if isinstance(dt, Decimal):
        return pa.decimal128(dt.precision, dt.scale)
    if isinstance(dt, Array):
        return pa.list_(arrow_type(dt.element))
    if isinstance(dt, Map):
        return pa.map_(arrow_type(dt.key), arrow_type(dt.value))
    return pa.struct([pa.field(f.name, arrow_type(f.type), f.nullable) for f in dt.fields])


def _cast(column: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    if column.type == target:
        return column
    # int -> float / double may round large values, as Java's (and Spark's) widening does;
    # every other widening is exact, so anything lossy there is an error.
    rounding = pa.types.is_integer(column.type) and pa.types.is_floating(target)
    return column.cast(target, safe=not rounding)


def align_to_schema(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` with exactly `schema`'s columns in its order: columns it lacks become nulls,
    narrower types are cast up (struct fields match by name, missing ones become nulls)."""
    names = set(table.column_names)
    columns = [_cast(table.column(f.name), f.type) if f.name in names else pa.nulls(table.num_rows, f.type)
               for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)

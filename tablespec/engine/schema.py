"""Spec column types as Spark and Arrow types, and the check of incoming data against them."""
from __future__ import annotations

import pyarrow as pa

from tablespec.errors import TablespecError
from tablespec.types import Array, DataType, Decimal, Map, Primitive, parse_type, stored

META_FIELDS = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
               "_hoodie_partition_path", "_hoodie_file_name")

_ARROW = {
    "string": pa.string(), "int": pa.int32(), "long": pa.int64(), "short": pa.int16(), "byte": pa.int8(),
    "float": pa.float32(), "double": pa.float64(), "boolean": pa.bool_(), "date": pa.date32(),
    "timestamp": pa.timestamp("us", "UTC"), "timestamp_ntz": pa.timestamp("us"), "binary": pa.binary(),
}


def arrow_type(dt: DataType) -> pa.DataType:
    if isinstance(dt, Primitive):
        return _ARROW[dt.name]
    if isinstance(dt, Decimal):
        return pa.decimal128(dt.precision, dt.scale)
    if isinstance(dt, Array):
        return pa.list_(arrow_type(dt.element))
    if isinstance(dt, Map):
        return pa.map_(arrow_type(dt.key), arrow_type(dt.value))
    return pa.struct([pa.field(f.name, arrow_type(f.type), f.nullable) for f in dt.fields])


def spark_ddl(spec) -> str:
    """The spec's columns as a Spark DDL schema string (`a string NOT NULL, b bigint`)."""
    return ", ".join(f"`{c.name}` {c.type}" + ("" if c.nullable else " NOT NULL") for c in spec.spec.columns)


class DataSchemaError(TablespecError):
    """Incoming data does not fit the spec's columns."""


def conform(df, spec, key_column_allowed: bool = False):
    """`df` with the spec's columns in spec order: missing nullable columns become nulls.

    Extra columns, missing non-nullable columns and columns whose type differs from the
    spec are refused, naming each one, before anything is written.
    """
    from pyspark.sql import functions as F

    declared = {c.name: c for c in spec.spec.columns}
    incoming = {f.name: f for f in df.schema.fields}
    problems = []
    allowed_extra = {"_hoodie_record_key"} if key_column_allowed else set()
    for name in incoming:
        if name not in declared and name not in allowed_extra:
            problems.append(f"column {name!r} is not in the spec")
    for name, col in declared.items():
        if name not in incoming:
            if not col.nullable:
                problems.append(f"column {name!r} is missing and not nullable")
            continue
        have = parse_type(incoming[name].dataType.simpleString())
        if have != parse_type(col.type):
            problems.append(f"column {name!r} has type {have}, the spec declares {col.type}")
    if problems:
        raise DataSchemaError("input does not match the spec: " + "; ".join(problems))
    cols = [F.col(f"`{n}`") if n in incoming else F.lit(None).cast(c.type).alias(n) for n, c in declared.items()]
    cols += [F.col(n) for n in sorted(allowed_extra & set(incoming))]
    return df.select(*cols)


def data_schema(spec) -> pa.Schema:
    return pa.schema([pa.field(c.name, arrow_type(parse_type(c.type)), c.nullable) for c in spec.spec.columns])


def table_ddl(spec) -> str:
    """A base file's columns as a Spark DDL string (meta columns, then the spec's as stored, all nullable)."""
    return ", ".join([f"`{m}` string" for m in META_FIELDS] +
                     [f"`{c.name}` {stored(parse_type(c.type))}" for c in spec.spec.columns])

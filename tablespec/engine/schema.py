"""Spec column types as Spark and Arrow types, and the check of incoming data against them."""
from __future__ import annotations

import pyarrow as pa

from tablespec.arrow.align import arrow_type
from tablespec.errors import TablespecError
from tablespec.types import parse_type, stored

META_FIELDS = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
               "_hoodie_partition_path", "_hoodie_file_name")

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

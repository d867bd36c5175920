"""Avro table schemas <-> tablespec column types.

Hudi records the table schema as Avro JSON in every commit (extraMetadata.schema). The layout
tablespec writes is the one Hudi's Spark writer produces, so that schema comparison by
Hudi (and by hudi-rs) sees no difference: record `<table>_record` in namespace
`hoodie.<table>`, nullable types as ["null", T] with default null, nested records named
after their field in the parent's namespace + "." + parent name, decimals as `fixed` named
"fixed" in namespace `<namespace>.<field>`.
"""
from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import fastavro

from tablespec.errors import HudiFormatError
from tablespec.hudi.formats.naming import META_COLUMNS
from tablespec.hudi.keys import AVRO_NAMESPACE
from tablespec.types import Array, DataType, Decimal, Field, Map, Primitive, Struct


class Column(NamedTuple):
    name: str
    type: DataType
    nullable: bool = True


_TO_AVRO: dict[str, Any] = {
    "string": "string", "int": "int", "short": "int", "byte": "int", "long": "long",
    "float": "float", "double": "double", "boolean": "boolean", "binary": "bytes",
    "date": {"type": "int", "logicalType": "date"},
    "timestamp": {"type": "long", "logicalType": "timestamp-micros"},
    "timestamp_ntz": {"type": "long", "logicalType": "local-timestamp-micros"},
}
_FROM_AVRO = {"string": "string", "int": "int", "long": "long", "float": "float", "double": "double",
              "boolean": "boolean", "bytes": "binary"}
_FROM_LOGICAL = {"date": "date", "timestamp-millis": "timestamp", "timestamp-micros": "timestamp",
                 "local-timestamp-millis": "timestamp_ntz", "local-timestamp-micros": "timestamp_ntz"}


@functools.lru_cache(maxsize=64)
def parsed_schema(text: str) -> Any:
    """`text` (an Avro schema as JSON) parsed for fastavro, once per distinct text: every block of a
    log file and every metadata-table file repeats the same schema, and parsing it costs more than
    decoding the block. Raises ValueError (json) or fastavro's own error for text that is no schema;
    callers must not change the result."""
    return fastavro.parse_schema(json.loads(text))


def decimal_fixed_size(precision: int) -> int:
    """Fewest bytes whose two's complement holds every unscaled value of `precision` digits."""
    size = 1
    while 2 ** (8 * size - 1) < 10 ** precision:
        size += 1
    return size


def _columns(columns: Iterable[Any]) -> list[Column]:
    return [Column(c.name, c.type, c.nullable) if isinstance(c, Field) else Column(*c) for c in columns]


def _avro_type(dt: DataType, name: str, namespace: str) -> Any:
    if isinstance(dt, Primitive):
        if dt.name not in _TO_AVRO:
            raise HudiFormatError(f"column {name!r}: type {dt} has no Avro equivalent")
        return _TO_AVRO[dt.name]
    if isinstance(dt, Decimal):
        return {"type": "fixed", "name": "fixed", "namespace": f"{namespace}.{name}",
                "size": decimal_fixed_size(dt.precision), "logicalType": "decimal",
                "precision": dt.precision, "scale": dt.scale}
    if isinstance(dt, Array):
        return {"type": "array", "items": ["null", _avro_type(dt.element, name, namespace)]}
    if isinstance(dt, Map):
        if dt.key != Primitive("string"):
            raise HudiFormatError(f"column {name!r}: Avro map keys must be strings, found {dt.key}")
        return {"type": "map", "values": ["null", _avro_type(dt.value, name, namespace)]}
    if isinstance(dt, Struct):
        return {"type": "record", "name": name, "namespace": namespace,
                "fields": _avro_fields(_columns(dt.fields), f"{namespace}.{name}")}
    raise HudiFormatError(f"column {name!r}: unsupported type {dt!r}")


def _avro_fields(columns: Sequence[Column], namespace: str) -> list[dict[str, Any]]:
    out = []
    for col in columns:
        t = _avro_type(col.type, col.name, namespace)
        out.append({"name": col.name, "type": ["null", t], "default": None} if col.nullable
                   else {"name": col.name, "type": t})
    return out


def to_avro_schema(columns: Iterable[Column | Field | tuple[str, DataType, bool]], table_name: str) -> dict[str, Any]:
    """The Avro schema Hudi's Spark writer records for a table with these columns."""
    namespace, record = f"{AVRO_NAMESPACE}.{table_name}", f"{table_name}_record"
    return {"type": "record", "name": record, "namespace": namespace,
            "fields": _avro_fields(_columns(columns), f"{namespace}.{record}")}


class _Reader:
    """Walks an Avro schema, remembering named types so later references resolve."""

    def __init__(self) -> None:
        self.named: dict[str, Any] = {}

    def register(self, schema: dict[str, Any], namespace: str) -> str:
        """Remember a named type; returns its namespace (the enclosing one for its fields)."""
        name = schema.get("name", "")
        space = schema.get("namespace", namespace) if "." not in name else name.rsplit(".", 1)[0]
        full = name if "." in name else (f"{space}.{name}" if space else name)
        self.named[full] = schema
        return space

    def column_type(self, schema: Any, namespace: str, where: str) -> tuple[DataType, bool]:
        if isinstance(schema, list):
            branches = [s for s in schema if s != "null" and s != {"type": "null"}]
            if len(branches) != 1:
                raise HudiFormatError(f"{where}: union {json.dumps(schema)} is not T or [null, T]")
            dt, _ = self.column_type(branches[0], namespace, where)
            return dt, len(branches) < len(schema)
        if isinstance(schema, str):
            if schema in _FROM_AVRO:
                return Primitive(_FROM_AVRO[schema]), False
            ref = self.named.get(schema) or self.named.get(f"{namespace}.{schema}")
            if ref is None:
                raise HudiFormatError(f"{where}: unknown Avro type {schema!r}")
            return self.column_type(ref, namespace, where)
        if not isinstance(schema, dict) or "type" not in schema:
            raise HudiFormatError(f"{where}: invalid Avro schema {json.dumps(schema)}")
        kind, logical = schema["type"], schema.get("logicalType")
        if isinstance(kind, (list, dict)):
            return self.column_type(kind, namespace, where)
        if logical == "decimal" and kind in ("bytes", "fixed"):
            if kind == "fixed":
                self.register(schema, namespace)
            return Decimal(int(schema["precision"]), int(schema.get("scale", 0))), False
        if logical in _FROM_LOGICAL:
            return Primitive(_FROM_LOGICAL[logical]), False
        if kind == "record":
            space = self.register(schema, namespace)
            return Struct(tuple(Field(c.name, c.type, c.nullable) for c in self.fields(schema, space, where))), False
        if kind == "enum":
            self.register(schema, namespace)
            return Primitive("string"), False
        if kind == "fixed":
            self.register(schema, namespace)
            return Primitive("binary"), False
        if kind == "array":
            return Array(self.column_type(schema["items"], namespace, f"{where}[]")[0]), False
        if kind == "map":
            return Map(Primitive("string"), self.column_type(schema["values"], namespace, f"{where}{{}}")[0]), False
        if kind in _FROM_AVRO:
            return Primitive(_FROM_AVRO[kind]), False
        raise HudiFormatError(f"{where}: unsupported Avro type {kind!r}")

    def fields(self, record: dict[str, Any], namespace: str, where: str) -> list[Column]:
        out = []
        for f in record.get("fields", []):
            dt, nullable = self.column_type(f["type"], namespace, f"{where}.{f['name']}" if where else f["name"])
            out.append(Column(f["name"], dt, nullable))
        return out


def from_avro_schema(schema: dict[str, Any] | str) -> list[Column]:
    """The columns of an Avro record schema. Unions of null and one type are nullable (either
    order); enums read as string; byte/short do not exist in Avro and read as int."""
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as e:
            raise HudiFormatError(f"table schema is not valid JSON: {e}") from None
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise HudiFormatError("table schema must be an Avro record")
    reader = _Reader()
    return reader.fields(schema, reader.register(schema, ""), "")


def without_meta_fields(schema: str) -> str | None:
    """The table schema in a commit's `schema` (Avro JSON) without Hudi's `_hoodie_*` meta columns,
    or None when it holds no data column.

    Most writes record the table's own columns, but Apache Hudi 0.15's `delete_partition` (also
    Spark SQL's ALTER TABLE ... DROP PARTITION) and datasource `delete` record the file schema, meta
    columns first; Hudi's own schema resolver drops them, and so does this. A schema without them
    comes back as it was, byte for byte."""
    try:
        parsed = json.loads(schema)
    except json.JSONDecodeError:
        parsed = None
    fields = parsed.get("fields") if isinstance(parsed, dict) else None
    if not isinstance(fields, list):
        return schema   # not a record: from_avro_schema says what is wrong with it, where it is read
    data = [f for f in fields if not (isinstance(f, dict) and f.get("name") in META_COLUMNS)]
    if not data:
        return None
    return schema if len(data) == len(fields) else json.dumps({**parsed, "fields": data}, separators=(",", ":"))

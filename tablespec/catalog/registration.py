"""What a catalog holds for a Hudi copy-on-write table: the registration Apache Hudi 0.15's
HiveSyncTool writes (hms mode, `syncAsSparkDataSourceTable` on, the default), built from the
table's columns, partitioning, location and latest commit. Pure: no catalog, no Spark.

Hudi registers an EXTERNAL table whose storage descriptor reads through its input format, whose
columns are the five `_hoodie_*` metadata columns then the data columns without the partition
fields (Hive lowercases names; a timestamp is a bigint to Hive), and whose `spark.sql.sources.*`
properties tell Spark to read it as the `hudi` data source (the schema JSON keeps names' case and
puts the partition columns last). Each partition is registered at `base/partition-path` with the
values MultiPartKeysValueExtractor takes from the path.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime

from tablespec.hudi import keys
from tablespec.types import Array, DataType, Decimal, Map, Primitive, Struct

INPUT_FORMAT = "org.apache.hudi.hadoop.HoodieParquetInputFormat"
OUTPUT_FORMAT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat"
SERDE = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"
TABLE_TYPE = "EXTERNAL_TABLE"
META_COLUMNS = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
                "_hoodie_file_name")
SCHEMA_PART_LENGTH = 4000
"""Hudi's `hoodie.datasource.hive_sync.schema_string_length_thresh`: the schema JSON is split in parts this long."""
LAST_COMMIT = "last_commit_time_sync"
LAST_COMPLETION = "last_commit_completion_time_sync"
METASTORE_OWNED = frozenset({"transient_lastDdlTime", "numFiles", "totalSize", "numRows", "rawDataSize",
                             "COLUMN_STATS_ACCURATE"})
"""Parameters the metastore keeps itself (times, fast statistics): never compared."""


@dataclass(frozen=True)
class Column:
    name: str
    type: DataType
    nullable: bool = True


@dataclass(frozen=True)
class Partition:
    values: tuple[str, ...]
    location: str


@dataclass(frozen=True)
class Registration:
    """One catalog table as Hudi's sync writes it (or as a catalog holds it)."""

    database: str
    table: str
    location: str
    columns: tuple[tuple[str, str], ...]          # Hive (name, type), partition keys excluded
    partition_keys: tuple[tuple[str, str], ...]
    parameters: dict[str, str] = field(default_factory=dict)
    serde_parameters: dict[str, str] = field(default_factory=dict)
    input_format: str = INPUT_FORMAT
    output_format: str = OUTPUT_FORMAT
    serde: str = SERDE
    table_type: str = TABLE_TYPE
    partitions: dict[tuple[str, ...], str] = field(default_factory=dict)   # values -> location

    @property
    def name(self) -> str:
        return f"{self.database}.{self.table}"


def hive_type(dt: DataType) -> str:
    """The Hive type Hudi's sync gives a column of this type (HiveSchemaUtil, timestamps not supported)."""
    if isinstance(dt, Decimal):
        return str(dt)
    if isinstance(dt, Array):
        return f"array<{hive_type(dt.element)}>"
    if isinstance(dt, Map):
        return f"map<{hive_type(dt.key)},{hive_type(dt.value)}>"
    if isinstance(dt, Struct):
        return "struct<" + ",".join(f"{f.name}:{hive_type(f.type)}" for f in dt.fields) + ">"
    return {"long": "bigint", "byte": "int", "short": "int", "timestamp": "bigint",
            "timestamp_ntz": "bigint"}.get(dt.name, dt.name)


def _spark_type(dt: DataType) -> str:
    """The JSON Hudi's Parquet2SparkSchemaUtils writes for a type (spelled as it spells it)."""
    if isinstance(dt, Decimal):
        return json.dumps(str(dt))
    if isinstance(dt, Array):   # Hudi converts Avro with the old two-level lists: elements are never null
        return f'{{"type":"array", "elementType":{_spark_type(dt.element)},"containsNull":false}}'
    if isinstance(dt, Map):
        return (f'{{"type":"map", "keyType":{_spark_type(dt.key)},"valueType":{_spark_type(dt.value)},'
                f'"valueContainsNull":true}}')
    if isinstance(dt, Struct):
        return _struct_json([Column(f.name, f.type, f.nullable) for f in dt.fields])
    assert isinstance(dt, Primitive)
    return json.dumps({"int": "integer", "byte": "integer", "short": "integer"}.get(dt.name, dt.name))


def _struct_json(columns: list[Column]) -> str:
    fields = ",".join(f'{{"name":{json.dumps(c.name)},"type":{_spark_type(c.type)},'
                      f'"nullable":{"true" if c.nullable else "false"},"metadata":{{}}}}' for c in columns)
    return f'{{"type":"struct","fields":[{fields}]}}'


def spark_properties(columns: list[Column], partition_fields: list[str]) -> dict[str, str]:
    """The `spark.sql.sources.*` table properties (SparkDataSourceTableUtils): provider, schema parts, partition columns."""
    meta = [Column(name, Primitive("string")) for name in META_COLUMNS]
    ordered = meta + [c for c in columns if c.name not in partition_fields] + \
        [c for name in partition_fields for c in columns if c.name == name]
    schema = _struct_json(ordered)
    parts = max(1, math.ceil(len(schema) / SCHEMA_PART_LENGTH))
    props = {"spark.sql.sources.provider": "hudi", "spark.sql.sources.schema.numParts": str(parts)}
    for i in range(parts):
        props[f"spark.sql.sources.schema.part.{i}"] = schema[i * SCHEMA_PART_LENGTH:(i + 1) * SCHEMA_PART_LENGTH]
    if partition_fields:
        props["spark.sql.sources.schema.numPartCols"] = str(len(partition_fields))
        for i, name in enumerate(partition_fields):
            props[f"spark.sql.sources.schema.partCol.{i}"] = name
    return props


def partition_values(path: str, fields: int) -> tuple[str, ...]:
    """A partition path's values as MultiPartKeysValueExtractor reads them (`k=v` or bare `v` segments)."""
    segments = path.split("/") if path else []
    if len(segments) != fields:
        raise ValueError(f"partition path {path!r} has {len(segments)} segments for {fields} partition fields")
    return tuple(s.split("=", 1)[1] if "=" in s else s for s in segments)


def completion_time(mtime_ms: int) -> str:
    """`last_commit_completion_time_sync` for a version-6 table: the completed instant file's
    modification time, as Hudi formats instant times (local time, milliseconds)."""
    return datetime.fromtimestamp(mtime_ms / 1000).strftime("%Y%m%d%H%M%S") + f"{mtime_ms % 1000:03d}"


def catalog_location(base: str) -> str:
    """The storage location a metastore records for a table base path (local paths qualified with `file:`)."""
    return f"file:{base}" if base.startswith("/") else base


def registration(database: str, table: str, base: str, columns: list[Column], partition_fields: list[str],
                 partition_paths: list[str], last_commit: str | None, completed_ms: int | None = None) -> Registration:
    """What Hudi's HiveSyncTool registers for a copy-on-write table at `base` after its commit `last_commit`."""
    by_name = {c.name: c for c in columns}
    partition_keys = tuple((name.lower(), hive_type(by_name[name].type) if name in by_name else "string")
                 for name in partition_fields)
    params = {"EXTERNAL": "TRUE", **spark_properties(columns, partition_fields)}
    if last_commit is not None:
        params[LAST_COMMIT] = last_commit
        if completed_ms is not None:
            params[LAST_COMPLETION] = completion_time(completed_ms)
    location = catalog_location(base)
    partitions = {partition_values(p, len(partition_fields)): f"{location}/{p}"
                  for p in partition_paths if partition_fields}
    return Registration(
        database.lower(), table.lower(), location,
        columns=tuple((name, "string") for name in META_COLUMNS) + tuple(
            (c.name.lower(), hive_type(c.type)) for c in columns if c.name not in partition_fields),
        partition_keys=partition_keys, parameters=params,
        serde_parameters={"path": base, keys.QUERY_AS_RO_TABLE.name: "false", "serialization.format": "1"},
        partitions=partitions)

"""Reading base files written before a schema evolution, as the table's current columns.

Schema evolution rewrites no data (actions/schema.py), so a snapshot can mix files of several
schemas. Each file is read with the columns it was written with, taken from the metadata of the
commit that wrote it, and converted to the spec's: added columns become nulls, widened types are
cast. Spark's parquet reader widens some types by itself (int -> long, float -> double, decimals)
but not every widening Hudi allows (long -> double, int -> float fail), so nothing relies on it.
"""
from __future__ import annotations

from functools import reduce

import pyarrow.parquet as pq

from tablespec.arrow.basefile import AVRO_SCHEMA
from tablespec.engine.parquet import read_parquet
from tablespec.engine.schema import META_FIELDS
from tablespec.hudi.formats.avro import from_avro_schema, to_avro_schema
from tablespec.hudi.formats.naming import BaseFileName
from tablespec.hudi.table import HudiTable
from tablespec.plan.columns import spec_columns
from tablespec.types import Array, DataType, Map, Struct

Columns = dict[str, DataType]


def written_columns(table: HudiTable, files: list[str]) -> dict[str, Columns | None]:
    """Each base file's data columns as its writer recorded them: the schema in the metadata of
    the commit that wrote it (metadata only), else (commit archived or without a schema) the Avro
    schema in the file's footer; None when neither says."""
    storage, timeline = table.storage, table.timeline
    commits = {i.timestamp: i for i in timeline.commits()}
    by_instant: dict[str | None, str | None] = {}
    out: dict[str, Columns | None] = {}
    for path in files:
        name = BaseFileName.parse(path.rsplit("/", 1)[-1])
        ts = name.instant if name is not None else None
        if ts not in by_instant:
            by_instant[ts] = timeline.commit_metadata(commits[ts]).schema if ts in commits else None
        schema = by_instant[ts]
        if schema is None:
            with storage.open_input_file(path) as f:
                schema = ((pq.read_metadata(f).metadata or {}).get(AVRO_SCHEMA) or b"").decode() or None
        out[path] = None if schema is None else {c.name: c.type for c in from_avro_schema(schema)
                                                 if c.name not in META_FIELDS}
    return out


def read_files(spark, table: HudiTable, files: list[str], spec, ddl: str):
    """`files` as one DataFrame with the columns of `ddl` (meta columns, then the spec's)."""
    # The spec's columns as Avro records them (byte/short as int): files written with them are current.
    current = {c.name: c.type for c in from_avro_schema(to_avro_schema(spec_columns(spec), spec.metadata.name))}
    groups: dict[tuple, list[str]] = {}
    for path, written in written_columns(table, files).items():
        stale = written is not None and any(written.get(n) != t for n, t in current.items())
        groups.setdefault(tuple(written.items()) if written is not None and stale else (), []).append(path)
    storage = table.storage
    frames = [_read_evolved(spark, storage, paths, dict(written), spec) if written
              else read_parquet(spark, storage, paths, ddl) for written, paths in groups.items()]
    return reduce(lambda a, b: a.unionByName(b), frames)


def _read_evolved(spark, storage, paths: list[str], written: Columns, spec):
    from pyspark.sql import functions as F

    columns = [(name, dt) for name, dt, _ in spec_columns(spec)]
    own = [f"`{n}` {written[n]}" for n, _ in columns if n in written]
    df = read_parquet(spark, storage, paths, ", ".join([f"`{m}` string" for m in META_FIELDS] + own))
    data = [(_convert(F.col(f"`{n}`"), written[n], dt) if n in written else F.lit(None).cast(str(dt))).alias(n)
            for n, dt in columns]
    return df.select(*[F.col(m) for m in META_FIELDS], *data)


def _convert(col, old: DataType, new: DataType):
    """A column of type `old` as the wider `new`: a cast; struct fields matched by name (added
    ones null); array elements and map values converted one by one."""
    from pyspark.sql import functions as F

    if old == new:
        return col
    if isinstance(old, Struct) and isinstance(new, Struct):
        have = {f.name: f.type for f in old.fields}
        fields = [(_convert(col.getField(f.name), have[f.name], f.type) if f.name in have
                   else F.lit(None).cast(str(f.type))).alias(f.name) for f in new.fields]
        return F.when(col.isNotNull(), F.struct(*fields))
    if isinstance(old, Array) and isinstance(new, Array):
        return F.transform(col, lambda x: _convert(x, old.element, new.element))
    if isinstance(old, Map) and isinstance(new, Map):
        return F.transform_values(col, lambda _, v: _convert(v, old.value, new.value))
    return col.cast(str(new))

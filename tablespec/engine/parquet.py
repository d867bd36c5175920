"""Spark DataFrames of base files, read through the table's storage.

On local disk Spark's own parquet reader reads them. On an object store the executors read
them with pyarrow through the same `Storage` the driver uses (ranged GETs of the columns asked
for, the storage's configuration pickled with the task, credentials from each process's AWS
chain): no Hadoop S3A connector or its configuration is needed, and what reaches the store is
exactly what tablespec's storage layer does.
"""
from __future__ import annotations

import functools

import pyarrow as pa
import pyarrow.parquet as pq

from tablespec.hudi.io import LocalStorage, Storage


def read_parquet(spark, storage: Storage, paths: list[str], ddl: str):
    """`paths` as one DataFrame with the columns of `ddl`, matched by name (a column a file
    lacks is null), as `spark.read.schema(ddl).parquet(*paths)` reads them."""
    if isinstance(storage, LocalStorage):
        return spark.read.schema(ddl).parquet(*paths)
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import _parse_datatype_string

    schema = _parse_datatype_string(ddl)
    arrow_schema = to_arrow_schema(schema)  # type: ignore[arg-type]  # a DDL of columns parses to a StructType
    n = max(1, min(len(paths), spark.sparkContext.defaultParallelism * 2))
    files = spark.createDataFrame([(p,) for p in paths], "path string").repartition(n)
    return files.mapInArrow(functools.partial(_read_files, storage, arrow_schema), schema)


def _read_files(storage: Storage, schema: pa.Schema, batches):
    for batch in batches:
        for path in batch.column(0).to_pylist():
            with storage.open_input_file(path) as f:
                file = pq.ParquetFile(f)
                present = set(file.schema_arrow.names)
                table = file.read(columns=[n for n in schema.names if n in present])
            columns = [table.column(fld.name).cast(fld.type) if fld.name in present
                       else pa.nulls(table.num_rows, fld.type) for fld in schema]
            yield from pa.Table.from_arrays(columns, schema=schema).to_batches()

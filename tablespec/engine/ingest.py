"""Input files for `ingest`, read by column name: a CSV header or JSON keys name the spec's columns.

Spark's CSV reader with a schema maps columns by position, so a header in another order would put
keys into the partition column. The header is read first and the schema given in its order;
names the spec does not have are refused by name (missing nullable columns are filled later by
the writer, missing required ones refused there). A value Spark cannot parse is reported as one
line naming the file, the column and the value.
"""
from __future__ import annotations

import csv
import os

from tablespec.errors import TablespecError

FORMATS = {".csv": "csv", ".json": "json", ".jsonl": "json", ".ndjson": "json", ".parquet": "parquet"}
COMPRESSIONS = (".gz", ".bz2", ".zst", ".lz4", ".snappy", ".deflate")  # Spark reads these CSV/JSON files too


def _data_files(path: str):
    """The data files of an input path (a file, or a directory as Spark lists it: no hidden or _ names)."""
    if os.path.isfile(path):
        yield path
        return
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        for name in sorted(files):
            if not name.startswith((".", "_")):
                yield os.path.join(root, name)


def _first_file(path: str) -> str | None:
    return next(_data_files(path), None)


def format_of(name: str) -> str | None:
    """csv, json or parquet by the file name's extension (after a compression suffix), else None."""
    name = name.lower()
    name = next((name[:-len(c)] for c in COMPRESSIONS if name.endswith(c)), name)
    return FORMATS.get(os.path.splitext(name)[1])


def infer_format(path: str) -> str:
    """The format of an input path from its name, or for a directory from its files' names (one format)."""
    files = list(_data_files(path))
    if not files:
        raise TablespecError(f"{path}: no input files")
    formats: dict[str, str] = {}   # format -> its first file
    for file in files:
        fmt = format_of(os.path.basename(file))
        if fmt is None:
            raise TablespecError(f"{file}: cannot tell the input format from the file name (known: "
                                 f"{', '.join(FORMATS)}); pass --input-format parquet|csv|json")
        formats.setdefault(fmt, file)
    if len(formats) > 1:
        raise TablespecError(f"{path}: holds {' and '.join(f'{f} ({n})' for f, n in formats.items())} files; "
                             "keep one format per input, or pass --input-format")
    return next(iter(formats))


def csv_header(path: str) -> list[str]:
    first = _first_file(path)
    if first is None:
        raise TablespecError(f"{path}: no input files")
    with open(first, newline="", encoding="utf-8-sig") as f:
        header = next(csv.reader(f), None)
    if not header:
        raise TablespecError(f"{first}: empty CSV file (no header line)")
    return header


def _check_names(where: str, names: list[str], spec) -> None:
    columns = [c.name for c in spec.spec.columns]
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise TablespecError(f"{where}: column {name!r} appears twice")
        seen.add(name)
    unknown = [n for n in names if n not in columns]
    if unknown:
        raise TablespecError(f"{where}: {', '.join(repr(n) for n in unknown)} "
                             f"{'is not a column' if len(unknown) == 1 else 'are not columns'} of table "
                             f"{spec.name} (columns: {', '.join(columns)})")


def _ddl(names: list[str], spec) -> str:
    types = {c.name: c.type for c in spec.spec.columns}
    return ", ".join(f"`{n}` {types[n]}" for n in names)


def read_input(spark, path: str, fmt: str, spec):
    """`path` as a DataFrame of the spec's columns, mapped by name."""
    reader = spark.read
    if fmt == "csv":
        names = csv_header(path)
        _check_names(_first_file(path) or path, names, spec)
        reader = reader.schema(_ddl(names, spec)).option("header", "true").option("enforceSchema", "false")
        return reader.option("mode", "FAILFAST").csv(path)
    if fmt == "json":
        keys = spark.read.option("primitivesAsString", "true").json(path).columns  # the keys the records use
        _check_names(path, [k for k in keys if k != "_corrupt_record"], spec)
        return reader.schema(_ddl([c.name for c in spec.spec.columns], spec)).option("mode", "FAILFAST").json(path)
    return reader.parquet(path)


def explain_parse_failure(spark, path: str, fmt: str, spec) -> str | None:
    """`FILE: column C: cannot parse 'VALUE' as TYPE` for the first value Spark could not parse (a
    second, permissive read of the input, run only after a failure), or None."""
    from pyspark.sql import functions as F

    if fmt not in ("csv", "json"):
        return None
    names = csv_header(path) if fmt == "csv" else [c.name for c in spec.spec.columns]
    as_text = spark.read.option("header", "true") if fmt == "csv" else spark.read.option("primitivesAsString", "true")
    text = getattr(as_text, fmt)(path)
    raw = text.select(*[F.col(f"`{n}`").cast("string").alias(n) for n in names if n in text.columns])
    types = {c.name: c.type for c in spec.spec.columns}
    for name in raw.columns:
        bad = raw.select(F.input_file_name().alias("file"), F.col(f"`{name}`").alias("value")) \
            .where(F.col("value").isNotNull() & F.expr(f"try_cast(`value` AS {types[name]})").isNull()).first()
        if bad is not None:
            return f"{bad.file.removeprefix('file://')}: column {name!r}: cannot parse {bad.value!r} as {types[name]}"
    return None

"""Apache Hudi beside tablespec in the test session: read and write tables through Hudi's own
Spark datasource and compare what every reader sees (tablespec, hudi-rs, Apache Hudi)."""
from __future__ import annotations

from helpers import hudi_rs_rows, rows, tablespec_rows  # tests/engine, put on sys.path by conftest

from tablespec.engine.reader import to_arrow

# Hudi's Spark reader adds no columns of its own; these keep its reads close to a plain snapshot.
READ_OPTIONS = {"hoodie.datasource.query.type": "snapshot"}


def hudi_df(spark, location: str, **options: str):
    """A DataFrame of the table as Apache Hudi reads it (metadata table used as Hudi decides)."""
    return spark.read.format("hudi").options(**{**READ_OPTIONS, **options}).load(str(location))


def hudi_rows(spark, location: str, **options: str) -> list[tuple]:
    """The table's rows as Apache Hudi reads them (meta columns included), normalised like `rows`."""
    return rows(to_arrow(hudi_df(spark, location, **options)))


def hudi_write(df, location: str, options: dict[str, str], mode: str = "append") -> None:
    """Write `df` with Apache Hudi's Spark datasource."""
    df.write.format("hudi").options(**options).mode(mode).save(str(location))


def assert_readers_agree(spark, table) -> list[tuple]:
    """tablespec, hudi-rs and Apache Hudi read the same rows (meta columns included); returns them."""
    ours = tablespec_rows(table)
    assert hudi_rs_rows(table.location) == ours, "hudi-rs disagrees with tablespec"
    assert hudi_rows(spark, table.location) == ours, "Apache Hudi disagrees with tablespec"
    return ours

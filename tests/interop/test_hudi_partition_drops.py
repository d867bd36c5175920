"""Partitions dropped by Apache Hudi (retention work): Hudi 0.15 records the file schema, `_hoodie_*`
meta columns first, in the commits of `delete_partition` (datasource, and Spark SQL's ALTER TABLE
... DROP PARTITION) and of a datasource `delete`. tablespec takes the table's columns without them:
import, a clean plan, equal reads, a tablespec upsert, then a Hudi upsert with `hudi-options`."""
from __future__ import annotations

import json

import pytest
from interop_support import assert_readers_agree, hudi_write
from test_hudi_tables import KEYED, _df, _import, _table

from tablespec.engine.schema import META_FIELDS
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import Timeline
from tablespec.hudi_options import hudi_write_options

FIRST = [("a", 1, "2024-01-01", 1), ("b", 2, "2024-01-02", 1), ("c", 3, "2024-01-03", 1)]


def _recorded_columns(location) -> list[str]:
    """The column names the latest commit's metadata records, as Hudi wrote them."""
    timeline = Timeline.load(LocalStorage(), str(location))
    schema = json.loads(timeline.read_metadata(timeline.commits()[-1])["extraMetadata"]["schema"])
    return [f["name"] for f in schema["fields"]]


def _drop(spark, location, how: str) -> str:
    """Drop partition 2024-01-01 as a Hudi user would; returns the operation the last commit records."""
    options = {"hoodie.table.name": location.name, **KEYED}
    if how == "delete_partition":
        hudi_write(_df(spark, FIRST[:1]), location, {**options, "hoodie.datasource.write.operation": "delete_partition",
                                                     "hoodie.datasource.write.partitions.to.delete": "2024-01-01"})
        return "DELETE_PARTITION"
    spark.sql(f"create table {location.name} using hudi location '{location}'")
    try:
        spark.sql(f"alter table {location.name} drop partition (dt='2024-01-01')")
    finally:
        spark.sql(f"drop table {location.name}")   # the catalog entry only; the files stay
    # then a datasource delete of one row, which records the meta columns too
    hudi_write(_df(spark, [("c", 3, "2024-01-03", 1)]), location, {**options, "hoodie.datasource.write.operation": "delete"})
    return "DELETE"


@pytest.mark.parametrize("how", ["delete_partition", "sql_drop_partition"])
def test_table_after_hudi_dropped_a_partition(hudi, tmp_path, capsys, how):
    location = tmp_path / how
    hudi_write(_df(hudi, FIRST), location, {"hoodie.table.name": how, **KEYED,
                                            "hoodie.datasource.write.operation": "upsert"})
    operation = _drop(hudi, location, how)
    timeline = Timeline.load(LocalStorage(), str(location))
    assert timeline.read_metadata(timeline.commits()[-1])["operationType"] == operation
    assert _recorded_columns(location)[:5] == list(META_FIELDS)   # what tablespec must not take as columns

    doc, _ = _import(tmp_path, location, capsys)   # import, then plan with the spec: "No changes."
    assert [c["name"] for c in doc["spec"]["columns"]] == ["id", "v", "dt", "ts"]
    table = _table(hudi, doc, location)
    left = {"b", "c"} if how == "delete_partition" else {"b"}
    assert {dict(r)["id"] for r in assert_readers_agree(hudi, table)} == left

    table.write(_df(hudi, [("b", 20, "2024-01-02", 2), ("d", 4, "2024-01-01", 2)]))   # the dropped partition again
    hudi_write(_df(hudi, [("d", 40, "2024-01-01", 3), ("e", 5, "2024-01-03", 3)]), location,
               {**hudi_write_options(table.spec, HudiTable.open(table.location)), "hoodie.datasource.write.operation": "upsert"})
    rows = assert_readers_agree(hudi, table)
    assert {dict(r)["id"]: dict(r)["v"] for r in rows} == {"b": 20, "d": 40, "e": 5,
                                                           **({"c": 3} if how == "delete_partition" else {})}

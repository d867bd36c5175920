"""Data-skipping reads: `Table.read(filters=...)` skips the base files whose column statistics (the
metadata table's column_stats, built by `build_data_skipping` and kept by each write) exclude the
value, and returns the rows a read of every file filtered the same way returns."""
from __future__ import annotations

import pytest
from helpers import make_table, rows

from tablespec.engine.commit import locked
from tablespec.engine.data_skipping import build
from tablespec.engine.reader import snapshot_files, to_arrow

pytestmark = pytest.mark.spark

DDL = "id string, v int, f float, dt string"
SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: ranges}
spec:
  location: ranges
  columns:
    - {name: id, type: string, nullable: false}
    - {name: v, type: int}
    - {name: f, type: float}
    - {name: dt, type: string}
  recordKey: {fields: [id]}
  partitioning: {fields: [dt]}
"""


def test_equality_filters_skip_files_by_column_statistics(spark, warehouse):
    table = make_table(spark, warehouse, SPEC)
    for dt, values in (("d1", range(0, 10)), ("d2", range(10, 20))):
        table.write(spark.createDataFrame([(f"k{v}", v, 16777216.0 if v == 15 else float(v), dt) for v in values],
                                          DDL))
    with locked(table.table):
        build(spark, table.table, ["column_stats"], None)
    table.write(spark.createDataFrame([("k30", 30, 30.0, "d3"), ("k31", None, None, "d3"),
                                       ("k32", 32, float("-inf"), "d3")], DDL))

    def files(**filters):
        return [p.rsplit("/", 2)[-2].removeprefix("dt=") for p in snapshot_files(table.table.refresh(), None, table.spec, filters)]

    assert sorted(files()) == ["d1", "d2", "d3"]
    assert files(v=15) == ["d2"]                             # the other files' ranges exclude 15
    assert files(v=30) == ["d3"]                             # kept by the write after the build
    assert files(v=99) == [] and files(v=15, id="k1") == []
    assert sorted(files(id="k30")) == ["d1", "d3"]           # strings, as Hudi orders them: k10..k19 excludes it
    assert sorted(files(v="15")) == ["d1", "d2", "d3"]       # a value of another type skips nothing
    assert files(f=16777217) == ["d2"]   # Spark compares it as float32, 16777216.0: d2's maximum (k15)
    assert files(f=-1e39) == ["d3"] and files(f=1e39) == []   # beyond float32: compared as doubles, as Spark does
    for filters in ({"v": 15}, {"v": 30}, {"v": 99}, {"id": "k30"}, {"dt": "d1", "v": 5}, {"f": 16777217},
                    {"f": -1e39}, {"f": float("-inf")}):
        everything = table.read()
        for name, value in filters.items():
            everything = everything.filter(everything[name] == value)
        assert rows(to_arrow(table.read(filters=filters))) == rows(to_arrow(everything)), filters
    assert rows(to_arrow(table.read(filters={"v": 15}).select("id"))) == [(("id", "k15"),)]

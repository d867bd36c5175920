"""Data-skipping reads: `Table.read(filters=...)` skips the base files whose column statistics (the
metadata table's column_stats, built by `build_data_skipping` and kept by each write) exclude the
value, and returns the rows a read of every file filtered the same way returns."""
from __future__ import annotations

import pytest
from helpers import make_table, rows

from tablespec.engine.commit import locked
from tablespec.engine.data_skipping import build
from tablespec.engine.filters import FilterError
from tablespec.engine.filters import conditions as conditions_of
from tablespec.engine.reader import pruned_view, snapshot_files, to_arrow
from tablespec.engine.schema import data_schema
from tablespec.hudi.mdt import column_stats

pytestmark = pytest.mark.spark

DDL = "id string, v int, f float, dt string"
COLUMNS = ("id", "v", "f", "dt")
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


def test_filters_skip_files_by_column_statistics(spark, warehouse):
    table = make_table(spark, warehouse, SPEC)
    for dt, values in (("d1", range(0, 10)), ("d2", range(10, 20))):
        table.write(spark.createDataFrame([(f"k{v}", v, 16777216.0 if v == 15 else float(v), dt) for v in values],
                                          DDL))
    with locked(table.table):
        build(spark, table.table, ["column_stats"], None)
    table.write(spark.createDataFrame([("k30", 30, 30.0, "d3"), ("k31", None, None, "d3"),
                                       ("k32", 32, float("-inf"), "d3")], DDL))

    def files(*conditions, **equal):
        return sorted(p.rsplit("/", 2)[-2].removeprefix("dt=")
                      for p in snapshot_files(table.table.refresh(), None, table.spec, list(conditions) or equal))

    assert files() == ["d1", "d2", "d3"]
    assert files(v=15) == ["d2"]                             # the other files' ranges exclude 15
    assert files(v=30) == ["d3"]                             # kept by the write after the build
    assert files(v=99) == [] and files(v=15, id="k1") == []
    assert files(id="k30") == ["d1", "d3"]                   # strings, as Hudi orders them: k10..k19 excludes it
    assert files(v="15") == ["d1", "d2", "d3"]               # a value of another type skips nothing
    assert files(f=16777217) == ["d2"]   # Spark compares it as float32, 16777216.0: d2's maximum (k15)
    assert files(f=-1e39) == ["d3"] and files(f=1e39) == []   # beyond float32: compared as doubles, as Spark does
    # Ranges: by the minimum and maximum; a float column's maximum leaves NaN out, so never by it.
    assert files(("v", "<", 10)) == ["d1"] and files(("v", ">=", 19)) == ["d2", "d3"]
    assert files(("v", "between", (5, 12))) == ["d1", "d2"] and files(("v", ">", 9), ("v", "<", 30)) == ["d2"]
    assert files(("v", "in", (3, 31, None))) == ["d1", "d3"] and files(("dt", "!=", "d1")) == ["d2", "d3"]
    assert files(("f", "<", 10.0000001)) == ["d1", "d2", "d3"]   # a double literal is not rounded to float32 (10.0)
    assert files(("f", ">", 20.0)) == ["d1", "d2", "d3"] and files(("f", "<=", -1e39)) == ["d3"]
    cases = [({"v": 15}, "v = 15"), ({"v": 30}, "v = 30"), ({"v": 99}, "v = 99"), ({"id": "k30"}, "id = 'k30'"),
             ({"dt": "d1", "v": 5}, "dt = 'd1' AND v = 5"), ({"f": 16777217}, "f = 16777217"),
             ({"f": -1e39}, "f = -1e39D"), ({"f": float("-inf")}, "f = CAST('-Infinity' AS DOUBLE)")]
    if warehouse.startswith("s3"):
        cases = cases[:1]
    else:
        cases += [([("v", ">", 9), ("v", "<", 30)], "v > 9 AND v < 30"), ([("v", "between", (5, 12))], "v BETWEEN 5 AND 12"),
                  ([("v", "in", (3, 31, None))], "v IN (3, 31, NULL)"), ([("dt", "!=", "d1")], "dt != 'd1'"),
                  ([("f", "<", 10.0000001)], "f < 10.0000001D"), ([("id", ">=", "k5")], "id >= 'k5'")]
    everything = table.read()
    for filters, condition in cases:
        assert rows(to_arrow(table.read(filters=filters))) == rows(to_arrow(everything.filter(condition))), filters
    assert rows(to_arrow(table.read(filters={"v": 15}).select("id"))) == [(("id", "k15"),)]
    for bad, message in (([("w", "<", 1)], "the table has no column 'w'"), ([("v", "~", 1)], "unknown op '~'"),
                         ([("v", "between", (1,))], r"`between` takes a \(low, high\) pair")):
        with pytest.raises(FilterError, match=message):
            table.read(filters=bad)


def test_partition_statistics_leave_ruled_out_partitions_unlisted(spark, tmp_path):
    table = make_table(spark, str(tmp_path), SPEC.replace("  location: ranges\n", "  location: ranges\n  tableVersion: 9\n"))
    table.write(spark.createDataFrame([(f"k{v}", v, float(v), "d1" if v < 10 else "d2") for v in range(20)], DDL))
    with locked(table.table):
        build(spark, table.table, ["column_stats", "partition_stats"], None)
    table.write(spark.createDataFrame([("k30", 30, 30.0, "d3"), ("k31", None, None, "d3")], DDL))   # kept by writes
    kinds = {f.name: column_stats.kind_of(f) for f in data_schema(table.spec)}

    def listed(*conditions, as_of=None):
        handle = table.table.refresh()
        return [p.removeprefix("dt=") for p in pruned_view(handle, as_of, conditions_of(list(conditions), COLUMNS), kinds).partitions]

    assert listed(("v", ">=", 25)) == ["d3"] and listed(("v", "between", (3, 12))) == ["d1", "d2"]
    assert listed(("dt", "=", "d2"), ("id", "<", "k2")) == ["d2"]     # k10..k19 only
    assert listed(("f", ">", 25.0)) == ["d1", "d2", "d3"]              # a float maximum rules nothing out
    first = table.table.timeline.commits()[0].timestamp
    assert listed(("v", ">=", 25), as_of=first) == ["d1", "d2", "d3"]  # the statistics are the latest snapshot's
    everything = table.read()
    for filters, condition in (([("v", ">=", 25)], "v >= 25"), ([("v", "<", 3)], "v < 3")):
        assert rows(to_arrow(table.read(filters=filters))) == rows(to_arrow(everything.filter(condition))), filters


def test_int_statistics_of_a_column_now_float_compare_as_its_values(spark, tmp_path):
    """A file written while `x` was an int keeps int bounds after `x` became a float; Spark reads its
    values as float32 (16777217 as 16777216.0), so the bounds are compared rounded the same way."""
    from test_engine_clustering import plan_for

    from tablespec.apply import Applier
    from tablespec.spec.loader import load_spec_text
    from tablespec.table import Table
    text = SPEC.replace("{name: f, type: float}", "{name: f, type: int}")
    table = make_table(spark, str(tmp_path), text)
    table.write(spark.createDataFrame([("k1", 1, 16777217, "d1")], "id string, v int, f int, dt string"))
    with locked(table.table):
        build(spark, table.table, ["column_stats"], None)
    plan = plan_for(SPEC, tmp_path)
    assert [a.kind for _, a in plan.actions] == ["schema_evolution"], plan.actions
    Applier(spark=spark).apply(plan)
    evolved = Table(load_spec_text(SPEC, "test.yaml").specs[0].spec, table.location, spark)
    everything = evolved.read()
    assert everything.filter("f = 16777217").count() == 1
    for filters, condition in (({"f": 16777217}, "f = 16777217"), ([("f", ">=", 16777217)], "f >= 16777217"),
                               ([("f", "<", 16777217)], "f < 16777217"), ({"f": 16777216.0}, "f = 16777216.0D")):
        assert rows(to_arrow(evolved.read(filters=filters))) == rows(to_arrow(everything.filter(condition))), filters

"""Tables partitioned by a formatted event time: written, imported, re-bucketed and clustered by tablespec."""
from __future__ import annotations

import os

import pytest
from helpers import assert_hudi_rs_agrees, make_table

from tablespec.apply import Applier
from tablespec.hudi.table import HudiTable, Location
from tablespec.importer import import_yaml
from tablespec.plan.builder import build_plan
from tablespec.show import show_text
from tablespec.spec.loader import load_spec_text
from tablespec.state import observe, observe_specs
from tablespec.table import Table

pytestmark = pytest.mark.spark

EVENTS = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: events}
spec:
  location: events
  columns:
    - {name: id, type: string, nullable: false}
    - {name: region, type: string}
    - {name: ts, type: long}
    - {name: v, type: int}
  recordKey: {fields: [id]}
  partitioning:
    fields: [ts]
    hiveStyle: false
    timestamp: {field: ts, input: epochMillis, outputFormat: yyyy/MM/dd, timeZone: UTC}
  orderingField: v
"""
CUSTOM = EVENTS.replace("fields: [ts]\n    hiveStyle: false", "fields: [region, ts]\n    hiveStyle: true") \
    .replace("outputFormat: yyyy/MM/dd, timeZone: UTC", "outputFormat: yyyyMMdd, timeZone: Asia/Kolkata")
DAY = 86_400_000
T0 = 1_700_000_000_123  # 2023-11-14 22:13:20 UTC, 2023-11-15 in Kolkata
SCHEMA = "id string, region string, ts long, v int"


def rows(n, v=1, start=0):
    return [(f"k{i}", "eu" if i % 2 else "us", T0 + (i % 3) * DAY, v) for i in range(start, start + n)]


def plan_for(text, warehouse):
    loaded = load_spec_text(text, "events.yaml")
    assert not loaded.errors, loaded.errors
    return build_plan(loaded.specs, observe_specs(loaded.specs, Location.parse(str(warehouse))), Location.parse(str(warehouse)))


def partitions(table):
    return sorted({r._hoodie_partition_path for r in table.read().select("_hoodie_partition_path").collect()})


def test_writes_partition_paths_like_timestamp_based_generator(spark, tmp_path):
    table = make_table(spark, tmp_path, EVENTS)
    table.write(spark.createDataFrame(rows(6), SCHEMA), "bulk_insert")
    table.write(spark.createDataFrame(rows(4, v=2, start=4) + [("null-ts", "eu", None, 1)], SCHEMA), "upsert")
    assert partitions(table) == ["1970/01/01", "2023/11/14", "2023/11/15", "2023/11/16"]
    assert os.path.isdir(os.path.join(table.location, "2023", "11", "14"))
    got = {r.id: (r.v, r._hoodie_partition_path) for r in table.read().collect()}
    assert got["k4"] == (2, "2023/11/15") and got["k0"] == (1, "2023/11/14") and len(got) == 9
    assert_hudi_rs_agrees(table)
    # import round-trips: the imported spec plans clean and names the transform
    text = import_yaml(observe(HudiTable.open(table.location)), Location.parse(str(tmp_path)))
    assert "timestamp: {field: ts, input: epochMillis, outputFormat: yyyy/MM/dd, timeZone: UTC}" in text
    assert not plan_for(text, tmp_path).has_changes
    assert "partitions  ts; ts formatted as yyyy/MM/dd in UTC from EPOCHMILLISECONDS" in show_text(observe(HudiTable.open(table.location)))


def test_custom_generator_table_buckets_and_clusters(spark, tmp_path):
    table = make_table(spark, tmp_path, CUSTOM)
    for c in range(3):
        table.write(spark.createDataFrame(rows(6, v=c, start=c * 2), SCHEMA), "upsert")
    assert partitions(table) == ["region=eu/ts=20231115", "region=eu/ts=20231116", "region=eu/ts=20231117",
                                 "region=us/ts=20231115", "region=us/ts=20231116", "region=us/ts=20231117"]
    before = sorted(tuple(r) for r in table.read().drop("_hoodie_file_name").collect())
    keys = {r._hoodie_record_key for r in table.read().collect()}
    assert "k0" in keys  # one key field: CustomKeyGenerator keys like SimpleKeyGenerator
    assert not plan_for(import_yaml(observe(HudiTable.open(table.location)), Location.parse(str(tmp_path))), tmp_path).has_changes
    bucketed = CUSTOM.replace("  orderingField: v\n", "  orderingField: v\n  index: {type: BUCKET, numBuckets: 2}\n")
    plan = plan_for(bucketed, tmp_path)
    assert [a.kind for _, a in plan.actions] == ["bucket_bootstrap"]
    Applier(spark=spark).apply(plan)
    assert not plan_for(bucketed, tmp_path).has_changes
    spec = load_spec_text(bucketed, "events.yaml").specs[0].spec
    moved = Table(spec, table.location, spark)
    assert sorted(tuple(r) for r in moved.read().drop("_hoodie_file_name").collect()) == before
    moved.write(spark.createDataFrame([("k0", "us", T0 + 5 * DAY, 9)], SCHEMA), "upsert")
    assert "region=us/ts=20231120" in partitions(moved)
    clustered = bucketed.replace("orderingField: v\n",
                                 "orderingField: v\n  clustering: {strategy: SORT, sortColumns: [v], everyNCommits: 1}\n")
    plan = plan_for(clustered, tmp_path)
    assert "clustering" in [a.kind for _, a in plan.actions]
    Applier(spark=spark).apply(plan)
    assert_hudi_rs_agrees(Table(load_spec_text(clustered, "e.yaml").specs[0].spec, table.location, spark))

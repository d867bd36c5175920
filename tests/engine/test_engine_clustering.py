"""Clustering through plan -> apply -> plan: stitching, SORT, ZORDER, HILBERT, bucket tables,
pending plans (tablespec's and Hudi's), refused writes, crashes."""
from __future__ import annotations

import datetime as dt
import io
import os
import subprocess
import sys
from decimal import Decimal

import fastavro
import numpy as np
import pyarrow.parquet as pq
import pytest

from _support import ORDERS_SPEC, ROOT
from helpers import assert_hudi_rs_agrees, make_table
from tablespec.apply import Applier
from tablespec.engine.writer import WriteRefused
from tablespec.hudi.clustering import REQUESTED_REPLACE_SCHEMA
from tablespec.hudi.fs_view import FileSystemView
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.timeline import Timeline
from tablespec.plan.builder import build_plan, table_location
from tablespec.spec.loader import load_spec_text, load_specs
from tablespec.state import observe
from tablespec.table import Table

pytestmark = pytest.mark.spark
SCHEMA = "order_id string, customer_id bigint, amount decimal(12,2), updated_at timestamp, order_date date"
T0 = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
UNPARTITIONED = "  partitioning: {fields: [order_date]}\n"


def spec_text(clustering: str, index: str = "{type: SIMPLE}", partitioned: bool = True) -> str:
    text = ORDERS_SPEC.replace("index: {type: BUCKET, numBuckets: 16}", f"index: {index}")
    if not partitioned:
        text = text.replace(UNPARTITIONED, "")
    return text + f"  clustering: {clustering}\n"


def batch(spark, start: int, n: int, days: int = 2):
    rows = [(f"o{i:05d}", (i * 7919) % 1000, Decimal(f"{i % 500}.25"), T0 + dt.timedelta(minutes=i),
             dt.date(2026, 11, 1 + i % days)) for i in range(start, start + n)]
    return spark.createDataFrame(rows, SCHEMA)


def content(table) -> list[tuple]:
    """Every row with its meta columns except the file name (which clustering changes)."""
    return sorted(tuple(r) for r in table.read().drop("_hoodie_file_name").collect())


def plan_for(text: str, warehouse):
    loaded = load_spec_text(text, "orders.yaml")
    assert not loaded.errors, loaded.errors
    loc = table_location(str(warehouse), loaded.specs[0].spec.spec.location)
    return build_plan(loaded.specs, {loc: observe(loc)}, str(warehouse))


def small_table(spark, warehouse, text: str, commits: int = 3, n: int = 40, operation: str = "bulk_insert"):
    table = make_table(spark, warehouse, text)
    for c in range(commits):
        table.write(batch(spark, c * n, n), operation)
    return table


def latest_files(location: str) -> list:
    storage = LocalStorage()
    return FileSystemView.build(storage, location, Timeline.load(storage, location)).latest_slices()


def cluster(spark, table, text: str, warehouse) -> dict:
    """plan -> apply -> plan: the plan proposes one clustering, and none after it ran."""
    plan = plan_for(text, warehouse)
    assert [a.kind for _, a in plan.actions] == ["clustering"], [a.kind for _, a in plan.actions]
    result = Applier(spark=spark).apply(plan)
    assert not plan_for(text, warehouse).has_changes
    return {"action": plan.actions[0][1], "actual": result.actions[0].actual}


def file_columns(location: str, columns: list[str]) -> list[dict]:
    return [pq.read_table(s.base_file.path, columns=columns).to_pydict() for s in latest_files(location)]


@pytest.mark.parametrize("partitioned", [True, False])
def test_stitching_merges_small_files_and_keeps_rows(spark, tmp_path, partitioned):
    text = spec_text("{everyNCommits: 3}", partitioned=partitioned)
    table = small_table(spark, tmp_path, text)
    before, files_before = content(table), len(latest_files(table.location))
    assert files_before == (6 if partitioned else 3)
    done = cluster(spark, table, text, tmp_path)
    assert done["action"].estimate["files"] == f"{files_before} -> {2 if partitioned else 1}"
    assert len(latest_files(table.location)) == (2 if partitioned else 1)
    assert content(table) == before
    assert assert_hudi_rs_agrees(table)
    timeline = Timeline.load(LocalStorage(), table.location)
    meta = timeline.read_metadata(timeline.last("replacecommit"))
    assert meta["operationType"] == "CLUSTER"
    assert sum(len(v) for v in meta["partitionToReplaceFileIds"].values()) == files_before
    assert observe(table.location).commits_since_clustering == 0


@pytest.mark.parametrize("partitioned", [True, False])
def test_sort_lays_files_out_by_the_sort_columns(spark, tmp_path, partitioned):
    text = spec_text("{strategy: SORT, sortColumns: [customer_id, amount], everyNCommits: 3, targetFileSize: 8KiB, "
                     "smallFileLimit: 7KiB}", partitioned=partitioned)
    table = small_table(spark, tmp_path, text)
    before = content(table)
    done = cluster(spark, table, text, tmp_path)
    assert done["actual"]["rows"] == 120
    assert content(table) == before
    assert_hudi_rs_agrees(table)
    files = file_columns(table.location, ["customer_id", "amount", "order_date"])
    assert len(files) > (2 if partitioned else 1)  # several output files per group
    by_partition: dict = {}
    for f in files:
        pairs = list(zip(f["customer_id"], f["amount"]))
        assert pairs == sorted(pairs)
        by_partition.setdefault(f["order_date"][0] if partitioned else None, []).append(pairs)
    for ranges in by_partition.values():  # the files of a group hold consecutive ranges
        ranges.sort()
        assert all(a[-1] <= b[0] for a, b in zip(ranges, ranges[1:]))


def test_requested_plan_is_hudi_avro_and_parses_back(spark, tmp_path):
    text = spec_text("{strategy: ZORDER, sortColumns: [customer_id, amount], everyNCommits: 2}")
    table = small_table(spark, tmp_path, text, commits=2)
    cluster(spark, table, text, tmp_path)
    timeline = Timeline.load(LocalStorage(), table.location)
    done = timeline.last("replacecommit")
    reader = fastavro.reader(io.BytesIO(timeline.read_bytes(done.to("requested"))), reader_schema=REQUESTED_REPLACE_SCHEMA)
    assert reader.writer_schema["name"] == "org.apache.hudi.avro.model.HoodieRequestedReplaceMetadata"
    record, = list(reader)
    plan = record["clusteringPlan"]
    assert record["operationType"] == "CLUSTER" and plan["preserveHoodieMetadata"] is True
    assert plan["strategy"]["strategyParams"] == {"hoodie.clustering.plan.strategy.sort.columns": "customer_id,amount",
                                                  "hoodie.layout.optimize.strategy": "z-order"}
    slices = [s for g in plan["inputGroups"] for s in g["slices"]]
    assert len(slices) == 4 and all(os.path.exists(s["dataFilePath"]) for s in slices)
    assert observe(table.location).last_clustering_layout.strategy == "ZORDER"

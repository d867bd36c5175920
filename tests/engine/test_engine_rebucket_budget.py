"""Bucket bootstrap and rescale split into bucket subsets (a task memory budget, idle cores): the
table written is the one a single task per partition writes."""
from __future__ import annotations

import datetime as dt
from collections import defaultdict
from decimal import Decimal

import pyarrow.parquet as pq
import pytest
from _support import ORDERS_SPEC, storage_and_base
from helpers import assert_hudi_rs_agrees, make_table
from test_engine_rebucket import SCHEMA, SIMPLE, T0, apply_spec, content
from test_engine_schema_evolution import NESTED, NESTED_EVOLVED
from test_engine_write import java_bucket

from tablespec.hudi.formats.naming import BaseFileName
from tablespec.hudi.io import join
from tablespec.hudi.timeline.active import Timeline
from tablespec.table import Table

pytestmark = pytest.mark.spark
FOUR = ORDERS_SPEC.replace("numBuckets: 16", "numBuckets: 4")


def load(spark, table, n=160, days=3):
    """Rows in three commits, so each partition has several base files."""
    rows = [(f"o{i:04d}", i, Decimal(f"{i}.25"), T0 + dt.timedelta(minutes=i), dt.date(2026, 11, 1 + i % days))
            for i in range(n)]
    for part in (rows[: n // 3], rows[n // 3: 2 * n // 3], rows[2 * n // 3:]):
        table.write(spark.createDataFrame(part, SCHEMA), "insert")


def bucket_files(table) -> dict[tuple[str, int], dict]:
    """(partition, bucket) -> its file's name parts and keys, from the rows as read."""
    out: dict[tuple[str, int], dict] = defaultdict(lambda: {"files": set(), "keys": set()})
    for r in table.read().select("_hoodie_record_key", "_hoodie_partition_path", "_hoodie_file_name").collect():
        entry = out[(r._hoodie_partition_path, int(r._hoodie_file_name[:8]))]
        entry["files"].add(BaseFileName.parse(r._hoodie_file_name))
        entry["keys"].add(r._hoodie_record_key)
    return dict(out)


def tasks_per_partition(files: dict) -> dict[str, int]:
    """How many Spark tasks wrote each partition's bucket files (the task is in the write token)."""
    tokens = defaultdict(set)
    for (partition, _), entry in files.items():
        tokens[partition] |= {f.write_token.split("-")[0] for f in entry["files"]}
    return {p: len(t) for p, t in tokens.items()}


def written_keys(table) -> dict[str, list[str]]:
    """Each rewritten partition's record keys in the files the last replacecommit wrote (readers
    would hide a second file of a file group, so the files are read themselves), duplicates kept."""
    storage, base = storage_and_base(table.location)
    timeline = Timeline.load(storage, base)
    stats = timeline.read_metadata(timeline.last("replacecommit"))["partitionToWriteStats"]
    assert len({s["fileId"] for ss in stats.values() for s in ss}) == sum(len(ss) for ss in stats.values())
    keys = defaultdict(list)
    for partition, ss in stats.items():
        for s in ss:
            with storage.open_whole_file(join(base, s["path"])) as f:
                keys[partition] += pq.read_table(f, columns=["_hoodie_record_key"]).column(0).to_pylist()
    return {p: sorted(k) for p, k in keys.items()}


def assert_layout(table, files: dict, buckets):
    for (partition, bucket), entry in files.items():
        assert len(entry["files"]) == 1  # one file per bucket
        assert {java_bucket(k, buckets(partition)) for k in entry["keys"]} == {bucket}
    written = written_keys(table)
    assert written == {p: sorted(k for (q, _), e in files.items() if q == p for k in e["keys"]) for p in written}
    assert table.verify().ok


@pytest.mark.parametrize("warehouse", ["local"], indirect=True)   # the split is storage-blind: S3 adds nothing
def test_bootstrap_split_by_memory_budget_writes_the_same_table(spark, tmp_path, warehouse, monkeypatch):
    whole, split = (make_table(spark, f"{warehouse}/{name}", SIMPLE) for name in ("whole", "split"))
    for table in (whole, split):
        load(spark, table)
    before = {t.location: content(t) for t in (whole, split)}

    _, _, spec = apply_spec(spark, FOUR, f"{warehouse}/whole")
    monkeypatch.setenv("TABLESPEC_TASK_MEMORY_BYTES", "1")  # every bucket its own task
    apply_spec(spark, FOUR, f"{warehouse}/split")

    whole, split = Table(spec, whole.location, spark), Table(spec, split.location, spark)
    # every row once, meta columns kept: a lost or duplicated row fails here
    assert all(content(t) == before[t.location] for t in (whole, split))
    whole_files, split_files = bucket_files(whole), bucket_files(split)
    assert {k: v["keys"] for k, v in split_files.items()} == {k: v["keys"] for k, v in whole_files.items()}
    assert len(split_files) == 12
    assert_layout(split, split_files, lambda p: 4)
    assert_layout(whole, whole_files, lambda p: 4)
    assert set(tasks_per_partition(whole_files).values()) == {1}  # 3 partitions fill 2 cores
    assert set(tasks_per_partition(split_files).values()) == {4}
    assert_hudi_rs_agrees(split)


def test_rescale_of_one_partition_spreads_over_idle_cores(spark, tmp_path):
    table = make_table(spark, tmp_path, FOUR)
    load(spark, table, days=2)
    before = content(table)
    rule = FOUR.replace("numBuckets: 4}", "numBuckets: 4, partitionBuckets: [{pattern: 'order_date=2026-11-02', "
                                          "numBuckets: 8}]}")
    _, _, spec = apply_spec(spark, rule, tmp_path)
    rescaled = Table(spec, table.location, spark)
    assert content(rescaled) == before
    files = bucket_files(rescaled)
    assert_layout(rescaled, files, lambda p: 8 if p == "order_date=2026-11-02" else 4)
    assert tasks_per_partition(files)["order_date=2026-11-02"] == spark.sparkContext.defaultParallelism == 2


def test_split_bootstrap_casts_files_written_before_a_schema_evolution(spark, tmp_path, monkeypatch):
    old = SIMPLE.replace("{name: customer_id, type: long}", "{name: customer_id, type: int}")
    evolved = SIMPLE.replace("    - {name: order_date, type: date}\n",
                             "    - {name: order_date, type: date}\n    - {name: note, type: string}\n")
    table = make_table(spark, tmp_path, old)
    rows = [(f"o{i:03d}", i, Decimal(f"{i}.25"), T0, dt.date(2026, 11, 1 + i % 2)) for i in range(40)]
    table.write(spark.createDataFrame(rows, SCHEMA.replace("customer_id bigint", "customer_id int")), "insert")
    _, _, spec = apply_spec(spark, evolved, tmp_path)  # int -> long, a new column: no file rewritten
    table = Table(spec, table.location, spark)
    table.write(spark.createDataFrame([("n1", 2 ** 40, Decimal("1.00"), T0, dt.date(2026, 11, 3), "new")],
                                      SCHEMA + ", note string"), "insert")
    before = content(table)

    monkeypatch.setenv("TABLESPEC_TASK_MEMORY_BYTES", "1")
    _, _, spec = apply_spec(spark, evolved.replace("index: {type: SIMPLE}", "index: {type: BUCKET, numBuckets: 4}"),
                            tmp_path)
    bucketed = Table(spec, table.location, spark)
    assert content(bucketed) == before
    files = bucket_files(bucketed)
    assert_layout(bucketed, files, lambda p: 4)
    assert_hudi_rs_agrees(bucketed)


def test_split_bootstrap_of_an_unpartitioned_table_with_nested_columns_widened(spark, tmp_path, monkeypatch):
    table = make_table(spark, tmp_path, NESTED)
    table.write(spark.createDataFrame(
        [(f"x{i}", 2 ** 53 + i, 16777217, (i,), [i, 2], {"k": i}) for i in range(12)] + [("y", None, None, None, None, None)],
        "id string, total long, ratio int, info struct<a:int>, tags array<int>, attrs map<string,int>"), "upsert")
    _, _, spec = apply_spec(spark, NESTED_EVOLVED, tmp_path)  # files keep the old types
    before = content(Table(spec, table.location, spark))

    monkeypatch.setenv("TABLESPEC_TASK_MEMORY_BYTES", "1")
    _, _, spec = apply_spec(spark, NESTED_EVOLVED.replace("{type: SIMPLE}", "{type: BUCKET, numBuckets: 3}"), tmp_path)
    bucketed = Table(spec, table.location, spark)
    assert content(bucketed) == before
    files = bucket_files(bucketed)
    assert_layout(bucketed, files, lambda p: 3)
    assert tasks_per_partition(files) == {"": 3}
    assert_hudi_rs_agrees(bucketed)

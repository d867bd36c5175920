"""Writes against real Hudi tables, concurrent writers and crashed writers."""
from __future__ import annotations

import os

import pytest
from _support import storage_and_base
from helpers import assert_hudi_rs_agrees, hudi_rs_rows, make_table

from tablespec.hudi.io import join
from tablespec.hudi.table import HudiTable, Location
from tablespec.hudi.timeline.active import Timeline, TimelineWriter
from tablespec.hudi.timeline.instant import new_instant_time
from tablespec.hudi.timeline.lock import LockTimeoutError, TableLock
from tablespec.importer import spec_document
from tablespec.spec.model import TableSpec
from tablespec.state import observe
from tablespec.table import Table

pytestmark = pytest.mark.spark

SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: items}
spec:
  location: items
  columns:
    - {name: id, type: string, nullable: false}
    - {name: qty, type: int}
  recordKey: {fields: [id]}
  index: {type: BUCKET, numBuckets: 2}
"""


@pytest.mark.parametrize("name", ["cow_v6_simplekeygen_nonhivestyle", "cow_v6_complexkeygen_hivestyle",
                                  "cow_v6_nonpartitioned"])
def test_upsert_into_real_hudi_table(spark, real_table, name):
    base = real_table(name)
    spec = TableSpec.model_validate(spec_document(observe(HudiTable.open(str(base))), Location.parse(str(base.parent))))
    table = Table(spec, str(base), spark)
    before = table.read()
    assert sorted(hudi_rs_rows(str(base))) == sorted(assert_hudi_rs_agrees(table))
    data_cols = [c.name for c in spec.spec.columns]
    first = before.orderBy("_hoodie_record_key").limit(1)
    changed = first.select(*[("longField" if c == "longField" else c) for c in data_cols]) \
        .withColumn("longField", first["longField"] + 1000).withColumn("name", first["name"])
    import pyspark.sql.functions as F
    changed = changed.withColumn("intField", F.lit(424242))
    result = table.write(changed, "upsert")
    assert result.updated == 1 and result.inserted == 0
    after = {r._hoodie_record_key: r for r in table.read().collect()}
    key = first.collect()[0]._hoodie_record_key
    assert after[key].intField == 424242 and after[key]._hoodie_commit_time == result.instant
    assert len(after) == before.count()
    assert_hudi_rs_agrees(table)


def test_second_writer_waits_then_fails_naming_holder(spark, warehouse):
    table = make_table(spark, warehouse, SPEC)
    df = spark.createDataFrame([("a", 1)], "id string, qty int")
    holder = TableLock(*storage_and_base(table.location), owner="nightly-backfill")
    holder.acquire()
    try:
        with pytest.raises(LockTimeoutError, match="nightly-backfill"):
            table.write(df, "upsert", lock_timeout=0.5)
    finally:
        holder.release()
    assert table.write(df, "upsert").inserted == 1


def test_crashed_write_is_rolled_back_by_next_writer(spark, warehouse):
    table = make_table(spark, warehouse, SPEC)
    table.write(spark.createDataFrame([("a", 1), ("b", 2)], "id string, qty int"), "upsert")
    # a writer that died mid-write: inflight instant, a data file, no heartbeat
    storage, base = storage_and_base(table.location)
    writer = TimelineWriter(storage, base)
    ts = new_instant_time(after=Timeline.load(storage, base).instants[-1].timestamp)
    writer.start(writer.request("commit", ts))
    orphan = join(base, f"00000000-aaaa-bbbb-cccc-dddddddddddd-0_0-1-1_{ts}.parquet")
    storage.write_bytes(orphan, b"partial")
    assert storage.exists(orphan)
    assert sorted(r.id for r in table.read().collect()) == ["a", "b"]  # readers ignore the inflight
    result = table.write(spark.createDataFrame([("c", 3)], "id string, qty int"), "upsert", heartbeat_tolerance=0)
    assert not storage.exists(orphan)
    timeline = Timeline.load(storage, base)
    assert not timeline.pending() and any(i.action == "rollback" for i in timeline.completed())
    assert result.inserted == 1 and sorted(r.id for r in table.read().collect()) == ["a", "b", "c"]
    assert_hudi_rs_agrees(table)


def upsert_on_separate_executors(spark, warehouse: str) -> None:
    """An upsert on separate executor JVMs (test_engine_local_cluster.py): nothing depends on driver-local state."""
    table = make_table(spark, warehouse, SPEC)
    df = spark.range(0, 400, numPartitions=4).selectExpr("concat('k', id) as id", "cast(id as int) as qty")
    assert table.write(df, "upsert").inserted == 400
    r = table.write(df.filter("qty < 100").selectExpr("id", "qty + 1 as qty"), "upsert")
    assert (r.inserted, r.updated) == (0, 100), r
    assert table.read().count() == 400 and table.read().filter("qty = 100").count() == 2
    assert_hudi_rs_agrees(table)


def test_bloom_index_on_real_table_uses_its_bloom_filters(spark, real_table):
    """A Hudi-written table moved to BLOOM (configuration only): upserts find keys through the
    footers' key ranges and bloom filters, and hudi-rs agrees."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import pyspark.sql.functions as F

    from tablespec.actions.metadata import update_settings
    from tablespec.engine import tasks

    base = real_table("cow_v6_simplekeygen_nonhivestyle")
    doc = spec_document(observe(HudiTable.open(str(base))), Location.parse(str(base.parent)))
    doc["spec"]["index"] = {"type": "BLOOM"}
    spec = TableSpec.model_validate(doc)
    update_settings(HudiTable.open(str(base)), spec)
    table = Table(spec, str(base), spark)
    files = [os.path.join(base, p, f) for p in ("10", "20", "30") for f in os.listdir(base / p) if f.endswith(".parquet")]
    footers, bloom_checked = {}, 0
    for f in files:  # a file's own keys pass its key range and bloom filter; absent keys fail one or the other
        own = pq.read_table(f, columns=["_hoodie_record_key"]).column(0).combine_chunks()
        assert tasks.may_hold(f, own, footers) and tasks.may_hold(f, own.slice(len(own) - 1), footers)
        assert not tasks.may_hold(f, pa.array(["~~~ beyond every key"]), footers)
        keys = sorted(own.to_pylist())
        if len(keys) > 1:  # within the key range, absent: only the bloom filter rejects it
            inside = keys[0] + "\x01"
            assert inside not in keys and inside < keys[-1]
            assert not tasks.may_hold(f, pa.array([inside]), footers)
            bloom_checked += 1
    assert bloom_checked
    first = table.read().orderBy("_hoodie_record_key").limit(1)
    data_cols = [c.name for c in spec.spec.columns]
    changed = first.select(*data_cols).withColumn("longField", F.col("longField") + 1).withColumn("intField", F.lit(7))
    result = table.write(changed, "upsert")
    assert (result.updated, result.inserted) == (1, 0)
    assert_hudi_rs_agrees(table)

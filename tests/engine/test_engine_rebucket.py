"""Bucket bootstrap and rescale through plan -> apply -> plan, with crashes at every step."""
from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from decimal import Decimal

import pytest
from _support import ORDERS_SPEC, ROOT, SHORT_LIVED_JVM
from helpers import assert_hudi_rs_agrees, make_table
from test_engine_write import java_bucket

from tablespec.apply import Applier
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.table import HudiTable, Location
from tablespec.hudi.timeline.active import Timeline
from tablespec.plan.builder import build_plan
from tablespec.spec.loader import load_spec_text, load_specs
from tablespec.state import observe, observe_specs
from tablespec.table import Table

pytestmark = pytest.mark.spark
SIMPLE = ORDERS_SPEC.replace("index: {type: BUCKET, numBuckets: 16}", "index: {type: SIMPLE}")
SCHEMA = "order_id string, customer_id bigint, amount decimal(12,2), updated_at timestamp, order_date date"
T0 = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


def load_orders(spark, table, n=120, days=3):
    rows = [(f"o{i:04d}", i, Decimal(f"{i}.50"), T0 + dt.timedelta(minutes=i), dt.date(2026, 11, 1 + i % days))
            for i in range(n)]
    table.write(spark.createDataFrame(rows[: n // 2], SCHEMA), "insert")
    table.write(spark.createDataFrame(rows[n // 2:], SCHEMA), "insert")


def content(table) -> list[tuple]:
    """Every row with its meta columns except the file name (which a rewrite changes)."""
    df = table.read().drop("_hoodie_file_name")
    return sorted(tuple(r) for r in df.collect())


def plan_for(text: str, warehouse, file="orders.yaml"):
    loaded = load_spec_text(text, file)
    assert not loaded.errors, loaded.errors
    root = Location.parse(str(warehouse))
    return build_plan(loaded.specs, observe_specs(loaded.specs, root), root), loaded.specs[0].spec


def apply_spec(spark, text, warehouse):
    plan, spec = plan_for(text, warehouse)
    result = Applier(spark=spark).apply(plan)
    after, _ = plan_for(text, warehouse)
    assert not after.has_changes, [a.kind for _, a in after.actions]
    return plan, result, spec


def assert_bucketed(table, layout):
    for r in table.read().select("_hoodie_record_key", "_hoodie_partition_path", "_hoodie_file_name").collect():
        assert int(r._hoodie_file_name[:8]) == java_bucket(r._hoodie_record_key, layout(r._hoodie_partition_path))


def test_bucket_bootstrap_preserves_rows_and_meta(spark, tmp_path):
    table = make_table(spark, tmp_path, SIMPLE)
    load_orders(spark, table)
    before = content(table)
    target = ORDERS_SPEC.replace("numBuckets: 16", "numBuckets: 4")
    plan, result, spec = apply_spec(spark, target, tmp_path)
    (t, action), = plan.actions
    assert action.kind == "bucket_bootstrap"
    assert action.estimate.partitions == 3 and action.estimate.file_groups.endswith("-> 12")
    assert result.actions[0].actual.partitions == 3
    bucketed = Table(spec, table.location, spark)
    assert content(bucketed) == before
    assert_bucketed(bucketed, lambda p: 4)
    assert_hudi_rs_agrees(bucketed)
    timeline = Timeline.load(LocalStorage(), table.location)
    replace = timeline.read_metadata(timeline.last("replacecommit"))
    assert sum(len(v) for v in replace["partitionToReplaceFileIds"].values()) == 3
    # the bucket writer takes over: an upsert lands in the right buckets
    r = bucketed.write(spark.createDataFrame([("o0001", 1, Decimal("9.99"), T0 + dt.timedelta(days=9),
                                                 dt.date(2026, 11, 2))], SCHEMA), "upsert")
    assert r.updated == 1
    assert_hudi_rs_agrees(bucketed)


def test_bucket_rescale_only_partitions_whose_count_changes(spark, tmp_path):
    four = ORDERS_SPEC.replace("numBuckets: 16", "numBuckets: 4")
    table = make_table(spark, tmp_path, four)
    load_orders(spark, table)
    before = content(table)
    untouched = {fg.file_id for fg in observe(HudiTable.open(table.location)).file_groups if fg.partition != "order_date=2026-11-02"}
    rule = four.replace("numBuckets: 4}", "numBuckets: 4, partitionBuckets: [{pattern: 'order_date=2026-11-02', numBuckets: 8}]}")
    plan, result, spec = apply_spec(spark, rule, tmp_path)
    (t, action), = plan.actions
    assert action.kind == "bucket_rescale" and action.params.partitions == ["order_date=2026-11-02"]
    rescaled = Table(spec, table.location, spark)
    assert content(rescaled) == before
    assert untouched <= {fg.file_id for fg in observe(HudiTable.open(table.location)).file_groups}
    assert_bucketed(rescaled, lambda p: 8 if p == "order_date=2026-11-02" else 4)
    assert_hudi_rs_agrees(rescaled)
    # writers follow the per-partition counts
    rescaled.write(spark.createDataFrame([("new-1", 1, Decimal("1.00"), T0, dt.date(2026, 11, 2))], SCHEMA), "upsert")
    assert_bucketed(rescaled, lambda p: 8 if p == "order_date=2026-11-02" else 4)


def test_real_fixture_moved_to_bucket_index(spark, real_table, tmp_path):
    from tablespec.importer import import_yaml
    base = real_table("cow_v6_simplekeygen_nonhivestyle")
    text = import_yaml(observe(HudiTable.open(str(base))), Location.parse(str(base.parent)))
    original = Table(load_spec_text(text, "f.yaml").specs[0].spec, str(base), spark)
    before = content(original)
    target = text.replace("{type: SIMPLE}", "{type: BUCKET, numBuckets: 2, hashFields: [id]}")
    plan, result, spec = apply_spec(spark, target, base.parent)
    # written by Hudi with its metadata table off: built first, then kept by the bootstrap
    assert [a.kind for _, a in plan.actions] == ["build_metadata_table", "bucket_bootstrap"]
    from tablespec.hudi.io import LocalStorage
    from tablespec.hudi.mdt import reader, writer
    assert reader.listing(HudiTable.open(str(base))).files == writer.list_data_files(LocalStorage(), str(base))
    moved = Table(spec, str(base), spark)
    assert content(moved) == before
    assert_hudi_rs_agrees(moved)


@pytest.mark.parametrize("point, warehouse", [
    (p, "local") for p in ("before_requested", "mid_write", "after_data_files", "before_completion")],
    indirect=["warehouse"])   # on S3: test_engine_object_storage.py::test_killed_apply_is_rolled_back_and_redone
def test_bootstrap_killed_at_any_point_recovers(spark, tmp_path, warehouse, monkeypatch, point):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "orders.yaml").write_text(SIMPLE)
    table = make_table(spark, warehouse, SIMPLE)
    load_orders(spark, table, n=90, days=3)
    before = content(table)
    (specs / "orders.yaml").write_text(ORDERS_SPEC.replace("numBuckets: 16", "numBuckets: 4"))
    env = {**os.environ, "TABLESPEC_CRASH_AT": point, "TABLESPEC_REWRITE_BATCH_BYTES": "1",
           "PYTHONPATH": str(ROOT), "TABLESPEC_SPARK_MASTER": "local[1]", **SHORT_LIVED_JVM}
    proc = subprocess.run([sys.executable, "-m", "tablespec.cli", "apply", str(specs), "--warehouse",
                           warehouse, "--auto-approve"], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == -9, proc.stdout[-2000:] + proc.stderr[-2000:]
    # readers see the table as before the crash (tablespec and hudi-rs)
    assert content(table) == before
    assert_hudi_rs_agrees(table)
    # the next apply rolls back the dead instant and converges
    monkeypatch.setenv("TABLESPEC_HEARTBEAT_TOLERANCE", "0")
    loaded = load_specs([str(specs)])
    loc = table.location
    plan = build_plan(loaded.specs, {loc: observe(HudiTable.open(loc))}, Location.parse(warehouse))
    Applier(spark=spark).apply(plan)
    after = build_plan(loaded.specs, {loc: observe(HudiTable.open(loc))}, Location.parse(warehouse))
    assert not after.has_changes
    spec = loaded.specs[0].spec
    recovered = Table(spec, loc, spark)
    assert content(recovered) == before
    assert not HudiTable.open(loc).timeline.pending()
    assert_hudi_rs_agrees(recovered)
    assert_bucketed(recovered, lambda p: 4)


def test_plan_proposes_rollback_of_dead_write_and_apply_runs_it(spark, tmp_path, monkeypatch):
    from tablespec.hudi.timeline.active import TimelineWriter
    from tablespec.hudi.timeline.instant import new_instant_time
    table = make_table(spark, tmp_path, ORDERS_SPEC)
    load_orders(spark, table, n=20, days=2)
    before = content(table)
    storage = LocalStorage()
    writer = TimelineWriter(storage, table.location)
    ts = new_instant_time(after=Timeline.load(storage, table.location).instants[-1].timestamp)
    writer.start(writer.request("commit", ts))
    from tablespec.hudi.timeline.heartbeat import heartbeat_path
    storage.touch(heartbeat_path(table.location, ts))  # its writer beat a moment ago, then died
    plan, _ = plan_for(ORDERS_SPEC, tmp_path)
    assert not plan.has_changes and "pending instants" in plan.tables[0].warnings[0]  # heartbeat not yet expired
    monkeypatch.setenv("TABLESPEC_HEARTBEAT_TOLERANCE", "0")
    plan, _ = plan_for(ORDERS_SPEC, tmp_path)
    assert [(a.kind, a.params.instants) for _, a in plan.actions] == [("rollback", [ts])]
    Applier(spark=spark).apply(plan)
    assert not plan_for(ORDERS_SPEC, tmp_path)[0].has_changes
    assert not Timeline.load(storage, table.location).pending()
    assert content(table) == before


def test_bucket_to_simple_is_configuration_only_and_writes_continue(spark, tmp_path):
    table = make_table(spark, tmp_path, ORDERS_SPEC.replace("numBuckets: 16", "numBuckets: 4"))
    load_orders(spark, table, n=40, days=2)
    before = content(table)
    files = {fg.file_id for fg in observe(HudiTable.open(table.location)).file_groups}
    plan, result, spec = apply_spec(spark, SIMPLE, tmp_path)
    assert [a.kind for _, a in plan.actions] == ["index_migration"]
    simple = Table(spec, table.location, spark)
    assert content(simple) == before and {fg.file_id for fg in observe(HudiTable.open(table.location)).file_groups} == files
    r = simple.write(spark.createDataFrame([("o0003", 3, Decimal("7.00"), T0 + dt.timedelta(days=3),
                                             dt.date(2026, 11, 2))], SCHEMA), "upsert")
    assert r.updated == 1
    assert_hudi_rs_agrees(simple)


def test_clean_planned_with_bytes_and_applied(spark, tmp_path):
    keep2 = ORDERS_SPEC.replace("numBuckets: 16}", "numBuckets: 2}\n  retention: {keepCommits: 2}")
    table = make_table(spark, tmp_path, keep2)
    for i in range(5):  # five commits rewriting the same file group: the first two slices go, the third is
        # the newest before the earliest retained commit (Hudi keeps it)
        table.write(spark.createDataFrame([("o1", i, Decimal(f"{i}.00"), T0 + dt.timedelta(hours=i),
                                            dt.date(2026, 11, 1))], SCHEMA), "upsert")
    commits = [i.timestamp for i in Timeline.load(LocalStorage(), table.location).commits()]
    before = content(table)
    plan, _ = plan_for(keep2, tmp_path)
    (t, action), = plan.actions
    assert action.kind == "clean" and action.estimate.files == 2 and action.estimate.bytes_to_free > 0
    result = Applier(spark=spark).apply(plan)
    assert result.actions[0].actual.files == 2
    assert not plan_for(keep2, tmp_path)[0].has_changes
    assert content(table) == before
    assert_hudi_rs_agrees(table)
    assert table.read(as_of=commits[-2]).count() == 1  # within retention
    from tablespec.engine.reader import ReadError
    with pytest.raises(ReadError, match="cleaned"):
        table.read(as_of=commits[0])


def test_read_filter_prunes_with_per_partition_bucket_counts(spark, tmp_path):
    from tablespec.engine.reader import snapshot_files
    rule = ORDERS_SPEC.replace("numBuckets: 16}", "numBuckets: 4, partitionBuckets: [{pattern: 'order_date=2026-11-02', numBuckets: 8}]}")
    table = make_table(spark, tmp_path, rule)
    load_orders(spark, table, n=60, days=2)
    for key in ("o0001", "o0002", "o0010"):
        files = snapshot_files(table.table, spec=table.spec, filters={"order_id": key})
        assert len(files) == 2  # one bucket file per partition
        assert [r.order_id for r in table.read(filters={"order_id": key}).collect()] == [key]


def test_replace_table_rekeys_and_repartitions_with_allow_destructive(spark, tmp_path):
    table = make_table(spark, tmp_path, SIMPLE)
    load_orders(spark, table, n=30, days=3)
    data_before = sorted(tuple(r) for r in table.read().select("order_id", "customer_id", "amount").collect())
    target = (SIMPLE.replace("recordKey: {fields: [order_id]}", "recordKey: {fields: [order_id, customer_id]}")
              .replace("partitioning: {fields: [order_date]}", "partitioning: {fields: [customer_id]}")
              .replace("    - {name: updated_at, type: timestamp}\n", "    - {name: updated_at, type: timestamp}\n"
                       "    - {name: note, type: string}\n"))
    plan, spec = plan_for(target, tmp_path)
    (t, action), = plan.actions
    assert action.kind == "replace_table" and action.destructive
    from tablespec.errors import PlanError
    with pytest.raises(PlanError, match="--allow-destructive"):
        Applier(spark=spark).apply(plan)
    result = Applier(spark=spark).apply(plan, allow_destructive=True)
    assert result.actions[0].actual.rows == 30
    assert not plan_for(target, tmp_path)[0].has_changes
    replaced = Table(spec, table.location, spark)
    rows = replaced.read().collect()
    assert sorted((r.order_id, r.customer_id, r.amount) for r in rows) == data_before
    assert all(r._hoodie_record_key == f"order_id:{r.order_id},customer_id:{r.customer_id}" for r in rows)
    assert all(r._hoodie_partition_path == f"customer_id={r.customer_id}" for r in rows)
    assert all(r.note is None for r in rows)
    assert_hudi_rs_agrees(replaced)

"""Clustering through plan -> apply -> plan: stitching, SORT, ZORDER, HILBERT, bucket tables,
pending plans (tablespec's and Hudi's), refused writes, crashes."""
from __future__ import annotations

import datetime as dt
import io
import json
import os
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import fastavro
import numpy as np
import pyarrow.parquet as pq
import pytest
from _support import ORDERS_SPEC, ROOT, SHORT_LIVED_JVM, storage_and_base
from helpers import assert_hudi_rs_agrees, hudi_rs_table, make_table

from tablespec.apply import Applier
from tablespec.engine.writer import WriteRefused
from tablespec.hudi.formats.naming import BaseFileName
from tablespec.hudi.fs_view import FileSystemView
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.services.clustering import REQUESTED_REPLACE_SCHEMA
from tablespec.hudi.table import HudiTable, Location
from tablespec.hudi.timeline.active import Timeline
from tablespec.plan.builder import build_plan
from tablespec.spec.loader import load_spec_text, load_specs
from tablespec.state import observe, observe_specs
from tablespec.table import Table

pytestmark = pytest.mark.spark
SCHEMA = "order_id string, customer_id bigint, amount decimal(12,2), updated_at timestamp, order_date date"
T0 = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
UNPARTITIONED = "  partitioning: {fields: [order_date]}\n"


def spec_text(clustering: str, index: str = "{type: SIMPLE}", partitioned: bool = True) -> str:
    text = ORDERS_SPEC.replace("index: {type: BUCKET, numBuckets: 16}", f"index: {index}")
    if not partitioned:
        text = text.replace(UNPARTITIONED, "")
    return text + f"  clustering: {clustering}\n"


def batch(spark, start: int, n: int, days: int = 2):
    rows = [(f"o{i:05d}", (i * 7919) % 1000, Decimal(f"{(i * 6007) % 997}.25"), T0 + dt.timedelta(minutes=i),
             dt.date(2026, 11, 1 + i % days)) for i in range(start, start + n)]
    # One input split: a bulk_insert writes one small file per partition it touches (one per task otherwise).
    return spark.createDataFrame(rows, SCHEMA).coalesce(1)


def content(table) -> list[tuple]:
    """Every row with its meta columns except the file name (which clustering changes)."""
    return sorted(tuple(r) for r in table.read().drop("_hoodie_file_name").collect())


def plan_for(text: str, warehouse):
    loaded = load_spec_text(text, "orders.yaml")
    assert not loaded.errors, loaded.errors
    return build_plan(loaded.specs, observe_specs(loaded.specs, Location.parse(str(warehouse))), Location.parse(str(warehouse)))


def small_table(spark, warehouse, text: str, commits: int = 3, n: int = 40, operation: str = "bulk_insert"):
    table = make_table(spark, warehouse, text)
    for c in range(commits):
        table.write(batch(spark, c * n, n), operation)
    return table


def latest_files(location: str) -> list:
    storage, base = storage_and_base(location)
    return FileSystemView.build(storage, base, Timeline.load(storage, base)).latest_slices()


def cluster(spark, table, text: str, warehouse) -> dict:
    """plan -> apply -> plan: the plan proposes one clustering, and none after it ran."""
    plan = plan_for(text, warehouse)
    assert [a.kind for _, a in plan.actions] == ["clustering"], [a.kind for _, a in plan.actions]
    result = Applier(spark=spark).apply(plan)
    assert not plan_for(text, warehouse).has_changes
    return {"action": plan.actions[0][1], "actual": result.actions[0].actual}


def file_columns(location: str, columns: list[str]) -> list[dict]:
    return [pq.read_table(s.base_file.path, columns=columns).to_pydict() for s in latest_files(location)]


# a clustering run on S3 (its replacecommit, the rows kept, hudi-rs agreeing):
# test_clustering_killed_mid_execution_reruns_its_plan[mid_write-s3]; time travel on S3 with
# hudi-rs: test_engine_object_storage.py::test_every_action_and_read[s3]
@pytest.mark.parametrize("partitioned, warehouse", [(True, "local"), (False, "local")], indirect=["warehouse"])
def test_stitching_merges_small_files_and_keeps_rows(spark, warehouse, partitioned):
    text = spec_text("{everyNCommits: 3}", partitioned=partitioned)
    table = small_table(spark, warehouse, text)
    storage, base = storage_and_base(table.location)
    before, files_before = content(table), len(latest_files(table.location))
    assert files_before == (6 if partitioned else 3)
    last_write = Timeline.load(storage, base).commits()[-1].timestamp
    done = cluster(spark, table, text, warehouse)
    # time travel to before the clustering reads the replaced files, through tablespec and hudi-rs
    assert sorted(tuple(r) for r in table.read(as_of=last_write).drop("_hoodie_file_name").collect()) == before
    import hudi
    old = hudi_rs_table(table.location).read(hudi.HudiReadOptions().with_as_of_timestamp(last_write))
    assert sum(b.num_rows for b in old) == len(before)
    assert {f for b in old for f in b.column("_hoodie_file_name").to_pylist()} == {
        s.base_file.name for s in FileSystemView.build(storage, base, Timeline.load(
            storage, base)).latest_slices(as_of=last_write)}
    assert done["action"].estimate.files == f"{files_before} -> {2 if partitioned else 1}"
    assert len(latest_files(table.location)) == (2 if partitioned else 1)
    assert content(table) == before
    assert assert_hudi_rs_agrees(table)
    timeline = Timeline.load(storage, base)
    meta = timeline.read_metadata(timeline.last("replacecommit"))
    assert meta["operationType"] == "CLUSTER"
    assert sum(len(v) for v in meta["partitionToReplaceFileIds"].values()) == files_before
    assert observe(HudiTable.open(table.location)).commits_since_clustering == 0


@pytest.mark.parametrize("partitioned", [True, False])
def test_sort_lays_files_out_by_the_sort_columns(spark, tmp_path, partitioned):
    text = spec_text("{strategy: SORT, sortColumns: [customer_id, amount], everyNCommits: 3, targetFileSize: 8KiB, "
                     "smallFileLimit: 7KiB}", partitioned=partitioned)
    table = small_table(spark, tmp_path, text)
    before = content(table)
    done = cluster(spark, table, text, tmp_path)
    assert done["actual"].rows == 120
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
    assert observe(HudiTable.open(table.location)).last_clustering_layout.strategy == "ZORDER"


def _spread(files: list[dict]) -> float:
    """Mean over files of the area of the (customer_id, amount) box each file's rows span."""
    return float(np.mean([(max(f["customer_id"]) - min(f["customer_id"])) * float(max(f["amount"]) - min(f["amount"]))
                          for f in files]))


@pytest.mark.parametrize("strategy", ["ZORDER", "HILBERT"])
def test_curve_layouts_tighten_per_file_ranges(spark, tmp_path, strategy):
    text = spec_text(f"{{strategy: {strategy}, sortColumns: [customer_id, amount], everyNCommits: 8, "
                     "targetFileSize: 6KiB, smallFileLimit: 5KiB}", partitioned=False)
    table = small_table(spark, tmp_path, text, commits=8, n=30)
    before, spread_before = content(table), _spread(file_columns(table.location, ["customer_id", "amount"]))
    done = cluster(spark, table, text, tmp_path)
    files = file_columns(table.location, ["customer_id", "amount"])
    assert len(files) >= 5 and done["action"].estimate.strategy == f"{strategy}(customer_id, amount)"
    assert _spread(files) < spread_before / 2
    assert content(table) == before
    assert_hudi_rs_agrees(table)


def test_bucket_table_sorts_within_each_bucket(spark, tmp_path):
    text = spec_text("{strategy: SORT, sortColumns: [customer_id], everyNCommits: 3}",
                     index="{type: BUCKET, numBuckets: 2}")
    table = small_table(spark, tmp_path, text, operation="upsert")
    before = content(table)
    groups_before = {(fg.partition, fg.bucket) for fg in observe(HudiTable.open(table.location)).file_groups}
    cluster(spark, table, text, tmp_path)
    after = observe(HudiTable.open(table.location)).file_groups
    assert {(fg.partition, fg.bucket) for fg in after} == groups_before and len(after) == len(groups_before)
    for f in file_columns(table.location, ["customer_id"]):
        assert f["customer_id"] == sorted(f["customer_id"])
    assert content(table) == before
    assert_hudi_rs_agrees(table)
    # the bucket writer finds the new file groups by their bucket numbers
    spec = load_spec_text(text, "orders.yaml").specs[0].spec
    r = Table(spec, table.location, spark).write(batch(spark, 0, 5), "upsert")
    assert r.updated == 5 and r.inserted == 0
    assert_hudi_rs_agrees(table)


def test_write_to_file_group_under_pending_plan_is_refused_until_it_ran(spark, tmp_path):
    from tablespec.engine.clustering import schedule
    from tablespec.plan.clustering import clustering_plan
    text = spec_text("{everyNCommits: 3}", partitioned=False)
    table = small_table(spark, tmp_path, text)
    before = content(table)
    instant = schedule(table.table, clustering_plan(table.spec, observe(HudiTable.open(table.location))))
    for operation in ("upsert", "delete"):
        with pytest.raises(WriteRefused, match="pending clustering plan"):
            table.write(batch(spark, 0, 3), operation)
    assert content(table) == before  # readers still see the old files
    table.write(batch(spark, 1000, 3), "insert")  # new records go to new file groups, not the planned ones
    before = content(table)
    plan = plan_for(text, tmp_path)
    (t, action), = plan.actions
    assert action.kind == "clustering" and action.params.instant == instant.timestamp
    assert not plan.tables[0].warnings
    Applier(spark=spark).apply(plan)
    assert not plan_for(text, tmp_path).has_changes
    assert content(table) == before
    assert table.write(batch(spark, 0, 3), "upsert").updated == 3


def request_hudi_plan(location: str, slices, params: dict, outputs: int = 1) -> str:
    """Schedule a plan the way Apache Hudi writes it (full URIs, Hudi's params and metrics); its instant."""
    from tablespec.hudi.timeline.active import TimelineWriter
    from tablespec.hudi.timeline.instant import new_instant_time
    group = {"slices": [{"dataFilePath": "file:" + s.base_file.path, "deltaFilePaths": [], "fileId": s.file_id,
                         "partitionPath": s.partition, "bootstrapFilePath": "", "version": 1} for s in slices],
             "metrics": {"TOTAL_IO_READ_MB": 0.0, "TOTAL_IO_WRITE_MB": 0.0, "TOTAL_IO_MB": 0.0,
                         "TOTAL_LOG_FILE_SIZE": 0.0, "TOTAL_LOG_FILES": 0.0}, "numOutputFileGroups": outputs,
             "version": 1}
    record = {"operationType": "CLUSTER", "extraMetadata": None, "version": 1, "clusteringPlan": {
        "inputGroups": [group], "extraMetadata": None, "version": 1, "preserveHoodieMetadata": True,
        "strategy": {"strategyClassName": "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy",
                     "strategyParams": params, "version": 1}}}
    out = io.BytesIO()
    fastavro.writer(out, REQUESTED_REPLACE_SCHEMA, [record])
    ts = new_instant_time(Timeline.load(LocalStorage(), location).instants[-1].timestamp)
    TimelineWriter(LocalStorage(), location).request("replacecommit", ts, out.getvalue())
    return ts


def test_plan_scheduled_by_hudi_runs(spark, tmp_path):
    text = spec_text("{strategy: SORT, sortColumns: [amount], everyNCommits: 100}")
    table = small_table(spark, tmp_path, text, commits=2)
    before = content(table)
    slices = [s for s in latest_files(table.location) if s.partition == "order_date=2026-11-01"]
    ts = request_hudi_plan(table.location, slices, {"hoodie.clustering.plan.strategy.sort.columns": "amount"})
    plan = plan_for(text, tmp_path)
    (t, action), = plan.actions
    assert action.params.instant == ts and action.estimate.files == "2 -> 1"
    Applier(spark=spark).apply(plan)
    assert content(table) == before
    clustered = [s for s in latest_files(table.location) if s.partition == "order_date=2026-11-01"]
    assert len(clustered) == 1 and clustered[0].base_instant == ts
    amounts = pq.read_table(clustered[0].base_file.path, columns=["amount"]).column(0).to_pylist()
    assert amounts == sorted(amounts)
    assert_hudi_rs_agrees(table)
    # Hudi's plan left the other partition out of the declared layout: the next plan lays it out
    (_, rest), = plan_for(text, tmp_path).actions
    assert "2 file(s) still predate the last clustering with SORT(amount)" in rest.reasons[0]
    Applier(spark=spark).apply(plan_for(text, tmp_path))
    assert not plan_for(text, tmp_path).has_changes
    assert content(table) == before


def test_plan_merging_buckets_is_discarded_before_anything_changes(spark, tmp_path):
    """A pending plan (Hudi's) merging two buckets of a BUCKET table never runs: `plan` offers to
    discard it (nothing changed yet, hoodie.properties included), a run is refused, and apply
    rolls it back, rows unchanged."""
    from _support import table_files

    from tablespec.engine import clustering
    from tablespec.errors import TablespecError
    text = spec_text("{strategy: SORT, sortColumns: [amount], everyNCommits: 100}", index="{type: BUCKET, numBuckets: 2}")
    table = small_table(spark, tmp_path, text, commits=1, operation="upsert")
    before = content(table)
    slices = [s for s in latest_files(table.location) if s.partition == "order_date=2026-11-01"]
    assert len(slices) == 2
    ts = request_hudi_plan(table.location, slices, {"hoodie.clustering.plan.strategy.sort.columns": "amount"})
    files = table_files(Path(table.location))
    [(_, discard)] = plan_for(text, tmp_path).actions
    assert (discard.kind, discard.params.discard_plans) == ("rollback", [ts]), discard
    assert "would merge or split buckets of a BUCKET table" in discard.reasons[0]
    handle = HudiTable.open(table.location)
    with pytest.raises(TablespecError, match=f"clustering plan {ts} cannot run \\(it would merge or split buckets"):
        clustering.run(spark, load_spec_text(text, "t.yaml").specs[0].spec, handle, handle.timeline.pending()[0], "")
    assert table_files(Path(table.location)) == files
    Applier(spark=spark).apply(plan_for(text, tmp_path))
    assert not Timeline.load(LocalStorage(), table.location).pending() and content(table) == before
    assert not plan_for(text, tmp_path).has_changes


@pytest.mark.parametrize("point, warehouse", [("mid_write", "local"), ("before_completion", "local"),
                                              ("mid_write", "s3")], indirect=["warehouse"])
def test_clustering_killed_mid_execution_reruns_its_plan(spark, tmp_path, warehouse, monkeypatch, point):
    specs = tmp_path / "specs"
    specs.mkdir()
    text = spec_text("{strategy: SORT, sortColumns: [customer_id], everyNCommits: 3}")
    (specs / "orders.yaml").write_text(text)
    table = small_table(spark, warehouse, text)
    before = content(table)
    env = {**os.environ, "TABLESPEC_CRASH_AT": point, "PYTHONPATH": str(ROOT), "TABLESPEC_SPARK_MASTER": "local[1]",
           **SHORT_LIVED_JVM}
    proc = subprocess.run([sys.executable, "-m", "tablespec.cli", "apply", str(specs), "--warehouse", warehouse,
                           "--auto-approve"], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == -9, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert content(table) == before
    assert_hudi_rs_agrees(table)
    pending, = HudiTable.open(table.location).timeline.pending()
    assert pending.state == "inflight"
    monkeypatch.setenv("TABLESPEC_HEARTBEAT_TOLERANCE", "0")
    loaded, root = load_specs([str(specs)]), Location.parse(str(warehouse))
    plan = build_plan(loaded.specs, {table.location: observe(HudiTable.open(table.location))}, root)
    assert [(a.kind, getattr(a.params, "instant", None)) for _, a in plan.actions] == [
        ("rollback", None), ("clustering", pending.timestamp)]
    Applier(spark=spark).apply(plan)
    assert not build_plan(loaded.specs, {table.location: observe(HudiTable.open(table.location))}, root).has_changes
    timeline = HudiTable.open(table.location).timeline
    assert not timeline.pending() and timeline.last("replacecommit").timestamp == pending.timestamp
    assert content(table) == before
    assert_hudi_rs_agrees(table)


def test_clustering_after_schema_evolution_carries_old_files_into_the_new_columns(spark, tmp_path):
    text = spec_text("{strategy: SORT, sortColumns: [customer_id], everyNCommits: 3}", partitioned=False)
    table = small_table(spark, tmp_path, text, commits=2)
    evolved = text.replace("    - {name: order_date, type: date}\n",
                           "    - {name: order_date, type: date}\n    - {name: note, type: string}\n")
    plan = plan_for(evolved, tmp_path)
    assert [a.kind for _, a in plan.actions] == ["schema_evolution"]
    Applier(spark=spark).apply(plan)  # the schema commit is the third commit: clustering is due now
    new = Table(load_spec_text(evolved, "orders.yaml").specs[0].spec, table.location, spark)
    before = content(new)
    done = cluster(spark, new, evolved, tmp_path)
    assert done["actual"].rows == 80
    assert content(new) == before and {r[-1] for r in before} == {None}
    assert_hudi_rs_agrees(new)


def test_clustering_a_record_level_table_moves_its_keys_in_the_index(spark, tmp_path, monkeypatch):
    """The index commits and rolls back with the clustering: killed just before completion (index
    files written), the index still says the old file groups; after the rerun, the new ones."""
    from tablespec.index import verify
    specs, warehouse = tmp_path / "specs", tmp_path / "wh"
    specs.mkdir()
    text = spec_text("{strategy: SORT, sortColumns: [customer_id], everyNCommits: 3}",
                     index="{type: RECORD_LEVEL, recordLevel: {numBuckets: 2}}")
    (specs / "orders.yaml").write_text(text)
    table = small_table(spark, warehouse, text)
    before = content(table)
    old_ids = {s.file_id for s in latest_files(table.location)}
    env = {**os.environ, "TABLESPEC_CRASH_AT": "before_completion", "PYTHONPATH": str(ROOT),
           "TABLESPEC_SPARK_MASTER": "local[1]", **SHORT_LIVED_JVM}
    proc = subprocess.run([sys.executable, "-m", "tablespec.cli", "apply", str(specs), "--warehouse", str(warehouse),
                           "--auto-approve"], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == -9, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert verify(HudiTable.open(table.location)).ok
    assert set(table.lookup(["o00000", "o00100"]).column("file_id").to_pylist()) <= old_ids
    monkeypatch.setenv("TABLESPEC_HEARTBEAT_TOLERANCE", "0")
    loaded, root = load_specs([str(specs)]), Location.parse(str(warehouse))
    Applier(spark=spark).apply(build_plan(loaded.specs, {table.location: observe(HudiTable.open(table.location))}, root))
    assert not build_plan(loaded.specs, {table.location: observe(HudiTable.open(table.location))}, root).has_changes
    new_ids = {s.file_id for s in latest_files(table.location)}
    assert not new_ids & old_ids
    result = verify(HudiTable.open(table.location))
    assert result.ok, str(result)
    found = table.lookup([r[2] for r in before])
    assert found.num_rows == len(before) and set(found.column("file_id").to_pylist()) <= new_ids
    assert content(table) == before
    assert_hudi_rs_agrees(table)


def test_rewrites_run_a_pending_plan_first_and_never_replace_its_file_groups(spark, tmp_path):
    """A replacecommit taking planned file groups away would leave a plan that can never run
    (and writers waiting on it): rewrites refuse, and apply runs the pending plan before them."""
    from tablespec.engine.clustering import schedule
    from tablespec.engine.commit import locked
    from tablespec.engine.writer import TableWriter
    from tablespec.hudi.services.clustering import ClusteringPending
    from tablespec.plan.clustering import clustering_plan
    text = spec_text("{strategy: SORT, sortColumns: [customer_id], everyNCommits: 3}")
    table = small_table(spark, tmp_path, text)
    before = content(table)
    instant = schedule(table.table, clustering_plan(table.spec, observe(HudiTable.open(table.location))))
    with locked(table.table) as lock, pytest.raises(ClusteringPending, match="pending clustering plan"):
        TableWriter(spark, table.spec, table.table).overwrite(batch(spark, 0, 5), lock)
    assert content(table) == before
    unpartitioned = text.replace(UNPARTITIONED, "")
    plan = plan_for(unpartitioned, tmp_path)
    assert [(a.kind, getattr(a.params, "instant", None)) for _, a in plan.actions] == [
        ("clustering", instant.timestamp), ("replace_table", None)]
    Applier(spark=spark).apply(plan, allow_destructive=True)
    timeline = Timeline.load(LocalStorage(), table.location)
    assert not timeline.pending() and timeline.contains_completed(instant.timestamp)
    new = Table(load_spec_text(unpartitioned, "orders.yaml").specs[0].spec, table.location, spark)
    assert sorted((r[2], r[5], r[6]) for r in content(new)) == sorted((r[2], r[5], r[6]) for r in before)
    assert_hudi_rs_agrees(new)
    assert not plan_for(unpartitioned, tmp_path).has_changes


def clustering_on_separate_executors(spark, warehouse: str) -> None:
    """File groups rewritten on separate executor JVMs (test_engine_local_cluster.py): nothing
    depends on driver-local state."""
    text = spec_text("{strategy: ZORDER, sortColumns: [customer_id, amount], everyNCommits: 2, "
                     "targetFileSize: 6KiB, smallFileLimit: 5KiB}")
    table = small_table(spark, warehouse, text, commits=2, n=60)
    before = content(table)
    done = cluster(spark, table, text, warehouse)
    assert done["actual"].groups == 2 and done["actual"].rows == 120, done
    assert content(table) == before
    assert_hudi_rs_agrees(table)


def test_layout_switch_cut_short_by_max_groups_is_finished_by_the_next_clusterings(spark, tmp_path):
    from tablespec.engine import clustering
    from tablespec.engine.writer import table_avro_schema
    from tablespec.plan.clustering import clustering_plan
    text = spec_text("{strategy: SORT, sortColumns: [customer_id], everyNCommits: 3, maxGroups: 1}")
    table = small_table(spark, tmp_path, text)
    before = content(table)
    # a clustering that took one of the two partitions' groups (an apply stopped after its first step)
    instant = clustering.schedule(table.table, clustering_plan(table.spec, observe(HudiTable.open(table.location))))
    clustering.run(spark, table.spec, table.table, instant, table_avro_schema(table.spec))
    done = cluster(spark, table, text, tmp_path)  # the rest, although no commit landed since
    assert "3 file(s) still predate the last clustering with SORT(customer_id)" in done["action"].reasons[0]
    zorder = text.replace("{strategy: SORT, sortColumns: [customer_id]", "{strategy: ZORDER, sortColumns: [customer_id, amount]")
    switch = plan_for(zorder, tmp_path)
    assert [(a.kind, (step.number if (step := getattr(a.params, "step", None)) else None)) for _, a in switch.actions] == [
        ("update_settings", None), ("clustering", 1), ("clustering", 2)]  # maxGroups: a partition per step
    first = Applier(spark=spark).apply(switch).actions[1].actual.instant
    assert not plan_for(zorder, tmp_path).has_changes
    assert all(s.base_instant >= first for s in latest_files(table.location))  # every file laid out anew
    assert content(table) == before
    assert_hudi_rs_agrees(table)


def laid_out_on_disk(location: str) -> tuple[dict[tuple[str, str], int], set[tuple[str, str]]]:
    """From the files alone: the bytes of each file group's newest base file a completed instant wrote
    (less the file groups completed replacecommits replaced), by (partition, file id), and the file
    groups whose newest base file a completed clustering (a replacecommit of operation CLUSTER) wrote."""
    meta = Path(location, ".hoodie")
    done = {f.name.split(".")[0]: f for f in meta.iterdir() if re.fullmatch(r"\d{17}\.(commit|replacecommit)", f.name)}
    replaced, clusterings = set(), set()
    for ts, f in done.items():
        if f.suffix == ".replacecommit":
            written = json.loads(f.read_text())
            replaced |= {(p, i) for p, ids in written["partitionToReplaceFileIds"].items() for i in ids}
            clusterings |= {ts} if written["operationType"] == "CLUSTER" else set()
    newest: dict[tuple[str, str], tuple[str, int]] = {}
    for path in Path(location).rglob("*.parquet"):
        name = BaseFileName.parse(path.name)
        group = (path.parent.relative_to(location).as_posix(), name.file_id if name else "")
        if ".hoodie" in path.parts or name is None or name.instant not in done or group in replaced:
            continue
        if group not in newest or newest[group][0] < name.instant:
            newest[group] = (name.instant, path.stat().st_size)
    return {g: size for g, (_, size) in newest.items()}, {g for g, (ts, _) in newest.items() if ts in clusterings}


def test_declared_layout_is_laid_out_in_bounded_steps_and_its_coverage_reported(spark, tmp_path, capsys):
    """A spec gaining SORT clusters the table at once, in steps of maxGroups; the next plan has
    nothing to do and reports every file group as laid out; an upsert then takes the file groups it
    rewrites out of the declared layout (shown) until everyNCommits re-clusters them."""
    from tablespec.cli import main
    from tablespec.plan.render import render
    plain = spec_text("{}").replace("  clustering: {}\n", "")
    table = make_table(spark, tmp_path, plain)
    for c in range(2):  # 4 partitions x 2 commits: 8 file groups
        table.write(batch(spark, c * 16, 16, days=4), "bulk_insert")
    assert len(observe(HudiTable.open(table.location)).file_groups) == 8
    before = content(table)
    sort = spec_text("{strategy: SORT, sortColumns: [customer_id], maxGroups: 3, maxBytesPerGroup: 1KiB, "
                     "everyNCommits: 2}")
    plan = plan_for(sort, tmp_path)
    steps = [a for _, a in plan.actions if a.kind == "clustering"]
    assert [a.kind for _, a in plan.actions] == ["update_settings"] + ["clustering"] * 3
    assert [(a.params.step.number, a.params.step.file_groups, a.params.step.of_file_groups)
            for a in steps] == [(1, 3, 8), (2, 3, 8), (3, 2, 8)]
    assert "declares layout SORT(customer_id)" in steps[0].reasons[0]
    text = render(plan, "text")
    assert "step 1 of 3: 3 of 8 file groups" in text and "step 3 of 3: 2 of 8 file groups" in text
    assert "sales.orders: clustered as declared (SORT(customer_id)): 0/8 file groups (0%)" in text
    assert "clustering step 2 of 3 (3 of 8 file groups) estimate:" in render(plan, "markdown")
    result = Applier(spark=spark).apply(plan)
    assert [a.actual.groups for a in result.actions if a.kind == "clustering"] == [3, 3, 2]
    timeline = HudiTable.open(table.location).timeline
    assert len([i for i in timeline.commits() if i.action == "replacecommit"]) == 3  # one replacecommit per step
    after = plan_for(sort, tmp_path)
    assert not after.has_changes
    cov = after.tables[0].clustering_coverage
    assert (cov["laid_out"], cov["file_groups"], cov["percent"]) == (8, 8, 100)
    assert "sales.orders: clustered as declared (SORT(customer_id)): 8/8 file groups (100%)" in render(after, "text")
    assert json.loads(render(after, "json"))["tables"][0]["clustering_coverage"]["percent"] == 100
    for f in file_columns(table.location, ["customer_id"]):
        assert f["customer_id"] == sorted(f["customer_id"])
    assert content(table) == before
    assert_hudi_rs_agrees(table)
    # an upsert rewrites the file groups it touches: not laid out as declared any more
    new = Table(load_spec_text(sort, "orders.yaml").specs[0].spec, table.location, spark)
    new.write(batch(spark, 0, 2, days=4), "upsert")  # o00000, o00001: 2026-11-01 and -02
    after = plan_for(sort, tmp_path)
    assert not after.has_changes  # one commit: everyNCommits (2) not reached
    assert "clustered as declared (SORT(customer_id)): 6/8 file groups (75%)" in render(after, "text")
    assert main(["show", table.location]) == 0
    assert "clustered as declared (SORT(customer_id)): 6/8 file groups (75%)" in capsys.readouterr().out
    assert main(["show", table.location, "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)["clusteringCoverage"]
    assert (shown["laidOut"], shown["fileGroups"], shown["percent"]) == (6, 8, 75)
    # the report's coverage is show's, and what the files say: the latest base files a clustering wrote
    assert main(["report", table.location, "--format", "json"]) == 0
    reported = json.loads(capsys.readouterr().out)["tables"][0]["services"]["clustering"]["coverage"]
    assert reported == shown
    latest, clustered = laid_out_on_disk(table.location)
    assert (reported["fileGroups"], reported["bytes"]) == (len(latest), sum(latest.values()))
    assert (reported["laidOut"], reported["laidOutBytes"]) == (len(clustered), sum(latest[g] for g in clustered))
    new.write(batch(spark, 2, 1, days=4), "upsert")
    plan = plan_for(sort, tmp_path)
    (_, again), = plan.actions  # everyNCommits: the rewritten file groups are laid out again, in one step
    assert again.kind == "clustering" and again.estimate.groups == 3
    Applier(spark=spark).apply(plan)
    assert plan_for(sort, tmp_path).tables[0].clustering_coverage["percent"] == 100
    assert_hudi_rs_agrees(new)


def test_clean_after_clustering_removes_the_replaced_files_and_readers_keep_reading(spark, tmp_path):
    text = spec_text("{strategy: SORT, sortColumns: [customer_id], everyNCommits: 3}") + "  retention: {keepCommits: 1}\n"
    table = small_table(spark, tmp_path, text)
    replaced = {s.base_file.path for s in latest_files(table.location)}
    cluster(spark, table, text, tmp_path)  # the replacecommit is the earliest retained: nothing to clean yet
    assert all(os.path.exists(p) for p in replaced)
    table.write(batch(spark, 0, 4), "upsert")
    before = content(table)
    plan = plan_for(text, tmp_path)
    assert [a.kind for _, a in plan.actions] == ["clean"]
    Applier(spark=spark).apply(plan)
    assert not any(os.path.exists(p) for p in replaced)
    assert content(table) == before
    assert_hudi_rs_agrees(table)
    assert not plan_for(text, tmp_path).has_changes


def test_pending_plan_runs_before_the_table_is_rewritten_into_buckets(spark, tmp_path):
    from tablespec.engine.clustering import schedule
    from tablespec.plan.clustering import clustering_plan
    text = spec_text("{everyNCommits: 3}")
    table = small_table(spark, tmp_path, text)
    before = content(table)
    instant = schedule(table.table, clustering_plan(table.spec, observe(HudiTable.open(table.location))))
    bucketed = text.replace("index: {type: SIMPLE}", "index: {type: BUCKET, numBuckets: 2}")
    plan = plan_for(bucketed, tmp_path)
    kinds = [(a.kind, getattr(a.params, "instant", None)) for _, a in plan.actions]
    assert kinds[0] == ("clustering", instant.timestamp) and len(kinds) > 1, kinds
    Applier(spark=spark).apply(plan)
    timeline = Timeline.load(LocalStorage(), table.location)
    assert not timeline.pending() and timeline.contains_completed(instant.timestamp)
    new = Table(load_spec_text(bucketed, "orders.yaml").specs[0].spec, table.location, spark)
    assert sorted(r[2:] for r in content(new)) == sorted(r[2:] for r in before)
    assert_hudi_rs_agrees(new)
    assert not plan_for(bucketed, tmp_path).has_changes


def test_plan_that_can_no_longer_run_is_rolled_back_and_discarded(spark, tmp_path):
    """A plan scheduled on file slices that are no longer the latest (e.g. by another tool) can never
    run: plan offers a rollback that discards it, and writes to its file groups work again."""
    text = spec_text("{strategy: SORT, sortColumns: [amount], everyNCommits: 100}")
    table = small_table(spark, tmp_path, text, commits=1)
    old = [s for s in latest_files(table.location) if s.partition == "order_date=2026-11-01"]
    table.write(batch(spark, 0, 10), "upsert")  # rewrites those file groups: the old slices are history
    before = content(table)
    ts = request_hudi_plan(table.location, old, {"hoodie.clustering.plan.strategy.sort.columns": "amount"})
    with pytest.raises(WriteRefused):
        table.write(batch(spark, 0, 4), "upsert")
    plan = plan_for(text, tmp_path)
    (_, action), = plan.actions
    assert (action.kind, action.params.model_dump()) == ("rollback", {"discard_plans": [ts]})
    assert "no longer run" in action.reasons[0] and "newer base file" in action.reasons[0]
    Applier(spark=spark).apply(plan)
    timeline = Timeline.load(LocalStorage(), table.location)
    assert not timeline.pending() and ts not in {i.timestamp for i in timeline.instants}
    done = timeline.last("rollback")
    assert ts in timeline.read_metadata(done)["commitsRollback"]
    assert not plan_for(text, tmp_path).has_changes
    assert content(table) == before
    assert_hudi_rs_agrees(table)
    table.write(batch(spark, 0, 4), "upsert")

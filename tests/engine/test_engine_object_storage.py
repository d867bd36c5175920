"""End to end on both storages: a local warehouse and an `s3://` one on a real S3 API server
(moto over HTTP on loopback, tests/s3server.py). The behaviour is meant to be the same, so each
test runs on both (the `warehouse` fixture), and tables are read back by hudi-rs from the same
server as well as by tablespec."""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from _support import ORDERS_SPEC, ROOT, S3_KEY_ID, S3_SECRET, SHORT_LIVED_JVM, storage_and_base
from helpers import make_table, rows, tablespec_rows

from tablespec.apply import Applier
from tablespec.cli import main
from tablespec.hudi.io import join, table_location
from tablespec.hudi.table import HudiTable, Location
from tablespec.hudi.timeline.lock import LockTimeoutError, TableLock, read_lock
from tablespec.plan.builder import build_plan
from tablespec.spec.loader import load_spec_text
from tablespec.state import observe, observe_specs
from tablespec.table import Table

pytestmark = pytest.mark.spark
SCHEMA = "order_id string, customer_id bigint, amount decimal(12,2), updated_at timestamp, order_date date"
T0 = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
SIMPLE = ORDERS_SPEC.replace("index: {type: BUCKET, numBuckets: 16}", "index: {type: SIMPLE}\n  retention: {keepCommits: 1}")


def orders(spark, first, n, shift=0):
    data = [(f"o{i:04d}", i, Decimal(f"{i + shift}.50"), T0 + dt.timedelta(minutes=i + shift), dt.date(2026, 11, 1 + i % 3))
            for i in range(first, first + n)]
    return spark.createDataFrame(data, SCHEMA)


def hudi_rs_rows(location: str, as_of: str | None = None) -> list[tuple]:
    import hudi
    storage = storage_and_base(location)[0]
    options = storage.config.store_options() if hasattr(storage, "config") else {}
    table = hudi.HudiTableBuilder.from_base_uri(location).with_storage_options(options).build()
    batches = table.read(hudi.HudiReadOptions().with_as_of_timestamp(as_of)) if as_of else table.read()
    return rows(pa.Table.from_batches(batches) if batches else pa.table({}))


def assert_agree(table: Table, as_of: str | None = None) -> list[tuple]:
    ours = tablespec_rows(table, as_of=as_of)
    assert hudi_rs_rows(table.location, as_of) == ours
    return ours


def plan_apply(spark, text: str, warehouse: str, expect: list[str]):
    loaded = load_spec_text(text, "orders.yaml")
    assert not loaded.errors, loaded.errors
    plan = build_plan(loaded.specs, observe_specs(loaded.specs, Location.parse(warehouse)), Location.parse(warehouse))
    kinds = [a.kind for _, a in plan.actions]   # a clean may be due besides (keepCommits: 1)
    assert [k for k in kinds if k != "clean"] == expect, kinds
    Applier(spark=spark).apply(plan)
    again = build_plan(loaded.specs, observe_specs(loaded.specs, Location.parse(warehouse)), Location.parse(warehouse))
    if again.has_changes:   # the action's commit made a clean due (Hudi keeps the newest slice before it)
        assert [a.kind for _, a in again.actions] == ["clean"]
        Applier(spark=spark).apply(again)
        again = build_plan(loaded.specs, observe_specs(loaded.specs, Location.parse(warehouse)), Location.parse(warehouse))
    assert not again.has_changes, [a.kind for _, a in again.actions]
    return loaded.specs[0].spec


def test_every_action_and_read(spark, warehouse):
    """create, writes, time travel, index migration to RECORD_LEVEL and lookups, schema evolution,
    bucket bootstrap, clean, verify, show and import: the same results on both storages."""
    spec = plan_apply(spark, SIMPLE, warehouse, ["create_table"])
    table = Table(spec, table_location(warehouse, "sales/orders"), spark)
    table.write(orders(spark, 0, 60), "insert")
    first = HudiTable.open(table.location).timeline.commits()[-1].timestamp
    table.write(orders(spark, 30, 60, shift=5), "upsert")
    assert table.read().count() == 90
    then = assert_agree(table, as_of=first)
    assert len(then) == 60
    assert_agree(table)

    rli = SIMPLE.replace("{type: SIMPLE}", "{type: RECORD_LEVEL}")
    spec = plan_apply(spark, rli, warehouse, ["index_migration"])
    table = Table(spec, table.location, spark)
    found = table.lookup(["o0001", "o0089", "nope"]).to_pydict()
    assert sorted(found["key"]) == ["o0001", "o0089"]
    table.write(orders(spark, 200, 5), "upsert")
    assert sorted(table.lookup(["o0202"]).column("key").to_pylist()) == ["o0202"]

    evolved = rli.replace("    - {name: order_date, type: date}",
                          "    - {name: order_date, type: date}\n    - {name: note, type: string}")
    spec = plan_apply(spark, evolved, warehouse, ["schema_evolution"])
    table = Table(spec, table.location, spark)
    assert table.read().filter("note is null").count() == 95

    bucketed = evolved.replace("{type: RECORD_LEVEL}", "{type: BUCKET, numBuckets: 2}")
    loaded = load_spec_text(bucketed, "orders.yaml")
    plan = build_plan(loaded.specs, observe_specs(loaded.specs, Location.parse(warehouse)), Location.parse(warehouse))
    kinds = [a.kind for _, a in plan.actions]
    assert "bucket_bootstrap" in kinds, kinds
    Applier(spark=spark).apply(plan)
    spec = loaded.specs[0].spec
    table = Table(spec, table.location, spark)
    after = build_plan(loaded.specs, observe_specs(loaded.specs, Location.parse(warehouse)), Location.parse(warehouse))
    if after.has_changes:   # the clean the rewrite made due
        assert [a.kind for _, a in after.actions] == ["clean"]
        Applier(spark=spark).apply(after)
    assert not build_plan(loaded.specs, observe_specs(loaded.specs, Location.parse(warehouse)), Location.parse(warehouse)).has_changes
    final = assert_agree(table)
    assert len(final) == 95
    assert table.verify().ok, str(table.verify())
    with pytest.raises(Exception, match="cleaned"):
        table.read(as_of=first).count()

    assert main(["verify", table.location]) == 0
    assert main(["show", table.location, "--format", "json"]) == 0
    out = subprocess.run([sys.executable, "-m", "tablespec.cli", "import", table.location, "--warehouse", warehouse],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert out.returncode == 0, out.stderr
    imported = load_spec_text(out.stdout, "imported.yaml")
    assert not imported.errors, imported.errors
    assert imported.specs[0].spec.spec.location == "sales/orders"
    assert not build_plan(imported.specs, observe_specs(imported.specs, Location.parse(warehouse)), Location.parse(warehouse)).has_changes


@pytest.mark.parametrize("warehouse", ["s3"], indirect=True)
def test_killed_apply_is_rolled_back_and_redone(spark, warehouse, tmp_path, monkeypatch):
    """kill -9 during a bucket bootstrap on S3, its data files written, before it completes;
    readers see the table as before, the next apply recovers (on local disk at every
    crash point: test_engine_rebucket.py; killed mid-write on S3:
    test_engine_clustering.py::test_clustering_killed_mid_execution_reruns_its_plan)."""
    spec = plan_apply(spark, SIMPLE, warehouse, ["create_table"])
    table = Table(spec, table_location(warehouse, "sales/orders"), spark)
    table.write(orders(spark, 0, 30), "insert")
    before = assert_agree(table)
    specs = tmp_path / "specs"
    specs.mkdir()
    target = SIMPLE.replace("{type: SIMPLE}", "{type: BUCKET, numBuckets: 2}")
    (specs / "orders.yaml").write_text(target)
    env = {**os.environ, "TABLESPEC_CRASH_AT": "before_completion", "PYTHONPATH": str(ROOT), "TABLESPEC_SPARK_MASTER": "local[1]",
           **SHORT_LIVED_JVM}
    proc = subprocess.run([sys.executable, "-m", "tablespec.cli", "apply", str(specs), "--warehouse", warehouse,
                           "--auto-approve"], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == -9, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert HudiTable.open(table.location).timeline.pending()
    assert assert_agree(table) == before
    monkeypatch.setenv("TABLESPEC_HEARTBEAT_TOLERANCE", "0")
    spec = plan_apply(spark, target, warehouse, ["rollback", "bucket_bootstrap"])
    recovered = Table(spec, table.location, spark)
    assert not HudiTable.open(table.location).timeline.pending()
    assert [r for r in assert_agree(recovered)] != [] and recovered.read().count() == 30
    assert recovered.verify().ok


_HOLDER = """
import sys
from tablespec.hudi.timeline.lock import TableLock
from tablespec.hudi.table import HudiTable
table = HudiTable.open(sys.argv[1])
lock = TableLock(table.storage, table.base, owner="other-process", lease_seconds=float(sys.argv[2]), auto_renew=True)
lock.acquire(timeout_seconds=5)
print("held", flush=True)
sys.stdin.readline()
"""


def test_two_processes_contend_for_the_table_lock(warehouse):
    storage, base = storage_and_base(join(warehouse, "t"))
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, base, "2"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(LockTimeoutError, match="other-process"):   # alive: it renews its lease
            TableLock(storage, base).acquire(timeout_seconds=3, poll=0.2)
    finally:
        proc.kill()   # dies holding the lock
        proc.wait()
        proc.stdout.close()
        proc.stdin.close()
    assert read_lock(storage, base).pid == proc.pid
    lock = TableLock(storage, base, owner="next").acquire(timeout_seconds=10, poll=0.2)
    assert read_lock(storage, base).owner == "next"
    lock.release()


def test_demo_runs_on_an_s3_warehouse(spark, s3_bucket, capsys):
    """The README demo with `--warehouse s3://...` (plus the AWS endpoint, region and credentials
    the fixture sets as a user would). Credentials never show."""
    from tablespec.demo import main as demo_main
    assert demo_main(["--warehouse", s3_bucket + "/demo"]) == 0
    out, err = capsys.readouterr()
    assert "Demo complete: tables are in " + s3_bucket + "/demo" in out
    assert S3_SECRET not in out + err and S3_KEY_ID not in out + err
    # registered in the demo's embedded metastore (on local disk, beside its input files), read without Spark
    from tablespec.catalog import EmbeddedMetastore
    home = re.search(r"registered in the embedded metastore in (\S+)\.\n", out).group(1)
    store = EmbeddedMetastore(Path(home) / "metastore.db", "test")
    sales, analytics = store.tables("sales"), store.tables("analytics")
    assert sorted(sales) == ["customers", "orders"] and sorted(analytics) == ["events"]
    assert sales["orders"].location.endswith("/demo/sales/orders") and len(sales["orders"].partitions) == 5
    assert S3_SECRET not in (Path(home).parent / "tablespec.project.yaml").read_text()
    # it ends with the health report of the three tables, written on local disk beside its inputs
    report = Path(re.search(r"health report \(one page, open it in a browser\): (\S+)\n", out).group(1))
    page = report.read_text()
    assert report.parent == Path(home).parent and page.count('<section class="table"') == 3
    assert "sales.orders" in page and "could not be read" not in err


def s3_writes_on_separate_executors(spark, warehouse: str) -> None:
    """Executors in other JVMs and Python workers (test_engine_local_cluster.py): the storage
    configuration travels with the tasks, the credentials come from their environment."""
    table = make_table(spark, warehouse, SIMPLE)
    df = spark.range(0, 200, numPartitions=4).selectExpr("concat('o', id) as order_id", "id as customer_id",
        "cast(id as decimal(12,2)) as amount", "timestamp'2026-11-01 00:00:00' as updated_at",
        "date'2026-11-01' + cast(id % 3 as int) as order_date")
    assert table.write(df, "upsert").inserted == 200
    assert table.read().count() == 200


def test_apply_to_an_s3_uri_reaches_the_bucket_not_a_local_folder(s3_bucket, tmp_path, monkeypatch, capsys):
    """The old bug: `--warehouse s3://bucket/root` wrote the tables into ./s3:/bucket/root."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "orders.yaml").write_text(SIMPLE)
    monkeypatch.chdir(tmp_path)
    plan_file = tmp_path / "plan.json"
    assert main(["plan", str(specs), "--warehouse", s3_bucket + "/root", "--out", str(plan_file)]) == 0
    assert main(["apply", str(plan_file), "--auto-approve"]) == 0    # the saved plan, checked and applied
    assert not (tmp_path / "s3:").exists()
    storage, base = storage_and_base(s3_bucket + "/root/sales/orders")
    assert storage.exists(join(base, ".hoodie/hoodie.properties"))
    assert observe(HudiTable.open(base)).exists
    out, err = capsys.readouterr()
    saved = plan_file.read_text()
    assert json.loads(saved)["warehouse"] == s3_bucket + "/root"
    for text in (out, err, saved):
        assert S3_SECRET not in text and S3_KEY_ID not in text


@pytest.mark.parametrize("flag, env, message", [
    (["--warehouse", "s3:/bucket/root"], {}, "--warehouse: 's3:/bucket/root' is not an S3 URI"),
    (["--warehouse", "s3://"], {}, "--warehouse: 's3://' is not an S3 URI"),
    ([], {"TABLESPEC_WAREHOUSE": "gs://bucket/root"}, "$TABLESPEC_WAREHOUSE: unsupported storage scheme 'gs'"),
    (["--warehouse", "hdfs://nn:8020/wh"], {}, "--warehouse: unsupported storage scheme 'hdfs'"),
])
def test_unservable_warehouses_are_refused_and_nothing_is_written(tmp_path, monkeypatch, capsys, flag, env, message):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "orders.yaml").write_text(SIMPLE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TABLESPEC_WAREHOUSE", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert main(["apply", str(specs), *flag, "--auto-approve"]) == 1
    err = capsys.readouterr().err
    assert message in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["specs"]


def test_project_file_warehouse_and_storage_options_are_checked(tmp_path, monkeypatch, capsys):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "orders.yaml").write_text(SIMPLE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TABLESPEC_WAREHOUSE", raising=False)
    project = tmp_path / "tablespec.project.yaml"
    project.write_text("warehouse: abfs://c@acct.dfs.core.windows.net/wh\n")
    assert main(["plan", str(specs)]) == 1
    assert f"{project}: warehouse" in capsys.readouterr().err
    project.write_text("warehouse: s3://bucket/wh\nstorage: {secret_access_key: oops}\n")
    assert main(["plan", str(specs)]) == 1
    err = capsys.readouterr().err
    assert "credentials do not belong in the project file" in err and "oops" not in err

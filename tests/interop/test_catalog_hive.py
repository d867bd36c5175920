"""The embedded Hive metastore against Spark SQL and Apache Hudi 0.15's HiveSyncTool.

tablespec registers a table (apply), syncs after each ingest (a new partition) and after a schema
change; Spark SQL with Hive support (a subprocess: catalog_process.py) then reads `sales.orders`
by name exactly as tablespec reads the table, Hudi's own sync on that metastore changes nothing,
and Hudi's sync into an empty metastore registers what tablespec registered.
"""
from __future__ import annotations

import os
import re
import shutil
import sqlite3
from decimal import Decimal
from pathlib import Path

import pytest
from _support import EXAMPLES, SHORT_LIVED_JVM
from catalog_process import hive_sync_step, run_steps, sql_step
from report.chromium import assert_page_renders

from tablespec.catalog import EmbeddedMetastore
from tablespec.catalog.diff import diff
from tablespec.cli import main
from tablespec.spec.loader import load_specs
from tablespec.table import Table

SPEC = """\
apiVersion: tablespec/v1
kind: HudiTable
metadata: {{name: orders}}
spec:
  location: sales/orders
  columns:
    - {{name: id, type: long, nullable: false}}
    - {{name: amount, type: "decimal(12,2)"}}
    - {{name: tags, type: "array<string>"}}
{extra}    - {{name: day, type: string}}
  recordKey: {{fields: [id]}}
  partitioning: {{fields: [day]}}
  catalog: {{database: sales}}
"""
METASTORE_TABLES = ("DBS", "TBLS", "SDS", "SERDES", "SERDE_PARAMS", "CDS", "COLUMNS_V2", "TABLE_PARAMS",
                    "PARTITION_KEYS", "PARTITIONS", "PARTITION_KEY_VALS", "PARTITION_PARAMS")


def _cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, out + err
    return out


def _rows(df_or_rows, columns):
    rows = df_or_rows.collect() if hasattr(df_or_rows, "collect") else df_or_rows
    out = []
    for r in rows:
        d = r.asDict(recursive=True) if hasattr(r, "asDict") else dict(r)
        out.append(tuple(str(d[c]) if isinstance(d[c], Decimal) else d[c] for c in columns))
    return sorted(out)


def _dump(db: Path) -> dict:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in METASTORE_TABLES}
    finally:
        conn.close()


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "orders.yaml").write_text(SPEC.format(extra=""))
    (tmp_path / "tablespec.project.yaml").write_text("warehouse: lake\ncatalog: hive\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TABLESPEC_WAREHOUSE", raising=False)
    monkeypatch.delenv("TABLESPEC_CATALOG", raising=False)
    return tmp_path


def test_spark_sql_reads_by_name_what_tablespec_reads_and_hudis_sync_agrees(project, spark, capsys):
    metastore = project / ".tablespec" / "metastore.db"
    store = EmbeddedMetastore(metastore, "test")
    base = project / "lake" / "sales" / "orders"
    _cli(capsys, "apply", "specs", "--auto-approve")                      # create + register
    assert "orders" in store.tables("sales")

    def table(spec_text: str) -> Table:
        (project / "specs" / "orders.yaml").write_text(spec_text)
        return Table(load_specs(["specs/orders.yaml"]).specs[0].spec, str(base), spark, catalog=store)

    t = table(SPEC.format(extra=""))
    t.write(spark.createDataFrame([(1, Decimal("10.50"), ["a"], "2024-01-01"), (2, Decimal("3.25"), None, "2024-01-01")],
                                  t.spec_ddl()), "upsert")
    t.write(spark.createDataFrame([(3, Decimal("7.00"), ["b", "c"], "2024-01-02")], t.spec_ddl()), "upsert")  # new day
    with_note = SPEC.format(extra="    - {name: note, type: string}\n")
    (project / "specs" / "orders.yaml").write_text(with_note)
    out = _cli(capsys, "apply", "specs", "--auto-approve")                # schema change + sync
    assert "schema_evolution done" in out and "catalog_sync done" in out
    t = table(with_note)
    t.write(spark.createDataFrame([(4, Decimal("1.00"), [], "x", "2024-01-03")], t.spec_ddl()), "upsert")
    assert diff(store.tables("sales")["orders"], store.tables("sales")["orders"]).in_sync
    assert sorted(v for v, in store.tables("sales")["orders"].partitions) == ["2024-01-01", "2024-01-02", "2024-01-03"]

    columns = ["id", "amount", "tags", "note", "day"]
    before = _dump(metastore)
    fresh = project / "hudi" / "metastore.db"
    EmbeddedMetastore(fresh, "test")._writer().close()                     # the schema only
    sql, parts, _, _ = run_steps(metastore, [sql_step("SELECT id, amount, tags, note, day FROM sales.orders"),
                                             sql_step("SHOW PARTITIONS sales.orders"),
                                             hive_sync_step(str(base), "sales", "orders", ["day"]),
                                             hive_sync_step(str(base), "sales", "orders", ["day"], fresh)])
    assert _rows(sql, columns) == _rows(t.read(), columns) and len(sql) == 4
    assert sorted(p["partition"] for p in parts) == ["day=2024-01-01", "day=2024-01-02", "day=2024-01-03"]
    after = _dump(metastore)
    assert {k: v for k, v in after.items() if k != "DBS"} == {k: v for k, v in before.items() if k != "DBS"}, \
        "Hudi's sync found something to change in tablespec's registration"

    hudis, ours = EmbeddedMetastore(fresh, "hudi").tables("sales")["orders"], store.tables("sales")["orders"]
    assert diff(hudis, ours).in_sync
    assert ({k: v for k, v in hudis.parameters.items() if k != "transient_lastDdlTime"}
            == {k: v for k, v in ours.parameters.items() if k != "transient_lastDdlTime"})
    assert (hudis.columns, hudis.partition_keys, hudis.serde_parameters, hudis.partitions, hudis.location) == \
        (ours.columns, ours.partition_keys, ours.serde_parameters, ours.partitions, ours.location)
    shutil.rmtree(project / "hudi")


def test_the_demos_tables_answer_spark_sql_by_name(spark, tmp_path, monkeypatch, capsys):
    """The README demo registers its tables in its embedded metastore (apply, then every ingest and
    the clustering apply); the `spark-sql` command it ends with, run as printed, reads them by name
    as tablespec reads them."""
    import shlex
    import subprocess

    from pyspark.sql import functions as F

    from tablespec.demo import main as demo
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TABLESPEC_WAREHOUSE", raising=False)
    monkeypatch.delenv("TABLESPEC_CATALOG", raising=False)
    warehouse, inputs = tmp_path / "wh", tmp_path / "wh-inputs"
    assert demo(["--warehouse", str(warehouse)]) == 0
    out = capsys.readouterr().out
    # it ends with its tables' health report, beside its inputs: it opens in Chromium without a console
    # error, every chart drawn, and shows how much of orders its clustering laid out
    report = Path(re.search(r"health report \(one page, open it in a browser\): (\S+)\n", out).group(1))
    assert report == inputs / "report.html"
    assert_page_renders(report, tables=3)
    assert "Laid out as declared (SORT(customer_id)): " in report.read_text()
    store = EmbeddedMetastore(inputs / ".tablespec" / "metastore.db", "test")
    sales, analytics = store.tables("sales"), store.tables("analytics")
    assert sorted(sales) == ["customers", "orders"] and sorted(analytics) == ["events"]
    assert sales["orders"].location == (warehouse / "sales" / "orders").as_uri().replace("file:///", "file:/")
    assert sorted(v for v, in sales["orders"].partitions) == [f"2026-11-0{d}" for d in range(1, 6)]

    command = next(line.strip() for line in out.splitlines() if line.strip().startswith("spark-sql --properties-file"))
    argv = shlex.split(command)
    argv[-1] += "; SELECT count(*) FROM analytics.events; SELECT count(*) FROM sales.customers"
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**os.environ, **SHORT_LIVED_JVM})
    assert done.returncode == 0, done.stderr[-3000:]

    def read(name: str):   # tablespec's read of the demo table
        spec = load_specs([str(EXAMPLES / f"{name}.yaml")]).specs[0].spec
        return Table(spec, str(warehouse / spec.spec.location), spark).read()
    days = read("orders").groupBy("order_date").agg(F.count("*"), F.sum("amount")).orderBy("order_date").collect()
    events, customers = read("events").count(), read("customers").count()
    assert done.stdout.splitlines() == [f"{d}\t{n}\t{s}" for d, n, s in days] + [str(events), str(customers)]
    assert (len(days), events, customers) == (5, 2000, 200) and sum(n for _, n, _ in days) == 1250


BUCKETED = """\
apiVersion: tablespec/v1
kind: HudiTable
metadata: {{name: orders}}
spec:
  location: sales/orders
  columns:
    - {{name: id, type: long, nullable: false}}
    - {{name: customer, type: long}}
    - {{name: amount, type: "decimal(12,2)"}}
    - {{name: day, type: string}}
  recordKey: {{fields: [id]}}
  partitioning: {{fields: [day]}}
  index: {{type: BUCKET, numBuckets: {buckets}, hashFields: [id]}}
  clustering: {{strategy: SORT, sortColumns: [customer], everyNCommits: 3}}
  catalog: {{database: sales}}
"""


def test_spark_sql_reads_by_name_what_tablespec_reads_after_a_bucket_rescale_and_a_clustering(project, spark, capsys):
    """Both rewrite file groups in a replacecommit; apply syncs the catalog after each (its
    last_commit_time_sync the replacecommit), and Spark SQL through the metastore reads `sales.orders`
    as tablespec reads it."""
    metastore = project / ".tablespec" / "metastore.db"
    store = EmbeddedMetastore(metastore, "test")
    base, spec_file = project / "lake" / "sales" / "orders", project / "specs" / "orders.yaml"
    spec_file.write_text(BUCKETED.format(buckets=2))
    _cli(capsys, "apply", "specs", "--auto-approve")
    columns = ["id", "customer", "amount", "day"]
    query = [sql_step("SELECT id, customer, amount, day FROM sales.orders"), sql_step("SHOW PARTITIONS sales.orders")]

    def write(rows):
        spec = load_specs([str(spec_file)]).specs[0].spec
        table = Table(spec, str(base), spark, catalog=store)
        table.write(spark.createDataFrame(rows, table.spec_ddl()), "upsert")
        return table

    def in_step(table: Table):
        """The registration is Hudi's sync of the table as it is."""
        from tablespec.catalog.sync import catalog_diffs
        from tablespec.hudi.table import HudiTable
        from tablespec.state import observe
        state = observe(HudiTable.open(str(base)))
        assert all(d.in_sync for d in catalog_diffs(store, [(table.spec, state)]).values())
        assert store.tables("sales")["orders"].parameters["last_commit_time_sync"] == state.head
        return state

    write([(i, 10 - i, Decimal(f"{i}.50"), f"2024-01-0{1 + i % 2}") for i in range(1, 4)])
    spec_file.write_text(BUCKETED.format(buckets=4))
    out = _cli(capsys, "apply", "specs", "--auto-approve")
    assert "bucket_rescale done" in out and "catalog_sync done" in out and "clustering done" not in out
    table = write([(4, 1, Decimal("4.00"), "2024-01-02")])
    rescaled = in_step(table)
    assert rescaled.table_config.to_properties()["hoodie.bucket.index.num.buckets"] == "4"

    write([(1, 5, Decimal("9.99"), "2024-01-02")])      # an update: the third commit since the rescale
    out = _cli(capsys, "apply", "specs", "--auto-approve")
    assert "clustering done" in out and "catalog_sync done" in out
    clustered = in_step(table)
    assert clustered.head != rescaled.head
    # Spark SQL reads what tablespec reads, after both replacecommits (one JVM start for the two)
    rows, partitions = run_steps(metastore, query)
    assert _rows(rows, columns) == _rows(table.read(), columns) and len(rows) == 4
    assert sorted(p["partition"] for p in partitions) == ["day=2024-01-01", "day=2024-01-02"]

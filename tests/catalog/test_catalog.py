"""Catalogs without a JVM: the registration Hudi's sync writes, its diff, the embedded metastore
written and read back with sqlite3, and plan / apply through the CLI registering tables."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from _support import EXAMPLES, ROOT, scratch_project
from _support import cli as run

from tablespec.catalog import EmbeddedMetastore, open_catalog
from tablespec.catalog.diff import diff
from tablespec.catalog.metastore import CatalogError, partition_name
from tablespec.catalog.registration import Column, hive_type, partition_values, registration, spark_properties
from tablespec.hudi.table import HudiTable
from tablespec.spec.project import CatalogSetting
from tablespec.types import parse_type

COLUMNS = [Column("id", parse_type("long"), False), Column("Amount", parse_type("decimal(12,2)")),
           Column("at", parse_type("timestamp")), Column("tags", parse_type("array<string>")),
           Column("attrs", parse_type("map<string,struct<a:int,b:short>>")), Column("day", parse_type("date"))]


def reg(partitions=("day=2024-01-01",), columns=COLUMNS, head="20240101000000000", base="/lake/t"):
    return registration("Sales", "T", base, list(columns), ["day"], list(partitions), head)


def test_hive_types_are_hudis():
    assert [hive_type(c.type) for c in COLUMNS] == [
        "bigint", "decimal(12,2)", "bigint", "array<string>", "map<string,struct<a:int,b:int>>", "date"]


def test_registration_is_hudis_for_a_cow_table():
    r = reg()
    assert (r.database, r.table, r.location) == ("sales", "t", "file:/lake/t")
    assert r.columns[:5] == tuple((n, "string") for n in ("_hoodie_commit_time", "_hoodie_commit_seqno",
                                                           "_hoodie_record_key", "_hoodie_partition_path",
                                                           "_hoodie_file_name"))
    assert [n for n, _ in r.columns[5:]] == ["id", "amount", "at", "tags", "attrs"]   # lowercase, partition key last
    assert r.partition_keys == (("day", "date"),)
    assert r.input_format == "org.apache.hudi.hadoop.HoodieParquetInputFormat"
    assert r.serde_parameters == {"path": "/lake/t", "hoodie.query.as.ro.table": "false", "serialization.format": "1"}
    assert r.parameters["EXTERNAL"] == "TRUE" and r.parameters["last_commit_time_sync"] == "20240101000000000"
    schema = json.loads(r.parameters["spark.sql.sources.schema.part.0"])
    assert [f["name"] for f in schema["fields"]][5:] == ["id", "Amount", "at", "tags", "attrs", "day"]
    assert schema["fields"][5]["nullable"] is False and schema["fields"][7]["type"] == "timestamp"
    assert r.partitions == {("2024-01-01",): "file:/lake/t/day=2024-01-01"}


def test_long_schemas_are_split_in_parts_of_4000():
    wide = [Column(f"column_{i:03d}", parse_type("string")) for i in range(200)]
    props = spark_properties(wide, [])
    parts = int(props["spark.sql.sources.schema.numParts"])
    assert parts > 1 and all(len(props[f"spark.sql.sources.schema.part.{i}"]) == 4000 for i in range(parts - 1))
    assert json.loads("".join(props[f"spark.sql.sources.schema.part.{i}"] for i in range(parts)))["type"] == "struct"
    assert "spark.sql.sources.schema.numPartCols" not in props


def test_partition_values_and_names():
    assert partition_values("a=1/b=x", 2) == ("1", "x") and partition_values("2024/01", 2) == ("2024", "01")
    with pytest.raises(ValueError):
        partition_values("a=1", 2)
    assert partition_name([("Day", "string"), ("k", "string")], ("2024-01-01", "a/b:c")) == "day=2024-01-01/k=a%2Fb%3Ac"


def test_diff():
    want = reg(partitions=("day=2024-01-01", "day=2024-01-02"))
    assert diff(None, want).register
    assert diff(want, want).in_sync
    older = reg(partitions=("day=2024-01-01", "day=2023-12-31"), columns=COLUMNS[:-2] + COLUMNS[-1:], head="1")
    d = diff(older, want)
    assert d.add_partitions == (("2024-01-02",),) and d.drop_partitions == (("2023-12-31",),)
    assert d.columns and set(d.properties) == {"last_commit_time_sync", "spark.sql.sources.schema.part.0"}
    assert not d.destructive
    moved = diff(reg(base="/elsewhere/t"), reg())
    assert moved.location == ("file:/elsewhere/t", "file:/lake/t") and moved.storage   # the serde's path too
    other_keys = registration("sales", "t", "/lake/t", COLUMNS, [], [], "1")
    assert diff(other_keys, want).destructive


def test_embedded_metastore_round_trip(tmp_path):
    store = EmbeddedMetastore(tmp_path / ".tablespec" / "metastore.db", "test")
    assert store.tables("sales") == {}                      # no file yet: nothing registered, nothing created
    assert not store.db.exists()
    want = reg(partitions=("day=2024-01-01", "day=2024-01-02"))
    store.sync(diff(None, want))
    assert diff(store.tables("sales")["t"], want).in_sync
    newer = reg(partitions=("day=2024-01-02", "day=2024-01-03"), columns=COLUMNS[:2] + COLUMNS[-1:], head="2")
    store.sync(diff(store.tables("sales")["t"], newer))
    assert diff(store.tables("sales")["t"], newer).in_sync
    rekeyed = registration("sales", "t", "/lake/t", COLUMNS, [], [], "3")
    store.sync(diff(store.tables("sales")["t"], rekeyed))
    assert diff(store.tables("sales")["t"], rekeyed).in_sync
    db = sqlite3.connect(store.db)
    assert db.execute("SELECT COUNT(*) FROM PARTITIONS").fetchone() == (0,)   # the dropped table's partitions went with it
    assert db.execute("SELECT COUNT(*) FROM SDS").fetchone() == (1,)
    ids = dict(db.execute("SELECT SEQUENCE_NAME, NEXT_VAL FROM SEQUENCE_TABLE"))
    assert ids["org.apache.hadoop.hive.metastore.model.MTable"] == 3   # ids 1 and 2 taken: never reused


def test_an_unreachable_metastore_is_refused_naming_the_setting(tmp_path):
    pytest.importorskip("thrift_files", reason="the Thrift metastore needs hive-metastore-client (tablespec[catalog])")
    import socket
    with socket.socket() as s:   # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        uri = f"thrift://127.0.0.1:{s.getsockname()[1]}"
    catalog = open_catalog(CatalogSetting(uri, "/p/tablespec.project.yaml: catalog", tmp_path))
    with pytest.raises(CatalogError, match=rf"^/p/tablespec.project.yaml: catalog: cannot reach the Hive metastore at {uri}"):
        catalog.tables("sales")


def test_a_closed_thrift_port_prints_tablespecs_line_alone(project):
    """Only tablespec's line on stderr: not the Thrift library's own log line before it (issue 34)."""
    pytest.importorskip("thrift_files", reason="the Thrift metastore needs hive-metastore-client (tablespec[catalog])")
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        uri = f"thrift://127.0.0.1:{s.getsockname()[1]}"
    env = {**os.environ, "TABLESPEC_CATALOG": uri, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "tablespec.cli", "plan", "specs"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    port = uri.rsplit(":", 1)[1]
    assert done.stderr.splitlines() == [f"error: $TABLESPEC_CATALOG: cannot reach the Hive metastore at {uri}: "
                                        f"no connection to 127.0.0.1:{port} (refused, or no answer within 10s)"], done.stderr


def test_a_silent_thrift_port_is_one_line_after_the_timeout(tmp_path, caplog):
    """A metastore that accepts the connection and never answers: tablespec's error once the timeout
    passes, and nothing from the Thrift library's loggers."""
    pytest.importorskip("thrift_files", reason="the Thrift metastore needs hive-metastore-client (tablespec[catalog])")
    import logging
    import socket

    from tablespec.catalog.thrift import ThriftMetastore
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        uri = f"thrift://127.0.0.1:{silent.getsockname()[1]}"
        catalog = ThriftMetastore(uri, "$TABLESPEC_CATALOG", timeout_ms=300)
        with caplog.at_level(logging.DEBUG), pytest.raises(CatalogError) as refused:
            catalog.tables("sales")
    assert str(refused.value) == (f"$TABLESPEC_CATALOG: reading database sales in the Hive metastore at {uri} "
                                  "failed: no answer within 0.3s")
    assert [r for r in caplog.records if r.name.startswith("thrift")] == []


SPEC = """\
apiVersion: tablespec/v1
kind: HudiTable
metadata: {{name: {name}}}
spec:
  location: sales/{name}
  columns:
    - {{name: id, type: long, nullable: false}}
    - {{name: day, type: string}}
  recordKey: {{fields: [id]}}
  partitioning: {{fields: [day]}}
  catalog: {{database: sales}}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    specs = {name: SPEC.format(name=name) for name in ("orders", "returns", "refunds")}
    return scratch_project(tmp_path, monkeypatch, specs, "warehouse: lake\ncatalog: hive\n")



def test_plan_and_apply_register_tables_without_spark(project, capsys):
    code, out, err = run(capsys, "plan", "specs")
    assert code == 0, err
    assert out.count("~ catalog_sync") == 3 and "sales.orders is not in the catalog" in out
    code, out, err = run(capsys, "apply", "specs", "--auto-approve")
    assert code == 0, err
    assert "registered=1" in out
    registered = EmbeddedMetastore(project / ".tablespec" / "metastore.db", "t").tables("sales")
    assert sorted(registered) == ["orders", "refunds", "returns"]
    assert registered["orders"].location == f"file:{project / 'lake' / 'sales' / 'orders'}"
    assert run(capsys, "plan", "specs")[1].startswith("No changes.")


def test_plan_reads_the_catalog_once_per_database(project):
    from tablespec.hudi.table import Location
    from tablespec.plan.builder import plan_observed
    from tablespec.spec.loader import load_specs
    store = EmbeddedMetastore(project / ".tablespec" / "metastore.db", "t")
    plan, _ = plan_observed(load_specs(["specs"]).specs, Location.parse(str(project / "lake")), catalog=store)
    assert len(plan.tables) == 3 and store.reads == 1


def test_a_dropped_registration_is_planned_again(project, capsys):
    run(capsys, "apply", "specs", "--auto-approve")
    db = sqlite3.connect(project / ".tablespec" / "metastore.db")
    with db:
        db.execute("DELETE FROM TABLE_PARAMS WHERE PARAM_KEY = 'spark.sql.sources.provider'")
    code, out, _ = run(capsys, "plan", "specs")
    assert out.count("~ catalog_sync") == 3
    assert out.count('+ catalog.properties.spark.sql.sources.provider = "hudi"') == 3
    run(capsys, "apply", "specs", "--auto-approve")
    assert run(capsys, "plan", "specs")[1].startswith("No changes.")


DEFAULT_LINE = "Catalog: the embedded metastore .tablespec/metastore.db (the default: the project names no catalog)."


def test_the_examples_are_registered_in_the_default_catalog_without_a_project_file(tmp_path, monkeypatch, capsys):
    """The example specs ask for a catalog: where no project file (nor $TABLESPEC_CATALOG) names one,
    the embedded metastore, the default, registers them, and each rendering of the plan says so in
    one line (issue 35: `tablespec plan specs/examples` failed with "the project names no catalog")."""
    scratch_project(tmp_path, monkeypatch, EXAMPLES)
    code, out, err = run(capsys, "plan", "specs", "--warehouse", "lake")
    assert code == 0, err
    assert out.splitlines()[1] == DEFAULT_LINE and out.count("Catalog:") == 1 and out.count("~ catalog_sync") == 3
    markdown = run(capsys, "plan", "specs", "--warehouse", "lake", "--format", "markdown")[1]
    assert markdown.count(DEFAULT_LINE) == 1
    data = json.loads(run(capsys, "plan", "specs", "--warehouse", "lake", "--format", "json")[1])
    assert data["default_catalog"] == str(tmp_path / ".tablespec" / "metastore.db")
    code, out, err = run(capsys, "apply", "specs", "--warehouse", "lake", "--auto-approve")
    assert code == 0 and DEFAULT_LINE in out, err
    store = EmbeddedMetastore(tmp_path / ".tablespec" / "metastore.db", "t")
    assert (sorted(store.tables("sales")), sorted(store.tables("analytics"))) == (["customers", "orders"], ["events"])
    out = run(capsys, "plan", "specs", "--warehouse", "lake")[1]
    assert out.startswith("No changes.") and out.splitlines()[1] == DEFAULT_LINE
    assert run(capsys, "apply", "specs", "--warehouse", "lake", "--auto-approve")[:2] == (0, out)


def test_a_saved_plan_on_the_default_catalog_applies_to_that_file_only(project, capsys, monkeypatch, tmp_path):
    (project / "tablespec.project.yaml").write_text("warehouse: lake\n")
    assert run(capsys, "plan", "specs", "--out", "plan.json")[0] == 0
    assert json.loads((project / "plan.json").read_text())["default_catalog"] == str(project / ".tablespec" / "metastore.db")
    monkeypatch.setenv("TABLESPEC_CATALOG", "glue")
    code, _, err = run(capsys, "apply", "plan.json")
    assert code == 1 and "plan.json: the plan registers tables in the embedded metastore" in err, err
    assert "would use GlueCatalog() ($TABLESPEC_CATALOG)" in err
    monkeypatch.delenv("TABLESPEC_CATALOG")
    code, out, err = run(capsys, "apply", "plan.json")
    assert code == 0 and "registered=1" in out, err
    assert run(capsys, "plan", "specs", "--out", "plan.json")[1].startswith("No changes.")
    assert run(capsys, "apply", "plan.json")[0] == 0          # nothing to sync: the same file, no refusal
    assert sorted(EmbeddedMetastore(project / ".tablespec" / "metastore.db", "t").tables("sales")) == [
        "orders", "refunds", "returns"]


@pytest.mark.parametrize("value, message", [
    ("thrift://metastore", "$TABLESPEC_CATALOG: catalog must be `hive`"),
    (f"thrift://{'a' * 64}:9083", "$TABLESPEC_CATALOG: catalog must be `hive`"),    # issue 34: a UnicodeError traceback
    ("thrift://a..b:9083", "$TABLESPEC_CATALOG: catalog must be `hive`"),
    ("thrift://-a.b:9083", "$TABLESPEC_CATALOG: catalog must be `hive`"),
    (f"thrift://{'a.' * 127}b:9083", "$TABLESPEC_CATALOG: catalog must be `hive`"),
    ("thrift://[::g]:9083", "$TABLESPEC_CATALOG: catalog must be `hive`"),
    ("thrift://metastore:0", "$TABLESPEC_CATALOG: catalog must be `hive`"),
    ("thrift://metastore:65536", "$TABLESPEC_CATALOG: catalog must be `hive`"),
    ("thrift://127.0.0.1:1", "$TABLESPEC_CATALOG: cannot reach the Hive metastore at thrift://127.0.0.1:1"),
])
def test_bad_catalog_setting_leaves_tables_and_catalog_untouched(project, capsys, monkeypatch, value, message):
    monkeypatch.setenv("TABLESPEC_CATALOG", value)
    for command in (["plan", "specs"], ["apply", "specs", "--auto-approve"]):
        code, _, err = run(capsys, *command)
        assert code == 1 and err.removeprefix("error: ").startswith(message) and "Traceback" not in err, err
        assert len([line for line in err.splitlines() if line != "1 error."]) == 1, err
    assert not (project / "lake").exists() and not (project / ".tablespec").exists()
    assert not HudiTable.open(str(project / "lake" / "sales" / "orders")).exists


@pytest.mark.parametrize("value, why", [
    (f"thrift://{'a' * 64}:9083", "is longer than 63 characters"), ("thrift://a..b:9083", "an empty label")])
def test_a_bad_host_in_the_project_file_names_its_line(project, capsys, value, why):
    (project / "tablespec.project.yaml").write_text(f"warehouse: lake\ncatalog: {value}\n")
    code, _, err = run(capsys, "validate", "specs")
    assert code == 1 and "tablespec.project.yaml:2:" in err and "catalog" in err and why in err, err
    assert "Traceback" not in err


def test_unreadable_metastore_is_a_clear_error(project, capsys):
    (project / ".tablespec").mkdir()
    Path(project / ".tablespec" / "metastore.db").write_text("not a database")
    code, _, err = run(capsys, "plan", "specs")
    assert code == 1 and "tablespec.project.yaml: catalog: cannot read the embedded metastore" in err, err


def test_import_starts_from_a_catalog_name(project, capsys):
    run(capsys, "apply", "specs", "--auto-approve")
    code, out, err = run(capsys, "import", "sales.orders", "--warehouse", "lake")
    assert code == 0, err
    assert "location: sales/orders" in out and "catalog: {database: sales}" in out and "name: orders" in out
    (project / "imported").mkdir()
    (project / "imported" / "orders.yaml").write_text(out)
    assert run(capsys, "plan", "imported")[1].startswith("No changes.")
    code, _, err = run(capsys, "import", "sales.missing")
    assert code == 1 and "import sales.missing: " in err and "the catalog has no table sales.missing" in err


def test_catalog_conf_prints_the_spark_settings_that_open_the_catalog(project, capsys, monkeypatch):
    """`tablespec catalog conf`: a properties file for `spark-sql --properties-file` (the demo's last
    command; tests/interop/test_catalog_hive.py runs it). No JVM: the jars come from the cache."""
    from tablespec.engine.hudi_bundle import HudiBundleUnavailable, bundle_jar, sqlite_jdbc_jar
    from tablespec.hudi.formats.properties import parse_properties
    try:
        jars = f"{bundle_jar(fetch=False)}:{sqlite_jdbc_jar(fetch=False)}"
    except HudiBundleUnavailable as e:
        pytest.skip(f"not cached: {e}")
    code, out, err = run(capsys, "catalog", "conf")
    assert code == 0, err
    conf = parse_properties(out)
    metastore = project / ".tablespec" / "metastore.db"
    assert conf["spark.driver.extraClassPath"] == jars and conf["spark.sql.catalogImplementation"] == "hive"
    assert conf["spark.hadoop.javax.jdo.option.ConnectionURL"].startswith(f"jdbc:sqlite:{metastore.as_uri()}?")
    assert conf["spark.sql.extensions"] == "org.apache.spark.sql.hudi.HoodieSparkSessionExtension"
    assert conf["spark.sql.warehouse.dir"] == str(project / ".tablespec" / "spark-warehouse")
    assert run(capsys, "catalog", "conf", "--out", "spark.conf")[:2] == (0, "")
    assert parse_properties((project / "spark.conf").read_text()) == conf

    monkeypatch.setenv("TABLESPEC_CATALOG", "thrift://127.0.0.1:9083")
    conf = parse_properties(run(capsys, "catalog", "conf")[1])
    assert conf["spark.hadoop.hive.metastore.uris"] == "thrift://127.0.0.1:9083"
    assert "spark.hadoop.javax.jdo.option.ConnectionURL" not in conf

    monkeypatch.setenv("TABLESPEC_CATALOG", "glue")
    code, out, err = run(capsys, "catalog", "conf")
    assert (code, out) == (1, "") and len(err.splitlines()) == 1 and err.startswith("error: $TABLESPEC_CATALOG: Spark reaches AWS Glue")
    monkeypatch.delenv("TABLESPEC_CATALOG")
    (project / "tablespec.project.yaml").write_text("warehouse: lake\n")        # the default: the embedded metastore
    code, out, err = run(capsys, "catalog", "conf")
    assert code == 0 and parse_properties(out)["spark.hadoop.javax.jdo.option.ConnectionURL"].startswith(
        f"jdbc:sqlite:{metastore.as_uri()}?"), err

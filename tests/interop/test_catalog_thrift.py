"""A real Hive metastore over Thrift: Hive 2.3.9's standalone `HiveMetaStore` (pip pyspark's jars)
on loopback, read and written by tablespec without a JVM of its own: plan, apply, ingest into a new
partition; what it holds is what the embedded metastore holds for the same table, and an
unreachable metastore is a one-line error naming the setting, with nothing touched."""
from __future__ import annotations

from decimal import Decimal

import pytest
from _support import cli as _cli
from _support import scratch_project
from catalog_process import standalone_metastore

from tablespec.catalog import EmbeddedMetastore, open_catalog
from tablespec.catalog.diff import diff
from tablespec.hudi.table import HudiTable
from tablespec.spec.loader import load_specs
from tablespec.spec.project import CatalogSetting
from tablespec.table import Table

pytest.importorskip("thrift_files", reason="the Thrift metastore needs hive-metastore-client (tablespec[catalog])")

SPEC = """\
apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: orders}
spec:
  location: sales/orders
  columns:
    - {name: id, type: long, nullable: false}
    - {name: amount, type: "decimal(12,2)"}
    - {name: day, type: string}
  recordKey: {fields: [id]}
  partitioning: {fields: [day]}
  catalog: {database: sales}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    return scratch_project(tmp_path, monkeypatch, {"orders": SPEC})



def test_thrift_metastore_plan_apply_ingest(project, spark, capsys, tmp_path):
    (tmp_path / "hms").mkdir()
    with standalone_metastore(tmp_path / "hms" / "metastore.db") as uri:
        (project / "tablespec.project.yaml").write_text(f"warehouse: lake\ncatalog: {uri}\n")
        code, out, err = _cli(capsys, "plan", "specs")
        assert code == 0 and "~ catalog_sync" in out, err
        code, out, err = _cli(capsys, "apply", "specs", "--auto-approve")
        assert code == 0 and "registered=1" in out, err
        assert _cli(capsys, "plan", "specs")[1].startswith("No changes.")

        setting = CatalogSetting(uri, "test", project)
        catalog = open_catalog(setting)
        spec = load_specs(["specs/orders.yaml"]).specs[0].spec
        table = Table(spec, str(project / "lake" / "sales" / "orders"), spark, catalog=catalog)
        table.write(spark.createDataFrame([(1, Decimal("1.00"), "2024-01-01"), (2, Decimal("2.00"), "2024-01-02")],
                                          table.spec_ddl()), "upsert")
        registered = catalog.tables("sales")["orders"]
        assert sorted(registered.partitions) == [("2024-01-01",), ("2024-01-02",)]
        assert _cli(capsys, "plan", "specs")[1].startswith("No changes.")

        embedded = EmbeddedMetastore(project / "embedded.db", "test")        # the same sync, into SQLite
        from tablespec.apply import sync_table
        from tablespec.state import observe
        sync_table(embedded, spec, observe(HudiTable.open(str(project / "lake" / "sales" / "orders"))))
        assert diff(registered, embedded.tables("sales")["orders"]).in_sync
    # the metastore is gone: a clear error naming the setting, and the table untouched
    head = HudiTable.open(str(project / "lake" / "sales" / "orders")).timeline.head
    code, _, err = _cli(capsys, "plan", "specs")
    assert code == 1 and f"tablespec.project.yaml: catalog: cannot reach the Hive metastore at {uri}" in err, err
    assert "Traceback" not in err
    assert HudiTable.open(str(project / "lake" / "sales" / "orders")).timeline.head == head


def test_a_metastore_in_a_folder_named_with_hash_question_mark_and_percent(project, capsys, tmp_path):
    """The JDBC URL Hive's metastore (as Spark's Hive client) opens the SQLite file with is quoted: a
    registration made through it is in that very file (issue 34: unquoted, `?` cut the path short)."""
    folder = tmp_path / "h#m?s%20"
    folder.mkdir()
    db = folder / "metastore.db"
    with standalone_metastore(db) as uri:
        (project / "tablespec.project.yaml").write_text(f"warehouse: lake\ncatalog: {uri}\n")
        code, out, err = _cli(capsys, "apply", "specs", "--auto-approve")
        assert code == 0 and "registered=1" in out, err
        assert _cli(capsys, "plan", "specs")[1].startswith("No changes.")
    assert sorted(EmbeddedMetastore(db, "test").tables("sales")) == ["orders"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("h")] == ["h#m?s%20"]   # nothing beside it

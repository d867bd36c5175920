"""`catalog_sync` on version 9 tables (Hudi 1.x's layout: the registration reads the table's
partitions and its latest instant from the layout-2 timeline): registered at creation, and a
registration changed since is synced again by `apply` on the existing version 9 table."""
from __future__ import annotations

import sqlite3

import pytest
from _support import cli as run
from _support import scratch_project

from tablespec.catalog import EmbeddedMetastore
from tablespec.hudi.table import HudiTable

SPEC = """\
apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: orders}
spec:
  location: sales/orders
  tableVersion: 9
  columns:
    - {name: id, type: long, nullable: false}
    - {name: day, type: string}
  recordKey: {fields: [id]}
  partitioning: {fields: [day]}
  catalog: {database: sales}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    return scratch_project(tmp_path, monkeypatch, {"orders": SPEC}, "warehouse: lake\ncatalog: hive\n")


def test_catalog_sync_runs_on_a_version_9_table(project, capsys):
    code, out, err = run(capsys, "apply", "specs", "--auto-approve")
    assert code == 0 and "registered=1" in out, out + err
    table = HudiTable.open(str(project / "lake" / "sales" / "orders"))
    assert table.config.version == 9 and table.timeline.layout == 2
    db = sqlite3.connect(project / ".tablespec" / "metastore.db")
    with db:
        db.execute("DELETE FROM TABLE_PARAMS WHERE PARAM_KEY = 'spark.sql.sources.provider'")
    code, out, err = run(capsys, "plan", "specs")
    assert code == 0 and out.count("~ catalog_sync") == 1, out + err
    code, out, err = run(capsys, "apply", "specs", "--auto-approve")
    assert code == 0 and "catalog_sync done" in out, out + err
    registered = EmbeddedMetastore(project / ".tablespec" / "metastore.db", "t").tables("sales")
    assert registered["orders"].location == f"file:{project / 'lake' / 'sales' / 'orders'}"
    assert run(capsys, "plan", "specs")[1].startswith("No changes.")

"""AWS Glue through moto's server on loopback (the standard AWS environment, AWS_ENDPOINT_URL): plan and
apply register the tables, boto3's get_table / get_partitions show Hudi's registration, a changed
registration is planned and repaired, and an unreachable Glue is an error naming the setting."""
from __future__ import annotations

import boto3
import pytest
from _support import S3_KEY_ID, S3_SECRET, scratch_project
from _support import cli as _run

from tablespec.apply import sync_table
from tablespec.catalog import EmbeddedMetastore
from tablespec.catalog.diff import diff
from tablespec.catalog.glue import GlueCatalog
from tablespec.hudi.table import HudiTable
from tablespec.spec.loader import load_specs
from tablespec.state import observe

SPEC = """\
apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: orders}
spec:
  location: sales/orders
  columns:
    - {name: id, type: long, nullable: false}
    - {name: day, type: string}
  recordKey: {fields: [id]}
  partitioning: {fields: [day]}
  catalog: {database: sales}
"""
GLUE_PROJECT = "warehouse: lake\ncatalog: glue\n"


@pytest.fixture
def glue(s3_server, monkeypatch):
    for name, value in {"AWS_ENDPOINT_URL": s3_server.endpoint, "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1",
                        "AWS_ACCESS_KEY_ID": S3_KEY_ID, "AWS_SECRET_ACCESS_KEY": S3_SECRET}.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "TABLESPEC_WAREHOUSE"):
        monkeypatch.delenv(name, raising=False)
    client = boto3.client("glue")
    for db in client.get_databases()["DatabaseList"]:   # the server lives for the whole run
        client.delete_database(Name=db["Name"])
    return client



def test_glue_registration_through_moto(glue, tmp_path, monkeypatch, capsys):
    scratch_project(tmp_path, monkeypatch, {"orders": SPEC}, GLUE_PROJECT)
    code, out, err = _run(capsys, "apply", "specs", "--auto-approve")
    assert code == 0 and "registered=1" in out, err
    table = glue.get_table(DatabaseName="sales", Name="orders")["Table"]
    assert table["StorageDescriptor"]["InputFormat"] == "org.apache.hudi.hadoop.HoodieParquetInputFormat"
    assert table["Parameters"]["spark.sql.sources.provider"] == "hudi"
    assert [c["Name"] for c in table["PartitionKeys"]] == ["day"]
    assert _run(capsys, "plan", "specs")[1].startswith("No changes.")

    spec = load_specs(["specs/orders.yaml"]).specs[0].spec
    base = tmp_path / "lake" / "sales" / "orders"
    embedded = EmbeddedMetastore(tmp_path / "embedded.db", "test")
    sync_table(embedded, spec, observe(HudiTable.open(str(base))))
    assert diff(GlueCatalog("test").tables("sales")["orders"], embedded.tables("sales")["orders"]).in_sync

    glue.batch_create_partition(DatabaseName="sales", TableName="orders", PartitionInputList=[{
        "Values": ["stale"], "StorageDescriptor": {"Location": "file:/elsewhere", "Columns": []}}])
    code, out, _ = _run(capsys, "plan", "specs")
    assert '- catalog.partitions.dropped = "stale"' in out
    assert _run(capsys, "apply", "specs", "--auto-approve")[0] == 0
    assert glue.get_partitions(DatabaseName="sales", TableName="orders")["Partitions"] == []
    assert _run(capsys, "plan", "specs")[1].startswith("No changes.")


def test_glue_failure_names_the_setting_and_touches_nothing(glue, tmp_path, monkeypatch, capsys):
    scratch_project(tmp_path, monkeypatch, {"orders": SPEC}, GLUE_PROJECT)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")   # nothing listens there
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    code, _, err = _run(capsys, "apply", "specs", "--auto-approve")
    assert code == 1 and "tablespec.project.yaml: catalog: reading database sales in AWS Glue failed" in err, err
    assert S3_SECRET not in err and "Traceback" not in err
    assert not (tmp_path / "lake").exists()

"""The table handle carries its storage options (issue 28): there is no module-level storage
setting, so two tables reached with different options in one process keep their own, and a
project's `storage:` section ends with its command."""
from __future__ import annotations

import pickle

import pytest
from _support import ORDERS_SPEC
from s3server import free_port

from tablespec.cli import main
from tablespec.hudi.table import HudiTable, StorageOptions
from tablespec.state import observe


@pytest.fixture
def s3_table(s3_bucket, tmp_path, monkeypatch, capsys):
    """An orders table on the S3 test server (whose endpoint the environment names), and its specs."""
    monkeypatch.delenv("TABLESPEC_WAREHOUSE", raising=False)
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "orders.yaml").write_text(ORDERS_SPEC)
    assert main(["apply", str(specs), "--warehouse", s3_bucket + "/wh", "--auto-approve"]) == 0
    capsys.readouterr()
    return f"{s3_bucket}/wh/sales/orders", specs


def test_two_tables_with_different_storage_options_keep_their_own(s3_table):
    location, _ = s3_table
    nowhere = f"http://127.0.0.1:{free_port()}"   # nothing listens there
    here = HudiTable.open(location)                # the environment's endpoint: the test server
    there = HudiTable.open(location, StorageOptions.of({"endpoint": nowhere}, "elsewhere.yaml: storage"))
    assert observe(here).exists
    with pytest.raises(OSError):
        observe(there)
    assert observe(HudiTable.open(location)).exists   # opened after `there`: its options did not stick
    assert here.refresh().config is not None
    shipped = pickle.loads(pickle.dumps(there.location))   # what a Spark task receives
    assert shipped.storage.config.endpoint == nowhere and here.location.storage.config.endpoint != nowhere


def test_a_project_storage_section_ends_with_its_command(s3_table, tmp_path, monkeypatch, capsys):
    location, specs = s3_table
    warehouse = location.rsplit("/", 2)[0]
    elsewhere, plain = tmp_path / "elsewhere", tmp_path / "plain"
    elsewhere.mkdir()
    plain.mkdir()
    (elsewhere / "tablespec.project.yaml").write_text(f"storage: {{endpoint: 'http://127.0.0.1:{free_port()}'}}\n")
    monkeypatch.chdir(elsewhere)   # the project's endpoint wins over the environment's
    assert main(["plan", str(specs), "--warehouse", warehouse]) == 1
    assert "Traceback" not in capsys.readouterr().err
    monkeypatch.chdir(plain)       # no project file: the environment's endpoint again, in the same process
    assert main(["plan", str(specs), "--warehouse", warehouse, "--detailed-exitcode"]) == 0
    assert capsys.readouterr().out.startswith("No changes.")

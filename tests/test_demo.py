"""The demo deletes nothing it did not create: a warehouse holding anything but the example
tables, or one the demo did not mark, is refused untouched; its own warehouse is reused.
No Spark: the refusal comes before any command runs, and the tables here are created by `apply`."""
from __future__ import annotations

import hashlib
import os

import pytest
from _support import EXAMPLES, storage_and_base

from tablespec.catalog import EmbeddedMetastore
from tablespec.cli import main as cli
from tablespec.demo import MARKER, demo_tables, prepare
from tablespec.demo import main as demo
from tablespec.hudi.table import Location
from tablespec.spec.project import PROJECT_FILE, load_project

FOREIGN = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: readings}
spec:
  location: sensors/readings
  columns:
    - {name: id, type: string, nullable: false}
  recordKey: {fields: [id]}
"""


def tree(root) -> dict[str, str]:
    """Every file and directory under `root`: relative path -> content digest ("dir" for directories)."""
    out = {}
    for base, dirs, files in os.walk(root):
        for d in dirs:
            out[os.path.relpath(os.path.join(base, d), root)] = "dir"
        for f in files:
            path = os.path.join(base, f)
            out[os.path.relpath(path, root)] = hashlib.sha256(open(path, "rb").read()).hexdigest()
    return out


def apply(specs, warehouse, project) -> None:
    """`apply` in `project` (a project file; written, naming the embedded metastore, when missing):
    the example specs are registered in a catalog."""
    if not project.exists():
        project.write_text("catalog: hive\n")
    assert cli(["--project", str(project), "apply", str(specs), "--warehouse", str(warehouse), "--auto-approve"]) == 0


def test_the_demo_tables_come_from_the_example_specs():
    assert demo_tables() == ["analytics/events", "sales/customers", "sales/orders"]


@pytest.mark.parametrize("case", ["foreign table beside the demo's", "a folder with a file", "demo tables, no marker",
                                  "a link out of the warehouse"])
def test_a_warehouse_it_did_not_make_is_refused_untouched(tmp_path, capsys, case):
    warehouse = tmp_path / "lake"
    if case == "foreign table beside the demo's":
        prepare(Location.parse(str(warehouse)))  # marked by the demo, then a real table of someone else's lands beside
        apply(EXAMPLES, warehouse, tmp_path / "lake-inputs" / PROJECT_FILE)
        (tmp_path / "readings.yaml").write_text(FOREIGN)
        apply(tmp_path / "readings.yaml", warehouse, tmp_path / "lake-inputs" / PROJECT_FILE)
    elif case == "a link out of the warehouse":
        # marked, and `sales` leads elsewhere, to a folder holding only what looks like a demo table
        prepare(Location.parse(str(warehouse)))
        elsewhere = tmp_path / "elsewhere"
        (elsewhere / "orders").mkdir(parents=True)
        (elsewhere / "orders" / "data.parquet").write_text("someone else's")
        os.symlink(elsewhere, warehouse / "sales")
    elif case == "a folder with a file":
        (warehouse / "notes").mkdir(parents=True)
        (warehouse / "notes" / "todo.txt").write_text("keep me")
    else:
        apply(EXAMPLES, warehouse, tmp_path / PROJECT_FILE)
    capsys.readouterr()
    before = tree(tmp_path)
    code = demo(["--warehouse", str(warehouse)])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert len(err.strip().splitlines()) == 1 and "the demo deletes nothing it did not create" in err, err
    assert {"foreign table beside the demo's": "sensors/readings/", "a folder with a file": "notes/todo.txt",
            "demo tables, no marker": f"no {MARKER} marker",
            "a link out of the warehouse": "symbolic link (sales)"}[case] in err
    assert tree(tmp_path) == before  # byte-identical, and no inputs folder beside it


def test_an_inputs_folder_it_did_not_make_is_refused_untouched(tmp_path, capsys):
    (tmp_path / "lake-inputs").mkdir()
    (tmp_path / "lake-inputs" / "orders-1.parquet").write_bytes(b"someone's data")
    before = tree(tmp_path)
    assert demo(["--warehouse", str(tmp_path / "lake")]) == 1
    assert "lake-inputs: exists and was not created by the demo" in capsys.readouterr().err
    assert tree(tmp_path) == before


def test_its_own_warehouse_is_reused_and_only_the_demo_tables_are_removed(tmp_path, capsys):
    warehouse = tmp_path / "demo-warehouse"
    assert prepare(Location.parse(str(warehouse))) == tmp_path / "demo-warehouse-inputs"  # a new warehouse: marked
    assert (warehouse / MARKER).is_file() and (tmp_path / "demo-warehouse-inputs" / MARKER).is_file()
    project = tmp_path / "demo-warehouse-inputs" / PROJECT_FILE
    assert load_project(project).catalog == "hive" and load_project(project).warehouse == str(warehouse)
    apply(EXAMPLES, warehouse, project)  # what the demo's first run creates, registered in the demo's metastore
    metastore = EmbeddedMetastore(tmp_path / "demo-warehouse-inputs" / ".tablespec" / "metastore.db", "test")
    assert set(metastore.tables("sales")) == {"orders", "customers"} and set(metastore.tables("analytics")) == {"events"}
    (tmp_path / "demo-warehouse-inputs" / "orders-1.parquet").write_bytes(b"an earlier run's input")
    (tmp_path / "beside.txt").write_text("not the demo's")
    assert all((warehouse / t / ".hoodie" / "hoodie.properties").is_file() for t in demo_tables())
    capsys.readouterr()

    prepare(Location.parse(str(warehouse)))
    assert "removing the demo table" in capsys.readouterr().out
    assert not metastore.db.exists()   # the earlier run's registrations went with its tables
    assert tree(warehouse).keys() == {MARKER, "sales", "analytics"}  # the tables are gone, the marker stays
    assert (tmp_path / "beside.txt").read_text() == "not the demo's"
    code = cli(["--project", str(project), "plan", str(EXAMPLES), "--detailed-exitcode"])  # its warehouse
    assert code == 2 and "3 to create" in capsys.readouterr().out


def test_on_a_bucket_the_same_rules_hold(s3_bucket, tmp_path, capsys):
    """An s3:// warehouse: a foreign object is refused untouched; the demo's own tables are reused."""
    warehouse = s3_bucket + "/demo"
    storage, _ = storage_and_base(warehouse)
    prepare(Location.parse(warehouse))
    apply(EXAMPLES, warehouse, tmp_path / PROJECT_FILE)
    storage.write_bytes(warehouse + "/other/table/data.parquet", b"someone's")
    listing = sorted((f.path, f.size) for f in storage.walk_files(warehouse))
    assert demo(["--warehouse", warehouse]) == 1
    assert "holds other/table/data.parquet, which is in none of the demo's tables" in capsys.readouterr().err
    assert sorted((f.path, f.size) for f in storage.walk_files(warehouse)) == listing
    storage.delete(warehouse + "/other/table/data.parquet")
    prepare(Location.parse(warehouse))
    assert [f.path for f in storage.walk_files(warehouse)] == [warehouse + "/" + MARKER]

"""Tables whose files someone edited: real tables tablespec wrote (version 9 and 6), one file
damaged or one path in their files pointed outside, then `plan` and `apply`. Each is refused in one
line naming the file, and every file of the table (and of the folders beside it) is byte-identical
afterwards."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from _support import cli, scratch_project, table_files
from helpers import make_table

pytestmark = pytest.mark.spark

SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {{name: orders}}
spec:
  location: orders
  tableVersion: {version}
  columns:
    - {{name: id, type: string, nullable: false}}
    - {{name: v, type: int}}
    - {{name: p, type: string}}
  recordKey: {{fields: [id]}}
  partitioning: {{fields: [p]}}
"""


@pytest.fixture(scope="module", params=[9, 6])
def written(request, spark, tmp_path_factory) -> tuple[Path, str]:
    """A warehouse holding one table tablespec created and wrote two commits to (its spec text)."""
    root = tmp_path_factory.mktemp(f"v{request.param}")
    spec = SPEC.format(version=request.param)
    table = make_table(spark, root / "wh", spec)
    table.write(spark.createDataFrame([(f"k{i}", i, f"p{i % 2}") for i in range(6)], "id string, v int, p string"))
    table.write(spark.createDataFrame([("k1", 100, "p1"), ("k9", 9, "p0")], "id string, v int, p string"))
    return root / "wh", spec


@pytest.fixture
def project(written, tmp_path, monkeypatch, capsys) -> Path:
    """A project over a copy of the written warehouse, with a folder of someone else's beside the table."""
    warehouse, spec = written
    shutil.copytree(warehouse, tmp_path / "wh")
    (tmp_path / "wh" / "other").mkdir()
    (tmp_path / "wh" / "other" / "keep.txt").write_text("not tablespec's")
    scratch_project(tmp_path, monkeypatch, {"orders": spec}, "warehouse: wh\n")
    code, out, err = cli(capsys, "plan", "specs")
    assert code == 0 and out.startswith("No changes."), out + err
    return tmp_path


def refused_untouched(capsys, root: Path, *needles: str, commands=("plan", "apply")) -> None:
    """`commands` (`plan`, `apply`) each refuse in one line holding `needles`; no file under `root` changed."""
    before = table_files(root)
    for argv in [("plan", "specs"), ("apply", "specs", "--auto-approve")][2 - len(commands):]:
        code, out, err = cli(capsys, *argv)
        lines = err.strip().splitlines()
        assert code == 1 and len(lines) == 1 and "Traceback" not in err, (argv, out, err)
        assert all(n in lines[0] for n in needles), (argv, lines[0])
    assert table_files(root) == before


@pytest.mark.parametrize("written", [9], indirect=True)   # layout-2 names carry a completion time
@pytest.mark.parametrize("completion", ["2026112800182X509", "2026112800182350"])
def test_a_malformed_completion_time_is_refused_not_rolled_back(project, capsys, completion):
    """A completed version 9 commit whose completion time was damaged is no pending write to roll back."""
    timeline = project / "wh" / "orders" / ".hoodie" / "timeline"
    done = sorted(p for p in timeline.iterdir() if p.name.endswith(".commit") and "_" in p.name)[-1]
    damaged = done.with_name(f"{done.name.split('_')[0]}_{completion}.commit")
    done.rename(damaged)
    refused_untouched(capsys, project, str(damaged), "not a timeline file name")


def edit_properties(project: Path, key: str, value: str) -> None:
    """Set `key` in the table's hoodie.properties, as someone who can edit that one file would."""
    props = project / "wh" / "orders" / ".hoodie" / "hoodie.properties"
    lines = [line for line in props.read_text().splitlines() if not line.startswith(key + "=")]
    props.write_text("\n".join([*lines, f"{key}={value}"]) + "\n")


@pytest.mark.parametrize(("written", "key", "value"), [
    (6, "hoodie.table.metadata.partitions", "files,../../../other"),
    (9, "hoodie.table.metadata.partitions", "files,../../../other"),
    (6, "hoodie.table.metadata.partitions.inflight", "../../../other"),
    (9, "hoodie.table.metadata.partitions.inflight", "../../../other"),
    (9, "hoodie.table.index.defs.path", "../other/keep.txt"),
    (9, "hoodie.timeline.history.path", "../../../other"),
    (6, "hoodie.archivelog.folder", "../../other"),
], indirect=["written"])
def test_a_path_in_hoodie_properties_leading_outside_is_refused(project, capsys, key, value):
    """Whoever can edit one table's hoodie.properties cannot steer `apply` to delete or rewrite the
    folders beside it: the key is refused in one line, and the folder beside the table is untouched."""
    edit_properties(project, key, value)
    refused_untouched(capsys, project, "hoodie.properties", key)


@pytest.mark.parametrize("written", [9], indirect=True)   # index definitions are Hudi 1.x's
@pytest.mark.parametrize("content", ['{"indexDefinitions": 5}', '{"indexDefinitions": {"x": [1]}}', "[]",
                                     '{"indexDefinitions": {}, "since": 1e999}', '{"indexDefinitions": {}, "n": NaN}'])
def test_crafted_index_definitions_refuse_an_index_change_before_any_change(project, capsys, content):
    """Version 9: an index change rewrites .hoodie/.index_defs/index.json; a file that holds no index
    definitions (or numbers strict JSON has not) is refused before hoodie.properties changes."""
    table = project / "wh" / "orders"
    defs = table / ".hoodie" / ".index_defs" / "index.json"
    defs.parent.mkdir(exist_ok=True)
    defs.write_text(content)
    spec = project / "specs" / "orders.yaml"
    spec.write_text(spec.read_text() + "  index: {type: RECORD_LEVEL}\n")
    refused_untouched(capsys, project, str(defs), commands=("apply",))
    code, out, _ = cli(capsys, "plan", "specs")
    assert code == 0 and "Plan: 0 to create, 1 to update" in out   # the change is still to do

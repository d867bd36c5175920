"""The table version in the spec: `spec.tableVersion: 9` on a version-6 table tablespec wrote (Hudi's
metadata table on, part of its history archived) plans `upgrade_table`, and apply leaves the table as
Apache Hudi 1.2.0's own upgrade does; Hudi 1.2.0 (its own process) reads it as tablespec does (snapshot,
time travel to a pre-upgrade instant) and writes into it with `hudi-options` (its 1.2 settings), after
which tablespec plans clean; hudi-rs reads it. A kill -9 at each step of the upgrade leaves the table
readable at version 6 or 9, and the next apply finishes. A table a project creates at version 9 is
read and written by Hudi 1.2.0 too."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from helpers import hudi_rs_rows, make_table, rows, run_script, tablespec_rows
from hudi_process import read_step, write_step
from interop_support import HISTORY_DDL as DDL
from interop_support import SHORT_LIVED_JVM, apply_until_done, cli, history_spec

from tablespec.faults import CRASH_ENV
from tablespec.hudi.archive import ArchivedTimeline
from tablespec.hudi.formats.properties import parse_properties
from tablespec.hudi.table import HudiTable
from tablespec.spec.loader import load_spec_text
from tablespec.table import Table

SPEC = history_spec("upgraded")
V9 = history_spec("upgraded", spec_lines=("tableVersion: 9",))
CRASH_POINTS = ["upgrade.metadata_table.unnamed", "upgrade.metadata_table", "upgrade.timeline", "upgrade.history",
                "upgrade.switched"]


def _by_id(read) -> dict:
    return {dict(r)["id"]: dict(r)["v"] for r in read}


def _v6_table(spark, warehouse, writes: int = 9) -> tuple[Table, list[str]]:
    """A version-6 table tablespec wrote: nine upserts by default, so that its metadata table compacted
    and archiving moved the oldest commits to the archived timeline."""
    table = make_table(spark, warehouse, SPEC)
    written = [table.write(spark.createDataFrame([(f"k{j}", i, i, f"d{j % 2}") for j in range(i, i + 3)], DDL)).instant
               for i in range(writes)]
    return table, written


def _upgrades(capsys, spec_file, warehouse) -> None:
    """Apply until the table matches its spec: the upgrade, then (the next plan) the version 9 metadata
    table the upgrade retired, and housekeeping at most."""
    kinds = apply_until_done(capsys, spec_file, warehouse)
    assert kinds[0] == "upgrade_table" and set(kinds[1:]) <= {"build_metadata_table", "clean"}, kinds


def _props(location) -> dict[str, str]:
    return parse_properties(Path(location, ".hoodie", "hoodie.properties").read_text())


def _plan_kinds(capsys, spec_file, warehouse) -> list[dict]:
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(warehouse), "--format", "json")
    assert code == 0, err
    return [a for t in json.loads(out)["tables"] for a in t["actions"]]


def _assert_version_9(location, rebuilt: bool = False) -> None:
    """The table as Hudi 1.2's upgrade leaves one: layout 2, its history in the LSM, no version-6 leftovers;
    its metadata table retired, or (`rebuilt`) built again at version 9 by the next plan."""
    props = _props(location)
    assert props["hoodie.table.version"] == "9" and props["hoodie.timeline.layout.version"] == "2"
    assert props["hoodie.table.initial.version"] == "6" and props["hoodie.table.ordering.fields"] == "ts"
    assert props["hoodie.record.merge.mode"] == "EVENT_TIME_ORDERING" and "hoodie.table.precombine.field" not in props
    if rebuilt:
        assert props["hoodie.table.metadata.partitions"] == "files"
        assert Path(location, ".hoodie", "metadata", ".hoodie", "timeline").is_dir()
    else:
        assert "hoodie.table.metadata.partitions" not in props and not Path(location, ".hoodie", "metadata").exists()
    assert not [p for p in Path(location, ".hoodie").iterdir() if p.is_file() and p.name[:1].isdigit()]
    timeline = HudiTable.open(str(location)).timeline
    assert timeline.layout == 2 and all(i.completion >= i.timestamp for i in timeline.completed())


def test_a_version_6_table_upgraded_to_9_reads_and_writes_in_hudi_1_2(hudi, hudi1, tmp_path, capsys):
    table, written = _v6_table(hudi, tmp_path)
    location = table.location
    before, archived_before = tablespec_rows(table), ArchivedTimeline.of(HudiTable.open(location)).commits()
    assert archived_before, "the table has archived commits to carry over"
    active = [i.timestamp for i in HudiTable.open(location).timeline.commits()]
    as_of = active[0]
    ours_as_of = tablespec_rows(table, as_of=as_of)

    spec_file = tmp_path / "upgraded.yaml"
    spec_file.write_text(V9)
    [upgrade] = _plan_kinds(capsys, spec_file, tmp_path)
    assert upgrade["kind"] == "upgrade_table" and upgrade["params"] == {"from": 6, "to": 9}
    assert upgrade["estimate"]["instants"] >= len(active) and upgrade["estimate"]["archive_files"] >= 1
    code, out, err = cli(capsys, "apply", str(spec_file), "--warehouse", str(tmp_path), "--auto-approve")
    assert code == 0 and "upgrade_table done" in out, out + err   # (the clean it held back comes at the end)
    _assert_version_9(location)

    upgraded = HudiTable.open(location)
    assert [i.timestamp for i in upgraded.timeline.commits()] == active   # the same commits, now with completion times
    lsm = ArchivedTimeline.of(upgraded)
    assert [i.timestamp for i in lsm.commits()] == [i.timestamp for i in archived_before]
    assert all(lsm.commit_metadata(i).partition_to_write_stats for i in lsm.commits())
    table = Table(load_spec_text(V9, "upgraded.yaml").specs[0].spec, location, hudi)
    assert tablespec_rows(table) == before and tablespec_rows(table, as_of=as_of) == ours_as_of
    assert hudi_rs_rows(location) == before

    code, out, err = cli(capsys, "hudi-options", str(spec_file), "--warehouse", str(tmp_path), "--format", "json")
    assert code == 0, err
    options = {**json.loads(out), "hoodie.datasource.write.operation": "upsert"}
    options.pop("path")   # the write step names it
    assert options["hoodie.write.table.version"] == "9" and options["hoodie.table.ordering.fields"] == "ts"
    snapshot, theirs_as_of, _, after = hudi1.process.run([
        read_step(location), read_step(location, **{"as.of.instant": as_of}),
        write_step(location, options, DDL, [("k0", 100, 100, "d0"), ("new", 1, 1, "d1")]), read_step(location)])
    assert rows(pa.Table.from_pylist(snapshot)) == before
    assert rows(pa.Table.from_pylist(theirs_as_of)) == ours_as_of
    assert _by_id(after) == {**_by_id(pa.Table.from_pylist(snapshot).to_pylist()), "k0": 100, "new": 1}
    assert _by_id(tablespec_rows(table)) == _by_id(after) and hudi_rs_rows(location) == tablespec_rows(table)

    assert set(apply_until_done(capsys, spec_file, tmp_path)) <= {"clean"}   # housekeeping at most, then clean
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path), "--detailed-exitcode")
    assert code == 0 and out.startswith("No changes."), out + err
    assert table.verify().ok


def test_an_upgrade_killed_at_each_step_is_finished_by_the_next_apply(hudi, tmp_path, capsys):
    """kill -9 inside apply's upgrade: before hoodie.properties switches the table is version 6 as it was
    (readers see it before), after it version 9 (readers see it after); the next apply finishes it."""
    table, _ = _v6_table(hudi, tmp_path / "source", writes=3)
    before = tablespec_rows(table)
    for point in CRASH_POINTS:
        warehouse = tmp_path / point
        location = warehouse / "upgraded"
        shutil.copytree(table.location, location)
        spec_file = warehouse / "upgraded.yaml"
        spec_file.write_text(V9)
        died = run_script(f"""
            from tablespec.cli import main
            main(["apply", {str(spec_file)!r}, "--warehouse", {str(warehouse)!r}, "--auto-approve"])
        """, **{CRASH_ENV: point}, **SHORT_LIVED_JVM)
        assert died.returncode == -9, died.stderr[-2000:]
        version = _props(location)["hoodie.table.version"]
        assert version == ("9" if point == "upgrade.switched" else "6"), point
        spec = load_spec_text(V9 if version == "9" else SPEC, "upgraded.yaml").specs[0].spec
        assert tablespec_rows(Table(spec, str(location), hudi)) == before, point
        assert hudi_rs_rows(str(location)) == before, point
        [action] = _plan_kinds(capsys, spec_file, warehouse)
        assert action["kind"] == "upgrade_table" and action["params"]["to"] == 9, point
        _upgrades(capsys, spec_file, warehouse)
        _assert_version_9(location, rebuilt=True)
        assert tablespec_rows(Table(load_spec_text(V9, "u.yaml").specs[0].spec, str(location), hudi)) == before
        assert hudi_rs_rows(str(location)) == before, point


def test_a_downgrade_is_refused_at_the_spec_field(hudi, tmp_path, capsys):
    table, _ = _v6_table(hudi, tmp_path, writes=2)
    spec_file = tmp_path / "upgraded.yaml"
    spec_file.write_text(V9)
    _upgrades(capsys, spec_file, tmp_path)
    files = sorted((str(p), p.stat().st_mtime_ns) for p in Path(table.location).rglob("*"))
    spec_file.write_text(V9.replace("tableVersion: 9", "tableVersion: 6"))
    code, out, err = cli(capsys, "apply", str(spec_file), "--warehouse", str(tmp_path), "--auto-approve")
    assert code == 1 and "Traceback" not in err
    assert f"{spec_file}:6:3: spec.tableVersion:" in err and "a downgrade to 6 is not supported" in err
    assert sorted((str(p), p.stat().st_mtime_ns) for p in Path(table.location).rglob("*")) == files


def test_a_table_created_at_version_9_reads_and_writes_in_hudi_1_2(hudi, hudi1, tmp_path, capsys, monkeypatch):
    """The project's `tableVersion: 9`: apply creates the table as Hudi 1.2 creates one (its
    hoodie.properties keys, timeline folders, its metadata table); tablespec writes, Hudi 1.2.0 reads
    and upserts with hudi-options, tablespec and hudi-rs read on, the spec plans clean."""
    (tmp_path / "tablespec.project.yaml").write_text(f"warehouse: {tmp_path}\ntableVersion: 9\n")
    monkeypatch.chdir(tmp_path)
    spec_file = tmp_path / "created.yaml"
    spec_file.write_text(history_spec("created"))
    [create] = _plan_kinds(capsys, spec_file, tmp_path)
    assert create["kind"] == "create_table" and create["params"] == {"table_version": 9}
    assert apply_until_done(capsys, spec_file, tmp_path) == ["create_table"]
    location = str(tmp_path / "created")
    props = _props(location)
    for key, value in {"hoodie.table.version": "9", "hoodie.table.initial.version": "9", "hoodie.timeline.path": "timeline",
                       "hoodie.timeline.layout.version": "2", "hoodie.table.keygenerator.type": "SIMPLE",
                       "hoodie.table.ordering.fields": "ts", "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
                       "hoodie.archivelog.folder": "history", "hoodie.table.format": "native"}.items():
        assert props.get(key) == value, key
    assert "hoodie.table.precombine.field" not in props and "hoodie.table.keygenerator.class" not in props
    assert Path(location, ".hoodie", "timeline", "history").is_dir()
    # its metadata table as Hudi 1.2 creates one (the files partition at 00000000000000000, 1.x's timeline)
    assert props["hoodie.table.metadata.partitions"] == "files"
    assert Path(location, ".hoodie", "metadata", ".hoodie", "timeline", "history").is_dir()

    table = Table(load_spec_text(history_spec("created"), "c.yaml").specs[0].spec, location, hudi)
    table.write(hudi.createDataFrame([("a", 1, 1, "d0"), ("b", 2, 1, "d1")], DDL))
    code, out, err = cli(capsys, "hudi-options", str(spec_file), "--format", "json")
    assert code == 0, err
    options = {**json.loads(out), "hoodie.datasource.write.operation": "upsert"}
    options.pop("path")
    ours = tablespec_rows(table)
    assert hudi_rs_rows(location) == ours
    snapshot, _, after = hudi1.process.run([read_step(location), write_step(location, options, DDL, [("a", 10, 2, "d0")]),
                                            read_step(location)])
    assert rows(pa.Table.from_pylist(snapshot)) == ours
    assert _by_id(after) == {"a": 10, "b": 2} == _by_id(tablespec_rows(table))
    assert hudi_rs_rows(location) == tablespec_rows(table)   # the slice Hudi 1.2 appended to: one record schema
    assert set(apply_until_done(capsys, spec_file, tmp_path)) <= {"clean"}
    assert HudiTable.open(location).config.version == 9


@pytest.mark.parametrize("line, message", [("0.15", "Apache Hudi 0.15 does not write table version 9"),
                                           ("1.0", "Apache Hudi 1.0 does not write table version 9")])
def test_hudi_options_refuses_a_hudi_line_that_cannot_write_the_table(tmp_path, capsys, monkeypatch, line, message):
    (tmp_path / "tablespec.project.yaml").write_text(f"warehouse: {tmp_path}\ntableVersion: 9\n")
    monkeypatch.chdir(tmp_path)
    spec_file = tmp_path / "created.yaml"
    spec_file.write_text(SPEC)
    code, out, err = cli(capsys, "hudi-options", str(spec_file), "--hudi-version", line)
    assert code == 1 and message in err and "Traceback" not in err and out == ""

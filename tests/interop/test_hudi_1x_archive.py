"""Archiving a version-9 timeline into the LSM history, against Apache Hudi 1.2.0 (its own process):
tablespec writes commits into a table it created at version 9 until housekeeping archives some;
Hudi 1.2.0 reads the table as tablespec does and lists the archived instants in its archived
timeline (`show_timeline` with `showArchived`); Hudi 1.2.0 then writes with `hudi-options` until its
own archiver runs (on tablespec's manifest), and tablespec reads what Hudi archived."""
from __future__ import annotations

import json

import pyarrow as pa
from helpers import rows, tablespec_rows
from hudi_process import read_step, sql_step, write_step
from interop_support import HISTORY_DDL as DDL
from interop_support import apply_until_done, cli, history_spec

from tablespec.hudi.archive import ArchivedTimeline, History
from tablespec.hudi.archive.lsm import history_folder
from tablespec.hudi.archive.lsm_write import current_version, read_manifest
from tablespec.hudi.mdt import layout as mdt_layout
from tablespec.hudi.table import HudiTable
from tablespec.spec.loader import load_spec_text
from tablespec.table import Table

SPEC = history_spec("archived")


def _timeline(result) -> dict[str, set[str]]:
    """show_timeline's rows: the completed commits' instant times by timeline type (ACTIVE, ARCHIVED)."""
    out: dict[str, set[str]] = {}
    for r in result:
        if r["state"] == "COMPLETED" and r["action"] in ("commit", "deltacommit", "replacecommit"):
            out.setdefault(r["timeline_type"], set()).add(r["instant_time"])
    return out


def _manifest_files(table: HudiTable) -> list[str]:
    folder = history_folder(table)
    return [f["fileName"] for f in read_manifest(table.storage, folder, current_version(table.storage, folder))]


def test_hudi_1_2_reads_tablespecs_lsm_history_and_archives_after_it(hudi, hudi1, tmp_path, capsys, monkeypatch):
    (tmp_path / "tablespec.project.yaml").write_text(f"warehouse: {tmp_path}\ntableVersion: 9\n")
    monkeypatch.chdir(tmp_path)
    spec_file = tmp_path / "archived.yaml"
    spec_file.write_text(SPEC)
    assert apply_until_done(capsys, spec_file, tmp_path) == ["create_table"]
    location = str(tmp_path / "archived")
    table = Table(load_spec_text(SPEC, "a.yaml").specs[0].spec, location, hudi)
    # housekeeping after each write archives past maxCommits 3, down to 2, but (as Hudi 1.2) nothing that
    # completed after the metadata table's latest compaction (after its 10th deltacommit): 16 writes
    # leave 7 deltacommits since it, so Hudi's 4 writes below compact it again and archive past it
    for i in range(16):
        table.write(hudi.createDataFrame([(f"k{i % 3}", i, i, f"d{i % 2}")], DDL))
    handle = HudiTable.open(location)
    archived = {i.timestamp for i in ArchivedTimeline.of(handle).commits()}
    active = {i.timestamp for i in handle.timeline.commits()}
    [compacted] = [i.timestamp for i in mdt_layout.timeline(handle.storage, handle.base, mdt_layout.V2)
                   if i.action == mdt_layout.COMPACTION]
    assert active == {i.timestamp for i in handle.timeline.commits() if i.completed_at > compacted}
    ours_files, ours_version = _manifest_files(handle), current_version(handle.storage, history_folder(handle))
    assert archived and ours_files and all(f.endswith("_0.parquet") for f in ours_files)
    ours = tablespec_rows(table)

    code, out, err = cli(capsys, "hudi-options", str(spec_file), "--format", "json")
    assert code == 0, err
    options = {**json.loads(out), "hoodie.datasource.write.operation": "upsert"}
    options.pop("path")
    show = sql_step(f"call show_timeline(path => '{location}', showArchived => true, limit => 1000)")
    writes = [write_step(location, options, DDL, [(f"h{n}", 100 + n, 100 + n, "d0")]) for n in range(4)]
    snapshot, before, *_, after, final = hudi1.process.run([read_step(location), show, *writes, show, read_step(location)])
    assert rows(pa.Table.from_pylist(snapshot)) == ours
    seen = _timeline(before)
    assert seen.get("ARCHIVED") == archived and seen.get("ACTIVE") == active

    handle = HudiTable.open(location)
    by_hudi = _timeline(after)
    lsm = {i.timestamp for i in ArchivedTimeline.of(handle).commits()}
    assert archived < lsm, "Hudi 1.2.0 archived after tablespec, into the same history"
    assert lsm == by_hudi["ARCHIVED"]
    assert set(ours_files) <= set(_manifest_files(handle))   # Hudi's manifest extends tablespec's
    assert current_version(handle.storage, history_folder(handle)) > ours_version
    assert {i.timestamp for i in handle.timeline.commits()} <= by_hudi["ACTIVE"]
    history = History.of(handle)
    assert len({i.timestamp for i in history.commits()}) == len(history.commits()) == len(archived | active) + 4
    assert rows(pa.Table.from_pylist(final)) == tablespec_rows(table)

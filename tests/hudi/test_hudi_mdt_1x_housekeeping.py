"""The metadata table of a version 9 table, built and kept bounded as Apache Hudi 1.2 does it:
`initialize` in 1.x's layout (its hoodie.properties, the `files` partition at `00000000000000000`
with a completion time, as Hudi 1.2.0 initializes a table's metadata table: measured), its own
clean at a new instant time once three instants follow its latest compaction, and its archiving
into its own LSM history (`.hoodie/metadata/.hoodie/timeline/history/`) with Hudi 1.2's rules.
tests/interop/test_hudi_1x_metadata_table_housekeeping.py has Hudi 1.2.0 validate and read the result."""
from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_hudi_mdt_1x import INIT, ST, TIMELINE, _assert_listing_is_storage, _files, _start

from tablespec.faults import CRASH_ENV
from tablespec.hudi.archive.archiver import archive
from tablespec.hudi.archive.lsm import manifest_files
from tablespec.hudi.archive.lsm_write import read_file_rows
from tablespec.hudi.archive.plan import ArchiveSettings
from tablespec.hudi.config import timeline_layout
from tablespec.hudi.formats.naming import new_file_id
from tablespec.hudi.formats.properties import format_properties, parse_properties
from tablespec.hudi.io import join
from tablespec.hudi.mdt import cleaner, layout, lsm_archiver, sync, writer
from tablespec.hudi.mdt.archiver import MetaLimits
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import TimelineWriter, avro_content

V9 = {"hoodie.table.name": "t", "hoodie.table.type": "COPY_ON_WRITE", "hoodie.table.version": "9",
      "hoodie.timeline.layout.version": "2", "hoodie.timeline.path": "timeline",
      "hoodie.timeline.history.path": "history", "hoodie.table.recordkey.fields": "id",
      "hoodie.table.partition.fields": "part", "hoodie.table.keygenerator.type": "SIMPLE",
      "hoodie.table.base.file.format": "PARQUET"}


def _bare(tmp_path) -> str:
    """A version 9 table without a metadata table (Hudi 1.2 with hoodie.metadata.enable=false)."""
    base = str(tmp_path / "t")
    ST.write_bytes(join(base, ".hoodie", "hoodie.properties"), format_properties(V9).encode())
    ST.mkdirs(join(base, TIMELINE, "history"))
    return base


# data: keep 21..23 commits (the cleaner 2); the metadata table 22..24, above the 20 its cleaner retains
SETTINGS = ArchiveSettings(21, 23, 2)


def _write(base: str, groups, settings: ArchiveSettings | None = None) -> None:
    """A data commit as tablespec's writers make it: the metadata table recorded (when the table
    has one) before the data instant completes, then compacted and cleaned when due; with
    `settings`, then the data table's archiving and the metadata table's after it."""
    ts, inflight = _start(base)
    metadata = _files(base, ts, groups)
    table = HudiTable.open(base)
    if schema := table.config.create_schema:   # a table tablespec created: its schema
        metadata = dataclasses.replace(metadata, extra_metadata={"schema": schema})
    with sync.completing(table, "commit") as locked:
        recorded = sync.record_commit(table, ts, metadata)
        TimelineWriter(ST, base, TIMELINE).complete(inflight, metadata, locked=locked)
    sync.compact_if_due(HudiTable.open(base), recorded)
    if settings is not None:
        table = HudiTable.open(base)
        with table.transaction_lock("archive"):
            archive(table, settings)


def test_initialize_lays_out_the_metadata_table_as_hudi_1_2_does(tmp_path):
    base = _bare(tmp_path)
    _write(base, {("a", new_file_id()): 10, ("b", new_file_id()): 5})      # no metadata table: nothing recorded
    assert not ST.exists(layout.table_path(base))
    table = HudiTable.open(base)
    with table.transaction_lock("metadata table"):
        assert writer.initialize(table) == INIT
    props = parse_properties(ST.read_bytes(join(layout.meta_path(base), "hoodie.properties")).decode())
    assert props["hoodie.table.version"] == "9" and props["hoodie.timeline.layout.version"] == "2"
    assert props["hoodie.table.name"] == "t_metadata" and props["hoodie.table.type"] == "MERGE_ON_READ"
    assert props["hoodie.table.keygenerator.type"] == "HOODIE_TABLE_METADATA"
    assert props["hoodie.record.merge.mode"] == "CUSTOM" and props["hoodie.table.base.file.format"] == "HFILE"
    assert HudiTable.open(base).config.extra["hoodie.table.metadata.partitions"] == "files"

    [init] = layout.timeline(ST, base, layout.V2)
    assert (init.timestamp, init.action, init.completed) == (INIT, layout.DELTA_COMMIT, True)
    assert init.completion > HudiTable.open(base).timeline.latest_time
    content = avro_content(ST.read_bytes(join(layout.timeline_path(base, layout.V2), init.file_name)), "init")
    [stat] = content["partitionToWriteStats"]["files"]
    assert stat["path"] == f"files/{layout.base_file_name(INIT)}" and content["operationType"] == "BULK_INSERT_PREPPED"
    assert timeline_layout(HudiTable.open(base).config) == 2
    _assert_listing_is_storage(base)
    _write(base, {("a", new_file_id()): 7})          # kept from here on
    _assert_listing_is_storage(base)


def _history(base: str) -> list[dict]:
    folder = join(layout.table_path(base), lsm_archiver.HISTORY)
    files = manifest_files(ST, folder) if ST.exists(folder) else []
    return [r for f in files for r in read_file_rows(ST, f)]


def test_the_metadata_table_cleans_and_archives_as_hudi_1_2_schedules_it(tmp_path):
    base = _bare(tmp_path)
    table = HudiTable.open(base)
    with table.transaction_lock("metadata table"):
        writer.initialize(table)
    fg = new_file_id()
    active = []
    for n in range(90):
        _write(base, {("a", fg): 10 + n, ("b", new_file_id()): 1}, SETTINGS)
        active.append(len(layout.timeline(ST, base, layout.V2)))
    _assert_listing_is_storage(base)

    metadata = layout.timeline(ST, base, layout.V2)
    assert all(i.completed for i in metadata)
    commits = [i for i in metadata if i.action in (layout.DELTA_COMMIT, layout.COMPACTION)]
    assert len(commits) <= MetaLimits.of(SETTINGS).max_commits + 10   # + deltacommits since a compaction
    assert max(active[60:]) <= max(active[30:60])                      # bounded
    # cleans at new instant times, completed as `<requested>_<completion>.clean`, empty inflight files
    history = _history(base)
    cleans = [i for i in metadata if i.action == "clean"]
    archived_cleans = [r for r in history if r["action"] == "clean"]
    assert cleans or archived_cleans
    folder = layout.timeline_path(base, layout.V2)
    for clean in cleans:
        assert clean.completion and len(clean.timestamp) == 17
        assert ST.read_bytes(join(folder, f"{clean.timestamp}.clean.inflight")) == b""
        done = avro_content(ST.read_bytes(join(folder, clean.file_name)), clean.file_name)
        assert done["totalFilesDeleted"] >= 1 and done["partitionMetadata"]["files"]["successDeleteFiles"]
    # the files partition keeps the latest slice and the one before the earliest retained commit
    bases = [i.name for i in ST.list_dir(layout.partition_path(base)) if i.name.endswith(".hfile")]
    assert 1 <= len(bases) <= 3 and layout.base_file_name(INIT) not in bases
    # the history holds what left the active timeline, each once, never both
    assert history and len({(r["instantTime"], r["action"]) for r in history}) == len(history)
    assert not {r["instantTime"] for r in history} & {i.timestamp for i in metadata}
    assert all(r["completionTime"] and r["metadata"] for r in history)
    # nothing at or after the data table's first active instant left the metadata timeline
    first_data = HudiTable.open(base).timeline.instants[0].timestamp
    assert all(r["instantTime"] < first_data for r in history)
    _write(base, {("c", new_file_id()): 3}, SETTINGS)
    _assert_listing_is_storage(base)


def test_slices_to_clean_assigns_log_files_by_completion_time_on_1x():
    t0, d1, c1, d2, c2, d3 = (f"2026010100000{n}000" for n in range(6))
    names = [layout.base_file_name(b) for b in (t0, c1, c2)] + [f".files-0000-0_{d}.log.1_0-0-0" for d in (t0, d1, d2, d3)]
    # d2 completed after c2 was requested: it belongs to c2's slice, not c1's
    completed = {t0: "20260101000000100", d1: "20260101000001100", c1: "20260101000002100",
                 d2: "20260101000004500", c2: "20260101000004200", d3: "20260101000005100"}
    doomed = cleaner.slices_to_clean(names, completed, c2, fmt=layout.V2)
    assert doomed == sorted([layout.base_file_name(t0), f".files-0000-0_{t0}.log.1_0-0-0",
                             f".files-0000-0_{d1}.log.1_0-0-0"])
    # a deltacommit neither completed nor archived keeps its log file
    del completed[d1]
    assert f".files-0000-0_{d1}.log.1_0-0-0" not in cleaner.slices_to_clean(names, completed, c2, fmt=layout.V2)


def test_metadata_archive_plan_follows_the_bounds():
    from tablespec.hudi.timeline.active import Timeline
    from tablespec.hudi.timeline.instant import Instant
    times = [f"202601010000{n:02d}000" for n in range(40)]
    meta = [Instant(t, "deltacommit", "completed", completion=t[:-3] + "500") for t in times]
    meta[20] = Instant(times[20], "commit", "completed", completion=times[20][:-3] + "500")   # a compaction
    metadata = Timeline(ST, "/m", meta, ".hoodie/timeline")
    data = Timeline(ST, "/d", [Instant(t, "commit", "completed", completion=t[:-3] + "600") for t in times[15:]],
                    ".hoodie/timeline")
    limits = MetaLimits(3, 5)
    planned = lsm_archiver.plan_archive(metadata, data, limits)
    assert [i.timestamp for i in planned] == times[:15]      # below the data table's first active instant
    data = Timeline(ST, "/d", [], ".hoodie/timeline")
    # 19 deltacommits follow the compaction: the first of the last 10 bounds it (merge-on-read scheduling)
    assert [i.timestamp for i in lsm_archiver.plan_archive(metadata, data, limits)] == times[:30]
    meta[35] = Instant(times[35], "commit", "completed", completion=times[35][:-3] + "500")
    metadata = Timeline(ST, "/m", meta, ".hoodie/timeline")
    assert [i.timestamp for i in lsm_archiver.plan_archive(metadata, data, limits)] == times[:35]   # the compaction
    assert lsm_archiver.plan_archive(metadata, data, MetaLimits(3, 41)) == []                        # too few


ORDERS = """\
apiVersion: tablespec/v1
kind: HudiTable
metadata: {{name: orders}}
spec:
  location: orders
  tableVersion: 9
  columns:
    - {{name: id, type: string, nullable: false}}
    - {{name: part, type: string}}
  recordKey: {{fields: [id]}}
  partitioning: {{fields: [part]}}
  clustering: {{smallFileLimit: 0}}   # the data files here are stand-ins: nothing to cluster
{retention}"""


def test_create_at_9_builds_the_metadata_table_and_the_archive_action_runs(tmp_path, monkeypatch, capsys):
    """A table created at version 9 has Hudi 1.x's metadata table from the start; with lower archive
    limits `plan` proposes `archive`, which `apply` runs on version 9: the data table's history and,
    after it, the metadata table's own."""
    from _support import cli, scratch_project
    project = scratch_project(tmp_path, monkeypatch, {"orders": ORDERS.format(retention="")}, "warehouse: lake\n")
    assert cli(capsys, "apply", "specs", "--auto-approve")[0] == 0
    base = str(project / "lake" / "orders")
    assert HudiTable.open(base).config.extra["hoodie.table.metadata.partitions"] == "files"
    [init] = layout.timeline(ST, base, layout.V2)
    assert init.timestamp == INIT and init.completed
    for n in range(14):       # past the metadata table's first compaction (archiving never passes it)
        _write(base, {("a", new_file_id()): n + 1})
    (project / "specs" / "orders.yaml").write_text(ORDERS.format(
        retention="  retention: {keepCommits: 1, archive: {minCommits: 2, maxCommits: 3}}\n"))
    code, out, err = cli(capsys, "plan", "specs")
    assert code == 0 and "~ archive" in out, out + err
    code, out, err = cli(capsys, "apply", "specs", "--auto-approve")
    assert code == 0 and "archive" in out, out + err
    handle = HudiTable.open(base)
    assert manifest_files(ST, join(base, ".hoodie", "timeline", "history"))
    assert len(handle.timeline.commits()) < 14
    assert _history(base)                       # the metadata table's own history too
    _assert_listing_is_storage(base)
    code, out, err = cli(capsys, "plan", "specs", "--detailed-exitcode")
    assert code == 0 and out.startswith("No changes."), out + err


def _built(tmp_path) -> str:
    base = _bare(tmp_path)
    table = HudiTable.open(base)
    with table.transaction_lock("metadata table"):
        writer.initialize(table)
    return base


def _killed_at(base: str, point: str) -> None:
    """Write (with SETTINGS) in a subprocess killed at `point`."""
    script = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
              "from test_hudi_mdt_1x_housekeeping import SETTINGS, _write; from tablespec.hudi.formats.naming import new_file_id; "
              f"[_write({base!r}, {{('a', new_file_id()): n + 1}}, SETTINGS) for n in range(120)]")
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, CRASH_ENV: point}, check=False)
    assert done.returncode == -signal.SIGKILL, point


@pytest.mark.parametrize("point", ["mdt_clean_requested", "mdt_clean_deleted"])
def test_an_interrupted_1x_metadata_clean_is_finished_by_the_next_write(tmp_path, point):
    base = _built(tmp_path)
    _killed_at(base, point)
    [pending] = [i for i in layout.timeline(ST, base, layout.V2) if not i.completed]
    assert pending.action == "clean"
    _assert_listing_is_storage(base)                      # readers unaffected meanwhile
    _write(base, {("b", new_file_id()): 1}, SETTINGS)
    metadata = {i.timestamp: i for i in layout.timeline(ST, base, layout.V2)}
    assert all(i.completed for i in metadata.values()) and metadata[pending.timestamp].completion
    _assert_listing_is_storage(base)


@pytest.mark.parametrize("point", ["mdt_archive_written", "mdt_archive_deleted"])
def test_an_interrupted_1x_metadata_archive_is_finished_by_the_next_run(tmp_path, point):
    base = _built(tmp_path)
    _killed_at(base, point)
    archived = {(r["instantTime"], r["action"]) for r in _history(base)}
    active = {(i.timestamp, "commit" if i.action == "compaction" else i.action)
              for i in layout.timeline(ST, base, layout.V2)}
    assert archived and bool(archived & active) == (point == "mdt_archive_written")
    table = HudiTable.open(base)
    with table.transaction_lock("archive"):
        lsm_archiver.archive(table, SETTINGS)        # the next run finishes it first
    assert not archived & {(i.timestamp, "commit" if i.action == "compaction" else i.action)
                           for i in layout.timeline(ST, base, layout.V2)}
    _assert_listing_is_storage(base)
    _write(base, {("b", new_file_id()): 1}, SETTINGS)
    _assert_listing_is_storage(base)

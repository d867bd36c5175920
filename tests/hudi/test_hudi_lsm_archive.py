"""Archiving version-9 timelines into the LSM history (archive/lsm_write.py, lsm_archiver.py):
which instants go (Hudi 1.2's rules), the batch written as a layer-0 file with a new manifest and
version, compaction into layer 1 and cleaning, and kill -9 at every step. Everything is read back
through the reader (archive/lsm.py, timeline.History); tests/interop/test_hudi_1x_archive.py has
Apache Hudi 1.2.0 read and extend what this writes."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from _support import ROOT

from tablespec.faults import CRASH_ENV
from tablespec.hudi.archive import ArchivedTimeline, ArchiveSettings, History, archive, housekeep, plan_archive
from tablespec.hudi.archive.lsm import history_folder, lsm_rows
from tablespec.hudi.archive.lsm_write import compact_and_clean, current_version, read_manifest, write_batch
from tablespec.hudi.archive.plan import Bounds
from tablespec.hudi.config import TableConfig
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.formats.properties import format_properties
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import Timeline, TimelineWriter
from tablespec.hudi.timeline.instant import Instant, new_instant_time

SETTINGS = ArchiveSettings(min_commits=3, max_commits=5, cleaner_commits_retained=2)
SCHEMA = '{"type":"record","name":"orders_record","fields":[{"name":"id","type":"string"}]}'


def _metadata(ts: str) -> CommitMetadata:
    stat = WriteStat(file_id=f"fg-{ts}", path=f"p/fg-{ts}_0-1-2_{ts}.parquet", prev_commit="null", num_writes=1,
                     num_inserts=1, total_write_bytes=10, partition_path="p", file_size_in_bytes=10)
    return CommitMetadata(partition_to_write_stats={"p": [stat]}, operation_type="UPSERT",
                          extra_metadata={"schema": SCHEMA})


def _commit(table: HudiTable) -> Instant:
    writer = TimelineWriter.of(table.fresh_timeline())
    ts = new_instant_time(after=table.timeline.latest_time)
    return writer.complete(writer.start(writer.request("commit", ts)), _metadata(ts))


def _table(tmp_path, commits: int = 8) -> HudiTable:
    meta = tmp_path / ".hoodie"
    (meta / "timeline").mkdir(parents=True)
    config = TableConfig(name="orders", version=9, timeline_layout_version=2, record_key_fields=["id"],
                         partition_fields=["p"])
    props = config.to_properties() | {"hoodie.timeline.path": "timeline", "hoodie.timeline.history.path": "history",
                                      "hoodie.table.initial.version": "9", "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
                                      "hoodie.table.keygenerator.type": "SIMPLE"}
    (meta / "hoodie.properties").write_text(format_properties(props))
    table = HudiTable.open(str(tmp_path))
    for _ in range(commits):
        _commit(table)
    return table.refresh()


def _history_files(table: HudiTable) -> list[str]:
    folder = history_folder(table)
    return [f["fileName"] for f in read_manifest(table.storage, folder, current_version(table.storage, folder))]


def _each_instant_once(table: HudiTable, expected: tuple[Instant, ...]) -> History:
    history = History.of(table.refresh())
    assert [(i.timestamp, i.action, i.completion) for i in history.completed()] == \
        [(i.timestamp, i.action, i.completion) for i in expected]
    return history


def test_a_run_writes_one_layer_0_file_a_manifest_and_the_version_then_deletes_the_active_files(tmp_path):
    table = _table(tmp_path)
    before = table.timeline.completed()
    written = {i: table.timeline.commit_metadata(i) for i in before}
    result = archive(table, SETTINGS)
    assert result.archived == before[:5] and not result.finished
    assert _history_files(table) == [f"{before[0].timestamp}_{before[4].timestamp}_0.parquet"]
    folder = tmp_path / ".hoodie" / "timeline" / "history"
    assert (folder / "_version_").read_text() == "1"
    assert json.loads((folder / "manifest_1").read_text())["files"][0]["fileLen"] == \
        (folder / _history_files(table)[0]).stat().st_size
    assert table.timeline.completed() == before[5:]
    names = {p.name for p in (tmp_path / ".hoodie" / "timeline").iterdir()}
    assert not any(n.startswith(i.timestamp) for i in before[:5] for n in names)   # every state file went
    archived = ArchivedTimeline.of(table)
    assert [(i.timestamp, i.completion) for i in archived.completed()] == [(i.timestamp, i.completion) for i in before[:5]]
    for instant in before[:5]:
        assert archived.commit_metadata(instant).write_stats() == written[instant].write_stats()
    history = _each_instant_once(table, before)
    assert [history.is_archived(i) for i in history.completed()] == [True] * 5 + [False] * 3


def test_the_next_run_adds_a_file_in_a_new_manifest_and_the_plan_estimates_it(tmp_path):
    table = _table(tmp_path)
    archive(table, SETTINGS)
    for _ in range(3):
        _commit(table)
    table.refresh()
    planned = plan_archive(table.timeline, SETTINGS).instants
    assert len(planned) == 3
    result = archive(table, SETTINGS)
    assert result.archived == planned and len(_history_files(table)) == 2
    assert (tmp_path / ".hoodie" / "timeline" / "history" / "_version_").read_text() == "2"
    assert len(lsm_rows(table)) == 8 and len(table.timeline.completed()) == 3


def test_nothing_due_writes_nothing(tmp_path):
    table = _table(tmp_path, commits=5)
    assert archive(table, SETTINGS).archived == () and _history_files(table) == []
    assert housekeep(table, SETTINGS) is None


def test_housekeeping_archives_version_9_tables(tmp_path):
    table = _table(tmp_path)
    result = housekeep(table, SETTINGS)
    assert result is not None and len(result.archived) == 5 and len(table.timeline.commits()) == 3


def _timeline(*instants: Instant) -> Timeline:
    return Timeline(LocalStorage(), "/nowhere", instants, ".hoodie/timeline")


def _c(ts: int, completion: int, action: str = "commit") -> Instant:
    return Instant(f"2025010100000{ts:04d}", action, "completed", f"2025010100000{completion:04d}")


def test_cleans_and_rollbacks_go_only_with_commits_before_the_newest_one_archived():
    commits = [_c(10 * n, 10 * n + 1) for n in range(1, 9)]
    cleans = [_c(10 * n + 5, 10 * n + 6, "clean") for n in range(1, 3)] + [_c(95, 96, "rollback")]
    plan = plan_archive(_timeline(*sorted(commits + cleans)), SETTINGS)
    assert plan.instants == tuple(sorted(commits[:5] + cleans[:2]))   # the rollback is after commit 50
    only_cleans = [_c(10 * n, 10 * n + 1, "clean") for n in range(1, 9)]
    assert plan_archive(_timeline(*only_cleans[:3], *commits[:4], *only_cleans[3:]), SETTINGS).empty


def test_the_metadata_table_bounds_archiving_by_completion_time():
    # commit 30 was requested before the metadata table's compaction at ...0045 but completed after it
    commits = [_c(10, 11), _c(20, 21), _c(30, 50), _c(40, 41), _c(60, 61), _c(70, 71), _c(80, 81), _c(90, 91)]
    timeline = _timeline(*commits)
    assert plan_archive(timeline, SETTINGS, Bounds(None, True, None)).empty
    assert plan_archive(timeline, SETTINGS, Bounds(None, True, "20250101000000045")).instants == tuple(commits[:2])
    assert plan_archive(timeline, SETTINGS, Bounds(None, True, "20250101000000099")).instants == tuple(commits[:5])


def test_pending_writes_bound_archiving():
    commits = [_c(10 * n, 10 * n + 1) for n in range(1, 9)]
    pending = Instant("20250101000000065", "commit", "inflight")   # the cleaner keeps from commit 60: min 4
    assert plan_archive(_timeline(*sorted([*commits, pending])), SETTINGS).instants == tuple(commits[:4])
    pending = Instant("20250101000000015", "commit", "inflight")
    assert plan_archive(_timeline(*sorted([*commits, pending])), SETTINGS).empty


def _rows(*times: str) -> list[dict]:
    return [{"instantTime": t, "completionTime": t, "action": "commit", "metadata": b"m", "plan": None} for t in times]


def test_compaction_merges_a_full_layer_into_the_next_and_cleaning_keeps_the_latest_manifests(tmp_path):
    storage, folder = LocalStorage(), str(tmp_path / "history")
    times = [f"202501010000000{n:02d}" for n in range(12)]
    for n in range(3):
        write_batch(storage, folder, _rows(*times[2 * n:2 * n + 2]))
    assert compact_and_clean(storage, folder, batch_size=3) == 1
    files = [f["fileName"] for f in read_manifest(storage, folder, current_version(storage, folder))]
    assert files == [f"{times[0]}_{times[5]}_1.parquet"] and current_version(storage, folder) == 4
    assert sorted(p.name for p in (tmp_path / "history").iterdir() if p.suffix == ".parquet") == sorted(
        [f"{times[0]}_{times[1]}_0.parquet", f"{times[2]}_{times[3]}_0.parquet", f"{times[4]}_{times[5]}_0.parquet",
         files[0]])   # 4 manifests: within 3 + 1 kept, nothing cleaned yet
    for n in range(3, 6):
        write_batch(storage, folder, _rows(*times[2 * n:2 * n + 2]))
    assert compact_and_clean(storage, folder, batch_size=3) == 1   # layer 1 holds 2 files: not full
    files = [f["fileName"] for f in read_manifest(storage, folder, current_version(storage, folder))]
    assert files == [f"{times[0]}_{times[5]}_1.parquet", f"{times[6]}_{times[11]}_1.parquet"]
    left = sorted(p.name for p in (tmp_path / "history").iterdir())
    assert [n for n in left if n.startswith("manifest_")] == ["manifest_5", "manifest_6", "manifest_7", "manifest_8"]
    assert not any(n.endswith("_0.parquet") and n.startswith(times[0]) for n in left)   # listed by no kept manifest
    rows = [r for path in [f"{folder}/{f}" for f in files] for r in _read(path)]
    assert [r["instantTime"] for r in rows] == times


def _read(path: str) -> list[dict]:
    from tablespec.hudi.archive.lsm_write import read_file_rows
    return read_file_rows(LocalStorage(), path)


def test_archiving_compacts_after_ten_runs(tmp_path):
    table = _table(tmp_path, commits=3)
    for run in range(10):
        for _ in range(3):
            _commit(table)
        assert len(archive(table.refresh(), SETTINGS).archived) == 3
        assert len(_history_files(table)) == (run + 1 if run < 9 else 1)
    [file] = _history_files(table)
    assert file.endswith("_1.parquet")
    assert len(lsm_rows(table)) == 30 and len(ArchivedTimeline.of(table).completed()) == 30
    _each_instant_once(table, History.of(table).completed())


POINTS = ["lsm_file_written", "lsm_manifest_written", "archive_written", "archive_pending_deleted"]


@pytest.mark.parametrize("point", POINTS)
def test_a_killed_run_leaves_every_instant_readable_and_the_next_run_finishes_it(tmp_path, point):
    table = _table(tmp_path)
    before = table.timeline.completed()
    script = ("from tablespec.hudi.table import HudiTable\nfrom tablespec.hudi.archive import archive, ArchiveSettings\n"
              f"archive(HudiTable.open({str(tmp_path)!r}), ArchiveSettings(3, 5, 2))\n")
    died = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT), CRASH_ENV: point})
    assert died.returncode == -9, died.stderr[-2000:]
    switched = point not in ("lsm_file_written", "lsm_manifest_written")
    assert len(_history_files(table)) == (1 if switched else 0)
    _each_instant_once(table, before)               # in one of the two timelines, or both: counted once

    result = archive(table.refresh(), SETTINGS)
    assert (result.finished, result.archived) == ((before[:5], ()) if switched else ((), before[:5]))
    assert len(_history_files(table)) == 1 and table.timeline.completed() == before[5:]
    history = _each_instant_once(table, before)
    assert [history.is_archived(i) for i in history.completed()] == [True] * 5 + [False] * 3

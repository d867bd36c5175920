"""Merge-on-read tables Apache Hudi writes (0.15.0 in the session: version 6; 1.2.0 in its own
process: version 9), imported and read by tablespec: the snapshot view equals Hudi's snapshot
query and the read-optimized view Hudi's read-optimized query, by BUCKET and SIMPLE index.
tablespec compacts them (`compaction.runBy: tablespec`): the table reads the same before and
after, in Hudi's snapshot and read-optimized queries, and Hudi writes on after it.

The history: inserts; updates; an update older (by ordering value) than the log record before it
and one older than its base row; a delete. Version 6's default payload
(OverwriteWithLatestAvroPayload) orders log records among themselves but lets them replace the
base row whatever its ordering value; version 9's EVENT_TIME_ORDERING orders both."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from helpers import hudi_rs_rows, rows, tablespec_rows
from hudi_process import read_step, write_step
from interop_support import SHORT_LIVED_JVM, apply_until_done, cli, hudi_rows, hudi_write, save_spec
from test_hudi_1x_metadata_table import _assert_validated, _hudi_checks, _on_storage
from test_hudi_metadata_table import hudi_validates
from test_hudi_tables import KEYED, SCHEMA, _import, _table

from tablespec.engine.reader import to_arrow
from tablespec.faults import CRASH_ENV
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.instant import COMMIT, COMPACTION, ROLLBACK

MOR = {**KEYED, "hoodie.datasource.write.table.type": "MERGE_ON_READ", "hoodie.compact.inline": "false",
       "hoodie.upsert.shuffle.parallelism": "1", "hoodie.insert.shuffle.parallelism": "1",
       "hoodie.delete.shuffle.parallelism": "1"}
INDEXES = {"bucket": {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "2"},
           "simple": {"hoodie.index.type": "SIMPLE"}}
HISTORY = [("upsert", [("a", 1, "2024-01-01", 1), ("b", 2, "2024-01-01", 1), ("c", 3, "2024-01-02", 1),
                       ("d", 4, "2024-01-02", 1)]),
           ("upsert", [("a", 10, "2024-01-01", 5), ("c", 30, "2024-01-02", 5), ("e", 5, "2024-01-01", 5)]),
           # a: older than its log record; b: older than its base row
           ("upsert", [("a", 100, "2024-01-01", 2), ("b", 20, "2024-01-01", 0)]),
           ("delete", [("d", 0, "2024-01-02", 9)])]
RO = {"hoodie.datasource.query.type": "read_optimized"}


def _options(name: str, index: str, operation: str) -> dict[str, str]:
    return {"hoodie.table.name": name, **MOR, **INDEXES[index], "hoodie.datasource.write.operation": operation}


def _record_index(location, index: str) -> None:
    """Hudi records no index in hoodie.properties: the writers' BUCKET settings are recorded as the
    import's refusal says to."""
    if index == "bucket":
        props = location / ".hoodie" / "hoodie.properties"
        props.write_text(props.read_text() + "hoodie.index.type=BUCKET\nhoodie.bucket.index.num.buckets=2\n")
        (location / ".hoodie" / ".hoodie.properties.crc").unlink(missing_ok=True)


def _values(table_rows) -> dict:
    return {dict(r)["id"]: dict(r)["v"] for r in table_rows}


def _as_read(read: list[dict]) -> list[tuple]:
    return rows(pa.Table.from_pylist(read))


def test_version_6_merge_on_read_table_reads_as_hudi_reads_it(hudi, tmp_path, capsys):
    index = "bucket"   # SIMPLE on version 6: the failed-write and compaction tests below
    location = tmp_path / f"mor_{index}"
    for operation, data in HISTORY:
        hudi_write(hudi.createDataFrame(data, SCHEMA), str(location), _options(location.name, index, operation))
    assert any(p.name.startswith(".") and ".log." in p.name for p in location.rglob("*")), "Hudi wrote no log files"
    _record_index(location, index)
    doc, _ = _import(tmp_path, location, capsys)
    assert doc["spec"]["tableType"] == "MERGE_ON_READ"
    table = _table(hudi, doc, location)

    snapshot = tablespec_rows(table)
    assert snapshot == hudi_rows(hudi, str(location))
    # b's older update replaces its base row (the payload); a's older update loses to the log record
    # before it (with a SIMPLE index Hudi 0.15 merges small file groups' updates into a new base file
    # instead, measured: there a's older update meets a base row and wins)
    assert _values(snapshot) == {"a": 10, "b": 20, "c": 30, "e": 5}
    optimized = tablespec_rows(table, view="read_optimized")
    assert optimized == hudi_rows(hudi, str(location), **RO)
    assert _values(optimized) == {"a": 1, "b": 2, "c": 3, "d": 4}
    # hudi-rs merges log records by commit time only: on this payload it differs on `a` (it takes the
    # later, lower-ordered record), so it is compared on the other keys
    theirs = {k: v for k, v in _values(hudi_rs_rows(table.location)).items() if k != "a"}
    assert theirs == {k: v for k, v in _values(snapshot).items() if k != "a"}



def test_version_9_merge_on_read_tables_read_as_hudi_1x_reads_them(hudi, hudi1, tmp_path, capsys):
    steps, locations = [], {}
    for index in sorted(INDEXES):
        location = locations[index] = tmp_path / f"mor9_{index}"
        steps += [write_step(location, _options(location.name, index, operation), SCHEMA, data)
                  for operation, data in HISTORY]
        steps += [read_step(location), read_step(location, **RO)]
    reads = [r for r in hudi1.process.run(steps) if r is not None]
    for n, index in enumerate(sorted(INDEXES)):
        location = locations[index]
        _record_index(location, index)
        doc, _ = _import(tmp_path, location, capsys)
        assert HudiTable.open(str(location)).config.version == 9
        table = _table(hudi, doc, location)
        snapshot = tablespec_rows(table)
        assert snapshot == _as_read(reads[2 * n])
        assert _values(snapshot) == {"a": 10, "b": 2, "c": 30, "e": 5}   # event time: b's older update loses
        assert tablespec_rows(table, view="read_optimized") == _as_read(reads[2 * n + 1])
        assert hudi_rs_rows(table.location) == snapshot
        code, out, err = cli(capsys, "verify", str(location))
        assert code == 0, out + err


def test_version_6_deltacommits_failed_and_rolled_back_are_not_read(hudi, tmp_path, capsys):
    """A deltacommit whose writer died (its completed file gone) is skipped; Hudi's next write rolls
    it back (a rollback instant, its log blocks dropped) and the read still agrees with Hudi's, and as
    of an earlier deltacommit (time travel) too."""
    location = tmp_path / "mor_failed"
    for operation, data in HISTORY[:2] + [("upsert", [("a", 99, "2024-01-01", 9)])]:
        hudi_write(hudi.createDataFrame(data, SCHEMA), str(location), _options(location.name, "simple", operation))
    failed = sorted((location / ".hoodie").glob("*.deltacommit"))[-1]
    failed.unlink()                                    # the last writer died before completing
    doc, _ = _import(tmp_path, location, capsys, ("rollback",))   # planned, as on copy-on-write
    table = _table(hudi, doc, location)
    assert tablespec_rows(table) == hudi_rows(hudi, str(location))
    assert _values(tablespec_rows(table))["a"] == 10

    hudi_write(hudi.createDataFrame([("b", 20, "2024-01-01", 9)], SCHEMA), str(location),
               _options(location.name, "simple", "upsert"))
    assert list((location / ".hoodie").glob("*.rollback")), "Hudi did not roll the failed deltacommit back"
    assert tablespec_rows(table) == hudi_rows(hudi, str(location))
    assert _values(tablespec_rows(table)) == {"a": 10, "b": 20, "c": 30, "d": 4, "e": 5}
    first = sorted(p.name.split(".")[0] for p in (location / ".hoodie").glob("*.deltacommit"))[1]
    assert tablespec_rows(table, as_of=first) == hudi_rows(hudi, str(location), **{"as.of.instant": first})


SCHEDULE = {"hoodie.compact.schedule.inline": "true", "hoodie.compact.inline.max.delta.commits": "1"}
COMPACT = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "1"}
AROUND_COMPACTION = [({}, HISTORY[0][1]), (SCHEDULE, HISTORY[1][1]),                 # a compaction scheduled
                     ({}, [("a", 50, "2024-01-01", 7), ("b", 60, "2024-01-01", 7)]),  # logs while it is pending
                     (COMPACT, [("c", 70, "2024-01-02", 7)]),                         # it runs
                     ({}, [("e", 80, "2024-01-01", 8)])]                              # logs on the new slice


def _compaction_steps(location, index: str):
    for extra, data in AROUND_COMPACTION:
        yield {**_options(location.name, index, "upsert"), **extra}, data


def test_logs_around_a_compaction_read_as_hudi_reads_them(hudi, hudi1, tmp_path, capsys):
    """Log files written while a compaction is pending (version 6: named by the compaction's instant;
    version 9: completed after it was requested) are read with the slice before it; after the
    compaction, with its base file. Each stage as Apache Hudi 0.15 / 1.2 reads it."""
    v9 = tmp_path / "mor9_compacted"
    stages = list(_compaction_steps(v9, "simple"))
    pending = hudi1.process.run([write_step(v9, o, SCHEMA, d) for o, d in stages[:3]] + [read_step(v9)])[-1]
    timeline = v9 / ".hoodie" / "timeline"
    assert list(timeline.glob("*.compaction.requested")) and not list(timeline.glob("*.commit")), "none pending"
    doc, _ = _import(tmp_path, v9, capsys)
    table9 = _table(hudi, doc, v9)
    assert tablespec_rows(table9) == _as_read(pending)
    compacted = hudi1.process.run([write_step(v9, o, SCHEMA, d) for o, d in stages[3:]] + [read_step(v9)])[-1]
    assert list(timeline.glob("*.commit")), "the compaction did not run"
    assert tablespec_rows(table9) == _as_read(compacted)

    v6 = tmp_path / "mor_compacted"
    for n, (options, data) in enumerate(_compaction_steps(v6, "simple")):
        hudi_write(hudi.createDataFrame(data, SCHEMA), str(v6), options)
        if n == 2:
            assert list((v6 / ".hoodie").glob("*.compaction.requested")) and \
                not list((v6 / ".hoodie").glob("*.commit")), "no compaction pending"
            doc, _ = _import(tmp_path, v6, capsys)
            table = _table(hudi, doc, v6)
            assert tablespec_rows(table) == hudi_rows(hudi, str(v6))
    assert list((v6 / ".hoodie").glob("*.commit")), "the compaction did not run"
    assert tablespec_rows(table) == hudi_rows(hudi, str(v6))
    assert tablespec_rows(table, view="read_optimized") == hudi_rows(hudi, str(v6), **RO)
    assert _values(tablespec_rows(table9)) == _values(tablespec_rows(table))


RUN_BY_TABLESPEC = {"runBy": "tablespec", "deltaCommits": 1, "strategy": "UNBOUNDED"}
ON_TOP = [("a", 7, "2024-01-01", 20), ("f", 6, "2024-01-02", 20)]


def _incremental(begin: str, end: str) -> dict[str, str]:
    return {"hoodie.datasource.query.type": "incremental", "hoodie.datasource.read.begin.instanttime": begin,
            "hoodie.datasource.read.end.instanttime": end}


def _no_file_name(table_rows: list[tuple]) -> list[tuple]:
    """Rows but the file name (a merged log record names its file group's log, a compacted one its base file)."""
    return [tuple(kv for kv in row if kv[0] != "_hoodie_file_name") for row in table_rows]


def _compacted_by_apply(tmp_path, location, capsys, doc: dict, spec_file: str) -> str:
    """`apply` with runBy tablespec compacts every slice with log files; returns the compaction's instant,
    completed as Hudi completes one (a commit, operationType COMPACT, the slices' base instants)."""
    doc["spec"]["compaction"] = RUN_BY_TABLESPEC
    save_spec(doc, spec_file)
    before = HudiTable.open(str(location)).view.latest_slices()
    assert "compaction" in apply_until_done(capsys, spec_file, tmp_path)
    table = HudiTable.open(str(location))
    [done] = [i for i in table.timeline.commits() if i.action == COMMIT]
    meta = table.timeline.commit_metadata(done)
    assert meta.operation_type == "COMPACT" and meta.compacted
    assert {(st.file_id, st.prev_commit) for st in meta.write_stats()} == \
        {(s.file_id, s.base_instant) for s in before if s.log_files}
    assert [s for s in table.view.latest_slices() if s.log_files] == []   # every log merged into a base file
    code, out, err = cli(capsys, "verify", str(location))
    assert code == 0, out + err
    return done.timestamp


def _hudi_0_15_history(hudi, location, capsys):
    """A version 6 BUCKET table Hudi 0.15 wrote HISTORY into, imported: (location, spec document,
    spec file, tablespec's table, its snapshot rows)."""
    for operation, data in HISTORY:
        hudi_write(hudi.createDataFrame(data, SCHEMA), str(location), _options(location.name, "bucket", operation))
    _record_index(location, "bucket")
    doc, spec_file = _import(location.parent, location, capsys)
    table = _table(hudi, doc, location)
    return location, doc, spec_file, table, tablespec_rows(table)


def test_version_6_tablespec_compacts_what_hudi_0_15_reads(hudi, tmp_path, capsys):
    location, doc, spec_file, table, before = _hudi_0_15_history(hudi, tmp_path / "mor_compact", capsys)
    assert before == hudi_rows(hudi, str(location)) and _values(before) == {"a": 10, "b": 20, "c": 30, "e": 5}

    _compacted_by_apply(tmp_path, location, capsys, doc, spec_file)
    after = tablespec_rows(table)
    assert _no_file_name(after) == _no_file_name(before)    # records keep their commit time and sequence number
    assert hudi_rows(hudi, str(location)) == after
    assert hudi_rows(hudi, str(location), **RO) == tablespec_rows(table, view="read_optimized") == after
    hudi_validates(hudi, str(location))   # the metadata table lists the new base files
    assert _values(hudi_rs_rows(table.location)) == _values(after)   # the second reader, too

    hudi_write(hudi.createDataFrame(ON_TOP, SCHEMA), str(location), _options(location.name, "bucket", "upsert"))
    assert tablespec_rows(table) == hudi_rows(hudi, str(location))
    assert _values(tablespec_rows(table)) == {"a": 7, "b": 20, "c": 30, "e": 5, "f": 6}

    # Incremental reads as Hudi 0.15's: d0..d3 HISTORY, c tablespec's compaction, d4 ON_TOP. Only the
    # range's files and log blocks merge: over d2 alone a's older update (ordering 2) is returned,
    # though the snapshot keeps d1's (5); over the compaction its base file's rows of the range.
    d0, d1, d2, d3, c, d4 = (i.timestamp for i in HudiTable.open(str(location)).timeline.commits())
    for begin, end, expected in [(d1, d2, {"a": 100, "b": 20}), (d0, c, {"a": 10, "b": 20, "c": 30, "e": 5}),
                                 (d2, d4, {"a": 7, "f": 6})]:
        ours = rows(to_arrow(table.read_incremental(begin, end)))
        assert ours == hudi_rows(hudi, str(location), **_incremental(begin, end)), (begin, end)
        assert _values(ours) == expected, (begin, end)


@pytest.mark.parametrize("scheduled_by", ["hudi", "tablespec"])
def test_version_9_tablespec_runs_the_compaction_hudi_1_2_scheduled(hudi, hudi1, tmp_path, capsys, scheduled_by):
    """Hudi 1.2 schedules a compaction (its log files named by deltacommit), or tablespec schedules
    its own; tablespec runs it (apply, runBy tablespec); Hudi 1.2 reads the same, validates its
    metadata table and upserts on top."""
    location = tmp_path / "mor9_compact"
    steps = [write_step(location, _options(location.name, "simple", operation), SCHEMA, data)
             for operation, data in HISTORY]
    if scheduled_by == "hudi":
        steps[-1]["options"].update(SCHEDULE)
    hudi1.process.run(steps)
    pending = list((location / ".hoodie" / "timeline").glob("*.compaction.requested"))
    assert len(pending) == (scheduled_by == "hudi"), pending
    doc, spec_file = _import(tmp_path, location, capsys)
    table = _table(hudi, doc, location)
    before = tablespec_rows(table)

    instant = _compacted_by_apply(tmp_path, location, capsys, doc, spec_file)
    assert HudiTable.open(str(location)).timeline.contains_completed(instant)
    assert (location / ".hoodie" / "timeline" / f"{instant}.compaction.requested").is_file()
    after = tablespec_rows(table)
    assert _no_file_name(after) == _no_file_name(before)
    assert tablespec_rows(table, view="read_optimized") == after
    on_storage = _on_storage(location)
    reads = hudi1.process.run([read_step(location), read_step(location, **RO),
                               *_hudi_checks(location, "mor9_compact"),
                               write_step(location, _options(location.name, "simple", "upsert"), SCHEMA, ON_TOP),
                               read_step(location)])
    snapshot, optimized, _, every, differences, through_metadata, _, on_top = reads
    assert _as_read(snapshot) == after == _as_read(optimized) == _as_read(through_metadata)
    _assert_validated(on_storage, every, differences)
    assert tablespec_rows(table) == _as_read(on_top)
    assert _values(tablespec_rows(table)) == {"a": 7, "b": 2, "c": 30, "e": 5, "f": 6}

    # Incremental reads as Hudi 1.2's, ranges by completion time (d0..d3 HISTORY, c the compaction, d4 ON_TOP)
    d0, d1, d2, d3, c, d4 = (i.completed_at for i in HudiTable.open(str(location)).timeline.commits())
    # Over d2 alone b's older update is returned, though the snapshot keeps its base row (event time).
    expected = {(d1, d2): {"a": 100, "b": 20}, (d0, c): {"a": 10, "c": 30, "e": 5}, (d2, d4): {"a": 7, "f": 6}}
    theirs = hudi1.process.run([read_step(location, **_incremental(begin, end)) for begin, end in expected])
    for (begin, end), read in zip(expected, theirs):
        ours = rows(to_arrow(table.read_incremental(begin, end)))
        assert ours == _as_read(read) and _values(ours) == expected[begin, end], (begin, end)


# kill -9 in each phase: the plan requested; inflight; its base files written and Hudi's metadata
# table recording them, the compaction not completed. (Files written but not yet recorded in the
# metadata table, `compaction_written`, roll back as any such instant does: proven by
# test_hudi_metadata_table_kept.py::test_a_write_killed_during_its_metadata_update_is_recovered
# (before_metadata_deltacommit); the files' deletion by `before_completion` here.)
KILLED_AT = ["compaction_requested", "compaction_inflight", "before_completion"]


@pytest.mark.parametrize("point", KILLED_AT)
def test_a_compaction_killed_after_writing_is_rolled_back_and_run_again(hudi, tmp_path, capsys, point):
    """kill -9 in each phase of a compaction: it stays pending, readers see the table as before; the
    next apply runs a requested plan, rolls an inflight one back to its plan (a rollback instant, its
    files deleted and its metadata-table record undone) and runs it again, and the table reads as
    Hudi 0.15 reads it."""
    location, doc, spec_file, table, before = _hudi_0_15_history(hudi, tmp_path / "mor_killed", capsys)
    doc["spec"]["compaction"] = RUN_BY_TABLESPEC
    save_spec(doc, spec_file)
    env = {**os.environ, **SHORT_LIVED_JVM, CRASH_ENV: point, "TABLESPEC_SPARK_MASTER": "local[1]",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    died = subprocess.run([sys.executable, "-m", "tablespec.cli", "apply", spec_file, "--warehouse", str(tmp_path),
                           "--auto-approve"], env=env, capture_output=True, text=True, timeout=600)
    assert died.returncode == -9, died.stdout[-2000:] + died.stderr[-2000:]
    [dead] = HudiTable.open(str(location)).timeline.pending()
    started = point != "compaction_requested"
    assert (dead.action, dead.state) == (COMPACTION, "inflight" if started else "requested")
    written = sorted(p.name for p in location.rglob(f"*_{dead.timestamp}.parquet"))
    assert bool(written) == (point == "before_completion"), written
    assert tablespec_rows(table) == before == hudi_rows(hudi, str(location))   # readers see the table as before
    if started:
        os.utime(location / ".hoodie" / ".heartbeat" / dead.timestamp, (0, 0))   # its heartbeat long stale

    assert _compacted_by_apply(tmp_path, location, capsys, doc, spec_file) == dead.timestamp
    timeline = HudiTable.open(str(location)).timeline
    rolled = [i for i in timeline.completed() if i.action == ROLLBACK]
    assert [timeline.read_metadata(i)["commitsRollback"] for i in rolled] == ([[dead.timestamp]] if started else [])
    assert _no_file_name(tablespec_rows(table)) == _no_file_name(before)
    assert tablespec_rows(table) == hudi_rows(hudi, str(location))
    hudi_validates(hudi, str(location))

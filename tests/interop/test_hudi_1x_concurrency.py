"""A version 9 table beside a running Apache Hudi 1.2.0 job: the job upserts in a loop (its own
process, options from `hudi-options`, so it takes the lock tablespec takes) while tablespec ingests,
clusters and cleans. Every tablespec action commits or fails with a conflict and leaves nothing
behind; after a kill -9 of the job in the middle of a write, the next apply rolls back what it left;
the table holds exactly what the successful commits of both writers wrote, and tablespec, hudi-rs and
Hudi 1.2.0 read the same."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pyarrow as pa
from helpers import hudi_rs_rows, make_table, rows, tablespec_rows
from hudi_process import read_step
from test_hudi_concurrency import DDL, HUDI_JOB, SPEC, _data, _plan, expire_dead_writes, job_outcome, latest_rows

from tablespec.apply import Applier
from tablespec.errors import StalePlanError
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.conflict import WriteConflictError
from tablespec.hudi.timeline.heartbeat import TOLERANCE_ENV

HUDI_1_2 = "1.2.0"


def _spec(clustering: bool) -> str:
    text = SPEC.format(name="busy9", index="{type: SIMPLE}").replace(
        "  location: occ/busy9\n", "  location: occ/busy9\n  tableVersion: 9\n")
    return text + ("  clustering: {strategy: SORT, sortColumns: [v], everyNCommits: 2}\n" if clustering else "") + \
        "  retention: {keepCommits: 2}\n"


def test_tablespec_beside_a_running_hudi_1_2_job(hudi, hudi1, tmp_path, monkeypatch):
    from _support import ROOT
    monkeypatch.setenv(TOLERANCE_ENV, "15")  # the job beats every second: a stalled write is dead after 15 s
    spec_file = tmp_path / "busy9.yaml"
    spec_file.write_text(_spec(False))
    table = make_table(hudi, tmp_path, _spec(False))
    assert HudiTable.open(table.location).config.version == 9
    written, conflicts = [], []

    def ingest(rows_):
        for _ in range(6):
            try:
                table.write(hudi.createDataFrame(rows_, DDL), "upsert")
            except WriteConflictError as e:
                conflicts.append(str(e))
                continue
            written.append(rows_)
            return
        raise AssertionError(f"ingest did not commit: {conflicts}")

    def converge(text, kind, attempts=8):
        tried = []
        for _ in range(attempts):
            plan = _plan(text, tmp_path)
            if not plan.has_changes:
                time.sleep(2)
                continue
            tried.append([a.kind for _, a in plan.actions])
            try:
                done = Applier(spark=hudi).apply(plan)
            except (WriteConflictError, StalePlanError) as e:
                conflicts.append(str(e))
                continue
            if kind in [r.kind for r in done.actions]:
                return True
        raise AssertionError(f"{kind} did not commit; plans {tried}; conflicts {conflicts}")

    def pause():
        (control / "pause").touch()
        while not (control / "paused").exists():
            assert job.poll() is None
            time.sleep(0.1)

    ingest([(f"k{n}", -1, 0, f"d{n % 2}") for n in range(12)])
    control = tmp_path / "control"
    control.mkdir()
    job = subprocess.Popen([sys.executable, "-c", HUDI_JOB, str(control), str(spec_file), str(tmp_path), "600",
                            HUDI_1_2], env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    log = control / "log.jsonl"
    try:
        deadline = time.monotonic() + 400
        while not (log.exists() and '"ok": true' in log.read_text()):   # the job is up and committing
            assert job.poll() is None and time.monotonic() < deadline, job.stdout.read() if job.poll() else "slow"
            time.sleep(0.5)
        for n in range(3):   # ingest beside the job
            ingest([(f"k{(n * 5) % 12}", 100 + n, time.time_ns() // 1000, f"d{n % 2}"),
                    (f"t{n}", 100 + n, time.time_ns() // 1000, "d1")])
        pause()   # clustering with the job paused, as beside Hudi 0.15 (test_hudi_concurrency.py)
        try:
            assert converge(_spec(True), "clustering")
        finally:
            (control / "pause").unlink(missing_ok=True)
        assert converge(_spec(False), "clean")
        deadline = time.monotonic() + 60   # kill -9 the job in the middle of a write
        while json.loads(log.read_text().splitlines()[-1])["ok"] is not None:
            assert job.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(1)
    finally:
        job.kill()
        out, _ = job.communicate(timeout=120)
    assert job.returncode == -9, out

    hudi_ok, failed, in_doubt = job_outcome(log, table.location)
    for e in failed:   # Hudi's own words: a write conflict, or an update refused while clustering is pending
        assert "conflict" in e["error"].lower() or "clustering" in e["error"].lower(), e["error"]
    for message in conflicts:
        assert "rolled back" in message or "no longer matches" in message or "stale" in message, message
    expire_dead_writes(table.location)
    Applier(spark=hudi).apply(_plan(_spec(False), tmp_path))
    assert not HudiTable.open(table.location).timeline.pending()

    ours = tablespec_rows(table)
    assert _data(ours) in (latest_rows(written + hudi_ok), latest_rows(written + hudi_ok + in_doubt))
    assert hudi_rs_rows(table.location) == ours
    [theirs] = hudi1.process.run([read_step(table.location)])
    assert rows(pa.Table.from_pylist(theirs)) == ours

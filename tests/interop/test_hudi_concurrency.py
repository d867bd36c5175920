"""tablespec beside Apache Hudi writers: one transaction lock (Hudi's file-system lock provider), and
optimistic conflict checks both ways."""
from __future__ import annotations

import json
import os
import time

import pytest
from helpers import make_table, run_script  # noqa: I001 (interop_support puts tests/engine on the path)
from interop_support import SHORT_LIVED_JVM, assert_readers_agree

from tablespec.apply import Applier
from tablespec.faults import CRASH_ENV
from tablespec.hudi.config import read_table_config, table_index_type
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.table import HudiTable, Location
from tablespec.hudi.timeline.active import Timeline
from tablespec.hudi.timeline.conflict import WriteConflictError
from tablespec.hudi.timeline.heartbeat import heartbeat_path
from tablespec.hudi.timeline.txn_lock import EXPIRE_ENV, TransactionLock, TransactionLockTimeout, lock_path, read_holder
from tablespec.hudi_options import hudi_write_options
from tablespec.plan.builder import build_plan
from tablespec.spec.loader import load_spec_text
from tablespec.state import observe, observe_specs
from tablespec.table import Table

ST = LocalStorage()
SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {{name: {name}, database: occ}}
spec:
  location: occ/{name}
  columns:
    - {{name: id, type: string, nullable: false}}
    - {{name: v, type: long}}
    - {{name: ts, type: long}}
    - {{name: day, type: string, nullable: false}}
  recordKey: {{fields: [id]}}
  partitioning: {{fields: [day]}}
  orderingField: ts
  index: {index}
"""
DDL = "id string, v bigint, ts bigint, day string"
SEED = [("a1", 10, 1, "d1"), ("a2", 20, 1, "d1"), ("a3", 30, 1, "d2")]


def _spec(name, index="{type: SIMPLE}"):
    return SPEC.format(name=name, index=index)


def _plan(text, warehouse):
    loaded = load_spec_text(text, "occ.yaml").specs
    return build_plan(loaded, observe_specs(loaded, Location.parse(str(warehouse))), Location.parse(str(warehouse)))


def _hudi_upsert(spark, rows, options):
    spark.createDataFrame(rows, DDL).write.format("hudi").options(**options) \
        .option("hoodie.datasource.write.operation", "upsert").mode("append").save()


def _data(rows):
    return sorted(tuple(dict(r)[c] for c in ("id", "v", "ts", "day")) for r in rows)


def test_hudi_commit_during_bucket_bootstrap_aborts_it(hudi, tmp_path):
    """The issue's lost update: a Hudi upsert lands while tablespec rewrites the table into buckets.
    The rewrite's commit sees it, rolls itself back and says so; the plan proposes it again."""
    table = make_table(hudi, tmp_path, _spec("rescale"))
    table.write(hudi.createDataFrame(SEED, DDL), "upsert")
    options = hudi_write_options(table.spec, HudiTable.open(table.location))   # the running Hudi job's
    bucketed = _spec("rescale", "{type: BUCKET, numBuckets: 2}")
    plan = _plan(bucketed, tmp_path)
    assert [a.kind for _, a in plan.actions] == ["bucket_bootstrap"]
    landed = []

    def hudi_job_commits_meanwhile(t, a, **progress):
        if not landed:  # after tablespec read and rewrote the data, before its commit
            _hudi_upsert(hudi, [("a1", 11, 2, "d1"), ("a9", 90, 2, "d2")], options)
            landed.append(Timeline.load(ST, table.location).commits()[-1].timestamp)

    with pytest.raises(WriteConflictError) as failure:
        Applier(spark=hudi, on_progress=hudi_job_commits_meanwhile).apply(plan)
    message = str(failure.value)
    assert f"another writer completed commit {landed[0]} (day=d1/" in message, message
    assert "was rolled back" in message and "tablespec plan" in message
    # nothing of the rewrite is left; the table is SIMPLE still, with Hudi's upsert in it
    timeline = Timeline.load(ST, table.location)
    assert not timeline.pending() and timeline.commits()[-1].timestamp == landed[0]
    assert table_index_type(read_table_config(ST, table.location)) == "SIMPLE"
    expected = [("a1", 11, 2, "d1"), ("a2", 20, 1, "d1"), ("a3", 30, 1, "d2"), ("a9", 90, 2, "d2")]
    assert _data(assert_readers_agree(hudi, table)) == expected

    again = _plan(bucketed, tmp_path)
    assert [a.kind for _, a in again.actions] == ["bucket_bootstrap"]
    Applier(spark=hudi).apply(again)
    assert not _plan(bucketed, tmp_path).has_changes
    table = Table(load_spec_text(bucketed, "occ.yaml").specs[0].spec, table.location, hudi)
    assert _data(assert_readers_agree(hudi, table)) == expected


def test_hudi_sees_tablespec_commits_as_conflicts(hudi, tmp_path):
    """Hudi's own conflict resolution strategy, run on the commits tablespec wrote: a Hudi writer that
    started before a tablespec upsert of the same file group must abort."""
    table = make_table(hudi, tmp_path, _spec("both_ways"))
    table.write(hudi.createDataFrame(SEED, DDL), "upsert")
    options = hudi_write_options(table.spec, HudiTable.open(table.location))
    _hudi_upsert(hudi, [("a1", 12, 3, "d1")], options)           # Hudi's commit, on a1's file group
    hudi_commit = Timeline.load(ST, table.location).commits()[-1]
    ours = table.write(hudi.createDataFrame([("a2", 21, 3, "d1")], DDL), "upsert")   # the same file group
    other = table.write(hudi.createDataFrame([("a3", 31, 3, "d2")], DDL), "upsert")  # another one
    jvm = hudi._jvm
    meta = (jvm.org.apache.hudi.common.table.HoodieTableMetaClient.builder()
            .setConf(jvm.org.apache.hudi.storage.hadoop.HadoopStorageConfiguration(hudi._jsc.hadoopConfiguration()))
            .setBasePath(table.location).build())
    timeline = meta.getActiveTimeline()

    def operation(ts):
        instant = next(i for i in timeline.getInstants() if i.getTimestamp() == ts)
        return jvm.org.apache.hudi.client.transaction.ConcurrentOperation(instant, meta)

    strategy = jvm.org.apache.hudi.client.transaction.SimpleConcurrentFileWritesConflictResolutionStrategy()
    assert strategy.hasConflict(operation(hudi_commit.timestamp), operation(ours.instant))
    assert not strategy.hasConflict(operation(hudi_commit.timestamp), operation(other.instant))


def _hudi_lock_provider(spark, base, expire_minutes):
    """Apache Hudi's FileSystemBasedLockProvider for the table at `base`, as a Hudi writer builds it."""
    jvm = spark._jvm
    props = jvm.org.apache.hudi.common.config.TypedProperties()
    props.setProperty("hoodie.base.path", base)
    props.setProperty("hoodie.write.lock.filesystem.path", base + "/.hoodie")
    props.setProperty("hoodie.write.lock.filesystem.expire", str(expire_minutes))
    conf = jvm.org.apache.hudi.storage.hadoop.HadoopStorageConfiguration(spark._jsc.hadoopConfiguration())
    return jvm.org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider(
        jvm.org.apache.hudi.common.config.LockConfiguration(props), conf)


def _age(path, seconds):
    old = time.time() - seconds
    os.utime(path, (old, old))


def test_hudi_and_tablespec_take_one_lock(hudi, tmp_path):
    table = make_table(hudi, tmp_path, _spec("one_lock"))
    base = table.location
    provider = _hudi_lock_provider(hudi, base, 1)
    unit = hudi._jvm.java.util.concurrent.TimeUnit.MILLISECONDS
    with TransactionLock(ST, base, "apply", expire=1):
        assert not provider.tryLock(0, unit)                     # Hudi waits for tablespec
    assert provider.tryLock(0, unit)                             # ... and takes it once released
    holder = read_holder(ST, base, expire=1)
    assert holder is not None and not holder.expired and "lockThreadName" not in holder.thread
    with pytest.raises(TransactionLockTimeout, match="Hudi's transaction lock .* is held by"):
        TransactionLock(ST, base, "apply", expire=1, timeout_seconds=0.5).acquire()   # tablespec waits for Hudi
    provider.unlock()
    assert not os.path.exists(lock_path(base))
    with TransactionLock(ST, base, "apply", expire=1):
        pass


def test_a_dead_writers_lock_frees_after_its_expiry(hudi, tmp_path, monkeypatch):
    """kill -9 of either writer while it holds the lock: the other proceeds once the lock file is older
    than the expiry both were given (its modification time is set back here instead of waiting a
    minute), and recovery rolls the dead writer's instant back."""
    monkeypatch.setenv(EXPIRE_ENV, "1")
    table = make_table(hudi, tmp_path, _spec("dead_writer"))
    table.write(hudi.createDataFrame(SEED, DDL), "upsert")
    base = table.location
    # tablespec dies at its commit point, holding Hudi's lock (and its own table lock)
    died = run_script(f"""
        from pyspark.sql import SparkSession
        from helpers import make_table
        from tablespec.table import Table
        from tablespec.spec.loader import load_spec_text
        spec = load_spec_text({_spec("dead_writer")!r}, "occ.yaml").specs[0].spec
        spark = SparkSession.builder.master("local[1]").getOrCreate()
        Table(spec, {base!r}, spark).write(spark.createDataFrame([("a1", 13, 4, "d1")], {DDL!r}), "upsert")
    """, **{CRASH_ENV: "before_completion"}, **SHORT_LIVED_JVM)
    assert died.returncode == -9, died.stderr
    dead = Timeline.load(ST, base).pending()
    assert [i.state for i in dead] == ["inflight"] and os.path.exists(lock_path(base))
    # Apache Hudi: its provider waits until the lock file is older than the expiry
    provider = _hudi_lock_provider(hudi, base, 1)
    unit = hudi._jvm.java.util.concurrent.TimeUnit.MILLISECONDS
    assert not provider.tryLock(0, unit)
    _age(lock_path(base), 61)
    assert provider.tryLock(0, unit)
    provider.unlock()
    # the dead tablespec's instant: rolled back by the next writer once its heartbeat is stale
    _age(os.path.join(base, ".hoodie", ".heartbeat", dead[0].timestamp), 600)
    table.write(hudi.createDataFrame([("a2", 22, 4, "d1")], DDL), "upsert")
    assert not Timeline.load(ST, base).pending()
    assert _data(assert_readers_agree(hudi, table)) == [("a1", 10, 1, "d1"), ("a2", 22, 4, "d1"), ("a3", 30, 1, "d2")]

    # A Hudi writer that died holding the lock (its lock file stays, never refreshed)
    assert provider.tryLock(0, unit)
    with pytest.raises(TransactionLockTimeout):
        TransactionLock(ST, base, "apply", expire=1, timeout_seconds=0.3).acquire()
    _age(lock_path(base), 61)
    table.write(hudi.createDataFrame([("a3", 33, 5, "d2")], DDL), "upsert")   # takes the expired lock over
    assert not os.path.exists(lock_path(base))


HUDI_JOB = r'''
import json, os, sys, time
from pathlib import Path
from tablespec.engine.hudi_bundle import bundle_jar, session_conf
from tablespec.engine.session import get_spark
from tablespec.hudi_options import hudi_write_options
from tablespec.spec.loader import load_specs
from tablespec.hudi.io import table_location
from tablespec.hudi.table import HudiTable

control, spec_file, warehouse, seconds = Path(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
version = sys.argv[5] if len(sys.argv) > 5 else None   # the Hudi line (default: the test session's)
spark = get_spark("local[1]", session_conf(bundle_jar(fetch=False, version=version)), "hudi-job")
log = open(control / "log.jsonl", "a")
deadline = time.monotonic() + seconds
i = 0
while time.monotonic() < deadline and not (control / "stop").exists():
    if (control / "pause").exists():  # a restart with new options (after a layout change)
        (control / "paused").touch()
        while (control / "pause").exists() and not (control / "stop").exists():
            time.sleep(0.1)
        (control / "paused").unlink(missing_ok=True)
        continue
    spec = load_specs([spec_file]).specs[0].spec   # the job renders its options from the spec every batch
    options = hudi_write_options(spec, HudiTable.open(table_location(warehouse, spec.spec.location)))
    options.update({"hoodie.client.heartbeat.interval_in_ms": "1000"})
    ts = time.time_ns() // 1000
    rows = [(f"k{(3 * i) % 12}", i, ts, f"d{i % 2}"), (f"k{(3 * i + 7) % 12}", i, ts, f"d{(i + 1) % 2}"),
            (f"h{i}", i, ts, "d0")]
    i += 1
    log.write(json.dumps({"ok": None, "rows": rows}) + "\n")   # started: the outcome line follows
    log.flush()
    try:
        spark.createDataFrame(rows, "id string, v bigint, ts bigint, day string").write.format("hudi") \
            .options(**options).option("hoodie.datasource.write.operation", "upsert").mode("append").save()
        log.write(json.dumps({"ok": True, "rows": rows}) + "\n")
    except Exception as e:
        causes = [line.strip()[:300] for line in str(e).splitlines() if "Exception:" in line and "\tat " not in line]
        log.write(json.dumps({"ok": False, "rows": rows, "error": " <- ".join(causes[:6]) or str(e)[:400]}) + "\n")
    log.flush()
'''


def job_outcome(log, location: str) -> tuple[list, list, list]:
    """What HUDI_JOB (killed) logged: the rows of its commits, its failed attempts, and the rows of the
    write it was killed in (committed or not). A lock it held when killed is aged past its expiry."""
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    hudi_ok = [e["rows"] for e in entries if e["ok"]]
    failed = [e for e in entries if e["ok"] is False]
    in_doubt = [entries[-1]["rows"]] if entries[-1]["ok"] is None else []
    assert len(hudi_ok) >= 3, entries
    holder = read_holder(ST, location)
    if holder is not None and not holder.thread.startswith("tablespec"):
        _age(lock_path(location), 3 * 60)   # killed inside its commit: its lock frees after the expiry
    return hudi_ok, failed, in_doubt


def expire_dead_writes(location: str) -> None:
    """The pending instants the killed job left (Hudi leaves dead attempts for lazy cleaning, which the
    next apply rolls back): their heartbeat files are set back past the tolerance, as waiting it out
    would leave them (the job is dead: nothing beats for them any more); then every one counts as dead."""
    state = observe(HudiTable.open(location))
    for instant in set(state.pending) - set(state.expired):
        _age(heartbeat_path(location, instant.timestamp), 3600)
    state = observe(HudiTable.open(location))
    assert not set(state.pending) - set(state.expired), state.pending


def latest_rows(batches) -> list[tuple]:
    """(id, v, ts, day) of each key as the newest (by ts) of the written `batches` left it."""
    latest: dict = {}
    for rows in batches:
        for r in rows:
            if r[0] not in latest or r[2] > latest[r[0]][2]:
                latest[r[0]] = tuple(r)
    return sorted(latest.values())


def test_tablespec_actions_beside_a_running_hudi_job(hudi, tmp_path, monkeypatch):
    """A Hudi job upserts in a loop (its own process) while tablespec ingests, rescales buckets, clusters
    and cleans the same table. Every action either commits or fails with a conflict and leaves nothing
    behind; the table holds exactly what the successful commits wrote; all readers agree."""
    import json
    import subprocess
    import sys

    from _support import ROOT

    from tablespec.errors import StalePlanError
    from tablespec.hudi.timeline.heartbeat import TOLERANCE_ENV

    monkeypatch.setenv(TOLERANCE_ENV, "15")  # the job beats every second: a stalled write is dead after 15 s
    def spec_text(buckets, clustering=True):
        return SPEC.format(name="busy", index=f"{{type: BUCKET, numBuckets: {buckets}}}") + \
            ("  clustering: {strategy: SORT, sortColumns: [v], everyNCommits: 2}\n" if clustering else "") + \
            "  retention: {keepCommits: 2}\n"
    spec_file = tmp_path / "busy.yaml"
    spec_file.write_text(spec_text(2))
    table = make_table(hudi, tmp_path, spec_text(2))
    written = []   # (rows) of every successful commit, both writers
    conflicts = []   # what tablespec's conflicting attempts said

    def ingest(rows):
        """A tablespec upsert; a conflict with the job rolls it back, and it is tried again."""
        for _ in range(6):
            try:
                table.write(hudi.createDataFrame(rows, DDL), "upsert")
            except WriteConflictError as e:
                conflicts.append(str(e))
                continue
            written.append(rows)
            return
        raise AssertionError(f"ingest did not commit: {conflicts}")

    ingest([(f"k{n}", -1, 0, f"d{n % 2}") for n in range(12)])
    control = tmp_path / "control"
    control.mkdir()
    job = subprocess.Popen([sys.executable, "-c", HUDI_JOB, str(control), str(spec_file), str(tmp_path), "600"],
                           env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    log = control / "log.jsonl"

    def converge(text, kind, on_progress=None, attempts=8):
        """Plan and apply until an action of `kind` ran; conflicts and stale plans are retried, and what
        the plan puts first (rolling back a clustering plan another writer made stale) is applied."""
        tried = []
        for _ in range(attempts):
            plan = _plan(text, tmp_path)
            if not plan.has_changes:   # not due yet: the job's next commits make it due
                time.sleep(2)
                continue
            tried.append([a.kind for _, a in plan.actions])
            try:
                done = Applier(spark=hudi, on_progress=on_progress).apply(plan)
            except (WriteConflictError, StalePlanError) as e:
                conflicts.append(str(e))
                continue
            if kind in [r.kind for r in done.actions]:
                return True
        raise AssertionError(f"{kind} did not commit; plans {tried}; conflicts {conflicts}")

    try:
        deadline = time.monotonic() + 400
        while not (log.exists() and '"ok": true' in log.read_text()):   # the job is up and committing
            assert job.poll() is None and time.monotonic() < deadline, job.stdout.read() if job.poll() else "slow"
            time.sleep(0.5)
        for n in range(3):   # ingest beside the job
            ingest([(f"k{(n * 5) % 12}", 100 + n, time.time_ns() // 1000, f"d{n % 2}"),
                    (f"t{n}", 100 + n, time.time_ns() // 1000, "d1")])

        def quiesce_before_commit(t, a, **progress):   # the job restarts with the new options
            (control / "pause").touch()
            while not (control / "paused").exists():
                assert job.poll() is None
                time.sleep(0.1)

        try:
            assert converge(spec_text(4), "bucket_rescale", quiesce_before_commit)
            spec_file.write_text(spec_text(4))
        finally:
            (control / "pause").unlink(missing_ok=True)
        table = Table(load_spec_text(spec_text(4), "occ.yaml").specs[0].spec, table.location, hudi)
        time.sleep(3)
        for n in range(2):  # commits land on the new layout, from both writers
            ingest([(f"t{10 + n}", 200 + n, time.time_ns() // 1000, "d0")])
        # Clustering runs with the job paused: Apache Hudi 0.15 lets bucket-index upserts into file groups
        # of a pending clustering plan, and picks conflict candidates by instant time, so a clustering
        # scheduled before its last commit is invisible to it (seen here: two file groups for one bucket).
        (control / "pause").touch()
        try:
            while not (control / "paused").exists():
                assert job.poll() is None
                time.sleep(0.1)
            assert converge(spec_text(4), "clustering")
        finally:
            (control / "pause").unlink(missing_ok=True)
        # The clean runs beside the job, from a spec without clustering: with it, every second job commit makes
        # a clustering due, the job's next upsert makes that plan stale, and its rollback and the job's pending
        # writes hold the cleaner's earliest retained commit back (seen in CI: no clean in eight plans).
        assert converge(spec_text(4, clustering=False), "clean")
        # kill -9 the job in the middle of a write: whatever it held, tablespec proceeds and recovers
        deadline = time.monotonic() + 60
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
        assert "Conflict" in e["error"] or "clustering" in e["error"].lower(), e["error"]
    for message in conflicts:
        assert "rolled back" in message or "no longer matches" in message or "stale" in message, message
    expire_dead_writes(table.location)
    Applier(spark=hudi).apply(_plan(spec_text(4), tmp_path))
    assert not Timeline.load(ST, table.location).pending()

    assert _data(assert_readers_agree(hudi, table)) in (latest_rows(written + hudi_ok),
                                                         latest_rows(written + hudi_ok + in_doubt))
    state_plan = _plan(spec_text(4), tmp_path)
    assert "bucket_rescale" not in [a.kind for _, a in state_plan.actions]

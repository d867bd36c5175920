"""tablespec beside Apache Hudi writers: one transaction lock (Hudi's file-system lock provider), and
optimistic conflict checks both ways."""
from __future__ import annotations

import os
import time

import pytest

from interop_support import assert_readers_agree, hudi_df
from helpers import make_table, run_script  # noqa: I001 (interop_support puts tests/engine on the path)
from tablespec.apply import Applier
from tablespec.engine.commit import CRASH_ENV
from tablespec.hudi.config import read_table_config, table_index_type
from tablespec.hudi.conflict import WriteConflictError
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.timeline import Timeline
from tablespec.hudi.txn_lock import EXPIRE_ENV, TransactionLock, TransactionLockTimeout, lock_path, read_holder
from tablespec.hudi_options import hudi_write_options
from tablespec.plan.builder import build_plan
from tablespec.spec.loader import load_spec_text
from tablespec.state import observe_specs
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
    return build_plan(loaded, observe_specs(loaded, str(warehouse)), str(warehouse))


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
    options = hudi_write_options(table.spec, table.location)   # the running Hudi job's
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
    options = hudi_write_options(table.spec, table.location)
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
    """, **{CRASH_ENV: "before_completion"})
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

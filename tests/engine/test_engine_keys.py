"""Auto-generated keys (RFC-76) under task retries, and auto-key tables' write rules."""
from __future__ import annotations

import sys

import pytest
from helpers import assert_hudi_rs_agrees, make_table
from pyspark import cloudpickle

from tablespec.engine.writer import WriteRefused

pytestmark = pytest.mark.spark
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # executors cannot import test modules

EVENTS = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: events}
spec:
  location: events
  columns:
    - {name: id, type: long}
    - {name: kind, type: string}
    - {name: day, type: int}
  recordKey: {autoGenerate: true}
  partitioning: {fields: [day]}
"""


def fail_first_attempt(batches):
    """Fails every task's first attempt after it consumed its input, so Spark recomputes it."""
    from pyspark import TaskContext
    out = list(batches)
    if TaskContext.get().attemptNumber() == 0:
        raise RuntimeError("injected failure of a first task attempt")
    yield from out


def events(spark, flaky: bool):
    df = spark.range(0, 300, numPartitions=3).selectExpr("id", "concat('k', id % 7) as kind", "cast(id % 2 as int) as day")
    return df.mapInArrow(fail_first_attempt, df.schema) if flaky else df


def keyed(table, instant):
    """Row content by key, the key without its instant prefix (different for each commit)."""
    return {r._hoodie_record_key[len(instant) + 1:]: (r.id, r.kind) for r in table.read().collect()}


def test_auto_keys_identical_under_task_retries(spark, tmp_path):
    steady = make_table(spark, tmp_path / "a", EVENTS)
    flaky = make_table(spark, tmp_path / "b", EVENTS)
    r1 = steady.write(events(spark, False), "insert")
    r2 = flaky.write(events(spark, True), "insert")
    a, b = keyed(steady, r1.instant), keyed(flaky, r2.instant)
    assert len(a) == 300 and a == b  # same keys for the same rows, no duplicates
    rows = flaky.read().collect()
    assert len({r._hoodie_record_key for r in rows}) == 300
    assert all(r._hoodie_record_key.startswith(r2.instant + "_") for r in rows)
    assert_hudi_rs_agrees(flaky)


def test_auto_key_upsert_needs_the_key_column(spark, tmp_path):
    table = make_table(spark, tmp_path, EVENTS)
    table.write(events(spark, False).limit(5), "insert")
    with pytest.raises(WriteRefused, match="needs the `_hoodie_record_key` column"):
        table.write(events(spark, False).limit(5), "upsert")
    # with the stored key, a delete finds the record
    victim = table.read().limit(1).select("_hoodie_record_key", "id", "kind", "day")
    result = table.write(victim, "delete")
    assert result.deleted == 1 and table.read().count() == 4
    assert_hudi_rs_agrees(table)

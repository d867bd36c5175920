"""Tables tablespec writes, read by Apache Hudi: snapshot, time-travel and incremental queries
return exactly what tablespec reads, meta columns included, for every index type and key kind,
and after every action that reshapes a table."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from _support import ORDERS_SPEC
from helpers import make_table, rows, tablespec_rows
from interop_support import assert_readers_agree, hudi_rows
from test_engine_rebucket import apply_spec

from tablespec.engine.reader import to_arrow
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.timeline.active import Timeline

SCHEMA = "order_id string, customer_id bigint, amount decimal(12,2), updated_at timestamp, order_date date"
T0 = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
INDEX = "index: {type: BUCKET, numBuckets: 16}"
PARTITIONING = "  partitioning: {fields: [order_date]}\n"
SPECS = {
    "simple": ORDERS_SPEC.replace(INDEX, "index: {type: SIMPLE}"),
    "bloom_complex_key_unpartitioned": ORDERS_SPEC.replace(INDEX, "index: {type: BLOOM}")
    .replace("recordKey: {fields: [order_id]}", "recordKey: {fields: [order_id, customer_id]}")
    .replace(PARTITIONING, ""),
    "bucket": ORDERS_SPEC.replace("numBuckets: 16", "numBuckets: 4"),
    "record_level": ORDERS_SPEC.replace(INDEX, "index: {type: RECORD_LEVEL}"),
    "auto_keys": ORDERS_SPEC.replace("recordKey: {fields: [order_id]}", "recordKey: {autoGenerate: true}")
    .replace("  orderingField: updated_at\n", "").replace(INDEX, "index: {type: SIMPLE}"),
}


def batch(spark, ids, version: int = 0, days: int = 3):
    rows = [(f"o{i:04d}", i % 5, Decimal(f"{i + version}.25"), T0 + dt.timedelta(hours=version, minutes=i),
             dt.date(2026, 11, 1 + i % days)) for i in ids]
    return spark.createDataFrame(rows, SCHEMA)


def commits(location: str) -> list[str]:
    storage = LocalStorage()
    return [i.timestamp for i in Timeline.load(storage, location).commits()]


def write_history(spark, table, append_only: bool) -> list[str]:
    """Three commits: inserts, then updates + inserts, then deletes (append-only tables insert)."""
    table.write(batch(spark, range(0, 12)), "insert")
    if append_only:
        table.write(batch(spark, range(12, 18)), "insert")
        table.write(batch(spark, range(18, 20)), "bulk_insert")
    else:
        table.write(batch(spark, range(6, 18), version=1), "upsert")
        table.write(batch(spark, range(0, 3)), "delete")
    return commits(table.location)


def commit_time(row: tuple) -> str:
    return dict(row)["_hoodie_commit_time"]


def assert_hudi_queries_agree(spark, table, instants: list[str]) -> None:
    """Snapshot (all three readers), time travel to each commit, and the incremental query over
    everything after the first commit, each equal to what tablespec reads."""
    assert_readers_agree(spark, table)
    for instant in instants:
        assert hudi_rows(spark, table.location, **{"as.of.instant": instant}) == tablespec_rows(table, as_of=instant), \
            f"time travel to {instant}"
    begin, end = instants[0], instants[-1]
    expected = [r for r in tablespec_rows(table, as_of=end) if commit_time(r) > begin]
    incremental = hudi_rows(spark, table.location, **{
        "hoodie.datasource.query.type": "incremental",
        "hoodie.datasource.read.begin.instanttime": begin,
        "hoodie.datasource.read.end.instanttime": end})
    assert incremental == expected and expected
    assert rows(to_arrow(table.read_incremental(begin, end))) == incremental   # version 6: requested times, begin excluded


@pytest.mark.parametrize("kind", sorted(SPECS))
def test_hudi_reads_what_tablespec_wrote(hudi, tmp_path, kind):
    table = make_table(hudi, tmp_path, SPECS[kind])
    instants = write_history(hudi, table, append_only=kind == "auto_keys")
    assert len(instants) == 3
    assert_hudi_queries_agree(hudi, table, instants)


def test_hudi_reads_after_clustering_rebucketing_schema_evolution_and_clean(hudi, tmp_path):
    """One table through every reshaping action; Apache Hudi agrees after each, and time travel
    to before each rewrite still reads the replaced files."""
    text = SPECS["simple"] + "  clustering: {strategy: SORT, sortColumns: [customer_id], everyNCommits: 3}\n"
    table = make_table(hudi, tmp_path, text)
    instants = write_history(hudi, table, append_only=False)

    def step(new_text: str, kind: str, travel: bool = True):
        plan, _, spec = apply_spec(hudi, new_text, tmp_path)
        assert kind in [a.kind for _, a in plan.actions]
        table.spec = spec
        assert_readers_agree(hudi, table)
        for instant in instants if travel else ():
            assert hudi_rows(hudi, table.location, **{"as.of.instant": instant}) == \
                tablespec_rows(table, as_of=instant), f"time travel to {instant} after {kind}"
        return new_text

    text = step(text, "clustering")
    text = step(text.replace("index: {type: SIMPLE}", "index: {type: BUCKET, numBuckets: 2}"), "bucket_bootstrap")
    text = step(text.replace("numBuckets: 2", "numBuckets: 4"), "bucket_rescale")
    text = step(text.replace("    - {name: order_date, type: date}\n",
                             "    - {name: order_date, type: date}\n    - {name: note, type: string}\n"),
                "schema_evolution")
    table.write(batch(hudi, range(30, 33), version=2).selectExpr("*", "'new' as note"), "upsert")
    assert_readers_agree(hudi, table)
    step(text + "  retention: {keepCommits: 1}\n", "clean", travel=False)  # the old instants are cleaned

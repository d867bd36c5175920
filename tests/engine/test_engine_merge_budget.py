"""A copy-on-write merge of a base file larger than the task's memory (TABLESPEC_TASK_MEMORY_BYTES)
streams it batch by batch: the same rows as the in-memory merge, stored rows in their order and
the incoming ones after them, true footer keys, and a table every reader agrees on. SIMPLE and
BLOOM also tag in chunks of a partition's incoming rows under that budget."""
from __future__ import annotations

import datetime as dt
import shutil
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _support import ORDERS_SPEC, storage_and_base
from helpers import assert_hudi_rs_agrees, make_table, rows, tablespec_rows

from tablespec.arrow.basefile import read_footer_keys
from tablespec.engine.reader import to_arrow
from tablespec.hudi.fs_view import FileSystemView
from tablespec.hudi.timeline.active import Timeline
from tablespec.table import Table

pytestmark = pytest.mark.spark

SCHEMA = "order_id string, customer_id bigint, amount decimal(12,2), updated_at timestamp, order_date date"
T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
TINY = "8000"  # bytes: below every base file here, so each merge streams
STORED = [f"k{i:04d}" for i in range(0, 400)]
# Java orders U+FFFF after a surrogate pair (U+1F600); UTF-8 byte order does the opposite
HIGH = ["k\uffff", "k\U0001F600"]


def orders(spark, data):
    """data: (order_id, amount, hour offset, day)"""
    return spark.createDataFrame([(o, 1, Decimal(a), T0 + dt.timedelta(hours=h), dt.date(2026, 11, d))
                                  for o, a, h, d in data], SCHEMA)


def spec_for(index: str) -> str:
    block = "{type: BUCKET, numBuckets: 1}" if index == "BUCKET" else f"{{type: {index}}}"
    return ORDERS_SPEC.replace("index: {type: BUCKET, numBuckets: 16}", "index: " + block)


def latest_file(table: Table, partition: str = "order_date=2026-11-01") -> str:
    storage, base = storage_and_base(table.location)
    (s,) = FileSystemView.build(storage, base, Timeline.load(storage, base)).latest_slices(partition)
    return s.base_file.path


def normalised(table: Table, names: dict[str, str]) -> list[tuple]:
    """The rows of the table's latest base files (read without Spark: the test compares what was
    written; Spark and hudi-rs read the result at the end) with each commit's instant replaced by
    its name in `names` and the file name dropped. Seqnos of the first commit's rows stay exact;
    later ones keep only the commit: a seqno numbers a row by its place in the file, which the
    streaming merge lays out differently."""
    storage, base = storage_and_base(table.location)
    view = FileSystemView.build(storage, base, Timeline.load(storage, base))
    out = []
    for row in rows(pa.concat_tables(pq.ParquetFile(s.base_file.path).read() for s in view.latest_slices())):
        row = dict(row)
        row.pop("_hoodie_file_name")
        commit, seqno = row["_hoodie_commit_time"], row["_hoodie_commit_seqno"]
        assert seqno.startswith(commit + "_")
        row["_hoodie_commit_time"] = names[commit]
        row["_hoodie_commit_seqno"] = names[commit] + (seqno[len(commit):] if names[commit] == "first" else "")
        out.append(tuple(sorted(row.items())))
    return sorted(out, key=repr)


def java_key(k: str) -> bytes:
    return k.encode("utf-16-be")


@pytest.fixture
def small_batches(spark):
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = spark.conf.get(key)
    spark.conf.set(key, "50")
    yield
    spark.conf.set(key, before)


# BUCKET tags no stored key: its merge is SIMPLE's, which tags in chunks besides (streamed with
# BUCKET and read by Apache Hudi: test_apache_hudi_reads_a_streamed_merge)
@pytest.mark.parametrize("index", ["RECORD_LEVEL", "SIMPLE", "BLOOM"])
def test_streamed_merge_writes_what_the_in_memory_merge_writes(spark, tmp_path, monkeypatch, small_batches, index):
    streamed = make_table(spark, tmp_path / "streamed", spec_for(index))
    first = streamed.write(orders(spark, [(k, "1.00", 0, 1) for k in STORED]), "upsert").instant
    held = Table(streamed.spec, str(tmp_path / "held"), spark)
    shutil.copytree(streamed.location, held.location)
    names = {first: "first"}

    def both(df, operation: str):
        """The write into both tables: streamed with a tiny budget, held with the default one."""
        with monkeypatch.context() as m:
            m.setenv("TABLESPEC_TASK_MEMORY_BYTES", TINY)
            s = streamed.write(df, operation)
        h = held.write(df, operation)
        assert (s.inserted, s.updated, s.deleted, s.ignored) == (h.inserted, h.updated, h.deleted, h.ignored)
        names.update({s.instant: f"commit {len(names)}", h.instant: f"commit {len(names)}"})
        assert normalised(streamed, names) == normalised(held, names)
        return s

    # newer updates win, older ones lose to the stored row, new keys sort before, between and after
    r = both(orders(spark, [(k, "2.00", 1, 1) for k in STORED[::7]] + [(k, "9.00", -1, 1) for k in STORED[3::7]]
                    + [("a0", "3.00", 0, 1), ("k0100x", "3.00", 0, 1)] + [(k, "3.00", 0, 1) for k in HIGH]), "upsert")
    assert (r.inserted, r.updated, r.ignored) == (4, len(STORED[::7]), len(STORED[3::7]))
    path = latest_file(streamed)
    file = pq.ParquetFile(path)
    keys = file.read(columns=["_hoodie_record_key"]).column(0).to_pylist()
    # streamed: stored rows first in their order, the new and updated ones after them, in many row groups
    assert keys[-(4 + len(STORED[::7])):] == sorted(["a0", "k0100x", *HIGH, *STORED[::7]], key=java_key)
    assert keys != sorted(keys, key=java_key) and file.metadata.num_row_groups > 1
    assert pq.ParquetFile(latest_file(held)).metadata.num_row_groups == 1
    assert read_footer_keys(path) == ("a0", "k\uffff")
    seqnos = file.read(columns=["_hoodie_commit_seqno"]).column(0).to_pylist()
    assert all(s.endswith(f"_{i}") for i, s in enumerate(seqnos) if s.startswith(r.instant))

    # a delete, then an upsert that also moves keys to another partition, both of the multi-row-group file
    deleted = STORED[5::11]
    r = both(orders(spark, [(k, "0", 0, 1) for k in deleted + ["a0", "missing"]]), "delete")
    assert r.deleted == len(deleted) + 1
    moved = [k for k in STORED[2::50] if k not in deleted]
    r = both(orders(spark, [(k, "4.00", 2, 1) for k in STORED[1::13]] + [(k, "5.00", 2, 2) for k in moved]
                    + [("b0", "4.00", 0, 1)]), "upsert")
    path = latest_file(streamed)
    assert read_footer_keys(path) == ("b0", "k\uffff")
    assert read_footer_keys(latest_file(held)) == ("b0", "k\uffff")
    if index == "RECORD_LEVEL":  # moved keys left the old file group
        assert r.deleted == len(moved)
        assert not set(moved) & set(pq.read_table(path, columns=["_hoodie_record_key"]).column(0).to_pylist())
    assert_hudi_rs_agrees(streamed)  # verify included


@pytest.mark.hudi
def test_apache_hudi_reads_a_streamed_merge(hudi, tmp_path, monkeypatch, small_batches):
    table = make_table(hudi, tmp_path, spec_for("BUCKET"))
    table.write(orders(hudi, [(k, "1.00", 0, 1) for k in STORED]), "upsert")
    monkeypatch.setenv("TABLESPEC_TASK_MEMORY_BYTES", TINY)
    table.write(orders(hudi, [(k, "2.00", 1, 1) for k in STORED[::9]] + [("a0", "3.00", 0, 1)]), "upsert")
    assert pq.ParquetFile(latest_file(table)).metadata.num_row_groups > 1
    theirs = rows(to_arrow(hudi.read.format("hudi").option("hoodie.datasource.query.type", "snapshot")
                           .load(table.location)))
    assert theirs == tablespec_rows(table)

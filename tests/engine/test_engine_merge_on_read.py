"""Deltacommits on a merge-on-read table tablespec created (version 6, BUCKET): what the driver
decides from the batch's first read must hold for the rows the tasks write."""
from __future__ import annotations

import pytest
from helpers import make_table

from tablespec.engine.writer import WriteRefused
from tablespec.hudi.table import HudiTable

pytestmark = pytest.mark.spark

SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: events}
spec:
  location: events
  tableType: MERGE_ON_READ
  tableVersion: 6
  columns:
    - {name: id, type: string, nullable: false}
    - {name: v, type: int}
    - {name: dt, type: string}
  recordKey: {fields: [id]}
  partitioning: {fields: [dt]}
  index: {type: BUCKET, numBuckets: 1}
"""


def test_an_input_that_changes_between_reads_is_refused_before_it_hides_a_slice(spark, tmp_path, monkeypatch):
    """The log targets of a table with many file groups come from the partitions of the batch's first
    read; a row the second read puts in another partition (here a non-deterministic partition value)
    would get a new base file for an existing file group, hiding its committed rows. The write is
    refused and nothing is lost. A table with few file groups targets them all (no first read): the
    same input lands in a log file wherever it goes."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    from tablespec.engine import delta

    table = make_table(spark, tmp_path, SPEC)
    table.write(spark.createDataFrame([("k1", 1, "d1"), ("k2", 2, "d2")], "id string, v int, dt string"))
    before = sorted(tuple(r) for r in table.read().select("id", "v", "dt").collect())
    calls = tmp_path / "calls"

    def day(_):   # d1, d2, d1, ... one call after another, in whichever process
        with open(calls, "a+") as f:
            f.seek(0)
            n = len(f.read())
            f.write("x")
        return "d1" if n % 2 == 0 else "d2"

    flipping = (spark.createDataFrame([("k3", 3)], "id string, v int")
                .withColumn("dt", F.udf(day, StringType()).asNondeterministic()(F.col("id"))))
    with monkeypatch.context() as m, pytest.raises(WriteRefused, match="that its first read did not: it changes "
                                                                      "between reads"):
        m.setattr(delta, "TARGETS_WITHOUT_SCAN", 1)   # the table's two file groups count as many
        table.write(flipping)
    assert sorted(tuple(r) for r in table.read().select("id", "v", "dt").collect()) == before
    assert [i.action for i in HudiTable.open(table.location).timeline.completed()] == ["deltacommit", "rollback"]

    result = table.write(flipping)
    after = sorted(tuple(r) for r in table.read().select("id", "v", "dt").collect())
    assert [r for r in after if r[0] != "k3"] == before and [r[:2] for r in after if r[0] == "k3"] == [("k3", 3)]
    assert result.inserted == 1 and all(".log." in f for f in result.files)


def test_a_bulk_insert_into_a_bucket_table_is_refused_and_changes_nothing(spark, tmp_path):
    """Apache Hudi 0.15's bulk_insert into a merge-on-read BUCKET table opens a second file group for
    a bucket that has one (measured); tablespec refuses it in one line before anything changes."""
    from _support import table_files
    table = make_table(spark, tmp_path, SPEC)
    table.write(spark.createDataFrame([("k1", 1, "d1")], "id string, v int, dt string"))
    files = table_files(table.location)
    with pytest.raises(WriteRefused, match="^bulk_insert into the MERGE_ON_READ BUCKET table .*events is refused: "
                                           "Apache Hudi 0.15's opens a second file group for a bucket"):
        table.write(spark.createDataFrame([("k2", 2, "d1")], "id string, v int, dt string"), "bulk_insert")
    assert table_files(table.location) == files


def test_a_move_older_than_the_keys_log_record_is_ignored(spark, tmp_path):
    """RECORD_LEVEL: an upsert moving a key to another partition is checked against the key's merged
    stored row (base file and log files), as Apache Hudi does: the newest version, in a log file, is
    newer than the incoming row, so the row is ignored and the key stays where it is."""
    from tablespec.hudi.mdt import record_index_reader
    text = (SPEC.replace("{type: BUCKET, numBuckets: 1}", "{type: RECORD_LEVEL, recordLevel: {numBuckets: 1}}")
            + "  orderingField: v\n")
    table = make_table(spark, tmp_path, text)
    ddl = "id string, v int, dt string"
    table.write(spark.createDataFrame([("k1", 1, "d1")], ddl))
    table.write(spark.createDataFrame([("k1", 10, "d1")], ddl))     # to a log file of k1's file group
    assert list(tmp_path.rglob(".*.log.*"))
    [(fg, _)] = {(r._hoodie_file_name.split("_")[0], r.v) for r in table.read().collect()}
    result = table.write(spark.createDataFrame([("k1", 5, "d2")], ddl))   # older than the log record
    assert (result.inserted, result.deleted, result.ignored) == (0, 0, 1), str(result)
    assert [(r.id, r.v, r.dt) for r in table.read().collect()] == [("k1", 10, "d1")]
    entry = record_index_reader.scan(HudiTable.open(table.location))["k1"]
    assert (entry.partition, entry.file_id) == ("dt=d1", fg)


def test_clustering_a_file_group_a_key_moved_out_of_keeps_the_key_indexed(spark, tmp_path):
    """RECORD_LEVEL: a key that moved partition left its old file group by a delete block; its base
    file still holds the key. Clustering that file group writes the merged rows (without the key)
    and moves no live key out of the index: the key stays indexed where it lives now."""
    from test_engine_clustering import plan_for

    from tablespec.apply import Applier
    from tablespec.hudi.mdt import record_index_reader
    text = (SPEC.replace("{type: BUCKET, numBuckets: 1}", "{type: RECORD_LEVEL, recordLevel: {numBuckets: 1}}")
            + "  orderingField: v\n")
    table = make_table(spark, tmp_path, text)
    ddl = "id string, v int, dt string"
    table.write(spark.createDataFrame([("k1", 1, "d1"), ("k2", 1, "d1")], ddl))
    table.write(spark.createDataFrame([("k2", 2, "d1")], ddl))      # a log file in d1's file group
    table.write(spark.createDataFrame([("k1", 3, "d2")], ddl))      # k1 moves: a delete block in that log
    plan = plan_for(text + "  clustering: {strategy: SORT, sortColumns: [v], everyNCommits: 1, partitionFilter: 'dt=d1'}\n", tmp_path)
    assert [a.kind for _, a in plan.actions] == ["update_settings", "clustering"], plan.actions
    Applier(spark=spark).apply(plan)
    clustered = HudiTable.open(table.location)
    assert clustered.timeline.last("replacecommit") is not None
    assert sorted((r.id, r.v, r.dt) for r in table.read().collect()) == [("k1", 3, "d2"), ("k2", 2, "d1")]
    index = record_index_reader.scan(clustered)
    assert {k: e.partition for k, e in index.items()} == {"k1": "dt=d2", "k2": "dt=d1"}
    live = {(s.partition, s.file_id) for s in clustered.view.latest_slices()}
    assert {(e.partition, e.file_id) for e in index.values()} <= live


def test_housekeeping_after_a_deltacommit_lists_no_partition_again(spark, tmp_path):
    """The view after the write's own deltacommit follows from the one it wrote with and the files its
    write stats name: the compaction trigger's look at every slice after the commit lists no
    partition (30,000 log files in a large table), and sees what a fresh listing does."""
    from dataclasses import replace

    from tablespec.hudi.fs_view import FileSystemView
    from tablespec.hudi.io import LocalStorage

    class Listings(LocalStorage):
        """Local files, recording each folder listed. A real store: the listings happen."""
        listed: list[str] = []

        def list_dir(self, path):
            self.listed.append(path)
            return super().list_dir(path)

    table = make_table(spark, tmp_path, SPEC + "  compaction: {runBy: tablespec, deltaCommits: 5}\n")
    storage = Listings()
    table.table = HudiTable.open(replace(table.table.location, storage=storage))
    ddl = "id string, v int, dt string"
    table.write(spark.createDataFrame([("k1", 1, "d1"), ("k2", 2, "d2")], ddl))
    storage.listed.clear()
    table.write(spark.createDataFrame([("k1", 10, "d1"), ("k3", 3, "d3")], ddl))   # a log file; a new partition
    assert storage.listed.count(f"{table.location}/dt=d2") == 1     # the write's own view; none after its commit
    handle = table.table
    fresh = FileSystemView.build(LocalStorage(), table.location, handle.timeline)
    assert handle.view.partitions == fresh.partitions == ("dt=d1", "dt=d2", "dt=d3")
    assert handle.view.file_groups() == fresh.file_groups()
    assert [len(s.log_files) for s in fresh.latest_slices()] == [1, 0, 0]

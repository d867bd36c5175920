"""The record-level index through writes: tagging, global moves, deletes, re-inserts, verify, lookup."""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

from helpers import assert_hudi_rs_agrees, make_table
from tablespec.hudi import record_index as ri
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.timeline import Timeline
from tablespec.index import verify

pytestmark = pytest.mark.spark

SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: people}
spec:
  location: people
  columns:
    - {name: id, type: string, nullable: false}
    - {name: city, type: string}
    - {name: n, type: int}
  recordKey: {fields: [id]}
  partitioning: {fields: [city]}
  orderingField: n
  index: {type: RECORD_LEVEL, recordLevel: {numBuckets: 3, maxFilesPerBucket: 2}}
"""
DDL = "id string, city string, n int"


def where(table) -> dict[str, tuple[str, str]]:
    """key -> (partition, file id) as the data says (via tablespec's reader)."""
    return {r._hoodie_record_key: (r._hoodie_partition_path, r._hoodie_file_name.split("_")[0])
            for r in table.read().collect()}


def looked_up(table, keys) -> dict[str, tuple[str, str]]:
    t = table.lookup(keys)
    return {k: (p, f) for k, p, f in zip(*(t.column(c).to_pylist() for c in ("key", "partition_path", "file_id")))}


def assert_consistent(table):
    result = verify(table.location)
    assert result.ok, str(result)
    data = where(table)
    assert looked_up(table, list(data) + ["nope"]) == data
    return data


def test_upsert_move_delete_reinsert_keep_index_and_data_consistent(spark, tmp_path):
    table = make_table(spark, tmp_path, SPEC)
    rows = [(f"k{i}", ["ams", "ber", "cph"][i % 3], i) for i in range(30)]
    assert table.write(spark.createDataFrame(rows, DDL), "insert").inserted == 30
    first = assert_consistent(table)
    assert len(first) == 30
    # update in place, move k1 ber -> ams, insert k99
    r = table.write(spark.createDataFrame([("k0", "ams", 100), ("k1", "ams", 101), ("k99", "cph", 1)], DDL), "upsert")
    assert (r.inserted, r.updated) == (2, 1) and r.deleted == 1  # the move: inserted in ams, removed from ber
    after = assert_consistent(table)
    assert after["k1"][0] == "city=ams" or after["k1"][0] == "ams"
    assert after["k0"] == first["k0"]  # an update in place keeps its file group
    assert sorted(r.id for r in table.read().filter("id = 'k1'").collect()) == ["k1"]  # unique across partitions
    # delete by key (any partition value), then re-insert elsewhere
    r = table.write(spark.createDataFrame([("k2", "zzz", 0), ("absent", "ams", 0)], DDL), "delete")
    assert r.deleted == 1
    assert "k2" not in assert_consistent(table)
    table.write(spark.createDataFrame([("k2", "ber", 5)], DDL), "upsert")
    assert assert_consistent(table)["k2"][0].endswith("ber")
    # insert of an existing key keeps keys unique (updated where it lives)
    table.write(spark.createDataFrame([("k3", "ams", 300)], DDL), "insert")
    data = assert_consistent(table)
    assert len(data) == 31 and table.read().filter("id = 'k3'").collect()[0].n == 300
    assert_hudi_rs_agrees(table)
    # index files live under .hoodie/.tablespec and count only for completed instants
    files = ri.list_files(LocalStorage(), table.location)
    done = {i.timestamp for i in Timeline.load(LocalStorage(), table.location).completed()}
    assert files and all(f.instant in done for f in files)

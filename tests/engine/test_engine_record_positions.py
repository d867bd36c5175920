"""A version 9 SIMPLE / BLOOM deltacommit's block names its records' rows in the slice's base file
(RECORD_POSITIONS), and a positional reader (Apache Hudi 1.2's) pairs the i-th record with the i-th
smallest position: the write task (tasks.append_file_groups, on a real base file, no Spark) puts a
block's records in row order, not key order, updates and deletes alike."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from record_positions import decode_positions

from tablespec.engine import tasks
from tablespec.hudi.formats.logfile import Header, avro_records, deleted_keys, read_blocks
from tablespec.hudi.formats.naming import BaseFileName
from tablespec.hudi.merge_on_read import EVENT_TIME, Counting, MergeRules, SliceRead
from tablespec.hudi.table import Location

FILE_ID, BASE_INSTANT, INSTANT = "0b2c4e6f-1a3d-4f5e-8a7b-9c0d1e2f3a4b-0", "20261129090000000", "20261129091500000"
DATA = pa.schema([("id", pa.string()), ("v", pa.int64()), ("ts", pa.int64())])
AVRO = json.dumps({"type": "record", "name": "t", "fields": [
    {"name": n, "type": ["null", t], "default": None} for n, t in (("id", "string"), ("v", "long"), ("ts", "long"))]})


def _job(tmp_path, operation: str) -> tasks.WriteJob:
    """A deltacommit into partition p, whose file group's base file holds b, d, a, c in that row order."""
    name = BaseFileName(FILE_ID, "0-1-0", BASE_INSTANT).format()
    (tmp_path / "p").mkdir()
    keys = ["b", "d", "a", "c"]
    pq.write_table(pa.table({tasks.KEY: keys, "id": keys, "v": [1, 2, 3, 4], "ts": [1] * 4}), tmp_path / "p" / name)
    read = SliceRead("p", FILE_ID, str(tmp_path / "p" / name))
    target = tasks.LogTarget(partition="p", log_instant=INSTANT, base_file="", log_files=(), next_version=1, read=read)
    return tasks.WriteJob(
        location=Location(str(tmp_path)), instant=INSTANT, operation=operation, data_schema=DATA, avro_schema=AVRO,
        key_fields=("id",), complex_key=False, auto_keys=False, partition_fields=("p",), hive_style=False,
        url_encode=False, ordering_field="ts", lookup="SIMPLE",
        base_files={FILE_ID: ("p", name, BASE_INSTANT, (tmp_path / "p" / name).stat().st_size)},
        log_targets={FILE_ID: target}, counting=Counting(frozenset({BASE_INSTANT})),
        merge_rules=MergeRules(EVENT_TIME, "ts", EVENT_TIME), record_positions=True)


@pytest.mark.parametrize("operation", ["upsert", "delete"])
def test_a_blocks_records_are_in_the_order_of_their_rows_in_the_base_file(tmp_path, operation):
    job = _job(tmp_path, operation)
    keys = ["a", "b"]   # rows arrive in key order
    rows = pa.table({"id": keys, "v": [30, 10], "ts": [5, 5], tasks.KEY: keys, tasks.PART: ["p"] * 2,
                     tasks.FG: [FILE_ID] * 2, tasks.SEQ: [0, 1], tasks.INVALID: [False] * 2})
    [stats] = list(tasks.append_file_groups(job, rows.to_batches()))
    [path] = stats.column("path").to_pylist()
    [block] = read_blocks((tmp_path / path).read_bytes())
    if operation == "delete":
        assert [k for k, _ in deleted_keys(block)] == ["b", "a"]
    else:
        assert [(r[tasks.KEY], r["v"]) for r in avro_records(block)] == [("b", 10), ("a", 30)]
    assert decode_positions(block.header[Header.RECORD_POSITIONS]) == [0, 2]   # b's row, then a's
    assert block.header[Header.BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS] == BASE_INSTANT

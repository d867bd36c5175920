"""Insert placement in the tagging task (tasks.tag_partitions), on real Arrow rows: file groups
fill in key order, rows sharing a key share a file group, and the same rows get the same file
ids however they are chunked and however often the task runs (a retried Spark task)."""
from __future__ import annotations

import re

import pyarrow as pa

from tablespec.engine import tasks
from tablespec.hudi.table import Location

ROWS = [  # (partition, key, valid), sorted by partition and key as the writer's sort delivers them
    ("d=1", "a", True), ("d=1", "a", True), ("d=1", "b", True), ("d=1", "c", True), ("d=1", "d", True),
    ("d=1", "d", True), ("d=1", "e", True), ("d=2", None, False), ("d=2", "a", True), ("d=2", "b", True),
]


def job(memory_bytes: int) -> tasks.WriteJob:
    return tasks.WriteJob(
        location=Location("/warehouse/t"), instant="20261123101500000", operation="upsert", data_schema=pa.schema([]),
        avro_schema="", key_fields=("k",), complex_key=False, auto_keys=False, partition_fields=("d",),
        hive_style=True, url_encode=False, ordering_field=None, lookup="SIMPLE",
        target_file_size=3 * tasks.DEFAULT_RECORD_BYTES, memory_bytes=memory_bytes)


def placed(memory_bytes: int, batch_rows: int) -> list[str | None]:
    table = pa.table({tasks.PART: [r[0] for r in ROWS], tasks.KEY: [r[1] for r in ROWS],
                      tasks.FG: pa.nulls(len(ROWS), pa.string()), tasks.SEQ: list(range(len(ROWS))),
                      tasks.INVALID: [not r[2] for r in ROWS]})
    out = pa.Table.from_batches(list(tasks.tag_partitions(job(memory_bytes), table.to_batches(batch_rows))))
    assert out.column(tasks.KEY).to_pylist() == [r[1] for r in ROWS]
    return out.column(tasks.FG).to_pylist()


def test_inserts_fill_new_file_groups_in_key_order_and_keep_a_key_in_one():
    ids = placed(memory_bytes=1 << 30, batch_rows=100)
    g1, g2, h1 = ids[0], ids[4], ids[8]
    assert ids == [g1, g1, g1, g1, g2, g2, g2, None, h1, h1]  # 3 records per file; `a` and `d` counted once
    assert len({g1, g2, h1}) == 3 and all(re.fullmatch(r"[0-9a-f-]{36}-0", i) for i in (g1, g2, h1))


def test_placement_is_the_same_in_chunks_and_on_a_retry():
    whole = placed(memory_bytes=1 << 30, batch_rows=100)
    assert placed(memory_bytes=1, batch_rows=1) == whole  # every row its own chunk: keys carried over
    assert placed(memory_bytes=1 << 30, batch_rows=100) == whole

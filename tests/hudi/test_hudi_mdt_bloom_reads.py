"""How often a BLOOM upsert's tagging task reads the metadata table's stored bloom filters: once per data
partition per task, however many chunks the partition's rows arrive in (each file's filter is kept for
the task once read), on a real table whose `bloom_filters` partition holds its file's filter."""
from __future__ import annotations

import shutil
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq
from _support import RecordingStorage
from test_hudi_mdt_1x import _table
from test_hudi_mdt_secondary_index import FG, _commit

from tablespec.arrow.bloom import build_bloom_filter
from tablespec.engine import tasks
from tablespec.hudi.mdt import column_stats_init
from tablespec.hudi.mdt.bloom_filters import BLOOM_FILTERS, FILTER_TYPE
from tablespec.hudi.mdt.bloom_filters_reader import StoredFilters
from tablespec.hudi.table import HudiTable
from tablespec.hudi.table import Location as TableLocation

KEYS = ["a", "c", "x", "y"]        # a and c stored, x and y new: sorted, as the writer's sort delivers them


def _tagged(base: str, memory_bytes: int, batch_rows: int) -> tuple[list[str | None], list[str]]:
    """The file group each of KEYS is tagged with, and the bloom_filters files read doing it."""
    storage = RecordingStorage()
    table = HudiTable.open(replace(TableLocation.parse(base), storage=storage))
    [current] = table.view.latest_slices()
    job = tasks.WriteJob(
        location=table.location, instant="20991123101500000", operation="upsert", data_schema=pa.schema([]),
        avro_schema="", key_fields=("id",), complex_key=False, auto_keys=False, partition_fields=("part",),
        hive_style=False, url_encode=False, ordering_field=None, lookup="BLOOM",
        base_files={FG: ("p", current.base_file.name, current.base_instant, current.base_file.size)},
        stored_filters=StoredFilters.of(table), memory_bytes=memory_bytes)
    rows = pa.table({tasks.PART: ["p"] * len(KEYS), tasks.KEY: KEYS, tasks.FG: pa.nulls(len(KEYS), pa.string()),
                     tasks.SEQ: list(range(len(KEYS))), tasks.INVALID: [False] * len(KEYS)})
    storage.reads.clear()
    out = pa.Table.from_batches(list(tasks.tag_partitions(job, rows.to_batches(batch_rows))))
    return out.column(tasks.FG).to_pylist(), [p for p in storage.paths() if f"/metadata/{BLOOM_FILTERS}/" in p]


def test_a_partitions_stored_filters_are_read_once_per_task_whatever_its_chunks(tmp_path):
    base = _table(tmp_path)
    _commit(base, {"a": 1, "b": 2, "c": 3})
    table = HudiTable.open(base)
    [current] = table.view.latest_slices()
    keys = pq.read_table(current.base_file.path, columns=[tasks.KEY]).column(0)
    with table.transaction_lock("bloom filters build"):
        column_stats_init.initialize(table, {}, [BLOOM_FILTERS], None,
                                     footers={("p", current.base_file.name): (build_bloom_filter(keys), FILTER_TYPE)})
    copy = str(tmp_path / "copy")                       # a table of its own: no read served from another's cache
    shutil.copytree(base, copy)
    whole, read_once = _tagged(base, 1 << 30, 100)
    assert whole == [FG] * 4 and read_once              # a, c found there; x, y fill the small file group
    chunked, read = _tagged(copy, 1, 1)                 # every row its own chunk of the partition
    assert chunked == whole and [p.replace(copy, base) for p in read] == read_once

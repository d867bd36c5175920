"""A damaged record index through tablespec's writes: a corrupt block (or a flipped header key) in
the log file a completed deltacommit wrote makes lookups and writes refuse in one line naming the
file, the refused write leaves every file byte-equal, and `plan` rebuilds the partition, after
which `apply` gives lookups equal to the data (before, an upsert of a key the corrupt block held
inserted it a second time)."""
from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from _support import schema_key_offset
from helpers import make_table
from test_engine_rebucket import plan_for
from test_engine_record_index import DDL, SPEC, assert_consistent

from tablespec.errors import TablespecError
from tablespec.hudi.formats.logfile import BlockType, read_blocks
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.mdt import layout
from tablespec.hudi.mdt import record_index_reader as rli_reader
from tablespec.hudi.mdt.record_index import RECORD_INDEX
from tablespec.hudi.table import HudiTable, Location

pytestmark = pytest.mark.spark


def _files(root: str) -> dict[str, bytes]:
    """Every file of the table but its lock files, with its bytes."""
    return {str(p): p.read_bytes() for p in Path(root).rglob("*")
            if p.is_file() and "lock" not in p.relative_to(root).parts and not p.name.endswith(".lock")}


class _DriverReads(LocalStorage):
    """Local files, counting the driver's whole-file reads (log files are read whole); pickled as plain
    local storage, so Spark's tasks are not counted."""

    def __init__(self) -> None:
        self.read: Counter[str] = Counter()

    def __reduce__(self):
        return LocalStorage, ()

    def read_bytes(self, path):
        self.read[path] += 1
        return super().read_bytes(path)


def _newest_index_log(base: str, instant: str) -> Path:
    """A record-index log file whose data block `instant` wrote."""
    for current in rli_reader.slices(HudiTable.open(base))[0]:
        for log, _ in current.log_files:
            path = Path(layout.partition_path(base, RECORD_INDEX)) / log.format()
            if any(b.type == BlockType.HFILE_DATA and b.instant == instant for b in read_blocks(path.read_bytes())):
                return path
    raise AssertionError(f"no record-index log block of {instant}")


@pytest.mark.parametrize("damaged", [6 + 7, "schema key"])     # the block's length; its SCHEMA header key
def test_a_damaged_record_index_log_is_refused_then_rebuilt(spark, tmp_path, damaged):
    table = make_table(spark, tmp_path, SPEC)
    table.write(spark.createDataFrame([(f"k{i}", ["ams", "ber"][i % 2], i) for i in range(12)], DDL), "insert")
    base = table.location
    driver = _DriverReads()
    table.table = HudiTable.open(replace(Location.parse(base), storage=driver))
    table.write(spark.createDataFrame([(f"n{i}", "cph", i) for i in range(9)], DDL), "upsert")
    index_logs = {p: n for p, n in driver.read.items() if f"/{RECORD_INDEX}/" in p}
    assert index_logs and set(index_logs.values()) == {1}, index_logs   # checked once a write (before: twice)
    log = _newest_index_log(base, HudiTable.open(base).timeline.head.timestamp)
    data = bytearray(log.read_bytes())
    if damaged == "schema key":
        damaged = schema_key_offset(bytes(data)) + 3
    data[damaged] ^= 0x01
    log.write_bytes(bytes(data))
    rli_reader.clear_cache()

    with pytest.raises(TablespecError, match=log.name) as refused:
        table.lookup([f"n{i}" for i in range(9)])
    assert "\n" not in str(refused.value)
    before = _files(base)
    with pytest.raises(TablespecError, match=log.name):       # before: n0..n8 inserted a second time
        table.write(spark.createDataFrame([(f"n{i}", "cph", 100 + i) for i in range(9)], DDL), "upsert")
    assert _files(base) == before

    plan, _ = plan_for(SPEC, tmp_path)
    kinds = [a.kind for _, a in plan.actions]
    assert kinds == ["drop_metadata_partitions", "record_index_build"], kinds
    drop = plan.actions[0][1]
    assert drop.params.partitions == [RECORD_INDEX] and any(log.name in r for r in drop.reasons)
    from tablespec.apply import Applier
    Applier(spark=spark).apply(plan)
    assert not plan_for(SPEC, tmp_path)[0].has_changes
    assert len(assert_consistent(table)) == 21
    r = table.write(spark.createDataFrame([(f"n{i}", "cph", 100 + i) for i in range(9)], DDL), "upsert")
    assert (r.inserted, r.updated) == (0, 9)
    assert len(assert_consistent(table)) == 21

"""Damage to the metadata table's `column_stats` and `partition_stats` (hudi/mdt/damage.py): a partition
whose bounds leave out a file's values (its log file lost), a truncated HFile. `verify` reports each,
`plan` proposes the rebuild without touching the table, and reads never prune the rows such a partition
misses. A file or partition without statistics is no damage: reads read it."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _support import RecordingStorage, table_files
from test_hudi_mdt_1x import _table
from test_hudi_mdt_secondary_index import _commit

from tablespec.hudi.mdt import column_stats, column_stats_init, column_stats_reader, damage, layout
from tablespec.hudi.mdt.column_stats import COLUMN_STATS, PARTITION_STATS
from tablespec.hudi.table import HudiTable
from tablespec.hudi.table import Location as TableLocation
from tablespec.plan.metadata_table import metadata_table_actions
from tablespec.state import observe
from tablespec.verify import verify_table

KINDS = {"v": "long"}


def _stats_table(tmp_path: Path) -> tuple[str, dict[str, set[str]]]:
    """A version 9 table whose column and partition statistics are built over its first commit (v 1..2),
    then kept through a second (v up to 50); returns it and each statistics partition's files the second
    commit wrote."""
    base = _table(tmp_path)
    _commit(base, {"a": 1, "b": 2})
    table = HudiTable.open(base)
    ranges = {(s.partition, s.base_file.name): column_stats.file_ranges(pq.read_metadata(s.base_file.path), s.base_file.name)
              for s in table.view.latest_slices()}
    with table.transaction_lock("statistics build"):
        column_stats_init.initialize(table, ranges, [COLUMN_STATS, PARTITION_STATS], ["_hoodie_record_key", "v"])
    before = {p: set(Path(layout.partition_path(base, p)).iterdir()) for p in (COLUMN_STATS, PARTITION_STATS)}
    prev = HudiTable.open(base).timeline.head.timestamp
    _commit(base, {"a": 1, "b": 2, "c": 50}, prev)
    written = {p: {f.name for f in Path(layout.partition_path(base, p)).iterdir()} - {f.name for f in before[p]}
               for p in before}
    assert all(written.values()), written
    assert damage.find(HudiTable.open(base), full=True) == []
    return base, written


def _latest_file(base: str) -> str:
    [current] = HudiTable.open(base).view.latest_slices()
    return current.base_file.name


def _lose(base: str, partition: str, names: set[str]) -> None:
    for name in names:
        (Path(layout.partition_path(base, partition)) / name).unlink()


def _planned_rebuild(base: str, partition: str, named: str) -> None:
    """verify reports `partition` naming `named`; plan proposes dropping it (to build it again), leaving
    every table file as it was."""
    report = verify_table(HudiTable.open(base))
    assert any(f.kind == "metadata" and named in f.message and partition in f.message
               for f in report.findings), str(report)
    before = table_files(base)
    [drop] = metadata_table_actions(observe(HudiTable.open(base)))
    assert drop.kind == "drop_metadata_partitions" and drop.params.partitions == [partition]
    assert drop.reasons[0].startswith("rebuild: ") and named in drop.reasons[0], drop.reasons
    assert table_files(base) == before


def test_a_file_missing_from_column_stats_is_no_damage_and_never_skipped(tmp_path):
    """A latest file without statistics (here its commit's statistics lost; Apache Hudi 1.2 leaves files it
    did not write without them): no damage, and a read looking for its values reads it."""
    base, written = _stats_table(tmp_path)
    _lose(base, COLUMN_STATS, written[COLUMN_STATS])          # the second commit's statistics lost
    name = _latest_file(base)
    assert damage.find(HudiTable.open(base), full=True) == []
    stats = column_stats_reader.file_stats(HudiTable.open(base), [("p", name)], [("v", "=", 50)], KINDS)
    assert not column_stats_reader.skipped(stats or {}, "p", name, [("v", "=", 50)], KINDS)


def test_partition_stats_narrower_than_a_file_are_found_and_prune_nothing(tmp_path):
    base, written = _stats_table(tmp_path)
    table = HudiTable.open(base)
    assert column_stats_reader.partitions_ruled_out(table, ["p"], [("v", "=", 99)], KINDS) == {"p"}  # while sound
    _lose(base, PARTITION_STATS, written[PARTITION_STATS])    # p's bounds back to 1..2; its file holds 50
    name = _latest_file(base)
    [found] = damage.find(HudiTable.open(base))
    assert found.partition == PARTITION_STATS and f"1 latest base file(s) with values beyond their partition's " \
        f"bounds (e.g. p/{name})" in found.message, found.message
    _planned_rebuild(base, PARTITION_STATS, name)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(damage, "CONTENT_CHECK_BYTES", 1)      # too large to check in plan: verify's message
        assert damage.find(HudiTable.open(base)) == []
        [found] = damage.find(HudiTable.open(base), full=True)
        assert "leave partitionStats out of the spec's dataSkipping section" in found.message
    # reads: the stale bounds rule p out for v = 50; the file's own statistics keep it
    table = HudiTable.open(base)
    assert column_stats_reader.partitions_ruled_out(table, ["p"], [("v", "=", 50)], KINDS) == {"p"}
    slices = table.view.latest_slices()
    assert column_stats_reader.slices_left(table, slices, [("v", "=", 50)], KINDS) == slices


def test_a_partition_missing_from_partition_stats_is_no_damage_and_never_pruned(tmp_path):
    base, _ = _stats_table(tmp_path)
    table = HudiTable.open(base)
    with table.transaction_lock("statistics build"):          # built again over no file: p has none
        from tablespec.hudi.metadata_table import drop_partitions
        drop_partitions(table, (PARTITION_STATS,))
        column_stats_init.initialize(HudiTable.open(base), {}, [PARTITION_STATS], None)
    assert damage.find(HudiTable.open(base), full=True) == []
    assert not column_stats_reader.partitions_ruled_out(HudiTable.open(base), ["p"], [("v", "=", 99)], KINDS)


@pytest.mark.parametrize("partition", [COLUMN_STATS, PARTITION_STATS])
def test_a_truncated_statistics_hfile_is_found_by_every_plan(tmp_path, monkeypatch, partition):
    base, _ = _stats_table(tmp_path)
    [hfile, *_] = sorted(Path(layout.partition_path(base, partition)).glob("*.hfile"))
    hfile.write_bytes(hfile.read_bytes()[:-100])
    monkeypatch.setattr(damage, "CONTENT_CHECK_BYTES", 1)      # structural: found without the content check
    [found] = damage.find(HudiTable.open(base))
    assert found.partition == partition and hfile.name in found.message
    _planned_rebuild(base, partition, hfile.name)
    table = HudiTable.open(base)                               # reads skip nothing through it
    if partition == COLUMN_STATS:
        assert column_stats_reader.file_stats(table, [("p", _latest_file(base))], [("v", "=", 99)], KINDS) is None
    else:
        assert column_stats_reader.partitions_ruled_out(table, ["p"], [("v", "=", 99)], KINDS) == set()


def test_partition_pruning_looks_the_column_stats_up_once_for_the_latest_files(tmp_path):
    """partition_stats rule p (v 1..50) out for v >= 55, q (60..70) stays: p's slice is confirmed by the
    column_stats of its latest file (not of the older one the table keeps) in the same lookup that skips
    q's files, so the read costs what file skipping alone costs, every block read once."""
    base, _ = _stats_table(tmp_path)
    _commit(base, {"d": 60, "e": 70}, partition="q")
    storage = RecordingStorage()
    table = HudiTable.open(replace(TableLocation.parse(base), storage=storage))
    slices = table.view.latest_slices()

    def stats_reads(read) -> list[tuple[str, int | None, int | None]]:
        storage.reads.clear()
        read()
        return [r for r in storage.reads if f"/metadata/{COLUMN_STATS}/" in r[0]]

    conditions = [("v", ">=", 55)]
    assert column_stats_reader.partitions_ruled_out(table, ["p", "q"], conditions, KINDS) == {"p"}
    left = []
    pruned = stats_reads(lambda: left.extend(column_stats_reader.slices_left(table, slices, conditions, KINDS)))
    assert [s.partition for s in left] == ["q"]
    files = [(s.partition, s.base_file.name) for s in slices]
    assert pruned and len(set(pruned)) == len(pruned)
    assert pruned == stats_reads(lambda: column_stats_reader.file_stats(table, files, conditions, KINDS))


def _bounds(lo: str, hi: str) -> dict:
    return {"ColumnStatsMetadata": {"minValue": {"value": lo}, "maxValue": {"value": hi}}}


def test_string_bounds_compare_in_java_order():
    """Java's String.compareTo (Hudi's) orders UTF-16 code units: a character beyond U+FFFF (a surrogate
    pair) sorts before U+E000..U+FFFF, where Python's code-point order puts it after."""
    assert damage.java_order("\U0001F600") < damage.java_order("\uE000") and "\U0001F600" > "\uE000"
    partition = _bounds("\U0001F600", "\uE000")           # Java's min and max over the partition's files
    assert not damage._outside(partition, _bounds("\uE000", "\uE000"))
    assert damage._outside(partition, _bounds("\uE000", "\uF000")) and damage._outside(partition, _bounds("a", "\uE000"))

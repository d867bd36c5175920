"""Damage to Hudi's metadata table (hudi/mdt/damage.py, mdt/reader.py): a corrupt or altered log
block inside what a completed deltacommit wrote is refused in one line naming the file (a lookup
that silently missed keys made upserts insert them again), while a torn append of a writer that
died is still skipped; a `files` partition whose listing differs from the storage is found;
`verify` reports both and `plan` drops and builds the damaged partitions again."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from _support import RecordingStorage, schema_key_offset
from test_hudi_mdt import ST, _commit, _files, _start
from test_hudi_mdt_record_index import _indexed_table
from test_hudi_mdt_secondary_index import _indexed

from tablespec.errors import MetadataTableDamaged
from tablespec.hudi.formats.logfile import BlockType, read_blocks
from tablespec.hudi.formats.naming import new_file_id
from tablespec.hudi.io import join
from tablespec.hudi.mdt import column_stats_init, damage, layout, reader, writer
from tablespec.hudi.mdt import record_index_reader as rli_reader
from tablespec.hudi.mdt.bloom_filters import BLOOM_FILTERS
from tablespec.hudi.mdt.record_index import RECORD_INDEX, Location, RecordIndexChange
from tablespec.hudi.mdt.records import from_commit
from tablespec.hudi.table import HudiTable
from tablespec.hudi.table import Location as TableLocation
from tablespec.hudi.timeline.active import TimelineWriter
from tablespec.plan.metadata_table import metadata_table_actions
from tablespec.state import observe
from tablespec.verify import verify_table

NEW_KEYS = [f"n{i}" for i in range(12)]


def indexed_with_upserts(tmp_path: Path, complete: bool = True):
    """A table with a record index and one more data instant upserting `NEW_KEYS` (completed or
    not); returns the base path, the index as it should read, and the log file that instant wrote
    in one record-index file group."""
    base, _, expected, _ = _indexed_table(tmp_path)
    ts, inflight = _start(base)
    fc = new_file_id()
    metadata = _files(base, ts, {("c", fc): 10})
    upserts = {k: Location("c", fc, ts) for k in NEW_KEYS}
    writer.record(HudiTable.open(base), ts, from_commit(metadata), record_index=RecordIndexChange(upserts=upserts))
    if complete:
        TimelineWriter(ST, base).complete(inflight, metadata)
        expected = {**expected, **upserts}
    slices, _ = rli_reader.slices(HudiTable.open(base))
    current = max(slices, key=lambda s: len(s.log_files))
    log = Path(layout.partition_path(base, RECORD_INDEX)) / current.log_files[-1][0].format()
    return base, expected, log


def files_log(base: str) -> Path:
    """The `files` partition's newest log file (the last commit's records)."""
    current = layout.latest_slice(ST, base, layout.completions(layout.timeline(ST, base)))
    return Path(layout.partition_path(base)) / current.log_files[-1][0].format()


def flipped(path: Path, at: int, mask: int = 0x01) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= mask
    path.write_bytes(bytes(data))
    rli_reader.clear_cache()


def lookup_all(base: str, keys) -> dict[str, Location]:
    return rli_reader.lookup(HudiTable.open(base), keys)


@pytest.mark.parametrize("damaged", ["block length", "schema header key", "block type", "hfile content"])
def test_damage_in_a_completed_deltacommits_record_index_log_is_refused_naming_the_file(tmp_path, damaged):
    base, expected, log = indexed_with_upserts(tmp_path)
    assert lookup_all(base, list(expected)) == expected
    data = log.read_bytes()
    at = {"block length": 6 + 7, "schema header key": schema_key_offset(data) + 3, "block type": 6 + 8 + 4 + 3,
          "hfile content": len(data) // 2}[damaged]
    flipped(log, at, 0x01 if damaged != "block type" else 0x04)
    with pytest.raises(MetadataTableDamaged, match=log.name) as refused:
        lookup_all(base, NEW_KEYS)                                       # before: the keys silently missing
    assert "\n" not in str(refused.value) and refused.value.partition == RECORD_INDEX
    table = HudiTable.open(base)
    [found] = damage.find(table)
    assert found.partition == RECORD_INDEX and log.name in found.message
    [finding] = [f for f in verify_table(table).findings if f.kind == "metadata"]   # (its data files are stubs)
    assert log.name in finding.message
    with pytest.raises(MetadataTableDamaged, match=log.name):
        damage.RecordIndexCheck(table).require()                        # what a write checks first

    [drop, *_] = metadata_table_actions(observe(HudiTable.open(base)))
    assert drop.kind == "drop_metadata_partitions" and drop.params.partitions == [RECORD_INDEX]
    assert any(r.startswith("rebuild: ") and log.name in r for r in drop.reasons), drop.reasons


def test_a_torn_append_of_a_writer_that_died_is_still_skipped(tmp_path):
    base, expected, log = indexed_with_upserts(tmp_path, complete=False)   # the data instant never completed
    log.write_bytes(log.read_bytes()[:-40])
    assert lookup_all(base, list(expected) + NEW_KEYS) == expected
    assert damage.find(HudiTable.open(base)) == []

    base, expected, log = indexed_with_upserts(tmp_path / "2")
    torn = next(read_blocks(log.read_bytes()))
    with log.open("ab") as out:                  # a later writer's append cut short, past what was committed
        out.write(log.read_bytes()[torn.offset:torn.offset + 100])
    rli_reader.clear_cache()
    assert lookup_all(base, list(expected)) == expected
    assert damage.find(HudiTable.open(base)) == []


def test_a_truncated_log_file_of_a_completed_deltacommit_is_found(tmp_path):
    base, expected, log = indexed_with_upserts(tmp_path)
    data = log.read_bytes()
    log.write_bytes(data[:-len(data) // 3])
    with pytest.raises(MetadataTableDamaged, match=log.name):
        lookup_all(base, NEW_KEYS)
    [found] = damage.find(HudiTable.open(base))
    assert found.partition == RECORD_INDEX and log.name in found.message


def _files_table(tmp_path: Path) -> str:
    base, _, _ = indexed_with_upserts(tmp_path)
    _commit(base, {("d", new_file_id()): 20})
    assert damage.find(HudiTable.open(base)) == []
    assert "metadata table: files, record_index decode, listing matches the storage" in verify_table(
        HudiTable.open(base)).summary()
    return base


@pytest.mark.parametrize("damaged", ["flipped log block", "lost log file", "truncated hfile"])
def test_a_damaged_files_partition_is_found_and_the_metadata_table_rebuilt(tmp_path, damaged):
    base = _files_table(tmp_path)
    log = files_log(base)
    if damaged == "flipped log block":
        flipped(log, 6 + 7)
        named = log.name
    elif damaged == "lost log file":       # what readers then list lacks the last commit's file
        log.unlink()
        named = "d/"
    else:
        current = layout.latest_slice(ST, base, layout.completions(layout.timeline(ST, base)))
        hfile = Path(layout.partition_path(base)) / current.base_file
        hfile.write_bytes(hfile.read_bytes()[:-100])
        named = hfile.name
    table = HudiTable.open(base)
    found = damage.find(table)
    assert [d.partition for d in found] == [layout.FILES] and named in found[0].message, found
    report = verify_table(table)
    assert any(f.kind == "metadata" and named in f.message for f in report.findings), str(report)

    drop, build = metadata_table_actions(observe(HudiTable.open(base)))
    assert drop.kind == "drop_metadata_partitions" and drop.params.partitions == [layout.FILES, RECORD_INDEX]
    assert build.kind == "build_metadata_table"
    # what apply's two actions do: drop, then build from the storage (tests/engine runs them through apply)
    from tablespec.hudi.metadata_table import drop_partitions
    drop_partitions(HudiTable.open(base), tuple(drop.params.partitions))
    writer.initialize(HudiTable.open(base))
    assert damage.find(HudiTable.open(base)) == []
    assert reader.listing(HudiTable.open(base)).files == writer.list_data_files(ST, base)


def test_a_log_block_of_another_type_inside_committed_bytes_is_refused(tmp_path):
    base, _, log = indexed_with_upserts(tmp_path)
    blocks = list(read_blocks(log.read_bytes()))
    assert [b.type for b in blocks] == [BlockType.HFILE_DATA]
    flipped(log, 6 + 8 + 4 + 3, 0x02)          # HFILE_DATA (4) -> CDC_DATA (6): readers would skip it
    with pytest.raises(MetadataTableDamaged, match="CDC_DATA block at byte 0"):
        lookup_all(base, NEW_KEYS)
    assert join(layout.partition_path(base, RECORD_INDEX), log.name) in str(damage.find(HudiTable.open(base))[0].message)


def _data_blocks(storage: RecordingStorage) -> list[str]:
    """The index partitions' base HFiles whose data blocks were read (an HFile's start, or all of it:
    opening one reads its trailer and block index at its end only)."""
    return [p for p, offset, _ in storage.reads if p.endswith(".hfile") and offset == 0
            and any(f"/metadata/{x}" in p for x in (BLOOM_FILTERS, RECORD_INDEX, "secondary_index_"))]


def test_plan_opens_a_large_indexs_files_while_verify_reads_its_content(tmp_path, monkeypatch):
    """issue 36: `plan` (each table's observation) reads metadata cheaply. A bloom-filter or secondary-index
    partition beyond CONTENT_CHECK_BYTES (lowered here) has its base files opened (trailer, block index), no
    data block read, the record index not scanned; verify reads it all and finds the missing filter, saying
    how to rebuild it, as plan does not. Within the budget plan finds it (and proposes the rebuild)."""
    base, _ = _indexed(tmp_path, {"a": 1, "b": 2})               # record index and secondary index idx_v
    table = HudiTable.open(base)
    with table.transaction_lock("bloom filters build"):
        column_stats_init.initialize(table, {}, [BLOOM_FILTERS], None, footers={})   # no filter of the file
    monkeypatch.setattr(damage, "CONTENT_CHECK_BYTES", 1)
    storage = RecordingStorage()
    opened = HudiTable.open(replace(TableLocation.parse(base), storage=storage))
    assert damage.checked(opened) == [layout.FILES, RECORD_INDEX, BLOOM_FILTERS, "secondary_index_idx_v"]
    assert observe(opened).metadata_damage == ()
    assert storage.reads and _data_blocks(storage) == []
    # of the secondary index, plan read its base files' ends (trailer, block index) only: no log file, no block
    indexed = [(p, offset) for p, offset, _ in storage.reads if "/secondary_index_" in p]
    assert indexed and all(p.endswith(".hfile") and offset for p, offset in indexed), indexed

    storage.reads.clear()
    [found] = damage.find(HudiTable.open(replace(TableLocation.parse(base), storage=storage)), full=True)
    assert found.partition == BLOOM_FILTERS and "no bloom filter of 1 latest base file(s)" in found.message
    assert "leave bloomFilters out of the spec's dataSkipping section" in found.message, found.message
    assert "tablespec plan" not in found.message
    assert _data_blocks(storage)                                 # what the plan above did not read

    monkeypatch.undo()                                           # a small index: plan reads its content
    [found] = observe(HudiTable.open(base)).metadata_damage
    assert found.partition == BLOOM_FILTERS and "dataSkipping" not in found.message


def test_a_writes_record_index_check_reads_the_index_again_only_where_its_files_changed(tmp_path):
    base, expected, log = indexed_with_upserts(tmp_path)
    storage = RecordingStorage()
    table = HudiTable.open(replace(TableLocation.parse(base), storage=storage))
    check = damage.RecordIndexCheck(table)
    check.require()                                                     # the write's, before anything changes
    assert str(log) in storage.paths()
    storage.reads.clear()
    check.require(rli_reader.slices(table))                             # its index job's: the same files
    assert not [p for p in storage.paths() if f"/{RECORD_INDEX}/" in p]  # before: every log block decoded again

    data = log.read_bytes()
    log.write_bytes(data[:-len(data) // 3])                              # damaged between the two
    with pytest.raises(MetadataTableDamaged, match=log.name):
        check.require(rli_reader.slices(table))

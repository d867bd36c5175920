"""The metadata-table HFiles Apache Hudi 1.2.0 writes (its native hudi-io writer, in its own
process): checksum type NULL and a zeroed checksum slot per block, which tablespec's reader took
for a checksum mismatch. tablespec lists a version-6 table through the metadata table Hudi 1.2.0
wrote, compacts that metadata table (reading Hudi 1.2.0's base file) after its own commits, and
Apache Hudi 0.15 and 1.2.0 read the table through the result."""
from __future__ import annotations

from hudi_process import read_step
from interop_support import assert_readers_agree, hudi_rows
from test_hudi_1x_tables import SIMPLE_V6, TWO_ORDERING_FIELDS, _as_read
from test_hudi_1x_versions import V9
from test_hudi_metadata_table import METADATA_ON, assert_listing_is_storage, hudi_validates
from test_hudi_tables import _df, _import, _table

from tablespec.hudi.formats.hfile import CHECKSUM_NULL, HFileReader, metadata_records
from tablespec.hudi.mdt import layout
from tablespec.hudi.mdt.compaction import MAX_DELTA_COMMITS
from tablespec.hudi.table import HudiTable

CHECKSUM_TYPE_AT = 24          # in a block's header: magic, two sizes, previous block offset


def _prepare(hudi1) -> None:
    """Every table of Hudi 1.2.0 the interop tier uses, written in one process."""
    hudi1.prepare(SIMPLE_V6, TWO_ORDERING_FIELDS, V9)


def _files_slice(location) -> layout.Slice:
    table = HudiTable.open(str(location))
    completed = {i.timestamp for i in layout.timeline(table.storage, table.base) if i.completed}
    current = layout.latest_slice(table.storage, table.base, completed)
    assert current is not None
    return current


def _written_by_hudi_1x(path) -> bool:
    """Whether the HFile's first block has Hudi 1.x's checksum type (NULL); Hudi 0.15 and tablespec write CRC32C."""
    return path.read_bytes()[CHECKSUM_TYPE_AT] == CHECKSUM_NULL


def test_metadata_table_hudi_1x_wrote_lists_the_storage(hudi1, tmp_path):
    _prepare(hudi1)
    location, _ = hudi1.copy(SIMPLE_V6, tmp_path / "simple_v6")
    base_file = location / ".hoodie" / "metadata" / "files" / _files_slice(location).base_file
    assert _written_by_hudi_1x(base_file)
    assert_listing_is_storage(str(location))    # its base file and the HFile blocks of its log files

    # every HFile of a version-9 table's metadata table (files, column_stats, partition_stats,
    # compacted by Hudi 1.2.0 several times) reads, each cell a HoodieMetadataRecord
    v9, _ = hudi1.copy(V9, tmp_path / "orders_v9")
    hfiles = sorted((v9 / ".hoodie" / "metadata").glob("*/*.hfile"))
    assert len(hfiles) > 10 and {p.parent.name for p in hfiles} == {"files", "column_stats", "partition_stats"}
    for path in hfiles:
        assert _written_by_hudi_1x(path)
        reader = HFileReader(path.read_bytes(), str(path))
        records = list(metadata_records(reader))
        assert len(records) == reader.entry_count > 0
        assert [k for k, _ in records] == sorted(k for k, _ in records)
        assert all(reader.get(k) is not None for k, _ in records)


def test_tablespec_compacts_the_metadata_table_hudi_1x_wrote(hudi, hudi1, tmp_path, capsys):
    """Hudi 1.2.0 wrote the metadata table (its base file, three deltacommits); tablespec's commits
    bring it to 10 deltacommits, and its compaction merges Hudi 1.2.0's base file with the logs."""
    _prepare(hudi1)
    location, _ = hudi1.copy(SIMPLE_V6, tmp_path / "simple_v6")
    started = _files_slice(location)
    doc, _ = _import(tmp_path, location, capsys, ("drop_metadata_partitions",))
    table = _table(hudi, doc, location)
    handle = HudiTable.open(str(location))
    deltas = [i for i in layout.timeline(handle.storage, handle.base) if i.action == layout.DELTA_COMMIT]
    for n in range(MAX_DELTA_COMMITS - len(deltas)):
        assert _files_slice(location).base_instant == started.base_instant, "compacted too early"
        table.write(_df(hudi, [(f"k{n}", n, "2024-01-0" + str(n % 2 + 1), 2)]))
    compacted = _files_slice(location)
    assert compacted.base_instant != started.base_instant and compacted.base_instant.endswith("001")
    assert compacted.log_files == ()
    assert not _written_by_hudi_1x(location / ".hoodie" / "metadata" / "files" / compacted.base_file)
    assert_listing_is_storage(str(location))

    ours = assert_readers_agree(hudi, table)          # tablespec, hudi-rs, Hudi 0.15
    assert hudi_rows(hudi, str(location), **METADATA_ON) == ours
    hudi_validates(hudi, str(location))
    (after,) = hudi1.process.run([read_step(location, **METADATA_ON)])
    assert _as_read(after) == ours

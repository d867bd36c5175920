"""The metadata table of a version 9 table, built and kept bounded as Apache Hudi 1.2 does it:
`initialize` in 1.x's layout (its hoodie.properties, the `files` partition at `00000000000000000`
with a completion time, as Hudi 1.2.0 initializes a table's metadata table: measured), its own
clean at a new instant time once three instants follow its latest compaction, and its archiving
into its own LSM history (`.hoodie/metadata/.hoodie/timeline/history/`) with Hudi 1.2's rules.
tests/interop/test_hudi_1x_metadata_table_housekeeping.py has Hudi 1.2.0 validate and read the result."""
from __future__ import annotations

from test_hudi_mdt_1x import INIT, ST, TIMELINE, _assert_listing_is_storage, _files, _start

from tablespec.hudi.config import timeline_layout
from tablespec.hudi.io import join
from tablespec.hudi.mdt import layout, sync, writer
from tablespec.hudi.mdt.records import from_commit
from tablespec.hudi.naming import new_file_id
from tablespec.hudi.properties import format_properties, parse_properties
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline import TimelineWriter, avro_content

V9 = {"hoodie.table.name": "t", "hoodie.table.type": "COPY_ON_WRITE", "hoodie.table.version": "9",
      "hoodie.timeline.layout.version": "2", "hoodie.timeline.path": "timeline",
      "hoodie.timeline.history.path": "history", "hoodie.table.recordkey.fields": "id",
      "hoodie.table.partition.fields": "part", "hoodie.table.keygenerator.type": "SIMPLE",
      "hoodie.table.base.file.format": "PARQUET"}


def _bare(tmp_path) -> str:
    """A version 9 table without a metadata table (Hudi 1.2 with hoodie.metadata.enable=false)."""
    base = str(tmp_path / "t")
    ST.write_bytes(join(base, ".hoodie", "hoodie.properties"), format_properties(V9).encode())
    ST.mkdirs(join(base, TIMELINE, "history"))
    return base


def _write(base: str, groups) -> None:
    """A data commit as tablespec's writers make it: the metadata table recorded (when the table
    has one) before the data instant completes, then compacted and cleaned when due."""
    ts, inflight = _start(base)
    metadata = _files(base, ts, groups)
    table = HudiTable.open(base)
    with sync.completing(table, "commit") as locked:
        recorded = sync.record_commit(table, ts, metadata)
        TimelineWriter(ST, base, TIMELINE).complete(inflight, metadata, locked=locked)
    sync.compact_if_due(HudiTable.open(base), recorded)


def test_initialize_lays_out_the_metadata_table_as_hudi_1_2_does(tmp_path):
    base = _bare(tmp_path)
    _write(base, {("a", new_file_id()): 10, ("b", new_file_id()): 5})      # no metadata table: nothing recorded
    assert not ST.exists(layout.table_path(base))
    table = HudiTable.open(base)
    with table.transaction_lock("metadata table"):
        assert writer.initialize(table) == INIT
    props = parse_properties(ST.read_bytes(join(layout.meta_path(base), "hoodie.properties")).decode())
    assert props["hoodie.table.version"] == "9" and props["hoodie.timeline.layout.version"] == "2"
    assert props["hoodie.table.name"] == "t_metadata" and props["hoodie.table.type"] == "MERGE_ON_READ"
    assert props["hoodie.table.keygenerator.type"] == "HOODIE_TABLE_METADATA"
    assert props["hoodie.record.merge.mode"] == "CUSTOM" and props["hoodie.table.base.file.format"] == "HFILE"
    assert HudiTable.open(base).config.extra["hoodie.table.metadata.partitions"] == "files"

    [init] = layout.timeline(ST, base, layout.V2)
    assert (init.timestamp, init.action, init.completed) == (INIT, layout.DELTA_COMMIT, True)
    assert init.completion > HudiTable.open(base).timeline.latest_time
    content = avro_content(ST.read_bytes(join(layout.timeline_path(base, layout.V2), init.file_name)), "init")
    [stat] = content["partitionToWriteStats"]["files"]
    assert stat["path"] == f"files/{layout.base_file_name(INIT)}" and content["operationType"] == "BULK_INSERT_PREPPED"
    assert timeline_layout(HudiTable.open(base).config) == 2
    _assert_listing_is_storage(base)
    _write(base, {("a", new_file_id()): 7})          # kept from here on
    _assert_listing_is_storage(base)

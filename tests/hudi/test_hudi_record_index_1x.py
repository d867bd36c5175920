"""Hudi's record index on a version 9 table, in Hudi 1.x's metadata-table layout (`layout.Format`):
built at Hudi 1.2's initializing instant (`00000000000000001` after the files partition's `...000`,
measured on a table Hudi 1.2.0 created), completed with a completion time and Avro metadata, kept by
each deltacommit in a log file named by it, and read with 1.x's slicing (a file group without keys
has no base file, only its first log file). tests/interop/test_hudi_1x_record_index.py has Hudi 1.2.0
read, validate and write through what tablespec builds."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_hudi_mdt_1x import ST, TIMELINE, _metadata_timeline, _start, _table

from tablespec.errors import HudiFormatError
from tablespec.hudi.config import write_table_config
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.formats.index_defs import RECORD_INDEX_DEFINITION
from tablespec.hudi.formats.logfile import delete_block, encode_block
from tablespec.hudi.formats.naming import BaseFileName, LogFileName, new_file_id
from tablespec.hudi.formats.partition import write_partition_metadata
from tablespec.hudi.io import join
from tablespec.hudi.mdt import instants, layout, record_index_reader, record_index_writer, sync, writer
from tablespec.hudi.mdt.record_index import RECORD_INDEX, Location, file_group_id
from tablespec.hudi.mdt.records import SCHEMA_JSON
from tablespec.hudi.metadata_table import drop_partitions
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import TimelineWriter, avro_content

FG = new_file_id()


def _built(tmp_path, entries=(("a", "p1", FG, "20240101000000000"), ("b", "p1", FG, "20240101000000000"))) -> str:
    base = _table(tmp_path)
    record_index_writer.initialize(HudiTable.open(base), entries, 3)
    return base


def test_the_index_is_built_at_hudi_1_2s_instant_in_1x_layout(tmp_path):
    base = _built(tmp_path)
    table = HudiTable.open(base)
    assert record_index_writer.is_enabled(table)
    built = _metadata_timeline(base)["00000000000000001"]
    assert built.completed and built.completion and built.completion > "00000000000000001"
    raw = ST.read_bytes(join(layout.timeline_path(base, layout.V2), built.file_name))
    assert avro_content(raw, built.file_name)["operationType"] == "BULK_INSERT_PREPPED"   # as Hudi 1.2's
    written = avro_content(raw, built.file_name)["partitionToWriteStats"]
    assert set(written) == {RECORD_INDEX} and sum(s["numWrites"] for s in written[RECORD_INDEX]) == 2
    found, valid = record_index_reader.slices(table)
    # every file group is a slice, those without keys too (no base file: their first log file starts them)
    assert [s.file_id for s in found] == [file_group_id(i) for i in range(3)]
    assert all(s.log_files[0][0].base_instant == built.timestamp for s in found)
    assert built.timestamp in valid
    expected = {k: Location("p1", FG, "20240101000000000") for k in "ab"}
    assert record_index_reader.lookup(table, ["a", "b", "zz"]) == expected == record_index_reader.scan(table)
    # defined as Hudi 1.2 defines the index it initializes; dropping the partition drops the definition
    assert table.config.extra["hoodie.table.index.defs.path"] == ".hoodie/.index_defs/index.json"
    defs = join(base, ".hoodie", ".index_defs", "index.json")
    assert json.loads(ST.read_bytes(defs))["indexDefinitions"] == {"record_index": RECORD_INDEX_DEFINITION}
    assert drop_partitions(table, (RECORD_INDEX,)) == (RECORD_INDEX,)
    assert json.loads(ST.read_bytes(defs))["indexDefinitions"] == {}
    assert not record_index_writer.is_enabled(HudiTable.open(base))


def test_an_empty_index_has_every_file_group(tmp_path):
    base = _built(tmp_path, ())
    found, _ = record_index_reader.slices(HudiTable.open(base))
    assert [s.file_id for s in found] == [file_group_id(i) for i in range(3)]
    assert all(s.base_file is None and len(s.log_files) == 1 for s in found)


def _keyed_commit(base: str, files: dict[tuple[str, str], list[str]], replaced=None):
    """A data commit writing Parquet base files holding `files`' record keys, kept in the metadata
    table (files and record index) by `sync.record_commit` before it completes."""
    ts, inflight = _start(base)
    stats: dict[str, list[WriteStat]] = {}
    for (partition, file_id), keys in files.items():
        write_partition_metadata(ST, base, partition, ts)
        rel = f"{partition}/{BaseFileName(file_id, '0-1-0', ts).format()}"
        pq.write_table(pa.table({"_hoodie_record_key": keys}), join(base, rel))
        stats.setdefault(partition, []).append(WriteStat(file_id=file_id, path=rel, prev_commit="null",
                                                         partition_path=partition,
                                                         file_size_in_bytes=ST.info(join(base, rel)).size))
    metadata = CommitMetadata(stats, operation_type="UPSERT", extra_metadata={"schema": SCHEMA_JSON})
    sync.record_commit(HudiTable.open(base), ts, metadata)
    return TimelineWriter(ST, base, TIMELINE).complete(inflight, metadata)


def test_each_write_keeps_the_index_in_a_log_file_named_by_its_deltacommit(tmp_path):
    base = _built(tmp_path, ())
    fg1, fg2 = new_file_id(), new_file_id()
    first = _keyed_commit(base, {("p1", fg1): ["a", "b"]})
    names = {i.name for i in ST.list_dir(layout.partition_path(base, RECORD_INDEX))}
    assert {f".{file_group_id(i)}_{first.timestamp}.log.1_0-0-0" for i in (1, 2)} <= names   # a -> 1, b -> 2 of 3
    assert record_index_reader.scan(HudiTable.open(base)) == {k: Location("p1", fg1, first.timestamp) for k in "ab"}
    # a moves to p2: a new file group there, p1's rewritten without it
    second = _keyed_commit(base, {("p1", fg1): ["b"], ("p2", fg2): ["a"]})
    table = HudiTable.open(base)
    assert record_index_reader.lookup(table, ["a", "b"]) == {"a": Location("p2", fg2, second.timestamp),
                                                             "b": Location("p1", fg1, first.timestamp)}
    assert _metadata_timeline(base)[second.timestamp].completion < second.completion


def test_a_build_that_died_is_redone_at_the_same_instant(tmp_path):
    base = _table(tmp_path)
    folder = layout.timeline_path(base, layout.V2)
    ST.write_bytes(join(folder, "00000000000000001.deltacommit.requested"), b"")
    ST.write_bytes(join(folder, "00000000000000001.deltacommit.inflight"), b"")
    ST.write_bytes(join(layout.partition_path(base, RECORD_INDEX), "junk"), b"x")
    instant = record_index_writer.initialize(HudiTable.open(base), [("a", "p1", FG, "20240101000000000")], 2)
    assert instant == "00000000000000001"
    assert not ST.exists(join(layout.partition_path(base, RECORD_INDEX), "junk"))
    assert record_index_reader.scan(HudiTable.open(base)) == {"a": Location("p1", FG, "20240101000000000")}


def test_the_build_keeps_the_initializations_of_the_other_index_partitions(tmp_path):
    """Hudi 1.2 initializes column_stats and partition_stats of a table with no files yet at
    `...001` and `...002`, deltacommits writing nothing (measured): the build is not theirs to
    delete as a build that died (their file groups lost their committed slices, and Hudi 1.2's next
    upsert failed: "Partition partition_stats should be part of inflight metadata partitions")."""
    base = _table(tmp_path)
    fmt = layout.V2
    for offset, (partition, prefix) in enumerate((("column_stats", "col-stats"), ("partition_stats", "partition-stats")), 1):
        instant = f"0000000000000000{offset}"
        for state in ("requested", "inflight"):
            instants.write_instant_file(ST, base, layout.instant_file(instant, layout.DELTA_COMMIT, state), fmt=fmt)
        write_partition_metadata(ST, layout.table_path(base), partition, instant)
        log = LogFileName(f"{prefix}-0000-0", instant, 1, layout.WRITE_TOKEN).format()
        ST.write_bytes(join(layout.partition_path(base, partition), log), encode_block(delete_block(instant, ())))
        instants.complete_instant(ST, base, instant, layout.DELTA_COMMIT,
                                  writer.completed_metadata([], "BULK_INSERT_PREPPED", fmt), fmt)
    table = HudiTable.open(base)
    write_table_config(ST, base, table.config.with_updates(extra={
        **table.config.extra, "hoodie.table.metadata.partitions": "column_stats,files,partition_stats"}))
    before = _metadata_timeline(base)
    instant = record_index_writer.initialize(HudiTable.open(base), [("a", "p1", FG, "20240101000000000")], 2)
    assert instant == "00000000000000003"
    after = _metadata_timeline(base)
    assert all(after[t] == i for t, i in before.items())
    completed = layout.completions(list(after.values()))
    for partition in ("column_stats", "partition_stats"):
        assert layout.latest_slices(ST, base, completed, partition, fmt)


def _files(base) -> dict[str, bytes]:
    return {f.path: ST.read_bytes(f.path) for f in ST.walk_files(base) if "lock" not in f.path}


def test_index_definitions_that_are_none_refuse_the_build_and_the_drop_before_any_change(tmp_path):
    """A crafted index.json fails before hoodie.properties or the metadata table change (it was a
    traceback after hoodie.properties had been rewritten); non-finite numbers are no strict JSON."""
    base = _table(tmp_path)
    defs = join(base, ".hoodie", ".index_defs", "index.json")
    for content in (b'{"indexDefinitions": 5}', b'{"indexDefinitions": {"x": 1}}', b'{"n": 1e999}', b'{"n": NaN}'):
        ST.write_bytes(defs, content)
        before = _files(base)
        with pytest.raises(HudiFormatError, match=rf"^{defs}: "):
            record_index_writer.initialize(HudiTable.open(base), [("a", "p1", FG, "20240101000000000")])
        assert _files(base) == before
    ST.write_bytes(defs, b'{"indexDefinitions": {}, "since": 1.5e3}')
    record_index_writer.initialize(HudiTable.open(base), [])
    table = HudiTable.open(base)
    assert json.loads(ST.read_bytes(defs)) == {"indexDefinitions": {"record_index": RECORD_INDEX_DEFINITION},
                                               "since": 1500.0}
    ST.write_bytes(defs, b'{"indexDefinitions": [1]}')
    before = _files(base)
    with pytest.raises(HudiFormatError, match=rf"^{defs}: "):
        drop_partitions(table, (RECORD_INDEX,))
    assert _files(base) == before

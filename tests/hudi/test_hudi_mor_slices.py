"""Merge-on-read file slices read without Spark: Hudi-written log files (Parquet data blocks, Hudi
0.15's fixtures) merged as hudi-rs reads them, a torn append skipped, a corrupt block inside
committed bytes refused naming the file, rollback command blocks honoured, and the merge rules
(commit time, event time, deletes, `_hoodie_is_deleted`) on blocks in the format Hudi writes them.
Apache Hudi's own reads are the judge in tests/interop/test_hudi_merge_on_read.py."""
from __future__ import annotations

import datetime
import json
from decimal import Decimal

import hudi
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _support import MOR_FIXTURES

from tablespec.arrow.merge import merge_slice, read_slice
from tablespec.errors import HudiFormatError, UnsupportedTableError
from tablespec.hudi.config import TableConfig, init_table
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.formats.logfile import BlockType, Header, LogBlock, avro_block, delete_block, encode_block
from tablespec.hudi.formats.naming import LogFileName
from tablespec.hudi.formats.partition import write_partition_metadata
from tablespec.hudi.io import LocalStorage, join
from tablespec.hudi.keys import COMPACTION_PAYLOAD_CLASS
from tablespec.hudi.merge_on_read import COMMIT_TIME, EVENT_TIME, MergeRules, counting, slice_reads
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import TimelineWriter
from tablespec.hudi.timeline.instant import DELTA_COMMIT, new_instant_time
from tablespec.index import data_locations

ST = LocalStorage()


def _read(location) -> pa.Table:
    """Every latest slice of the table merged (the schema: a base file's)."""
    table = HudiTable.open(str(location))
    slices = table.view.latest_slices()
    schema = pq.read_schema(next(s.base_file.path for s in slices if s.base_file))
    wanted = counting(table.timeline)
    return pa.concat_tables([read_slice(table.storage, r, wanted, MergeRules.of(table.config), schema)
                             for r in slice_reads(table.timeline, slices, wanted)])


def rows(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: r["_hoodie_record_key"])


def _hudi_rs(location, schema: pa.Schema) -> list[dict]:
    read = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(location)).build().read())
    return rows(read.select(schema.names).cast(schema))


def _log(location):
    return next(p for p in location.rglob(".*.log.*") if not p.name.endswith(".crc"))


@pytest.mark.parametrize("name", MOR_FIXTURES)
def test_hudi_written_slices_read_as_hudi_rs_reads_them(fixture_table, name):
    location = fixture_table(name)
    ours = _read(location)
    assert rows(ours) == _hudi_rs(location, ours.schema)


def test_a_torn_append_at_the_end_of_a_log_is_skipped(fixture_table):
    location = fixture_table(MOR_FIXTURES[1])
    before = rows(_read(location))
    log = _log(location)
    data = log.read_bytes()
    log.write_bytes(data + data[: len(data) // 2])    # a writer died half-way through its next block
    assert rows(_read(location)) == before


def test_a_corrupt_block_inside_committed_bytes_is_refused_naming_the_file(fixture_table):
    location = fixture_table(MOR_FIXTURES[1])
    log = _log(location)
    data = bytearray(log.read_bytes())
    data[6:14] = (2 ** 40).to_bytes(8, "big")          # the block's length now runs past the file
    log.write_bytes(bytes(data))
    with pytest.raises(HudiFormatError) as e:
        _read(location)
    message = str(e.value)
    assert "\n" not in message and str(log) in message
    assert "a corrupt log block at byte 0, in the bytes completed deltacommit 20250121000557095 wrote" in message


def test_a_rollback_command_block_drops_the_blocks_of_its_instant(fixture_table):
    location = fixture_table(MOR_FIXTURES[1])
    log = _log(location)
    table = HudiTable.open(str(location))
    deltacommit = table.timeline.commits()[-1].timestamp
    rollback = LogBlock(BlockType.COMMAND, {Header.INSTANT_TIME: "20250121000600000",
                                            Header.TARGET_INSTANT_TIME: deltacommit, Header.COMMAND_BLOCK_TYPE: "0"})
    bases = rows(pa.concat_tables([pq.read_table(s.base_file.path) for s in table.view.latest_slices() if s.base_file]))
    assert rows(_read(location)) != bases           # the log's update of the deltacommit is read ...
    log.write_bytes(log.read_bytes() + encode_block(rollback))
    assert rows(_read(location)) == bases           # ... until a rollback's command block targets it


# --- the merge rules, on blocks as Hudi writes them --------------------------------------------

AVRO = {"type": "record", "name": "t_record", "namespace": "hoodie.t", "fields": [
    {"name": "_hoodie_commit_time", "type": ["null", "string"]},
    {"name": "_hoodie_record_key", "type": ["null", "string"]},
    {"name": "v", "type": ["null", "long"]}, {"name": "ts", "type": ["null", "long"]},
    {"name": "_hoodie_is_deleted", "type": ["null", "boolean"], "default": None}]}
SCHEMA = pa.schema([("_hoodie_commit_time", pa.string()), ("_hoodie_record_key", pa.string()),
                    ("v", pa.int64()), ("ts", pa.int64())])


def _records(instant: str, *values: tuple) -> list[tuple[str, LogBlock]]:
    records = [{"_hoodie_commit_time": instant, "_hoodie_record_key": k, "v": v, "ts": ts,
                "_hoodie_is_deleted": deleted} for k, v, ts, deleted in values]
    return [("x.log.1", avro_block(records, AVRO, instant))]


def _merged(rules: MergeRules, base: list[tuple] | None, *blocks) -> dict[str, int]:
    table = None if base is None else pa.Table.from_pylist(
        [{"_hoodie_commit_time": "1", "_hoodie_record_key": k, "v": v, "ts": ts} for k, v, ts in base], SCHEMA)
    merged = merge_slice(table, [b for group in blocks for b in group], rules, SCHEMA)
    return dict(zip(merged.column("_hoodie_record_key").to_pylist(), merged.column("v").to_pylist()))


EVENT = MergeRules(EVENT_TIME, "ts", EVENT_TIME)
PAYLOAD_V6 = MergeRules(EVENT_TIME, "ts", COMMIT_TIME)   # OverwriteWithLatestAvroPayload
COMMIT = MergeRules(COMMIT_TIME, None, COMMIT_TIME)
BASE = [("a", 1, 5), ("b", 2, 5), ("c", 3, 5)]


def test_event_time_keeps_the_greater_ordering_value_and_commit_time_the_later_write():
    older = _records("2", ("a", 10, 4, None), ("d", 40, 1, None))
    newer = _records("3", ("d", 41, 0, None))
    assert _merged(EVENT, BASE, older, newer) == {"a": 1, "b": 2, "c": 3, "d": 40}
    assert _merged(PAYLOAD_V6, BASE, older, newer) == {"a": 10, "b": 2, "c": 3, "d": 40}
    assert _merged(COMMIT, BASE, older, newer) == {"a": 10, "b": 2, "c": 3, "d": 41}
    assert _merged(EVENT, None, older, newer) == {"a": 10, "d": 40}


def test_deletes_and_is_deleted_records():
    flagged = _records("2", ("a", 10, 9, True))
    deletes = [("x.log.2", delete_block("3", [("b", "")]))]     # no ordering value: it always wins
    again = _records("4", ("b", 20, 6, None))
    assert _merged(EVENT, BASE, flagged, deletes) == {"c": 3}
    assert _merged(EVENT, BASE, flagged, deletes, again) == {"b": 20, "c": 3}
    stale = _records("2", ("c", 30, 1, True))                    # a delete older than the stored row
    assert _merged(EVENT, BASE, stale) == {"a": 1, "b": 2, "c": 3}
    assert _merged(COMMIT, BASE, stale) == {"a": 1, "b": 2}


def test_an_undecodable_block_of_a_committed_instant_is_refused_naming_the_file():
    path, block = _records("2", ("a", 10, 9, None))[0]
    broken = LogBlock(block.type, block.header, block.content[:-3], offset=0)
    with pytest.raises(HudiFormatError, match=r"^x\.log\.1: the AVRO_DATA block at byte 0 \(instant 2\) does not "
                                              "decode: .*the log file is damaged"):
        merge_slice(None, [(path, broken)], EVENT, SCHEMA)


def test_an_hfile_data_block_in_a_data_table_is_refused_naming_the_file(fixture_table):
    location = fixture_table(MOR_FIXTURES[1])
    log = _log(location)
    instant = HudiTable.open(str(location)).timeline.commits()[-1].timestamp
    log.write_bytes(log.read_bytes() + encode_block(LogBlock(BlockType.HFILE_DATA, {Header.INSTANT_TIME: instant})))
    with pytest.raises(UnsupportedTableError, match=f"^{log}: an HFile data block at byte "):
        _read(location)


def test_verify_reports_a_damaged_log_file_and_not_a_torn_append(fixture_table, capsys):
    from _support import cli
    location = fixture_table(MOR_FIXTURES[1])
    log = _log(location)
    data = log.read_bytes()
    log.write_bytes(data + data[:40])                   # a torn append: readers skip it
    code, out, err = cli(capsys, "verify", str(location))
    assert code == 0 and "1 log file(s) read" in out, out + err
    log.write_bytes(data[:6] + (2 ** 40).to_bytes(8, "big") + data[14:])
    code, out, err = cli(capsys, "verify", str(location))
    found = [line for line in out.splitlines() if "\tlog\t" in line]
    assert code != 0 and len(found) == 1, out + err
    assert f"\t{log.relative_to(location)}\t{log}: a corrupt log block at byte 0, in the bytes completed " \
           "deltacommit 20250121000557095 wrote; the log file is damaged" in found[0]


def _log_only_table(base: str) -> HudiTable:
    """A merge-on-read table (event-time merges on `ts`) whose one deltacommit wrote a log file of file group
    `g` in partitions p1 and p2: p1's deletes `a` at ts 5, then a late update of it at ts 3; p2's holds `c`."""
    config = TableConfig(name="t", table_type="MERGE_ON_READ", version=6, record_key_fields=["_hoodie_record_key"],
                         precombine_field="ts", create_schema=json.dumps(AVRO), extra={
                             COMPACTION_PAYLOAD_CLASS.name: "org.apache.hudi.common.model.DefaultHoodieRecordPayload"})
    init_table(ST, base, config)
    table = HudiTable.open(base)
    writer = TimelineWriter.of(table.timeline)
    ts = new_instant_time(table.timeline.latest_time)
    instant = writer.start(writer.request(DELTA_COMMIT, ts))
    stats = {}
    for partition, rows in (("p1", [("a", 1, 5, True), ("a", 2, 3, None)]), ("p2", [("c", 3, 1, None)])):
        write_partition_metadata(ST, base, partition, ts)
        rel = f"{partition}/{LogFileName('g', ts, 1, '0-1-0').format()}"
        ST.write_bytes(join(base, rel), encode_block(_records(ts, *rows)[0][1]))
        stats[partition] = [WriteStat(file_id="g", path=rel, partition_path=partition, num_writes=len(rows),
                                      file_size_in_bytes=ST.info(join(base, rel)).size)]
    writer.complete(instant, CommitMetadata(stats, operation_type="UPSERT", extra_metadata={"schema": json.dumps(AVRO)}))
    return HudiTable.open(base)


def test_log_only_slices_merge_their_keys_by_the_table_schemas_ordering_field(tmp_path):
    """With no base file to type the ordering field, the table's schema does (a delete at ts 5 outlives an
    update at ts 3); a file id two partitions share is two slices (verify's keys, as the index build's)."""
    table = _log_only_table(str(tmp_path / "t"))
    keys = data_locations(table).select(["partition_path", "key"]).to_pylist()
    assert sorted((r["partition_path"], r["key"]) for r in keys) == [("p2", "c")]


def test_a_long_run_of_blocks_merges_each_key_over_all_of_them():
    """Many small blocks (a slice after many deltacommits), a key's versions interleaved across them:
    the greatest ordering value wins, ties to the later write; a version without an ordering value
    loses to one with it (the base file's row too); after a natural delete the next version wins."""
    blocks = [_records("2", ("a", 10, 6, None), ("b", 20, None, None), ("e", 50, 3, None)),
              _records("3", ("a", 11, 6, None), ("c", 30, 4, None)),
              [("x.log.2", delete_block("4", [("a", ""), ("e", "")]))],
              _records("5", ("a", 12, 1, None), ("d", 40, None, None)),
              _records("6", ("d", 41, None, None), ("e", 51, 0, None)),
              _records("7", ("d", 42, 2, None), ("a", 13, 9, True)),
              _records("8", ("d", 43, None, None))]
    assert _merged(EVENT, BASE, *blocks) == {"b": 2, "c": 3, "d": 42, "e": 51}
    assert _merged(PAYLOAD_V6, BASE, *blocks) == {"b": 20, "c": 30, "d": 42, "e": 51}
    assert _merged(COMMIT, BASE, *blocks) == {"b": 20, "c": 30, "d": 43, "e": 51}
    assert _merged(EVENT, [("a", 1, 5), ("e", 5, 1)], *blocks[:4]) == {"a": 1, "b": 20, "c": 30, "d": 40}


def test_logical_types_of_avro_log_records_read_as_their_values():
    """Timestamps (micros, millis, before 1970), dates and decimals (fixed and bytes, negative, null)
    decode from their stored integers and bytes to the values Avro's logical types mean."""
    def decimal(kind: str, precision: int, scale: int) -> dict:
        return {"type": kind, "name": "fixed", "size": 6, "logicalType": "decimal", "precision": precision,
                "scale": scale} if kind == "fixed" else {"type": kind, "logicalType": "decimal",
                                                         "precision": precision, "scale": scale}
    avro = {"type": "record", "name": "t_record", "namespace": "hoodie.t", "fields": [
        {"name": "_hoodie_record_key", "type": ["null", "string"]},
        {"name": "ts", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
        {"name": "ms", "type": [{"type": "long", "logicalType": "timestamp-millis"}, "null"]},
        {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}]},
        {"name": "amount", "type": ["null", decimal("fixed", 12, 2)]},
        {"name": "rate", "type": ["null", decimal("bytes", 10, 3)]}]}
    schema = pa.schema([("_hoodie_record_key", pa.string()), ("ts", pa.timestamp("us", "UTC")),
                        ("ms", pa.timestamp("us", "UTC")), ("day", pa.date32()), ("amount", pa.decimal128(12, 2)),
                        ("rate", pa.decimal128(12, 3))])
    utc = datetime.UTC
    records = [{"_hoodie_record_key": "a", "ts": datetime.datetime(1969, 7, 20, 20, 17, 40, 123456, utc),
                "ms": datetime.datetime(2026, 1, 2, 3, 4, 5, 678000, utc), "day": datetime.date(1900, 3, 1),
                "amount": Decimal("-1234567890.12"), "rate": Decimal("-0.001")},
               {"_hoodie_record_key": "b", "ts": None, "ms": None, "day": None, "amount": None, "rate": None},
               {"_hoodie_record_key": "c", "ts": datetime.datetime(2262, 1, 1, tzinfo=utc),
                "ms": datetime.datetime(1960, 1, 1, 0, 0, 0, 1000, utc), "day": datetime.date(2026, 11, 29),
                "amount": Decimal("9999999999.99"), "rate": Decimal("1234567.890")}]
    merged = merge_slice(None, [("x.log.1", avro_block(records, avro, "2"))], COMMIT, schema)
    assert rows(merged) == rows(pa.Table.from_pylist(records, schema))

"""Hudi's column_stats / partition_stats records (mdt/column_stats.py): keys as Hudi 0.15 and 1.2
build them (known answers read from tables they wrote), and the records of a base file tablespec
writes, from its footer, in each version's value wrappers."""
from __future__ import annotations

import datetime as dt
import decimal
import io
import json

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

from tablespec.arrow.basefile import write_base_file
from tablespec.hudi.mdt import column_stats as cs
from tablespec.hudi.mdt import records

# Measured: keys Hudi 0.15.0 and 1.2.0 wrote (column "id", partition "a", the non-partitioned ".")
HUDI_KEYS = {("id", "a", "5efeca55-29c6-43b7-81c2-5acbf0acfbb5-0_0-31-35_20261128080758773.parquet"):
             "sLZoasJosec=BFHqp2KLzrM=i0vCS5drenEs2B2hCrJEWA==",
             ("f", "b", "f611493e-9dd7-4f19-adda-cc0c4ab868b7-0_1-32-39_20261128075509007.parquet"):
             "E2YzkOzSM3I=Ikp1UxohNwU=hwpTyNna2bXRCPlL2nDIog=="}


def test_keys_are_the_ones_hudi_writes():
    for (column, partition, name), key in HUDI_KEYS.items():
        assert cs.column_stats_key(column, partition, name) == key
    assert cs.partition_stats_key("id", "a") == "sLZoasJosec=BFHqp2KLzrM="
    assert cs.name_id(".") == "FXThHwelITM=" and cs.partition_stats_key("id", "") == "sLZoasJosec=FXThHwelITM="
    assert cs.xxhash64(b"a", 0) == 0xD24EC4F1A98C6E5B and cs.xxhash64(b"", 0) == 0xEF46DB3751D8E999
    long_name = b"x" * 100       # the 32-byte stripes
    assert cs.xxhash64(long_name, 0) != cs.xxhash64(long_name[:-1], 0)


def _decoded(record: dict, one_x: bool) -> dict:
    schema = fastavro.parse_schema(json.loads(records.stored_schema_json(one_x)))
    raw = records.encode(record, None, one_x)
    return fastavro.schemaless_reader(io.BytesIO(raw), schema, None, return_record_name=True,
                                      return_record_name_override=True)["ColumnStatsMetadata"]


def test_ranges_of_a_base_file_from_its_footer(tmp_path):
    table = pa.table({
        "id": ["k2", "k1", "k3"], "v": pa.array([5, None, -2], pa.int64()), "s": pa.array([None, None, None], pa.string()),
        "d": pa.array([dt.date(2024, 1, 2), dt.date(2024, 1, 1), None]),
        "ts": pa.array([dt.datetime(2024, 1, 1, 1), None, dt.datetime(2024, 1, 1)], pa.timestamp("us", "UTC")),
        "amount": pa.array([decimal.Decimal("2.20"), decimal.Decimal("-3.30"), None], pa.decimal128(10, 2)),
        "nested": pa.array([[1], [2], []], pa.list_(pa.int32()))})
    schema = json.dumps({"type": "record", "name": "r", "fields": []})
    path = tmp_path / "f1_0-0-0_20240101000000000.parquet"
    write_base_file(str(path), table, commit_time="20240101000000000", partition_path="a", partition_id=0,
                    record_keys=table.column("id"), avro_schema_json=schema)
    ranges = {r.column: r for r in cs.file_ranges(pq.read_metadata(path), path.name)}
    assert "nested" not in ranges and {"_hoodie_commit_time", "_hoodie_file_name"} <= set(ranges)
    assert (ranges["v"].min, ranges["v"].max, ranges["v"].null_count, ranges["v"].value_count) == (-2, 5, 1, 3)
    assert (ranges["s"].min, ranges["s"].max, ranges["s"].null_count) == (None, None, 3)    # all null: no bounds
    assert (ranges["d"].min, ranges["d"].max) == (19723, 19724)
    assert (ranges["ts"].min, ranges["ts"].max) == (1704067200000000, 1704070800000000)
    assert (ranges["amount"].min, ranges["amount"].max) == (decimal.Decimal("-3.30"), decimal.Decimal("2.20"))
    assert set(cs.file_ranges(pq.read_metadata(path), path.name, ("v", "nope"))) == {ranges["v"]}

    # version 6 (Hudi 0.15's wrappers) and 9 (1.2's, with the value type)
    _, v6 = cs.column_stats_record("a", ranges["amount"], one_x=False)
    assert _decoded(v6, False)["minValue"] == (f"{cs._MODEL}DecimalWrapper", {"value": decimal.Decimal("-3.300000000000000")})
    _, v9 = cs.column_stats_record("a", ranges["amount"], one_x=True)
    stats = _decoded(v9, True)
    assert stats["minValue"] == (f"{cs._MODEL}BytesWrapper", {"value": b"\xfe\xb6"})     # -330, as Java's BigInteger
    assert stats["maxValue"] == (f"{cs._MODEL}BytesWrapper", {"value": b"\x00\xdc"})     # 220
    assert stats["valueType"] == {"typeOrdinal": 10, "additionalInfo": "10,2"} and not stats["isTightBound"]
    assert _decoded(cs.column_stats_record("a", ranges["d"], False)[1], False)["minValue"][0] == f"{cs._MODEL}DateWrapper"
    assert _decoded(cs.column_stats_record("a", ranges["d"], True)[1], True)["minValue"][0] == f"{cs._MODEL}IntWrapper"

    # a partition's statistics over its files: the widest bounds, counts summed, tight
    other = cs.ColumnRange("f2", "v", "long", 7, 9, 2, 0, 10, 20)
    [merged] = cs.merged([ranges["v"], other], "a")
    assert (merged.min, merged.max, merged.value_count, merged.null_count) == (-2, 9, 5, 1)
    key, record = cs.partition_stats_record("a", merged)
    assert key == cs.partition_stats_key("v", "a") and record["type"] == cs.PARTITION_STATS_TYPE
    assert _decoded(record, True)["isTightBound"] and _decoded(record, True)["fileName"] == "a"
    [unknown] = cs.merged([ranges["v"], cs.ColumnRange("f3", "v", "long", None, None, 2, 0, 1, 1)], "a")
    assert unknown.min is None and unknown.max is None       # a file with values but no bounds: none known


def test_merge_keeps_the_newest_and_drops_deleted():
    r1 = cs.column_stats_record("a", cs.ColumnRange("f", "v", "long", 1, 2, 1, 0, 1, 1), False)
    r2 = cs.column_stats_record("a", cs.ColumnRange("f", "v", "long", 1, 3, 2, 0, 1, 1), False)
    gone = cs.deleted_record("a", "f", "v", False)
    assert cs.latest([r1, r2]) == {r1[0]: r2[1]}
    assert cs.latest([r1, gone]) == {} and cs.latest([r1, (r1[0], {"isDeleted": True})]) == {}
    assert _decoded(gone[1], False)["valueCount"] == -1 and _decoded(gone[1], False)["isDeleted"]

"""Avro log records decoded column by column (a slice's blocks of one flat writer schema at once)
give exactly what the record-by-record decoder gives: every primitive type, unions with null on
either side, nulls, fields skipped or missing, logical types, and blocks of no records. Schemas
that are not flat, or whose values would convert, decode record by record; bytes that are not
records are refused naming the log file."""
from __future__ import annotations

import datetime
import json
import random
import struct
from decimal import Decimal

import pyarrow as pa
import pytest

from tablespec.arrow.avro_columns import decode_columns, record_spans
from tablespec.arrow.avro_rows import raw_fields, records_table, stored_as_wanted
from tablespec.arrow.merge import merge_slice
from tablespec.errors import LogFileDamaged
from tablespec.hudi.formats.logfile import Header, LogBlock, avro_block, avro_records
from tablespec.hudi.merge_on_read import MergeRules

UTC = datetime.UTC
AVRO = {"type": "record", "name": "t_record", "namespace": "hoodie.t", "fields": [
    {"name": "_hoodie_record_key", "type": "string"},
    {"name": "s", "type": ["null", "string"], "default": None},
    {"name": "i", "type": ["int", "null"]},
    {"name": "n", "type": ["null", "long"], "default": None},
    {"name": "f", "type": ["null", "float"], "default": None},
    {"name": "d", "type": "double"},
    {"name": "b", "type": ["null", "boolean"], "default": None},
    {"name": "y", "type": ["null", "bytes"], "default": None},
    {"name": "skipped", "type": ["null", "string"], "default": None},
    {"name": "when", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}], "default": None},
    {"name": "ms", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}], "default": None},
    {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}], "default": None},
    {"name": "amount", "type": ["null", {"type": "fixed", "name": "amount", "size": 6, "logicalType": "decimal",
                                         "precision": 12, "scale": 2}], "default": None}]}
WANTED = pa.schema([("_hoodie_record_key", pa.string()), ("s", pa.string()), ("i", pa.int64()), ("n", pa.int64()),
                    ("f", pa.float32()), ("d", pa.float64()), ("b", pa.bool_()), ("y", pa.binary()),
                    ("when", pa.timestamp("us", "UTC")), ("ms", pa.timestamp("us")), ("day", pa.date32()),
                    ("amount", pa.decimal128(12, 2)), ("missing", pa.string())])


def _blocks(seed: int = 7) -> list[LogBlock]:
    """Blocks of random records (about a third of each nullable field null), some of no records."""
    rnd = random.Random(seed)

    def since(start: datetime.datetime, **delta) -> datetime.datetime:
        return start + datetime.timedelta(**delta)

    def maybe(value):
        return None if rnd.random() < 0.3 else value

    def record(k: int) -> dict:
        return {"_hoodie_record_key": f"k{k}", "s": maybe("é" * rnd.randrange(0, 200)),
                "i": maybe(rnd.randrange(-2 ** 31, 2 ** 31)), "n": maybe(rnd.randrange(-2 ** 63, 2 ** 63)),
                "f": maybe(rnd.random()), "d": rnd.uniform(-1e300, 1e300), "b": maybe(rnd.random() < 0.5),
                "y": maybe(rnd.randbytes(rnd.randrange(5))), "skipped": maybe("x" * rnd.randrange(300)),
                "when": maybe(since(datetime.datetime(1960, 1, 1, tzinfo=UTC), microseconds=rnd.randrange(2 ** 52))),
                "ms": maybe(since(datetime.datetime(2026, 1, 1, tzinfo=UTC), milliseconds=rnd.randrange(-10 ** 12, 10 ** 12))),
                "day": maybe(datetime.date(2026, 1, 1) + datetime.timedelta(days=rnd.randrange(-10 ** 5, 10 ** 5))),
                "amount": maybe(Decimal(rnd.randrange(-10 ** 11, 10 ** 11)) / 100)}
    return [avro_block([record(rnd.randrange(500)) for _ in range(rnd.choice((0, 1, 30, 200)))], AVRO, str(b))
            for b in range(12)]


@pytest.mark.parametrize("wanted", [WANTED, pa.schema([WANTED.field("_hoodie_record_key"), WANTED.field("when")])],
                         ids=["every column", "key and ordering"])
def test_flat_records_decode_column_by_column_as_record_by_record(wanted):
    blocks = _blocks()
    fields = raw_fields(blocks[0].header[Header.SCHEMA], wanted)
    assert fields.columns is not None
    columns = stored_as_wanted(decode_columns(fields.columns, [b.content for b in blocks],
                                              [record_spans(b.content) for b in blocks]), fields, wanted)
    one_by_one = records_table([r for b in blocks for r in avro_records(b, writer_schema=fields.writer)],
                               fields, wanted)
    assert one_by_one.num_rows > 200
    assert columns.schema == one_by_one.schema == wanted
    assert columns.equals(one_by_one)


@pytest.mark.parametrize("field, column", [
    ({"name": "x", "type": {"type": "record", "name": "inner", "fields": [{"name": "v", "type": "int"}]}},
     pa.struct([("v", pa.int32())])),
    ({"name": "x", "type": {"type": "array", "items": "int"}}, pa.list_(pa.int32())),
    ({"name": "x", "type": ["null", "int", "string"]}, pa.string()),
    ({"name": "x", "type": "long"}, pa.int32()),              # would need a range check
    ({"name": "x", "type": "int"}, pa.string()),              # would not convert
    ({"name": "x", "type": {"type": "long", "logicalType": "time-micros"}}, pa.time64("us")),
], ids=["record", "array", "three-branch union", "long as int", "int as string", "time logical type"])
def test_schemas_that_are_not_flat_or_convert_decode_record_by_record(field, column):
    text = json.dumps({"type": "record", "name": "r", "fields": [field]})
    assert raw_fields(text, pa.schema([("x", column)])).columns is None


def _damaged(block: LogBlock, at: int, value: bytes) -> LogBlock:
    """`block` with the bytes at offset `at` of its first record replaced (its framing intact)."""
    start, _ = record_spans(block.content)[0]
    content = bytearray(block.content)
    content[start + at:start + at + len(value)] = value
    return LogBlock(block.type, block.header, bytes(content))


@pytest.mark.parametrize("at, value", [(0, b"\x7e"), (3, b"\x08"), (0, b"\x06\xff\xfe\xfd")],
                         ids=["length past the record", "union branch out of range", "string not UTF-8"])
def test_a_record_that_does_not_decode_is_refused_naming_its_file(at, value):
    """Key "k1" (its length then its bytes) then the union of "s": each broken in turn, the blocks'
    framing intact, and a sound block before it in the same run."""
    sound, broken = (avro_block([{"_hoodie_record_key": "k1", "i": None, "d": 0.5}], AVRO, i) for i in "23")
    rules = MergeRules()
    assert merge_slice(None, [("a.log.1", sound)], rules, WANTED).column("d").to_pylist() == [0.5]
    with pytest.raises(LogFileDamaged, match=r"^b\.log\.1: the AVRO_DATA block at byte 0 \(instant 3\) does not "
                                             r"decode: .*the log file is damaged"):
        merge_slice(None, [("a.log.1", sound), ("b.log.1", _damaged(broken, at, value))], rules, WANTED)


def test_record_spans_refuse_lengths_past_the_block():
    content = struct.pack(">iii", 3, 2, 1) + b"a" + struct.pack(">i", 5) + b"bc"
    with pytest.raises(ValueError, match="runs past its block"):
        record_spans(content)

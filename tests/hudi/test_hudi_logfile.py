"""Hudi's log file format: blocks written by tablespec read back; torn and garbled stretches are
corrupt blocks that reading skips, as Hudi's reader does. Files Apache Hudi writes are checked in
tests/interop/test_hudi_log_files.py."""
from __future__ import annotations

import pytest

from tablespec.errors import HudiFormatError
from tablespec.hudi.formats.logfile import MAGIC, BlockType, Header, LogBlock, avro_block, avro_records, encode_block, read_blocks

SCHEMA = {"type": "record", "name": "Entry", "namespace": "t",
          "fields": [{"name": "commitTime", "type": "string"},
                     {"name": "actionType", "type": ["null", "string"], "default": None},
                     {"name": "size", "type": "long"}]}
RECORDS = [{"commitTime": "20240101000000000", "actionType": "commit", "size": 7},
           {"commitTime": "20240101000000001", "actionType": None, "size": -1 << 40}]


def _file() -> tuple[bytes, list[LogBlock]]:
    blocks = [avro_block(RECORDS, SCHEMA, instant="20240101000000001"),
              LogBlock(BlockType.COMMAND, {Header.INSTANT_TIME: "20240101000000002",
                                           Header.TARGET_INSTANT_TIME: "20240101000000001",
                                           Header.COMMAND_BLOCK_TYPE: "0"}),
              avro_block(RECORDS[:1], SCHEMA)]
    return b"".join(encode_block(b) for b in blocks), blocks


def test_blocks_and_records_read_back():
    data, written = _file()
    read = list(read_blocks(data))
    assert [(b.type, dict(b.header), b.content, dict(b.footer)) for b in read] == \
        [(b.type, dict(b.header), b.content, dict(b.footer)) for b in written]
    assert read[0].instant == "20240101000000001" and read[2].instant is None
    assert avro_records(read[0]) == RECORDS and avro_records(read[2]) == RECORDS[:1]
    # every block re-encodes to its own bytes
    assert b"".join(encode_block(b) for b in read) == data


def test_a_torn_append_is_one_corrupt_block_at_the_end():
    data, _ = _file()
    last = data.rindex(MAGIC)
    for cut in (last + 3, last + 20, len(data) - 1):
        read = list(read_blocks(data[:cut]))
        assert [b.type for b in read] == [BlockType.AVRO_DATA, BlockType.COMMAND, BlockType.CORRUPT]
        assert read[-1].offset == last and read[-1].content == data[last:cut]


def test_garbage_between_blocks_is_skipped_to_the_next_magic():
    data, _ = _file()
    second = data.index(MAGIC, 1)
    garbled = data[:second] + b"\x00garbage" + data[second:]
    assert [b.type for b in read_blocks(garbled)] == \
        [BlockType.AVRO_DATA, BlockType.CORRUPT, BlockType.COMMAND, BlockType.AVRO_DATA]
    # a block whose reverse pointer disagrees with its length is corrupt, the next one still reads
    bad = bytearray(data)
    bad[second - 1] ^= 0xFF
    assert [b.type for b in read_blocks(bytes(bad))] == [BlockType.CORRUPT, BlockType.COMMAND, BlockType.AVRO_DATA]


def test_records_project_onto_a_reader_schema_and_other_blocks_are_refused():
    data, _ = _file()
    first, command = list(read_blocks(data))[:2]
    narrow = {**SCHEMA, "fields": SCHEMA["fields"][:1]}
    assert avro_records(first, narrow) == [{"commitTime": r["commitTime"]} for r in RECORDS]
    with pytest.raises(HudiFormatError, match="not an Avro data block: COMMAND"):
        avro_records(command)

"""Hudi's log file format (log format version 1): the blocks of merge-on-read log files, the
metadata table's log files and the archived timeline (`.hoodie/archived/`).

A log file is a sequence of blocks, each:

    magic `#HUDI#` | block length (long: everything after it) | format version (int) |
    block type (int) | header | content length (long) | content | footer |
    block's bytes before this field, from the magic on (long: the reverse pointer)

with a header or footer as an entry count (int) then, per entry, the key's ordinal (int), the
UTF-8 value's length (int) and the value. Integers are big-endian (Java's DataOutputStream).
A writer that dies mid-append leaves a block whose length runs past the end of the file or
whose reverse pointer disagrees: Hudi's reader treats that block as corrupt and reads on at the
next magic, and so does `read_blocks`.

An Avro data block's content is its own version (int), the record count (int) and, per record,
its length (int) and Avro binary encoding under the schema in the block's SCHEMA header. A Parquet
data block's content is a whole Parquet file (`hoodie.logfile.data.block.format=parquet`). A delete
block's content is its version (int, 3), then the length (int) and Avro binary of a
HoodieDeleteRecordList: the key, partition and ordering value of each deleted record. A command
block's COMMAND_BLOCK_TYPE header is 0 (a rollback of the instant in its TARGET_INSTANT_TIME header).
"""
from __future__ import annotations

import io
import json
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, cast

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

from tablespec.errors import HudiFormatError
from tablespec.hudi.formats.avro import parsed_schema

MAGIC = b"#HUDI#"
FORMAT_VERSION = 1
AVRO_BLOCK_VERSION = 3   # written first in an Avro data block's content (Hudi 0.15)


class BlockType(IntEnum):
    COMMAND = 0
    DELETE = 1
    CORRUPT = 2
    AVRO_DATA = 3
    HFILE_DATA = 4
    PARQUET_DATA = 5
    CDC_DATA = 6


class Header(IntEnum):
    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8


@dataclass(frozen=True)
class LogBlock:
    """One block: its type, header and footer (key ordinal -> value) and raw content."""
    type: BlockType
    header: Mapping[int, str] = field(default_factory=dict)
    content: bytes = b""
    footer: Mapping[int, str] = field(default_factory=dict)
    version: int = FORMAT_VERSION
    offset: int = 0          # where the block's magic starts in its file

    @property
    def instant(self) -> str | None:
        return self.header.get(Header.INSTANT_TIME)


def _metadata_bytes(entries: Mapping[int, str]) -> bytes:
    out = [struct.pack(">i", len(entries))]
    for key, value in entries.items():
        raw = value.encode("utf-8")
        out.append(struct.pack(">ii", int(key), len(raw)) + raw)
    return b"".join(out)


def encode_block(block: LogBlock) -> bytes:
    """The bytes Hudi's log writer appends for `block`."""
    header, footer = _metadata_bytes(block.header), _metadata_bytes(block.footer)
    body = (struct.pack(">ii", block.version, int(block.type)) + header
            + struct.pack(">q", len(block.content)) + block.content + footer)
    length = len(body) + 8                       # the reverse pointer counts in the length ...
    before = len(MAGIC) + 8 + len(body)          # ... but not in itself
    return MAGIC + struct.pack(">q", length) + body + struct.pack(">q", before)


class _Cursor:
    def __init__(self, data: bytes, pos: int, end: int):
        self.data, self.pos, self.end = data, pos, end

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > self.end:
            raise HudiFormatError("log block runs past its length")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def int32(self) -> int:
        return struct.unpack(">i", self.take(4))[0]


_INT, _LONG, _TWO_INTS = struct.Struct(">i"), struct.Struct(">q"), struct.Struct(">ii")


def _metadata_at(data: bytes, pos: int, end: int) -> tuple[dict[int, str], int]:
    """A header or footer at `pos` and where it ends; HudiFormatError when it runs past `end`."""
    if pos + 4 > end:
        raise HudiFormatError("log block runs past its length")
    entries = {}
    count = _INT.unpack_from(data, pos)[0]
    pos += 4
    for _ in range(count):
        if pos + 8 > end:
            raise HudiFormatError("log block runs past its length")
        key, size = _TWO_INTS.unpack_from(data, pos)
        pos += 8
        if size < 0 or pos + size > end:
            raise HudiFormatError("log block runs past its length")
        entries[key] = data[pos:pos + size].decode("utf-8")
        pos += size
    return entries, pos


def _block_at(data: bytes, pos: int) -> LogBlock | None:
    """The block whose magic is at `pos`, or None when it is incomplete or inconsistent (parsed
    with one struct call per field: a slice after a long run of deltacommits has many small blocks)."""
    head = pos + len(MAGIC)
    if head + 8 > len(data):
        return None
    length = _LONG.unpack_from(data, head)[0]
    end = head + 8 + length
    if length < 8 or end > len(data):
        return None
    if _LONG.unpack_from(data, end - 8)[0] != end - 8 - pos:
        return None
    at, stop = head + 8, end - 8
    try:
        if at + 8 > stop:
            return None
        version, kind = _TWO_INTS.unpack_from(data, at)
        header, at = _metadata_at(data, at + 8, stop)
        if at + 8 > stop:
            return None
        size = _LONG.unpack_from(data, at)[0]
        at += 8
        if size < 0 or at + size > stop:
            return None
        content = data[at:at + size]
        at += size
        footer, at = _metadata_at(data, at, stop) if version >= 1 else ({}, at)
    except (HudiFormatError, UnicodeDecodeError):
        return None
    if at != stop:
        return None
    try:
        kind = BlockType(kind)
    except ValueError:
        return None
    return LogBlock(kind, header, content, footer, version, pos)


def read_blocks(data: bytes) -> Iterator[LogBlock]:
    """Every block of a log file's bytes in order. A corrupt stretch (a torn append, garbage) is
    yielded as one CORRUPT block holding its bytes, and reading resumes at the next magic."""
    pos = 0
    while pos < len(data):
        if data.startswith(MAGIC, pos) and (block := _block_at(data, pos)) is not None:
            yield block
            pos = block.offset + len(MAGIC) + 8 + struct.unpack(">q", data[pos + 6:pos + 14])[0]
            continue
        nxt = data.find(MAGIC, pos + 1)
        end = len(data) if nxt < 0 else nxt
        yield LogBlock(BlockType.CORRUPT, content=data[pos:end], offset=pos)
        pos = end


# --- Avro data blocks --------------------------------------------------------------------------

def avro_content(records: Iterable[Mapping[str, Any]], schema: Mapping[str, Any]) -> bytes:
    """An Avro data block's content: `records` in Avro binary under `schema`, as Hudi lays them out."""
    parsed = fastavro.parse_schema(dict(schema))
    encoded = []
    for record in records:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, dict(record))
        encoded.append(buf.getvalue())
    return struct.pack(">ii", AVRO_BLOCK_VERSION, len(encoded)) + b"".join(
        struct.pack(">i", len(r)) + r for r in encoded)


def avro_block(records: Iterable[Mapping[str, Any]], schema: Mapping[str, Any],
               instant: str | None = None) -> LogBlock:
    """An Avro data block of `records` with its schema (as JSON) in the SCHEMA header and, for
    the data blocks of a write, the writing instant (archived-timeline blocks carry none)."""
    header: dict[int, str] = {Header.SCHEMA: json.dumps(schema, separators=(",", ":"))}
    if instant is not None:
        header = {Header.INSTANT_TIME: instant, **header}
    return LogBlock(BlockType.AVRO_DATA, header, avro_content(records, schema))


def avro_records(block: LogBlock, reader_schema: Mapping[str, Any] | None = None,
                 wanted: Callable[[bytes], bool] | None = None, writer_schema: Any = None) -> list[dict[str, Any]]:
    """The records of an Avro data block, decoded with the writer's schema from its header
    (projected onto `reader_schema` when given). `wanted`: a test of a record's encoded bytes;
    the records it refuses are skipped undecoded (decoding is most of a block's cost).
    `writer_schema`: that schema as parsed for fastavro by the caller (the same encoding, e.g. with
    logical types dropped so values stay the integers and bytes they are stored as)."""
    if block.type != BlockType.AVRO_DATA:
        raise HudiFormatError(f"not an Avro data block: {block.type.name}")
    if Header.SCHEMA not in block.header:
        raise HudiFormatError("Avro data block without a SCHEMA header")
    writer = writer_schema if writer_schema is not None else parsed_schema(block.header[Header.SCHEMA])
    reader = fastavro.parse_schema(dict(reader_schema)) if reader_schema is not None else None
    c = _Cursor(block.content, 0, len(block.content))
    c.int32()                                   # the block's own version: every version lays out records alike
    count = c.int32()
    records: list[dict[str, Any]] = []
    for _ in range(count):
        raw = c.take(c.int32())
        if wanted is not None and not wanted(raw):
            continue
        records.append(cast(dict[str, Any], fastavro.schemaless_reader(io.BytesIO(raw), writer, reader)))
    return records


# --- delete blocks ------------------------------------------------------------------------------

def _wrapper(name: str, value: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": [{"name": "value", "type": value}]}


_JAVA_STRING = {"type": "string", "avro.java.string": "String"}
# Hudi's value wrappers (org.apache.hudi.avro.model): how its Avro models hold a value of any type.
WRAPPERS: list[dict[str, Any]] = [
    _wrapper("BooleanWrapper", "boolean"), _wrapper("IntWrapper", "int"), _wrapper("LongWrapper", "long"),
    _wrapper("FloatWrapper", "float"), _wrapper("DoubleWrapper", "double"), _wrapper("BytesWrapper", "bytes"),
    _wrapper("StringWrapper", _JAVA_STRING), _wrapper("DateWrapper", "int"),
    _wrapper("DecimalWrapper", {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15}),
    _wrapper("TimeMicrosWrapper", {"type": "long", "logicalType": "time-micros"}),
    _wrapper("TimestampMicrosWrapper", "long")]
DELETE_BLOCK_VERSION = 3
# HoodieDeleteRecordList of Apache Hudi 0.15 (a delete block of version 3).
DELETE_SCHEMA: dict[str, Any] = {
    "type": "record", "name": "HoodieDeleteRecordList", "namespace": "org.apache.hudi.avro.model", "fields": [
        {"name": "deleteRecordList", "type": {"type": "array", "items": {
            "type": "record", "name": "HoodieDeleteRecord", "fields": [
                {"name": "recordKey", "type": ["null", "string"], "default": None},
                {"name": "partitionPath", "type": ["null", "string"], "default": None},
                {"name": "orderingVal", "type": ["null", *WRAPPERS], "default": None}]}}}]}
_DELETE_PARSED = fastavro.parse_schema(DELETE_SCHEMA)


def delete_block(instant: str, keys: Iterable[tuple[str, str]], schema: str | None = None) -> LogBlock:
    """A delete block of (record key, partition path) pairs written at `instant`, each with the
    ordering value 0 Hudi gives a delete without one (so it wins over any earlier record). A data
    table's delete block carries the writer's schema (JSON) in its SCHEMA header, as Hudi 0.15's
    writers put it there."""
    records = [{"recordKey": k, "partitionPath": p, "orderingVal": ("org.apache.hudi.avro.model.IntWrapper", {"value": 0})}
               for k, p in keys]
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _DELETE_PARSED, {"deleteRecordList": records})
    raw = buf.getvalue()
    content = struct.pack(">ii", DELETE_BLOCK_VERSION, len(raw)) + raw
    header: dict[int, str] = {Header.INSTANT_TIME: instant}
    if schema is not None:
        header[Header.SCHEMA] = schema
    return LogBlock(BlockType.DELETE, header, content)


def deleted_keys(block: LogBlock) -> list[tuple[str, str | None]]:
    """The (record key, partition path) pairs of a delete block of version 3."""
    return [(key, partition) for key, partition, _ in delete_records(block)]


def delete_records(block: LogBlock) -> list[tuple[str, str | None, Any]]:
    """The (record key, partition path, ordering value or None) of each record a delete block deletes."""
    if block.type != BlockType.DELETE:
        raise HudiFormatError(f"not a delete block: {block.type.name}")
    c = _Cursor(block.content, 0, len(block.content))
    version = c.int32()
    if version != DELETE_BLOCK_VERSION:
        raise HudiFormatError(f"delete block version {version} is not supported (only {DELETE_BLOCK_VERSION})")
    raw = c.take(c.int32())
    try:
        decoded = cast(dict[str, Any], fastavro.schemaless_reader(io.BytesIO(raw), _DELETE_PARSED, None))
    except Exception as e:  # fastavro raises several types for bytes that are not the schema's
        raise HudiFormatError(f"delete block content is not a HoodieDeleteRecordList: {e}") from None
    return [(r["recordKey"], r["partitionPath"], (r["orderingVal"] or {}).get("value"))
            for r in decoded["deleteRecordList"]]


# --- Parquet data blocks -----------------------------------------------------------------------

def parquet_block_table(block: LogBlock, columns: list[str] | None = None) -> pa.Table:
    """The rows of a Parquet data block (its content is a Parquet file), `columns` only when given."""
    if block.type != BlockType.PARQUET_DATA:
        raise HudiFormatError(f"not a Parquet data block: {block.type.name}")
    try:
        file = pq.ParquetFile(pa.BufferReader(block.content))
        present = set(file.schema_arrow.names)
        return file.read(columns=None if columns is None else [c for c in columns if c in present])
    except (pa.ArrowException, OSError) as e:
        raise HudiFormatError(f"Parquet data block content is not a Parquet file: {e}") from None


# --- command blocks ------------------------------------------------------------------------------

ROLLBACK_COMMAND = "0"   # the only command block type Hudi writes (HoodieCommandBlockTypeEnum.ROLLBACK_BLOCK)


def rollback_block(instant: str, target: str) -> LogBlock:
    """The command block a rollback at `instant` appends to a file group the failed write `target`
    wrote log blocks into (headers in the order Hudi 0.15 writes them)."""
    return LogBlock(BlockType.COMMAND, {Header.TARGET_INSTANT_TIME: target, Header.COMMAND_BLOCK_TYPE: ROLLBACK_COMMAND,
                                        Header.INSTANT_TIME: instant})


def rollback_target(block: LogBlock) -> str:
    """The instant a rollback command block rolls back; HudiFormatError for any other command."""
    if block.type != BlockType.COMMAND:
        raise HudiFormatError(f"not a command block: {block.type.name}")
    kind, target = block.header.get(Header.COMMAND_BLOCK_TYPE), block.header.get(Header.TARGET_INSTANT_TIME)
    if kind != ROLLBACK_COMMAND or not target:
        raise HudiFormatError(f"command block of type {kind!r} (target {target!r}) is not a rollback")
    return target

"""HFile (version 3) as Apache Hudi 0.15 writes it for its metadata table: the base files of every
metadata partition, and the content of the HFILE_DATA blocks of its log files. Hudi 1.x's own
writer (hudi-io) is read too: its blocks have checksum type NULL and a zeroed checksum slot,
and its index keys and hfile.LASTKEY hold the length-prefixed row alone.

A file is, front to back:

    data blocks | meta blocks (Hudi's bloom filter) | load-on-open section | trailer

The load-on-open section (at the trailer's load_on_open_data_offset) is the root data block
index, the meta block index (both ROOT_INDEX blocks) and the file info block. Every block has a
33-byte header

    magic (8) | on-disk size without header (int) | uncompressed size without header (int) |
    offset of the previous block of its type (long, -1 for none) | checksum type (byte) |
    bytes per checksum (int) | on-disk data size with header (int)

then its data (compressed with the file's codec) and one checksum (int) per bytes-per-checksum
chunk of header and data. A root index entry is the block's offset (long), on-disk size (int)
and a Hadoop vint-prefixed key: a data index holds each data block's first key (HBase writers may
shorten it to any key between the previous block's last key and the block's first), the meta
index the block's name. File info is `PBUF` then a length-delimited protobuf of name/value pairs.

The trailer is the last 4096 bytes: magic `TRABLK"$`, a length-delimited protobuf
(FileTrailerProto) and, in the last 4 bytes, the minor version (byte) and major version (3 bytes).

A data block is a run of KeyValue cells: key length (int), value length (int), key, value and,
when file info's KEY_VALUE_VERSION is 1, the memstore timestamp (Hadoop vlong). A key is the row
length (short), row, family length (byte), family, qualifier, timestamp (long), type (byte);
Hudi's record key is the row, with empty family and qualifier, the latest timestamp
(Long.MAX_VALUE) and type Put. Rows sort as unsigned bytes. Integers are big-endian.
"""
from __future__ import annotations

import io
import json
import struct
import threading
import zlib
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

import crc32c
import fastavro
import numpy as np
from isal import isal_zlib

from tablespec.errors import HudiFormatError
from tablespec.hudi.formats.avro import parsed_schema
from tablespec.hudi.io import Storage

TRAILER_SIZE = 4096                  # version 3's fixed trailer
MAJOR_VERSION, MINOR_VERSION = 3, 3
HEADER_SIZE = 33
DATA, META = b"DATABLK*", b"METABLKc"
ROOT_INDEX, FILE_INFO, TRAILER = b"IDXROOT2", b"FILEINF2", b'TRABLK"$'
LEAF_INDEX, INTERMEDIATE_INDEX = b"IDXLEAF2", b"IDXINTE2"
PBUF = b"PBUF"

CODECS = {"gzip": 1, "none": 2}      # Compression.Algorithm ordinals Hudi can read
_CODEC_NAMES = {v: k for k, v in CODECS.items()}
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"   # as Hadoop's GzipCodec writes it (no mtime, OS unknown)
CHECKSUM_NULL, CHECKSUM_CRC32, CHECKSUM_CRC32C = 0, 1, 2
BYTES_PER_CHECKSUM = 16384
COMPARATOR = "org.apache.hudi.io.storage.HoodieHBaseKVComparator"
LATEST_TIMESTAMP = (1 << 63) - 1
PUT = 4
BLOCK_SIZE = 1024 * 1024             # Hudi's hoodie.hfile.block.size default

# file info Hudi writes beside HBase's own entries
SCHEMA_KEY, MIN_KEY, MAX_KEY = b"schema", b"minRecordKey", b"maxRecordKey"
KEY_VALUE_VERSION, MAX_MEMSTORE_TS = b"KEY_VALUE_VERSION", b"MAX_MEMSTORE_TS_KEY"
LAST_KEY, AVG_KEY_LEN, AVG_VALUE_LEN = b"hfile.LASTKEY", b"hfile.AVG_KEY_LEN", b"hfile.AVG_VALUE_LEN"
CREATE_TIME, MAX_TAGS_LEN = b"hfile.CREATE_TIME_TS", b"hfile.MAX_TAGS_LEN"


# --- encodings: protobuf varints, Hadoop's vint/vlong -------------------------------------------

def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1                       # negative int64s take ten bytes, as protobuf's do
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise HudiFormatError("truncated protobuf varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _proto_fields(data: bytes) -> dict[int, list[int | bytes]]:
    """A protobuf message's fields: number -> values (varints as ints, length-delimited as bytes)."""
    fields: dict[int, list[int | bytes]] = {}
    pos = 0
    while pos < len(data):
        tag, pos = _read_varint(data, pos)
        number, wire = tag >> 3, tag & 7
        value: int | bytes
        if wire == 0:
            value, pos = _read_varint(data, pos)
        elif wire == 2:
            length, pos = _read_varint(data, pos)
            if pos + length > len(data):
                raise HudiFormatError("truncated protobuf field")
            value, pos = data[pos:pos + length], pos + length
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, pos = int.from_bytes(data[pos:pos + size], "little"), pos + size
        else:
            raise HudiFormatError(f"unsupported protobuf wire type {wire}")
        fields.setdefault(number, []).append(value)
    return fields


def _proto_varint_field(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _proto_bytes_field(number: int, value: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _vlong(value: int) -> bytes:
    """Hadoop WritableUtils' variable-length long."""
    if -112 <= value <= 127:
        return struct.pack(">b", value)
    marker = -112
    if value < 0:
        value, marker = ~value, -120
    size = (value.bit_length() + 7) // 8
    return struct.pack(">b", marker - size) + value.to_bytes(size, "big")


def _read_vlong(data: bytes, pos: int) -> tuple[int, int]:
    first = struct.unpack_from(">b", data, pos)[0]
    if first >= -112:
        return first, pos + 1
    size = (-119 - first) if first < -120 else (-111 - first)
    value = int.from_bytes(data[pos + 1:pos + size], "big")
    return (~value if first < -120 else value), pos + size


# --- trailer ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Trailer:
    """The fields of FileTrailerProto Hudi's files set."""
    file_info_offset: int
    load_on_open_offset: int
    uncompressed_data_index_size: int
    total_uncompressed_bytes: int
    data_index_count: int
    meta_index_count: int
    entry_count: int
    data_index_levels: int
    first_data_block_offset: int
    last_data_block_offset: int
    comparator: str
    codec: int

    def encode(self) -> bytes:
        proto = b"".join([
            _proto_varint_field(1, self.file_info_offset), _proto_varint_field(2, self.load_on_open_offset),
            _proto_varint_field(3, self.uncompressed_data_index_size),
            _proto_varint_field(4, self.total_uncompressed_bytes),
            _proto_varint_field(5, self.data_index_count), _proto_varint_field(6, self.meta_index_count),
            _proto_varint_field(7, self.entry_count), _proto_varint_field(8, self.data_index_levels),
            _proto_varint_field(9, self.first_data_block_offset),
            _proto_varint_field(10, self.last_data_block_offset),
            _proto_bytes_field(11, self.comparator.encode()), _proto_varint_field(12, self.codec)])
        body = TRAILER + _varint(len(proto)) + proto
        version = struct.pack(">I", MINOR_VERSION << 24 | MAJOR_VERSION)
        return body + b"\x00" * (TRAILER_SIZE - len(body) - 4) + version

    @classmethod
    def decode(cls, data: bytes) -> Trailer:
        if len(data) < TRAILER_SIZE:
            raise HudiFormatError(f"{len(data)} bytes is too short for an HFile (its trailer alone is {TRAILER_SIZE})")
        raw = data[-TRAILER_SIZE:]
        version = struct.unpack(">I", raw[-4:])[0]
        major, minor = version & 0xFFFFFF, version >> 24
        if major != MAJOR_VERSION:
            raise HudiFormatError(f"HFile version {major}.{minor} is not supported (only version 3)")
        if raw[:8] != TRAILER:
            raise HudiFormatError("no HFile trailer magic at the trailer's start")
        length, pos = _read_varint(raw, 8)
        fields = _proto_fields(raw[pos:pos + length])

        def num(n: int, default: int = 0) -> int:
            value = fields.get(n, [default])[-1]
            if not isinstance(value, int):
                raise HudiFormatError(f"HFile trailer field {n} is not a number")
            return value - (1 << 64) if value >= 1 << 63 else value   # int64s written as uint64

        codec = num(12, CODECS["none"])
        if codec not in _CODEC_NAMES:
            raise HudiFormatError(f"HFile compression codec {codec} is not supported (only gzip and none)")
        return cls(num(1), num(2), num(3), num(4), num(5), num(6), num(7), num(8, 1), num(9), num(10),
                   bytes(fields.get(11, [b""])[-1]).decode("utf-8", "replace"), codec)


# --- blocks -------------------------------------------------------------------------------------

def _checksums(kind: int, data: bytes, per: int) -> bytes:
    if kind == CHECKSUM_NULL:
        return b""
    fn = crc32c.crc32c if kind == CHECKSUM_CRC32C else zlib.crc32
    return b"".join(struct.pack(">I", fn(data[i:i + per])) for i in range(0, len(data), per))


def _null_checksum_slot(body_size: int, per: int) -> int:
    """The bytes Hudi 1.x's native writer leaves after a block of checksum type NULL: zeroed room
    for one checksum per `per` bytes of header and data, as HBase's readers expect the block's
    on-disk size to count (Hudi's own reader skips them unchecked)."""
    return 4 * -(-body_size // per) if per > 0 else 0


def _compress(data: bytes, codec: int) -> bytes:
    if codec == CODECS["none"]:
        return data
    deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    return (GZIP_HEADER + deflate.compress(data) + deflate.flush()
            + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF))


_INFLATE_ERROR = cast(type[Exception], isal_zlib.error)     # (its type stubs declare an instance)


def _decompress(data: bytes, codec: int) -> bytes:
    """A block's data uncompressed; gzip by ISA-L's inflate (about three times zlib's speed: a cold
    record-index lookup inflates every block of the index). Raises zlib.error on bad bytes."""
    if codec == CODECS["none"]:
        return data
    out, rest = [], data
    try:
        while rest:                               # Hadoop's gzip streams may be several members
            gz = isal_zlib.decompressobj(31)
            out.append(gz.decompress(rest))
            if not gz.eof:
                raise zlib.error("truncated gzip stream")
            rest = gz.unused_data
    except _INFLATE_ERROR as e:
        raise zlib.error(str(e)) from None
    return b"".join(out)


def encode_block(magic: bytes, data: bytes, codec: int, prev_offset: int = -1) -> bytes:
    """One block's bytes: header, `data` compressed with `codec`, CRC32C checksums."""
    stored = _compress(data, codec)
    on_disk_data = HEADER_SIZE + len(stored)
    sums_len = 4 * -(-on_disk_data // BYTES_PER_CHECKSUM)
    head = magic + struct.pack(">iiqbii", len(stored) + sums_len, len(data), prev_offset,
                               CHECKSUM_CRC32C, BYTES_PER_CHECKSUM, on_disk_data)
    body = head + stored
    return body + _checksums(CHECKSUM_CRC32C, body, BYTES_PER_CHECKSUM)


@dataclass(frozen=True)
class Block:
    magic: bytes
    data: bytes          # uncompressed
    on_disk_size: int    # header, data and checksums


class _Ranges:
    """A stored file read by byte ranges: spans fetched ahead (`prefetch`, neighbours merged into
    one read) serve the reads inside them; any other read is a range read of its own."""

    GAP = 1 << 20        # fetch up to this many unneeded bytes to save a request

    def __init__(self, storage: Storage, path: str):
        self.storage, self.path = storage, path
        self.spans: list[tuple[int, bytes]] = []

    def prefetch(self, wanted: Iterable[tuple[int, int]]) -> None:
        merged: list[list[int]] = []
        for start, end in sorted(wanted):
            if merged and start <= merged[-1][1] + self.GAP:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        self.spans = [(start, self.storage.read_range(self.path, start, end - start)) for start, end in merged]

    def read(self, pos: int, length: int) -> bytes:
        for start, data in self.spans:
            if start <= pos and pos + length <= start + len(data):
                return data[pos - start:pos - start + length]
        return self.storage.read_range(self.path, pos, length)


@dataclass(frozen=True)
class _Head:
    """What a reader learns from the load-on-open section and trailer before reading any cell."""
    trailer: Trailer
    index: list[tuple[int, int, bytes]]       # data blocks: offset, on-disk size, first key
    meta: dict[bytes, tuple[int, int]]
    file_info: dict[bytes, bytes]
    memstore_ts: bool
    rows: list[bytes]                         # each data block's first row
    starts: np.ndarray                        # the same, as a numpy bytes array (for batch seeks)


_HEADS: OrderedDict[tuple[str, int], _Head] = OrderedDict()   # (path, size) -> head: stored files never change
_HEADS_KEPT = 1024
_HEADS_LOCK = threading.Lock()


def clear_hfile_heads() -> None:
    """Forget the trailers and indexes `HFileReader.open` keeps."""
    with _HEADS_LOCK:
        _HEADS.clear()


@dataclass(frozen=True)
class Cells:
    """A data block's cells: rows (numpy bytes, in key order) and where each value lies in `data`."""
    rows: np.ndarray
    value_start: np.ndarray
    value_end: np.ndarray
    data: bytes

    def value(self, i: int) -> bytes:
        return self.data[self.value_start[i]:self.value_end[i]]

    def find(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For sorted `keys` (numpy bytes): the positions in `keys` of those present, and their cells."""
        if not len(self.rows) or not len(keys):
            return np.empty(0, np.int64), np.empty(0, np.int64)
        rows, keys = _comparable(self.rows, keys)
        at = np.searchsorted(rows, keys)
        inside = at < len(rows)
        hit = np.zeros(len(keys), bool)
        hit[inside] = rows[at[inside]] == keys[inside]
        found = np.flatnonzero(hit)
        return found, at[found]


class HFileReader:
    """An HFile's file info, meta blocks and cells, read from its bytes (or, `open`, from storage by
    byte ranges: the trailer and load-on-open section, then only the data blocks a seek needs).
    `source` names the file (or log block) in errors. Every block read is checked against its
    checksums (if it has any: Hudi 1.x writes none), its size and, when gzip, its CRC."""

    def __init__(self, data: bytes, source: str = "HFile", *, _ranges: _Ranges | None = None,
                 _size: int | None = None, _head: _Head | None = None):
        self.source = source
        self.data = b"" if _ranges is not None else bytes(data)
        self.size = _size if _size is not None else len(self.data)
        self._ranges = _ranges
        try:
            self.trailer = _head.trailer if _head else Trailer.decode(self._read(self.size - TRAILER_SIZE, TRAILER_SIZE)
                                                                     if self.size >= TRAILER_SIZE else self.data)
            head = _head or self._read_head()
        except HudiFormatError as e:
            raise HudiFormatError(f"{source}: {e}") from None
        self.head = head
        self._index, self._meta, self.file_info = head.index, head.meta, head.file_info
        if MAX_TAGS_LEN in self.file_info:
            raise HudiFormatError(f"{source}: HFile cells with tags are not supported")
        self._memstore_ts, self._rows = head.memstore_ts, head.rows
        self._cached: tuple[int, Cells] | None = None

    @classmethod
    def open(cls, storage: Storage, path: str, size: int) -> HFileReader:
        """The stored HFile `path` of `size` bytes, read by ranges; its parsed trailer and indexes
        are kept process-wide (files are immutable), so a later open reads no more of them."""
        ranges = _Ranges(storage, path)
        with _HEADS_LOCK:
            head = _HEADS.get((path, size))
            if head is not None:
                _HEADS.move_to_end((path, size))
        if head is not None:
            return cls(b"", path, _ranges=ranges, _size=size, _head=head)
        if size < TRAILER_SIZE:
            raise HudiFormatError(f"{path}: {size} bytes is too short for an HFile")
        tail = storage.read_range(path, size - TRAILER_SIZE, TRAILER_SIZE)
        try:
            trailer = Trailer.decode(tail)
        except HudiFormatError as e:
            raise HudiFormatError(f"{path}: {e}") from None
        start = trailer.load_on_open_offset
        if 0 <= start < size - TRAILER_SIZE:
            ranges.spans = [(start, storage.read_range(path, start, size - TRAILER_SIZE - start) + tail)]
        reader = cls(b"", path, _ranges=ranges, _size=size)
        with _HEADS_LOCK:
            _HEADS[(path, size)] = reader.head
            while len(_HEADS) > _HEADS_KEPT:
                _HEADS.popitem(last=False)
        return reader

    def _read(self, pos: int, length: int) -> bytes:
        if self._ranges is not None:
            return self._ranges.read(pos, length)
        return self.data[pos:pos + length]

    def _read_head(self) -> _Head:
        t = self.trailer
        pos = t.load_on_open_offset
        root = self._block_at(pos, ROOT_INDEX)
        index = _root_entries(root.data, t.data_index_count, (0, MID_KEY_METADATA_SIZE))
        for level in range(t.data_index_levels - 1, 0, -1):     # down to the leaf level, in full
            magic = LEAF_INDEX if level == 1 else INTERMEDIATE_INDEX
            index = [e for offset, _, _ in index for e in _non_root_entries(self._block_at(offset, magic).data)]
        pos += root.on_disk_size
        meta = self._block_at(pos, ROOT_INDEX)
        metas = {bytes(k): (o, s) for o, s, k in _root_entries(meta.data, t.meta_index_count)}
        info = _decode_file_info(self._block_at(pos + meta.on_disk_size, FILE_INFO).data)
        version = info.get(KEY_VALUE_VERSION, b"\x00\x00\x00\x00")
        rows = [_row(k) for _, _, k in index]
        return _Head(t, index, metas, info, struct.unpack(">i", version)[0] == 1, rows, bytes_array(rows))

    # --- blocks

    def _block_at(self, pos: int, magic: bytes) -> Block:
        if pos < 0 or pos + HEADER_SIZE > self.size - TRAILER_SIZE:
            raise HudiFormatError(f"block offset {pos} is outside the file")
        head = self._read(pos, HEADER_SIZE)
        if head[:8] != magic:
            raise HudiFormatError(f"expected a {magic.decode()} block at offset {pos}, found {head[:8]!r}")
        on_disk, raw_size, _, kind, per, data_with_header = struct.unpack(">iiqbii", head[8:])
        end = pos + HEADER_SIZE + on_disk
        if end > self.size or not HEADER_SIZE <= data_with_header <= HEADER_SIZE + on_disk:
            raise HudiFormatError(f"{magic.decode()} block at offset {pos} runs past the file")
        if kind not in (CHECKSUM_NULL, CHECKSUM_CRC32, CHECKSUM_CRC32C) or (kind and per <= 0):
            raise HudiFormatError(f"{magic.decode()} block at offset {pos}: unknown checksum type {kind}")
        whole = self._read(pos, end - pos)
        body, sums = whole[:data_with_header], whole[data_with_header:]
        if kind == CHECKSUM_NULL:            # nothing to check but the slot's size (none: an early 1.x writer)
            slot = _null_checksum_slot(len(body), per)
            if sums and len(sums) != slot:
                raise HudiFormatError(f"{magic.decode()} block at offset {pos} has {len(sums)} bytes after its "
                                      f"data, its header calls for {slot} (the file is corrupt)")
        elif _checksums(kind, body, per) != sums:
            raise HudiFormatError(f"{magic.decode()} block at offset {pos}: checksum mismatch (the file is corrupt)")
        try:
            raw = _decompress(body[HEADER_SIZE:], self.trailer.codec)
        except zlib.error as e:
            raise HudiFormatError(f"{magic.decode()} block at offset {pos} does not decompress: {e}") from None
        if len(raw) != raw_size:
            raise HudiFormatError(f"{magic.decode()} block at offset {pos} holds {len(raw)} bytes, "
                                  f"its header says {raw_size}")
        return Block(magic, raw, HEADER_SIZE + on_disk)

    def meta_block(self, name: bytes) -> bytes | None:
        """The content of the meta block `name` (Hudi's `bloomFilter`), or None."""
        if name not in self._meta:
            return None
        return self._checked(lambda: self._block_at(self._meta[name][0], META).data)

    def _checked(self, read):
        try:
            return read()
        except HudiFormatError as e:
            raise HudiFormatError(f"{self.source}: {e}") from None

    @property
    def block_count(self) -> int:
        return len(self._index)

    def cells(self, block_no: int) -> Cells:
        """The cells of data block `block_no` (the last one read is kept)."""
        if self._cached is not None and self._cached[0] == block_no:
            return self._cached[1]
        offset = self._index[block_no][0]
        block = self._checked(lambda: self._block_at(offset, DATA))
        cells = self._checked(lambda: decode_cells(block.data, self._memstore_ts, offset))
        self._cached = (block_no, cells)
        return cells

    def blocks_of(self, keys: np.ndarray) -> np.ndarray:
        """The data block each of the sorted `keys` (numpy bytes) would be in (-1: before the first)."""
        starts, keys = _comparable(self.head.starts, keys)
        return np.searchsorted(starts, keys, side="right") - 1

    def prefetch(self, block_nos: Iterable[int]) -> None:
        """Read the data blocks `block_nos` ahead, neighbours in one range read (stored files)."""
        if self._ranges is not None:
            self._ranges.prefetch((self._index[n][0], self._index[n][0] + self._index[n][1]) for n in block_nos)

    # --- records

    @property
    def entry_count(self) -> int:
        return self.trailer.entry_count

    @property
    def codec(self) -> str:
        return _CODEC_NAMES[self.trailer.codec]

    def records(self) -> Iterator[tuple[bytes, bytes]]:
        """Every (key, value) in key order."""
        self.prefetch(range(len(self._index)))
        for n in range(len(self._index)):
            cells = self.cells(n)
            data = cells.data
            yield from zip(cells.rows.tolist(), (data[a:b] for a, b in zip(cells.value_start.tolist(),
                                                                          cells.value_end.tolist())))

    def get(self, key: bytes | str) -> bytes | None:
        """The value under `key`, found through the block index, or None."""
        return next((v for _, v in self.get_many([key])), None)

    def get_many(self, keys: Iterable[bytes | str]) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) for each of `keys` present, in key order: each block is read at most once."""
        wanted = sorted({k.encode() if isinstance(k, str) else k for k in keys})
        if not wanted or not self._index:
            return
        array = bytes_array(wanted)
        blocks = self.blocks_of(array)
        cuts = np.flatnonzero(np.diff(blocks)) + 1
        groups = [(int(blocks[g[0]]), g) for g in np.split(np.arange(len(wanted)), cuts) if blocks[g[0]] >= 0]
        self.prefetch(n for n, _ in groups)
        for block_no, positions in groups:
            cells = self.cells(block_no)
            found, at = cells.find(array[positions])
            for i, c in zip(found.tolist(), at.tolist()):
                yield wanted[positions[i]], cells.value(c)

    # --- Hudi's file info

    @property
    def schema(self) -> dict[str, Any] | None:
        """The Avro schema Hudi keeps in file info (base files), or None."""
        raw = self.file_info.get(SCHEMA_KEY)
        return json.loads(raw) if raw else None


def bytes_array(rows: list[bytes]) -> np.ndarray:
    """`rows` as a numpy fixed-width bytes array (ordered as unsigned bytes, as HFile's rows), or
    an array of bytes objects when one ends in a NUL (fixed-width arrays drop trailing NULs)."""
    if b"\x00" in b"".join(rows) and any(r.endswith(b"\x00") for r in rows):
        out = np.empty(len(rows), object)
        out[:] = rows
        return out
    return np.array(rows, dtype=f"S{max(1, max(map(len, rows), default=1))}")


def _comparable(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if a.dtype == object or b.dtype == object:
        return a.astype(object), b.astype(object)
    return a, b


MID_KEY_METADATA_SIZE = 16           # what a multi-level data index's root may hold after its entries


def _root_entries(data: bytes, count: int, tail: tuple[int, ...] = (0,)) -> list[tuple[int, int, bytes]]:
    """A root index block's `count` entries (the trailer's count), which fill the block but for
    `tail` bytes: a count the trailer misstates (it has no checksum) is caught here."""
    entries, pos = [], 0
    try:
        for _ in range(count):
            offset, size = struct.unpack_from(">qi", data, pos)
            length, pos = _read_vlong(data, pos + 12)
            if length < 0 or pos + length > len(data):
                raise HudiFormatError("root index entry runs past its block")
            entries.append((offset, size, data[pos:pos + length]))
            pos += length
    except struct.error:
        raise HudiFormatError("root index block is shorter than its entry count") from None
    if len(data) - pos not in tail:
        raise HudiFormatError(f"root index block holds {len(data) - pos} bytes after the {count} entries the "
                              "trailer counts (the file is corrupt)")
    return entries


def _non_root_entries(data: bytes) -> list[tuple[int, int, bytes]]:
    """A leaf or intermediate index block: entry count, each entry's offset within the entries
    (and the end's), then the entries: block offset (long), size (int) and key."""
    try:
        (count,) = struct.unpack_from(">i", data, 0)
        starts = struct.unpack_from(f">{count + 1}i", data, 4)
        base = 4 * (count + 2)
        entries = []
        for i in range(count):
            at = base + starts[i]
            offset, size = struct.unpack_from(">qi", data, at)
            entries.append((offset, size, data[at + 12:base + starts[i + 1]]))
    except struct.error:
        raise HudiFormatError("index block is shorter than its entry count") from None
    return entries


def _row(key: bytes) -> bytes:
    (length,) = struct.unpack_from(">h", key, 0)
    return key[2:2 + length]


_CELL_SUFFIX = b"\x00" + struct.pack(">qb", LATEST_TIMESTAMP, PUT)   # empty family and qualifier, latest, Put


def decode_cells(data: bytes, memstore_ts: bool, offset: int = 0) -> Cells:
    """A data block's cells. Hudi's cells (every key ending in `_CELL_SUFFIX`) are found with
    numpy over the whole block and the result checked to chain cell to cell from the block's start
    to its end; any other block is walked cell by cell."""
    layout = _fast_cells(data, memstore_ts)
    if layout is None:
        layout = _walk_cells(data, memstore_ts, offset)
    starts, lengths, value_start, value_end = layout
    buf = np.frombuffer(data, np.uint8)
    if len(lengths) and np.any(buf[(starts + lengths - 1)[lengths > 0]] == 0):    # numpy bytes would drop the NUL
        rows = np.array([data[a:a + n] for a, n in zip(starts.tolist(), lengths.tolist())] or [b""], object)
        return Cells(rows[:len(lengths)], value_start, value_end, data)
    width = int(lengths.max()) if len(lengths) else 1
    columns = np.arange(max(1, width))
    if len(lengths) and int(lengths.min()) == width > 0 and int(starts.max()) + width <= len(buf):   # one width: no padding
        rows = np.ndarray((len(buf) - width + 1,), f"S{width}", buffer=data, strides=(1,))[starts]   # one gather
        return Cells(rows, value_start, value_end, data)
    take = starts[:, None] + columns
    gathered = buf[np.minimum(take, len(buf) - 1)] if len(buf) else np.zeros(take.shape, np.uint8)
    gathered = np.where(columns < lengths[:, None], gathered, 0).astype(np.uint8)
    rows = np.ascontiguousarray(gathered).view(f"S{max(1, width)}").ravel()
    return Cells(rows, value_start, value_end, data)


def _be(buf: np.ndarray, pos: np.ndarray, size: int) -> np.ndarray:
    """Signed big-endian integers of `size` bytes at each of `pos` (one gather through a
    byte-strided view of the buffer)."""
    view = np.ndarray((max(0, len(buf) - size + 1),), f">i{size}", buffer=buf, strides=(1,))
    return view[pos].astype(np.int64)


def _vlong_sizes(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    first = buf[pos].astype(np.int8).astype(np.int64)
    return np.where(first >= -112, 1, np.where(first < -120, -119 - first, -111 - first))


_LATEST = struct.unpack("<Q", _CELL_SUFFIX[1:9])[0]


def _suffixes(data: bytes, buf: np.ndarray) -> np.ndarray:
    """Where `_CELL_SUFFIX` occurs in `data` (it cannot overlap itself), found with numpy: its
    seven 0xff bytes hold exactly one 4-byte-aligned word of ones (a scan of a quarter as many
    words as bytes), its 0x7f is the word before's last byte that is not 0xff, and the whole
    suffix is checked there."""
    size = len(_CELL_SUFFIX)
    if len(buf) < size:
        return np.empty(0, np.int64)
    words4 = np.frombuffer(data, "<u4", len(data) // 4)
    before = np.flatnonzero(words4[1:] == 0xFFFFFFFF)          # the word before each word of ones
    word = words4[before]
    top = (word >> 8 == 0xFFFFFF).astype(np.int64) + (word >> 16 == 0xFFFF) + (word >> 24 == 0xFF)
    at = before * 4 + 2 - top                                    # the 0x00 before the 0x7f
    at = at[(at >= 0) & (at <= len(buf) - size)]
    words = np.ndarray((len(buf) - 8,), "<u8", buffer=data, offset=1, strides=(1,))
    return at[(words[at] == _LATEST) & (buf[at] == 0) & (buf[at + 9] == _CELL_SUFFIX[9])]


def _fast_cells(data: bytes, memstore_ts: bool) -> tuple[np.ndarray, ...] | None:
    """(row starts, row lengths, value starts, value ends) of a block of Hudi's cells, or None."""
    buf = np.frombuffer(data, np.uint8)
    suffix = _suffixes(data, buf)                           # each key's suffix: the row ends there
    if not len(suffix):
        return None
    ends = suffix + len(_CELL_SUFFIX)
    lengths = np.full(len(suffix), -1, np.int64)
    tried: set[int] = set()
    todo = {int.from_bytes(data[8:10], "big")} if len(data) >= 10 else set()
    while todo:
        for length in todo:
            cell = suffix - length - 10
            open_ = np.flatnonzero((lengths < 0) & (cell >= 0))
            ok = (_be(buf, suffix[open_] - length - 2, 2) == length) & \
                 (_be(buf, cell[open_], 4) == length + 12)
            lengths[open_[ok]] = length
        tried |= todo
        left = np.flatnonzero(lengths < 0)
        if not len(left):
            break
        left = left[left > 0]
        left = left[lengths[left - 1] >= 0]                 # a known cell before: its end is this one's start
        if not len(left):
            return None
        prev = left - 1
        value_end = ends[prev] + _be(buf, suffix[prev] - lengths[prev] - 6, 4)
        if np.any(value_end >= len(data)):
            return None
        start = value_end + (_vlong_sizes(buf, value_end) if memstore_ts else 0)
        todo = {int(n) for n in np.unique(suffix[left] - start - 10)} - tried
        todo = {n for n in todo if 0 <= n <= 0x7FFF}
    if np.any(lengths < 0):
        return None
    cell = suffix - lengths - 10
    value_len = _be(buf, cell + 4, 4)
    value_end = ends + value_len
    if value_len.min() < 0 or value_end.max() > len(data) or (memstore_ts and value_end.max() >= len(data)):
        return None
    end = value_end + (_vlong_sizes(buf, value_end) if memstore_ts else 0)
    if cell[0] != 0 or end[-1] != len(data) or np.any(cell[1:] != end[:-1]):
        return None
    return cell + 10, lengths, ends, value_end


def _walk_cells(data: bytes, memstore_ts: bool, offset: int) -> tuple[np.ndarray, ...]:
    starts, lengths, value_starts, value_ends = [], [], [], []
    pos, end = 0, len(data)
    unpack = struct.unpack_from
    try:
        while pos < end:
            key_len, value_len = unpack(">ii", data, pos)
            key = pos + 8
            row_len = unpack(">h", data, key)[0]
            value = key + key_len
            if not 0 <= row_len <= key_len - 12 or value_len < 0 or value + value_len > end:
                raise HudiFormatError(f"cell at {pos} of the data block at offset {offset} runs past the block")
            starts.append(key + 2)
            lengths.append(row_len)
            value_starts.append(value)
            value_ends.append(value + value_len)
            pos = value + value_len
            if memstore_ts:
                pos = _read_vlong(data, pos)[1]
    except struct.error:
        raise HudiFormatError(f"data block at offset {offset} ends inside a cell") from None
    return (np.array(starts, np.int64), np.array(lengths, np.int64), np.array(value_starts, np.int64),
            np.array(value_ends, np.int64))


def _decode_file_info(data: bytes) -> dict[bytes, bytes]:
    if data[:4] != PBUF:
        raise HudiFormatError("file info block does not start with PBUF")
    length, pos = _read_varint(data, 4)
    info = {}
    for entry in _proto_fields(data[pos:pos + length]).get(1, []):
        pair = _proto_fields(bytes(entry))
        info[bytes(pair.get(1, [b""])[0])] = bytes(pair.get(2, [b""])[0])
    return info


def _encode_file_info(info: Mapping[bytes, bytes]) -> bytes:
    entries = b"".join(_proto_bytes_field(1, _proto_bytes_field(1, k) + _proto_bytes_field(2, v))
                       for k, v in sorted(info.items()))
    return PBUF + _varint(len(entries)) + entries


# --- writer -------------------------------------------------------------------------------------

def cell_key(row: bytes) -> bytes:
    """The KeyValue key Hudi writes for record key `row`: empty family and qualifier, the latest
    timestamp, type Put."""
    return struct.pack(">h", len(row)) + row + b"\x00" + struct.pack(">qb", LATEST_TIMESTAMP, PUT)


def _as_bytes(value: bytes | str) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def write_hfile(records: Iterable[tuple[bytes | str, bytes]], file_info: Mapping[bytes | str, bytes | str],
                block_size: int = BLOCK_SIZE, compression: str = "gzip",
                meta_blocks: Mapping[bytes | str, bytes] | None = None, key_range: bool = True) -> bytes:
    """An HFile of `records` (sorted, unique keys) laid out as Hudi's HoodieAvroHFileWriter
    writes it: a data block closes once it holds `block_size` bytes, a single-level root data
    index, then `meta_blocks`, the meta index and file info (`file_info` with HBase's own entries
    and Hudi's min/max record keys added). Strings are UTF-8."""
    if compression not in CODECS:
        raise HudiFormatError(f"HFile compression {compression!r} is not supported (gzip or none)")
    codec = CODECS[compression]
    out = io.BytesIO()
    index: list[tuple[int, int, bytes]] = []
    pending: list[bytes] = []
    pending_size, first_key = 0, b""
    prev, count, key_bytes, value_bytes = -1, 0, 0, 0
    last_row: bytes | None = None
    first_row = b""
    total_uncompressed = 0

    def flush() -> None:
        nonlocal prev, pending, pending_size, total_uncompressed
        raw = b"".join(pending)
        block = encode_block(DATA, raw, codec, prev)
        prev = out.tell()
        index.append((prev, len(block), first_key))
        out.write(block)
        total_uncompressed += HEADER_SIZE + len(raw)
        pending, pending_size = [], 0

    for row, value in records:
        row, value = _as_bytes(row), bytes(value)
        if last_row is not None and row <= last_row:
            raise HudiFormatError(f"HFile keys must be sorted and unique: {row!r} after {last_row!r}")
        if len(row) > 0x7FFF:
            raise HudiFormatError(f"HFile key of {len(row)} bytes is longer than 32767")
        if pending_size >= block_size:
            flush()
        key = cell_key(row)
        if not pending:
            first_key = key
        if last_row is None:
            first_row = row
        cell = struct.pack(">ii", len(key), len(value)) + key + value + b"\x00"   # memstore timestamp 0
        pending.append(cell)
        pending_size += len(cell)
        count, key_bytes, value_bytes, last_row = count + 1, key_bytes + len(key), value_bytes + len(value), row
    if pending:
        flush()

    metas = sorted((_as_bytes(k), bytes(v)) for k, v in (meta_blocks or {}).items())
    meta_index, meta_prev = [], -1
    for name, content in metas:
        block = encode_block(META, content, codec, meta_prev)
        meta_prev = out.tell()
        meta_index.append((meta_prev, len(block), name))
        out.write(block)
        total_uncompressed += HEADER_SIZE + len(content)

    info = {_as_bytes(k): _as_bytes(v) for k, v in file_info.items()}
    info.update({KEY_VALUE_VERSION: struct.pack(">i", 1), MAX_MEMSTORE_TS: struct.pack(">q", 0),
                 AVG_KEY_LEN: struct.pack(">i", key_bytes // count if count else 0),
                 AVG_VALUE_LEN: struct.pack(">i", value_bytes // count if count else 0),
                 CREATE_TIME: struct.pack(">q", 0)})
    if key_range:
        info.setdefault(MIN_KEY, first_row)
        info.setdefault(MAX_KEY, last_row or b"")
    if last_row is not None:
        info[LAST_KEY] = cell_key(last_row)

    load_on_open = out.tell()
    root_data = _root_index(index)
    out.write(encode_block(ROOT_INDEX, root_data, codec))
    meta_data = _root_index(meta_index)
    out.write(encode_block(ROOT_INDEX, meta_data, codec, load_on_open))
    info_offset = out.tell()
    info_data = _encode_file_info(info)
    out.write(encode_block(FILE_INFO, info_data, codec))
    total_uncompressed += 2 * HEADER_SIZE + len(meta_data) + len(info_data) + TRAILER_SIZE
    trailer = Trailer(info_offset, load_on_open, len(root_data), total_uncompressed, len(index), len(meta_index),
                      count, 1, index[0][0] if index else -1, index[-1][0] if index else -1, COMPARATOR, codec)
    out.write(trailer.encode())
    return out.getvalue()


def _root_index(entries: list[tuple[int, int, bytes]]) -> bytes:
    return b"".join(struct.pack(">qi", offset, size) + _vlong(len(key)) + key for offset, size, key in entries)


# --- Hudi's metadata table ----------------------------------------------------------------------

ALL_PARTITIONS_KEY = "__all_partitions__"


def metadata_records(reader: HFileReader, schema: str | None = None,
                     cells: Iterable[tuple[bytes, bytes]] | None = None,
                     named: bool = False) -> Iterator[tuple[str, dict]]:
    """(record key, HoodieMetadataRecord) for every cell (or only `cells`, e.g. from `get_many`),
    decoded under `schema` (JSON: a log block's SCHEMA header) or the schema in the file's own file info.
    `named`: a value of a union of several records (a statistic's wrapper) as `(name, value)`,
    which writes back into the same branch."""
    if schema is None:
        raw = reader.file_info.get(SCHEMA_KEY)
        if not raw:
            raise HudiFormatError(f"{reader.source}: no Avro schema (file info has no `schema`)")
        schema = raw.decode("utf-8", "replace")
    try:
        parsed = parsed_schema(schema)
    except Exception as e:  # fastavro raises several types for a schema it cannot parse
        raise HudiFormatError(f"{reader.source}: not an Avro schema: {type(e).__name__}: {e}") from None
    for key, value in reader.records() if cells is None else cells:
        try:
            record = fastavro.schemaless_reader(io.BytesIO(value), parsed, None, return_record_name=named,
                                                return_record_name_override=named)
            if not isinstance(record, dict):
                raise TypeError("not a record")
        except Exception as e:  # fastavro raises several types for bytes that are not the schema's
            raise HudiFormatError(f"{reader.source}: the value of {key!r} is not a HoodieMetadataRecord: {e}") from None
        yield key.decode("utf-8"), record


@dataclass
class FilesListing:
    """The `files` partition merged: partition -> file name -> size, and the partitions."""
    files: dict[str, dict[str, int]]
    partitions: set[str]


def merge_files_records(records: Iterable[tuple[str, Mapping[str, Any]]]) -> FilesListing:
    """Merge `files` partition records oldest first, as Hudi's HoodieMetadataPayload combines
    them: an entry marked deleted removes the file (or, under `__all_partitions__`, the
    partition); otherwise a file's size is the largest recorded."""
    merged: dict[str, dict[str, tuple[int, bool]]] = {}
    for key, record in records:
        entries = record.get("filesystemMetadata") or {}
        current = merged.setdefault(key, {})
        for name, info in entries.items():
            if info["isDeleted"]:
                current.pop(name, None)
            else:
                old = current.get(name)
                current[name] = (max(info["size"], old[0]) if old else info["size"], False)
    partitions = set(merged.pop(ALL_PARTITIONS_KEY, {}))
    files = {p: {n: s for n, (s, _) in entries.items()} for p, entries in merged.items() if p in partitions}
    return FilesListing(files, partitions)

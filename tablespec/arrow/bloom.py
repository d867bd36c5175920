"""Reading the bloom filters Apache Hudi puts in base-file footers (`org.apache.hudi.bloomfilter`).

The BLOOM index asks each candidate file "might this key be here?" before reading keys.
Hudi stores Hadoop bloom filters, base64 of Java `DataOutput` (big-endian):

- `SIMPLE`: one Hadoop `BloomFilter`: int version (-1), int hash count, byte hash type
  (1 = Hadoop MurmurHash), int vector size in bits, then the bit vector, bit i in byte i/8
  under mask 1 << (i % 8).
- `DYNAMIC_V0` (type code in `hoodie_bloom_filter_type_code`): the same header, then
  int entries per row, int entries in the last row, int row count, and that many
  `BloomFilter`s; a key may be present if any row says so.

A key's bit positions: the UTF-8 bytes are hashed `k` times with Hadoop's MurmurHash (a
MurmurHash2 variant), each seeded with the previous result, position = |h % size|.
Checked against files Apache Hudi wrote (every key of a fixture file tests positive).
"""
from __future__ import annotations

import base64
import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tablespec.errors import HudiFormatError

FOOTER_KEY = b"org.apache.hudi.bloomfilter"
TYPE_CODE_KEY = b"hoodie_bloom_filter_type_code"
# Hudi's defaults: hoodie.index.bloom.num_entries, hoodie.index.bloom.fpp (-> 30 hashes over
# 2587966 bits) and hoodie.bloom.index.filter.dynamic.max.entries.
ENTRIES_PER_ROW = 60_000
NUM_HASHES = 30
VECTOR_SIZE = 2_587_966
MAX_ENTRIES = 100_000
_M = np.uint32(0x5BD1E995)
_HEADER = struct.Struct(">iibi")


@dataclass(frozen=True)
class BloomFilter:
    num_hashes: int
    vector_size: int
    rows: tuple[np.ndarray, ...]
    """Bit vectors (uint8, Hadoop's byte layout), one per row of a dynamic filter."""

    def might_contain(self, keys) -> np.ndarray:
        """Per key: False if the key is certainly absent from the file, True if it may be there."""
        keys = pa.array(keys, pa.string()) if not isinstance(keys, (pa.Array, pa.ChunkedArray)) else keys
        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        keys = keys.cast(pa.binary())
        result = np.zeros(len(keys), dtype=bool)
        # Filters tablespec wrote before it folded the tail as Hadoop does set other bits for keys 2 or
        # 3 bytes past a multiple of 4: such a key counts as present under either order (a false
        # positive costs a read of the file's keys; a false negative would insert a stored key again).
        for legacy in (False, True):
            for rows, positions in _key_positions(keys, self.num_hashes, self.vector_size, legacy):
                for bits in self.rows:
                    result[rows] |= np.all((bits[positions >> 3] >> (positions & 7).astype(np.uint8)) & 1 == 1,
                                           axis=1)
        return result


def parse_bloom_filter(encoded: str | bytes, type_code: str | None = "DYNAMIC_V0") -> BloomFilter:
    """Decode a footer's bloom filter; `type_code` None means SIMPLE (older Hudi files)."""
    try:
        raw = base64.b64decode(encoded)
        if type_code in (None, "SIMPLE"):
            num_hashes, size, bits, _ = _read_filter(raw, 0)
            return BloomFilter(num_hashes, size, (bits,))
        if type_code != "DYNAMIC_V0":
            raise HudiFormatError(f"unknown bloom filter type {type_code!r}")
        _, num_hashes, _, size = _check_header(raw, 0)
        _entries, _last, count = struct.unpack_from(">iii", raw, _HEADER.size)
        offset, rows = _HEADER.size + 12, []
        for _ in range(count):
            _, _, bits, offset = _read_filter(raw, offset)
            rows.append(bits)
        return BloomFilter(num_hashes, size, tuple(rows))
    except (struct.error, ValueError) as e:
        raise HudiFormatError(f"corrupt Hudi bloom filter: {e}") from e


def build_bloom_filter(keys) -> bytes:
    """A `DYNAMIC_V0` footer value (base64) holding `keys`, laid out as Hudi writes it.

    Keys fill a row of `ENTRIES_PER_ROW`, then a new row while rows * entries stay below
    `MAX_ENTRIES`; once that bound is reached keys go to the rows in turn (Hudi's bounded
    dynamic filter), which readers never notice: they test every row.
    """
    keys = pa.array(keys, pa.string()) if not isinstance(keys, (pa.Array, pa.ChunkedArray)) else keys
    keys = (keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys).cast(pa.binary())
    n = len(keys)
    full_rows = 1 + max(0, (MAX_ENTRIES - 1) // ENTRIES_PER_ROW)  # rows opened before the bound
    j = np.arange(n)
    bounded = j >= full_rows * ENTRIES_PER_ROW
    turn = np.maximum(j - full_rows * ENTRIES_PER_ROW - 1, 0) % full_rows
    row_of = np.where(bounded, turn, j // ENTRIES_PER_ROW)
    num_rows = max(1, int(row_of.max(initial=0)) + 1)
    rows = [np.zeros(VECTOR_SIZE, dtype=bool) for _ in range(num_rows)]
    for idx, positions in _key_positions(keys, NUM_HASHES, VECTOR_SIZE):
        for r in np.unique(row_of[idx]):
            rows[r][positions[row_of[idx] == r].ravel()] = True
    in_last = int((row_of == num_rows - 1).sum()) if not bounded.any() else n - (num_rows - 1) * ENTRIES_PER_ROW
    out = [_HEADER.pack(-1, NUM_HASHES, 1, VECTOR_SIZE), struct.pack(">iii", ENTRIES_PER_ROW, in_last, num_rows)]
    for bits in rows:
        out += [_HEADER.pack(-1, NUM_HASHES, 1, VECTOR_SIZE), np.packbits(bits, bitorder="little").tobytes()]
    return base64.b64encode(b"".join(out))


def read_bloom_filter(path: str, storage=None) -> BloomFilter | None:
    """The bloom filter in a base file's footer, or None if the file has none."""
    from tablespec.hudi.io import LOCAL
    with (storage or LOCAL).open_input_file(path) as f:
        meta = pq.read_metadata(f).metadata or {}
    if FOOTER_KEY not in meta:
        return None
    code = meta.get(TYPE_CODE_KEY)
    return parse_bloom_filter(meta[FOOTER_KEY], code.decode() if code else None)


def _check_header(raw: bytes, offset: int) -> tuple[int, int, int, int]:
    version, num_hashes, hash_type, size = _HEADER.unpack_from(raw, offset)
    if version != -1 or hash_type != 1 or num_hashes <= 0 or size <= 0:
        raise HudiFormatError(f"unsupported bloom filter header (version {version}, hash type {hash_type})")
    return version, num_hashes, hash_type, size


def _read_filter(raw: bytes, offset: int) -> tuple[int, int, np.ndarray, int]:
    _, num_hashes, _, size = _check_header(raw, offset)
    start = offset + _HEADER.size
    end = start + (size + 7) // 8
    if end > len(raw):
        raise HudiFormatError("bloom filter bit vector is truncated")
    return num_hashes, size, np.frombuffer(raw, np.uint8, end - start, start), end


def _key_positions(keys: pa.BinaryArray, num_hashes: int, size: int, legacy_tail: bool = False):
    """(row indices, bit positions) per group of equally long keys; null and empty keys
    (which Hadoop refuses) are left out. `legacy_tail`: only the lengths whose tail tablespec once
    folded in the other order, with that order (see BloomFilter.might_contain)."""
    lengths = np.asarray(pc.binary_length(keys).fill_null(0), dtype=np.int64)
    offsets = np.frombuffer(keys.buffers()[1], np.int32)[keys.offset: keys.offset + len(keys) + 1].astype(np.int64)
    data_buf = keys.buffers()[2]
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    for length in np.unique(lengths[lengths > 0]):
        if legacy_tail and length % 4 < 2:
            continue
        rows = np.flatnonzero(lengths == length)
        yield rows, _bit_positions(data[offsets[rows][:, None] + np.arange(length)], num_hashes, size, legacy_tail)


def _bit_positions(matrix: np.ndarray, num_hashes: int, size: int, legacy_tail: bool = False) -> np.ndarray:
    """Hadoop HashFunction over keys of one length: (keys, num_hashes) bit positions (`legacy_tail`:
    the tail folded first-byte-unshifted, as tablespec's filters before the fix)."""
    n, length = matrix.shape
    words = length // 4
    body = matrix[:, :words * 4].astype(np.uint32).reshape(n, words, 4)
    ks = body[:, :, 0] | (body[:, :, 1] << 8) | (body[:, :, 2] << 16) | (body[:, :, 3] << 24)
    ks = ks * _M
    ks ^= ks >> 24
    ks = ks * _M
    # the tail bytes are Java (signed) bytes, sign-extended before shifting
    tail = matrix[:, words * 4:].view(np.int8).astype(np.int32).view(np.uint32)
    left = tail.shape[1]
    seed = np.zeros(n, dtype=np.uint32)
    out = np.empty((n, num_hashes), dtype=np.int64)
    for i in range(num_hashes):
        h: np.ndarray = seed ^ np.uint32(length)
        for w in range(words):
            h = (h * _M) ^ ks[:, w]
        if left:  # Hadoop's (and Hudi's) tail: the last byte unshifted, the one before << 8, ...
            for j in range(left):
                h ^= tail[:, j] << np.uint32(8 * (j if legacy_tail else left - 1 - j))
            h = h * _M
        h ^= h >> 13
        h = h * _M
        h ^= h >> 15
        seed = h
        out[:, i] = np.abs(h.view(np.int32).astype(np.int64)) % size
    return out

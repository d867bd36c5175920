"""Hudi's footer bloom filters, read and probed; checked against files Apache Hudi wrote."""
from __future__ import annotations

import base64
import struct

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tablespec.arrow.bloom import (
    ENTRIES_PER_ROW,
    _bit_positions,
    build_bloom_filter,
    parse_bloom_filter,
    read_bloom_filter,
)
from tablespec.errors import HudiFormatError


def i32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def ref_murmur(data: bytes, seed: int) -> int:
    """Hadoop's MurmurHash.hash(byte[], length, seed), transcribed scalar (Java signed bytes)."""
    m, sb, length = 0x5BD1E995, [b - 256 if b > 127 else b for b in data], len(data)
    h = i32(seed ^ length)
    for i in range(length >> 2):
        j = i << 2
        k = i32((sb[j + 3] << 24) | ((sb[j + 2] & 0xFF) << 16) | ((sb[j + 1] & 0xFF) << 8) | (sb[j] & 0xFF))
        k = i32(k * m)
        k = i32(k ^ ((k & 0xFFFFFFFF) >> 24))
        h = i32(i32(h * m) ^ i32(k * m))
    left = length & 3
    if left:  # Hadoop's tail order: data[length - 3] << 16, data[length - 2] << 8, data[length - 1]
        for back in range(left, 0, -1):
            h = i32(h ^ (sb[length - back] << (8 * (back - 1))))
        h = i32(h * m)
    h = i32(h ^ ((h & 0xFFFFFFFF) >> 13))
    h = i32(h * m)
    return i32(h ^ ((h & 0xFFFFFFFF) >> 15))


def ref_positions(key: str, k: int, size: int) -> list[int]:
    out, seed = [], 0
    for _ in range(k):
        seed = ref_murmur(key.encode(), seed)
        out.append(abs(int(np.fmod(seed, size))))
    return out


def simple_filter(keys: list[str], k: int = 5, size: int = 1000) -> str:
    """A SIMPLE (Hadoop BloomFilter) footer value built with the scalar reference."""
    bits = np.zeros((size + 7) // 8, np.uint8)
    for key in keys:
        for p in ref_positions(key, k, size):
            bits[p >> 3] |= 1 << (p & 7)
    return base64.b64encode(struct.pack(">iibi", -1, k, 1, size) + bits.tobytes()).decode()


@pytest.mark.parametrize("key", ["1", "a1", "abc", "id:1,name:Alice", "abcd", "abcde", "héllo😀x", "\x80\xff"])
def test_bit_positions_match_a_scalar_transcription_of_hadoop_murmur(key):
    got = _bit_positions(np.frombuffer(key.encode(), np.uint8)[None, :], 30, 2587966)[0].tolist()
    assert got == ref_positions(key, 30, 2587966)


def test_simple_filter_round_trip_and_negatives():
    keys = ["a", "bb", "Zürich", "😀", "order-000123"]
    bf = parse_bloom_filter(simple_filter(keys), "SIMPLE")
    assert bf.might_contain(pa.array(keys)).all()
    assert bf.might_contain(pa.array(["", None])).tolist() == [False, False]
    probes = pa.array([f"absent-{i}" for i in range(2000)])
    assert bf.might_contain(probes).mean() < 0.05


def test_corrupt_filters_raise_format_errors():
    with pytest.raises(HudiFormatError):
        parse_bloom_filter(base64.b64encode(struct.pack(">iibi", -1, 5, 1, 1000)).decode(), "SIMPLE")
    with pytest.raises(HudiFormatError):
        parse_bloom_filter(simple_filter(["a"]), "BLOCKED_V9")


@pytest.mark.fixtures
@pytest.mark.parametrize("name", ["cow_v6_nonpartitioned", "cow_v6_simplekeygen_nonhivestyle",
                                  "mor_parquet_v6_simplekeygen_nonhivestyle", "cow_v6_complexkeygen_hivestyle"])
def test_hudi_written_filters_contain_their_files_keys(real_table, name):
    files = sorted(p for p in real_table(name).rglob("*.parquet") if "__MACOSX" not in p.parts)
    probes = pa.array([f"absent-{i}" for i in range(5000)])
    checked = 0
    for f in files:
        bf = read_bloom_filter(str(f))
        assert bf is not None and bf.num_hashes == 30 and bf.vector_size == 2587966  # Hudi defaults, DYNAMIC_V0
        assert not bf.might_contain(probes).any()
        keys = pq.read_table(f, columns=["_hoodie_record_key"]).column(0)
        assert bf.might_contain(keys).all(), f.name  # keys of every length mod 4 ("id:1,name:Alice": 3)
        checked += 1
    assert checked >= 2


@pytest.mark.fixtures
def test_files_without_a_filter_give_none(real_table):
    base = real_table("cow_v6_simplekeygen_hivestyle_no_metafields")
    f = next(p for p in base.rglob("*.parquet") if "__MACOSX" not in p.parts)
    assert read_bloom_filter(str(f)) is None


@pytest.mark.fixtures
@pytest.mark.parametrize("name", ["cow_v6_nonpartitioned", "cow_v6_simplekeygen_nonhivestyle",
                                  "mor_parquet_v6_nonpartitioned"])
def test_built_filters_equal_hudis_byte_for_byte(real_table, name):
    files = sorted(p for p in real_table(name).rglob("*.parquet") if "__MACOSX" not in p.parts)
    for f in files:
        footer = pq.read_metadata(f).metadata
        keys = pq.read_table(f, columns=["_hoodie_record_key"]).column(0)
        assert build_bloom_filter(keys) == footer[b"org.apache.hudi.bloomfilter"], f.name


def test_built_filter_grows_rows_like_hudis_bounded_dynamic_filter():
    n = 2 * ENTRIES_PER_ROW + 1000
    keys = pa.array([f"k{i}" for i in range(n)])
    encoded = build_bloom_filter(keys)
    raw = base64.b64decode(encoded)
    entries, last, rows = struct.unpack_from(">iii", raw, 13)
    assert (entries, rows, last) == (ENTRIES_PER_ROW, 2, n - ENTRIES_PER_ROW)
    bf = parse_bloom_filter(encoded)
    assert bf.might_contain(keys).all()
    assert bf.might_contain(pa.array([f"x{i}" for i in range(5000)])).mean() < 0.01
    empty = parse_bloom_filter(build_bloom_filter(pa.array([], pa.string())))
    assert len(empty.rows) == 1 and not empty.rows[0].any()


def test_filters_written_with_the_old_tail_order_still_hold_their_keys():
    """tablespec once folded a key's last 2-3 bytes in the usual MurmurHash order, not Hadoop's; its
    probes accept either, so a file written then is never skipped for a key it holds."""
    keys = ["a1", "abc", "k0100x", "id:1,name:Alice", "abcd", "a"]
    size, k = 1000, 5
    bits = np.zeros(size, dtype=bool)
    for key in keys:
        bits[_bit_positions(np.frombuffer(key.encode(), np.uint8)[None, :], k, size, legacy_tail=True)[0]] = True
    encoded = base64.b64encode(struct.pack(">iibi", -1, k, 1, size) + np.packbits(bits, bitorder="little").tobytes())
    bf = parse_bloom_filter(encoded.decode(), "SIMPLE")
    assert bf.might_contain(pa.array(keys)).all()
    # the old order really differs for those lengths: Hadoop's order alone misses some of them
    hadoop = [bits[_bit_positions(np.frombuffer(key.encode(), np.uint8)[None, :], k, size)[0]].all() for key in keys]
    assert not all(hadoop)

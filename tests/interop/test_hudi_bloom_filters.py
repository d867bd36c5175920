"""Bloom filters agree with Apache Hudi's own BloomFilter both ways, for keys of every length
mod 4 (Hadoop's MurmurHash folds the last 1-3 bytes in its own order)."""
from __future__ import annotations

import pyarrow as pa

from tablespec.arrow.bloom import build_bloom_filter, parse_bloom_filter

KEYS = ["a", "a1", "abc", "abcd", "abcde", "o00", "k0100x", "id:1,name:Alice", "héllo😀x", "\x80\xff"]


def test_hudi_finds_every_key_in_tablespecs_filters_and_tablespec_in_hudis(hudi):
    factory = hudi._jvm.org.apache.hudi.common.bloom.BloomFilterFactory
    theirs = factory.fromString(build_bloom_filter(pa.array(KEYS)).decode(), "DYNAMIC_V0")
    assert [k for k in KEYS if not theirs.mightContain(k)] == []

    hudis = factory.createBloomFilter(60000, 0.000000001, 100000, "DYNAMIC_V0")
    for key in KEYS:
        hudis.add(key)
    ours = parse_bloom_filter(hudis.serializeToString(), "DYNAMIC_V0")
    assert ours.might_contain(pa.array(KEYS)).all()
    assert not ours.might_contain(pa.array([f"absent-{i}" for i in range(2000)])).any()

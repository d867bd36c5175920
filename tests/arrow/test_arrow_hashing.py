"""Java String/List hashing and Hudi's bucket choice, checked against a scalar reference."""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from tablespec.hudi.hashing import (
    bucket_ids,
    bucket_ids_for_record_keys,
    hash_values_from_record_keys,
    java_list_hash,
    java_list_hash_of_lists,
    java_string_hash,
)

INT_MIN = -(1 << 31)


def ref_string_hash(s: str | None) -> int:
    """Java String.hashCode(): h = 31*h + c over UTF-16 code units, 32-bit two's complement."""
    if s is None:
        return 0
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def ref_list_hash(values: list[str | None]) -> int:
    """Java List.hashCode(): fold from 1, h = 31*h + (e == null ? 0 : e.hashCode())."""
    h = 1
    for v in values:
        h = (31 * h + ref_string_hash(v)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def ref_bucket(values: list[str | None], n: int) -> int:
    return (ref_list_hash(values) & 0x7FFFFFFF) % n


def ref_hudi_hash_keys(key: str, fields: list[str]) -> list[str | None]:
    """Hudi 0.14/0.15 KeyGenUtils.extractRecordKeysByFields, written from its Java semantics."""
    parts = key.split(",")
    if len(parts) > 1:  # Java String.split drops trailing empty strings
        while parts and parts[-1] == "":
            parts.pop()
    out = []
    for p in parts:
        name, sep, value = p.partition(":")
        if not sep:
            out.append(p)
        elif name in fields:
            out.append(None if value == "__null__" else "" if value == "__empty__" else value)
    return out


def random_string(rng: random.Random) -> str:
    alphabet = ["a", "Z", "0", " ", "é", "ß", "日", "本", "\u0000", "\uffff", "\ue000", "😀", "𝄞", "🇩🇪", ",", ":"]
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))


def test_java_string_hash_known_java_values():
    got = java_string_hash(pa.array(["hello", "polygenelubricants", "", "a"]))
    assert got.dtype == np.int32
    assert got.tolist() == [99162322, INT_MIN, 0, 97]


def test_java_list_hash_known_java_values():
    assert java_list_hash([pa.array(["hello"])]).tolist() == [31 + 99162322]
    assert java_list_hash([pa.array(["a"]), pa.array(["b"])]).tolist() == [31 * (31 + 97) + 98]


@pytest.mark.parametrize("value", ["Zürich", "日本語", "😀", "a😀b", "🇩🇪", "𝄞 clef", "\ue000\U00010000", "\uffff",
                                   "", " ", "polygenelubricants", "x" * 1000])
def test_java_string_hash_matches_reference_for_non_ascii_and_surrogates(value):
    assert java_string_hash(pa.array([value])).tolist() == [ref_string_hash(value)]


def test_java_string_hash_null_is_zero_like_a_null_list_element():
    assert java_string_hash(pa.array(["a", None, "b"])).tolist() == [97, 0, 98]
    assert java_list_hash([pa.array([None], pa.string())]).tolist() == [ref_list_hash([None])] == [31]


def test_java_string_hash_negative_values_are_twos_complement():
    values = ["polygenelubricants", "GydZG_", "DESIGNING WORKHOUSES", "zzzzzzzz"]
    got = java_string_hash(pa.array(values)).tolist()
    assert got == [ref_string_hash(v) for v in values]
    assert any(h < 0 for h in got)


def test_java_string_hash_random_batch_matches_reference():
    rng = random.Random(42)
    values = [random_string(rng) if rng.random() > 0.05 else None for _ in range(20_000)]
    assert java_string_hash(pa.array(values)).tolist() == [ref_string_hash(v) for v in values]


def test_java_string_hash_accepts_sliced_large_and_chunked_arrays():
    values = ["hello", "Zürich", None, "😀", "abc"]
    expected = [ref_string_hash(v) for v in values]
    arr = pa.array(["pad"] + values + ["pad"])
    assert java_string_hash(arr.slice(1, 5)).tolist() == expected
    assert java_string_hash(pa.array(values, pa.large_string())).tolist() == expected
    chunked = pa.chunked_array([pa.array(values[:2]), pa.array(values[2:])])
    assert java_string_hash(chunked).tolist() == expected
    assert java_string_hash(pa.array(values).dictionary_encode()).tolist() == expected


def test_java_string_hash_ignores_junk_bytes_in_null_slots():
    # Arrow leaves the bytes behind a null slot unspecified; here they are invalid UTF-8.
    data = "Zürich".encode() + b"\xff\xfe" + "😀".encode()
    offsets = np.array([0, 7, 9, 13], np.int32)
    validity = pa.array([True, False, True]).buffers()[1]
    arr = pa.Array.from_buffers(pa.string(), 3, [validity, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data)])
    assert java_string_hash(arr).tolist() == [ref_string_hash("Zürich"), 0, ref_string_hash("😀")]


def test_java_string_hash_spans_several_internal_slices(monkeypatch):
    import tablespec.hudi.hashing as hashing
    monkeypatch.setattr(hashing, "_SLICE_BYTES", 64)
    rng = random.Random(3)
    values = [random_string(rng) for _ in range(500)] + ["long " * 40]
    assert java_string_hash(pa.array(values)).tolist() == [ref_string_hash(v) for v in values]


def test_bucket_ids_random_multi_column_batch_matches_reference():
    rng = random.Random(7)
    a = [random_string(rng) for _ in range(5000)]
    b = [random_string(rng) if rng.random() > 0.1 else None for _ in range(5000)]
    for n in (1, 7, 64, 256):
        got = bucket_ids([pa.array(a), pa.array(b)], n)
        assert got.tolist() == [ref_bucket([x, y], n) for x, y in zip(a, b)]


def test_bucket_ids_uses_non_negative_mask_not_abs():
    # hashCode of ["polygenelubricants"] = 31 + MIN_VALUE: masking keeps the low 31 bits.
    assert bucket_ids([pa.array(["polygenelubricants"])], 1000).tolist() == [((31 + INT_MIN) & 0x7FFFFFFF) % 1000]


@pytest.mark.parametrize("key, fields, expected", [
    ("abc", ["id"], ["abc"]),                                  # simple key: [key]
    ("id:1,name:Alice", ["id"], ["1"]),
    ("id:1,name:Alice", ["id", "name"], ["1", "Alice"]),
    ("id:1,name:Alice", ["name", "id"], ["1", "Alice"]),       # record-key order, not hash-field order
    ("id:__null__,name:__empty__", ["id", "name"], [None, ""]),
    ("f1:abc,f2:bcd,efg", ["f1", "f2"], ["abc", "bcd", "efg"]),  # a part without ':' is kept
    ("2024-10-24 10:11:11.234", ["ts"], []),                   # ':' in a simple key: Hudi hashes []
    ("a,b,,", ["x"], ["a", "b"]),                              # trailing empty parts dropped
    ("", ["x"], [""]),
    ("n:a:b", ["n"], ["a:b"]),                                 # split on the first ':'
])
def test_hash_values_from_record_keys_follow_hudi(key, fields, expected):
    assert hash_values_from_record_keys(pa.array([key]), fields).to_pylist() == [expected]
    assert ref_hudi_hash_keys(key, fields) == expected


def test_bucket_ids_for_record_keys_random_complex_keys_match_reference():
    rng = random.Random(11)
    keys = []
    for _ in range(3000):
        v1 = random_string(rng) or "__empty__"
        v2 = rng.choice(["__null__", random_string(rng) or "__empty__"])
        keys.append(f"id:{v1},name:{v2}")
    keys += ["plainkey", "😀", "x,y"]
    for fields in (["id"], ["name"], ["id", "name"]):
        got = bucket_ids_for_record_keys(pa.array(keys), fields, 64)
        assert got.tolist() == [ref_bucket(ref_hudi_hash_keys(k, fields), 64) for k in keys]


def test_bucket_ids_for_simple_record_keys_equal_bucket_of_the_key():
    keys = pa.array([str(i) for i in range(1000)] + ["Zürich", "😀"])
    assert bucket_ids_for_record_keys(keys, ["id"], 16).tolist() == [ref_bucket([k], 16) for k in keys.to_pylist()]


def test_java_list_hash_of_lists_variable_lengths():
    lists = [["hello"], [], [None], ["a", "b"], ["😀", None, ""]]
    assert java_list_hash_of_lists(pa.array(lists)).tolist() == [ref_list_hash(v) for v in lists]
    assert java_list_hash_of_lists(pa.array(lists).slice(2, 3)).tolist() == [ref_list_hash(v) for v in lists[2:]]

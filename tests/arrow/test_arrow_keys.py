"""Record keys and partition paths as Hudi writes them: fixtures as evidence, Java rules for the rest."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tablespec.arrow.keys import (
    auto_keys,
    escape_path_name,
    partition_paths,
    record_keys,
    value_strings,
)
from tablespec.errors import TablespecError

UTC = dt.UTC


def read_fixture_rows(base) -> pa.Table:
    files = sorted(p for p in base.rglob("*.parquet") if "__MACOSX" not in p.parts)
    return pa.concat_tables([pq.read_table(f) for f in files], promote_options="default")


@pytest.mark.fixtures
@pytest.mark.parametrize("name, key_fields, complex, part_fields, hive", [
    ("cow_v6_simplekeygen_nonhivestyle", ["id"], False, ["byteField"], False),
    ("cow_v6_complexkeygen_hivestyle", ["id", "name"], True, ["byteField", "shortField"], True),
    ("cow_v6_nonpartitioned", ["id"], False, [], False),
    ("mor_parquet_v6_simplekeygen_nonhivestyle", ["id"], False, ["byteField"], False),
])
def test_keys_and_partition_paths_equal_the_meta_columns_hudi_wrote(real_table, name, key_fields, complex,
                                                                    part_fields, hive):
    rows = read_fixture_rows(real_table(name))
    keys = record_keys(rows, key_fields, complex)
    assert not keys.invalid.any()
    assert keys.keys.to_pylist() == rows.column("_hoodie_record_key").to_pylist()
    paths = partition_paths(rows, part_fields, hive_style=hive)
    assert paths.to_pylist() == rows.column("_hoodie_partition_path").to_pylist()


def test_value_strings_follow_java_to_string_of_the_avro_value():
    cases = [
        (pa.array([1, -2, None], pa.int8()), ["1", "-2", None]),
        (pa.array([300, -32768], pa.int16()), ["300", "-32768"]),
        (pa.array([2**63 - 1, -(2**63)], pa.int64()), ["9223372036854775807", "-9223372036854775808"]),
        (pa.array([True, False]), ["true", "false"]),
        (pa.array([dt.date(2023, 4, 1), dt.date(1, 1, 1)]), ["2023-04-01", "0001-01-01"]),
        # timestamps: the Avro long (micros since epoch), whatever the session time zone
        (pa.array([dt.datetime(2023, 4, 1, 17, 1, tzinfo=UTC)], pa.timestamp("us", "UTC")), ["1680368460000000"]),
        (pa.array([dt.datetime(2023, 4, 1, 17, 1, tzinfo=UTC)]).cast(pa.timestamp("us", "America/Chicago")),
         ["1680368460000000"]),
        (pa.array([0, -1], pa.timestamp("ms")), ["0", "-1000"]),
        # decimals: BigDecimal.toString() — plain, or scientific below an adjusted exponent of -6
        (pa.array([Decimal("12345.67890"), Decimal("-1.50000"), Decimal("0.00000")], pa.decimal128(10, 5)),
         ["12345.67890", "-1.50000", "0.00000"]),
        (pa.array([Decimal("0.0000000100"), Decimal("0E-10"), Decimal("-0.0000001000"), Decimal("0.0000010000")],
                  pa.decimal128(20, 10)),
         ["1.00E-8", "0E-10", "-1.000E-7", "0.0000010000"]),
        (pa.array(["x", ""], pa.large_string()), ["x", ""]),
        (pa.array(["a", "b", "a"]).dictionary_encode(), ["a", "b", "a"]),
    ]
    for arr, expected in cases:
        assert value_strings(arr).to_pylist() == expected, arr.type


@pytest.mark.parametrize("arr", [pa.array([1.5]), pa.array([1.5], pa.float32()), pa.array([b"x"]),
                                 pa.array([[1]]), pa.array([{"a": 1}])])
def test_value_strings_refuse_types_without_a_reproducible_java_string(arr):
    with pytest.raises(TablespecError, match="cannot be a key or partition field"):
        value_strings(arr, "f")


def test_simple_record_keys_mark_null_and_empty_rows_invalid():
    t = pa.table({"id": pa.array(["a", None, "", "b"])})
    keys = record_keys(t, ["id"], complex=False)
    assert keys.invalid.tolist() == [False, True, True, False]
    assert keys.keys.to_pylist() == ["a", None, None, "b"]


def test_complex_record_keys_use_placeholders_and_refuse_all_missing():
    t = pa.table({"id": pa.array([1, None, 2, None, None], pa.int32()), "name": ["Alice", "x", "", "", None]})
    keys = record_keys(t, ["id", "name"], complex=True)
    assert keys.keys.to_pylist() == ["id:1,name:Alice", "id:__null__,name:x", "id:2,name:__empty__", None, None]
    assert keys.invalid.tolist() == [False, False, False, True, True]


def test_complex_record_key_with_one_field_keeps_the_field_name():
    keys = record_keys(pa.table({"id": [1, 2]}), ["id"], complex=True)
    assert keys.keys.to_pylist() == ["id:1", "id:2"]


def test_record_keys_reach_into_structs():
    t = pa.table({"s": pa.array([{"k": "a"}, None, {"k": None}], pa.struct([("k", pa.string())]))})
    assert record_keys(t, ["s.k"], complex=False).invalid.tolist() == [False, True, True]
    with pytest.raises(TablespecError, match="not a column"):
        record_keys(t, ["s.nope"], complex=False)


def test_partition_paths_hive_and_plain_with_default_partition():
    t = pa.table({"d": pa.array([dt.date(2024, 1, 5), None]), "c": ["NL", ""]})
    assert partition_paths(t, ["d", "c"], hive_style=True).to_pylist() == [
        "d=2024-01-05/c=NL", "d=__HIVE_DEFAULT_PARTITION__/c=__HIVE_DEFAULT_PARTITION__"]
    assert partition_paths(t, ["c"], hive_style=False).to_pylist() == ["NL", "__HIVE_DEFAULT_PARTITION__"]
    assert partition_paths(t, [], hive_style=True).to_pylist() == ["", ""]


def test_partition_paths_url_encode_escapes_like_hive():
    t = pa.table({"p": ["a/b", "100%", "x:y=z", "é ü", "tab\there", "{[^]}", "ok"]})
    assert partition_paths(t, ["p"], hive_style=True, url_encode=True).to_pylist() == [
        "p=a%2Fb", "p=100%25", "p=x%3Ay%3Dz", "p=é ü", "p=tab%09here", "p=%7B%5B%5E%5D}", "p=ok"]  # Hive leaves } alone
    assert partition_paths(t, ["p"], hive_style=False).to_pylist()[0] == "a/b"  # not encoded: a nested dir


def test_escape_path_name_matches_a_scalar_reference():
    escaped = set(range(0x20)) | {ord(c) for c in "\"#%'*/:=?\\\x7f{[]^"}

    def ref(s):
        return "".join(f"%{ord(c):02X}" if ord(c) in escaped else c for c in s)

    values = ["".join(chr(c) for c in range(0, 130)), "%%", "😀/", ""]
    assert escape_path_name(pa.array(values)).to_pylist() == [ref(v) for v in values]


def test_partition_paths_refuse_traversal_segments():
    with pytest.raises(TablespecError, match="'..' path segment"):
        partition_paths(pa.table({"p": ["ok", ".."]}), ["p"], hive_style=False)
    # hive style or encoded, '..' is not a segment of its own
    assert partition_paths(pa.table({"p": [".."]}), ["p"], hive_style=True).to_pylist() == ["p=.."]


def test_auto_keys_are_instant_partition_row():
    keys = auto_keys("20261121093000123", 7, 3, start_row=10)
    assert keys.to_pylist() == ["20261121093000123_7_10", "20261121093000123_7_11", "20261121093000123_7_12"]
    assert len(auto_keys("20261121093000123", 0, 0)) == 0


def test_auto_keys_are_deterministic_and_unique_across_partitions():
    a = [auto_keys("20260101000000000", p, 1000) for p in range(4)]
    b = [auto_keys("20260101000000000", p, 1000) for p in range(4)]
    assert a == b
    all_keys = pa.concat_arrays(a).to_pylist()
    assert len(set(all_keys)) == len(all_keys)
    assert np.all(np.asarray([len(k) for k in all_keys]) > 0)

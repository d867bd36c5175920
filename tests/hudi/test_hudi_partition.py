import pytest

from tablespec.errors import HudiFormatError
from tablespec.hudi.formats.partition import (
    DEFAULT_PARTITION,
    discover_partitions,
    escape_partition_value,
    parse_partition_path,
    partition_path,
    read_partition_metadata,
    unescape_partition_value,
    write_partition_metadata,
)
from tablespec.hudi.io import LocalStorage

ST = LocalStorage()
EXPECTED_PARTITIONS = {
    "cow_v6_complexkeygen_hivestyle": ["byteField=10/shortField=300", "byteField=20/shortField=100",
                                       "byteField=30/shortField=100"],
    "cow_v6_empty": [],
    "cow_v6_nonpartitioned": [""],
    "cow_v6_simplekeygen_hivestyle_no_metafields": ["byteField=10", "byteField=20", "byteField=30"],
    "cow_v6_simplekeygen_nonhivestyle": ["10", "20", "30"],
    "mor_parquet_v6_nonpartitioned": [""],
    "mor_parquet_v6_simplekeygen_nonhivestyle": ["10", "20", "30"],
}


def test_discover_partitions_of_every_fixture(fixture_table, any_name):
    assert discover_partitions(ST, str(fixture_table(any_name))) == EXPECTED_PARTITIONS[any_name]


def test_fixture_partition_metadata(fixture_table):
    base = str(fixture_table("cow_v6_complexkeygen_hivestyle"))
    assert read_partition_metadata(ST, base, "byteField=10/shortField=300") == {
        "commitTime": "20240418173213674", "partitionDepth": "2"}
    base = str(fixture_table("cow_v6_nonpartitioned"))
    assert read_partition_metadata(ST, base, "")["partitionDepth"] == "0"


def test_write_partition_metadata_once(tmp_path):
    base = str(tmp_path)
    assert write_partition_metadata(ST, base, "a=1/b=2", "20240101000000001") is True
    assert write_partition_metadata(ST, base, "a=1/b=2", "20240101000000002") is False
    assert read_partition_metadata(ST, base, "a=1/b=2") == {"commitTime": "20240101000000001", "partitionDepth": "2"}
    text = (tmp_path / "a=1/b=2/.hoodie_partition_metadata").read_text().splitlines()
    assert text[0] == "#partition metadata" and text[2:] == ["commitTime=20240101000000001", "partitionDepth=2"]
    with pytest.raises(HudiFormatError, match="does not exist"):
        read_partition_metadata(ST, base, "nope")


def test_discover_skips_hidden_dirs_and_does_not_descend_into_partitions(tmp_path):
    base = str(tmp_path)
    for p in ("x=1", "x=2/nested", ".hidden", ".hoodie"):
        write_partition_metadata(ST, base, p, "20240101000000001")
    (tmp_path / "x=1/sub").mkdir()
    write_partition_metadata(ST, str(tmp_path / "x=1"), "sub", "20240101000000001")
    (tmp_path / "empty").mkdir()
    (tmp_path / "y=1").mkdir()
    (tmp_path / "y=1/.hoodie_partition_metadata.parquet").write_bytes(b"")
    assert discover_partitions(ST, base) == ["x=1", "x=2/nested", "y=1"]
    assert discover_partitions(ST, str(tmp_path / "missing")) == []


@pytest.mark.parametrize("values,hive,encode,expected", [
    ({"d": "2024-01-01", "r": "eu"}, True, False, "d=2024-01-01/r=eu"),
    (["2024-01-01", "eu"], False, False, "2024-01-01/eu"),
    ({"d": None, "r": ""}, True, False, f"d={DEFAULT_PARTITION}/r={DEFAULT_PARTITION}"),
    ({"d": "a/b:c", "r": "100%"}, False, True, "a%2Fb%3Ac/100%25"),
    ({"d": "a/b", "r": 10}, True, True, "d=a%2Fb/r=10"),
    ({"d": True, "r": "x y"}, False, False, "true/x y"),
])
def test_partition_path(values, hive, encode, expected):
    assert partition_path(values, ["d", "r"], hive, encode) == expected
    parsed = parse_partition_path(expected, ["d", "r"], hive, encode)
    original = values if isinstance(values, dict) else dict(zip(["d", "r"], values))
    assert parsed == {k: (str(v).lower() if isinstance(v, bool) else str(v)) if v not in (None, "") else None
                      for k, v in original.items()}


def test_non_partitioned_path_is_empty():
    assert partition_path({}, [], True) == ""
    assert parse_partition_path("", [], True) == {}


def test_partition_path_errors():
    with pytest.raises(HudiFormatError, match="no value for partition field"):
        partition_path({"d": 1}, ["d", "r"], True)
    with pytest.raises(HudiFormatError, match="1 partition value"):
        partition_path([1], ["d", "r"], True)
    with pytest.raises(HudiFormatError, match="expected r=<value>"):
        parse_partition_path("d=1/x=2", ["d", "r"], True)
    with pytest.raises(HudiFormatError, match="level"):
        parse_partition_path("1", ["d", "r"], False)


def test_escape_char_set_matches_hudi():
    special = "\"#%'*/:=?\\\x7f{[]^\x01\n"
    assert escape_partition_value(special) == "%22%23%25%27%2A%2F%3A%3D%3F%5C%7F%7B%5B%5D%5E%01%0A"
    assert escape_partition_value("a-b_c.d e+f,g~ü") == "a-b_c.d e+f,g~ü"
    assert unescape_partition_value(escape_partition_value(special + "ok")) == special + "ok"
    assert unescape_partition_value("100%") == "100%" and unescape_partition_value("%zz%4") == "%zz%4"

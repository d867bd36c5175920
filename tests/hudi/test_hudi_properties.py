import json
import zlib
from datetime import UTC, datetime

import pytest

from tablespec.errors import HudiFormatError
from tablespec.hudi.formats.properties import format_properties, parse_properties, table_checksum

CHECKSUMS = {
    "cow_v6_complexkeygen_hivestyle": 281415413,
    "cow_v6_empty": 1980710965,
    "cow_v6_nonpartitioned": 1363530505,
    "cow_v6_simplekeygen_hivestyle_no_metafields": 3965929480,
    "cow_v6_simplekeygen_nonhivestyle": 616688896,
    "mor_parquet_v6_nonpartitioned": 1363530505,
    "mor_parquet_v6_simplekeygen_nonhivestyle": 616688896,
}


def _props(base):
    return parse_properties((base / ".hoodie/hoodie.properties").read_bytes().decode("latin-1"))


def test_parse_comments_separators_and_whitespace():
    text = "# comment\n! also comment\n\n  a=1\nb : 2\nc 3\nd\ne=\n f\t=\t x y \n"
    assert parse_properties(text) == {"a": "1", "b": "2", "c": "3", "d": "", "e": "", "f": "x y "}


def test_parse_escapes_and_unicode():
    text = r"k\:1\=x\ y=v\:a\=b\ c\\d\te" + "\n" + r"u=\u00e9\u20AC\uD83D\uDE00" + "\n" + r"#x=\u0041"
    assert parse_properties(text) == {"k:1=x y": "v:a=b c\\d\te", "u": "é€😀"}


def test_parse_line_continuations():
    text = "a=one \\\n    two\\\n three\nb=x\\\\\nc=y\\\r\n  z\nd=end\\"
    assert parse_properties(text) == {"a": "one twothree", "b": "x\\", "c": "yz", "d": "end"}


def test_parse_comment_lines_do_not_continue_and_last_duplicate_wins():
    assert parse_properties("#a\\\nb=1\nb=2\n") == {"b": "2"}


def test_parse_malformed_unicode_escape_is_a_format_error():
    with pytest.raises(HudiFormatError, match="uXXXX"):
        parse_properties("a=\\u12G4\n")


def test_format_escapes_like_java_properties_store():
    text = format_properties({"a key:=#!": " lead:=#! mid é\n€😀"}, (), datetime(2024, 4, 18, tzinfo=UTC))
    lines = text.splitlines()
    assert lines[0] == "#Thu Apr 18 00:00:00 UTC 2024"
    assert lines[1] == r"a\ key\:\=\#\!=\ lead\:\=\#\! mid \u00E9\n\u20AC\uD83D\uDE00"


def test_format_sorts_keys_and_writes_comment_header():
    text = format_properties({"b": "2", "a": "1"}, ("Updated by tablespec", "x: y"))
    lines = text.splitlines()
    assert lines[0] == "#Updated by tablespec" and lines[1] == "#x: y" and lines[2].startswith("#")
    assert lines[3:] == ["a=1", "b=2"] and text.endswith("\n")


@pytest.mark.parametrize("props", [
    {"hoodie.table.create.schema": json.dumps({"type": "record", "fields": [{"name": "a b", "type": "int"}]})},
    {" spaced key ": "  spaced value  ", "tabs\t": "\tv\t", "eq=": "=v", "colon:": ":", "bang!": "!#"},
    {"unicode ключ": "значение ✓ 😀", "empty": "", "backslash\\": "\\u0041 \\"},
    {"cr\r\nlf": "a\r\nb\fc"},
])
def test_properties_round_trip(props):
    text = format_properties(props)
    assert text.isascii()
    assert parse_properties(text) == props


def test_fixture_properties_parse_unescaped(fixture_table, any_name):
    props = _props(fixture_table(any_name))
    schema = json.loads(props["hoodie.table.create.schema"])
    assert schema["type"] == "record"
    assert props["hoodie.table.version"] == "6"
    assert parse_properties(format_properties(props)) == props


def test_checksum_matches_every_fixture(fixture_table, any_name):
    props = _props(fixture_table(any_name))
    expected = CHECKSUMS[any_name]
    assert int(props["hoodie.table.checksum"]) == expected
    assert table_checksum(props["hoodie.table.name"], props.get("hoodie.database.name")) == expected


def test_checksum_without_database_is_crc_of_dot_and_name():
    # Hudi formats "%s.%s" with the database defaulting to "".
    assert table_checksum("orders") == zlib.crc32(b".orders")
    assert table_checksum("orders", "") == table_checksum("orders")
    assert table_checksum("orders", "sales") == zlib.crc32(b"sales.orders")

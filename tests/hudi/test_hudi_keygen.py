"""Key generators: which ones tablespec expresses or refuses, and Joda-Time patterns."""
from __future__ import annotations

import pyarrow as pa
import pytest

from tablespec.hudi import joda, keygen

# Every key generator class Apache Hudi 0.14/0.15 ships that a table's hoodie.properties may name
# (hoodie.table.keygenerator.class), and whether tablespec expresses it.
HUDI_KEY_GENERATORS = {
    "org.apache.hudi.keygen.SimpleKeyGenerator": True,
    "org.apache.hudi.keygen.SimpleAvroKeyGenerator": True,
    "org.apache.hudi.keygen.ComplexKeyGenerator": True,
    "org.apache.hudi.keygen.ComplexAvroKeyGenerator": True,
    "org.apache.hudi.keygen.NonpartitionedKeyGenerator": True,
    "org.apache.hudi.keygen.NonpartitionedAvroKeyGenerator": True,
    "org.apache.hudi.keygen.TimestampBasedKeyGenerator": True,
    "org.apache.hudi.keygen.TimestampBasedAvroKeyGenerator": True,
    "org.apache.hudi.keygen.CustomKeyGenerator": True,
    "org.apache.hudi.keygen.CustomAvroKeyGenerator": True,
    "org.apache.hudi.keygen.GlobalDeleteKeyGenerator": False,
    "org.apache.hudi.keygen.GlobalAvroDeleteKeyGenerator": False,
    "org.apache.hudi.keygen.AutoRecordGenWrapperKeyGenerator": False,
    "org.apache.hudi.keygen.AutoRecordGenWrapperAvroKeyGenerator": False,
    "org.apache.spark.sql.hudi.command.SqlKeyGenerator": False,
    "org.apache.spark.sql.hudi.command.UuidKeyGenerator": False,
    "com.example.MyKeyGenerator": False,
}


@pytest.mark.parametrize("name, expressed", sorted(HUDI_KEY_GENERATORS.items()))
def test_every_hudi_key_generator_is_expressed_or_refused_by_name(name, expressed):
    why = keygen.refusal(name)
    if expressed:
        assert why is None and keygen.canonical_class(name) in keygen.EXPRESSED
    else:
        assert why is not None and name in why


def test_generator_follows_the_layout():
    assert keygen.key_generator_class(["id"], ["day"], None) == keygen.SIMPLE
    assert keygen.key_generator_class(["id"], [], None) == keygen.NONPARTITIONED
    assert keygen.key_generator_class(["id", "x"], ["day"], None) == keygen.COMPLEX
    assert keygen.key_generator_class(["id"], ["ts"], "ts") == keygen.TIMESTAMP_BASED
    assert keygen.key_generator_class([], ["ts"], "ts") == keygen.TIMESTAMP_BASED
    assert keygen.key_generator_class(["id", "x"], ["ts"], "ts") == keygen.CUSTOM
    assert keygen.key_generator_class(["id"], ["region", "ts"], "ts") == keygen.CUSTOM
    # CustomKeyGenerator keys a single field like SimpleKeyGenerator, ComplexKeyGenerator does not
    assert not keygen.complex_record_key(keygen.CUSTOM, ["id"], ["region", "ts"])
    assert keygen.complex_record_key(keygen.COMPLEX, ["id"], ["region", "day"])


@pytest.mark.parametrize("pattern, expected", [   # 2024-03-05 07:08:09.123 UTC, printed as Joda-Time does
    ("yyyy/MM/dd", "2024/03/05"), ("yyyy-MM-dd-HH", "2024-03-05-07"), ("yyyyMMdd", "20240305"),
    ("yyyy-MM-dd HH:mm:ss", "2024-03-05 07:08:09"), ("'dt='yyyy-MM-dd", "dt=2024-03-05"), ("yy_MM", "24_03"),
    ("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2024-03-05T07:08:09.123+0000"), ("ss.S|SSSSS", "09.1|12300"),
    ("ZZ ZZZ", "+00:00 UTC"), ("EEE EEEE MMM MMMM", "Tue Tuesday Mar March"), ("h a D M/d", "7 AM 65 3/5"),
    ("'o''clock' HH", "o'clock 07"), ("''HH", "'07"),
])
def test_joda_patterns(pattern, expected):
    assert joda.print_instants(pa.array([1709622489123]), "UTC", pattern).to_pylist() == [expected]


@pytest.mark.parametrize("text, patterns, millis, zone", [
    ("2024-03-05 07:08:09", ["yyyy-MM-dd HH:mm:ss"], 1709622489000, None),
    ("2024-03-05T07:08:09.1Z", ["yyyy-MM-dd'T'HH:mm:ss.SSSZ"], 1709622489100, "UTC"),
    ("2024-03-05T12:38:09.123+0530", ["yyyy-MM-dd'T'HH:mm:ss.SSSZ"], 1709622489123, "+05:30"),
    ("2024-03-05T02:08:09-05:00", ["yyyy-MM-dd'T'HH:mm:ssZZ"], 1709622489000, "-05:00"),
    ("2024-03-05 08:08:09 Europe/Paris", ["yyyy-MM-dd HH:mm:ss ZZZ"], 1709622489000, "Europe/Paris"),
    ("20240305", ["yyyy-MM-dd", "yyyyMMdd"], 1709596800000, None),      # the first pattern that reads it all
    ("Tue, 5 mar 2024 7:08 AM", ["EEE, d MMM yyyy h:mm a"], 1709622480000, None),
])
def test_joda_parsing(text, patterns, millis, zone):
    assert joda.parse(text, patterns, "UTC") == joda.Parsed(millis, zone)


@pytest.mark.parametrize("pattern, message", [
    ("yyyy/zzz", "'zzz'"), ("", "empty"), ("yyyy'", "unterminated"), ("CC yyyy", "'CC'"),
])
def test_unsupported_joda_patterns_are_named(pattern, message):
    with pytest.raises(ValueError, match=message):
        joda.check(pattern)


def test_timestamp_field_of_custom_tables():
    props = {"hoodie.table.keygenerator.class": keygen.CUSTOM, "hoodie.table.partition.fields": "r,ms"}
    field, why = keygen.timestamp_field_of(props)
    assert field is None and keygen.CUSTOM_FIELDS_KEY in why and "r:SIMPLE|TIMESTAMP" in why
    props[keygen.CUSTOM_FIELDS_KEY] = "r:SIMPLE,ms:TIMESTAMP"
    assert keygen.timestamp_field_of(props) == ("ms", None)
    props = {"hoodie.table.keygenerator.class": keygen.TIMESTAMP_BASED + "x", "hoodie.table.partition.fields": "t"}
    assert keygen.timestamp_field_of(props) == (None, None)

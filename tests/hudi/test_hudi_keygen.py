"""Key generators: which ones tablespec expresses or refuses, and Joda-Time patterns."""
from __future__ import annotations

import pytest

from tablespec.hudi import keygen

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


@pytest.mark.parametrize("pattern, expected", [
    ("yyyy/MM/dd", "%Y/%m/%d"), ("yyyy-MM-dd-HH", "%Y-%m-%d-%H"), ("yyyyMMdd", "%Y%m%d"),
    ("yyyy-MM-dd HH:mm:ss", "%Y-%m-%d %H:%M:%S"), ("'dt='yyyy-MM-dd", "dt=%Y-%m-%d"), ("yy_MM", "%y_%m"),
])
def test_joda_patterns(pattern, expected):
    assert keygen.joda_to_strftime(pattern) == expected


@pytest.mark.parametrize("pattern, message", [
    ("yyyy-MM-dd EEE", "'EEE'"), ("yyyy/ww", "'ww'"), ("", "empty"), ("yyyy'", "unterminated"),
])
def test_unsupported_joda_patterns_are_named(pattern, message):
    with pytest.raises(ValueError, match=message):
        keygen.joda_to_strftime(pattern)


def test_timestamp_field_of_custom_tables():
    props = {"hoodie.table.keygenerator.class": keygen.CUSTOM, "hoodie.table.partition.fields": "r,ms"}
    field, why = keygen.timestamp_field_of(props)
    assert field is None and keygen.CUSTOM_FIELDS_KEY in why and "r:SIMPLE|TIMESTAMP" in why
    props[keygen.CUSTOM_FIELDS_KEY] = "r:SIMPLE,ms:TIMESTAMP"
    assert keygen.timestamp_field_of(props) == ("ms", None)
    props = {"hoodie.table.keygenerator.class": keygen.TIMESTAMP_BASED + "x", "hoodie.table.partition.fields": "t"}
    assert keygen.timestamp_field_of(props) == (None, None)

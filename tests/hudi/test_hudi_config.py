import hudi
import pytest

from tablespec.errors import HudiFormatError, UnsupportedTableError
from tablespec.hudi.config import (
    KNOWN_KEYS,
    TableConfig,
    ensure_supported,
    fingerprint,
    init_table,
    read_table_config,
    write_table_config,
)
from tablespec.hudi.formats.properties import format_properties, parse_properties, table_checksum
from tablespec.hudi.io import LocalStorage

ST = LocalStorage()


def _props(base):
    return parse_properties((base / ".hoodie/hoodie.properties").read_bytes().decode("latin-1"))


def _new_config(**kw) -> TableConfig:
    values = dict(name="orders", database="sales", record_key_fields=["order_id"], partition_fields=["order_date"],
                  precombine_field="updated_at", key_generator_class="org.apache.hudi.keygen.SimpleKeyGenerator",
                  hive_style_partitioning=True)
    values.update(kw)
    return TableConfig(**values)


def test_fixture_config_typed_accessors(fixture_table):
    cfg = read_table_config(ST, str(fixture_table("cow_v6_complexkeygen_hivestyle")))
    assert cfg.name == "v6_complexkeygen_hivestyle" and cfg.database == "default"
    assert cfg.table_type == "COPY_ON_WRITE" and cfg.version == 6 and cfg.timeline_layout_version == 1
    assert cfg.record_key_fields == ["id", "name"] and cfg.partition_fields == ["byteField", "shortField"]
    assert cfg.precombine_field == "longField"
    assert cfg.key_generator_class == "org.apache.hudi.keygen.ComplexKeyGenerator"
    assert cfg.hive_style_partitioning is True and cfg.url_encode_partitioning is False
    assert cfg.drop_partition_columns is False and cfg.populate_meta_fields is True
    assert cfg.create_schema.startswith('{"type":"record"')
    assert cfg.index_type is None and cfg.bucket_num is None and cfg.bucket_hash_fields == []
    assert cfg.extra == {}
    assert cfg.checksum == 281415413


def test_fixture_no_metafields_and_nonhive(fixture_table):
    assert read_table_config(ST, str(fixture_table("cow_v6_simplekeygen_hivestyle_no_metafields"))).populate_meta_fields is False
    cfg = read_table_config(ST, str(fixture_table("cow_v6_simplekeygen_nonhivestyle")))
    assert cfg.hive_style_partitioning is False and cfg.partition_fields == ["byteField"]
    cfg = read_table_config(ST, str(fixture_table("cow_v6_nonpartitioned")))
    assert cfg.partition_fields == [] and cfg.key_generator_class.endswith("NonpartitionedKeyGenerator")


def test_fixture_config_round_trips_exactly(fixture_table, any_name):
    base = fixture_table(any_name)
    props = _props(base)
    cfg = TableConfig.from_properties(props)
    assert cfg.to_properties() == props
    assert TableConfig.from_properties(cfg.to_properties()) == cfg


def test_mor_fixtures_are_recognised_and_supported(fixture_table, mor_name):
    cfg = read_table_config(ST, str(fixture_table(mor_name)))
    assert cfg.table_type == "MERGE_ON_READ"
    assert cfg.extra["hoodie.compaction.payload.class"].endswith("OverwriteWithLatestAvroPayload")
    ensure_supported(cfg)


def test_cow_fixtures_are_supported(fixture_table, cow_name):
    ensure_supported(read_table_config(ST, str(fixture_table(cow_name))))


def test_missing_table_gives_none(tmp_path):
    assert read_table_config(ST, str(tmp_path)) is None


def test_other_table_version_is_refused_naming_it(tmp_path):
    props = _new_config().to_properties() | {"hoodie.table.version": "7"}
    (tmp_path / ".hoodie").mkdir()
    (tmp_path / ".hoodie/hoodie.properties").write_text(format_properties(props))
    with pytest.raises(UnsupportedTableError, match="table version 7"):
        read_table_config(ST, str(tmp_path))
    with pytest.raises(UnsupportedTableError, match="table version 5"):
        ensure_supported(_new_config(version=5))


def test_missing_table_name_is_a_format_error():
    with pytest.raises(HudiFormatError, match="hoodie.table.name"):
        TableConfig.from_properties({"hoodie.table.version": "6"})


def test_bad_integer_is_a_format_error():
    with pytest.raises(HudiFormatError, match="hoodie.bucket.index.num.buckets: expected an integer"):
        TableConfig.from_properties({"hoodie.table.name": "t", "hoodie.bucket.index.num.buckets": "many"})


def test_unknown_keys_preserved_verbatim_and_defaults_not_added():
    props = {"hoodie.table.name": "t", "hoodie.table.version": "6", "my.key": " odd:value ", "hoodie.x": ""}
    cfg = TableConfig.from_properties(props)
    assert cfg.extra == {"my.key": " odd:value ", "hoodie.x": ""}
    assert cfg.to_properties() == props | {"hoodie.table.checksum": str(table_checksum("t"))}


def test_index_settings_use_hudi_write_config_names():
    cfg = _new_config(index_type="BUCKET", bucket_num=16, bucket_hash_fields=["order_id"])
    props = cfg.to_properties()
    assert props["hoodie.index.type"] == "BUCKET"
    assert props["hoodie.bucket.index.num.buckets"] == "16"
    assert props["hoodie.bucket.index.hash.field"] == "order_id"
    back = TableConfig.from_properties(props)
    assert (back.index_type, back.bucket_num, back.bucket_hash_fields) == ("BUCKET", 16, ["order_id"])


def test_with_updates_changes_and_recomputes_checksum():
    cfg = TableConfig.from_properties({"hoodie.table.name": "t", "hoodie.table.version": "6"})
    updated = cfg.with_updates(name="u", database="db", populate_meta_fields=True)
    assert updated.name == "u" and cfg.name == "t"
    props = updated.to_properties()
    assert props["hoodie.table.checksum"] == str(table_checksum("u", "db"))
    assert props["hoodie.populate.meta.fields"] == "true"  # explicitly set, so written even though default
    with pytest.raises(TypeError, match="unknown TableConfig attribute"):
        cfg.with_updates(nme="x")


def test_registry_covers_every_typed_attribute():
    attrs = {k.attr for k in KNOWN_KEYS}
    assert {"name", "database", "table_type", "version", "record_key_fields", "partition_fields",
            "index_type", "bucket_num", "bucket_hash_fields", "populate_meta_fields"} <= attrs
    assert len({k.key for k in KNOWN_KEYS}) == len(KNOWN_KEYS)


def test_fingerprint_ignores_order_and_header_but_sees_values():
    props = _new_config().to_properties()
    assert fingerprint(props) == fingerprint(dict(reversed(list(props.items()))))
    assert fingerprint(props) == fingerprint(parse_properties(format_properties(props, ("other header",))))
    assert fingerprint(props) == fingerprint(_new_config())
    assert fingerprint(props) != fingerprint(props | {"hoodie.table.precombine.field": "x"})
    assert len(fingerprint(props)) == 64


def test_write_then_read_round_trip_and_backup_removed(tmp_path):
    base = str(tmp_path)
    cfg = _new_config(index_type="BUCKET", bucket_num=4)
    init_table(ST, base, cfg)
    assert read_table_config(ST, base) == cfg
    for folder in (".aux/.bootstrap/.partitions", ".temp", ".schema", "archived"):
        assert (tmp_path / ".hoodie" / folder).is_dir()
    updated = cfg.with_updates(bucket_num=8)
    write_table_config(ST, base, updated)
    assert read_table_config(ST, base) == updated
    assert sorted(p.name for p in (tmp_path / ".hoodie").iterdir() if p.is_file()) == ["hoodie.properties"]
    text = (tmp_path / ".hoodie/hoodie.properties").read_text()
    assert text.startswith("#Updated by tablespec\n#")
    assert f"hoodie.table.checksum={table_checksum('orders', 'sales')}" in text


def test_init_table_refuses_existing_table(tmp_path):
    init_table(ST, str(tmp_path), _new_config())
    with pytest.raises(HudiFormatError, match="already holds a Hudi table"):
        init_table(ST, str(tmp_path), _new_config())


def test_read_recovers_from_backup_when_properties_missing(tmp_path):
    base = str(tmp_path)
    cfg = _new_config()
    init_table(ST, base, cfg)
    (tmp_path / ".hoodie/hoodie.properties").rename(tmp_path / ".hoodie/hoodie.properties.backup")
    assert read_table_config(ST, base) == cfg
    write_table_config(ST, base, cfg.with_updates(precombine_field="ts"))
    assert not (tmp_path / ".hoodie/hoodie.properties.backup").exists()
    assert read_table_config(ST, base).precombine_field == "ts"


def test_read_uses_backup_when_properties_fail_checksum(tmp_path):
    base = str(tmp_path)
    cfg = _new_config()
    init_table(ST, base, cfg)
    main = tmp_path / ".hoodie/hoodie.properties"
    (tmp_path / ".hoodie/hoodie.properties.backup").write_bytes(main.read_bytes())
    main.write_text("hoodie.table.name=orders\nhoodie.table.checksum=1\n")  # torn rewrite
    assert read_table_config(ST, base) == cfg
    (tmp_path / ".hoodie/hoodie.properties.backup").unlink()
    with pytest.raises(HudiFormatError, match="checksum"):
        read_table_config(ST, base)


def test_hudi_rs_opens_table_with_tablespec_keys(tmp_path):
    base = str(tmp_path)
    cfg = _new_config(index_type="BUCKET", bucket_num=16, bucket_hash_fields=["order_id"],
                      extra={"tablespec.spec.digest": "abc"})
    init_table(ST, base, cfg)
    table = hudi.HudiTableBuilder.from_base_uri(base).build()
    opts = table.hudi_options()
    assert opts["hoodie.table.name"] == "orders"
    assert opts["hoodie.bucket.index.num.buckets"] == "16"
    assert table.table_type == "COPY_ON_WRITE"
    assert table.get_file_slices() == []


def test_blank_database_name_is_no_database():
    """Apache Hudi writes `hoodie.database.name=` for a table without a database."""
    cfg = TableConfig.from_properties({"hoodie.table.name": "t", "hoodie.database.name": ""})
    assert cfg.database is None and cfg.checksum == TableConfig(name="t").checksum
    assert "hoodie.database.name" not in cfg.to_properties()


# Hudi 1.2.0's spelling of a version-6 table (as tests/interop/test_hudi_1x_tables.py measures it).
HUDI_1X_KEYS = {"hoodie.table.name": "orders", "hoodie.table.version": "6", "hoodie.table.recordkey.fields": "id",
                "hoodie.table.partition.fields": "dt", "hoodie.table.keygenerator.type": "SIMPLE",
                "hoodie.table.ordering.fields": "ts"}


def test_hudi_1x_spelling_reads_as_the_known_keys_and_is_kept_on_rewrite(tmp_path):
    (tmp_path / ".hoodie").mkdir()
    (tmp_path / ".hoodie/hoodie.properties").write_text(format_properties(HUDI_1X_KEYS))
    cfg = read_table_config(ST, str(tmp_path))
    assert cfg.key_generator_class == "org.apache.hudi.keygen.SimpleKeyGenerator" and cfg.precombine_field == "ts"
    props = cfg.to_properties()   # what tablespec reads: the known keys
    assert props["hoodie.table.keygenerator.class"].endswith("SimpleKeyGenerator")
    assert "hoodie.table.keygenerator.type" not in props and "hoodie.table.ordering.fields" not in cfg.extra

    write_table_config(ST, str(tmp_path), cfg.with_updates(precombine_field="v"))
    written = _props(tmp_path)
    assert written["hoodie.table.keygenerator.type"] == "SIMPLE" and written["hoodie.table.ordering.fields"] == "v"
    assert "hoodie.table.keygenerator.class" not in written and "hoodie.table.precombine.field" not in written
    write_table_config(ST, str(tmp_path), cfg.with_updates(precombine_field=None))   # the ordering field removed
    assert "hoodie.table.ordering.fields" not in _props(tmp_path)


@pytest.mark.parametrize("extra, message", [
    ({"hoodie.table.ordering.fields": "ts,v"}, "hoodie.table.ordering.fields=ts,v lists 2 ordering fields"),
    ({"hoodie.table.precombine.field": "v"}, "hoodie.table.precombine.field=v and hoodie.table.ordering.fields=ts disagree"),
    ({"hoodie.table.keygenerator.type": "USER_PROVIDED"}, "USER_PROVIDED needs hoodie.table.keygenerator.class"),
    ({"hoodie.table.keygenerator.type": "FANCY"}, "hoodie.table.keygenerator.type=FANCY names no key generator"),
    ({"hoodie.table.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator"},
     "hoodie.table.keygenerator.class=org.apache.hudi.keygen.ComplexKeyGenerator and "
     "hoodie.table.keygenerator.type=SIMPLE disagree"),
])
def test_hudi_1x_keys_tablespec_cannot_read_are_refused(extra, message):
    with pytest.raises((UnsupportedTableError, HudiFormatError), match=message):
        TableConfig.from_properties({**HUDI_1X_KEYS, **extra})


def test_both_spellings_agreeing_are_both_kept(tmp_path):
    both = {**HUDI_1X_KEYS, "hoodie.table.precombine.field": "ts"}
    (tmp_path / ".hoodie").mkdir()
    (tmp_path / ".hoodie/hoodie.properties").write_text(format_properties(both))
    write_table_config(ST, str(tmp_path), read_table_config(ST, str(tmp_path)).with_updates(precombine_field="v"))
    written = _props(tmp_path)
    assert written["hoodie.table.precombine.field"] == written["hoodie.table.ordering.fields"] == "v"


def test_user_provided_generator_keeps_its_class(tmp_path):
    """Hudi 1.x names a generator outside its enum USER_PROVIDED and the class beside it."""
    user = {**HUDI_1X_KEYS, "hoodie.table.keygenerator.type": "USER_PROVIDED",
            "hoodie.table.keygenerator.class": "com.example.MyKeyGenerator"}
    (tmp_path / ".hoodie").mkdir()
    (tmp_path / ".hoodie/hoodie.properties").write_text(format_properties(user))
    cfg = read_table_config(ST, str(tmp_path))
    assert cfg.key_generator_class == "com.example.MyKeyGenerator"
    write_table_config(ST, str(tmp_path), cfg)
    written = _props(tmp_path)
    assert written["hoodie.table.keygenerator.type"] == "USER_PROVIDED"
    assert written["hoodie.table.keygenerator.class"] == "com.example.MyKeyGenerator"

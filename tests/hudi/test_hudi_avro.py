import json

import hudi
import pytest

from tablespec.errors import HudiFormatError
from tablespec.hudi.config import read_table_config
from tablespec.hudi.formats.avro import Column, decimal_fixed_size, from_avro_schema, to_avro_schema
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.timeline.active import Timeline
from tablespec.types import Array, Decimal, Field, Map, Primitive, Struct, parse_type

ST = LocalStorage()


def test_fixture_schema_round_trips(fixture_table, any_name):
    base = str(fixture_table(any_name))
    cfg = read_table_config(ST, base)
    schema = Timeline.load(ST, base).latest_schema()
    if schema is None:  # the empty table: only the create schema ([T, "null"] order, no defaults)
        assert [c.name for c in from_avro_schema(cfg.create_schema)] == ["id", "name", "isActive"]
        return
    columns = from_avro_schema(schema)
    assert to_avro_schema(columns, cfg.name) == json.loads(schema)
    assert from_avro_schema(cfg.create_schema) == columns
    rs = hudi.HudiTableBuilder.from_base_uri(base).build().get_schema()
    assert [c.name for c in columns] == rs.names


def test_fixture_schema_types(fixture_table):
    base = str(fixture_table("cow_v6_nonpartitioned"))
    columns = {c.name: c for c in from_avro_schema(Timeline.load(ST, base).latest_schema())}
    assert str(columns["decimalField"].type) == "decimal(10,5)"
    assert str(columns["dateField"].type) == "date" and str(columns["timestampField"].type) == "timestamp"
    assert str(columns["binaryField"].type) == "binary" and str(columns["byteField"].type) == "int"
    assert str(columns["arrayField"].type) == "array<struct<arr_struct_f1:string,arr_struct_f2:int>>"
    assert str(columns["mapField"].type) == (
        "map<string,struct<map_field_value_struct_f1:double,map_field_value_struct_f2:boolean>>")
    assert str(columns["structField"].type) == (
        "struct<field1:string,field2:int,child_struct:struct<child_field1:double,child_field2:boolean>>")
    assert all(c.nullable for c in columns.values())


def test_to_avro_from_spec_types():
    cols = [("order_id", parse_type("string"), False), ("amount", parse_type("decimal(12,2)"), True),
            ("items", parse_type("array<struct<sku:string,price:decimal(38,10)>>"), True),
            Field("tags", parse_type("map<string,bigint>"), True),
            ("ts", parse_type("timestamp_ntz"), True), ("s", parse_type("smallint"), True)]
    schema = to_avro_schema(cols, "orders")
    assert schema["name"] == "orders_record" and schema["namespace"] == "hoodie.orders"
    f = {x["name"]: x for x in schema["fields"]}
    assert f["order_id"] == {"name": "order_id", "type": "string"}
    assert f["amount"] == {"name": "amount", "type": ["null", {
        "type": "fixed", "name": "fixed", "namespace": "hoodie.orders.orders_record.amount", "size": 6,
        "logicalType": "decimal", "precision": 12, "scale": 2}], "default": None}
    item = f["items"]["type"][1]["items"][1]
    assert (item["name"], item["namespace"]) == ("items", "hoodie.orders.orders_record")
    assert item["fields"][1]["type"][1]["namespace"] == "hoodie.orders.orders_record.items.price"
    assert item["fields"][1]["type"][1]["size"] == 16
    assert f["tags"]["type"][1] == {"type": "map", "values": ["null", "long"]}
    assert f["ts"]["type"][1] == {"type": "long", "logicalType": "local-timestamp-micros"}
    assert f["s"]["type"] == ["null", "int"]
    back = from_avro_schema(json.dumps(schema))
    assert back[0] == Column("order_id", Primitive("string"), False)
    assert back[1].type == Decimal(12, 2) and back[5].type == Primitive("int")


@pytest.mark.parametrize("precision,size", [(1, 1), (2, 1), (3, 2), (9, 4), (10, 5), (18, 8), (19, 9), (38, 16)])
def test_decimal_fixed_size_matches_spark(precision, size):
    assert decimal_fixed_size(precision) == size


def test_from_avro_accepts_other_encodings():
    schema = {"type": "record", "name": "r", "namespace": "ns", "fields": [
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A"]}},
        {"name": "e2", "type": ["null", "E"]},
        {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 1}},
        {"name": "fx", "type": {"type": "fixed", "name": "F", "size": 4}},
        {"name": "ts", "type": [{"type": "long", "logicalType": "timestamp-millis"}, "null"]},
        {"name": "nested", "type": {"type": {"type": "int"}}},
        {"name": "rec", "type": {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "long"}]}},
        {"name": "rec2", "type": ["null", "ns.Inner"]},
    ]}
    cols = from_avro_schema(schema)
    assert [(c.name, str(c.type), c.nullable) for c in cols] == [
        ("e", "string", False), ("e2", "string", True), ("d", "decimal(5,1)", False), ("fx", "binary", False),
        ("ts", "timestamp", True), ("nested", "int", False), ("rec", "struct<x:long not null>", False),
        ("rec2", "struct<x:long not null>", True)]


@pytest.mark.parametrize("schema,match", [
    ('{"type": "record", "name": "r", "fields": [{"name": "u", "type": ["int", "string"]}]}', "union"),
    ('{"type": "record", "name": "r", "fields": [{"name": "u", "type": "Nope"}]}', "unknown Avro type"),
    ('{"type": "array", "items": "int"}', "must be an Avro record"),
    ("{not json", "not valid JSON"),
])
def test_from_avro_errors(schema, match):
    with pytest.raises(HudiFormatError, match=match):
        from_avro_schema(schema)


def test_to_avro_rejects_non_string_map_keys():
    with pytest.raises(HudiFormatError, match="map keys must be strings"):
        to_avro_schema([("m", Map(Primitive("int"), Primitive("int")), True)], "t")


def test_nested_struct_and_array_types_round_trip():
    dt = Struct((Field("a", Array(Array(Decimal(4, 2)))), Field("b", Map(Primitive("string"), Struct((
        Field("c", Primitive("date"), False),))))))
    cols = from_avro_schema(to_avro_schema([("s", dt, True)], "t"))
    assert cols == [Column("s", dt, True)]


def test_commit_schema_without_meta_columns():
    """Hudi 0.15's delete_partition and delete record the meta columns in the commit schema."""
    from tablespec.hudi.formats.avro import without_meta_fields
    from tablespec.hudi.formats.commit import CommitMetadata
    from tablespec.hudi.formats.naming import META_COLUMNS

    data = to_avro_schema([("id", Primitive("string"), False)], "t")
    with_meta = {**data, "fields": [{"name": m, "type": ["null", "string"], "default": None} for m in META_COLUMNS]
                 + data["fields"]}
    assert json.loads(CommitMetadata(extra_metadata={"schema": json.dumps(with_meta)}).schema) == data
    plain = json.dumps(data, indent=1)
    assert without_meta_fields(plain) == plain   # untouched, byte for byte
    assert without_meta_fields(json.dumps({**data, "fields": with_meta["fields"][:5]})) is None   # no data column

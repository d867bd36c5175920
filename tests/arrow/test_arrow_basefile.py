"""Base files: meta columns, Hudi's parquet types and footers; read back by hudi-rs in a hand-built table."""
from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from tablespec.arrow.basefile import (
    META_COLUMNS,
    hudi_type,
    java_sort_indices,
    read_footer_keys,
    write_base_file,
)
from tablespec.arrow.bloom import read_bloom_filter
from tablespec.arrow.keys import partition_paths, record_keys

INSTANT = "20260102030405678"
UTC = dt.UTC
ELEMENT = pa.struct([("arr_struct_f1", pa.string()), ("arr_struct_f2", pa.int32())])
MAP_VALUE = pa.struct([("map_field_value_struct_f1", pa.float64()), ("map_field_value_struct_f2", pa.bool_())])
STRUCT = pa.struct([("field1", pa.string()), ("field2", pa.int32()),
                    ("child_struct", pa.struct([("child_field1", pa.float64()), ("child_field2", pa.bool_())]))])
# The table's Avro schema as Hudi records it (fixtures' layout, same column types).
AVRO_SCHEMA = json.dumps({"type": "record", "name": "t_record", "namespace": "hoodie.t", "fields": [
    {"name": "id", "type": ["null", "int"], "default": None},
    {"name": "name", "type": ["null", "string"], "default": None},
    {"name": "isActive", "type": ["null", "boolean"], "default": None},
    {"name": "byteField", "type": ["null", "int"], "default": None},
    {"name": "shortField", "type": ["null", "int"], "default": None},
    {"name": "longField", "type": ["null", "long"], "default": None},
    {"name": "floatField", "type": ["null", "float"], "default": None},
    {"name": "doubleField", "type": ["null", "double"], "default": None},
    {"name": "decimalField", "type": ["null", {"type": "fixed", "name": "fixed", "namespace": "hoodie.t.t_record.decimalField",
                                               "size": 5, "logicalType": "decimal", "precision": 10, "scale": 5}],
     "default": None},
    {"name": "dateField", "type": ["null", {"type": "int", "logicalType": "date"}], "default": None},
    {"name": "timestampField", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}], "default": None},
    {"name": "binaryField", "type": ["null", "bytes"], "default": None},
    {"name": "arrayField", "type": ["null", {"type": "array", "items": ["null", {
        "type": "record", "name": "arrayField", "namespace": "hoodie.t.t_record", "fields": [
            {"name": "arr_struct_f1", "type": ["null", "string"], "default": None},
            {"name": "arr_struct_f2", "type": ["null", "int"], "default": None}]}]}], "default": None},
    {"name": "mapField", "type": ["null", {"type": "map", "values": ["null", {
        "type": "record", "name": "mapField", "namespace": "hoodie.t.t_record", "fields": [
            {"name": "map_field_value_struct_f1", "type": ["null", "double"], "default": None},
            {"name": "map_field_value_struct_f2", "type": ["null", "boolean"], "default": None}]}]}], "default": None},
    {"name": "structField", "type": ["null", {"type": "record", "name": "structField", "namespace": "hoodie.t.t_record",
                                              "fields": [
        {"name": "field1", "type": ["null", "string"], "default": None},
        {"name": "field2", "type": ["null", "int"], "default": None},
        {"name": "child_struct", "type": ["null", {"type": "record", "name": "child_struct",
                                                   "namespace": "hoodie.t.t_record.structField", "fields": [
            {"name": "child_field1", "type": ["null", "double"], "default": None},
            {"name": "child_field2", "type": ["null", "boolean"], "default": None}]}], "default": None}]}],
     "default": None},
]})


def sample_table() -> pa.Table:
    """Every column type of the fixtures, in the Arrow types Spark hands an executor (byte/short
    as int8/int16, timestamps in the session zone), with nulls."""
    n = 6
    ts = [dt.datetime(2023, 4, i + 1, 17, i, tzinfo=UTC) for i in range(n)]
    return pa.table({
        "id": pa.array([5, 3, 1, 6, 2, 4], pa.int32()),
        "name": ["Eve", "Carol", "Alice", None, "Bob", "Dïana 😀"],
        "isActive": [True, False, None, True, False, True],
        "byteField": pa.array([10, 20, 10, 20, 10, None], pa.int8()),
        "shortField": pa.array([100, 300, -5, 7, 100, 2], pa.int16()),
        "longField": pa.array([2**40, -1, 0, None, 7, 8], pa.int64()),
        "floatField": pa.array([1.5, None, 2.0, 3.0, 4.0, 5.0], pa.float32()),
        "doubleField": [3.14159, 2.71828, None, 1.0, 0.5, -2.25],
        "decimalField": pa.array([Decimal("12345.67890"), Decimal("-1.00000"), None, Decimal("0.00001"),
                                  Decimal("99999.99999"), Decimal("0.00000")], pa.decimal128(10, 5)),
        "dateField": pa.array([dt.date(2023, 4, i + 1) for i in range(n)]),
        "timestampField": pa.array(ts, pa.timestamp("us", "UTC")).cast(pa.timestamp("us", "Europe/Amsterdam")),
        "binaryField": [b"\x00\x01", None, b"bin", b"", b"x" * 40, b"y"],
        "arrayField": pa.array([[{"arr_struct_f1": "red", "arr_struct_f2": 1}], None, [], [None],
                                [{"arr_struct_f1": None, "arr_struct_f2": 2}, {"arr_struct_f1": "b", "arr_struct_f2": 3}],
                                [{"arr_struct_f1": "z", "arr_struct_f2": None}]], pa.list_(ELEMENT)),
        "mapField": pa.array([[("k1", {"map_field_value_struct_f1": 1.5, "map_field_value_struct_f2": True})], None, [],
                              [("k2", None)], [("k3", {"map_field_value_struct_f1": None, "map_field_value_struct_f2": False})],
                              [("a", {"map_field_value_struct_f1": 2.0, "map_field_value_struct_f2": None}),
                               ("b", {"map_field_value_struct_f1": 3.0, "map_field_value_struct_f2": True})]],
                             pa.map_(pa.string(), MAP_VALUE)),
        "structField": pa.array([{"field1": "x", "field2": 1, "child_struct": {"child_field1": 1.0, "child_field2": True}},
                                 None, {"field1": None, "field2": None, "child_struct": None},
                                 {"field1": "y", "field2": 2, "child_struct": {"child_field1": None, "child_field2": False}},
                                 {"field1": "z", "field2": 3, "child_struct": {"child_field1": 2.0, "child_field2": None}},
                                 {"field1": "w", "field2": 4, "child_struct": None}], STRUCT),
    })


def hoodie_properties(name: str) -> str:
    """hoodie.properties laid out like the fixtures' (Java properties escaping of ':')."""
    schema = AVRO_SCHEMA.replace(":", "\\:")
    return "\n".join([
        "#Properties saved on 2026-01-02T03:04:05.678Z",
        "hoodie.table.precombine.field=longField",
        "hoodie.datasource.write.drop.partition.columns=false",
        "hoodie.table.partition.fields=byteField",
        "hoodie.table.type=COPY_ON_WRITE",
        "hoodie.archivelog.folder=archived",
        "hoodie.timeline.layout.version=1",
        "hoodie.table.version=6",
        "hoodie.table.recordkey.fields=id,name",
        "hoodie.datasource.write.partitionpath.urlencode=false",
        "hoodie.database.name=default",
        f"hoodie.table.name={name}",
        "hoodie.table.keygenerator.class=org.apache.hudi.keygen.ComplexKeyGenerator",
        "hoodie.datasource.write.hive_style_partitioning=true",
        f"hoodie.table.create.schema={schema}",
        "",
    ])


def build_table(base: Path, table: pa.Table) -> list:
    """A one-commit COW table: one base file per partition, written with write_base_file."""
    (base / ".hoodie").mkdir(parents=True)
    (base / ".hoodie" / "hoodie.properties").write_text(hoodie_properties("t"))
    keys = record_keys(table, ["id", "name"], complex=True)
    assert not keys.invalid.any()
    paths = partition_paths(table, ["byteField"], hive_style=True)
    stats, written = {}, []
    for i, part in enumerate(sorted(set(paths.to_pylist()))):
        mask = pc.equal(paths, part)
        file_id = f"{i:08d}-1111-2222-3333-444444444444-0"
        name = f"{file_id}_{i}-1-{i}_{INSTANT}.parquet"
        wf = write_base_file(str(base / part / name), table.filter(mask), commit_time=INSTANT,
                             partition_path=part, partition_id=i, record_keys=keys.keys.filter(mask),
                             avro_schema_json=AVRO_SCHEMA)
        (base / part / ".hoodie_partition_metadata").write_text(
            f"#partition metadata\ncommitTime={INSTANT}\npartitionDepth=1\n")
        stats[part] = [{"fileId": file_id, "path": f"{part}/{name}", "prevCommit": "null",
                        "numWrites": wf.num_rows, "numDeletes": 0, "numUpdateWrites": 0,
                        "numInserts": wf.num_rows, "totalWriteBytes": wf.size, "totalWriteErrors": 0,
                        "partitionPath": part, "fileSizeInBytes": wf.size}]
        written.append(wf)
    commit = {"partitionToWriteStats": stats, "compacted": False,
              "extraMetadata": {"schema": AVRO_SCHEMA}, "operationType": "BULK_INSERT"}
    for suffix, body in ((".commit.requested", ""), (".inflight", "{}"), (".commit", json.dumps(commit))):
        (base / ".hoodie" / f"{INSTANT}{suffix}").write_text(body)
    return written


def rows_by_key(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: r["_hoodie_record_key"])


def test_base_files_read_back_through_hudi_rs_with_meta_columns(tmp_path):
    hudi = pytest.importorskip("hudi")
    base = tmp_path / "t"
    written = build_table(base, sample_table())
    ours = pa.concat_tables([pq.read_table(w.path) for w in written])
    theirs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(base)).build().read())
    assert theirs.column_names == ours.column_names
    assert theirs.column_names[:5] == list(META_COLUMNS)
    assert rows_by_key(theirs) == rows_by_key(ours)
    assert sum(w.num_rows for w in written) == theirs.num_rows == 6
    for col in ("decimalField", "timestampField", "dateField", "byteField", "arrayField", "mapField", "structField"):
        assert theirs.schema.field(col).type == ours.schema.field(col).type, col


def test_meta_columns_and_values_survive_the_round_trip(tmp_path):
    table = sample_table()
    written = build_table(tmp_path / "t", table)
    back = rows_by_key(pa.concat_tables([pq.read_table(w.path) for w in written]))
    by_id = {r["id"]: r for r in table.to_pylist()}
    for row in back:
        src = by_id[row["id"]]
        assert row["_hoodie_commit_time"] == INSTANT
        value = src["byteField"] if src["byteField"] is not None else "__HIVE_DEFAULT_PARTITION__"
        assert row["_hoodie_partition_path"] == f"byteField={value}"
        assert row["_hoodie_file_name"].endswith(f"_{INSTANT}.parquet")
        assert row["timestampField"] == src["timestampField"]  # same instant, now in UTC
        assert row["timestampField"].utcoffset() == dt.timedelta(0)
        for col in ("decimalField", "dateField", "binaryField", "arrayField", "mapField", "structField", "shortField"):
            assert row[col] == src[col], col


def test_rows_are_sorted_by_key_with_seqnos_and_footer_min_max(tmp_path):
    table = pa.table({"k": ["b", "c", "a"], "v": [2, 3, 1]})
    wf = write_base_file(str(tmp_path / "p" / f"f-0_3-1-1_{INSTANT}.parquet"), table, commit_time=INSTANT,
                         partition_path="p", partition_id=3, record_keys=table.column("k"),
                         avro_schema_json=json.dumps({"type": "record", "name": "r", "fields": [
                             {"name": "k", "type": "string"}, {"name": "v", "type": "long"}]}))
    back = pq.read_table(wf.path)
    assert back.column("_hoodie_record_key").to_pylist() == ["a", "b", "c"]
    assert back.column("v").to_pylist() == [1, 2, 3]
    assert back.column("_hoodie_commit_seqno").to_pylist() == [f"{INSTANT}_3_{i}" for i in range(3)]
    assert (wf.min_key, wf.max_key, wf.num_rows) == ("a", "c", 3)
    assert read_footer_keys(wf.path) == ("a", "c")
    assert wf.size == Path(wf.path).stat().st_size
    footer = pq.read_metadata(wf.path).metadata
    avro = json.loads(footer[b"parquet.avro.schema"])
    assert [f["name"] for f in avro["fields"]] == list(META_COLUMNS) + ["k", "v"]
    assert avro["fields"][0] == {"name": "_hoodie_commit_time", "type": ["null", "string"], "doc": "", "default": None}


@pytest.mark.parametrize("given, expected", [
    (pa.timestamp("ms", "Asia/Tokyo"), pa.timestamp("us", "UTC")),
    (pa.timestamp("ns", "UTC"), pa.timestamp("us", "UTC")),
    (pa.timestamp("us"), pa.timestamp("us")),  # timestamp_ntz stays local (not adjusted to UTC)
    (pa.int8(), pa.int32()), (pa.int16(), pa.int32()), (pa.int64(), pa.int64()),
    (pa.large_string(), pa.string()), (pa.date64(), pa.date32()), (pa.decimal128(20, 4), pa.decimal128(20, 4)),
    (pa.list_(pa.struct([("t", pa.timestamp("ms", "UTC")), ("b", pa.int8())])),
     pa.list_(pa.struct([("t", pa.timestamp("us", "UTC")), ("b", pa.int32())]))),
    (pa.map_(pa.string(), pa.int16()), pa.map_(pa.string(), pa.int32())),
])
def test_hudi_types(given, expected):
    assert hudi_type(given) == expected


def test_bloom_filter_footer_on_request(tmp_path):
    table = pa.table({"k": [f"key-{i}" for i in range(100)]})
    kwargs = dict(commit_time=INSTANT, partition_path="", partition_id=0, record_keys=table.column("k"),
                  avro_schema_json='{"type":"record","name":"r","fields":[{"name":"k","type":"string"}]}')
    plain = write_base_file(str(tmp_path / f"a-0_0-1-1_{INSTANT}.parquet"), table, **kwargs)
    with_bloom = write_base_file(str(tmp_path / f"b-0_0-1-1_{INSTANT}.parquet"), table, bloom_filter=True, **kwargs)
    assert read_bloom_filter(plain.path) is None
    footer = pq.read_metadata(with_bloom.path).metadata
    assert footer[b"hoodie_bloom_filter_type_code"] == b"DYNAMIC_V0"
    bf = read_bloom_filter(with_bloom.path)
    assert bf.might_contain(table.column("k")).all()
    assert not bf.might_contain(pa.array(["key-100", "nope"])).any()


def test_key_order_is_javas_utf16_order():
    keys = pa.array(["\ue000", "😀", "a", "\uffff", "𝄞", "Z"])
    ordered = keys.take(java_sort_indices(keys)).to_pylist()
    assert ordered == sorted(keys.to_pylist(), key=lambda s: s.encode("utf-16-be"))
    assert ordered[-2:] == ["\ue000", "\uffff"]  # after the surrogate pairs, unlike UTF-8 byte order


def test_preserve_meta_keeps_commit_time_and_seqno_but_renames_the_file(tmp_path):
    table = pa.table({"_hoodie_commit_time": ["20250101000000000", None],
                      "_hoodie_commit_seqno": ["20250101000000000_1_7", None],
                      "_hoodie_record_key": ["old", "new"], "_hoodie_partition_path": ["", ""],
                      "_hoodie_file_name": ["old-file.parquet", None], "k": ["a", "b"]})
    path = tmp_path / f"f-0_0-1-1_{INSTANT}.parquet"
    wf = write_base_file(str(path), table, commit_time=INSTANT, partition_path="", partition_id=0,
                         record_keys=table.column("k"), preserve_meta=True,
                         avro_schema_json=json.dumps({"type": "record", "name": "r", "fields": [
                             {"name": "k", "type": "string"}]}))
    back = pq.read_table(wf.path).to_pylist()
    assert [r["_hoodie_commit_time"] for r in back] == ["20250101000000000", INSTANT]
    assert [r["_hoodie_commit_seqno"] for r in back] == ["20250101000000000_1_7", f"{INSTANT}_0_1"]
    assert {r["_hoodie_file_name"] for r in back} == {path.name}
    assert [r["_hoodie_record_key"] for r in back] == ["a", "b"]
    assert pq.read_table(wf.path).column_names == list(META_COLUMNS) + ["k"]


def test_kept_order_rows_stay_put_and_footer_keys_are_javas_extremes(tmp_path):
    keys = ["b", "\ue000", "😀", "a"]
    table = pa.table({"_hoodie_commit_time": ["20250101000000000"] * 4,
                      "_hoodie_commit_seqno": [f"20250101000000000_1_{i}" for i in range(4)], "k": keys})
    wf = write_base_file(str(tmp_path / f"f-0_0-1-1_{INSTANT}.parquet"), table, commit_time=INSTANT,
                         partition_path="", partition_id=0, record_keys=table.column("k"), preserve_meta=True,
                         keep_order=True, avro_schema_json='{"type":"record","name":"r","fields":[{"name":"k","type":"string"}]}')
    back = pq.read_table(wf.path)
    assert back.column("_hoodie_record_key").to_pylist() == keys
    assert back.column("_hoodie_commit_seqno").to_pylist() == [f"20250101000000000_1_{i}" for i in range(4)]
    assert read_footer_keys(wf.path) == ("a", "\ue000")  # U+E000 sorts after the surrogate pair in Java
    encodings = {c: pq.ParquetFile(wf.path).metadata.row_group(0).column(i).encodings
                 for i, c in enumerate(back.column_names)}
    assert not any("DICTIONARY" in e for c in ("_hoodie_commit_seqno", "_hoodie_record_key") for e in encodings[c])
    assert any("DICTIONARY" in e for e in encodings["_hoodie_commit_time"])


def test_without_preserve_meta_incoming_meta_columns_are_replaced(tmp_path):
    table = pa.table({"_hoodie_commit_time": ["20250101000000000"], "k": ["a"]})
    wf = write_base_file(str(tmp_path / f"f-0_0-1-1_{INSTANT}.parquet"), table, commit_time=INSTANT,
                         partition_path="", partition_id=0, record_keys=table.column("k"),
                         avro_schema_json='{"type":"record","name":"r","fields":[{"name":"k","type":"string"}]}')
    assert pq.read_table(wf.path).column("_hoodie_commit_time").to_pylist() == [INSTANT]


def test_write_refuses_null_or_miscounted_keys(tmp_path):
    table = pa.table({"k": ["a", "b"]})
    kwargs = dict(commit_time=INSTANT, partition_path="", partition_id=0, avro_schema_json="{}")
    with pytest.raises(ValueError, match="null"):
        write_base_file(str(tmp_path / "x.parquet"), table, record_keys=pa.array(["a", None]), **kwargs)
    with pytest.raises(ValueError, match="1 record keys for 2 rows"):
        write_base_file(str(tmp_path / "x.parquet"), table, record_keys=pa.array(["a"]), **kwargs)


def leaf_types(path) -> dict[str, tuple]:
    """Leaf columns of a parquet file with their physical and logical types; list wrappers
    (`array` in parquet-avro's 2-level lists, `list.element` in the standard 3-level form)
    are dropped from the path so both spellings compare."""
    schema = pq.ParquetFile(path).schema
    out = {}
    for i in range(len(schema)):
        col = schema.column(i)
        parts = [p for p in col.path.split(".") if p not in ("array", "list", "element")]
        out[".".join(parts)] = (col.physical_type, str(col.logical_type), col.length if col.physical_type ==
                                "FIXED_LEN_BYTE_ARRAY" else None)
    return out


@pytest.mark.fixtures
def test_parquet_types_match_a_file_hudi_wrote(real_table, tmp_path):
    base = real_table("cow_v6_nonpartitioned")
    fixture_file = sorted(p for p in base.glob("*.parquet"))[-1]
    data = pq.read_table(fixture_file)
    schema_json = pq.read_metadata(fixture_file).metadata[b"parquet.avro.schema"].decode()
    wf = write_base_file(str(tmp_path / f"f-0_0-1-1_{INSTANT}.parquet"), data, commit_time=INSTANT,
                         partition_path="", partition_id=0, record_keys=data.column("_hoodie_record_key"),
                         avro_schema_json=schema_json)
    assert leaf_types(wf.path) == leaf_types(fixture_file)
    ours = pq.read_table(wf.path)
    assert rows_by_key(ours.drop_columns(["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_file_name"])) == \
        rows_by_key(data.drop_columns(["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_file_name"]))

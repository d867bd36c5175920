"""Writing through the engine: every table written here must read back identically via hudi-rs."""
from __future__ import annotations

import datetime as dt
import json
import os
from decimal import Decimal

import pyarrow.parquet as pq
import pytest
from _support import ORDERS_SPEC, storage_and_base
from helpers import assert_hudi_rs_agrees, make_table

from tablespec.engine.schema import DataSchemaError
from tablespec.engine.writer import WriteRefused
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import Timeline

pytestmark = pytest.mark.spark

SCHEMA = "order_id string, customer_id bigint, amount decimal(12,2), updated_at timestamp, order_date date"
T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)


def orders(spark, rows):
    """rows: (order_id, customer_id, amount, hour offset, day)"""
    data = [(o, c, Decimal(a), T0 + dt.timedelta(hours=h), dt.date(2026, 11, d)) for o, c, a, h, d in rows]
    return spark.createDataFrame(data, SCHEMA)


def spec_for(index: str) -> str:
    index_block = "{type: BUCKET, numBuckets: 4}" if index == "BUCKET" else f"{{type: {index}}}"
    return ORDERS_SPEC.replace("index: {type: BUCKET, numBuckets: 16}", "index: " + index_block)


# on S3 (upserts merging base files read from S3, time travel, hudi-rs agreeing):
# test_engine_object_storage.py::test_every_action_and_read[s3]
@pytest.mark.parametrize("index, warehouse", [(i, "local") for i in ("BUCKET", "SIMPLE", "BLOOM", "RECORD_LEVEL")],
                         indirect=["warehouse"])
def test_write_upsert_delete_round_trip_hudi_rs_agrees(spark, warehouse, index):
    table = make_table(spark, warehouse, spec_for(index))
    r1 = table.write(orders(spark, [("o1", 1, "10.00", 0, 1), ("o2", 2, "20.00", 0, 1), ("o3", 3, "30.00", 0, 2)]),
                     "upsert")
    assert (r1.inserted, r1.updated, r1.deleted) == (3, 0, 0)
    assert_hudi_rs_agrees(table)
    # o1 newer -> updated; o2 older -> existing wins; o3 same time -> incoming wins (tie); o4 new
    r2 = table.write(orders(spark, [("o1", 1, "11.00", 1, 1), ("o2", 2, "99.00", -1, 1),
                                    ("o3", 3, "33.00", 0, 2), ("o4", 4, "40.00", 0, 3)]), "upsert")
    assert (r2.inserted, r2.updated) == (1, 2)
    got = {r.order_id: (str(r.amount), r._hoodie_commit_time) for r in table.read().collect()}
    assert got == {"o1": ("11.00", r2.instant), "o2": ("20.00", r1.instant), "o3": ("33.00", r2.instant),
                   "o4": ("40.00", r2.instant)}
    assert_hudi_rs_agrees(table)
    r3 = table.write(orders(spark, [("o2", 0, "0", 0, 1), ("missing", 0, "0", 0, 1)]), "delete")
    assert r3.deleted == 1
    assert sorted(r.order_id for r in table.read().collect()) == ["o1", "o3", "o4"]
    assert_hudi_rs_agrees(table)
    # time travel to the first commit
    assert sorted((r.order_id, str(r.amount)) for r in table.read(as_of=r1.instant).collect()) == [
        ("o1", "10.00"), ("o2", "20.00"), ("o3", "30.00")]


def test_write_batch_duplicates_keep_greatest_ordering(spark, tmp_path):
    table = make_table(spark, tmp_path, spec_for("BUCKET"))
    table.write(orders(spark, [("o1", 1, "1.00", 2, 1), ("o1", 1, "3.00", 5, 1), ("o1", 1, "2.00", 3, 1)]), "upsert")
    assert [str(r.amount) for r in table.read().collect()] == ["3.00"]


def java_hash(s: str) -> int:
    """Independent Java String.hashCode over UTF-16 code units."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h


def java_bucket(key: str, n: int) -> int:
    h = (31 * 1 + java_hash(key)) & 0xFFFFFFFF  # List.of(key).hashCode()
    return (h & 0x7FFFFFFF) % n


def test_bucket_routing_matches_java_hashing(spark, tmp_path):
    table = make_table(spark, tmp_path, spec_for("BUCKET").replace("numBuckets: 4", "numBuckets: 7"))
    keys = ["o1", "Zürich", "東京-42", "emoji-😀", "polygenelubricants", "x" * 40]  # incl. negative hash codes
    table.write(orders(spark, [(k, 1, "1.00", 0, 1) for k in keys]), "upsert")
    located = {r._hoodie_record_key: r._hoodie_file_name for r in table.read().collect()}
    assert set(located) == set(keys)
    for key, name in located.items():
        assert int(name[:8]) == java_bucket(key, 7), key
    # one file group per bucket; an equality filter on the hash field prunes to that bucket's file
    from tablespec.engine.reader import snapshot_files
    files = snapshot_files(table.table, spec=table.spec, filters={"order_id": "Zürich"})
    assert len(files) == 1 and int(os.path.basename(files[0])[:8]) == java_bucket("Zürich", 7)
    assert [r.order_id for r in table.read(filters={"order_id": "Zürich"}).collect()] == ["Zürich"]


def test_written_files_carry_hudi_footers_and_layout(spark, tmp_path):
    table = make_table(spark, tmp_path, spec_for("SIMPLE"))
    r = table.write(orders(spark, [("b", 1, "1.00", 0, 1), ("a", 2, "2.00", 0, 1)]), "insert")
    path = os.path.join(table.location, r.files[0])
    meta = pq.read_metadata(path).metadata
    assert meta[b"hoodie_min_record_key"] == b"a" and meta[b"hoodie_max_record_key"] == b"b"
    assert pq.read_schema(path).names[:5] == ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                                                "_hoodie_partition_path", "_hoodie_file_name"]
    assert r.files[0].startswith("order_date=2026-11-01/")
    assert os.path.exists(os.path.join(table.location, "order_date=2026-11-01", ".hoodie_partition_metadata"))
    timeline = Timeline.load(LocalStorage(), table.location)
    commit = timeline.read_metadata(timeline.head)
    assert commit["operationType"] == "INSERT"
    assert json.loads(commit["extraMetadata"]["schema"])["name"] == "orders_record"


def test_inserts_fill_small_file_groups_first(spark, warehouse):
    table = make_table(spark, warehouse, spec_for("SIMPLE"))
    r1 = table.write(orders(spark, [("a", 1, "1.00", 0, 1)]), "insert")
    r2 = table.write(orders(spark, [("b", 1, "1.00", 0, 1), ("c", 1, "1.00", 0, 1)]), "insert")
    def fid(result):
        return os.path.basename(result.files[0]).split("_")[0]
    assert fid(r2) == fid(r1)  # the small file group got the inserts: a new slice of it
    r3 = table.write(orders(spark, [("d", 1, "1.00", 0, 1)]), "bulk_insert")
    assert fid(r3) != fid(r1)
    assert sorted(r.order_id for r in table.read().collect()) == ["a", "b", "c", "d"]
    assert_hudi_rs_agrees(table)


@pytest.mark.parametrize("index", ["SIMPLE", "BLOOM"])
def test_duplicates_of_a_new_key_go_to_one_file_group_when_inserts_roll_over(spark, tmp_path, index):
    """Inserts are placed in key order; rows sharing a key take one place, so a file group that
    fills up between them cannot split the key over two file groups."""
    spec = spec_for(index).replace("  index:", "  clustering: {targetFileSize: 256, smallFileLimit: 100}\n  index:")
    table = make_table(spark, tmp_path, spec)
    table.write(orders(spark, [("a", 1, "1.00", 0, 1)]), "insert")  # ~1 record per file from now on
    result = table.write(orders(spark, [("x", 1, "1.00", 0, 1), ("y", 1, "1.00", 0, 1), ("x", 2, "2.00", 1, 1),
                                        ("z", 1, "1.00", 0, 1), ("y", 2, "2.00", 1, 1), ("a", 2, "2.00", 1, 1)]),
                         "upsert")
    assert (result.inserted, result.updated) == (3, 1)
    got = sorted((r.order_id, r.customer_id) for r in table.read().collect())
    assert got == [("a", 2), ("x", 2), ("y", 2), ("z", 1)]
    assert len({os.path.basename(f).split("_")[0] for f in result.files}) == 4  # a, and x, y, z one each
    assert_hudi_rs_agrees(table)


def test_bloom_finds_keys_the_footer_range_orders_the_java_way(spark, tmp_path):
    """Footer min/max keys are in Java order, where U+FFFF sorts after a surrogate pair (U+1F600);
    a UTF-8 range check would rule the file out and turn the update into a duplicate insert."""
    table = make_table(spark, tmp_path, spec_for("BLOOM"))
    table.write(orders(spark, [("a", 1, "1.00", 0, 1), ("k\uffff", 1, "1.00", 0, 1), ("k\U0001F600", 1, "1.00", 0, 1)]),
                "upsert")
    result = table.write(orders(spark, [("k\U0001F600", 2, "2.00", 1, 1)]), "upsert")
    assert (result.inserted, result.updated) == (0, 1)
    assert sorted((r.order_id, r.customer_id) for r in table.read().collect()) == [
        ("a", 1), ("k\uffff", 1), ("k\U0001F600", 2)]
    assert_hudi_rs_agrees(table)


def test_null_keys_are_refused_and_nothing_committed(spark, warehouse):
    table = make_table(spark, warehouse, spec_for("BUCKET"))
    table.write(orders(spark, [("o1", 1, "1.00", 0, 1)]), "upsert")
    before = HudiTable.open(table.location).timeline.instants
    bad = spark.createDataFrame([(None, 1, Decimal("1"), T0, dt.date(2026, 11, 1)),
                                 ("", 2, Decimal("1"), T0, dt.date(2026, 11, 1)),
                                 ("ok", 3, Decimal("1"), T0, dt.date(2026, 11, 1))],
                                SCHEMA.replace("order_id string", "order_id string"))
    with pytest.raises(WriteRefused, match=r"2 row\(s\) have a null or empty record key"):
        table.write(bad, "upsert")
    after = HudiTable.open(table.location).timeline
    assert [i for i in after.instants if i.action == "commit"] == [i for i in before if i.action == "commit"]
    assert sorted(r.order_id for r in table.read().collect()) == ["o1"]
    assert_hudi_rs_agrees(table)


def test_schema_mismatch_is_refused_before_writing(spark, tmp_path):
    table = make_table(spark, tmp_path, spec_for("BUCKET"))
    extra = orders(spark, [("o1", 1, "1.00", 0, 1)]).withColumnRenamed("customer_id", "customer")
    with pytest.raises(DataSchemaError, match="'customer' is not in the spec"):
        table.write(extra, "upsert")
    wrong = spark.createDataFrame([("o1", "x")], "order_id string, customer_id string")
    with pytest.raises(DataSchemaError, match="'customer_id' has type string"):
        table.write(wrong, "upsert")
    partial = spark.createDataFrame([("o1", dt.date(2026, 11, 1))], "order_id string, order_date date")
    table.write(partial, "upsert")
    row = table.read().collect()[0]
    assert row.customer_id is None and row.amount is None
    assert not Timeline.load(LocalStorage(), table.location).pending()


def test_write_refused_when_table_missing_or_out_of_date(spark, tmp_path):
    from tablespec.spec.loader import load_spec_text
    from tablespec.table import Table
    spec = load_spec_text(spec_for("BUCKET"), "t.yaml").specs[0].spec
    absent = Table(spec, str(tmp_path / "nowhere"), spark)
    with pytest.raises(WriteRefused, match="does not exist.*tablespec apply"):
        absent.write(orders(spark, [("o1", 1, "1.00", 0, 1)]))
    make_table(spark, tmp_path, spec_for("SIMPLE"))
    stale = Table(spec, os.path.join(tmp_path, "sales", "orders"), spark)
    with pytest.raises(WriteRefused, match="does not match its spec .*bucket_bootstrap"):
        stale.write(orders(spark, [("o1", 1, "1.00", 0, 1)]))


def test_ingest_cli_csv_then_read_back(spark, tmp_path, monkeypatch, capsys):
    from tablespec.cli import main
    spec = tmp_path / "orders.yaml"
    spec.write_text(spec_for("BUCKET"))
    make_table(spark, tmp_path / "wh", spec_for("BUCKET"))
    csv = tmp_path / "in.csv"
    csv.write_text("order_id,customer_id,amount,updated_at,order_date\n"
                   "o1,1,10.50,2026-11-01T12:00:00Z,2026-11-01\no2,2,3.25,2026-11-01T13:00:00Z,2026-11-02\n")
    code = main(["ingest", str(spec), "--input", str(csv), "--input-format", "csv", "--operation", "upsert",
                 "--warehouse", str(tmp_path / "wh")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "2 inserted, 0 updated, 0 deleted" in out
    code = main(["ingest", str(spec), "--input", str(tmp_path / "missing.csv"), "--warehouse", str(tmp_path / "wh")])
    assert code == 1 and "no such file" in capsys.readouterr().err


def test_ingest_cli_malformed_input_is_a_clear_error(spark, tmp_path, capsys):
    from tablespec.cli import main
    spec = tmp_path / "orders.yaml"
    spec.write_text(spec_for("BUCKET"))
    make_table(spark, tmp_path / "wh", spec_for("BUCKET"))
    bad = tmp_path / "bad.json"
    bad.write_text('{"order_id": "o1", "customer_id": "not a number", "order_date": "2026-11-01"}\n')
    code = main(["ingest", str(spec), "--input", str(bad), "--input-format", "json", "--warehouse", str(tmp_path / "wh")])
    out, err = capsys.readouterr()
    assert code == 1 and "column 'customer_id': cannot parse 'not a number' as long" in err and "Traceback" not in err
    from tablespec.hudi.io import LocalStorage
    from tablespec.hudi.timeline.active import Timeline
    assert not Timeline.load(LocalStorage(), str(tmp_path / "wh" / "sales" / "orders")).commits()


def test_bulk_insert_into_bucket_table_keeps_existing_rows(spark, tmp_path):
    table = make_table(spark, tmp_path, spec_for("BUCKET"))
    table.write(orders(spark, [("o1", 1, "1.00", 0, 1), ("o2", 2, "2.00", 0, 1)]), "upsert")
    table.write(orders(spark, [("o3", 3, "3.00", 0, 1), ("o4", 4, "4.00", 0, 1)]), "bulk_insert")
    assert sorted(r.order_id for r in table.read().collect()) == ["o1", "o2", "o3", "o4"]
    assert_hudi_rs_agrees(table)


def test_null_key_among_updates_is_refused_not_crashing(spark, tmp_path):
    table = make_table(spark, tmp_path, spec_for("SIMPLE"))
    table.write(orders(spark, [("o1", 1, "1.00", 0, 1)]), "upsert")
    mixed = spark.createDataFrame([("o1", 1, Decimal("5"), T0, dt.date(2026, 11, 1)),
                                   (None, 2, Decimal("1"), T0, dt.date(2026, 11, 1))], SCHEMA)
    with pytest.raises(WriteRefused, match=r"1 row\(s\) have a null or empty record key"):
        table.write(mixed, "upsert")
    assert [str(r.amount) for r in table.read().collect()] == ["1.00"]


def test_bulk_insert_writes_each_task_rows_into_its_own_file_groups(spark, tmp_path):
    """No shuffle: every input task writes its rows per partition, rolling at the target file size."""
    spec = spec_for("SIMPLE").replace("  index:", "  clustering: {targetFileSize: 256, smallFileLimit: 100}\n  index:")
    table = make_table(spark, tmp_path, spec)  # a new table: 128 bytes per record assumed -> 2 rows per file
    rows = [("a", 1, "1.00", 0, 1), ("b", 1, "1.00", 0, 1), ("c", 1, "1.00", 0, 1),
            ("d", 1, "1.00", 0, 1), ("e", 1, "1.00", 0, 2), ("f", 1, "1.00", 0, 2), ("g", 1, "1.00", 0, 2)]
    df = orders(spark, rows).repartition(3)
    per_task = [[r.order_date for r in task] for task in df.rdd.glom().collect()]
    expected_files = sum(-(-days.count(d) // 2) for days in per_task for d in set(days))
    result = table.write(df, "bulk_insert")
    assert result.inserted == 7
    assert len(result.files) == len({os.path.basename(f).split("_")[0] for f in result.files}) == expected_files
    assert all(pq.read_metadata(os.path.join(table.location, f)).num_rows <= 2 for f in result.files)
    assert sorted(r.order_id for r in table.read().collect()) == list("abcdefg")
    assert_hudi_rs_agrees(table)


def test_bulk_insert_with_null_keys_writes_nothing(spark, tmp_path):
    table = make_table(spark, tmp_path, spec_for("SIMPLE"))
    bad = orders(spark, [("a", 1, "1.00", 0, 1), ("b", 1, "1.00", 0, 2)]).unionByName(
        spark.createDataFrame([(None, 2, Decimal("1"), T0, dt.date(2026, 11, 1))], SCHEMA)).repartition(3)
    with pytest.raises(WriteRefused, match=r"1 row\(s\) have a null or empty record key"):
        table.write(bad, "bulk_insert")
    storage, base = storage_and_base(table.location)
    assert not Timeline.load(storage, base).commits()
    assert not [f for f in storage.walk_files(base) if f.path.endswith(".parquet")]  # the task's files rolled back

"""schema_evolution: plan -> apply -> plan on tables with data; reads and merges across old files.

hudi-rs 0.5 reads an evolved table in its latest schema: it takes the schema from the latest
commit's extraMetadata.schema and fills / casts every base file into it (checked here for
added columns, int -> long, float -> double, decimal precision up, long -> double, int -> float
and nested struct / array / map widening), so its rows are compared whole with tablespec's.
"""
from __future__ import annotations

import decimal
import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _support import ROOT, storage_and_base
from helpers import assert_hudi_rs_agrees, make_table

from tablespec.actions.metadata import create_table
from tablespec.actions.schema import evolve_schema
from tablespec.apply import Applier
from tablespec.arrow.align import align_to_schema
from tablespec.cli import main
from tablespec.engine.evolution import written_columns
from tablespec.engine.reader import snapshot_files
from tablespec.errors import StalePlanError
from tablespec.hudi.config import read_table_config
from tablespec.hudi.formats.avro import to_avro_schema
from tablespec.hudi.io import LocalStorage, table_location
from tablespec.hudi.table import HudiTable, Location
from tablespec.hudi.timeline.active import Timeline, TimelineWriter
from tablespec.hudi.timeline.instant import new_instant_time
from tablespec.plan.builder import build_plan
from tablespec.plan.columns import spec_columns
from tablespec.spec.loader import load_spec_text
from tablespec.state import observe
from tablespec.table import Table
from tablespec.types import Decimal, Primitive

pytestmark = pytest.mark.spark

SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: items}
spec:
  location: items
  columns:
    - {name: id, type: string, nullable: false}
    - {name: region, type: string, nullable: false}
    - {name: qty, type: int}
    - {name: price, type: "decimal(10,2)"}
    - {name: score, type: float}
  recordKey: {fields: [id]}
  partitioning: {fields: [region]}
  index: INDEX
"""
EVOLVED = (SPEC.replace("{name: qty, type: int}", "{name: qty, type: long}")
           .replace("decimal(10,2)", "decimal(12,2)")
           .replace("{name: score, type: float}", "{name: score, type: double}\n    - {name: note, type: string}"))
INDEXES = {"bucket": "{type: BUCKET, numBuckets: 2}", "simple": "{type: SIMPLE}"}
OLD_DDL = "id string, region string, qty int, price decimal(10,2), score float"
NEW_DDL = "id string, region string, qty long, price decimal(12,2), score double, note string"
D = decimal.Decimal


def load(text: str):
    result = load_spec_text(text, "items.yaml")
    assert not result.errors, result.errors
    return result


def plan(warehouse, text: str):
    result = load(text)
    location = table_location(str(warehouse), result.specs[0].spec.spec.location)
    return build_plan(result.specs, {location: observe(HudiTable.open(location))}, Location.parse(str(warehouse)))


def evolved_table(spark, table: Table, text: str) -> Table:
    return Table(load(text).specs[0].spec, table.location, spark)


def data_files(location: str) -> dict[str, float]:
    return {os.path.join(d, f): os.stat(os.path.join(d, f)).st_mtime_ns
            for d, _, fs in os.walk(location) if "/.hoodie" not in d + "/" for f in fs if f.endswith(".parquet")}


def by_id(df) -> dict[str, dict]:
    return {r["id"]: r.asDict() for r in df.collect()}


@pytest.mark.parametrize("index", sorted(INDEXES))
def test_schema_evolution_plan_apply_read_upsert_hudi_rs_agree(spark, tmp_path, index):
    spec_text = SPEC.replace("INDEX", INDEXES[index])
    new_text = EVOLVED.replace("INDEX", INDEXES[index])
    table = make_table(spark, tmp_path, spec_text)
    table.write(spark.createDataFrame([("a", "eu", 1, D("1.50"), 0.5), ("b", "eu", 2, D("99999999.99"), 1.25),
                                       ("c", "us", 2147483647, None, None)], OLD_DDL), "upsert")
    before_files = data_files(table.location)
    create_schema = read_table_config(LocalStorage(), table.location).create_schema

    p = plan(tmp_path, new_text)
    [action] = p.tables[0].actions
    assert (action.kind, action.destructive) == ("schema_evolution", False)
    assert sorted(action.reasons) == ["add column note string", "widen column price: decimal(10,2) -> decimal(12,2)",
                                      "widen column qty: int -> long", "widen column score: float -> double"]
    result = Applier().apply(p)
    assert [a.kind for a in result.actions] == ["schema_evolution"]

    # Metadata only: one empty ALTER_SCHEMA commit with the new schema; no data file touched.
    assert data_files(table.location) == before_files
    timeline = Timeline.load(LocalStorage(), table.location)
    head = timeline.commits()[-1]
    meta = timeline.commit_metadata(head)
    spec = load(new_text).specs[0].spec
    assert (head.action, meta.operation_type, meta.partition_to_write_stats) == ("commit", "ALTER_SCHEMA", {})
    assert json.loads(meta.schema) == to_avro_schema(spec_columns(spec), "items")
    assert read_table_config(LocalStorage(), table.location).create_schema == create_schema
    assert not plan(tmp_path, new_text).has_changes

    evolved = evolved_table(spark, table, new_text)
    df = evolved.read()
    assert df.schema.simpleString() == (
        "struct<_hoodie_commit_time:string,_hoodie_commit_seqno:string,_hoodie_record_key:string,"
        "_hoodie_partition_path:string,_hoodie_file_name:string,id:string,region:string,qty:bigint,"
        "price:decimal(12,2),score:double,note:string>")
    rows = by_id(df)
    assert {k: (r["qty"], r["price"], r["score"], r["note"]) for k, r in rows.items()} == {
        "a": (1, D("1.50"), 0.5, None), "b": (2, D("99999999.99"), 1.25, None), "c": (2147483647, None, None, None)}
    # Time travel shows the table as it was, as Apache Hudi does: the columns and types of that instant.
    then = evolved.read(as_of=timeline.commits()[-2].timestamp)
    assert then.schema.simpleString().endswith(",id:string,region:string,qty:int,price:decimal(10,2),score:float>")
    assert {k: (r["qty"], r["price"], r["score"]) for k, r in by_id(then).items()} == {
        "a": (1, D("1.50"), 0.5), "b": (2, D("99999999.99"), 1.25), "c": (2147483647, None, None)}
    assert_hudi_rs_agrees(evolved)

    # An upsert in the new columns rewrites eu's file(s) (old rows carried over) and leaves us's old file.
    incoming = [("a", "eu", 2 ** 40, D("1234567890.12"), 0.1, "big"), ("d", "eu", 4, D("4.00"), 4.0, "new")]
    first = evolved.write(spark.createDataFrame(incoming, NEW_DDL), "upsert")
    assert (first.inserted, first.updated) == (1, 1)
    for path in first.files:
        written = pq.read_schema(os.path.join(table.location, path))
        assert str(written.field("qty").type) == "int64" and "note" in written.names
    rows = by_id(evolved.read())
    assert {k: (r["qty"], r["price"], r["score"], r["note"]) for k, r in rows.items()} == {
        "a": (2 ** 40, D("1234567890.12"), pytest.approx(0.1), "big"), "b": (2, D("99999999.99"), 1.25, None),
        "c": (2147483647, None, None, None), "d": (4, D("4.00"), 4.0, "new")}
    assert rows["b"]["_hoodie_commit_time"] == rows["c"]["_hoodie_commit_time"] != first.instant
    assert_hudi_rs_agrees(evolved)  # old (us) and new (eu) files side by side

    second = evolved.write(spark.createDataFrame([("e", "us", 5, D("5.00"), 5.0, "us-new")], NEW_DDL), "upsert")
    assert second.inserted == 1
    rows = by_id(evolved.read())
    assert rows["c"]["qty"] == 2147483647 and rows["c"]["note"] is None and rows["e"]["note"] == "us-new"
    assert len(rows) == 5
    assert_hudi_rs_agrees(evolved)


NESTED = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: things}
spec:
  location: things
  columns:
    - {name: id, type: string, nullable: false}
    - {name: total, type: long}
    - {name: ratio, type: int}
    - {name: info, type: "struct<a:int>"}
    - {name: tags, type: "array<int>"}
    - {name: attrs, type: "map<string,int>"}
  recordKey: {fields: [id]}
  index: {type: SIMPLE}
"""
NESTED_EVOLVED = (NESTED.replace("{name: total, type: long}", "{name: total, type: double}")
                  .replace("{name: ratio, type: int}", "{name: ratio, type: float}")
                  .replace("struct<a:int>", "struct<a:long,b:string>")
                  .replace("array<int>", "array<long>").replace("map<string,int>", "map<string,long>"))


def test_widenings_spark_cannot_read_natively_and_nested_fields(spark, tmp_path):
    """long -> double and int -> float (Spark's parquet reader refuses both), struct fields added
    and widened, array / map elements widened."""
    table = make_table(spark, tmp_path, NESTED)
    table.write(spark.createDataFrame(
        [("x", 2 ** 53 + 1, 16777217, (1,), [1, 2], {"k": 3}), ("y", None, None, None, None, None)],
        "id string, total long, ratio int, info struct<a:int>, tags array<int>, attrs map<string,int>"),
        "upsert")
    p = plan(tmp_path, NESTED_EVOLVED)
    assert [(a.kind, a.destructive) for a in p.tables[0].actions] == [("schema_evolution", False)]
    Applier().apply(p)
    evolved = evolved_table(spark, table, NESTED_EVOLVED)
    rows = by_id(evolved.read())
    x = rows["x"]
    assert (x["total"], x["ratio"]) == (float(2 ** 53), 16777216.0)  # rounded, as Java widens them
    assert (x["info"].asDict(), x["tags"], x["attrs"]) == ({"a": 1, "b": None}, [1, 2], {"k": 3})
    assert [rows["y"][c] for c in ("total", "ratio", "info", "tags", "attrs")] == [None] * 5
    assert_hudi_rs_agrees(evolved)

    evolved.write(spark.createDataFrame([("z", 1.5, 2.5, (2, "b"), [3], {"m": 4})],
                                        "id string, total double, ratio float, "
                                        "info struct<a:long,b:string>, tags array<long>, attrs map<string,long>"),
                  "upsert")  # the merge carries x and y over from the old file
    rows = by_id(evolved.read())
    assert rows["x"]["info"].asDict() == {"a": 1, "b": None} and rows["x"]["total"] == float(2 ** 53)
    assert rows["z"]["info"].asDict() == {"a": 2, "b": "b"} and len(rows) == 3
    assert_hudi_rs_agrees(evolved)


@pytest.mark.parametrize("edit, reason", [
    (("    - {name: score, type: float}\n", ""), "drop column score"),
    (("{name: qty, type: int}", "{name: qty, type: string}"), "change type of column qty: int -> string"),
    (("decimal(10,2)", "decimal(8,2)"), "change type of column price"),
    (("{name: qty, type: int}", "{name: qty, type: int, nullable: false}"), "column qty becomes NOT NULL"),
    (("{name: score, type: float}", "{name: score, type: float}\n    - {name: must, type: string, nullable: false}"),
     "add column must string not null"),
])
def test_drop_or_narrowing_is_destructive_and_refused(spark, tmp_path, monkeypatch, capsys, edit, reason):
    spec_text = SPEC.replace("INDEX", INDEXES["bucket"])
    table = make_table(spark, tmp_path / "warehouse", spec_text)
    table.write(spark.createDataFrame([("a", "eu", 1, D("1.50"), 0.5)], OLD_DDL), "upsert")
    before = observe(HudiTable.open(table.location))
    spec_file = tmp_path / "items.yaml"
    spec_file.write_text(spec_text.replace(*edit))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TABLESPEC_WAREHOUSE", raising=False)

    [action] = plan(tmp_path / "warehouse", spec_file.read_text()).tables[0].actions
    assert (action.kind, action.destructive, action.symbol) == ("replace_table", True, "-/+")
    assert any(r.startswith(reason) for r in action.reasons), action.reasons
    code = main(["apply", str(spec_file), "--warehouse", "warehouse", "--auto-approve"])
    _, err = capsys.readouterr()
    assert code == 1 and "--allow-destructive" in err and "nothing was changed" in err
    after = observe(HudiTable.open(table.location))
    assert (after.head, after.columns) == (before.head, before.columns)


def test_schema_evolution_through_the_cli(spark, tmp_path, monkeypatch, capsys):
    table = make_table(spark, tmp_path / "warehouse", SPEC.replace("INDEX", INDEXES["bucket"]))
    table.write(spark.createDataFrame([("a", "eu", 1, D("1.50"), 0.5)], OLD_DDL), "upsert")
    spec_file = tmp_path / "items.yaml"
    spec_file.write_text(EVOLVED.replace("INDEX", INDEXES["bucket"]))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TABLESPEC_WAREHOUSE", raising=False)
    args = [str(spec_file), "--warehouse", "warehouse"]
    assert main(["plan", *args, "--detailed-exitcode"]) == 2
    out, _ = capsys.readouterr()
    assert "schema_evolution" in out and "add column note string" in out
    assert main(["apply", *args, "--auto-approve"]) == 0
    out, _ = capsys.readouterr()
    assert "items: schema_evolution done" in out
    assert main(["plan", *args, "--detailed-exitcode"]) == 0
    out, _ = capsys.readouterr()
    assert out.startswith("No changes.")
    assert {r["note"] for r in by_id(evolved_table(spark, table, spec_file.read_text()).read()).values()} == {None}


# Metadata only: no Spark below.

def _empty_table(tmp_path, text: str) -> str:
    spec = load(text).specs[0].spec
    location = table_location(str(tmp_path), spec.spec.location)
    create_table(HudiTable.open(location), spec)
    return location


def test_evolve_schema_is_idempotent_and_refuses_destructive_specs(tmp_path):
    location = _empty_table(tmp_path, SPEC.replace("INDEX", INDEXES["simple"]))
    new = load(EVOLVED.replace("INDEX", INDEXES["simple"])).specs[0].spec
    instant = evolve_schema(HudiTable.open(location), new)
    assert instant is not None and observe(HudiTable.open(location)).head == instant
    assert evolve_schema(HudiTable.open(location), new) is None  # a re-run finds nothing to change
    dropped_text = SPEC.replace("INDEX", INDEXES["simple"]).replace("    - {name: score, type: float}\n", "")
    dropped = load(dropped_text).specs[0].spec
    with pytest.raises(StalePlanError, match="drop column score"):
        evolve_schema(HudiTable.open(location), dropped)
    assert observe(HudiTable.open(location)).head == instant


@pytest.mark.parametrize("through_plan", [True, False])
def test_crashed_schema_evolution_is_rolled_back_then_applied(warehouse, through_plan):
    """A dead apply left an inflight instant (no heartbeat): the plan rolls it back first; the
    executor alone also recovers it (under the lock) before committing."""
    location = _empty_table(warehouse, SPEC.replace("INDEX", INDEXES["simple"]))
    storage = storage_and_base(location)[0]
    writer = TimelineWriter(storage, location)
    crashed = new_instant_time()
    writer.start(writer.request("commit", crashed), b"")
    evolved_text = EVOLVED.replace("INDEX", INDEXES["simple"])
    if through_plan:
        assert [a.kind for a in plan(warehouse, evolved_text).tables[0].actions] == ["rollback", "schema_evolution"]
        Applier().apply(plan(warehouse, evolved_text))
    else:
        evolve_schema(HudiTable.open(location), load(evolved_text).specs[0].spec)
    timeline = Timeline.load(storage, location)
    assert not timeline.pending() and not timeline.contains_completed(crashed)
    assert [i.action for i in timeline.completed()] == ["rollback", "commit"]
    assert not plan(warehouse, evolved_text).has_changes


def test_schema_action_does_not_import_pyspark():
    code = ("import sys, tablespec.actions.schema, tablespec.apply; "
            "assert not [m for m in sys.modules if m.startswith('pyspark')]")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_read_falls_back_to_footer_schema_when_commit_has_none(spark, tmp_path):
    """A file whose commit records no schema (or was archived) is read by its footer's Avro schema."""
    text = SPEC.replace("INDEX", INDEXES["simple"])
    table = make_table(spark, tmp_path, text)
    write = table.write(spark.createDataFrame([("a", "eu", 1, D("1.50"), 0.5)], OLD_DDL), "upsert")
    Applier().apply(plan(tmp_path, EVOLVED.replace("INDEX", INDEXES["simple"])))
    storage = LocalStorage()
    timeline = Timeline.load(storage, table.location)
    [instant] = [i for i in timeline.commits() if i.timestamp == write.instant]
    meta = timeline.commit_metadata(instant)
    meta.extra_metadata.pop("schema")
    storage.write_atomic(f"{table.location}/.hoodie/{instant.file_name}", meta.to_json())
    [columns] = written_columns(table.table, snapshot_files(table.table)).values()
    assert (columns["qty"], columns["price"], "note" in columns) == (Primitive("int"), Decimal(10, 2), False)
    evolved = evolved_table(spark, table, EVOLVED.replace("INDEX", INDEXES["simple"]))
    [row] = evolved.read().collect()
    assert (row.qty, row.price, row.score, row.note) == (1, D("1.50"), 0.5, None)
    assert_hudi_rs_agrees(evolved)


def test_align_to_schema_fills_casts_orders_and_drops():
    old = pa.table({"extra": [1, 2], "qty": pa.array([1, 2 ** 31 - 1], pa.int32()),
                    "info": pa.array([{"a": 1}, None], pa.struct([("a", pa.int32())])),
                    "big": pa.array([2 ** 53 + 1, None], pa.int64())})
    schema = pa.schema([("note", pa.string()), ("info", pa.struct([("a", pa.int64()), ("b", pa.string())])),
                        ("qty", pa.int64()), ("big", pa.float64())])
    aligned = align_to_schema(old, schema)
    assert aligned.schema == schema
    assert aligned.to_pylist() == [
        {"note": None, "info": {"a": 1, "b": None}, "qty": 1, "big": float(2 ** 53)},
        {"note": None, "info": None, "qty": 2 ** 31 - 1, "big": None}]
    with pytest.raises(pa.ArrowInvalid):  # narrowing is never a widening: refused, not truncated
        align_to_schema(pa.table({"qty": pa.array([2 ** 40], pa.int64())}), pa.schema([("qty", pa.int32())]))

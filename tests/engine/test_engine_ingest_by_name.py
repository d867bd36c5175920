"""`ingest` maps CSV and JSON input by column name, refuses unknown names, and reports a value Spark
cannot parse in one line (file, column, value)."""
from __future__ import annotations

import pytest
from helpers import make_table

from tablespec.cli import main
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.timeline.active import Timeline

pytestmark = pytest.mark.spark

SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: readings}
spec:
  location: readings
  columns:
    - {name: id, type: string, nullable: false}
    - {name: v, type: int}
    - {name: p, type: string}
  recordKey: {fields: [id]}
  partitioning: {fields: [p]}
"""


@pytest.fixture
def ingest(spark, tmp_path, capsys):
    spec = tmp_path / "readings.yaml"
    spec.write_text(SPEC)
    table = make_table(spark, tmp_path / "wh", SPEC)

    def run(name: str, text: str, fmt: str = "csv"):
        path = tmp_path / name
        path.write_text(text)
        code = main(["ingest", str(spec), "--input", str(path), "--input-format", fmt, "--operation", "upsert",
                     "--warehouse", str(tmp_path / "wh")])
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        return code, out, err, path
    run.table = table
    return run


def _commits(table) -> int:
    return len(Timeline.load(LocalStorage(), table.location).commits())


def test_csv_header_in_another_order_maps_by_name(ingest):
    code, out, err, _ = ingest("in.csv", "p,v,id\nday1,7,keyA\nday2,8,keyB\n")
    assert code == 0, err
    rows = {r.id: (r.v, r.p, r._hoodie_partition_path) for r in ingest.table.read().collect()}
    assert rows == {"keyA": (7, "day1", "p=day1"), "keyB": (8, "day2", "p=day2")}


def test_csv_missing_nullable_column_is_filled(ingest):
    code, _, err, _ = ingest("in.csv", "id,p\nkeyC,day1\n")
    assert code == 0, err
    assert [(r.id, r.v) for r in ingest.table.read().collect()] == [("keyC", None)]


@pytest.mark.parametrize("name, text, fmt, message", [
    ("unknown.csv", "id,v,p,colour\nk,1,d,red\n", "csv", "'colour' is not a column of table readings"),
    ("twice.csv", "id,v,v,p\nk,1,2,d\n", "csv", "column 'v' appears twice"),
    ("unknown.json", '{"id": "k", "v": 1, "p": "d", "colour": "red"}\n', "json", "'colour' is not a column"),
])
def test_unknown_or_repeated_names_are_refused_by_name(ingest, name, text, fmt, message):
    code, _, err, _ = ingest(name, text, fmt)
    assert code == 1 and message in err
    assert _commits(ingest.table) == 0


def test_json_maps_by_key(ingest):
    code, _, err, _ = ingest("in.json", '{"p": "d1", "id": "k1", "v": 3}\n', "json")
    assert code == 0, err
    assert [(r.id, r.v, r.p) for r in ingest.table.read().collect()] == [("k1", 3, "d1")]


def test_unparsable_value_is_one_line_naming_file_column_and_value(ingest):
    code, _, err, path = ingest("bad.csv", "p,v,id\nday1,1,a\nday2,abc,b\n")
    assert code == 1
    line = err.strip().splitlines()[-1]
    assert f"{path}: column 'v': cannot parse 'abc' as int; nothing was committed" in line, err
    assert len(err.strip().splitlines()) <= 2 and _commits(ingest.table) == 0


def test_empty_input_makes_no_commit(ingest):
    code, out, err, _ = ingest("empty.csv", "id,v,p\n")
    assert code == 0, err
    assert "nothing written (upsert): the input has no rows, so no commit was made" in out
    assert _commits(ingest.table) == 0


SPEC_ORDERED = SPEC.replace("  partitioning: {fields: [p]}\n", "  partitioning: {fields: [p]}\n  orderingField: v\n")


def test_rows_older_than_the_stored_ones_are_counted(spark, tmp_path):
    table = make_table(spark, tmp_path, SPEC_ORDERED)
    table.write(spark.createDataFrame([("a", 5, "d"), ("b", 5, "d")], "id string, v int, p string"), "upsert")
    result = table.write(spark.createDataFrame([("a", 1, "d"), ("b", 9, "d"), ("c", 1, "d")],
                                               "id string, v int, p string"), "upsert")
    assert (result.inserted, result.updated, result.ignored) == (1, 1, 1)
    assert "1 inserted, 1 updated, 0 deleted, 1 ignored (the stored row is newer)" in str(result)
    assert {r.id: r.v for r in table.read().collect()} == {"a": 5, "b": 9, "c": 1}

"""Version 8 -> 9: a table Apache Hudi 1.0.2 wrote (its metadata table on, as its default) gets
`spec.tableVersion: 9`; the plan shows `upgrade_table`, and apply leaves hoodie.properties (the
table's and its metadata table's) as Hudi 1.2.0 leaves them when its first write upgrades a copy of
the same table. Hudi 1.2.0 then reads it as tablespec and hudi-rs do and writes into it with
`hudi-options`; tablespec writes on. A kill -9 between the metadata table's switch and the table's
leaves a version-8 table that reads as before, and the next apply finishes."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
from helpers import hudi_rs_rows, rows, run_script, tablespec_rows
from hudi_process import Batch, read_step, write_step
from interop_support import apply_until_done, cli, save_spec
from test_hudi_tables import KEYED, SCHEMA, _import, _table

from tablespec.faults import CRASH_ENV
from tablespec.hudi.formats.properties import parse_properties

V8 = tuple(Batch.of({"hoodie.table.name": "orders_v8", **KEYED, "hoodie.datasource.write.operation": op}, SCHEMA, b)
           for op, b in [("upsert", [("a", 1, "2024-01-01", 1), ("b", 2, "2024-01-02", 1)]),
                         ("upsert", [("a", 10, "2024-01-01", 2), ("c", 3, "2024-01-02", 2)])])
UPSERT = {"hoodie.table.name": "orders_v8", **KEYED, "hoodie.datasource.write.operation": "upsert"}


def _props(location, metadata: bool = False) -> dict[str, str]:
    path = Path(location, ".hoodie", *(["metadata", ".hoodie"] if metadata else []), "hoodie.properties")
    return {k: v for k, v in parse_properties(path.read_text("latin-1")).items() if k != "hoodie.table.checksum"}


def _plan(capsys, spec_file, warehouse) -> list[dict]:
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(warehouse), "--format", "json")
    assert code == 0, err
    return [a for t in json.loads(out)["tables"] for a in t["actions"]]


def _upgrade_spec(tmp_path, location, capsys) -> tuple[dict, str]:
    doc, spec_file = _import(tmp_path, location, capsys)
    doc["spec"]["tableVersion"] = 9
    save_spec(doc, spec_file)
    [action] = _plan(capsys, spec_file, tmp_path)
    assert action["kind"] == "upgrade_table" and action["params"] == {"from": 8, "to": 9}, action
    assert "8 -> 9" in action["reasons"][0]
    return doc, spec_file


def test_a_version_8_table_upgraded_to_9_as_hudi_1_2_does(hudi, hudi10, hudi1, tmp_path, capsys):
    theirs, _ = hudi10.copy(V8, tmp_path / "theirs" / "orders_v8")
    location, hudi_read = hudi10.copy(V8, tmp_path / "orders_v8")
    assert _props(location)["hoodie.table.version"] == "8"
    hudi1.process.run([write_step(theirs, UPSERT, SCHEMA, [("z", 0, "2024-01-03", 0)])])   # Hudi 1.2 upgrades its copy

    doc, spec_file = _upgrade_spec(tmp_path, location, capsys)
    kinds = apply_until_done(capsys, spec_file, tmp_path)
    assert kinds[0] == "upgrade_table" and set(kinds[1:]) <= {"drop_metadata_partitions", "clean"}, kinds
    ours = _props(location)
    assert ours["hoodie.table.version"] == "9"
    for key in ("hoodie.table.version", "hoodie.table.ordering.fields", "hoodie.table.legacy.payload.class",
                "hoodie.record.merge.mode", "hoodie.table.precombine.field", "hoodie.record.merge.strategy.id",
                "hoodie.compaction.payload.class", "hoodie.table.initial.version", "hoodie.timeline.layout.version"):
        assert ours.get(key) == _props(theirs).get(key), key
    assert _props(location, metadata=True)["hoodie.table.version"] == "9" == _props(theirs, metadata=True)["hoodie.table.version"]

    table = _table(hudi, doc, location)
    before = tablespec_rows(table)
    assert before == rows(pa.Table.from_pylist(hudi_read)) == hudi_rs_rows(str(location))
    code, out, err = cli(capsys, "hudi-options", str(spec_file), "--warehouse", str(tmp_path), "--format", "json")
    assert code == 0, err
    options = {**json.loads(out), "hoodie.datasource.write.operation": "upsert"}
    options.pop("path")
    snapshot, _, after = hudi1.process.run([read_step(location), write_step(location, options, SCHEMA,
                                                                            [("b", 20, "2024-01-02", 3)]),
                                            read_step(location)])
    assert rows(pa.Table.from_pylist(snapshot)) == before
    table.write(hudi.createDataFrame([("d", 4, "2024-01-01", 4)], SCHEMA))
    by_id = {dict(r)["id"]: dict(r)["v"] for r in tablespec_rows(table)}
    assert by_id == {"a": 10, "b": 20, "c": 3, "d": 4}
    assert {r["id"]: r["v"] for r in after} == {"a": 10, "b": 20, "c": 3}
    # hudi-rs read the upgraded table above; not after Hudi 1.2's write: the metadata table's base file is
    # Hudi 1.0.2's (its HoodieMetadataRecord has 10 column-statistics fields) and Hudi 1.2 appends blocks
    # under its own (11), which hudi-rs does not reconcile, whoever writes next


def test_an_upgrade_from_8_killed_after_the_metadata_tables_switch_is_finished(hudi, hudi10, tmp_path, capsys):
    location, hudi_read = hudi10.copy(V8, tmp_path / "orders_v8")
    doc, spec_file = _upgrade_spec(tmp_path, location, capsys)
    died = run_script(f"""
        from tablespec.cli import main
        main(["apply", {str(spec_file)!r}, "--warehouse", {str(tmp_path)!r}, "--auto-approve"])
    """, **{CRASH_ENV: "upgrade.metadata_table"})
    assert died.returncode == -9, died.stderr[-2000:]
    assert _props(location)["hoodie.table.version"] == "8" and _props(location, metadata=True)["hoodie.table.version"] == "9"
    doc8 = {**doc, "spec": {k: v for k, v in doc["spec"].items() if k != "tableVersion"}}
    assert tablespec_rows(_table(hudi, doc8, location)) == rows(pa.Table.from_pylist(hudi_read)) \
        == hudi_rs_rows(str(location))
    kinds = apply_until_done(capsys, spec_file, tmp_path)
    assert kinds[0] == "upgrade_table", kinds
    assert _props(location)["hoodie.table.version"] == "9"

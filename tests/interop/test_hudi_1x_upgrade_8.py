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
from hudi_process import Batch, read_step, sql_step, write_step
from interop_support import SHORT_LIVED_JVM, apply_until_done, cli, save_spec
from test_hudi_tables import KEYED, SCHEMA, _import, _table

from tablespec.faults import CRASH_ENV
from tablespec.hudi.formats.properties import parse_properties
from tablespec.hudi.table import HudiTable

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
    _killed_upgrade(hudi, tmp_path, capsys, *hudi10.copy(V8, tmp_path / "orders_v8"))


def _killed_upgrade(hudi, tmp_path, capsys, location, hudi_read, views=("snapshot",)) -> tuple:
    """kill -9 between the metadata table's switch to 9 and the table's: the table stays version 8 and
    reads as Hudi read it (each of `views`); the next apply finishes the upgrade. Returns the spec
    document and file."""
    doc, spec_file = _upgrade_spec(tmp_path, location, capsys)
    died = run_script(f"""
        from tablespec.cli import main
        main(["apply", {str(spec_file)!r}, "--warehouse", {str(tmp_path)!r}, "--auto-approve"])
    """, **{CRASH_ENV: "upgrade.metadata_table"}, **SHORT_LIVED_JVM)
    assert died.returncode == -9, died.stderr[-2000:]
    assert _props(location)["hoodie.table.version"] == "8" and _props(location, metadata=True)["hoodie.table.version"] == "9"
    doc8 = {**doc, "spec": {k: v for k, v in doc["spec"].items() if k != "tableVersion"}}
    table = _table(hudi, doc8, location)
    assert tablespec_rows(table) == rows(pa.Table.from_pylist(hudi_read)) == hudi_rs_rows(str(location))
    views_before = {v: tablespec_rows(table, view=v) for v in views}
    kinds = apply_until_done(capsys, spec_file, tmp_path)
    assert kinds[0] == "upgrade_table", kinds
    assert _props(location)["hoodie.table.version"] == "9"
    table = _table(hudi, doc, location)
    assert {v: tablespec_rows(table, view=v) for v in views} == views_before
    return doc, spec_file


# A merge-on-read table Hudi 1.0.2 wrote (metadata table on): inserts, an update to a log file, a
# compaction scheduled after an update (pending), and an update to a log file after it.
MOR_V8 = {"hoodie.table.name": "events_v8", **KEYED, "hoodie.datasource.write.table.type": "MERGE_ON_READ",
          "hoodie.compact.inline": "false", "hoodie.upsert.shuffle.parallelism": "1",
          "hoodie.datasource.write.operation": "upsert"}
SCHEDULE = {"hoodie.compact.schedule.inline": "true", "hoodie.compact.inline.max.delta.commits": "1"}
V8_MOR = tuple(Batch.of({**MOR_V8, **extra}, SCHEMA, b)
               for extra, b in [({}, [("a", 1, "2024-01-01", 1), ("b", 2, "2024-01-02", 1)]),
                                ({}, [("a", 10, "2024-01-01", 2), ("c", 3, "2024-01-02", 2)]),
                                (SCHEDULE, [("b", 20, "2024-01-02", 3)]),
                                ({}, [("a", 100, "2024-01-01", 4)])])


def test_a_version_8_merge_on_read_table_upgraded_to_9_as_hudi_1_2_does(hudi, hudi10, hudi1, tmp_path, capsys):
    """The plan of the version-8 table without spec.tableVersion holds the pending compaction's run
    back (the upgrade comes first; the settings change stays, which apply refuses); with it, the
    upgrade alone, which apply runs with the compaction pending, as Hudi 1.2 upgrades beside it.
    hoodie.properties end as Hudi 1.2's first write leaves a copy's;
    Hudi 1.2 reads the snapshot and read-optimized views as tablespec, its metadata-table validation
    passes, it runs the pending compaction and upserts (a deltacommit); tablespec reads the same,
    plans clean and schedules the next compaction."""
    theirs, _ = hudi10.copy(V8_MOR, tmp_path / "theirs" / "events_v8")
    location, hudi_read = hudi10.copy(V8_MOR, tmp_path / "events_v8")
    assert _props(location)["hoodie.table.version"] == "8"
    hudi1.process.run([write_step(theirs, MOR_V8, SCHEMA, [("z", 0, "2024-01-03", 0)])])   # Hudi 1.2 upgrades its copy

    doc, spec_file = _import(tmp_path, location, capsys)
    doc["spec"]["compaction"] = {"runBy": "tablespec", "deltaCommits": 1}
    save_spec(doc, spec_file)
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path), "--format", "json")
    assert code == 0, err
    [held] = json.loads(out)["tables"]
    assert [a["kind"] for a in held["actions"]] == ["update_settings"] and any(
        "compaction wait(s) for the upgrade to version 9" in w for w in held["warnings"]), held
    del doc["spec"]["compaction"]   # Hudi runs the pending compaction
    doc["spec"]["tableVersion"] = 9
    save_spec(doc, spec_file)
    [action] = _plan(capsys, spec_file, tmp_path)
    assert action["kind"] == "upgrade_table" and action["params"] == {"from": 8, "to": 9}, action
    kinds = apply_until_done(capsys, spec_file, tmp_path)
    assert kinds[0] == "upgrade_table" and "compaction" not in kinds, kinds
    assert _props(location) == _props(theirs)
    assert _props(location, metadata=True)["hoodie.table.version"] == "9"

    table = _table(hudi, doc, location)
    snapshot, optimized = tablespec_rows(table), tablespec_rows(table, view="read_optimized")
    assert snapshot == rows(pa.Table.from_pylist(hudi_read))
    code, out, err = cli(capsys, "hudi-options", str(spec_file), "--warehouse", str(tmp_path), "--format", "json")
    assert code == 0, err
    options = {**json.loads(out), "hoodie.datasource.write.operation": "upsert"}
    options.pop("path")
    steps = [read_step(location), read_step(location, **{"hoodie.datasource.query.type": "read_optimized"}),
             sql_step(f"CREATE TABLE events_v8 USING hudi LOCATION '{location}'"),
             sql_step("CALL validate_metadata_table_files(table => 'events_v8')"),
             sql_step(f"CALL run_compaction(op => 'run', path => '{location}')"),
             write_step(location, options, SCHEMA, [("b", 200, "2024-01-02", 5), ("d", 4, "2024-01-01", 5)]),
             sql_step("CALL validate_metadata_table_files(table => 'events_v8')"), read_step(location)]
    their_snapshot, their_optimized, _, invalid, _, _, still_invalid, after = hudi1.process.run(steps)
    assert rows(pa.Table.from_pylist(their_snapshot)) == snapshot
    assert rows(pa.Table.from_pylist(their_optimized)) == optimized != snapshot
    assert invalid == [] and still_invalid == []
    timeline = HudiTable.open(str(location)).timeline
    actions = [i.action for i in timeline.completed()]
    assert (actions.count("commit"), actions.count("deltacommit")) == (1, 5)   # Hudi 1.2's compaction and upsert
    assert not timeline.pending()
    table = _table(hudi, doc, location)
    assert tablespec_rows(table) == rows(pa.Table.from_pylist(after))
    assert {dict(r)["id"]: dict(r)["v"] for r in tablespec_rows(table)} == {"a": 100, "b": 200, "c": 3, "d": 4}
    doc["spec"]["retention"]["keepCommits"] = 1
    doc["spec"]["compaction"] = {"runBy": "tablespec", "deltaCommits": 1}
    save_spec(doc, spec_file)
    assert {"clean", "compaction"} <= {a["kind"] for a in _plan(capsys, spec_file, tmp_path)}


def test_a_merge_on_read_upgrade_from_8_killed_after_the_metadata_tables_switch_is_finished(hudi, hudi10, tmp_path,
                                                                                            capsys):
    """The same kill on the merge-on-read table (log files, a pending compaction): both views read as
    before the kill and after the finished upgrade, the compaction still pending, hoodie.properties as
    an upgrade that was never killed leaves them (the test above)."""
    location, hudi_read = hudi10.copy(V8_MOR, tmp_path / "events_v8")
    pending = [i.timestamp for i in HudiTable.open(str(location)).timeline.pending()]
    _killed_upgrade(hudi, tmp_path, capsys, location, hudi_read, views=("snapshot", "read_optimized"))
    assert [i.timestamp for i in HudiTable.open(str(location)).timeline.pending()] == pending != []
    assert _props(location)["hoodie.table.ordering.fields"] == "ts"

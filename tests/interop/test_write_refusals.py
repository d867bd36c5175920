"""A refused write changes nothing, and says what `plan` says; drift a write does not care about
does not stop it; a restore Apache Hudi left pending is noticed.

- Tables Apache Hudi 1.2 wrote with its defaults keep `column_stats` in their metadata table, which
  tablespec does not maintain and drops before a write of its own: a write refused (a spec that
  lags the table, a MERGE_ON_READ table) must come before that, and leave every file as it was.
- Spark SQL's `CREATE TABLE ... USING hudi LOCATION` writes `hoodie.database.name=default` into
  the table it registers: the table's database stands where the spec names none, and a name never
  stops a write.
- Hudi's `rollback_to_savepoint` that stopped half-way leaves `R.restore.inflight`: Hudi 0.15's
  and 1.2's writers refuse the table until the restore is run again, and so do `plan` and writes here.
"""
from __future__ import annotations

import pytest
from _support import table_files
from helpers import make_table
from hudi_process import Batch, failing, sql_step, write_step
from interop_support import HISTORY_DDL, cli, history_spec, hudi_write, save_spec
from test_hudi_1x_tables import SIMPLE_V6, _properties
from test_hudi_tables import FIRST, KEYED, SCHEMA, _df, _import, _options, _table

from tablespec.engine.writer import WriteRefused
from tablespec.hudi.table import HudiTable, Location
from tablespec.importer import spec_document
from tablespec.state import observe

MOR_DEFAULTS = (Batch.of({"hoodie.table.name": "mor9", **KEYED, "hoodie.datasource.write.table.type": "MERGE_ON_READ",
                          "hoodie.datasource.write.operation": "upsert"}, SCHEMA, FIRST),)
MOR_SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: mor9}
spec:
  location: mor9
  columns:
    - {name: id, type: string, nullable: false}
    - {name: v, type: int}
    - {name: dt, type: string}
    - {name: ts, type: long}
  recordKey: {fields: [id]}
  partitioning: {fields: [dt]}
  orderingField: ts
"""
MORE = [("d", 4, "2024-01-02", 2)]
# Hudi 1.2 at its defaults but column statistics (which tablespec drops before a write: see above)
RESTORED_V9 = {**_options("restored9"), "hoodie.metadata.index.column.stats.enable": "false",
               "hoodie.metadata.index.partition.stats.enable": "false"}
# Hudi's own cleaning and archiving: Spark SQL's CREATE TABLE rewrites hoodie.properties without the
# writer settings tablespec keeps there, and a table at Hudi's defaults loses nothing by that
HUDI_RETENTION = "{keepCommits: 10}"


def _ingest(capsys, tmp_path, spec_file) -> tuple[int, str]:
    """`tablespec ingest` of MORE: exit code and its last line on stderr."""
    csv = tmp_path / "more.csv"
    csv.write_text("id,v,dt,ts\n" + "".join(",".join(map(str, r)) + "\n" for r in MORE))
    code, out, err = cli(capsys, "ingest", str(spec_file), "--input", str(csv), "--warehouse", str(tmp_path))
    assert "Traceback" not in err and not out
    return code, err.strip().splitlines()[-1]


def test_refused_writes_change_nothing_on_tables_hudi_1x_wrote(hudi, hudi1, tmp_path, capsys):
    hudi1.prepare(SIMPLE_V6, MOR_DEFAULTS)   # one Hudi 1.2.0 process writes both
    v6, _ = hudi1.copy(SIMPLE_V6, tmp_path / "simple_v6")
    mor, _ = hudi1.copy(MOR_DEFAULTS, tmp_path / "mor9")

    # version 6, column_stats on (Hudi 1.2's default); the spec's file sizing lags the table's
    doc, spec_file = _import(tmp_path, v6, capsys, ("drop_metadata_partitions",))
    doc["spec"]["clustering"] = {**doc["spec"].get("clustering", {}), "targetFileSize": "512MB"}
    save_spec(doc, spec_file)
    assert "column_stats" in _properties(v6)["hoodie.table.metadata.partitions"]
    before = table_files(v6)
    refusal = ("table simple_v6 does not match its spec (update_settings pending); "
               "run `tablespec plan` and `tablespec apply` first")
    with pytest.raises(WriteRefused) as refused:
        _table(hudi, doc, v6).write(_df(hudi, MORE))
    assert str(refused.value) == refusal
    assert _ingest(capsys, tmp_path, spec_file) == (1, f"error: {refusal}")
    assert table_files(v6) == before

    # MERGE_ON_READ, column_stats on: the one line `plan` gives
    assert "column_stats" in _properties(mor)["hoodie.table.metadata.partitions"]
    spec_file = tmp_path / "mor9.yaml"
    spec_file.write_text(MOR_SPEC)
    before = table_files(mor)
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path))
    planned = err.strip().splitlines()
    assert code == 1 and len(planned) == 1 and "is a MERGE_ON_READ table" in planned[0], out + err
    assert _ingest(capsys, tmp_path, spec_file) == (1, planned[0])
    table = _table_with(hudi, spec_file, mor)
    with pytest.raises(WriteRefused) as refused:
        table.write(_df(hudi, MORE))
    assert f"error: {refused.value}" == planned[0]
    assert table_files(mor) == before


def test_a_database_spark_sql_wrote_does_not_stop_writes(hudi, tmp_path, capsys):
    """`CREATE TABLE ... USING hudi LOCATION` over a tablespec table: its database stands, writes go on."""
    spec_file = tmp_path / "registered.yaml"
    spec_file.write_text(history_spec("registered", retention=HUDI_RETENTION))
    table = make_table(hudi, tmp_path, spec_file.read_text())
    table.write(hudi.createDataFrame([("a", 1, 1, "d1")], HISTORY_DDL))
    hudi.sql(f"CREATE TABLE refusals_registered USING hudi LOCATION '{table.location}'")
    try:
        assert _properties(tmp_path / "registered")["hoodie.database.name"] == "default"
        code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path), "--detailed-exitcode")
        assert code == 0 and out.startswith("No changes."), out + err
        result = table.write(hudi.createDataFrame([("b", 2, 1, "d1")], HISTORY_DDL))
        assert result.instant is not None and result.inserted == 1
        # a spec naming another database: plan shows it, and the write still goes on
        spec_file.write_text(history_spec("registered", database="sales", retention=HUDI_RETENTION))
        code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path))
        assert code == 0 and "~ metadata.database: \"default\" -> \"sales\"" in out, out + err
        renamed = _table_with(hudi, spec_file, table.location)
        assert renamed.write(hudi.createDataFrame([("c", 3, 1, "d1")], HISTORY_DDL)).inserted == 1
    finally:
        hudi.sql("DROP TABLE IF EXISTS refusals_registered")


def _table_with(spark, spec_file, location):
    from tablespec.spec.loader import load_spec_text
    from tablespec.table import Table
    return Table(load_spec_text(spec_file.read_text(), spec_file.name).specs[0].spec, str(location), spark)


def _restore_refused(hudi, capsys, tmp_path, location, name, restore, savepoint):
    """`plan`, a write and `ingest` refuse the table with Hudi's restore pending in one and the same line
    saying how to finish it: (spec file, table, that line, the CALL that finishes it, the files before)."""
    doc = spec_document(observe(HudiTable.open(str(location))), Location.parse(str(tmp_path)))
    spec_file = tmp_path / f"{name}.yaml"
    save_spec(doc, spec_file)
    before = table_files(location)
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path))
    line = err.strip().splitlines()[-1]
    assert code == 1 and not out and "Traceback" not in err, err
    assert f"Apache Hudi's restore {restore} to savepoint {savepoint} is pending ({restore}.restore.inflight)" in line
    finish = f"CALL rollback_to_savepoint(path => '{location}', instant_time => '{savepoint}')"
    assert finish in line
    table = _table(hudi, doc, location)
    with pytest.raises(WriteRefused) as refused:
        table.write(_df(hudi, MORE))
    assert f"error: {refused.value}" == line
    assert _ingest(capsys, tmp_path, spec_file) == (1, line)
    return spec_file, table, line, finish, before


def test_a_pending_restore_is_shown_and_refused_untouched(hudi, tmp_path, capsys):
    """Savepoint, restore, and the restore's completed file gone (Hudi stopped before it): Hudi 0.15's
    own writer refuses the table, and so do `plan`, `apply` and a write, in one line saying how to finish it;
    once Hudi ran the restore again, both go on."""
    location = tmp_path / "restored"
    hudi_write(_df(hudi, FIRST), location, _options("restored"))
    savepoint = HudiTable.open(str(location)).timeline.commits()[0].timestamp
    hudi_write(_df(hudi, [("a", 10, "2024-01-01", 2)]), location, _options("restored"))
    hudi.sql(f"CALL create_savepoint(path => '{location}', commit_time => '{savepoint}')")
    hudi_write(_df(hudi, [("b", 20, "2024-01-01", 3)]), location, _options("restored"))
    hudi.sql(f"CALL rollback_to_savepoint(path => '{location}', instant_time => '{savepoint}')")
    meta = location / ".hoodie"
    completed = next(meta.glob("*.restore"))
    restore = completed.name.split(".")[0]
    completed.unlink()
    (meta / f".{completed.name}.crc").unlink(missing_ok=True)

    spec_file, table, line, finish, before = _restore_refused(hudi, capsys, tmp_path, location, "restored", restore, savepoint)
    assert "the instants after the savepoint are rolled back already; finishing it records the restore" in line
    code, out, err = cli(capsys, "apply", str(spec_file), "--warehouse", str(tmp_path), "--auto-approve")
    assert code == 1 and err.strip().splitlines()[-1] == line
    assert table_files(location) == before

    # what tablespec does is what Hudi 0.15's writer does; the restore run again finishes it
    with pytest.raises(Exception, match="Found pending restore in active timeline"):
        hudi_write(_df(hudi, MORE), location, _options("restored"))
    hudi.sql(finish)
    assert (meta / completed.name).exists()
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path))
    assert code == 0 and out.startswith("No changes.") and "is pending" not in err, out + err
    assert table.write(_df(hudi, MORE)).inserted == 1


def test_a_pending_restore_hudi_1x_left_is_refused_untouched(hudi, hudi1, tmp_path, capsys):
    """The same on a version 9 table Hudi 1.2 wrote and restored (`R_C.restore` under .hoodie/timeline/
    gone): Hudi 1.2's writer refuses it too, and its restore run again finishes it."""
    location, _ = hudi1.copy((Batch.of(RESTORED_V9, SCHEMA, FIRST),), tmp_path / "restored9")
    savepoint = HudiTable.open(str(location)).timeline.commits()[0].timestamp
    hudi1.process.run([write_step(location, RESTORED_V9, SCHEMA, [("a", 10, "2024-01-01", 2)]),
                       sql_step(f"CALL create_savepoint(path => '{location}', commit_time => '{savepoint}')"),
                       sql_step(f"CALL rollback_to_savepoint(path => '{location}', instant_time => '{savepoint}')")])
    # Hudi 1.2's savepoint and restore procedures run at its defaults: they build column_stats, which
    # the writes had off (tablespec drops it before a write of its own, once the restore is done)
    assert _properties(location)["hoodie.table.metadata.partitions"] == "column_stats,files"
    timeline = location / ".hoodie" / "timeline"
    completed = next(timeline.glob("*_*.restore"))
    restore = completed.name.split("_")[0]
    completed.unlink()
    (timeline / f".{completed.name}.crc").unlink(missing_ok=True)

    spec_file, table, line, finish, before = _restore_refused(hudi, capsys, tmp_path, location, "restored9", restore, savepoint)
    assert table_files(location) == before

    # what tablespec does is what Hudi 1.2's writer does (it leaves nothing); the restore run again finishes it
    listed = {p.name for p in timeline.iterdir()}
    refusal, _ = hudi1.process.run([failing(write_step(location, RESTORED_V9, SCHEMA, MORE)), sql_step(finish)])
    assert refusal == ("Found pending restore in active timeline. Please complete the restore fully before "
                       "proceeding. As of now, table could be in an inconsistent state. "
                       f"Pending restores: [{restore}]")
    assert {p.name.lstrip(".").split("_")[0] for p in timeline.iterdir() if p.name not in listed} == {restore}
    assert [p.name.split("_")[0] for p in timeline.glob("*_*.restore")] == [restore]
    code, out, err = cli(capsys, "apply", str(spec_file), "--warehouse", str(tmp_path), "--auto-approve")
    assert code == 0 and "drop_metadata_partitions" in out and "is pending" not in err, out + err
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path), "--detailed-exitcode")
    assert code == 0 and out.startswith("No changes."), out + err
    assert table.write(_df(hudi, MORE)).inserted == 1

"""Writes to version 9 tables: tablespec upserts, inserts and deletes into a table Apache Hudi 1.2.0
created with its metadata table off; Hudi 1.2.0 (its own process) reads what tablespec wrote
(snapshot, time travel to tablespec's instants), upserts on top, and tablespec and hudi-rs read on.
A version 9 table with Hudi's metadata table: test_hudi_1x_metadata_table.py."""
from __future__ import annotations

import io
import json
import os
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest
from fastavro.schema import to_parsing_canonical_form
from helpers import hudi_rs_rows, rows, run_script, tablespec_rows
from hudi_process import Batch, read_step, sql_step, write_step
from interop_support import SHORT_LIVED_JVM, apply_until_done, save_spec
from test_hudi_tables import KEYED, SCHEMA, _import, _table

from tablespec.faults import CRASH_ENV
from tablespec.hudi.formats.commit import CommitMetadata
from tablespec.hudi.formats.commit_avro import encode_commit_metadata
from tablespec.hudi.services.clean import CLEAN_METADATA_SCHEMA, CLEANER_PLAN_SCHEMA
from tablespec.hudi.services.rollback import ROLLBACK_METADATA_SCHEMA, ROLLBACK_PLAN_SCHEMA, rollback_target
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import avro_content
from tablespec.hudi.timeline.instant import REPLACE_COMMIT

NO_MDT = {"hoodie.table.name": "orders_w9", **KEYED, "hoodie.metadata.enable": "false"}
V9_NO_MDT = tuple(Batch.of({**NO_MDT, "hoodie.datasource.write.operation": op}, SCHEMA, batch) for op, batch in [
    ("upsert", [("a", 1, "2024-01-01", 1), ("b", 2, "2024-01-01", 1), ("c", 3, "2024-01-02", 1)]),
    ("upsert", [("a", 10, "2024-01-01", 2)]),
    ("insert_overwrite", [("d", 4, "2024-01-03", 2)]),   # a replacecommit
])


def _by_id(read) -> dict:
    return {dict(r)["id"]: dict(r)["v"] for r in read}


def test_commit_metadata_encodes_as_hudi_1_2_writes_it(hudi1, tmp_path):
    """Every commit and replacecommit Hudi 1.2.0 wrote, decoded and encoded again by tablespec: the
    same record, under the same schema."""
    location, _ = hudi1.copy(V9_NO_MDT, tmp_path / "w9")
    table = HudiTable.open(str(location))
    commits = table.timeline.commits()
    assert {i.action for i in commits} == {"commit", REPLACE_COMMIT}
    for instant in commits:
        raw = table.timeline.read_bytes(instant)
        replace = instant.action == REPLACE_COMMIT
        ours = encode_commit_metadata(CommitMetadata.from_avro(avro_content(raw, instant.file_name), replace), replace)
        assert avro_content(ours, "ours") == avro_content(raw, instant.file_name), instant
        # the same schema (Avro's parsing canonical form: names, types, field order), Java string hints too
        headers = [fastavro.reader(io.BytesIO(b)).metadata["avro.schema"] for b in (raw, ours)]
        theirs_form, ours_form = (to_parsing_canonical_form(json.loads(h)) for h in headers)
        assert ours_form == theirs_form, instant
        assert headers[0].count('"avro.java.string"') == headers[1].count('"avro.java.string"'), instant


def test_tablespec_writes_a_version_9_table_hudi_1_2_reads(hudi, hudi1, tmp_path, capsys):
    location, _ = hudi1.copy(V9_NO_MDT, tmp_path / "w9")
    doc, _ = _import(tmp_path, location, capsys, ("build_metadata_table",))   # Hudi wrote it without one
    table = _table(hudi, doc, location)
    upsert = table.write(hudi.createDataFrame([("a", 11, "2024-01-01", 3), ("e", 5, "2024-01-02", 3)], SCHEMA))
    deleted = table.write(hudi.createDataFrame([("c", 3, "2024-01-02", 4)], SCHEMA), "delete")
    inserted = table.write(hudi.createDataFrame([("f", 6, "2024-01-03", 5)], SCHEMA), "insert")
    expected = {"a": 11, "b": 2, "d": 4, "e": 5, "f": 6}
    assert _by_id(tablespec_rows(table)) == expected

    timeline = HudiTable.open(str(location)).timeline
    completed = {i.timestamp: i for i in timeline.completed()}
    ours = [completed[r.instant] for r in (upsert, deleted, inserted)]
    names = {p.name for p in Path(location, ".hoodie", "timeline").iterdir()}
    for instant in ours:   # layout 2, as Hudi 1.2 names and fills its own
        assert instant.completion > instant.timestamp and instant.file_name in names
        assert timeline.read_bytes(instant).startswith(b"Obj\x01")
    assert [i.completion for i in ours] == sorted(i.completion for i in ours)
    assert ours[0].completion > max(i.completion for i in completed.values() if i.timestamp < ours[0].timestamp)

    ours_now, ours_as_of = tablespec_rows(table), tablespec_rows(table, as_of=upsert.instant)
    process = hudi1.process
    snapshot, as_of_upsert, *_ = process.run([
        read_step(location), read_step(location, **{"as.of.instant": upsert.instant}),
        write_step(location, {**NO_MDT, "hoodie.datasource.write.operation": "upsert"}, SCHEMA,
                   [("b", 20, "2024-01-01", 6), ("g", 7, "2024-01-03", 6)]),
    ])
    assert rows(pa.Table.from_pylist(snapshot)) == ours_now
    assert rows(pa.Table.from_pylist(as_of_upsert)) == ours_as_of
    assert _by_id(as_of_upsert)["c"] == 3 and "f" not in _by_id(as_of_upsert)

    after = {**expected, "b": 20, "g": 7}
    assert _by_id(tablespec_rows(table)) == after   # tablespec reads on after Hudi's upsert
    assert hudi_rs_rows(str(location)) == tablespec_rows(table)
    again = table.write(hudi.createDataFrame([("g", 70, "2024-01-03", 7)], SCHEMA))   # and writes on
    [final] = process.run([read_step(location)])
    assert _by_id(final) == {**after, "g": 70} and again.instant
    assert table.verify().ok


@pytest.mark.parametrize("point", ["after_data_files", "before_completion"])
def test_a_write_killed_inside_a_version_9_commit_is_rolled_back(hudi, hudi1, tmp_path, capsys, point):
    """kill -9 between the inflight file and the completed one (data files written, or about to
    commit holding Hudi's lock): the next write rolls the instant back in 1.x form (`R_C.rollback`)
    and Hudi 1.2.0 reads what tablespec reads."""
    location, _ = hudi1.copy(V9_NO_MDT, tmp_path / "w9")
    doc, spec_file = _import(tmp_path, location, capsys, ("build_metadata_table",))   # Hudi wrote it without one
    died = run_script(f"""
        from pyspark.sql import SparkSession
        from tablespec.spec.loader import load_spec_text
        from tablespec.table import Table
        spec = load_spec_text(open({str(spec_file)!r}).read(), "w9.yaml").specs[0].spec
        spark = SparkSession.builder.master("local[1]").getOrCreate()
        Table(spec, {str(location)!r}, spark).write(spark.createDataFrame([("a", 99, "2024-01-01", 9)], {SCHEMA!r}))
    """, **{CRASH_ENV: point}, **SHORT_LIVED_JVM)
    assert died.returncode == -9, died.stderr[-2000:]
    [dead] = HudiTable.open(str(location)).timeline.pending()
    assert dead.state == "inflight" and (Path(location, ".hoodie", "timeline", dead.file_name)).exists()
    os.utime(Path(location, ".hoodie", ".heartbeat", dead.timestamp), (0, 0))   # its heartbeat long stale

    table = _table(hudi, doc, location)
    table.write(hudi.createDataFrame([("e", 5, "2024-01-02", 9)], SCHEMA))
    timeline = HudiTable.open(str(location)).timeline
    assert not timeline.pending() and not timeline.contains_completed(dead.timestamp)
    [rolled] = [i for i in timeline.completed() if i.action == "rollback"]
    assert rolled.completion > rolled.timestamp > dead.timestamp
    assert timeline.read_metadata(rolled)["commitsRollback"] == [dead.timestamp]
    assert not [p for p in Path(location).rglob(f"*_{dead.timestamp}.parquet")]
    ours = tablespec_rows(table)
    assert _by_id(ours) == {"a": 10, "b": 2, "c": 3, "d": 4, "e": 5}
    [theirs] = hudi1.process.run([read_step(location)])
    assert rows(pa.Table.from_pylist(theirs)) == ours


def test_apply_clusters_and_cleans_a_version_9_table(hudi, hudi1, tmp_path, capsys):
    """`apply` on a version 9 table: a clustering plan under its own action (`T.clustering.requested`,
    completing as `T_C.replacecommit`) and a clean, both as Hudi 1.2 lays them out; Hudi 1.2.0 and
    hudi-rs read what tablespec reads."""
    location, _ = hudi1.copy(V9_NO_MDT, tmp_path / "w9")
    doc, spec_file = _import(tmp_path, location, capsys, ("build_metadata_table",))   # Hudi wrote it without one
    table = _table(hudi, doc, location)
    table.write(hudi.createDataFrame([("e", 5, "2024-01-01", 3)], SCHEMA))
    doc["spec"]["clustering"].update(strategy="SORT", sortColumns=["v"], everyNCommits=1)
    doc["spec"]["retention"]["keepCommits"] = 1
    save_spec(doc, spec_file)
    kinds = apply_until_done(capsys, spec_file, tmp_path)
    assert {"clustering", "clean"} <= set(kinds), kinds
    props = Path(location, ".hoodie", "hoodie.properties").read_text()   # rewritten in the table's own spelling
    assert "hoodie.table.version=9" in props and "hoodie.table.ordering.fields=ts" in props
    assert "hoodie.table.keygenerator.type=SIMPLE" in props and "hoodie.table.precombine.field" not in props

    timeline = HudiTable.open(str(location)).timeline
    names = {p.name for p in Path(location, ".hoodie", "timeline").iterdir()}
    clustered = [i for i in timeline.commits() if i.action == REPLACE_COMMIT
                 and f"{i.timestamp}.clustering.requested" in names]
    assert clustered and all(i.completion and timeline.commit_metadata(i).partition_to_replace_file_ids
                             for i in clustered)
    cleans = [i for i in timeline.completed() if i.action == "clean"]   # Hudi cleaned nothing here: ours
    assert cleans and all(f"{i.timestamp}_{i.completion}.clean" in names for i in cleans)
    assert not timeline.pending()

    ours = tablespec_rows(table)
    assert _by_id(ours) == {"a": 10, "b": 2, "c": 3, "d": 4, "e": 5} and hudi_rs_rows(str(location)) == ours
    [theirs, _, after] = hudi1.process.run([   # Hudi reads, then writes on tablespec's hoodie.properties
        read_step(location), write_step(location, {**NO_MDT, "hoodie.datasource.write.operation": "upsert"},
                                        SCHEMA, [("a", 100, "2024-01-01", 9)]), read_step(location)])
    assert rows(pa.Table.from_pylist(theirs)) == ours
    assert _by_id(after) == {"a": 100, "b": 2, "c": 3, "d": 4, "e": 5} == _by_id(tablespec_rows(table))

    # RECORD_LEVEL on the metadata table apply built for this table: Hudi 1.x's record index
    # (judged by Hudi 1.2 in test_hudi_1x_record_index.py)
    doc["spec"]["index"] = {"type": "RECORD_LEVEL"}
    save_spec(doc, spec_file)
    assert "index_migration" in apply_until_done(capsys, spec_file, tmp_path)
    props = Path(location, ".hoodie", "hoodie.properties").read_text()
    assert "hoodie.table.metadata.partitions=files,record_index" in props
    table = _table(hudi, doc, location)
    assert _by_id(tablespec_rows(table)) == {"a": 100, "b": 2, "c": 3, "d": 4, "e": 5}
    assert hudi_rs_rows(str(location)) == tablespec_rows(table)


def test_clean_and_rollback_files_are_hudi_1_2s(hudi1, tmp_path):
    """The cleaner plan, clean metadata, rollback plan and rollback metadata Hudi 1.2.0 writes declare
    the schemas tablespec writes them with (Avro's parsing canonical form), and tablespec reads them."""
    location, _ = hudi1.copy(V9_NO_MDT, tmp_path / "w9")
    cleaning = {**NO_MDT, "hoodie.datasource.write.operation": "upsert", "hoodie.clean.commits.retained": "1",
                "hoodie.cleaner.commits.retained": "1"}
    hudi1.process.run([write_step(location, cleaning, SCHEMA, [("a", 12, "2024-01-01", 3)])])
    last = HudiTable.open(str(location)).timeline.commits()[-1]
    hudi1.process.run([sql_step(f"CREATE TABLE w9_rollback USING hudi LOCATION '{location}'"),
                       sql_step(f"CALL rollback_to_instant(table => 'w9_rollback', instant_time => '{last.timestamp}')")])
    timeline = HudiTable.open(str(location)).timeline
    clean = next(i for i in timeline.completed() if i.action == "clean")
    rolled = next(i for i in timeline.completed() if i.action == "rollback")
    assert clean.completion and rolled.completion
    for instant, schema in ((clean.to("requested"), CLEANER_PLAN_SCHEMA), (clean, CLEAN_METADATA_SCHEMA),
                            (rolled.to("requested"), ROLLBACK_PLAN_SCHEMA), (rolled, ROLLBACK_METADATA_SCHEMA)):
        header = fastavro.reader(io.BytesIO(timeline.read_bytes(instant))).metadata["avro.schema"]
        assert to_parsing_canonical_form(json.loads(header)) == to_parsing_canonical_form(schema), instant
    assert rollback_target(timeline, rolled.to("requested")).timestamp == last.timestamp
    assert timeline.read_metadata(rolled)["commitsRollback"] == [last.timestamp]
    assert timeline.read_metadata(clean)["totalFilesDeleted"] >= 1

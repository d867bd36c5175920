"""The migrating apply actions on version 9 tables Apache Hudi 1.2.0 created with its defaults
(metadata table on): schema evolution, bucket bootstrap, index migration and a table replacement,
each as a version-9 transaction (`<requested>_<completion>.<action>` in Avro, a replacecommit for a
rewrite, the metadata table's `files` partition kept). After each, Hudi 1.2 (its own process)
validates the metadata table (`validate_metadata_table_files`), reads through it what tablespec
reads, upserts with `hudi-options`, and tablespec reads the same and plans clean. One apply is
killed inside its replacecommit and the next apply finishes it."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pytest
from helpers import rows, tablespec_rows
from hudi_process import Batch, read_step, write_step
from interop_support import apply_until_done, cli, save_spec
from test_hudi_1x_metadata_table import _assert_validated, _hudi_checks, _on_storage
from test_hudi_metadata_table import assert_listing_is_storage
from test_hudi_tables import KEYED, SCHEMA, _import, _table

from tablespec.hudi.instant import REPLACE_COMMIT
from tablespec.hudi.table import HudiTable
from tablespec.hudi_options import hudi_write_options

DEFAULTS = {"hoodie.table.name": "orders_a9", **KEYED}          # Hudi 1.2's defaults: metadata table on
V9 = tuple(Batch.of({**DEFAULTS, "hoodie.datasource.write.operation": "upsert"}, SCHEMA, batch) for batch in [
    [("a", 1, "2024-01-01", 1), ("b", 2, "2024-01-01", 1), ("c", 3, "2024-01-02", 1)],
    [("a", 10, "2024-01-01", 2), ("d", 4, "2024-01-03", 2)],
])
ROWS = {"a": 10, "b": 2, "c": 3, "d": 4}


def _by_id(read) -> dict:
    return {dict(r)["id"]: dict(r)["v"] for r in read}


def _evolve(doc: dict) -> None:
    doc["spec"]["columns"].append({"name": "note", "type": "string", "nullable": True})


def _bucket(doc: dict) -> None:
    doc["spec"]["index"] = {"type": "BUCKET", "numBuckets": 2, "hashFields": ["id"]}


def _bloom(doc: dict) -> None:
    doc["spec"]["index"] = {"type": "BLOOM"}


def _replace(doc: dict) -> None:   # v int -> string: destructive, every row rewritten
    for column in doc["spec"]["columns"]:
        if column["name"] == "v":
            column["type"] = "string"


CHANGES = {"schema_evolution": _evolve, "bucket_bootstrap": _bucket, "index_migration": _bloom,
           "replace_table": _replace}


def _imported(hudi, hudi1, tmp_path, capsys):
    location, _ = hudi1.copy(V9, tmp_path / "a9")
    doc, spec_file = _import(tmp_path, location, capsys, ("drop_metadata_partitions",))
    assert apply_until_done(capsys, spec_file, tmp_path) == ["drop_metadata_partitions"]
    return location, doc, spec_file


def _hudi_agrees(hudi, hudi1, tmp_path, capsys, location, doc, spec_file, name: str) -> None:
    """Hudi 1.2 validates the metadata table and reads what tablespec reads, upserts with
    `hudi-options`; tablespec reads the upsert and plans clean."""
    table = _table(hudi, doc, location)
    ours = tablespec_rows(table)
    assert_listing_is_storage(str(location))
    options = {k: v for k, v in hudi_write_options(table.spec, HudiTable.open(str(location))).items() if k != "path"}
    options["hoodie.datasource.write.operation"] = "upsert"
    upsert = [("b", 20, "2024-01-01", 9), ("e", 5, "2024-01-02", 9)]
    stored = _on_storage(location)
    _, every, differences, theirs, _, after = hudi1.process.run([
        *_hudi_checks(location, name), write_step(location, options, _schema(doc), _typed(doc, upsert)),
        read_step(location)])
    _assert_validated(stored, every, differences)
    assert rows(pa.Table.from_pylist(theirs)) == ours
    expected = {k: str(v) if _v_type(doc) == "string" else v for k, v in {**ROWS, "b": 20, "e": 5}.items()}
    assert _by_id(after) == expected == _by_id(tablespec_rows(_table(hudi, doc, location)))
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path), "--detailed-exitcode")
    assert code == 0 and out.startswith("No changes."), out + err


def _v_type(doc: dict) -> str:
    return next(c["type"] for c in doc["spec"]["columns"] if c["name"] == "v")


def _schema(doc: dict) -> str:
    return ", ".join(f"{c['name']} {'long' if c['type'] in ('long', 'bigint') else c['type']}"
                     for c in doc["spec"]["columns"])


def _typed(doc: dict, batch: list) -> list:
    """Rows in the spec's columns: `v` as the spec types it, added columns null."""
    names = [c["name"] for c in doc["spec"]["columns"]]
    out = []
    for id_, v, dt, ts in batch:
        known = {"id": id_, "v": str(v) if _v_type(doc) == "string" else v, "dt": dt, "ts": ts}
        out.append(tuple(known.get(n) for n in names))
    return out


@pytest.mark.parametrize("kind", sorted(CHANGES))
def test_apply_runs_on_a_version_9_table_hudi_1_2_created(hudi, hudi1, tmp_path, capsys, kind):
    location, doc, spec_file = _imported(hudi, hudi1, tmp_path, capsys)
    before = {i.timestamp for i in HudiTable.open(str(location)).timeline.completed()}
    CHANGES[kind](doc)
    save_spec(doc, spec_file)
    args = ("--allow-destructive",) if kind == "replace_table" else ()
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path), "--format", "json")
    assert code == 0, err
    assert [a["kind"] for t in json.loads(out)["tables"] for a in t["actions"]] == [kind]
    code, out, err = cli(capsys, "apply", str(spec_file), "--warehouse", str(tmp_path), "--auto-approve", *args)
    assert code == 0, out + err

    handle = HudiTable.open(str(location))
    props = (location / ".hoodie" / "hoodie.properties").read_text()
    assert "hoodie.table.version=9" in props
    added = [i for i in handle.timeline.completed() if i.timestamp not in before]
    if kind == "index_migration":   # between non-RECORD_LEVEL types: hoodie.properties only
        assert added == [] and "hoodie.index.type=BLOOM" in props
    else:
        [new] = added
        names = {p.name for p in (location / ".hoodie" / "timeline").iterdir()}
        assert new.completion > new.timestamp and f"{new.timestamp}_{new.completion}.{new.action}" in names
        assert handle.timeline.read_bytes(new).startswith(b"Obj\x01")   # Avro, as Hudi 1.x writes it
        assert new.action == ("commit" if kind == "schema_evolution" else REPLACE_COMMIT)
        if new.action == REPLACE_COMMIT:   # a rewrite, not a clustering: replacecommit from its request on
            assert handle.timeline.commit_metadata(new).partition_to_replace_file_ids
            assert f"{new.timestamp}.replacecommit.requested" in names
    assert not handle.timeline.pending()
    _hudi_agrees(hudi, hudi1, tmp_path, capsys, location, doc, spec_file, f"a9_{kind}")


def test_a_bucket_bootstrap_killed_inside_its_replacecommit_is_finished(hudi, hudi1, tmp_path, capsys):
    """kill -9 after the rewrite's data files, before its replacecommit completes: the next apply
    rolls it back (in 1.x form, with its metadata-table deltacommit) and bootstraps again."""
    location, doc, spec_file = _imported(hudi, hudi1, tmp_path, capsys)
    _bucket(doc)
    save_spec(doc, spec_file)
    import subprocess
    import sys
    env = {**os.environ, "TABLESPEC_CRASH_AT": "after_data_files", "TABLESPEC_SPARK_MASTER": "local[1]",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    died = subprocess.run([sys.executable, "-m", "tablespec.cli", "apply", str(spec_file), "--warehouse",
                           str(tmp_path), "--auto-approve"], env=env, capture_output=True, text=True, timeout=600)
    assert died.returncode == -9, died.stdout[-2000:] + died.stderr[-2000:]
    [dead] = HudiTable.open(str(location)).timeline.pending()
    assert dead.action == REPLACE_COMMIT and dead.state == "inflight"
    assert _by_id(tablespec_rows(_table(hudi, doc, location))) == ROWS   # readers see the table as before
    os.utime(Path(location, ".hoodie", ".heartbeat", dead.timestamp), (0, 0))   # its heartbeat long stale

    kinds = apply_until_done(capsys, spec_file, tmp_path)
    assert "bucket_bootstrap" in kinds, kinds
    timeline = HudiTable.open(str(location)).timeline
    assert not timeline.pending() and not timeline.contains_completed(dead.timestamp)
    assert [i for i in timeline.completed() if i.action == "rollback"]
    _hudi_agrees(hudi, hudi1, tmp_path, capsys, location, doc, spec_file, "a9_killed")

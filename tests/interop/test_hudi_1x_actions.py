"""The migrating apply actions on version 9 tables Apache Hudi 1.2.0 created with its defaults
(metadata table on): schema evolution, bucket bootstrap, index migration and a table replacement,
each as a version-9 transaction (`<requested>_<completion>.<action>` in Avro, a replacecommit for a
rewrite, the metadata table's `files` partition kept). After each, Hudi 1.2 (its own process)
validates the metadata table (`validate_metadata_table_files`), reads through it what tablespec
reads, upserts with `hudi-options`, and tablespec reads the same and plans clean. The bucket
bootstrap's apply is killed inside its replacecommit and the next apply finishes it."""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pytest
from helpers import rows, tablespec_rows
from hudi_process import Batch, read_step, write_step
from interop_support import SHORT_LIVED_JVM, apply_until_done, cli, save_spec
from test_hudi_1x_metadata_table import _assert_validated, _hudi_checks, _on_storage
from test_hudi_metadata_table import assert_listing_is_storage
from test_hudi_tables import KEYED, SCHEMA, _import, _table

from tablespec.faults import CRASH_ENV
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.instant import REPLACE_COMMIT
from tablespec.hudi_options import hudi_write_options

DEFAULTS = {"hoodie.table.name": "orders_a9", **KEYED}          # Hudi 1.2's defaults: metadata table on
V9 = tuple(Batch.of({**DEFAULTS, "hoodie.datasource.write.operation": "upsert"}, SCHEMA, batch) for batch in [
    [("a", 1, "2024-01-01", 1), ("b", 2, "2024-01-01", 1), ("c", 3, "2024-01-02", 1)],
    [("a", 10, "2024-01-01", 2), ("d", 4, "2024-01-03", 2)],
])
ROWS = {"a": 10, "b": 2, "c": 3, "d": 4}
UPSERT = [("b", 20, "2024-01-01", 9), ("e", 5, "2024-01-02", 9)]


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


# the bucket bootstrap runs in the killed case: killed inside its replacecommit, then run to the end
CHANGES = {"schema_evolution": _evolve, "index_migration": _bloom, "replace_table": _replace}


class _Captured:
    """`capsys` for the module's fixture (capsys serves one test): what the CLI printed."""

    def __init__(self):
        self.out, self.err = io.StringIO(), io.StringIO()

    def readouterr(self) -> tuple[str, str]:
        out, err = self.out.getvalue(), self.err.getvalue()
        for buffer in (self.out, self.err):
            buffer.seek(0)
            buffer.truncate()
        return out, err


@dataclass
class Case:
    """One action applied to its own copy of the table, and what Hudi 1.2 made of it."""
    location: Path
    warehouse: Path
    doc: dict
    spec_file: str
    before: set[str]          # the instants completed before the action
    applied: list[str]        # the action kinds apply ran
    ours: list = field(default_factory=list)          # tablespec's rows after the action
    stored: set = field(default_factory=set)          # the data files on storage then
    hudi: list = field(default_factory=list)          # Hudi's step results
    dead: object = None       # the instant the kill left pending (the killed case)
    added: list = field(default_factory=list)         # the instants completed by the action(s)
    names: set = field(default_factory=set)           # the timeline's files then
    pending: list = field(default_factory=list)       # the instants pending then
    props: str = ""           # hoodie.properties then


def _imported(hudi1, warehouse: Path, captured) -> tuple[Path, dict, str]:
    location, _ = hudi1.copy(V9, warehouse / "a9")
    doc, spec_file = _import(warehouse, location, captured)    # Hudi's data-skipping partitions kept
    return location, doc, spec_file


def _apply(kind: str, hudi1, warehouse: Path, captured) -> Case:
    location, doc, spec_file = _imported(hudi1, warehouse, captured)
    before = {i.timestamp for i in HudiTable.open(str(location)).timeline.completed()}
    CHANGES[kind](doc)
    save_spec(doc, spec_file)
    code, out, err = cli(captured, "plan", str(spec_file), "--warehouse", str(warehouse), "--format", "json")
    assert code == 0, err
    planned = [a["kind"] for t in json.loads(out)["tables"] for a in t["actions"]]
    args = ("--allow-destructive",) if kind == "replace_table" else ()
    code, out, err = cli(captured, "apply", str(spec_file), "--warehouse", str(warehouse), "--auto-approve", *args)
    assert code == 0, out + err
    return Case(location, warehouse, doc, spec_file, before, planned)


def _killed(hudi, hudi1, warehouse: Path, captured) -> Case:
    """A bucket bootstrap killed (kill -9) after its data files, before its replacecommit completes;
    then apply until done."""
    location, doc, spec_file = _imported(hudi1, warehouse, captured)
    before = {i.timestamp for i in HudiTable.open(str(location)).timeline.completed()}
    _bucket(doc)
    save_spec(doc, spec_file)
    env = {**os.environ, **SHORT_LIVED_JVM, CRASH_ENV: "after_data_files", "TABLESPEC_SPARK_MASTER": "local[1]",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    died = subprocess.run([sys.executable, "-m", "tablespec.cli", "apply", str(spec_file), "--warehouse",
                           str(warehouse), "--auto-approve"], env=env, capture_output=True, text=True, timeout=600)
    assert died.returncode == -9, died.stdout[-2000:] + died.stderr[-2000:]
    [dead] = HudiTable.open(str(location)).timeline.pending()
    assert dead.action == REPLACE_COMMIT and dead.state == "inflight"
    assert _by_id(tablespec_rows(_table(hudi, doc, location))) == ROWS   # readers see the table as before
    os.utime(Path(location, ".hoodie", ".heartbeat", dead.timestamp), (0, 0))   # its heartbeat long stale
    applied = apply_until_done(captured, spec_file, warehouse)
    return Case(location, warehouse, doc, spec_file, before, applied, dead=dead)


@pytest.fixture(scope="module")
def cases(spark_session, hudi1, tmp_path_factory) -> dict[str, Case]:
    """Every action applied (and the killed bootstrap recovered), each on its own copy; then one Hudi
    1.2 process validates and reads each table and upserts into it with `hudi-options`."""
    hudi, missing = spark_session   # the `hudi` fixture's session, for the whole module
    if missing:
        pytest.skip(f"Apache Hudi is not available: {missing}")
    captured = _Captured()
    with contextlib.redirect_stdout(captured.out), contextlib.redirect_stderr(captured.err):
        done = {kind: _apply(kind, hudi1, tmp_path_factory.mktemp(kind), captured) for kind in sorted(CHANGES)}
        done["killed"] = _killed(hudi, hudi1, tmp_path_factory.mktemp("killed"), captured)
    steps = []
    for kind, case in done.items():   # the table as the action(s) left it, before Hudi writes on
        timeline = HudiTable.open(str(case.location)).timeline
        case.added = [i for i in timeline.completed() if i.timestamp not in case.before]
        case.pending = timeline.pending()
        case.names = {p.name for p in (case.location / ".hoodie" / "timeline").iterdir()}
        case.props = (case.location / ".hoodie" / "hoodie.properties").read_text()
        table = _table(hudi, case.doc, case.location)
        case.ours, case.stored = tablespec_rows(table), _on_storage(case.location)
        assert_listing_is_storage(str(case.location))
        options = {k: v for k, v in hudi_write_options(table.spec, HudiTable.open(str(case.location))).items()
                   if k != "path"}
        options["hoodie.datasource.write.operation"] = "upsert"
        steps += [*_hudi_checks(case.location, f"a9_{kind}"),
                  write_step(case.location, options, _schema(case.doc), _typed(case.doc, UPSERT)),
                  read_step(case.location)]
    results = hudi1.process.run(steps)
    for i, case in enumerate(done.values()):
        case.hudi = results[6 * i:6 * i + 6]
    return done


def _hudi_agrees(hudi, capsys, case: Case) -> None:
    """Hudi 1.2 validated the metadata table and read what tablespec read, upserted with
    `hudi-options`; tablespec reads the upsert and plans clean."""
    _, every, differences, theirs, _, after = case.hudi
    _assert_validated(case.stored, every, differences)
    assert rows(pa.Table.from_pylist(theirs)) == case.ours
    expected = {k: str(v) if _v_type(case.doc) == "string" else v for k, v in {**ROWS, "b": 20, "e": 5}.items()}
    assert _by_id(after) == expected == _by_id(tablespec_rows(_table(hudi, case.doc, case.location)))
    code, out, err = cli(capsys, "plan", case.spec_file, "--warehouse", str(case.warehouse), "--detailed-exitcode")
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
def test_apply_runs_on_a_version_9_table_hudi_1_2_created(hudi, cases, capsys, kind):
    case = cases[kind]
    assert case.applied == [kind]
    if kind == "index_migration":   # between non-RECORD_LEVEL types: hoodie.properties only
        assert case.added == [] and "hoodie.index.type=BLOOM" in case.props
    else:
        [new] = case.added
        _assert_version_9_instant(case, new, "commit" if kind == "schema_evolution" else REPLACE_COMMIT)
    assert not case.pending
    _hudi_agrees(hudi, capsys, case)


def _assert_version_9_instant(case: Case, new, action: str) -> None:
    """`new` completed as Hudi 1.x completes one: `<requested>_<completion>.<action>`, in Avro; a
    rewrite (not a clustering) a replacecommit from its request on."""
    handle = HudiTable.open(str(case.location))
    assert "hoodie.table.version=9" in case.props
    assert new.completion > new.timestamp and f"{new.timestamp}_{new.completion}.{new.action}" in case.names
    assert handle.timeline.read_bytes(new).startswith(b"Obj\x01")   # Avro, as Hudi 1.x writes it
    assert new.action == action
    if new.action == REPLACE_COMMIT:
        assert handle.timeline.commit_metadata(new).partition_to_replace_file_ids
        assert f"{new.timestamp}.replacecommit.requested" in case.names


def test_a_bucket_bootstrap_killed_inside_its_replacecommit_is_finished(hudi, cases, capsys):
    """kill -9 after the rewrite's data files, before its replacecommit completes: the next apply
    rolls it back (in 1.x form) and bootstraps again, a version 9 replacecommit; Hudi 1.2 agrees
    on the result."""
    case = cases["killed"]
    assert "bucket_bootstrap" in case.applied, case.applied
    assert not case.pending and case.dead.timestamp not in {i.timestamp for i in case.added}
    assert [i.action for i in case.added] == ["rollback", REPLACE_COMMIT]
    rolled, new = case.added
    _assert_version_9_instant(case, new, REPLACE_COMMIT)
    assert HudiTable.open(str(case.location)).timeline.read_metadata(rolled)["commitsRollback"] == [case.dead.timestamp]
    _hudi_agrees(hudi, capsys, case)

"""Table versions 8 and 9, as Apache Hudi 1.0.2 and 1.2.0 write them (each in its own process):
tablespec reads, imports, plans, shows and verifies them, refuses to write version 8 yet, and writes
version 9 keeping its metadata table (test_hudi_1x_writes.py, test_hudi_1x_metadata_table.py).

Each table has upserts, a delete, inline clustering (a `clustering` instant completing as a
replacecommit), cleans, and archiving small enough that most of its history is in the LSM
timeline (`.hoodie/timeline/history/`). Hudi 1.0.2 keeps its metadata table off here: with it on,
1.0.2 fails reading its own metadata table after the delete (a ClassCastException on
HoodieDeleteRecord); Hudi 1.2.0 keeps it on, as its default."""
from __future__ import annotations

import hashlib

import pyarrow as pa
import pytest
from helpers import hudi_rs_rows, rows, tablespec_rows
from hudi_process import Batch, read_step
from interop_support import cli, save_spec
from test_hudi_metadata_table import assert_listing_is_storage
from test_hudi_tables import KEYED, SCHEMA, _import, _table

from tablespec.engine.reader import ReadError
from tablespec.engine.writer import WriteRefused
from tablespec.hudi.archive import History
from tablespec.hudi.services.clean import earliest_readable_instant
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.instant import CLUSTERING, REPLACE_COMMIT
from tablespec.table import Table

SMALL_HISTORY = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.clean.commits.retained": "1",
                 "hoodie.cleaner.commits.retained": "1", "hoodie.clustering.inline": "true",
                 "hoodie.clustering.inline.max.commits": "3", "hoodie.metadata.compact.max.delta.commits": "2"}
WRITES = [
    ("upsert", [("a", 1, "2024-01-01", 1), ("b", 2, "2024-01-01", 1), ("c", 3, "2024-01-02", 1)]),
    ("upsert", [("a", 10, "2024-01-01", 2), ("d", 4, "2024-01-02", 2)]),
    ("delete", [("b", 2, "2024-01-01", 3)]),
    ("upsert", [("e", 5, "2024-01-03", 3), ("c", 30, "2024-01-02", 3)]),
    ("upsert", [("f", 6, "2024-01-01", 4)]),
    ("upsert", [("a", 100, "2024-01-01", 5), ("g", 7, "2024-01-03", 5)]),
    ("upsert", [("h", 8, "2024-01-02", 6)]),
    ("upsert", [("d", 40, "2024-01-02", 7)]),
]
FINAL = {"a": 100, "c": 30, "d": 40, "e": 5, "f": 6, "g": 7, "h": 8}


def _recipe(name: str, **extra: str) -> tuple[Batch, ...]:
    return tuple(Batch.of({"hoodie.table.name": name, **KEYED, **SMALL_HISTORY, **extra,
                           "hoodie.datasource.write.operation": op}, SCHEMA, batch) for op, batch in WRITES)


V9 = _recipe("orders_v9")
V8 = _recipe("orders_v8", **{"hoodie.metadata.enable": "false"})


@pytest.fixture(params=[9, 8])
def hudi_1x_table(request, tmp_path):
    """(location, rows as Apache Hudi read them, version, that Hudi's process): a copy of the table
    Hudi 1.2.0 (9) or 1.0.2 (8) wrote."""
    version = request.param
    tables = request.getfixturevalue("hudi1" if version == 9 else "hudi10")
    location, read = tables.copy(V9 if version == 9 else V8, tmp_path / f"orders_v{version}")
    return location, read, version, tables.process


def _files(location) -> dict[str, str]:
    return {str(p.relative_to(location)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(location.rglob("*")) if p.is_file()}


def test_history_of_a_1x_table(hudi_1x_table):
    """Timeline layout 2 (completion times, a `clustering` instant), Avro commit metadata and the LSM history."""
    location, _, version, _ = hudi_1x_table
    table = HudiTable.open(str(location))
    assert table.config.version == version and table.timeline.folder == ".hoodie/timeline"
    active = table.timeline.completed()
    assert active and all(i.completion is not None and i.completion > i.timestamp for i in active)
    assert table.timeline.head == max(active, key=lambda i: i.completion)

    history = History.of(table)
    archived = history.archived.instants
    assert len(archived) >= 6 and all(history.is_archived(i) for i in archived)
    assert {i.timestamp for i in archived}.isdisjoint({i.timestamp for i in active})
    commits = history.commits()
    operations = [history.commit_metadata(i).operation_type for i in commits]
    assert operations.count("UPSERT") == 7 and operations.count("DELETE") == 1 and "CLUSTER" in operations
    for instant in commits:   # every commit, archived or active, records the table's schema and what it wrote
        metadata = history.commit_metadata(instant)
        assert metadata.schema and '"name":"ts"' in metadata.schema.replace(" ", "")
        assert all(s.file_id and s.path.endswith(".parquet") for s in metadata.write_stats())
    clustered = [i for i in commits if i.action == REPLACE_COMMIT]
    assert clustered and all(history.commit_metadata(i).partition_to_replace_file_ids for i in clustered)
    first = clustered[0]   # archived: its plan travels with it
    plan = (history.archived.requested_content(first) if history.is_archived(first)
            else table.timeline.read_metadata(next(i for i in table.timeline.instants if i.timestamp == first.timestamp
                                                   and i.action == CLUSTERING)))
    assert plan["clusteringPlan"]["inputGroups"]


def _planned(version: int) -> tuple[str, ...]:
    """What a plan of the imported spec proposes: on version 9 (written by tablespec), dropping the
    metadata-table partitions Hudi 1.2 keeps by default and tablespec does not."""
    return ("drop_metadata_partitions",) if version == 9 else ()


def test_read_import_plan_show_verify(hudi, hudi_1x_table, tmp_path, capsys):
    location, hudi_read, version, _ = hudi_1x_table
    doc, spec_file = _import(tmp_path, location, capsys, _planned(version))   # import, then plan with it
    assert doc["spec"]["orderingField"] == "ts" and doc["spec"]["recordKey"]["fields"] == ["id"]
    table: Table = _table(hudi, doc, location)
    ours = tablespec_rows(table)
    assert ours == rows(pa.Table.from_pylist(hudi_read)) == hudi_rs_rows(table.location)
    assert {dict(r)["id"]: dict(r)["v"] for r in ours} == FINAL

    code, out, err = cli(capsys, "show", str(location))
    assert code == 0, err
    assert f"(table version {version})" in out

    code, out, err = cli(capsys, "verify", str(location))
    assert code == 0 and "clean" in out, out + err
    assert table.verify().ok


def test_apply_and_write_by_version(hudi, hudi_1x_table, tmp_path, capsys):
    """A change planned on a version 8 table is refused by apply (one line, the version named), and
    so is a write; the table is untouched. On version 9 (Hudi 1.2's metadata table on) both run,
    keeping the metadata table's `files` partition true to the storage."""
    location, _, version, _ = hudi_1x_table
    doc, spec_file = _import(tmp_path, location, capsys, _planned(version))
    before = _files(location)
    doc["spec"]["retention"] = {"keepCommits": 5}
    save_spec(doc, spec_file)
    code, out, err = cli(capsys, "apply", spec_file, "--warehouse", str(tmp_path), "--auto-approve")
    table = _table(hudi, doc, location)
    if version == 9:
        assert code == 0, out + err
        table.write(hudi.createDataFrame([("z", 1, "2024-01-01", 9)], SCHEMA))
        assert {dict(r)["id"]: dict(r)["v"] for r in tablespec_rows(table)} == {**FINAL, "z": 1}
        assert_listing_is_storage(str(location))
        return
    assert code == 1 and "Traceback" not in err
    error = err.strip().splitlines()[-1]
    assert f"table version {version} (Apache Hudi 1.x)" in error and "writes to version" in error
    assert "nothing was changed" in error
    assert _files(location) == before

    with pytest.raises(WriteRefused, match=f"table version {version}"):
        table.write(hudi.createDataFrame([("z", 1, "2024-01-01", 9)], SCHEMA))
    assert _files(location) == before


def test_time_travel_agrees_with_hudi(hudi, hudi_1x_table, tmp_path, capsys):
    """A read as of a completed commit on the active timeline (named by its requested time) is Hudi's;
    one the cleaner already cleaned is refused (Hudi refuses it too: "Cleaner cleaned up the
    timestamp of interest", which ends its process, so only readable ones are asked of it)."""
    location, _, version, process = hudi_1x_table
    doc, _ = _import(tmp_path, location, capsys, _planned(version))
    table = _table(hudi, doc, location)
    timeline = HudiTable.open(str(location)).timeline
    earliest = earliest_readable_instant(timeline)
    instants = [i.timestamp for i in timeline.commits()]
    readable = [t for t in instants if earliest is None or t >= earliest]
    assert readable
    theirs = process.run([read_step(location, **{"as.of.instant": t}) for t in readable])
    for instant, read in zip(readable, theirs):
        assert tablespec_rows(table, as_of=instant) == rows(pa.Table.from_pylist(read)), instant
    for instant in sorted(set(instants) - set(readable)):
        with pytest.raises(ReadError, match=f"instant {instant} has been cleaned"):
            tablespec_rows(table, as_of=instant)

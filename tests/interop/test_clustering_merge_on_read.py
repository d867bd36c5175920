"""Clustering of merge-on-read tables (table version 6) with Apache Hudi 0.15 as judge (RFC-19):
each file slice is read merged with its log files into new base files in a replacecommit; the
plan lists the log files (`deltaFilePaths`) as Hudi's does, and plans cross over both ways; a file
group under a pending clustering takes no update (Hudi's default update strategy rejects it too)
and no compaction. One small SIMPLE-index history Hudi wrote (base files and log files) serves
every test, copied. A bucket bootstrap and a record index build read the same merged slices (Hudi
reads, upserts and compacts on them); on version 9 the same history Hudi 1.2 wrote (log files named
by their deltacommits) is clustered, bucket-bootstrapped and indexed with Hudi 1.2 as judge."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import hudi_rs_rows, tablespec_rows
from hudi_process import Batch, read_step, record_index_step, sql_step, write_step
from interop_support import SHORT_LIVED_JVM, apply_until_done, hudi_rows, hudi_write, save_spec
from test_engine_clustering import plan_for
from test_hudi_1x_metadata_table import _assert_validated, _hudi_checks, _on_storage
from test_hudi_merge_on_read import HISTORY, RO, _as_read, _no_file_name, _options, _values
from test_hudi_metadata_record_index import RECORD_INDEX_ON, hudi_lookup
from test_hudi_metadata_table import hudi_validates
from test_hudi_tables import KEYED, SCHEMA, _import, _table

from tablespec.apply import Applier
from tablespec.engine.clustering import run as run_clustering
from tablespec.errors import TablespecError
from tablespec.faults import CRASH_ENV
from tablespec.hudi.formats.naming import bucket_of
from tablespec.hudi.mdt import record_index_reader as rli_reader
from tablespec.hudi.services.clustering import pending_plans
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import avro_content
from tablespec.hudi_options import hudi_write_options
from tablespec.plan.actions import Clustering, Rollback
from tablespec.spec.loader import load_spec_text
from tablespec.state import observe

pytestmark = pytest.mark.hudi
ROOT = Path(__file__).resolve().parents[2]
SORTED = {"strategy": "SORT", "sortColumns": ["v"]}
HUDI_OPTIONS = "hoodie.metadata.enable=true"
INDEXES_BUCKET = {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "2",
                  "hoodie.index.bucket.engine": "SIMPLE", "hoodie.table.type": "MERGE_ON_READ"}
INDEX_HASH = {"hoodie.bucket.index.hash.field": "id"}


@pytest.fixture(scope="module")
def history(spark_session, tmp_path_factory) -> Path:
    """The MOR table Hudi 0.15 wrote HISTORY into (SIMPLE index): slices with base and log files."""
    hudi, missing = spark_session
    if missing:
        pytest.skip(f"Apache Hudi is not available: {missing}")
    location = tmp_path_factory.mktemp("mor_clustering") / "mor_clustered"
    for operation, data in HISTORY:
        hudi_write(hudi.createDataFrame(data, SCHEMA), str(location), _options(location.name, "simple", operation))
    assert any(s.log_files for s in HudiTable.open(str(location)).view.latest_slices()), "Hudi wrote no log files"
    return location


def _copy(hudi, history: Path, tmp_path, capsys, clustering: dict):
    """A copy of the history, imported, its spec declaring `clustering`: (location, spec file, table)."""
    location = tmp_path / history.name
    shutil.copytree(history, location)
    doc, spec_file = _import(tmp_path, location, capsys)
    doc["spec"]["clustering"] = clustering
    save_spec(doc, spec_file)
    return location, spec_file, _table(hudi, doc, location)


def _plan(spec_file, warehouse):
    return plan_for(Path(spec_file).read_text(), warehouse)


def _listed_logs(requested: dict) -> dict:
    """(partition, file id) -> deltaFilePaths of a clustering plan's slices, as its requested file has them."""
    return {(s["partitionPath"], s["fileId"]): s["deltaFilePaths"]
            for g in requested["clusteringPlan"]["inputGroups"] for s in g["slices"]}


def _with_logs(location) -> list:
    return [s for s in HudiTable.open(str(location)).view.latest_slices() if s.log_files]


def test_tablespec_clusters_merged_slices_killed_once_hudi_reads_upserts_and_compacts(hudi, history, tmp_path,
                                                                                      capsys, monkeypatch):
    location, spec_file, table = _copy(hudi, history, tmp_path, capsys, SORTED)
    before = tablespec_rows(table)
    logs = _with_logs(location)
    # killed while writing the new base files: the replacecommit is left inflight
    env = {**os.environ, **SHORT_LIVED_JVM, CRASH_ENV: "mid_write", "PYTHONPATH": str(ROOT), "TABLESPEC_SPARK_MASTER": "local[1]"}
    proc = subprocess.run([sys.executable, "-m", "tablespec.cli", "apply", str(spec_file), "--warehouse",
                           str(tmp_path), "--auto-approve"], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == -9, proc.stdout[-2000:] + proc.stderr[-2000:]
    [(killed, _)] = pending_plans(HudiTable.open(str(location)).timeline).items()
    assert killed.state == "inflight"
    assert tablespec_rows(table) == before == hudi_rows(hudi, str(location))   # readers still see the slices
    monkeypatch.setenv("TABLESPEC_HEARTBEAT_TOLERANCE", "0")
    # rolled back to its plan (its partial files deleted), run again
    assert apply_until_done(capsys, spec_file, tmp_path)[:2] == ["rollback", "clustering"]

    clustered = HudiTable.open(str(location))
    assert clustered.timeline.last("replacecommit").timestamp == killed.timestamp
    assert not clustered.timeline.pending()
    assert _with_logs(location) == []   # every slice merged into a base file
    meta = clustered.timeline.commit_metadata(clustered.timeline.last("replacecommit"))
    assert {f for ids in meta.partition_to_replace_file_ids.values() for f in ids} >= {s.file_id for s in logs}
    after = tablespec_rows(table)
    assert _no_file_name(after) == _no_file_name(before)   # records keep their commit time and sequence number
    assert hudi_rows(hudi, str(location)) == after == hudi_rows(hudi, str(location), **RO)   # all in base files
    hudi_validates(hudi, str(location))

    # Hudi writes on the clustered table (updates to log files) and compacts; tablespec reads what it wrote
    hudi_write(hudi.createDataFrame([("a", 7, "2024-01-01", 20), ("c", 8, "2024-01-02", 20)], SCHEMA), str(location),
               _options(location.name, "simple", "upsert"))
    hudi_write(hudi.createDataFrame([("e", 9, "2024-01-01", 21)], SCHEMA), str(location),
               {**_options(location.name, "simple", "upsert"), "hoodie.compact.inline": "true",
                "hoodie.compact.inline.max.delta.commits": "1"})
    assert list((location / ".hoodie").glob("*.commit")), "Hudi did not compact"
    assert tablespec_rows(table) == hudi_rows(hudi, str(location))
    assert {dict(r)["id"]: dict(r)["v"] for r in tablespec_rows(table)} == {"a": 7, "b": 20, "c": 8, "e": 9}


def test_clustering_plans_on_merge_on_read_cross_over_with_hudi(hudi, history, tmp_path, capsys):
    location, spec_file, table = _copy(hudi, history, tmp_path, capsys, {**SORTED, "everyNCommits": 100})
    before = _no_file_name(tablespec_rows(table))
    plan = _plan(spec_file, tmp_path)
    Applier(spark=hudi, schedule_only=True).apply(plan)
    hudi_table = HudiTable.open(str(location))
    [(instant, scheduled)] = pending_plans(hudi_table.timeline).items()
    raw = avro_content((location / ".hoodie" / instant.file_name).read_bytes(), instant.file_name)
    slices = {(s.partition, s.file_id): s for s in hudi_table.view.latest_slices()}
    assert _listed_logs(raw) == {k: [f.path for f in slices[k].log_files] for k in _listed_logs(raw)}
    assert any(_listed_logs(raw).values())
    state = observe(hudi_table)   # no compaction takes a file group under the plan
    assert not {(op.partition, op.file_id) for op in state.compaction.operations} & scheduled.file_ids()

    # Hudi 0.15's default update strategy rejects an update to a file group under a pending clustering
    with pytest.raises(Exception, match="Not allowed to update the clustering file group"):
        hudi_write(hudi.createDataFrame([("a", 99, "2024-01-01", 30)], SCHEMA), str(location),
                   _options(location.name, "simple", "upsert"))
    # ... and tablespec's deltacommit is refused too, before anything commits
    with pytest.raises(TablespecError, match="pending clustering"):
        table.write(hudi.createDataFrame([("a", 99, "2024-01-01", 30)], SCHEMA), "upsert")

    hudi.sql(f"CALL run_clustering(path => '{location}', op => 'execute', instants => '{instant.timestamp}', "
             f"options => '{HUDI_OPTIONS}')").collect()
    ran = HudiTable.open(str(location))
    assert ran.timeline.contains_completed(instant.timestamp) and not _with_logs(location)
    assert _no_file_name(tablespec_rows(table)) == before
    assert tablespec_rows(table) == hudi_rows(hudi, str(location))

    # Hudi schedules on slices with log files; tablespec runs its plan
    hudi_write(hudi.createDataFrame([("b", 21, "2024-01-01", 31), ("c", 31, "2024-01-02", 31)], SCHEMA), str(location),
               _options(location.name, "simple", "upsert"))
    before = _no_file_name(tablespec_rows(table))
    hudi.sql(f"CALL run_clustering(path => '{location}', op => 'schedule', order => 'v', "
             f"options => '{HUDI_OPTIONS}')").collect()
    scheduled_by_hudi = HudiTable.open(str(location))
    [theirs] = pending_plans(scheduled_by_hudi.timeline)
    raw = avro_content((location / ".hoodie" / theirs.file_name).read_bytes(), theirs.file_name)
    slices = {(s.partition, s.file_id): s for s in scheduled_by_hudi.view.latest_slices()}
    assert any(_listed_logs(raw).values()), "Hudi's plan reads no log files"   # listed as tablespec lists them
    assert _listed_logs(raw) == {k: [f.path for f in slices[k].log_files] for k in _listed_logs(raw)}
    plan = _plan(spec_file, tmp_path)
    assert [(a.kind, a.params.instant) for _, a in plan.actions if isinstance(a, Clustering)] == \
        [("clustering", theirs.timestamp)]
    Applier(spark=hudi).apply(plan)
    done = HudiTable.open(str(location))
    assert done.timeline.contains_completed(theirs.timestamp) and not _with_logs(location)
    assert _no_file_name(tablespec_rows(table)) == before
    assert tablespec_rows(table) == hudi_rows(hudi, str(location))
    hudi_validates(hudi, str(location))


def test_version_9_clustering_crosses_over_with_hudi_1_2(hudi, hudi1, tmp_path, capsys):
    """Version 9 (a SIMPLE-index table Hudi 1.2 wrote: base files, log files named by their
    deltacommits). Hudi 1.2's plan is laid out as on version 6 (measured: `T.clustering.requested`,
    `deltaFilePaths` full paths, newest log file first); tablespec schedules the same, Hudi 1.2's
    `run_clustering` runs it; Hudi 1.2 schedules over new log files and tablespec runs its plan. After
    each, Hudi 1.2's snapshot and read-optimized reads equal tablespec's, its metadata validation
    passes; Hudi upserts and compacts on top, and tablespec and hudi-rs read what it wrote."""
    from hudi_process import Batch, read_step, sql_step, write_step
    from test_hudi_1x_metadata_table import _assert_validated, _hudi_checks, _on_storage
    from test_hudi_merge_on_read import _as_read, _values
    name = "mor9_clustered"
    recipe = tuple(Batch.of(_options(name, "simple", op), SCHEMA, data) for op, data in HISTORY)
    location, _ = hudi1.copy(recipe, tmp_path / name)
    doc, spec_file = _import(tmp_path, location, capsys)
    doc["spec"]["clustering"] = {**SORTED, "everyNCommits": 100}
    save_spec(doc, spec_file)
    table = _table(hudi, doc, location)
    before = _no_file_name(tablespec_rows(table))

    def agree(run_first: list[dict], check: str) -> list:
        """Hudi 1.2 runs `run_first`, then reads (snapshot, read-optimized) and validates its metadata table."""
        results = hudi1.process.run([*run_first, read_step(location), read_step(location, **RO),
                                     *_hudi_checks(location, check)])
        snapshot, optimized, _, every, differences, _ = results[len(run_first):]
        ours = tablespec_rows(table)
        assert _as_read(snapshot) == ours == _as_read(optimized)   # every slice merged into a base file
        _assert_validated(_on_storage(location), every, differences)
        return ours

    plan = _plan(spec_file, tmp_path)
    [action] = [a for _, a in plan.actions if isinstance(a, Clustering)]
    assert any("merge-on-read: reads" in r for r in action.reasons), action.reasons
    assert not [w for w in plan.tables[0].warnings if "left to Apache Hudi" in w], plan.tables[0].warnings
    Applier(spark=hudi, schedule_only=True).apply(plan)
    hudi_table = HudiTable.open(str(location))
    [(instant, _)] = pending_plans(hudi_table.timeline).items()
    assert instant.action == "clustering"
    requested = location / ".hoodie" / "timeline" / instant.file_name
    slices = {(s.partition, s.file_id): s for s in hudi_table.view.latest_slices()}
    listed = _listed_logs(avro_content(requested.read_bytes(), instant.file_name))
    assert any(listed.values()) and listed == {k: [f.path for f in slices[k].log_files] for k in listed}
    agree([sql_step(f"CALL run_clustering(path => '{location}', op => 'execute', instants => '{instant.timestamp}', "
                    f"options => '{HUDI_OPTIONS}')")], "ran_ours")
    assert HudiTable.open(str(location)).timeline.contains_completed(instant.timestamp) and not _with_logs(location)
    assert _no_file_name(tablespec_rows(table)) == before

    # Hudi 1.2 writes log files on the clustered table and schedules; tablespec runs its plan
    hudi1.process.run([write_step(location, _options(name, "simple", "upsert"), SCHEMA,
                                  [("b", 21, "2024-01-01", 31), ("c", 31, "2024-01-02", 31)]),
                       sql_step(f"CALL run_clustering(path => '{location}', op => 'schedule', order => 'v', "
                                f"options => '{HUDI_OPTIONS}')")])
    before = _no_file_name(tablespec_rows(table))
    scheduled = HudiTable.open(str(location))
    [theirs] = pending_plans(scheduled.timeline)
    slices = {(s.partition, s.file_id): s for s in scheduled.view.latest_slices()}
    listed = _listed_logs(avro_content((location / ".hoodie" / "timeline" / theirs.file_name).read_bytes(),
                                       theirs.file_name))
    assert any(listed.values()) and listed == {k: [f.path for f in slices[k].log_files] for k in listed}
    plan = _plan(spec_file, tmp_path)
    assert [(a.kind, a.params.instant) for _, a in plan.actions if isinstance(a, Clustering)] == \
        [("clustering", theirs.timestamp)]
    Applier(spark=hudi).apply(plan)
    assert HudiTable.open(str(location)).timeline.contains_completed(theirs.timestamp) and not _with_logs(location)
    assert _no_file_name(agree([], "ran_theirs")) == before

    on_top = [("a", 7, "2024-01-01", 40), ("e", 9, "2024-01-01", 40)]
    *_, after = hudi1.process.run([write_step(location, _options(name, "simple", "upsert"), SCHEMA, on_top),
                                   sql_step(f"CALL run_compaction(op => 'scheduleandexecute', path => '{location}')"),
                                   read_step(location)])
    assert any(i.action == "commit" for i in HudiTable.open(str(location)).timeline.commits()), "Hudi did not compact"
    assert tablespec_rows(table) == _as_read(after)
    assert _values(tablespec_rows(table)) == {"a": 7, "b": 21, "c": 31, "e": 9}
    assert _values(hudi_rs_rows(str(location))) == _values(tablespec_rows(table))


def test_tablespec_bucket_bootstraps_merged_slices_hudi_reads_upserts_and_compacts(hudi, history, tmp_path, capsys):
    """SIMPLE -> BUCKET on a merge-on-read table: every slice read merged with its log files (an
    update and a delete only the logs hold) into bucket base files in one replacecommit, the
    replaced file groups' log files included; Hudi reads the new layout (snapshot and
    read-optimized), validates its metadata table, upserts with its bucket index and compacts."""
    location, spec_file, table = _copy(hudi, history, tmp_path, capsys, {})
    doc = yaml.safe_load(Path(spec_file).read_text())
    doc["spec"].pop("clustering")
    doc["spec"]["index"] = {"type": "BUCKET", "numBuckets": 2, "hashFields": ["id"]}
    save_spec(doc, spec_file)
    before = tablespec_rows(table)
    assert "d" not in _values(before) and _with_logs(location)   # d's delete is in a log file
    assert hudi_rows(hudi, str(location), **RO) != hudi_rows(hudi, str(location))   # logs hold rows

    assert apply_until_done(capsys, spec_file, tmp_path) == ["bucket_bootstrap"]
    booted = HudiTable.open(str(location))
    assert _with_logs(location) == [] and {bucket_of(s.file_id) for s in booted.view.latest_slices()} <= {0, 1}
    after = tablespec_rows(table)
    assert _no_file_name(after) == _no_file_name(before)   # nothing lost or resurrected, meta columns kept
    assert hudi_rows(hudi, str(location)) == after == hudi_rows(hudi, str(location), **RO)
    assert hudi_rs_rows(str(location)) == after
    hudi_validates(hudi, str(location))

    # Hudi's bucket-index writer updates into log files of the new bucket file groups and compacts
    bucket = {**_options(location.name, "bucket", "upsert"), "hoodie.bucket.index.hash.field": "id"}
    hudi_write(hudi.createDataFrame([("a", 7, "2024-01-01", 20), ("d", 8, "2024-01-02", 20)], SCHEMA), str(location),
               bucket)
    hudi_write(hudi.createDataFrame([("e", 9, "2024-01-01", 21)], SCHEMA), str(location),
               {**bucket, "hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "1"})
    assert list((location / ".hoodie").glob("*.commit")), "Hudi did not compact"
    rows = hudi_rows(hudi, str(location))
    assert tablespec_rows(table) == rows
    assert _values(rows) == {**_values(after), "a": 7, "d": 8, "e": 9}   # one row per key, d inserted again
    assert len(rows) == len(_values(rows))


def test_copy_on_write_converts_to_merge_on_read_in_place(hudi, tmp_path, capsys):
    """COPY_ON_WRITE -> MERGE_ON_READ switches hoodie.table.type, no file rewritten: Hudi 0.15 reads the
    commits' base files as a merge-on-read table, writes deltacommits (log files) on them and compacts."""
    location = tmp_path / "converted"
    cow = {"hoodie.table.name": location.name, **KEYED, "hoodie.index.type": "SIMPLE",
           "hoodie.datasource.write.operation": "upsert"}
    for _, data in HISTORY[:2]:
        hudi_write(hudi.createDataFrame(data, SCHEMA), str(location), cow)
    doc, spec_file = _import(tmp_path, location, capsys)
    doc["spec"]["tableType"] = "MERGE_ON_READ"
    doc["spec"]["compaction"] = {"deltaCommits": 1}   # stored in hoodie.properties: Hudi's inline compaction agrees
    save_spec(doc, spec_file)
    data = {p.relative_to(location): p.read_bytes() for p in location.rglob("*.parquet")}
    before = hudi_rows(hudi, str(location))

    assert apply_until_done(capsys, spec_file, tmp_path) == ["update_settings"]
    table = _table(hudi, doc, location)
    assert HudiTable.open(str(location)).config.table_type == "MERGE_ON_READ"
    assert {p.relative_to(location): p.read_bytes() for p in location.rglob("*.parquet")} == data
    assert hudi_rows(hudi, str(location)) == before == hudi_rows(hudi, str(location), **RO) == tablespec_rows(table)

    for operation, rows in HISTORY[2:]:   # an update older than its base row, a delete: log files
        hudi_write(hudi.createDataFrame(rows, SCHEMA), str(location), _options(location.name, "simple", operation))
    assert _with_logs(location), "Hudi wrote no log files"
    assert tablespec_rows(table) == hudi_rows(hudi, str(location))
    commits = set((location / ".hoodie").glob("*.commit"))
    hudi_write(hudi.createDataFrame([("e", 9, "2024-01-01", 21)], SCHEMA), str(location),
               {**_options(location.name, "simple", "upsert"), "hoodie.compact.inline": "true",
                "hoodie.compact.inline.max.delta.commits": "1"})
    assert set((location / ".hoodie").glob("*.commit")) > commits, "Hudi did not compact"
    assert tablespec_rows(table) == hudi_rows(hudi, str(location)) == hudi_rows(hudi, str(location), **RO)
    assert "d" not in _values(tablespec_rows(table))
    hudi_validates(hudi, str(location))


def test_tablespec_builds_the_record_index_from_merged_slices_hudi_upserts_with_it(hudi, history, tmp_path, capsys):
    """SIMPLE -> RECORD_LEVEL: the record index holds each slice's keys merged with its log files (a key
    a log deletes is not indexed), as Hudi's own lookup reads it; Hudi's RECORD_INDEX upserts use it."""
    location, spec_file, table = _copy(hudi, history, tmp_path, capsys, {})
    doc = yaml.safe_load(Path(spec_file).read_text())
    doc["spec"].pop("clustering")
    doc["spec"]["index"] = {"type": "RECORD_LEVEL"}
    save_spec(doc, spec_file)
    before = _values(tablespec_rows(table))
    assert "d" not in before and "d" in _values(hudi_rows(hudi, str(location), **RO))   # d's delete: in a log

    assert apply_until_done(capsys, spec_file, tmp_path) == ["index_migration"]
    indexed = rli_reader.scan(HudiTable.open(str(location)))
    assert sorted(indexed) == sorted(before)
    assert hudi_lookup(hudi, str(location), [*sorted(before), "d"]) == indexed

    hudi_write(hudi.createDataFrame([("a", 7, "2024-01-01", 20), ("d", 8, "2024-01-02", 20),
                                     ("f", 9, "2024-01-02", 20)], SCHEMA), str(location),
               {**_options(location.name, "simple", "upsert"), **RECORD_INDEX_ON})
    rows = hudi_rows(hudi, str(location))
    assert len(rows) == len(_values(rows)) and _values(rows) == {**before, "a": 7, "d": 8, "f": 9}
    assert tablespec_rows(table) == rows
    hudi_validates(hudi, str(location))


def _version_9_history(hudi, hudi1, tmp_path, capsys, name: str, index: dict):
    """A copy of HISTORY as Hudi 1.2 writes it (version 9, SIMPLE: log files named by their deltacommits;
    the table the version 9 clustering test uses), imported, its spec asking for `index`: (location,
    spec file, table, rows before)."""
    recipe = tuple(Batch.of(_options("mor9_clustered", "simple", op), SCHEMA, data) for op, data in HISTORY)
    location, _ = hudi1.copy(recipe, tmp_path / name)
    doc, spec_file = _import(tmp_path, location, capsys)
    doc["spec"]["index"] = index
    save_spec(doc, spec_file)
    table = _table(hudi, doc, location)
    before = tablespec_rows(table)
    assert "d" not in _values(before) and _with_logs(location)   # d's delete is in a log file
    return location, spec_file, table, before


def _hudi_1_2_agrees(hudi1, location, table, check: str, optimized: bool = True) -> list:
    """Hudi 1.2 reads (snapshot, and read-optimized if `optimized`: every slice a base file) and
    validates its metadata table: its reads equal tablespec's. tablespec's rows."""
    reads = [read_step(location), *([read_step(location, **RO)] if optimized else [])]
    *read, _, every, differences, _ = hudi1.process.run([*reads, *_hudi_checks(location, check)])
    ours = tablespec_rows(table)
    assert all(_as_read(r) == ours for r in read)
    _assert_validated(_on_storage(location), every, differences)
    return ours


def test_version_9_bucket_bootstrap_reads_merged_slices_hudi_1_2_reads_upserts_and_compacts(hudi, hudi1, tmp_path,
                                                                                           capsys):
    """SIMPLE -> BUCKET on a version 9 merge-on-read table, as on version 6: slices read merged with log
    files named by their deltacommits; Hudi 1.2 reads and validates the new layout, upserts with its
    bucket index and compacts without a second row of a key; hudi-rs reads the same."""
    location, spec_file, table, before = _version_9_history(hudi, hudi1, tmp_path, capsys, "mor9_bucketed",
                                                            {"type": "BUCKET", "numBuckets": 2, "hashFields": ["id"]})
    assert apply_until_done(capsys, spec_file, tmp_path) == ["bucket_bootstrap"]
    booted = HudiTable.open(str(location))
    assert _with_logs(location) == [] and {bucket_of(s.file_id) for s in booted.view.latest_slices()} <= {0, 1}
    after = _hudi_1_2_agrees(hudi1, location, table, "b9")
    assert _no_file_name(after) == _no_file_name(before)   # nothing lost or resurrected, meta columns kept
    assert hudi_rs_rows(str(location)) == after

    bucket = {**_options("mor9_clustered", "bucket", "upsert"), "hoodie.bucket.index.hash.field": "id"}
    *_, read = hudi1.process.run([
        write_step(location, bucket, SCHEMA, [("a", 7, "2024-01-01", 20), ("d", 8, "2024-01-02", 20)]),
        # inline: Hudi 1.2's run_compaction, not given the record key, fails its bucket checks (NullPointerException)
        write_step(location, {**bucket, "hoodie.compact.inline": "true"}, SCHEMA, [("e", 9, "2024-01-01", 21)]),
        read_step(location)])
    assert any(i.action == "commit" for i in HudiTable.open(str(location)).timeline.commits()), "Hudi did not compact"
    assert tablespec_rows(table) == _as_read(read)
    assert _values(read) == {**_values(after), "a": 7, "d": 8, "e": 9} and len(read) == len(_values(read))
    assert hudi_rs_rows(str(location)) == tablespec_rows(table)


def test_version_9_record_index_build_reads_merged_slices_hudi_1_2_upserts_with_it(hudi, hudi1, tmp_path, capsys):
    """SIMPLE -> RECORD_LEVEL on a version 9 merge-on-read table: the index holds each slice's keys merged
    with its log files (d, deleted in a log, is not indexed), as Hudi 1.2's own lookup reads it; Hudi 1.2
    validates, upserts through it (d inserted once again) and compacts without a duplicate key."""
    location, spec_file, table, before = _version_9_history(hudi, hudi1, tmp_path, capsys, "mor9_indexed",
                                                            {"type": "RECORD_LEVEL"})
    assert apply_until_done(capsys, spec_file, tmp_path) == ["index_migration"]
    indexed = rli_reader.scan(HudiTable.open(str(location)))
    assert sorted(indexed) == sorted(_values(before))
    looked_up, snapshot, _, every, differences, _ = hudi1.process.run([
        record_index_step(location, [*sorted(_values(before)), "d"]), read_step(location), *_hudi_checks(location, "r9")])
    assert {k: tuple(v[:2]) for k, v in looked_up.items()} == {k: (v.partition, v.file_id) for k, v in indexed.items()}
    assert _as_read(snapshot) == tablespec_rows(table)
    _assert_validated(_on_storage(location), every, differences)

    options = {k: v for k, v in hudi_write_options(table.spec, HudiTable.open(str(location)), line="1.2").items()
               if k != "path"}
    assert options["hoodie.index.type"] == "RECORD_INDEX"
    upsert = {**_options("mor9_clustered", "simple", "upsert"), **options}
    *_, read = hudi1.process.run([
        write_step(location, upsert, SCHEMA, [("a", 7, "2024-01-01", 20), ("d", 8, "2024-01-02", 20),
                                              ("f", 9, "2024-01-02", 20)]),
        write_step(location, upsert, SCHEMA, [("b", 21, "2024-01-01", 21)]),
        sql_step(f"CALL run_compaction(op => 'scheduleandexecute', path => '{location}')"),
        read_step(location)])
    assert any(i.action == "commit" for i in HudiTable.open(str(location)).timeline.commits()), "Hudi did not compact"
    assert len(read) == len(_values(read)) and _values(read) == {**_values(before), "a": 7, "b": 21, "d": 8, "f": 9}
    assert tablespec_rows(table) == _as_read(read)
    _hudi_1_2_agrees(hudi1, location, table, "r9_after", optimized=False)


def test_version_9_hudi_1_2s_clustering_plan_of_log_only_slices_is_read(hudi, hudi1, tmp_path, capsys):
    """Hudi 1.2's non-blocking concurrency control on a BUCKET table puts a new bucket's inserts into a
    log file (a file group without a base file), and Hudi 1.2 plans clustering over such slices (an
    empty `dataFilePath`; a log-only slice counts no bytes, so one group takes every bucket of a
    partition). tablespec imports the table; as the group would merge buckets of a BUCKET table, `plan`
    offers to discard the pending plan before anything changes (a run is refused in one line, nothing
    changed, hoodie.properties included), and apply rolls it back, the data files untouched. tablespec's
    own plan then takes the log-only file groups, one bucket per group (Hudi 1.2 runs no clustering on a
    simple-bucket table: tablespec runs it), and Hudi 1.2 reads and validates the result."""
    from _support import table_files
    from test_hudi_merge_on_read import _record_index
    name = "mor9_nbcc"
    bucket = {**INDEXES_BUCKET, **INDEX_HASH, "hoodie.write.concurrency.mode": "NON_BLOCKING_CONCURRENCY_CONTROL",
              "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.InProcessLockProvider",
              "hoodie.clean.failed.writes.policy": "LAZY"}
    recipe = tuple(Batch.of({**_options(name, "bucket", op), **bucket}, SCHEMA, data) for op, data in HISTORY)
    location, _ = hudi1.copy(recipe, tmp_path / name)
    assert any(s.base_file is None for s in _with_logs(location)), "Hudi wrote no log-only file group"
    # the procedure's writer checks the bucket hash field against the record key: both given
    options = ",".join(f"{k}={v}" for k, v in {**KEYED, **bucket}.items())
    hudi1.process.run([sql_step(f"CALL run_clustering(path => '{location}', op => 'schedule', order => 'v', "
                                f"options => '{options}')")])
    scheduled = HudiTable.open(str(location))
    [theirs] = pending_plans(scheduled.timeline)
    raw = avro_content((location / ".hoodie" / "timeline" / theirs.file_name).read_bytes(), theirs.file_name)
    log_only = [s for g in raw["clusteringPlan"]["inputGroups"] for s in g["slices"] if not s["dataFilePath"]]
    assert log_only and all(s["deltaFilePaths"] for s in log_only), raw["clusteringPlan"]
    assert any(len({bucket_of(s["fileId"]) for s in g["slices"]}) > 1 for g in raw["clusteringPlan"]["inputGroups"])
    _record_index(location, "bucket")
    doc, spec_file = _import(tmp_path, location, capsys, ("rollback",))
    doc["spec"]["clustering"] = {**SORTED, "everyNCommits": 100}
    save_spec(doc, spec_file)
    plan = _plan(spec_file, tmp_path)
    assert not [a for _, a in plan.actions if isinstance(a, Clustering)]
    [discard] = [a for _, a in plan.actions if isinstance(a, Rollback)]
    assert discard.params.discard_plans == [theirs.timestamp]
    assert "it would merge or split buckets of a BUCKET table" in discard.reasons[0], discard.reasons
    files = table_files(location)   # hoodie.properties included
    spec = load_spec_text(Path(spec_file).read_text(), spec_file).specs[0].spec
    with pytest.raises(TablespecError, match=f"clustering plan {theirs.timestamp} cannot run \\(it would merge or "
                                             "split buckets of a BUCKET table"):
        run_clustering(hudi, spec, HudiTable.open(str(location)), theirs, "")
    assert table_files(location) == files
    Applier(spark=hudi).apply(plan)   # discards the plan (and stores the spec's clustering settings)
    assert not pending_plans(HudiTable.open(str(location)).timeline)
    assert {k: v for k, v in table_files(location).items() if not k.startswith(".hoodie/")} == \
        {k: v for k, v in files.items() if not k.startswith(".hoodie/")}

    # tablespec's own plan takes the log-only file groups too (one bucket per group, weighed by their
    # log files, an empty dataFilePath as Hudi's); run, every bucket gets a base file, Hudi 1.2 reads it
    doc["spec"]["clustering"]["everyNCommits"] = 1   # the settings the discard stored: due by commits
    save_spec(doc, spec_file)
    table = _table(hudi, doc, location)
    before = _no_file_name(tablespec_rows(table))
    plan = _plan(spec_file, tmp_path)
    assert [a for _, a in plan.actions if isinstance(a, Clustering)], plan.actions
    Applier(spark=hudi, schedule_only=True).apply(plan)
    [ours] = pending_plans(HudiTable.open(str(location)).timeline)
    raw = avro_content((location / ".hoodie" / "timeline" / ours.file_name).read_bytes(), ours.file_name)
    groups = raw["clusteringPlan"]["inputGroups"]
    assert [s for g in groups for s in g["slices"] if s["dataFilePath"] == "" and s["deltaFilePaths"]], groups
    assert all(len(g["slices"]) == 1 for g in groups)
    # Hudi 1.2 runs no clustering on a simple-bucket table ("SparkExecuteClusteringCommitActionExecutor is
    # not compatible with table layout HoodieSimpleBucketLayout", measured): tablespec runs its plan
    Applier(spark=hudi).apply(_plan(spec_file, tmp_path))
    clustered = HudiTable.open(str(location))
    assert clustered.timeline.contains_completed(ours.timestamp)
    assert all(s.base_file is not None for s in clustered.view.latest_slices())
    assert _no_file_name(_hudi_1_2_agrees(hudi1, location, table, "nbcc_clustered", optimized=False)) == before

"""The record-level index after commits it has not seen: detected, refused, caught up by plan/apply."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from _support import ROOT
from helpers import assert_hudi_rs_agrees, make_table
from test_engine_rebucket import plan_for
from test_engine_record_index import DDL, SPEC, assert_consistent, where

from tablespec.apply import Applier
from tablespec.cli import main
from tablespec.engine.writer import TableWriter
from tablespec.errors import TablespecError
from tablespec.hudi import index_coverage as coverage
from tablespec.hudi import record_index as ri
from tablespec.hudi.index_coverage import IndexBehind
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline import Timeline
from tablespec.index import verify
from tablespec.plan.render import render
from tablespec.spec.loader import load_spec_text

pytestmark = pytest.mark.spark


class OlderTablespec(TableWriter):
    """A writer that knows nothing of the record-level index (an older tablespec, or one whose spec
    still says SIMPLE): it neither checks the table's index nor maintains it."""

    def _check_table(self):
        return None


def older_write(spark, table, rows, operation="upsert"):
    spec = load_spec_text(SPEC.replace("{type: RECORD_LEVEL, recordLevel: {numBuckets: 3, maxFilesPerBucket: 2}}",
                                       "{type: SIMPLE}"), "old.yaml").specs[0].spec
    return OlderTablespec(spark, spec, HudiTable.open(table.location)).write(spark.createDataFrame(rows, DDL), operation)


def unseen(table) -> list[str]:
    return [i.timestamp for i in coverage.unseen_commits(Timeline.load(LocalStorage(), table.location))]


def seeded(spark, tmp_path):
    table = make_table(spark, tmp_path, SPEC)
    table.write(spark.createDataFrame([(f"k{i}", ["ams", "ber"][i % 2], i) for i in range(6)], DDL), "insert")
    return table, assert_consistent(table)


def test_unseen_commits_are_refused_then_caught_up_incrementally(spark, tmp_path, capsys):
    table, before = seeded(spark, tmp_path)
    assert unseen(table) == []
    update = older_write(spark, table, [("k0", "ams", 10), ("n1", "ber", 1)])
    delete = older_write(spark, table, [("k3", "ber", 0)], "delete")
    assert unseen(table) == [update.instant, delete.instant]
    # index-based work is refused, naming the instants and the way out
    for refused in (lambda: table.write(spark.createDataFrame([("k1", "ams", 9)], DDL), "upsert"),
                    lambda: table.lookup(["k0"]), lambda: verify(HudiTable.open(table.location))):
        with pytest.raises(IndexBehind, match=f"{update.instant}.commit, {delete.instant}.commit.*tablespec plan"):
            refused()
    assert main(["verify", table.location]) == 1  # a finding: the index cannot be compared
    out, err = capsys.readouterr()
    assert "\tindex\t" in out and update.instant in out and "record_index_catch_up" in out and "Traceback" not in err
    plan, _ = plan_for(SPEC, tmp_path)
    [(_, action)] = plan.actions
    assert action.kind == "record_index_catch_up"
    assert action.params.instants == [update.instant, delete.instant]
    assert action.estimate.commits == 2 and action.estimate.rows >= 1 and action.estimate.file_groups >= 2
    for fmt in ("text", "markdown", "json"):
        assert "record_index_catch_up" in render(plan, fmt)
    files_before = {f.name for f in ri.list_files(LocalStorage(), table.location)}
    result = Applier(spark=spark).apply(plan)
    actual = result.actions[0].actual
    assert actual.commits == 2 and actual.index_files_written >= 1
    written = {f for f in ri.list_files(LocalStorage(), table.location) if f.name not in files_before}
    assert {(f.instant, f.kind) for f in written} == {(actual.instant, "delta")}  # a delta, not a rebuild
    assert unseen(table) == []
    data = assert_consistent(table)  # verify clean, lookups right
    assert "k3" not in data and data["n1"][0].endswith("ber") and data["k0"] == before["k0"]
    assert not plan_for(SPEC, tmp_path)[0].has_changes
    # writes through the index work again: a move to another partition keeps keys unique
    r = table.write(spark.createDataFrame([("n1", "ams", 5)], DDL), "upsert")
    assert r.deleted == 1 and assert_consistent(table)["n1"][0].endswith("ams")
    assert_hudi_rs_agrees(table)


def test_a_clustering_after_unseen_commits_is_caught_up_with_them(spark, tmp_path):
    """A rewrite cannot diff from a view the index does not have: it writes no delta, stays unseen,
    and the catch-up indexes the file groups it replaced and wrote."""
    from tablespec.engine import clustering
    from tablespec.engine.commit import locked
    from tablespec.engine.writer import table_avro_schema
    from tablespec.plan.clustering import clustering_plan
    from tablespec.state import observe
    spec_text = SPEC + "  clustering: {everyNCommits: 1}\n"
    table = make_table(spark, tmp_path, spec_text)
    table.write(spark.createDataFrame([(f"k{i}", ["ams", "ber"][i % 2], i) for i in range(6)], DDL), "insert")
    older = older_write(spark, table, [("n3", "ams", 3), ("n4", "ams", 4)], "bulk_insert")  # a second ams file group
    with locked(table.table) as lock:
        plan = clustering_plan(table.spec, observe(HudiTable.open(table.location)))
        done = clustering.run(spark, table.spec, table.table, clustering.schedule(table.table, plan),
                              table_avro_schema(table.spec), lock)
    assert unseen(table) == [older.instant, done.instant]
    [(_, action)] = plan_for(spec_text, tmp_path)[0].actions
    assert action.kind == "record_index_catch_up" and action.estimate.commits == 2
    Applier(spark=spark).apply(plan_for(spec_text, tmp_path)[0])
    data = assert_consistent(table)
    assert len(data) == 8 and data["n3"] == data["k0"]  # stitched into one ams file group
    assert_hudi_rs_agrees(table)


def test_a_key_written_again_in_another_partition_is_refused_by_name(spark, tmp_path):
    table, before = seeded(spark, tmp_path)
    older_write(spark, table, [("k2", "ber", 20)])  # SIMPLE is partition-local: k2 (in ams) is inserted again
    plan, _ = plan_for(SPEC, tmp_path)
    with pytest.raises(TablespecError, match="more than once.*e.g. k2;.*non-global index"):
        Applier(spark=spark).apply(plan)
    storage = LocalStorage()
    timeline = Timeline.load(storage, table.location)
    assert not timeline.pending() and not ri.superseded_files(storage, table.location, timeline, 3)
    assert {f.instant for f in ri.list_files(storage, table.location)} <= {i.timestamp for i in timeline.completed()}
    assert [a.kind for _, a in plan_for(SPEC, tmp_path)[0].actions] == ["record_index_catch_up"]  # still due


def test_a_crashed_catch_up_is_rolled_back_and_redone(spark, tmp_path, monkeypatch):
    table, _ = seeded(spark, tmp_path)
    older = older_write(spark, table, [("k1", "ber", 11), ("n2", "ams", 2)])
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "people.yaml").write_text(SPEC)
    env = {**os.environ, "TABLESPEC_CRASH_AT": "before_completion", "PYTHONPATH": str(ROOT),
           "TABLESPEC_SPARK_MASTER": "local[1]"}
    proc = subprocess.run([sys.executable, "-m", "tablespec.cli", "apply", str(specs), "--warehouse", str(tmp_path),
                           "--auto-approve"], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == -9, proc.stdout[-2000:] + proc.stderr[-2000:]
    storage = LocalStorage()
    [crashed] = Timeline.load(storage, table.location).pending()
    assert any(f.instant == crashed.timestamp for f in ri.list_files(storage, table.location))  # written, not counted
    assert unseen(table) == [older.instant]
    monkeypatch.setenv("TABLESPEC_HEARTBEAT_TOLERANCE", "0")
    plan, _ = plan_for(SPEC, tmp_path)
    assert [a.kind for _, a in plan.actions] == ["rollback", "record_index_catch_up"]
    Applier(spark=spark).apply(plan)
    assert not any(f.instant == crashed.timestamp for f in ri.list_files(storage, table.location))
    assert unseen(table) == [] and not Timeline.load(storage, table.location).pending()
    data = assert_consistent(table)
    assert data == where(table) and data["n2"][0].endswith("ams")

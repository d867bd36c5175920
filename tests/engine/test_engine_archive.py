"""Archiving as housekeeping: writes and apply keep the active timeline bounded (spec
`retention.archive`), history stays whole (active + archived), reads, time travel, plan and
verify keep working, and a run killed at any step is finished by the next lock holder."""
from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
from decimal import Decimal

import pytest
from _support import ORDERS_SPEC, ROOT
from helpers import assert_hudi_rs_agrees, make_table, tablespec_rows

from tablespec.apply import Applier
from tablespec.engine.reader import ReadError
from tablespec.faults import CRASH_ENV
from tablespec.hudi.archive import ArchivedTimeline, History
from tablespec.hudi.archive.timeline import instant_key
from tablespec.hudi.io import table_location
from tablespec.hudi.table import HudiTable, Location
from tablespec.plan.builder import build_plan
from tablespec.spec.loader import load_spec_text
from tablespec.state import observe, observe_specs
from tablespec.table import Table

pytestmark = pytest.mark.spark
SCHEMA = "order_id string, customer_id bigint, amount decimal(12,2), updated_at timestamp, order_date date"
T0 = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
PLAIN = ORDERS_SPEC.replace("index: {type: BUCKET, numBuckets: 16}", "index: {type: SIMPLE}")
ARCHIVING = PLAIN + "  retention: {keepCommits: 1, archive: {minCommits: 2, maxCommits: 3}}\n"


def batch(spark, n: int):
    """Commit n: one new order and one update of order 0 (two partitions)."""
    rows = [(f"o{n:03d}", n, Decimal(f"{n}.25"), T0 + dt.timedelta(minutes=n), dt.date(2026, 11, 1 + n % 2)),
            ("o000", 0, Decimal(f"{n}.50"), T0 + dt.timedelta(minutes=n), dt.date(2026, 11, 1))]
    return spark.createDataFrame(rows, SCHEMA).coalesce(1)


def plan_for(text: str, warehouse):
    loaded = load_spec_text(text, "orders.yaml")
    assert not loaded.errors, loaded.errors
    root = Location.parse(str(warehouse))
    return build_plan(loaded.specs, observe_specs(loaded.specs, root), root)


def meta_files(location: str) -> int:
    return sum(1 for f in os.listdir(os.path.join(location, ".hoodie")) if os.path.isfile(os.path.join(location, ".hoodie", f)))


def assert_history_whole(location: str, instants: list[str]) -> HudiTable:
    """Every commit of `instants` is in history, in order, and no instant is completed in both
    timelines (an interrupted run's leftovers are finished)."""
    table = HudiTable.open(location)
    history, archived = History.of(table), ArchivedTimeline.of(table)
    assert [i.timestamp for i in history.commits() if i.timestamp in instants] == instants
    both = {instant_key(i) for i in table.timeline.completed()} & {instant_key(i) for i in archived.completed()}
    assert not both, f"completed in both timelines: {both}"
    return table


def test_writes_keep_the_active_timeline_bounded_and_history_whole(spark, tmp_path):
    """As in Hudi, archiving never passes the metadata table's latest compaction: none before its
    first one (the 9th write: 10 deltacommits with the initializing one), then down to minCommits."""
    table = make_table(spark, tmp_path, ARCHIVING)
    instants, files = [], []
    for n in range(10):
        result = table.write(batch(spark, n))
        instants.append(result.instant)
        files.append(meta_files(table.location))
        if n < 8:
            assert not result.archived, n
        if n == 8:   # the metadata table compacted: the 9 commits archived down to minCommits 2
            assert result.archived == 7 and "archived 7 instants" in str(result)
    handle = assert_history_whole(table.location, instants)
    assert len(handle.timeline.commits()) <= 3
    assert files[9] <= files[8] + 3, files          # .hoodie/ stays bounded: no growth per commit
    rows = assert_hudi_rs_agrees(table)                  # read (tablespec = hudi-rs) and verify ok
    assert len(rows) == 10
    assert observe(HudiTable.open(table.location)).rows == 10    # commit statistics, archived ones too
    latest = handle.timeline.commits()[-1].timestamp
    assert tablespec_rows(table, as_of=latest) == rows
    older = handle.timeline.commits()[0].timestamp
    assert len(tablespec_rows(table, as_of=older)) == instants.index(older) + 1
    with pytest.raises(ReadError, match=rf"instant {instants[0]} has been archived \(spec.retention.archive\): "
                                        rf"time travel reads the active timeline, whose earliest commit is {older}"):
        table.read(as_of=instants[0])
    plan = plan_for(ARCHIVING, tmp_path)                 # writes leave cleaning (and clustering) to apply
    assert "archive" not in [a.kind for t in plan.tables for a in t.actions]
    Applier(spark=spark).apply(plan)
    assert not plan_for(ARCHIVING, tmp_path).has_changes
    handle = assert_history_whole(table.location, instants)
    assert len(handle.timeline.commits()) <= 3 and meta_files(table.location) <= files[3] + 6
    assert assert_hudi_rs_agrees(table) == rows


@pytest.fixture(scope="module")
def nine_commits(spark, tmp_path_factory) -> tuple[Table, list[str], list[tuple]]:
    """A table written with archiving at Hudi's defaults (20/30: nothing archived), nine writes:
    the metadata table's first compaction (as in Hudi, archiving waits for it). Written once for
    the module, each test archives a copy."""
    table = make_table(spark, tmp_path_factory.mktemp("nine"), PLAIN)
    instants = [table.write(batch(spark, n)).instant for n in range(9)]
    return table, instants, tablespec_rows(table)


@pytest.mark.parametrize("point", [None, "archive_written", "archive_pending_deleted"])
def test_apply_archives_and_finishes_a_killed_run(spark, tmp_path, nine_commits, point):
    """The table of nine commits gets the spec's tighter archiving limits: apply archives after the
    settings change. An archiving run killed (-9) at `point` before leaves both timelines
    readable, and the apply's lock recovery finishes it."""
    written, instants, before = nine_commits
    table = Table(written.spec, table_location(str(tmp_path), written.spec.spec.location), spark)
    shutil.copytree(written.location, table.location)
    if point is not None:
        code = ("from tablespec.hudi.table import HudiTable; from tablespec.hudi.archive import ArchiveSettings, "
                f"housekeep; housekeep(HudiTable.open({table.location!r}), ArchiveSettings(2, 3, 1))")
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT), CRASH_ENV: point})
        assert proc.returncode == -9, proc.stderr[-2000:]
        assert [i.timestamp for i in History.of(HudiTable.open(table.location)).commits()] == instants
        assert tablespec_rows(Table(table.spec, table.location, spark)) == before   # readable as left
    plan = plan_for(ARCHIVING, tmp_path)      # keepCommits 10 -> 1: a clean; 9 commits > maxCommits 3
    assert [a.kind for t in plan.tables for a in t.actions] == ["update_settings", "clean", "archive"]
    assert plan.tables[0].actions[-1].estimate.model_dump() == {"instants": 7, "active_commits": 9}
    result = Applier(spark=spark).apply(plan)   # (a killed run: finished by the lock's recovery first)
    assert result.actions[-1].actual.model_dump() == {"instants": 7 if point is None else 0}
    handle = assert_history_whole(table.location, instants)
    assert [i.timestamp for i in handle.timeline.commits()] == instants[-2:]
    assert [i.timestamp for i in ArchivedTimeline.of(handle).commits()] == instants[:-2]
    assert not plan_for(ARCHIVING, tmp_path).has_changes
    fresh = Table(load_spec_text(ARCHIVING, "orders.yaml").specs[0].spec, table.location, spark)
    assert tablespec_rows(fresh) == before
    assert_hudi_rs_agrees(fresh)


def test_clustering_history_reaches_into_the_archive(spark, tmp_path):
    """A SORT clustering archived after later commits and a clean: the state still knows it (its
    layout, so its files count as laid out) and counts the commits since it across both timelines."""
    text = ARCHIVING + "  clustering: {strategy: SORT, sortColumns: [customer_id], everyNCommits: 3}\n"
    table = make_table(spark, tmp_path, text)
    for n in range(3):
        table.write(batch(spark, n))
    plan = plan_for(text, tmp_path)
    assert "clustering" in [a.kind for t in plan.tables for a in t.actions]
    Applier(spark=spark).apply(plan)
    clustered = HudiTable.open(table.location).timeline.last("replacecommit").timestamp
    for n in range(3, 7):
        table.write(batch(spark, n))
    later = text.replace("everyNCommits: 3", "everyNCommits: 10")   # no second clustering yet
    Applier(spark=spark).apply(plan_for(later, tmp_path))   # a clean past the clustering: then it archives
    handle = HudiTable.open(table.location)
    assert clustered not in {i.timestamp for i in handle.timeline.instants}
    assert ArchivedTimeline.of(handle).contains_completed(clustered)
    state = observe(handle)
    assert state.last_clustering == clustered and str(state.last_clustering_layout) == "SORT(customer_id)"
    assert state.commits_since_clustering == 4

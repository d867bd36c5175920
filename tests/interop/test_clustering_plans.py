"""Clustering plans cross over: a plan tablespec schedules runs under Apache Hudi's
`run_clustering`, and a plan Hudi schedules runs under `tablespec apply`."""
from __future__ import annotations

from helpers import make_table
from interop_support import assert_readers_agree
from test_engine_clustering import batch, content, plan_for, spec_text

from tablespec.apply import Applier
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.timeline.active import Timeline

# Hudi's procedures start a write client; like a Hudi job configured by `tablespec hudi-options`,
# it keeps the metadata table off.
HUDI_OPTIONS = "hoodie.metadata.enable=true"  # tablespec keeps the metadata table: so do Hudi's procedures


def replacecommits(location: str, state: str) -> list[str]:
    timeline = Timeline.load(LocalStorage(), location)
    return [i.timestamp for i in timeline.instants if i.action == "replacecommit" and i.state == state]


def small_files(spark, warehouse, text):
    table = make_table(spark, warehouse, text)
    for c in range(3):
        table.write(batch(spark, c * 10, 10), "bulk_insert")
    return table


def test_plan_scheduled_by_tablespec_runs_under_hudi_run_clustering(hudi, tmp_path):
    text = spec_text("{strategy: SORT, sortColumns: [customer_id], everyNCommits: 3}")
    table = small_files(hudi, tmp_path, text)
    before = content(table)
    result = Applier(spark=hudi, schedule_only=True).apply(plan_for(text, tmp_path))
    scheduled = result.actions[0].actual.scheduled
    assert replacecommits(table.location, "requested") == [scheduled]
    assert [getattr(a.params, "instant", None) for _, a in plan_for(text, tmp_path).actions] == [scheduled]  # pending: run it

    hudi.sql(f"CALL run_clustering(path => '{table.location}', op => 'execute', instants => '{scheduled}', "
             f"options => '{HUDI_OPTIONS}')").collect()

    assert replacecommits(table.location, "completed") == [scheduled]
    assert content(table) == before
    assert_readers_agree(hudi, table)
    assert not plan_for(text, tmp_path).has_changes
    table.write(batch(hudi, 5, 10), "upsert")  # tablespec keeps writing the clustered table
    assert_readers_agree(hudi, table)


def test_plan_scheduled_by_hudi_runs_under_tablespec_apply(hudi, tmp_path):
    text = spec_text("{strategy: SORT, sortColumns: [customer_id], everyNCommits: 10}")
    table = small_files(hudi, tmp_path, text)
    before = content(table)
    hudi.sql(f"CALL run_clustering(path => '{table.location}', op => 'schedule', order => 'customer_id', "
             f"options => '{HUDI_OPTIONS}')").collect()
    (scheduled,) = replacecommits(table.location, "requested")

    plan = plan_for(text, tmp_path)
    assert [(a.kind, getattr(a.params, "instant", None)) for _, a in plan.actions] == [("clustering", scheduled)]
    Applier(spark=hudi).apply(plan)

    assert replacecommits(table.location, "completed") == [scheduled]
    assert content(table) == before
    assert_readers_agree(hudi, table)
    assert not plan_for(text, tmp_path).has_changes


def test_a_newly_declared_layout_is_laid_out_in_steps_that_hudi_reads(hudi, tmp_path):
    plain = spec_text("{}").replace("  clustering: {}\n", "")
    table = small_files(hudi, tmp_path, plain)  # 3 commits x 2 partitions: 6 file groups
    before = content(table)
    text = spec_text("{strategy: SORT, sortColumns: [customer_id], maxGroups: 2, maxBytesPerGroup: 1KiB}")
    plan = plan_for(text, tmp_path)
    steps = [getattr(a.params, "step", None) for _, a in plan.actions]
    assert [step.number if step else None for step in steps] == [None, 1, 2, 3]  # settings, steps
    Applier(spark=hudi).apply(plan)
    assert len(replacecommits(table.location, "completed")) == 3
    after = plan_for(text, tmp_path)
    assert not after.has_changes and after.tables[0].clustering_coverage["percent"] == 100
    assert content(table) == before
    assert_readers_agree(hudi, table)

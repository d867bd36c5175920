"""Clustering plans cross over on version 9 (a pending plan is its own `clustering` action there): a
plan tablespec schedules runs under Apache Hudi 1.2.0's `run_clustering`, and a plan Hudi 1.2.0
schedules runs under `tablespec apply`. Hudi's procedures get the table's `hudi-options`."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from helpers import hudi_rs_rows, make_table, rows, tablespec_rows
from hudi_process import read_step, sql_step
from interop_support import HISTORY_DDL, history_spec
from test_engine_clustering import plan_for

from tablespec.apply import Applier
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.instant import REPLACE_COMMIT
from tablespec.hudi_options import hudi_write_options


def _spec(name: str, every: int) -> str:
    """A version 9 table (retention at its default, 10) clustered by v every `every` commits."""
    return history_spec(name, retention="{keepCommits: 10}", spec_lines=("tableVersion: 9",)) + \
        f"  clustering: {{strategy: SORT, sortColumns: [v], everyNCommits: {every}}}\n"


def _small_files(spark, warehouse, text):
    """Three bulk inserts: three small files in each of two partitions."""
    table = make_table(spark, warehouse, text)
    for c in range(3):
        rows_ = [(f"k{c * 10 + i}", (c * 10 + i) * 7 % 23, c, f"d{i % 2}") for i in range(10)]
        table.write(spark.createDataFrame(rows_, HISTORY_DDL).coalesce(1), "bulk_insert")
    return table


def _procedure_options(table) -> str:
    """The table's hudi-options as a procedure's `options` argument (k=v,k=v)."""
    options = hudi_write_options(table.spec, HudiTable.open(table.location))
    return ",".join(f"{k}={v}" for k, v in sorted(options.items()) if k != "path" and "," not in v)


def _clustering(location) -> tuple[list[str], list[str]]:
    """(pending clustering instants, completed replacecommits that a clustering plan requested)."""
    timeline = HudiTable.open(str(location)).timeline
    names = {p.name for p in Path(location, ".hoodie", "timeline").iterdir()}
    pending = [i.timestamp for i in timeline.pending() if i.action in ("clustering", REPLACE_COMMIT)]
    done = [i.timestamp for i in timeline.commits() if i.action == REPLACE_COMMIT
            and f"{i.timestamp}.clustering.requested" in names]
    return pending, done


def _agree(table, hudi_read) -> None:
    ours = tablespec_rows(table)
    assert ours == rows(pa.Table.from_pylist(hudi_read)) == hudi_rs_rows(table.location)
    assert len(ours) == 30


def test_plan_scheduled_by_tablespec_runs_under_hudi_1_2(hudi, hudi1, tmp_path):
    text = _spec("ours9", 3)
    table = _small_files(hudi, tmp_path, text)
    result = Applier(spark=hudi, schedule_only=True).apply(plan_for(text, tmp_path))
    scheduled = result.actions[-1].actual.scheduled
    assert _clustering(table.location) == ([scheduled], [])

    _, hudi_read = hudi1.process.run([
        sql_step(f"CALL run_clustering(path => '{table.location}', op => 'execute', instants => '{scheduled}', "
                 f"options => '{_procedure_options(table)}')"),
        read_step(table.location)])
    assert _clustering(table.location) == ([], [scheduled])
    _agree(table, hudi_read)
    assert not plan_for(text, tmp_path).has_changes


def test_plan_scheduled_by_hudi_1_2_runs_under_tablespec_apply(hudi, hudi1, tmp_path):
    text = _spec("theirs9", 10)
    table = _small_files(hudi, tmp_path, text)
    hudi1.process.run([sql_step(f"CALL run_clustering(path => '{table.location}', op => 'schedule', order => 'v', "
                                f"options => '{_procedure_options(table)}')")])
    (scheduled,), _ = _clustering(table.location)

    plan = plan_for(text, tmp_path)
    assert [(a.kind, getattr(a.params, "instant", None)) for _, a in plan.actions] == [("clustering", scheduled)]
    Applier(spark=hudi).apply(plan)
    assert _clustering(table.location) == ([], [scheduled])
    [hudi_read] = hudi1.process.run([read_step(table.location)])
    _agree(table, hudi_read)
    assert not plan_for(text, tmp_path).has_changes

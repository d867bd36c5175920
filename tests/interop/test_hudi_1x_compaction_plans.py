"""Compaction plans of table version 9, as Apache Hudi 1.2.0 schedules them: the plan (its 1.x
schema, `missingSchedulePartitions` too) reads back field for field and names the log files Hudi
1.2 wrote (named by their deltacommit); Hudi keeps the compaction settings out of hoodie.properties;
plan shows the pending plan (to run, with runBy tablespec) and schedules none beside it, nor one of
its own while Hudi's is pending; a plan tablespec schedules on version 9 is run by Hudi 1.2's
run_compaction (tablespec runs both: tests/interop/test_hudi_merge_on_read.py)."""
from __future__ import annotations

import pytest
from hudi_process import read_step, sql_step, write_step
from test_compaction_plans import FIRST, MOR, SCHEMA, UPDATES, _spec

from tablespec.hudi import keys
from tablespec.hudi.formats.compaction_format import plan_record
from tablespec.hudi.services.compaction import CompactionRefused, pending_plans, schedule
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import avro_content
from tablespec.plan.compaction import compaction_actions, pending_notes, policy
from tablespec.state import observe

pytestmark = pytest.mark.hudi


def test_hudi_1_2_plans_read_back_field_for_field(hudi1, tmp_path):
    path = tmp_path / "mor9"
    options = {"hoodie.table.name": "mor9", **MOR, "hoodie.compact.inline": "false",
               "hoodie.compact.schedule.inline": "true", "hoodie.compact.inline.max.delta.commits": "2"}
    hudi1.process.run([write_step(path, options, SCHEMA, rows) for rows in [FIRST, *UPDATES]])
    props = (path / ".hoodie" / "hoodie.properties").read_text()
    assert "hoodie.table.version=9" in props
    for key in (keys.COMPACT_SCHEDULE_INLINE, keys.COMPACT_MAX_DELTA_COMMITS):
        assert key.name not in props
    table = HudiTable.open(str(path))
    [(instant, plan)] = pending_plans(table.timeline).items()
    requested = path / ".hoodie" / "timeline" / instant.to("requested").file_name
    assert plan_record(plan, one_x=True) == avro_content(requested.read_bytes(), str(requested))
    assert plan.missing_partitions == () and len(plan.operations) == 2
    deltas = [i.timestamp for i in table.timeline.completed() if i.action == "deltacommit"]
    for op in plan.operations:   # version 9: the log file is named by the deltacommit that wrote it
        [log] = op.log_files
        assert log.startswith(f".{op.file_id}_{deltas[1]}.log.1_") and op.base_instant == deltas[0]
        assert (path / op.partition / log).stat().st_size == op.log_bytes
    state = observe(table)
    assert pending_notes(state)[0].startswith(f"compaction {instant.timestamp} (requested) over 2 file slice(s)")
    spec = _spec("mor9", "{runBy: tablespec, deltaCommits: 1}")
    [run], _ = compaction_actions(spec, state)   # runBy tablespec: the pending plan is run (none scheduled beside it)
    assert run.params.instant == instant.timestamp and run.estimate.file_slices == 2
    with pytest.raises(CompactionRefused, match=f"compaction {instant.timestamp} is pending already"):
        schedule(table, policy(spec), [])


def test_hudi_1_2_runs_a_plan_tablespec_scheduled_on_version_9(hudi1, tmp_path):
    """Hudi 1.2 writes a version 9 table; `plan` shows the due compaction and tablespec schedules it
    (`T.compaction.requested` in `.hoodie/timeline`, the 1.x plan naming the log files by their
    deltacommit); Hudi 1.2's run_compaction runs the plan and reads the same rows as before."""
    path = tmp_path / "mor9s"
    options = {"hoodie.table.name": "mor9s", **MOR, "hoodie.compact.inline": "false"}
    before = hudi1.process.run([write_step(path, options, SCHEMA, rows) for rows in [FIRST, *UPDATES]]
                               + [read_step(path)])[-1]
    table = HudiTable.open(str(path))
    spec = _spec("mor9s", "{runBy: tablespec, deltaCommits: 2, strategy: UNBOUNDED}")
    [due], warnings = compaction_actions(spec, observe(table))
    assert warnings == [] and due.estimate.file_slices == 2 and due.params.instant is None
    instant, plan = schedule(table, policy(spec), ["test"])
    requested = path / ".hoodie" / "timeline" / f"{instant.timestamp}.compaction.requested"
    assert plan_record(plan, one_x=True) == avro_content(requested.read_bytes(), str(requested))
    deltas = [i.timestamp for i in table.timeline.completed() if i.action == "deltacommit"]
    assert {log.split(".log.")[0].rsplit("_", 1)[1] for op in plan.operations for log in op.log_files} == \
        set(deltas[1:])
    [after] = hudi1.process.run([sql_step(f"call run_compaction(op => 'run', path => '{path}')"), read_step(path)])[1:]
    table = HudiTable.open(str(path))
    assert table.timeline.contains_completed(instant.timestamp) and table.table_config.version == 9
    assert {s.base_instant for s in table.view.latest_slices()} == {instant.timestamp}
    assert [s for s in table.view.latest_slices() if s.log_files] == []
    assert sorted((r["id"], r["v"]) for r in after) == sorted((r["id"], r["v"]) for r in before)


def test_hudi_1_2_runs_a_plan_tablespec_scheduled_on_version_6(hudi, hudi1, tmp_path):
    """Hudi 0.15 writes a version 6 table; tablespec schedules its compaction; Hudi 1.2's
    run_compaction (the table kept at version 6) runs the plan, and both Hudi lines read the same."""
    from test_compaction_plans import _rows, _write

    from tablespec.hudi.timeline.instant import Instant
    path = tmp_path / "mor6"
    _write(hudi, path, [FIRST, *UPDATES], **{"hoodie.compact.inline": "false"})
    before = _rows(hudi, path)
    spec = _spec(path.name, "{runBy: tablespec, deltaCommits: 3, strategy: UNBOUNDED}")
    instant, plan = schedule(HudiTable.open(str(path)), policy(spec), ["test"])
    pin = "hoodie.write.table.version=6,hoodie.write.auto.upgrade=false"
    _, read = hudi1.process.run([sql_step(f"call run_compaction(op => 'run', path => '{path}', options => '{pin}')"),
                                 read_step(path)])
    table = HudiTable.open(str(path))
    assert table.table_config.version == 6 and table.timeline.contains_completed(instant.timestamp)
    assert Instant(instant.timestamp, "commit") in table.timeline.commits()
    assert {s.base_instant for s in table.view.latest_slices()} == {instant.timestamp} and len(plan.operations) == 2
    assert _rows(hudi, path) == before
    assert sorted((r["id"], r["v"]) for r in read) == sorted((dict(r)["id"], dict(r)["v"]) for r in before)

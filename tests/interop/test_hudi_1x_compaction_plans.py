"""Compaction plans of table version 9, as Apache Hudi 1.2.0 schedules them: the plan (its 1.x
schema, `missingSchedulePartitions` too) reads back field for field and names the log files Hudi
1.2 wrote (named by their deltacommit); Hudi keeps the compaction settings out of hoodie.properties;
plan shows the pending plan and schedules none beside it, nor one of its own on version 9 (its log
files are sliced by completion time)."""
from __future__ import annotations

import pytest
from hudi_process import write_step
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
    assert compaction_actions(spec, state) == ([], [])
    with pytest.raises(CompactionRefused, match="table version 9 slices log files by completion time"):
        schedule(table, policy(spec), set(), [])

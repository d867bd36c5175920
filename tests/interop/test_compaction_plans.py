"""Merge-on-read compaction plans cross over with Apache Hudi 0.15 (table version 6), in the test
session: Hudi's `T.compaction.requested` reads as the file slices the file-system view shows and
writes back field for field; a plan tablespec schedules is run by Hudi's `run_compaction` and the
table reads the same after; a plan naming a file the table lacks is refused before tablespec runs it;
hudi-options makes a Hudi job compact by the spec's policy or not at
all; Hudi keeps none of the compaction settings in hoodie.properties (write options only)."""
from __future__ import annotations

import shutil
from datetime import UTC, datetime

import pytest
from _support import table_files
from interop_support import hudi_rows, hudi_write
from test_hudi_tables import KEYED, SCHEMA

from tablespec.apply import Applier
from tablespec.hudi import keys
from tablespec.hudi.formats.compaction_format import plan_record
from tablespec.hudi.services.compaction import REASONS_KEY, CompactionRefused, pending_plans, schedule
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import avro_content
from tablespec.hudi_options import hudi_write_options
from tablespec.plan.actions import TablePlan
from tablespec.plan.compaction import compaction_actions, pending_notes, policy
from tablespec.spec.loader import load_spec_text
from tablespec.state import observe

pytestmark = pytest.mark.hudi

MOR = {**KEYED, "hoodie.datasource.write.table.type": "MERGE_ON_READ", "hoodie.datasource.write.operation": "upsert"}
FIRST = [("a", 1, "2024-01-01", 1), ("b", 2, "2024-01-01", 1), ("c", 3, "2024-01-02", 1)]
UPDATES = [[("a", 10, "2024-01-01", 2), ("c", 30, "2024-01-02", 2)], [("b", 20, "2024-01-01", 3)]]


def _spec(name: str, compaction: str):
    return load_spec_text(f"""apiVersion: tablespec/v1
kind: HudiTable
metadata: {{name: {name}}}
spec:
  location: {name}
  tableType: MERGE_ON_READ
  columns:
    - {{name: id, type: string, nullable: false}}
    - {{name: v, type: int}}
    - {{name: dt, type: string}}
    - {{name: ts, type: long}}
  recordKey: {{fields: [id]}}
  partitioning: {{fields: [dt], hiveStyle: false}}
  orderingField: ts
  compaction: {compaction}
""", "t.yaml").specs[0].spec


def _write(spark, path, batches, **options: str) -> None:
    name = path.name
    for rows in batches:
        hudi_write(spark.createDataFrame(rows, SCHEMA), path, {"hoodie.table.name": name, **MOR, **options})


def _instants(path) -> list[str]:
    return sorted(p.name for p in (path / ".hoodie").iterdir() if p.name[:1].isdigit())


def test_hudi_plans_read_as_the_view_and_write_back_field_for_field(hudi, tmp_path):
    path = tmp_path / "scheduled_by_hudi"
    _write(hudi, path, [FIRST, UPDATES[0]], **{"hoodie.compact.inline": "false", "hoodie.compact.schedule.inline": "true",
                                               "hoodie.compact.inline.max.delta.commits": "2",
                                               "hoodie.compaction.target.io": "1234"})
    props = (path / ".hoodie" / "hoodie.properties").read_text()
    for key in (keys.COMPACT_INLINE, keys.COMPACT_SCHEDULE_INLINE, keys.COMPACT_MAX_DELTA_COMMITS, keys.COMPACTION_TARGET_IO):
        assert key.name not in props   # measured: Hudi keeps the compaction settings out of hoodie.properties
    table = HudiTable.open(str(path))
    [(instant, plan)] = pending_plans(table.timeline).items()
    assert instant.state == "requested"
    requested = path / ".hoodie" / instant.to("requested").file_name
    raw = avro_content(requested.read_bytes(), str(requested))
    assert plan_record(plan, one_x=False) == raw   # every field as Hudi wrote it (metrics, version 2, no strategy)
    slices = {(s.partition, s.file_id): s for s in table.view_of(table.timeline).latest_slices()}
    assert len(plan.operations) == 2
    for op in plan.operations:   # each operation is a latest slice, by its base file and log files
        s = slices[(op.partition, op.file_id)]
        assert (op.base_instant, op.base_file) == (s.base_instant, s.base_file.name)
        assert op.log_files == tuple(f.file_name.format() for f in s.log_files)
        assert op.log_bytes == sum(f.size for f in s.log_files)
    # plan shows Hudi's pending plan, and schedules none beside it
    state = observe(table)
    assert state.compaction is not None and pending_notes(state) == [
        f"compaction {instant.timestamp} (requested) over 2 file slice(s) is pending; Apache Hudi runs it: `call "
        "run_compaction(op => 'run', path => '<table>')`, or a Hudi job with hoodie.compact.inline=true"]
    [run] = compaction_actions(_spec("scheduled_by_hudi", "{runBy: tablespec, deltaCommits: 1}"), state)[0]
    assert run.params.instant == instant.timestamp   # runBy tablespec: tablespec runs the pending plan


def _rows(spark, path, **options: str) -> list[tuple]:
    """Hudi's rows but the file name (a merged log record names its file group, a compacted one its base file)."""
    return [tuple(kv for kv in row if kv[0] != "_hoodie_file_name") for row in hudi_rows(spark, path, **options)]


def _compaction_stats(path, instant: str) -> dict:
    timeline = HudiTable.open(str(path)).timeline
    [done] = [i for i in timeline.commits() if i.timestamp == instant]
    meta = timeline.commit_metadata(done)
    unlike = {"path", "totalWriteBytes", "fileSizeInBytes"}
    return {"operationType": meta.operation_type, "compacted": meta.compacted, **{
        (partition, st.file_id): {k: sorted(v) if k == "runtimeStats" else v   # timings: their names
                                  for k, v in st.to_dict().items() if k not in unlike}
        for partition, found in meta.partition_to_write_stats.items() for st in found}}


def test_tablespec_schedules_what_hudi_runs(hudi, tmp_path):
    path = tmp_path / "scheduled_by_tablespec"
    _write(hudi, path, [FIRST, *UPDATES], **{"hoodie.compact.inline": "false"})
    before = _rows(hudi, path)
    spec = _spec(path.name, "{runBy: tablespec, deltaCommits: 4, strategy: LOG_FILE_COUNT}")
    table = HudiTable.open(str(path))
    state = observe(table)
    # three deltacommits (the insert counts, as Hudi counts it): not due at 4 ...
    assert compaction_actions(spec, state) == ([], [])
    # ... due at 3: both file groups have log files (one each from the first update, one more in 2024-01-01)
    due = _spec(path.name, "{runBy: tablespec, deltaCommits: 3, strategy: LOG_FILE_COUNT}")
    [action], warnings = compaction_actions(due, state, now=datetime.now(UTC))
    assert warnings == [] and action.reasons == ["3 deltacommit(s) and no compaction yet; deltaCommits is 3"]
    est = action.estimate
    assert (est.file_slices, est.partitions, est.log_files, est.log_records) == (2, 2, 3, 3)
    assert est.base_bytes == sum(fg.size for fg in state.file_groups) and est.log_bytes > 0

    planned = TablePlan(name=path.name, location=str(path), spec_file="t.yaml", spec_digest="-", spec={}, observed={},
                        actions=[action])
    done = Applier(schedule_only=True).visit_compaction(planned, action, due)   # scheduled under the locks, not run
    assert done.file_slices == 2 and done.instant is None
    [(instant, plan)] = pending_plans(HudiTable.open(str(path)).timeline).items()
    assert instant.timestamp == done.scheduled and plan.extra_metadata == {REASONS_KEY: action.reasons[0]}
    assert [op.partition for op in plan.operations] == ["2024-01-01", "2024-01-02"]   # most log files first
    files = table_files(path)
    assert Applier(schedule_only=True).visit_compaction(planned, action, due).scheduled is None   # pending: none again
    with pytest.raises(CompactionRefused, match="is pending already"):   # nor scheduled beside it
        schedule(table.refresh(), policy(due), action.reasons)
    assert table_files(path) == files
    copy = tmp_path / "run_by_tablespec"   # the same plan, run by tablespec on a copy of the table
    shutil.copytree(path, copy)
    # Hudi runs tablespec's plan: a commit at its instant, the log files merged into new base files
    hudi.sql(f"call run_compaction(op => 'run', path => '{path}')").collect()
    assert f"{instant.timestamp}.commit" in _instants(path)
    [run], _ = compaction_actions(due, observe(HudiTable.open(str(copy))))
    Applier(spark=hudi).visit_compaction(planned.model_copy(update={"location": str(copy), "actions": [run]}), run, due)
    # its commit's write stats are Hudi's, field by field (totalLogRecords, totalLogBlocks, ...), but
    # file names, sizes and timings
    assert _compaction_stats(copy, instant.timestamp) == _compaction_stats(path, instant.timestamp)
    assert _rows(hudi, path) == before
    compacted = HudiTable.open(str(path))
    assert {s.base_instant for s in compacted.view.latest_slices()} == {instant.timestamp}
    assert _rows(hudi, path, **{"hoodie.datasource.query.type": "read_optimized"}) == before   # all in base files
    assert observe(compacted).compaction.delta_commits == ()


@pytest.mark.parametrize("run_by, compacted", [("hudi", True), ("tablespec", False)])
def test_hudi_jobs_compact_by_the_specs_policy_or_not_at_all(hudi, tmp_path, run_by, compacted):
    """The hudi-options of runBy hudi make a batch job compact inline after deltaCommits; those of
    runBy tablespec make it neither schedule nor run a compaction."""
    path = tmp_path / f"by_{run_by}"
    spec = _spec(path.name, f"{{runBy: {run_by}, deltaCommits: 2, strategy: UNBOUNDED}}")
    options = {k: v for k, v in hudi_write_options(spec, HudiTable.open(str(path))).items() if "compact" in k}
    _write(hudi, path, [FIRST, UPDATES[0]], **options)
    actions = {name.split(".", 1)[1] for name in _instants(path)}
    assert ("commit" in actions) == compacted, actions      # a completed compaction
    assert compacted or not {a for a in actions if a.startswith("compaction")}, actions   # none scheduled either


def test_hudi_jobs_follow_the_policy_recorded_in_hoodie_properties(hudi, tmp_path):
    """A Hudi job whose options name no compaction policy (only hoodie.compact.inline) compacts by the
    one tablespec recorded in hoodie.properties (deltaCommits 2; Hudi's default is 5)."""
    from tablespec.actions.metadata import create_table
    path = tmp_path / "recorded"
    spec = _spec(path.name, "{deltaCommits: 2, strategy: UNBOUNDED}")
    table = HudiTable.open(str(path))
    create_table(table, spec)
    options = {k: v for k, v in hudi_write_options(spec, table).items() if "compact" not in k and k != "path"}
    for rows in [FIRST, UPDATES[0]]:
        hudi_write(hudi.createDataFrame(rows, SCHEMA), path, {**options, "hoodie.compact.inline": "true"})
    assert "commit" in {name.split(".", 1)[1] for name in _instants(path)}, _instants(path)


def test_a_plan_naming_a_file_the_table_lacks_is_refused_untouched(hudi, tmp_path):
    """Hudi's plan names a log file that is gone (deleted by hand): running it is refused in one line
    naming the file, before anything is written."""
    path = tmp_path / "plan_missing_file"
    _write(hudi, path, [FIRST, UPDATES[0]], **{"hoodie.compact.inline": "false", "hoodie.compact.schedule.inline": "true",
                                               "hoodie.compact.inline.max.delta.commits": "2"})
    table = HudiTable.open(str(path))
    [(instant, plan)] = pending_plans(table.timeline).items()
    op = plan.operations[0]
    gone = path / op.partition / op.log_files[0]
    gone.unlink()
    files = table_files(path)
    spec = _spec(path.name, "{runBy: tablespec, deltaCommits: 1}")
    [action], _ = compaction_actions(spec, observe(table.refresh()))
    assert action.params.instant == instant.timestamp
    planned = TablePlan(name=path.name, location=str(path), spec_file="t.yaml", spec_digest="-", spec={}, observed={},
                        actions=[action])
    with pytest.raises(CompactionRefused) as refused:
        Applier(spark=hudi).visit_compaction(planned, action, spec)
    assert str(refused.value) == (f"{gone}: compaction plan {instant.timestamp} reads this file, which the table does "
                                  f"not have (file group {op.file_id}); nothing was written")
    assert table_files(path) == files
    assert pending_plans(HudiTable.open(str(path)).timeline) == {instant: plan}

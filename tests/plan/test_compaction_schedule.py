"""Planning and scheduling compaction on a merge-on-read table Apache Hudi wrote (the hudi-rs
fixture `mor_parquet_v6_simplekeygen_nonhivestyle`: two deltacommits, one file group with a log
file): due by the spec's trigger, its estimate, waiting for a pending write, and the plan written."""
from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from _support import table_files

from tablespec.hudi.services.compaction import CompactionRefused, pending_plans, schedule
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import TimelineWriter
from tablespec.hudi.timeline.instant import new_instant_time
from tablespec.plan.compaction import compaction_actions, policy
from tablespec.spec.loader import load_spec_text
from tablespec.state import observe

NOW = datetime(2025, 1, 21, 1, 0, 0, tzinfo=UTC)   # an hour after the fixture's deltacommits


SPEC_TEXT = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: t}
spec:
  location: t
  tableType: MERGE_ON_READ
  columns: [{name: id, type: int, nullable: false}]
  recordKey: {fields: [id]}
  compaction: {}
"""


def _spec(compaction: str):
    return load_spec_text(SPEC_TEXT.replace("compaction: {}", f"compaction: {compaction}"), "t.yaml").specs[0].spec


@pytest.fixture
def table(real_table):
    return HudiTable.open(str(real_table("mor_parquet_v6_simplekeygen_nonhivestyle")))


def test_due_by_the_trigger_with_its_estimate(table):
    state = observe(table)
    assert len(state.compaction.delta_commits) == 2 and state.compaction.pending == ()
    assert compaction_actions(_spec("{runBy: tablespec, deltaCommits: 3}"), state, NOW) == ([], [])
    assert compaction_actions(_spec("{runBy: hudi, deltaCommits: 2}"), state, NOW) == ([], [])   # Hudi's jobs do
    [action], warnings = compaction_actions(_spec("{runBy: tablespec, deltaCommits: 2}"), state, NOW)
    assert warnings == [] and action.reasons == ["2 deltacommit(s) and no compaction yet; deltaCommits is 2"]
    [log] = [f for f in Path(table.base, "10").iterdir() if ".log." in f.name]
    base = next(fg for fg in state.file_groups if fg.partition == "10")
    assert action.estimate.model_dump() == {
        "strategy": "LOG_FILE_SIZE", "file_slices": 1, "partitions": 1, "log_files": 1,
        "log_bytes": log.stat().st_size, "base_bytes": base.size, "log_records": action.estimate.log_records}
    assert action.estimate.log_records >= 1
    [by_time], _ = compaction_actions(_spec("{runBy: tablespec, trigger: ELAPSED_TIME, elapsedSeconds: 3000}"),
                                      state, NOW)
    assert by_time.reasons[0].startswith("3") and "elapsedSeconds is 3000" in by_time.reasons[0]


def test_scheduled_plan_and_refusals(table):
    spec = _spec("{runBy: tablespec, deltaCommits: 2}")
    # a write pending (started before the compaction would be): the plan waits, scheduling is refused
    timeline = table.fresh_timeline()
    pending = TimelineWriter.of(timeline).request("deltacommit", new_instant_time(after=timeline.latest_time))
    state = observe(table.refresh())
    assert compaction_actions(spec, state, NOW)[0] == []
    assert compaction_actions(spec, state, NOW)[1][0].endswith(
        f"waits for pending write(s) {pending.timestamp}.deltacommit: Hudi schedules a compaction only after "
        "earlier writes complete")
    before = table_files(table.base)
    with pytest.raises(CompactionRefused, match=re.escape(f"pending write(s) {pending} started before it")):
        schedule(table, policy(spec), ["due"])
    assert table_files(table.base) == before
    TimelineWriter.of(table.timeline).delete_instant(pending)
    instant, plan = schedule(table.refresh(), policy(spec), ["due"])
    assert instant.timestamp > pending.timestamp and instant.state == "requested"
    [op] = plan.operations
    assert (op.partition, op.base_file, len(op.log_files)) == ("10", next(
        f.name for f in Path(table.base, "10").iterdir() if f.name.endswith(".parquet")), 1)
    assert pending_plans(HudiTable.open(table.base).timeline) == {instant: plan}
    # pending now: planned to run (runBy tablespec), none scheduled beside it
    state = observe(table.refresh())
    [run], warnings = compaction_actions(spec, state, NOW)
    assert (run.params.instant, run.estimate.file_slices, warnings) == (instant.timestamp, 1, [])
    assert run.reasons == [f"compaction plan {instant.timestamp} (requested) is pending"]


def test_created_tables_name_the_payload_compaction_merges_with():
    """Hudi's compaction loads hoodie.compaction.payload.class from hoodie.properties (without it Hudi
    0.15's inline compaction of a table tablespec created failed with a NullPointerException):
    the payload its writers use (hudi-options), ordered where the spec has an ordering field."""
    from tablespec.actions.metadata import creation_properties
    key = "hoodie.compaction.payload.class"
    ordered = load_spec_text(SPEC_TEXT.replace("{fields: [id]}", "{fields: [id]}\n  orderingField: id"), "t.yaml")
    assert creation_properties(ordered.specs[0].spec)[key] == "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
    assert creation_properties(_spec("{}"))[key] == "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
    cow = load_spec_text(SPEC_TEXT.replace("  tableType: MERGE_ON_READ\n", "").replace("  compaction: {}\n", ""),
                         "t.yaml").specs[0].spec
    assert key not in creation_properties(cow)


def test_file_groups_under_pending_clustering_are_not_compacted(table):
    """RFC-19: a file group a pending clustering plan takes gets no compaction."""
    from tablespec.hudi.services.clustering import ClusteringGroup, ClusteringPlan, SliceInfo, encode_plan
    from tablespec.hudi.timeline.instant import plan_action
    spec = _spec("{runBy: tablespec, deltaCommits: 2}")
    state = observe(table)
    [op] = compaction_actions(spec, state, NOW)[0] and state.compaction.operations
    timeline = table.fresh_timeline()
    clustered = ClusteringPlan((ClusteringGroup((SliceInfo(op.partition, op.file_id, op.base_file),)),))
    TimelineWriter.of(timeline).request(plan_action(timeline.layout), new_instant_time(after=timeline.latest_time),
                                        encode_plan(clustered))
    state = observe(table.refresh())
    assert state.compaction.operations == () and compaction_actions(spec, state, NOW) == ([], [])
    with pytest.raises(CompactionRefused, match="no file slice has log files outside pending compactions and clusterings"):
        schedule(table, policy(spec), ["due"])

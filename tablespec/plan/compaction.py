"""Planning merge-on-read compaction, pure: is the spec's trigger due, which file slices the
strategy takes, what it costs; and the compactions pending on the table.

tablespec compacts only where the spec says it does (`compaction.runBy: tablespec`): it schedules a
plan when the trigger is due and runs it, and runs a pending plan first (a Hudi writer's, or one a
crashed run left inflight). File groups under a pending clustering or compaction are no candidates
(RFC-19), and a compaction waits for pending writes that started before it (its slices would miss
what they append).
"""
from __future__ import annotations

from datetime import UTC, datetime

from tablespec.hudi.keys import COMPACT_INLINE
from tablespec.hudi.services.compaction import SCHEDULED_ON, Backlog, Policy, due_reasons, select
from tablespec.hudi.timeline.instant import WRITE_ACTIONS
from tablespec.plan.actions import Compaction, CompactionEstimate, CompactionParams
from tablespec.spec.sizes import MiB

RUN_BY_HUDI = ("Apache Hudi runs it: `call run_compaction(op => 'run', path => '<table>')`, or a Hudi job with "
               f"{COMPACT_INLINE.name}=true")
RUN_BY_TABLESPEC = "`tablespec apply` runs it (compaction.runBy: tablespec)"


def policy(spec) -> Policy | None:
    """The spec's compaction as scheduling needs it (None: COPY_ON_WRITE)."""
    c = spec.compaction_settings
    if c is None:
        return None
    return Policy(c.trigger, c.delta_commits, c.elapsed_seconds, c.strategy, c.target_io // MiB,
                  c.latest_partitions or Policy.latest_partitions)


def run_by_tablespec(spec) -> bool:
    return spec.compaction_settings is not None and spec.compaction_settings.run_by == "tablespec"


def pending_notes(state, spec=None) -> list[str]:
    """One line per pending compaction (a Hudi writer's or tablespec's): what it takes and who runs it."""
    backlog: Backlog | None = state.compaction
    if backlog is None:
        return []
    who = RUN_BY_TABLESPEC if spec is not None and run_by_tablespec(spec) else RUN_BY_HUDI
    return [f"compaction {instant.timestamp} ({instant.state}) over {len(plan.operations)} file slice(s) is "
            f"pending; {who}" for instant, plan in backlog.pending]


def compaction_actions(spec, state, now: datetime | None = None) -> tuple[list[Compaction], list[str]]:
    """The compaction to schedule now (runBy tablespec, the trigger due, nothing pending), and warnings:
    a due compaction that waits for pending writes."""
    wanted, backlog = policy(spec), state.compaction
    if wanted is None or backlog is None or not run_by_tablespec(spec):
        return [], []
    if backlog.pending:   # one at a time: the pending plan runs (the next is scheduled by a later plan)
        instant, plan = backlog.pending[0]
        return [Compaction(reasons=[f"compaction plan {instant.timestamp} ({instant.state}) is pending"],
                           params=CompactionParams(instant=instant.timestamp),
                           estimate=_estimate(state, backlog, "as planned", plan.operations))], []
    reasons = due_reasons(wanted, backlog, now or datetime.now(UTC))
    operations = select(wanted, backlog.operations) if reasons else ()
    if not operations:
        return [], []
    if state.table_config.version not in SCHEDULED_ON:
        return [], [f"compaction is due ({'; '.join(reasons)}); tablespec schedules compactions on table versions "
                    f"6 and 9 (this one: {state.table_config.version}): a Hudi job or `run_compaction(op => "
                    "'schedule')` schedules it"]
    writes = [i for i in state.pending if i.action in WRITE_ACTIONS and i not in state.pending_clustering]
    if writes:
        return [], [f"compaction is due ({'; '.join(reasons)}) and waits for pending write(s) "
                    f"{', '.join(i.timestamp + '.' + i.action for i in writes)}: Hudi schedules a compaction only "
                    "after earlier writes complete"]
    return [Compaction(reasons=reasons, estimate=_estimate(state, backlog, wanted.strategy, operations))], []


def _estimate(state, backlog: Backlog, strategy: str, operations) -> CompactionEstimate:
    written = backlog.count_log_records()
    records = [written.get((op.partition, op.file_id)) for op in operations]
    base_sizes = {(fg.partition, fg.file_id): fg.size for fg in state.file_groups}
    return CompactionEstimate(
        strategy=strategy,
        file_slices=len(operations),
        partitions=len({op.partition for op in operations}),
        log_files=sum(len(op.log_files) for op in operations),
        log_bytes=sum(op.log_bytes for op in operations),
        base_bytes=sum(base_sizes.get((op.partition, op.file_id), 0) for op in operations),
        log_records="unknown" if None in records else sum(r or 0 for r in records))

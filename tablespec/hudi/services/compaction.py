"""Compaction of a merge-on-read table, as Apache Hudi schedules and completes it: when it is due,
which file slices it takes, its plan written as `T.compaction.requested`; to run a plan, the files
each operation reads (checked against the table) and the commit that completes it.

Hudi's names (measured in Hudi 0.15's and 1.2's bundles, the same in both): the trigger
(hoodie.compact.inline.trigger.strategy) and the strategy classes (hoodie.compaction.strategy).
"""
from __future__ import annotations

import functools
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from tablespec.errors import TablespecError
from tablespec.faults import crash_point
from tablespec.hudi.formats.commit import CommitMetadata
from tablespec.hudi.formats.compaction_format import (
    PLAN_SCHEMA,
    PLAN_SCHEMA_1X,
    CompactionOperation,
    CompactionPlan,
    decode_plan,
    plan_record,
)
from tablespec.hudi.formats.naming import LogFileName
from tablespec.hudi.fs_view import FileSlice, FileSystemView
from tablespec.hudi.io import join
from tablespec.hudi.services.clustering import planned_file_groups
from tablespec.hudi.services.rollback import is_clustering_plan
from tablespec.hudi.timeline.active import Timeline, TimelineWriter, avro_record
from tablespec.hudi.timeline.instant import (
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    WRITE_ACTIONS,
    Instant,
    new_instant_time,
    parse_instant_time,
)

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

_STRATEGY_PACKAGE = "org.apache.hudi.table.action.compact.strategy."
# spec strategy -> Hudi's class (1.2 adds PartitionRegexBased and Composite, which 0.15 lacks)
STRATEGIES = {name: _STRATEGY_PACKAGE + cls for name, cls in (
    ("LOG_FILE_SIZE", "LogFileSizeBasedCompactionStrategy"),
    ("LOG_FILE_COUNT", "LogFileNumBasedCompactionStrategy"),
    ("BOUNDED_IO", "BoundedIOCompactionStrategy"),
    ("DAY_BASED", "DayBasedCompactionStrategy"),
    ("UNBOUNDED", "UnBoundedCompactionStrategy"),
)}
COMPACT = "COMPACT"   # the operationType of a compaction's commit
REASONS_KEY = "tablespec.compaction.reasons"   # the plan's extra metadata: why it was scheduled
SCHEDULED_ON = (6, 9)   # table versions tablespec schedules compactions on (tested with Hudi 0.15 and 1.2)
# spec trigger -> Hudi's trigger strategy
TRIGGERS = {"DELTA_COMMITS": "NUM_COMMITS", "ELAPSED_TIME": "TIME_ELAPSED", "EITHER": "NUM_OR_TIME",
            "BOTH": "NUM_AND_TIME"}


@dataclass(frozen=True)
class Policy:
    """A spec's compaction in the terms scheduling needs (spec names; Hudi's defaults)."""
    trigger: str = "DELTA_COMMITS"
    delta_commits: int = 5
    elapsed_seconds: int = 3600
    strategy: str = "LOG_FILE_SIZE"
    target_io_mb: int = 512000
    latest_partitions: int = 10


@dataclass(frozen=True)
class Backlog:
    """What a merge-on-read table's timeline and file-system view say about compaction: the latest
    compaction (completed or pending), the deltacommits completed since, the pending plans, and the
    latest file slices with log files a new plan may take (none under a pending compaction or
    clustering: RFC-19), with a count of the records the deltacommits since wrote into each file group."""
    last_compaction: str | None
    delta_commits: tuple[str, ...]
    first_delta_commit: str | None
    pending: tuple[tuple[Instant, CompactionPlan], ...]
    operations: tuple[CompactionOperation, ...]
    count_log_records: Callable[[], dict[tuple[str, str], int]] = dict
    """(partition, file id) -> the records the deltacommits since wrote there: read from their commit
    files only when an estimate asks (an unchanged plan reads none of them)."""

    @property
    def since(self) -> str | None:
        """The time Hudi measures elapsed time from: the latest compaction, else the first deltacommit."""
        return self.last_compaction or self.first_delta_commit


def pending_plans(timeline: Timeline) -> dict[Instant, CompactionPlan]:
    """Pending compactions on a timeline: instant (in its latest state) -> its plan."""
    out = {}
    for instant in timeline.pending():
        if instant.action == COMPACTION:
            requested = instant.to("requested")
            out[instant] = decode_plan(timeline.read_metadata(requested), join(timeline.meta, requested.file_name))
    return out


def backlog(timeline: Timeline, view: FileSystemView, clustering: set[tuple[str, str]]) -> Backlog:
    """The table's compaction backlog; `clustering`: (partition, file id) under pending clustering plans."""
    pending = pending_plans(timeline)
    compactions = [i.timestamp for i in timeline.instants if i.action == COMPACTION or
                   (i.action == COMMIT and i.is_completed)]
    last = max(compactions, default=None)
    deltas = [i for i in timeline.completed() if i.action == DELTA_COMMIT]
    since = tuple(i.timestamp for i in deltas if last is None or i.timestamp > last)
    taken = clustering.union(*(plan.file_ids() for plan in pending.values()))
    operations = tuple(
        CompactionOperation.of(s.partition, s.file_id, s.base_instant,
                               (s.base_file.name, s.base_file.size) if s.base_file else None,
                               [(f.file_name.format(), f.size) for f in s.log_files])
        for s in view.latest_slices() if s.log_files and (s.partition, s.file_id) not in taken)
    count = functools.partial(log_records, timeline, tuple(i for i in deltas if i.timestamp in since))
    return Backlog(last, since, deltas[0].timestamp if deltas else None, tuple(pending.items()), operations, count)


def log_records(timeline: Timeline, deltas: tuple[Instant, ...]) -> dict[tuple[str, str], int]:
    """(partition, file id) -> the records `deltas` wrote into its log files, from their commit files."""
    records: dict[tuple[str, str], int] = {}
    for instant in deltas:
        for partition, stats in timeline.commit_metadata(instant).partition_to_write_stats.items():
            for st in stats:
                if LogFileName.parse(posixpath.basename(st.path or "")) is None:
                    continue   # a base file the deltacommit wrote (inserts): no log records
                key = (st.partition_path if st.partition_path is not None else partition, st.file_id)
                records[key] = records.get(key, 0) + st.num_writes + st.num_deletes
    return records


def due_reasons(policy: Policy, backlog: Backlog, now: datetime) -> list[str]:
    """Why a compaction is due now by the policy's trigger, as Hudi's writers decide it ([]: not due)."""
    count = len(backlog.delta_commits)
    since = f"since the last compaction ({backlog.last_compaction})" if backlog.last_compaction else "and no compaction yet"
    by_count = count >= policy.delta_commits
    elapsed = (now - parse_instant_time(backlog.since)).total_seconds() if backlog.since else 0.0
    by_time = backlog.since is not None and elapsed >= policy.elapsed_seconds
    said = {"DELTA_COMMITS": by_count, "ELAPSED_TIME": by_time, "EITHER": by_count or by_time,
            "BOTH": by_count and by_time}[policy.trigger]
    if not said or count == 0:
        return []
    reasons = []
    if policy.trigger != "ELAPSED_TIME":
        reasons.append(f"{count} deltacommit(s) {since}; deltaCommits is {policy.delta_commits}")
    if policy.trigger != "DELTA_COMMITS":
        reasons.append(f"{int(elapsed)} s since {backlog.since}; elapsedSeconds is {policy.elapsed_seconds}")
    return reasons


def select(policy: Policy, operations: tuple[CompactionOperation, ...]) -> tuple[CompactionOperation, ...]:
    """The operations a compaction takes by the policy's strategy, as Hudi's strategy classes order and
    bound them: LOG_FILE_SIZE / LOG_FILE_COUNT: most log bytes / files first; BOUNDED_IO: in partition
    order; each until the IO of the operations taken reaches targetIO (the one that reaches it
    included); DAY_BASED: the latest `latest_partitions` partitions; UNBOUNDED: all."""
    ops = sorted(operations, key=lambda op: (op.partition, op.file_id))
    if policy.strategy == "UNBOUNDED":
        return tuple(ops)
    if policy.strategy == "DAY_BASED":
        latest = sorted({op.partition for op in ops}, reverse=True)[:policy.latest_partitions]
        return tuple(op for op in ops if op.partition in latest)
    if policy.strategy == "LOG_FILE_SIZE":
        ops.sort(key=lambda op: -op.log_bytes)
    elif policy.strategy == "LOG_FILE_COUNT":
        ops.sort(key=lambda op: -len(op.log_files))
    taken, remaining = [], policy.target_io_mb
    for op in ops:
        taken.append(op)
        remaining -= op.io_mb
        if remaining <= 0:
            break
    return tuple(taken)


def waiting_for(timeline: Timeline) -> list[Instant]:
    """Pending writes a new compaction must wait for: its slices would miss what they append, so
    Hudi's scheduler refuses a compaction time after a pending write's."""
    return [i for i in timeline.pending() if i.action in WRITE_ACTIONS and not is_clustering_plan(timeline, i)]


class CompactionRefused(TablespecError):
    """A compaction that cannot be scheduled now (nothing was written)."""


def schedule(table: HudiTable, policy: Policy, reasons: list[str]) -> tuple[Instant, CompactionPlan]:
    """Schedule a compaction by `policy` as Hudi does: under Hudi's transaction lock, from the timeline
    and file slices as they are now (a deltacommit completed since `plan` adds its log files), a new
    instant time after every other, `T.compaction.requested` holding the plan. Refused before any
    change while a write is pending or a compaction is pending already. The metadata table records
    no requested instant (Hudi records a compaction when it completes). On versions 8/9 the instant
    time is after every completion time too (the timeline writer checks it), so each log file the
    plan takes completed before its instant and every later one slices onto the new base file."""
    if table.table_config.version not in SCHEDULED_ON:
        raise CompactionRefused(f"{table.base}: compaction not scheduled: tablespec schedules compactions on table "
                                f"versions 6 and 9 (this one: {table.table_config.version}); nothing was written")
    with table.transaction_lock("compaction"):
        timeline = table.fresh_timeline()
        if (waits := waiting_for(timeline)):
            raise CompactionRefused(f"{table.base}: compaction not scheduled: pending write(s) "
                                    f"{', '.join(str(i) for i in waits)} started before it (Hudi schedules a "
                                    "compaction only after earlier writes complete); run `tablespec apply` again later")
        found = backlog(timeline, table.view_of(timeline), planned_file_groups(timeline))
        if found.pending:
            raise CompactionRefused(f"{table.base}: compaction {found.pending[0][0].timestamp} is pending already; "
                                    "Apache Hudi runs it (run_compaction), then the next one is planned")
        operations = select(policy, found.operations)
        if not operations:
            raise CompactionRefused(f"{table.base}: compaction not scheduled: no file slice has log files outside "
                                    "pending compactions and clusterings")
        plan = CompactionPlan(operations, {REASONS_KEY: "; ".join(reasons)})
        one_x = timeline.layout >= 2
        content = avro_record(PLAN_SCHEMA_1X if one_x else PLAN_SCHEMA, plan_record(plan, one_x))
        crash_point("before_requested")
        requested = TimelineWriter.of(timeline).request(COMPACTION, new_instant_time(after=timeline.latest_time),
                                                        content, listed=timeline)
        table.recorded(requested, content)
    return requested, plan


def operation_slices(view: FileSystemView, base: str, instant: Instant, plan: CompactionPlan) -> list[FileSlice]:
    """Each operation's file slice as the plan names it: its base file and exactly its log files (on
    version 6 the view folds log files written while the compaction is pending into the slice too;
    they belong to the next one). CompactionRefused, before anything is written, for a plan naming a
    file the table does not have (deleted, cleaned, or never written)."""
    groups = {(g.partition, g.file_id): g for g in view.file_groups()}
    out = []
    for op in plan.operations:
        group = groups.get((op.partition, op.file_id))
        bases = {s.base_file.name: s.base_file for s in group.slices if s.base_file} if group else {}
        logs = {f.file_name.format(): f for s in group.slices for f in s.log_files} if group else {}
        missing = [n for n in (op.base_file,) if n is not None and n not in bases]
        missing += [n for n in op.log_files if n not in logs]
        if missing:
            where = join(base, op.partition, missing[0]) if op.partition else join(base, missing[0])
            raise CompactionRefused(f"{where}: compaction plan {instant.timestamp} reads this file, which the table "
                                    f"does not have (file group {op.file_id}); nothing was written")
        out.append(FileSlice(op.file_id, op.partition, op.base_instant,
                             bases[op.base_file] if op.base_file is not None else None,
                             tuple(logs[n] for n in op.log_files)))
    return out


def compaction_metadata(plan: CompactionPlan, written: CommitMetadata) -> CommitMetadata:
    """The commit that completes a compaction as Hudi writes it: operationType COMPACT, `compacted`,
    each new base file's stat naming the slice's base instant as its previous commit and the log
    files (count, bytes) it merged."""
    ops = {(op.partition, op.file_id): op for op in plan.operations}
    stats = {}
    for partition, found in written.partition_to_write_stats.items():
        stats[partition] = [replace(st, prev_commit=ops[(partition, st.file_id)].base_instant,
                                    total_log_files_compacted=len(ops[(partition, st.file_id)].log_files),
                                    total_log_size_compacted=ops[(partition, st.file_id)].log_bytes)
                            for st in found]
    return replace(written, partition_to_write_stats=stats, compacted=True, operation_type=COMPACT)

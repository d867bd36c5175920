"""Cleaning old file slices, as Apache Hudi's cleaner does with the KEEP_LATEST_COMMITS policy.

Every commit that rewrites a file group leaves the previous slice behind so that readers and
time travel to recent instants keep working. The cleaner bounds that history: the
`keep_commits`-th latest completed commit is the earliest commit to retain E, and a slice is
kept when it was written at E or after, or is the newest written before E (Hudi keeps it for
queries that began before E completed), or a savepoint protects it. File groups that a
replacecommit took out of the table before E are read by no retained instant and go whole; ones
taken out at E or after stay whole. E never passes a pending write: a running writer (or a
scheduled clustering) reads the slices that were latest when it began.

A clean is a timeline transaction in Hudi's own Avro formats, so Hudi's tools read it:

    C.clean.requested   HoodieCleanerPlan: E and the files to delete, per partition
    C.clean.inflight    the same plan
    ... delete the files ...
    C.clean             HoodieCleanMetadata: what was deleted, and E (earliestCommitToRetain)

Deleting is idempotent, so a clean interrupted anywhere is finished by running its plan again
(`resume_pending_cleans`). Readers learn from the latest clean which instants are no longer
readable (`earliest_readable_instant`). Callers hold the table lock (lock.py).
"""
from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tablespec.errors import StalePlanError, TablespecError
from tablespec.hudi.formats.clean_format import CLEAN_METADATA_SCHEMA, CLEANER_PLAN_SCHEMA, POLICY, VERSION, planned_files
from tablespec.hudi.fs_view import FileGroup, FileSlice, FileSystemView
from tablespec.hudi.io import join, join_inside
from tablespec.hudi.mdt import sync as mdt_sync
from tablespec.hudi.timeline.active import Timeline, TimelineWriter, avro_record
from tablespec.hudi.timeline.instant import (
    CLEAN,
    COMPACTION,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    SAVEPOINT,
    WRITE_ACTIONS,
    Instant,
    new_instant_time,
)

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

_PENDING_WRITES = WRITE_ACTIONS | {COMPACTION, LOG_COMPACTION}



@dataclass(frozen=True)
class CleanFile:
    """One data file the cleaner deletes; `path` is relative to the table's base path."""
    partition: str
    path: str
    size: int


@dataclass(frozen=True)
class CleanPlan:
    """What a clean will delete, decided from metadata only."""
    earliest_instant_to_retain: Instant
    last_completed_commit: str
    files_to_delete: tuple[CleanFile, ...]

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files_to_delete)

    @property
    def partitions(self) -> tuple[str, ...]:
        return tuple(sorted({f.partition for f in self.files_to_delete}))

    def to_dict(self) -> dict[str, Any]:
        """The plan estimate: how much the clean frees and where."""
        return {"earliest_instant_to_retain": self.earliest_instant_to_retain.timestamp,
                "partitions": len(self.partitions), "files": len(self.files_to_delete), "bytes_to_free": self.bytes}


@dataclass(frozen=True)
class CleanResult:
    """A completed clean: the storage paths it deleted (or found already gone), the ones it could
    not delete (recorded as failed, as Hudi does: the next clean plans them again) and the bytes
    this run freed."""
    clean_instant: str
    earliest_instant_to_retain: str
    deleted_files: tuple[str, ...]
    failed_files: tuple[str, ...]
    bytes_freed: int

    def __str__(self) -> str:
        failed = f", {len(self.failed_files)} could not be deleted" if self.failed_files else ""
        return (f"cleaned {self.clean_instant}: {len(self.deleted_files)} file(s) deleted, {self.bytes_freed} bytes "
                f"freed{failed}; the earliest instant still readable is {self.earliest_instant_to_retain}")


def earliest_commit_to_retain(timeline: Timeline, keep_commits: int) -> Instant | None:
    """The `keep_commits`-th latest completed commit, or the last completed commit before the
    earliest pending write if that is older; None when there are no more commits than that."""
    if keep_commits < 1:
        raise TablespecError(f"keep_commits must be at least 1, got {keep_commits}")
    commits = timeline.commits()
    if len(commits) <= keep_commits:
        return None
    earliest = commits[len(commits) - keep_commits]
    pending = [i.timestamp for i in timeline.pending() if i.action in _PENDING_WRITES]
    if pending and pending[0] < earliest.timestamp:
        before = [c for c in commits if c.timestamp < pending[0]]
        return before[-1] if before else None
    return earliest


def _replaced_groups(timeline: Timeline, view: FileSystemView) -> list[tuple[str | None, FileGroup]]:
    """Every file group a completed replacecommit took out of the table, with the replacing
    instant's timestamp. A group is listed as the view saw it just before its replacement."""
    out: list[tuple[str | None, FileGroup]] = []
    for instant in timeline.commits():
        if instant.action != REPLACE_COMMIT:
            continue
        replaced = timeline.commit_metadata(instant).partition_to_replace_file_ids or {}
        # Instant times are fixed-width digits: one less is "just before" in string order too.
        before = f"{int(instant.timestamp) - 1:0{len(instant.timestamp)}d}"
        for partition, ids in replaced.items():
            out += [(instant.timestamp, g) for g in view.file_groups(partition, as_of=before) if g.file_id in ids]
    return out


def savepoint_times(timeline: Timeline) -> list[str]:
    """Instants completed savepoints protect from the cleaner."""
    return [i.timestamp for i in timeline.completed() if i.action == SAVEPOINT]


def retained_instants(group: FileGroup, earliest: str, savepoints: Iterable[str],
                      replaced_at: str | None = None) -> set[str]:
    """Base instants of the slices of `group` a clean retaining from `earliest` keeps, by Hudi's
    CleanPlanner: of a group in the table, every slice written at `earliest` or after and the
    newest written strictly before it (a query that began before `earliest` completed may still
    read it); a group a replacecommit took out at `earliest` or after stays whole, one taken out
    before goes whole; and the slice as of each savepoint taken before a replacement."""
    keep = {s.base_instant for t in savepoints
            if (replaced_at is None or t < replaced_at) and (s := group.slice_as_of(t)) is not None}
    if replaced_at is not None:
        return keep | ({s.base_instant for s in group.slices} if replaced_at >= earliest else set())
    keep |= {s.base_instant for s in group.slices if s.base_instant >= earliest}
    before = [s for s in group.slices if s.base_instant < earliest]
    return keep | ({before[-1].base_instant} if before else set())


def _slice_files(base: str, file_slice: FileSlice) -> list[CleanFile]:
    files = ([file_slice.base_file] if file_slice.base_file else []) + list(file_slice.log_files)
    return [CleanFile(f.partition, f.path[len(base):].lstrip("/"), f.size) for f in files]


def plan_clean(base: str, timeline: Timeline, view: FileSystemView, keep_commits: int) -> CleanPlan | None:
    """The files a KEEP_LATEST_COMMITS clean deletes now, or None when there is nothing to delete.

    What stays is Hudi's CleanPlanner rule (`retained_instants`), over the file groups in the
    table and those replacecommits took out. Files of pending instants are not in the view and
    never planned."""
    retain = earliest_commit_to_retain(timeline, keep_commits)
    if retain is None:
        return None
    savepoints = savepoint_times(timeline)
    groups = [(None, g) for g in view.file_groups()] + _replaced_groups(timeline, view)
    files: list[CleanFile] = []
    for replaced_at, group in groups:
        keep = retained_instants(group, retain.timestamp, savepoints, replaced_at)
        for file_slice in group.slices:
            if file_slice.base_instant not in keep:
                files += _slice_files(base, file_slice)
    if not files:
        return None
    return CleanPlan(retain, timeline.commits()[-1].timestamp,
                     tuple(sorted(files, key=lambda f: (f.partition, f.path))))


def _plan_record(base: str, plan: CleanPlan) -> dict[str, Any]:
    by_partition: dict[str, list[dict[str, Any]]] = {}
    for f in plan.files_to_delete:
        by_partition.setdefault(f.partition, []).append({"filePath": join(base, f.path), "isBootstrapBaseFile": False})
    retain = plan.earliest_instant_to_retain
    return {
        "earliestInstantToRetain": {"timestamp": retain.timestamp, "action": retain.action, "state": "COMPLETED"},
        "lastCompletedCommitTimestamp": plan.last_completed_commit,
        "policy": POLICY,
        "filesToBeDeletedPerPartition": {},
        "version": VERSION,
        "filePathsToBeDeletedPerPartition": by_partition,
        "partitionsToBeDeleted": [],
        "extraMetadata": {},
    }


def schedule_clean(table: HudiTable, plan: CleanPlan, clean_ts: str | None = None) -> Instant:
    """Write `C.clean.requested` holding the plan: from here on the clean is resumable. Checked
    against the handle's timeline, which the caller read under the locks; the handle records it."""
    base, timeline = table.base, table.timeline
    retain = plan.earliest_instant_to_retain
    if not timeline.contains_completed(retain.timestamp):
        raise StalePlanError(f"clean plan for {base} retains from {retain.timestamp}, which is not a completed "
                             f"commit on the timeline any more; plan the clean again")
    ts = clean_ts or new_instant_time(timeline.latest_time)
    content = avro_record(CLEANER_PLAN_SCHEMA, _plan_record(base, plan))
    requested = TimelineWriter.of(timeline).request(CLEAN, ts, content)
    table.recorded(requested, content)
    return requested


def _finish(table: HudiTable, timeline: Timeline, clean: Instant) -> CleanResult:
    """Run a requested or inflight clean to completion; every step may be repeated. The handle
    is refreshed: the timeline changed."""
    try:
        return _run(table, timeline, clean)
    finally:
        table.refresh(config=False)


def _run(table: HudiTable, timeline: Timeline, clean: Instant) -> CleanResult:
    storage, base = table.storage, table.base
    started = time.monotonic()
    requested = clean.to("requested")
    plan = timeline.read_metadata(requested)
    origin = join(timeline.meta, requested.file_name)   # the plan's paths are checked before anything changes
    planned = planned_files(base, plan, origin)
    dropped = {p: join_inside(base, p, origin=origin) for p in plan.get("partitionsToBeDeleted") or ()}  # Hudi's plans
    writer = TimelineWriter.of(timeline)
    # the inflight file repeats the plan (Hudi 0.x); Hudi 1.x leaves it empty
    inflight = clean if clean.state == "inflight" else writer.start(
        clean, timeline.read_bytes(requested) if writer.layout == 1 else b"")
    deleted: list[str] = []
    failed: list[str] = []
    freed = 0
    partitions: dict[str, dict[str, Any]] = {}
    for partition, paths in sorted(planned.items()):
        meta = partitions[partition] = {"partitionPath": partition, "policy": plan.get("policy") or POLICY,
                                        "deletePathPatterns": [], "successDeleteFiles": [], "failedDeleteFiles": [],
                                        "isPartitionDeleted": False}
        sizes = {i.path: i.size for i in storage.list_dir(join(base, partition))}   # one listing, not a HEAD each
        try:
            storage.delete_files(list(paths))   # batched on object stores
            gone = set(paths)
        except OSError:   # tell the files that failed apart, one by one
            gone = set()
            for path in paths:
                try:
                    storage.delete(path)
                    gone.add(path)
                except OSError:
                    pass
        for path in paths:
            name = path.rsplit("/", 1)[-1]
            meta["deletePathPatterns"].append(name)
            if path not in gone:
                failed.append(path)
                meta["failedDeleteFiles"].append(name)
                continue
            deleted.append(path)
            freed += sizes.get(path, 0)
            meta["successDeleteFiles"].append(name)
    for partition, path in dropped.items():
        storage.delete_tree(path)
        partitions.setdefault(partition, {"partitionPath": partition, "policy": plan.get("policy") or POLICY,
                                          "deletePathPatterns": [], "successDeleteFiles": [],
                                          "failedDeleteFiles": []})["isPartitionDeleted"] = True
    retain = (plan.get("earliestInstantToRetain") or {}).get("timestamp", "")
    metadata = {
        "startCleanTime": clean.timestamp,
        "timeTakenInMillis": int((time.monotonic() - started) * 1000),
        "totalFilesDeleted": len(deleted),
        "earliestCommitToRetain": retain,
        "lastCompletedCommitTimestamp": plan.get("lastCompletedCommitTimestamp") or "",
        "partitionMetadata": partitions,
        "version": VERSION,
        "bootstrapPartitionMetadata": {},
        "extraMetadata": plan.get("extraMetadata") or {},
    }
    with mdt_sync.completing(table, "clean") as locked:  # Hudi's metadata table first, under Hudi's lock
        recorded = mdt_sync.record_clean(table, clean.timestamp, metadata)
        writer.complete(inflight, avro_record(CLEAN_METADATA_SCHEMA, metadata), locked=locked,
                        after=mdt_sync.completed_by(recorded))
    mdt_sync.compact_if_due(table, recorded)
    return CleanResult(clean.timestamp, retain, tuple(deleted), tuple(failed), freed)


def execute_clean(table: HudiTable, plan: CleanPlan, clean_ts: str | None = None) -> CleanResult:
    """Schedule and run a clean: requested -> inflight -> delete the files -> completed."""
    return finish_clean(table, schedule_clean(table, plan, clean_ts))


def finish_clean(table: HudiTable, requested: Instant) -> CleanResult:
    """Run a clean scheduled on the handle's timeline (by `schedule_clean`, or as read) to completion."""
    return _finish(table, table.timeline, requested)


def resume_pending_cleans(table: HudiTable) -> list[CleanResult]:
    """Finish every clean an earlier run left requested or inflight, oldest first (on the
    handle's timeline, which the caller read under the table lock)."""
    timeline = table.timeline
    return [_finish(table, timeline, i) for i in timeline.pending() if i.action == CLEAN]


def earliest_readable_instant(timeline: Timeline) -> str | None:
    """The earliest instant time travel can still read: the earliest commit to retain of the
    latest clean (an inflight clean may have deleted files already, so it counts). None when no
    clean recorded one."""
    for clean in reversed([i for i in timeline.instants if i.action == CLEAN and i.state != "requested"]):
        if clean.is_completed:
            earliest = timeline.read_metadata(clean).get("earliestCommitToRetain")
        else:
            plan = timeline.read_metadata(clean.to("requested"))
            earliest = (plan.get("earliestInstantToRetain") or {}).get("timestamp")
        if earliest:
            return earliest
    return None

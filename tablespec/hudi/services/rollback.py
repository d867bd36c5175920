"""Rolling back failed writes, lazily, as Apache Hudi does: the next writer (or apply) cleans up.

A write that died leaves a pending commit or replacecommit instant and the data files named
with its instant time. Readers already ignore both; a rollback removes them and records itself
on the timeline as a transaction in Hudi's own Avro formats:

    R.rollback.requested   HoodieRollbackPlan: the instant and the files to delete
    R.rollback.inflight    (empty)
    ... delete the data files, the markers, the instant's timeline files, its heartbeat ...
        (its metadata-table deltacommit is rolled back too: mdt/sync.py)
    R.rollback             HoodieRollbackMetadata: what was deleted

Every step after the plan is idempotent and the plan names its target, so a crash anywhere is
repaired by running the rollback again: `resume_pending_rollbacks` finishes rollbacks left
requested or inflight. A rollback is completed only when every file of the instant is gone;
otherwise it stays pending and is retried, because a leftover data file of an instant that is
no longer on the timeline could become visible once older commits are archived.

Which pending instants are failed writes (`pending_to_roll_back`): commit and replacecommit
instants (and clustering ones, in timeline layout 2) whose heartbeat expired (see heartbeat.py); a live heartbeat means a writer is still at
work. A requested replacecommit holding a clustering plan, with no inflight, is a scheduled
plan waiting for execution, not a failed write, and is left alone; a clustering that died while
executing is rolled back to its requested plan (its files deleted, the plan kept), so it can run
again, as Hudi does. A compaction that died while executing is rolled back the same way (its
new base files deleted, `T.compaction.inflight` back to its requested plan), by the run that
executes the plan again (as Hudi's compaction does: recovery leaves compactions alone, since an
Apache Hudi job may be running one without a heartbeat). A deltacommit (merge-on-read) of table
version 6 is rolled back as Hudi 0.15 does it: its new base files deleted, its log blocks cancelled
by rollback command blocks (log_rollback.py); one of versions 8/9 as Hudi 1.x does it: its log
files (named by the deltacommit) are deleted with its base files, no command block (version 8's are
left to Hudi: untested).
Callers hold the table lock (lock.py) while recovering.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from tablespec.errors import HudiFormatError, TablespecError, UnsupportedTableError
from tablespec.hudi import partition_buckets
from tablespec.hudi.formats.markers import marker_dir
from tablespec.hudi.formats.naming import BaseFileName, LogFileName
from tablespec.hudi.formats.rollback_format import ROLLBACK_METADATA_SCHEMA, ROLLBACK_PLAN_SCHEMA
from tablespec.hudi.io import Storage, join, path_inside
from tablespec.hudi.mdt import sync as mdt_sync
from tablespec.hudi.services import log_rollback
from tablespec.hudi.timeline.active import Timeline, TimelineWriter, avro_record
from tablespec.hudi.timeline.heartbeat import DEFAULT_TOLERANCE_SECONDS, heartbeat_expired, heartbeat_path
from tablespec.hudi.timeline.instant import (
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    REPLACE_COMMIT,
    ROLLBACK,
    Instant,
    new_instant_time,
)

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

# clustering: a plan's run in timeline layout 2; compaction: a plan's run (rolled back by its next run)
ROLLBACK_ACTIONS = (COMMIT, REPLACE_COMMIT, CLUSTERING, COMPACTION)


DELTA_COMMIT_VERSIONS = (6, 9)   # table versions whose failed deltacommits tablespec rolls back (tested with Hudi)


def _rolled_back(table: HudiTable) -> tuple[str, ...]:
    """The pending actions tablespec rolls back on this table (deltacommits: merge-on-read, versions 6 and 9)."""
    deltas = (DELTA_COMMIT,) if table.table_config.version in DELTA_COMMIT_VERSIONS else ()
    return (*ROLLBACK_ACTIONS, *deltas)


@dataclass(frozen=True)
class RollbackResult:
    """One rolled-back instant. `instant` is in the state it was last seen in (requested when an
    interrupted attempt had already removed its inflight file); `deleted_files` are the
    instant's data files, now gone; `rollback_instant` is the completed rollback's time."""
    instant: Instant
    deleted_files: list[str]
    rollback_instant: str


def _instant_files(storage: Storage, base: str, instant_ts: str, logs: bool = False) -> dict[str, str]:
    """Every data file named with `instant_ts` below `base`: path -> partition (relative dir);
    `logs`: log files too (timeline layout 2 names them by the deltacommit that wrote them).
    All visible directories are searched, not only marked partitions: a write can die between
    creating a partition directory and marking it."""
    found: dict[str, str] = {}

    def visit(path: str, rel: str) -> None:
        for info in storage.list_dir(path):
            if info.is_dir and not info.name.startswith("."):
                visit(info.path, f"{rel}/{info.name}" if rel else info.name)
            elif info.is_dir:
                continue
            elif (name := BaseFileName.parse(info.name)) is not None and name.instant == instant_ts:
                found[info.path] = rel
            elif logs and (log := LogFileName.parse(info.name)) is not None and log.base_instant == instant_ts:
                found[info.path] = rel

    visit(base, "")
    return found


def _storage_path(path: str) -> str:
    """Hudi's plans hold full URIs (file:/...); tablespec's hold storage paths."""
    return urlparse(path).path if path.startswith("file:") else path


def is_clustering_plan(timeline: Timeline, instant: Instant) -> bool:
    """Whether a replacecommit's requested file holds a clustering plan (HoodieRequestedReplaceMetadata
    with a clusteringPlan). Writes like insert_overwrite request replacecommits with no plan."""
    if instant.action == CLUSTERING:   # timeline layout 2: clustering plans have their own action
        return True
    if instant.action != REPLACE_COMMIT:
        return False
    try:  # read (once, cached by the timeline), not asked whether it exists first
        meta = timeline.read_metadata(instant.to("requested"))
    except (FileNotFoundError, IsADirectoryError):
        return False
    return meta.get("clusteringPlan") is not None or meta.get("operationType") == "CLUSTER"


def rollback_target(timeline: Timeline, rollback: Instant) -> Instant:
    """The instant a rollback's plan rolls back."""
    plan = timeline.read_metadata(rollback.to("requested"))
    info = plan.get("instantToRollback")
    if not info:
        raise HudiFormatError(f"{join(timeline.meta, rollback.to('requested').file_name)}: rollback plan "
                              f"names no instant to roll back")
    return Instant(info["commitTime"], info["action"], "requested")


def _plan(instant: Instant, files: dict[str, str], log_requests: list[dict] | None = None) -> bytes:
    by_partition: dict[str, list[str]] = {}
    for path, partition in sorted(files.items()):
        by_partition.setdefault(partition, []).append(path)
    requests = [{"partitionPath": p, "fileId": "", "latestBaseInstant": "", "filesToBeDeleted": paths,
                 "logBlocksToBeDeleted": {}} for p, paths in sorted(by_partition.items())] + list(log_requests or ())
    target = {"commitTime": instant.timestamp, "action": instant.action}
    return avro_record(ROLLBACK_PLAN_SCHEMA, {"instantToRollback": target, "RollbackRequests": requests, "version": 1})


def _finish(table: HudiTable, timeline: Timeline, rollback: Instant) -> RollbackResult:
    """Run a requested or inflight rollback to completion; every step may be repeated. The
    handle is refreshed: the timeline changed."""
    try:
        return _run(table, timeline, rollback)
    finally:
        table.refresh(config=False)


def _run(table: HudiTable, timeline: Timeline, rollback: Instant) -> RollbackResult:
    storage, base = table.storage, table.base
    started = time.monotonic()
    writer = TimelineWriter.of(timeline)
    target = rollback_target(timeline, rollback)
    if target.action not in _rolled_back(table):
        raise UnsupportedTableError(f"rollback {rollback.timestamp} targets a {target.action}; tablespec rolls "
                                    f"back only {', '.join(_rolled_back(table))} instants")
    meta = timeline.meta
    if writer.is_completed(target):
        raise HudiFormatError(f"rollback {rollback.timestamp} targets {target.timestamp}.{target.action}, which is "
                              f"completed: the table was written without its lock. Inspect it; delete "
                              f"{join(meta, rollback.file_name)} only if that commit is valid")
    last_seen = next((i for i in (target.to("inflight"), target) if storage.exists(join(meta, i.file_name))), target)
    plan = timeline.read_metadata(rollback.to("requested"))
    origin = join(meta, rollback.to("requested").file_name)   # its files are checked before anything changes
    files = {path_inside(base, _storage_path(path), origin): req["partitionPath"]
             for req in plan.get("RollbackRequests") or () for path in req["filesToBeDeleted"]}
    inflight = rollback if rollback.state == "inflight" else writer.start(rollback)
    files.update(_instant_files(storage, base, target.timestamp,  # also files written after planning
                                logs=target.action == DELTA_COMMIT and timeline.layout == 2))
    # a discarded clustering plan lists its own requested file among the files to delete
    discard = join(meta, target.to("requested").file_name) in files
    keep_plan = not discard and (target.action == COMPACTION or is_clustering_plan(timeline, target))
    failed = []
    try:
        storage.delete_files(sorted(files))   # batched on object stores
    except OSError:
        for path in sorted(files):   # name the files that fail
            try:
                storage.delete(path)
            except OSError as e:
                failed.append(f"{path} ({e})")
    if failed:
        raise TablespecError(f"rollback {rollback.timestamp} of {target.timestamp}: could not delete "
                             f"{len(failed)} file(s): {'; '.join(failed[:5])}. It stays pending and is retried "
                             f"by the next recovery")
    requests = [r for r in plan.get("RollbackRequests") or () if r.get("logBlocksToBeDeleted")]
    listed = log_rollback.slice_logs(storage, base, requests)   # each partition once; the failed logs predate it
    rollback_logs = log_rollback.append_rollback_blocks(storage, base, rollback.timestamp, target.timestamp, requests,
                                                        listed)
    failed_logs = log_rollback.failed_log_files(storage, base, requests, listed)
    storage.delete_tree(marker_dir(base, target.timestamp))   # .hoodie/.temp on every layout
    if target.action == REPLACE_COMMIT and timeline.layout == 2:   # a bucket rescale's hashing config too
        partition_buckets.discard(storage, base, target.timestamp)
    if keep_plan:
        writer.revert_inflight(target.to("inflight"))  # keep the plan: the clustering or compaction runs again
    else:
        writer.delete_instant(target)
    storage.delete(heartbeat_path(base, target.timestamp))

    partitions: dict[str, list[str]] = {p: [] for p in rollback_logs}
    for path, partition in sorted(files.items()):
        partitions.setdefault(partition, []).append(path)
    failed_stub = {r["partitionPath"]: r["logBlocksToBeDeleted"] for r in requests}
    metadata = {
        "startRollbackTime": rollback.timestamp,
        "timeTakenInMillis": int((time.monotonic() - started) * 1000),
        "totalFilesDeleted": len(files),
        "commitsRollback": [target.timestamp],
        "partitionMetadata": {p: {"partitionPath": p, "successDeleteFiles": paths, "failedDeleteFiles": [],
                                  "rollbackLogFiles": rollback_logs.get(p, {}),
                                  "logFilesFromFailedCommit": failed_stub.get(p, {})}
                              for p, paths in partitions.items()},
        "version": 1,
        "instantsRollback": [{"commitTime": target.timestamp, "action": target.action}],
    }
    with mdt_sync.completing(table, "rollback") as locked:  # Hudi's metadata table first, under Hudi's lock
        added = {p: {**failed_logs.get(p, {}), **{path.rsplit("/", 1)[-1]: size for path, size in logs.items()}}
                 for p, logs in rollback_logs.items()}
        recorded = mdt_sync.record_rollback(table, rollback.timestamp, target.timestamp,
                                 {p: [path.rsplit("/", 1)[-1] for path in paths if not path.startswith(meta)]
                                  for p, paths in partitions.items()}, added)
        writer.complete(inflight, avro_record(ROLLBACK_METADATA_SCHEMA, metadata), locked=locked,
                        after=mdt_sync.completed_by(recorded))
    mdt_sync.compact_if_due(table, recorded)
    return RollbackResult(last_seen, sorted(files), rollback.timestamp)


def _completed_rollback_of(timeline: Timeline, instant_ts: str) -> RollbackResult | None:
    for done in reversed([i for i in timeline.completed() if i.action == ROLLBACK]):
        meta = timeline.read_metadata(done)
        if instant_ts in meta.get("commitsRollback", ()):
            action = next((i["action"] for i in meta.get("instantsRollback") or () if i["commitTime"] == instant_ts),
                          COMMIT)
            files = sorted(f for p in meta.get("partitionMetadata", {}).values() for f in p["successDeleteFiles"])
            return RollbackResult(Instant(instant_ts, action, "requested"), files, done.timestamp)
    return None


def rollback(table: HudiTable, instant: Instant, rollback_ts: str | None = None,
             discard_plan: bool = False) -> RollbackResult:
    """Roll back a pending commit or replacecommit: delete its data files, markers, timeline files
    and heartbeat, recorded as a rollback instant. Repeating it is harmless: an interrupted
    rollback of the instant is finished, a finished one is reported again.

    The caller holds the table lock, read the table (`table`'s cached timeline) under it, and has
    made sure no writer is still at work on the instant (pending_to_roll_back checks heartbeats);
    this function does not look at the heartbeat. The handle is refreshed when the table changed.

    A clustering plan is kept when its run is rolled back (the plan runs again); with
    `discard_plan` the plan itself is rolled back too: its requested file is listed among the
    files the rollback deletes, so an interrupted discard is finished as one."""
    storage, base, timeline = table.storage, table.base, table.timeline
    for pending in timeline.pending():
        if pending.action == ROLLBACK and rollback_target(timeline, pending).timestamp == instant.timestamp:
            return _finish(table, timeline, pending)
    current = next((i for i in timeline.instants if i.timestamp == instant.timestamp and i.action != ROLLBACK), None)
    if current is None:
        done = _completed_rollback_of(timeline, instant.timestamp)
        if done is None:
            raise TablespecError(f"table {base} has no instant {instant.timestamp} to roll back")
        return done
    if current.is_completed:
        raise TablespecError(f"cannot roll back {current}: it is completed (only pending writes are rolled back)")
    if current.action not in _rolled_back(table):
        raise UnsupportedTableError(f"cannot roll back {current}: tablespec rolls back only "
                                    f"{', '.join(_rolled_back(table))} instants")
    clustering = is_clustering_plan(timeline, current)
    if current.state == "requested" and (clustering and not discard_plan or current.action == COMPACTION):
        what = "compaction" if current.action == COMPACTION else "clustering"
        raise TablespecError(f"{current} is a scheduled {what} plan, not a failed write: nothing to roll back")
    ts = rollback_ts or new_instant_time(timeline.latest_time)
    by_name = current.action == DELTA_COMMIT and timeline.layout == 2   # its log files go as its base files do
    files = _instant_files(storage, base, current.timestamp, logs=by_name)
    if discard_plan and clustering:
        files[join(timeline.meta, current.to("requested").file_name)] = ""
    logs = log_rollback.log_requests(storage, base, current.timestamp) \
        if current.action == DELTA_COMMIT and not by_name else []
    plan = _plan(current, files, logs)
    requested = TimelineWriter.of(timeline).request(ROLLBACK, ts, plan)
    table.recorded(requested, plan)
    result = _finish(table, table.timeline, requested)
    return RollbackResult(current, result.deleted_files, result.rollback_instant)


def resume_pending_rollbacks(table: HudiTable) -> list[RollbackResult]:
    """Finish every rollback an earlier run left requested or inflight, oldest first (on the
    handle's timeline, which the caller read under the table lock)."""
    timeline = table.timeline
    return [_finish(table, timeline, i) for i in timeline.pending() if i.action == ROLLBACK]


def pending_to_roll_back(table: HudiTable, tolerance_seconds: float = DEFAULT_TOLERANCE_SECONDS,
                         now: float | None = None) -> list[Instant]:
    """Pending commit / replacecommit instants of failed writes on the handle's timeline (compactions:
    their next run rolls them back, see the module doc):
    heartbeat expired (or missing), not a scheduled clustering plan, not already the target of a
    pending rollback."""
    timeline = table.timeline
    targeted = {rollback_target(timeline, i).timestamp for i in timeline.pending() if i.action == ROLLBACK}
    return [i for i in timeline.pending()
            if i.action in _rolled_back(table) and i.action != COMPACTION and i.timestamp not in targeted
            and not (i.state == "requested" and is_clustering_plan(timeline, i))
            and heartbeat_expired(table.storage, table.base, i.timestamp, tolerance_seconds, now)]


def recover(table: HudiTable, tolerance_seconds: float = DEFAULT_TOLERANCE_SECONDS,
            now: float | None = None) -> list[RollbackResult]:
    """What every writer (and apply) runs first, holding the table lock: finish interrupted
    rollbacks and cleans, then roll back the writes that died. Starts from the handle's timeline
    (read under the lock); each step that changes the table refreshes the handle."""
    from tablespec.hudi.services.clean import resume_pending_cleans  # clean builds on the timeline, not on rollback
    results = resume_pending_rollbacks(table)
    resume_pending_cleans(table)
    return results + [rollback(table, i) for i in pending_to_roll_back(table, tolerance_seconds, now)]

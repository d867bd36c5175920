"""The driver side of every data-writing action: its timeline transaction and commit steps."""
from __future__ import annotations

import json
import os
import socket
import sys
from contextlib import contextmanager

from tablespec.faults import crash_point
from tablespec.hudi.archive.archiver import finish_archive, interrupted
from tablespec.hudi.config import table_index_type
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.formats.delta_stats import delta_stat_fields
from tablespec.hudi.formats.markers import marker_dir, markers
from tablespec.hudi.formats.naming import BaseFileName
from tablespec.hudi.formats.partition import PARTITION_METAFILE, write_partition_metadata
from tablespec.hudi.io import join
from tablespec.hudi.mdt import sync as mdt_sync
from tablespec.hudi.mdt.column_stats_changes import half_built
from tablespec.hudi.mdt.secondary_index import Reported
from tablespec.hudi.metadata_table import drop_partitions, unmaintained
from tablespec.hudi.services.rollback import recover, rollback
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import Timeline, TimelineWriter
from tablespec.hudi.timeline.conflict import Footprint, WriteConflictError, find_conflicts
from tablespec.hudi.timeline.heartbeat import Heartbeat, tolerance_seconds
from tablespec.hudi.timeline.instant import DELTA_COMMIT, Instant, new_instant_time
from tablespec.hudi.timeline.lock import DEFAULT_TIMEOUT_SECONDS, LockLostError, TableLock


def reconcile(table: HudiTable, instant_ts: str, stats: list[dict], logs: bool = False) -> set[str]:
    """Delete files of this instant that no successful task reported (failed or retried attempts;
    `logs`: a deltacommit, whose log files its markers name). Returns the partitions whose listing
    showed their partition metadata file (already marked)."""
    storage, base = table.storage, table.base
    keep = {s["path"] for s in stats}
    marked = set()
    partitions = sorted({s["partition"] for s in stats})
    listed = storage.list_dirs([join(base, p) for p in partitions])   # object stores: a small table's in one LIST
    for partition in partitions:
        for info in listed[join(base, partition)]:
            if info.name == PARTITION_METAFILE:
                marked.add(partition)
            name = BaseFileName.parse(info.name)
            rel = f"{partition}/{info.name}" if partition else info.name
            if name is not None and name.instant == instant_ts and rel not in keep:
                storage.delete(info.path)
    for m in markers(storage, base, instant_ts) if logs else ():   # log files of failed attempts (named by their slice)
        rel = f"{m.partition}/{m.file_name}" if m.partition else m.file_name
        if m.kind == "APPEND" and rel not in keep:
            storage.delete(join(base, rel))
    return marked


def commit_metadata(stats: list[dict], operation_type: str, avro_schema: str, extra: dict | None = None,
                    replaced: dict[str, list[str]] | None = None) -> CommitMetadata:
    """Commit (or, with `replaced`, replacecommit) metadata from the tasks' write stats."""
    by_partition: dict[str, list[WriteStat]] = {}
    for s in stats:
        by_partition.setdefault(s["partition"], []).append(WriteStat(
            file_id=s["file_id"], path=s["path"], prev_commit=s["prev_commit"], num_writes=s["num_writes"],
            num_deletes=s["num_deletes"], num_update_writes=s["num_updates"], num_inserts=s["num_inserts"],
            total_write_bytes=s["bytes"], partition_path=s["partition"], file_size_in_bytes=s["bytes"],
            extra={} if s.get("log_version") is None else
            delta_stat_fields(s["log_version"], s["base_file"] or "", json.loads(s["log_files"]))))
    return CommitMetadata(partition_to_write_stats=by_partition, operation_type=operation_type,
                          extra_metadata={"schema": avro_schema, **(extra or {})},
                          partition_to_replace_file_ids=None if replaced is None else
                          {p: list(ids) for p, ids in replaced.items()})


def table_lock(table: HudiTable, who: str = "apply", timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> TableLock:
    """Take the table lock (writers and apply take the same one), nothing more: no recovery.
    The caller releases it; `locked(..., held=lock)` works under it."""
    lock = table.table_lock(owner=f"tablespec {who} {socket.gethostname()}:{os.getpid()}", auto_renew=True)
    return lock.acquire(timeout_seconds=timeout_seconds)


@contextmanager
def locked(table: HudiTable, who: str = "apply", timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
           heartbeat_tolerance: float | None = None, changes_files: bool = True, held: TableLock | None = None):
    """Hold the table lock (writers and apply take the same one) and, first, finish interrupted
    rollbacks/cleans/archiving runs and metadata-table compactions, and roll back writes whose
    writer died; `lock.recovered` lists the rollbacks.

    Hudi's metadata table is kept (every change records itself in it, mdt/sync.py); when the
    holder changes the table's files, or recovery may (pending instants), metadata-table
    partitions tablespec does not maintain are dropped first (Hudi would read them stale).
    A rewrite of hoodie.properties alone (`changes_files=False`) leaves them true.
    `held`: the table's lock, already taken by the caller (`table_lock`), who read the table
    after taking it (.hoodie/ and hoodie.properties again, the rest where they changed): used,
    and not released here.

    The handle is read afresh once the lock is ours (other writers may have changed the table
    before), and again only if dropping partitions or recovery changed it: under the lock, what
    it caches is the table until this process changes it."""
    lock = held if held is not None else table_lock(table, who, timeout_seconds)
    try:
        if held is None:  # the lock is ours now: the table as the previous holder left it
            table.refresh()  # (a caller holding the lock already read the table after taking it)
        timeline = table.timeline
        kept = mdt_sync.maintained_partitions(table.config)
        if (changes_files or timeline.pending()) and (unmaintained(table.config, kept) or half_built(table)):
            # Under Hudi's transaction lock: a Hudi writer names metadata partitions inside its commit.
            with table.transaction_lock(who):
                config = table.fresh_config()
                drop_partitions(table, unmaintained(config, mdt_sync.maintained_partitions(config)) + half_built(table))
        lock.recovered = recover(table, tolerance_seconds() if heartbeat_tolerance is None
                                 else heartbeat_tolerance)  # refreshes the handle where it changed the table
        mdt_sync.repair(table)  # a metadata-table compaction that died is finished
        if interrupted(table):  # an archiving run died between writing the archive and deleting
            with table.transaction_lock("archive"):   # (Hudi's archiver deletes under it too)
                finish_archive(table)
        yield lock
    finally:
        if held is None:
            lock.release()


class Transaction:
    """One data-writing instant: requested -> inflight (with a heartbeat) -> completed.

    Use as a context manager; any error inside rolls the instant back. `commit` does the
    steps every action shares before its commit point, and writes the completed file last.

    Concurrency with other writers (Apache Hudi jobs under optimistic concurrency control):
    the instant is created, and later checked for conflicts and completed, under Hudi's
    transaction lock (`txn_lock.py`). The conflict check compares this commit's file groups with
    those of every write completed since `basis`, the timeline the action read its input from
    (`conflict.py`); `rewrites` names partitions whose whole layout this commit replaces (or
    `ALL_PARTITIONS`), where even another writer's new file groups conflict. A compaction checks
    none (`conflicts=False`): its plan fixed its slices, and later writes append to the next ones."""

    def __init__(self, table: HudiTable, action: str, lock=None, plan: bytes = b"",
                 requested: Instant | None = None, basis: Timeline | None = None, rewrites=(),
                 scheduled: bool = False, conflicts: bool = True):
        """Request a new instant (with `plan` as its requested content), or take over the
        already `requested` one (a scheduled clustering plan; `scheduled`: this process created
        it under the table lock it still holds, so it exists and was never started: not asked
        again). Without `basis`, the handle's timeline is what the action read."""
        self.table, self.storage, self.base, self.lock = table, table.storage, table.base, lock
        self.rewrites, self.conflicts = frozenset(rewrites), conflicts
        self.basis = basis if basis is not None else table.timeline
        self.writer = TimelineWriter.of(self.basis)   # its folder and file names: the table's layout
        self.created = requested is None or scheduled
        if requested is None:
            with table.transaction_lock(action):  # instants are created under Hudi's lock
                # every instant another writer created counts: the new time must be after them all
                timeline = table.fresh_timeline()
                crash_point("before_requested")
                requested = self.writer.request(action, new_instant_time(after=timeline.latest_time), plan,
                                                listed=timeline)
        self.requested, self.instant = requested, requested.timestamp
        self.heartbeat = Heartbeat(self.storage, self.base, self.instant)
        self.completed = False  # past the commit point: nothing may roll the instant back

    def __enter__(self) -> Transaction:
        try:
            self.heartbeat.start()
            # a requested instant this transaction just created exists and is not completed
            self.inflight = self.writer.start(self.requested, checked=self.created)
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is not None and not self.completed and not issubclass(exc_type, LockLostError):
                # Without the lock another writer may own the table now: leave the instant to recovery.
                try:
                    self.table.refresh(config=False)  # read the instant as this transaction left it
                    rollback(self.table, self.requested)
                except Exception as failure:  # keep the original error; recovery finishes the rollback
                    if exc is not None:
                        exc.add_note(f"rolling back {self.instant} failed too ({failure}); the next writer "
                                     "or apply finishes it")
        finally:
            self.heartbeat.stop()

    def check_conflicts(self, metadata: CommitMetadata) -> None:
        """Raise WriteConflictError if a write this action did not see touched its file groups
        (call under the transaction lock)."""
        # the index type changes only under the table lock, which writers hold: the cached config serves
        config = self.table.config
        bucketed = config is not None and table_index_type(config) == "BUCKET"
        # every instant completed since the basis, including other writers' ones: read now
        conflicts = find_conflicts(self.basis, self.table.fresh_timeline(), self.instant,
                                   Footprint.of(metadata, self.rewrites), bucketed)
        if conflicts:
            raise WriteConflictError(self.base, self.instant, conflicts)

    def abandon(self, stats: list[dict]) -> None:
        """Withdraw the instant, committing nothing: its tasks wrote no file (`stats` report only
        file groups left as they are), so there is neither a commit nor a rollback to record.
        Files a failed task attempt may have left go first, the instant's timeline files last
        (under Hudi's transaction lock, where instants are created); a crash in between leaves a
        pending instant that recovery rolls back once its heartbeat expires."""
        reconcile(self.table, self.instant, stats, logs=self.requested.action == DELTA_COMMIT)
        with self.table.transaction_lock(self.requested.action):
            if self.lock is not None:
                self.lock.verify()  # a lost lease: the instant is recovery's now, not ours to withdraw
            self.writer.delete_instant(self.requested)
        self._drop_markers()
        self.table.refresh(config=False)  # this process changed the timeline

    def _drop_markers(self) -> None:
        """A deltacommit's markers go once it completed or was withdrawn, as Hudi's writers drop them."""
        if self.requested.action == DELTA_COMMIT:
            self.storage.delete_tree(marker_dir(self.base, self.instant))

    def commit(self, stats: list[dict], metadata: CommitMetadata, reported: Reported | None = None) -> None:
        """Complete the instant with `metadata`, recording it in the metadata table first (`reported`: the
        secondary-index changes the write's tasks found)."""
        crash_point("after_data_files")
        marked = reconcile(self.table, self.instant, stats, logs=self.requested.action == DELTA_COMMIT)
        for partition in {s["partition"] for s in stats} - marked:  # listed with its metadata file: marked
            write_partition_metadata(self.storage, self.base, partition, self.instant)
        with self.table.transaction_lock(self.requested.action):
            if self.conflicts:
                self.check_conflicts(metadata)
            if self.lock is not None:
                self.lock.verify()  # the lease must still be ours at the commit point
            recorded = mdt_sync.record_commit(self.table, self.instant, metadata, reported)  # Hudi's metadata table first
            crash_point("before_completion")
            # started by this transaction, lease verified; a layout-2 completion time is taken under this lock
            done = self.writer.complete(self.inflight, metadata, checked=True, locked=True,
                                        after=mdt_sync.completed_by(recorded))
            self.completed = True
        self._drop_markers()
        self.table.committed(done, metadata)  # this process changed the timeline: later reads see the commit
        try:
            mdt_sync.compact_if_due(self.table, recorded)
        except Exception as e:  # the commit stands: its metadata deltacommit is recorded, compaction can wait
            print(f"warning: {self.base}: compacting Hudi's metadata table after {self.instant} failed ({e}); "
                  "the next write or apply compacts it", file=sys.stderr)

"""Archiving: moving instants from the active timeline (`.hoodie/`) to the archive log.

A run plans (plan.py), writes every state file of the planned instants to a new archive version
(log.py) and only then deletes their active files, in Hudi's order: the requested and inflight
files first, then the completed ones, oldest first (a completed file deleted first would make a
finished instant look pending to other services; deleting in time order leaves no hole). So a
crash leaves each instant active, or both archived and active (readers count it once, as active:
timeline.History), never in neither timeline. `finish_archive` completes such an interrupted
run, and every run starts with it. Callers hold the table lock, as Hudi's archiver holds its
transaction lock.
"""
from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from tablespec.faults import crash_point
from tablespec.hudi.archive.active import ArchiveResult, StateFile, delete_archived, state_files
from tablespec.hudi.archive.entry import entry_record
from tablespec.hudi.archive.log import DEFAULT_FOLDER, archive_files, folder_of, write_version
from tablespec.hudi.archive.merge import MergeSettings, finish_merge, merge_small_files
from tablespec.hudi.archive.plan import ArchivePlan, ArchiveSettings, archive_due, plan_archive, read_bounds
from tablespec.hudi.archive.summary import ArchivedClusterings, read_summary, record_summary
from tablespec.hudi.archive.timeline import ArchivedTimeline, instant_key
from tablespec.hudi.io import FileInfo, Storage
from tablespec.hudi.mdt import archiver as mdt_archiver
from tablespec.hudi.timeline.active import Timeline
from tablespec.hudi.timeline.instant import COMPACTION, Instant, format_instant_time

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable


DEFAULT_MERGE = MergeSettings()


def _transition_time(info: FileInfo) -> str:
    """A state file's modification time, as Hudi records it (stateTransitionTime)."""
    return format_instant_time(datetime.fromtimestamp(info.mtime_ms / 1000, UTC))


def write_archive(storage: Storage, base: str, files: Sequence[StateFile], folder: str = DEFAULT_FOLDER) -> str:
    """Step 1: the archive version holding `files`' entries; returns its path."""
    # a compaction's states are archived with its plan, which only the requested file holds
    plans = {f.instant.timestamp: f.info.path for f in files if f.instant.action == COMPACTION and f.instant.state == "requested"}
    records = [entry_record(f.instant, storage.read_bytes(plans.get(f.instant.timestamp, f.info.path)
                                                          if f.instant.action == COMPACTION else f.info.path),
                            _transition_time(f.info), f.info.path)
               for f in files]
    return write_version(storage, base, records, folder)


def interrupted(table: HudiTable) -> tuple[Instant, ...]:
    """The active instants an interrupted run left behind: those the latest archive version holds
    as completed (every run finishes the one before it, so only the latest version can hold
    instants still active). Nothing is read when the .hoodie/ listing shows no archive folder."""
    if table.timeline.layout == 2:
        from tablespec.hudi.archive import lsm_archiver
        return lsm_archiver.interrupted(table)
    storage, base, folder = table.storage, table.base, folder_of(table.config)
    if not table.lists_folder(folder):
        return ()
    files = archive_files(storage, base, folder)
    if not files:
        return ()
    archived = {instant_key(i) for i in ArchivedTimeline.of_files(storage, files[-1:]).completed()}
    return tuple(i for i in table.timeline.instants if instant_key(i) in archived)


def finish_archive(table: HudiTable) -> tuple[Instant, ...]:
    """Complete an interrupted run: the instants it left behind (`interrupted`) lose their active
    files. The handle's timeline is the one read under the table lock; it is refreshed when this
    changed it."""
    leftovers = interrupted(table)
    if leftovers:
        files = state_files(table.storage, table.base, leftovers, table.timeline.folder)
        delete_archived(table.storage, table.base, files)
        table.refresh(config=False)
    return leftovers


def execute(storage: Storage, base: str, plan: ArchivePlan, folder: str = DEFAULT_FOLDER,
            merge: MergeSettings | None = DEFAULT_MERGE) -> str | None:
    """Archive the plan's instants (steps 1 and 2); returns the archive version written, if any.

    With `merge`, small archive files are merged first (merge.py), when there are enough: Hudi
    merges right after a run, tablespec right before the next one writes, so the newest version
    is always a run's own file, the only one `interrupted` reads (a merged file can grow to the
    small-file limit; reading it on every write would make each cost more than the one before)."""
    files = state_files(storage, base, plan.instants)
    if not files:
        return None
    existing = archive_files(storage, base, folder)
    before = read_summary(storage, base, folder, existing) if existing else ArchivedClusterings()
    if merge is not None:
        merge_small_files(storage, base, folder, merge, existing)   # the same content: `before` holds
    path = write_archive(storage, base, files, folder)
    crash_point("archive_written")
    delete_archived(storage, base, files)
    record_summary(storage, base, folder, before, path)   # last: a run that dies before leaves it stale
    return path


def archive(table: HudiTable, settings: ArchiveSettings) -> ArchiveResult:
    """One archiving run on the table (into its hoodie.archivelog.folder): finish an interrupted
    run, plan on the handle's timeline (read under the table lock, refreshed if finishing
    changed it), archive; then the metadata table's own timeline (mdt/archiver.py). The handle is
    refreshed: its timeline changed. Versions 8/9 archive into the LSM history (lsm_archiver.py)."""
    if table.timeline.layout == 2:
        from tablespec.hudi.archive import lsm_archiver
        from tablespec.hudi.mdt import lsm_archiver as mdt_lsm_archiver
        done = lsm_archiver.archive(table, settings)
        mdt_lsm_archiver.archive_after_data(table, settings)   # the metadata table's own timeline next
        return done
    finish_merge(table.storage, table.base, folder_of(table.config))  # the archive folder as a merge left it
    finished = finish_archive(table)
    plan = plan_archive(table.timeline, settings, read_bounds(table))
    try:
        result = ArchiveResult(plan.instants, execute(table.storage, table.base, plan, folder_of(table.config)), finished)
    finally:
        table.refresh(config=False)
    mdt_archiver.archive_after_data(table, settings)   # the metadata table's own timeline next
    return result


def housekeep(table: HudiTable, settings: ArchiveSettings, seen: Timeline | None = None,
              added: int = 0) -> ArchiveResult | None:
    """Archiving as housekeeping, after an action or a write, under the table lock the caller
    holds: nothing (None, nothing read) unless the timeline the caller read (`seen`, with the
    `added` instants it completed since; default: the handle's) has more than `max_commits` of
    something; else a run under Hudi's transaction lock, as Hudi's archiver takes it (a Hudi job
    may archive or commit meanwhile)."""
    timeline = seen if seen is not None else table.timeline
    if not archive_due(timeline, settings, added):
        return None
    with table.transaction_lock("archive"):
        table.fresh_timeline()   # Hudi jobs' commits count too (the handle's layout: `seen` may predate an upgrade)
        return archive(table, settings)

"""The metadata table's own archiving on Hudi 1.x tables (versions 8 and 9), as Apache Hudi 1.2's
TimelineArchiverV2 treats a metadata table: into its own LSM history,
`.hoodie/metadata/.hoodie/timeline/history/`, written as the data table's (archive/lsm_write.py).

Once more than `max_commits` commits (deltacommits and compactions) are completed, the oldest go,
down to `min_commits` (archiver.MetaLimits: the data table's limits plus one, as Hudi configures
its metadata writer), all requested before the earliest instant to retain: the least of the
commit before the first pending write, the merge-on-read compaction bound (the latest compaction
while fewer than `max.delta.commits` deltacommits follow it) and the data table's bound (its first
write instant or pending instant, `archiver.data_bound`: readers match deltacommits with the data
instants still active). Cleans and rollbacks go with them: each completed one requested before the
newest commit archived. Crash-safe as the data table's run (lsm_archiver.py): the history's manifest
switches before any active file goes, and the next run first deletes what the newest history file
holds. The metadata table's instant times have 17 digits in 1.x, so its timeline is a `Timeline`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from tablespec.faults import crash_point
from tablespec.hudi.archive.active import delete_archived, state_files
from tablespec.hudi.archive.lsm_archiver import history_rows, interrupted_in
from tablespec.hudi.archive.lsm_write import compact_and_clean, write_batch
from tablespec.hudi.archive.plan import ArchiveSettings
from tablespec.hudi.config import META_FOLDER
from tablespec.hudi.io import join
from tablespec.hudi.mdt import layout
from tablespec.hudi.mdt.archiver import MetaLimits, data_bound
from tablespec.hudi.mdt.compaction import MAX_DELTA_COMMITS
from tablespec.hudi.timeline.active import Timeline, parse_instants
from tablespec.hudi.timeline.instant import CLEAN, COMMIT, DELTA_COMMIT, ROLLBACK, WRITE_ACTIONS, Instant

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

TIMELINE = join(META_FOLDER, layout.TIMELINE_FOLDER)    # below the metadata table's base path
HISTORY = join(TIMELINE, "history")
_WRITES = WRITE_ACTIONS | {"compaction", "logcompaction", "clustering"}


def meta_timeline(table: HudiTable) -> Timeline:
    """The metadata table's active timeline as a layout-2 `Timeline` (17-digit times in 1.x)."""
    mdt = layout.table_path(table.base)
    return Timeline(table.storage, mdt, parse_instants(table.storage.list_dir(join(mdt, TIMELINE)), 2), TIMELINE)


def compaction_bound(metadata: Timeline, max_delta_commits: int = MAX_DELTA_COMMITS) -> str | None:
    """Hudi's earliest instant to retain for merge-on-read compaction scheduling: the latest
    completed compaction (the first deltacommit before any), or, once `max_delta_commits`
    deltacommits follow it, the first of the last that many."""
    compactions = [i for i in metadata.completed() if i.action == COMMIT]
    last = compactions[-1].timestamp if compactions else None
    deltas = [i.timestamp for i in metadata.completed() if i.action == DELTA_COMMIT and (last is None or i.timestamp > last)]
    if len(deltas) >= max_delta_commits:
        return deltas[-max_delta_commits]
    return last if last is not None else (deltas[0] if deltas else None)


def plan_archive(metadata: Timeline, data: Timeline, limits: MetaLimits,
                 max_delta_commits: int = MAX_DELTA_COMMITS) -> list[Instant]:
    """The completed metadata instants Hudi 1.2 archives (see the module doc), in requested-time order."""
    commits = [i for i in metadata.completed() if i.action in (DELTA_COMMIT, COMMIT)]
    if len(commits) <= limits.max_commits:
        return []
    bounds = [b for b in (compaction_bound(metadata, max_delta_commits), data_bound(data)) if b is not None]
    pending = [i for i in metadata.pending() if i.action in _WRITES]
    if pending:
        before = [c.timestamp for c in commits if c.timestamp < pending[0].timestamp]
        bounds.append(before[-1] if before else pending[0].timestamp)
    earliest = min(bounds, default=None)
    eligible = [c for c in commits if earliest is None or c.timestamp < earliest][:len(commits) - limits.min_commits]
    if not eligible:
        return []
    last = eligible[-1].timestamp
    cleans = [i for i in metadata.completed() if i.action in (CLEAN, ROLLBACK) and i.timestamp < last]
    return sorted(eligible + cleans)


def archive(table: HudiTable, settings: ArchiveSettings) -> list[Instant]:
    """One archiving run of a 1.x metadata table, under Hudi's transaction lock with the data
    timeline read under it: finish an interrupted run, plan, write the history, delete the active
    files, compact and clean the history."""
    storage, mdt = table.storage, layout.table_path(table.base)
    history = join(mdt, HISTORY)
    metadata = meta_timeline(table)
    if leftovers := interrupted_in(storage, history, metadata):
        delete_archived(storage, mdt, state_files(storage, mdt, leftovers, TIMELINE))
        metadata = meta_timeline(table)
    planned = plan_archive(metadata, table.timeline, MetaLimits.of(settings))
    files = state_files(storage, mdt, planned, TIMELINE)
    rows = history_rows(storage, files)
    if not rows:
        return []
    write_batch(storage, history, rows)
    crash_point("mdt_archive_written")
    delete_archived(storage, mdt, files)
    crash_point("mdt_archive_deleted")
    compact_and_clean(storage, history)
    return planned


def archive_after_data(table: HudiTable, settings: ArchiveSettings) -> list[Instant]:
    """The run right after the data table's (under the same locks): only that moves the data bound."""
    if not table.lists_folder(layout.FOLDER):     # no metadata table: nothing read
        return []
    return archive(table, settings)

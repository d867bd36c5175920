"""Archiving a version-8/9 table: moving instants from the layout-2 active timeline
(`.hoodie/timeline/`) into its LSM history, as Hudi 1.2's TimelineArchiverV2 does.

A run plans (plan.py: Hudi 1.2's rules), writes the planned instants' rows as one new layer-0
file with a new manifest (lsm_write.py), deletes their active files in Hudi's order (archiver.py:
pending states first, then completed ones, oldest first), and only then compacts and cleans the
history. A crash after the manifest switch leaves instants both archived and active (readers
count them once, as active: timeline.History); `finish` deletes their active files first thing
on the next run. A crash before the switch leaves an unlisted file, never read, that the next
write replaces or cleaning deletes. Callers hold Hudi's transaction lock.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tablespec.faults import crash_point
from tablespec.hudi.archive.active import ArchiveResult, StateFile, delete_archived, state_files
from tablespec.hudi.archive.lsm import history_folder
from tablespec.hudi.archive.lsm_write import (
    compact_and_clean,
    current_version,
    file_layer,
    read_file_rows,
    read_manifest,
    write_batch,
)
from tablespec.hudi.archive.plan import ArchiveSettings, plan_archive, read_bounds
from tablespec.hudi.archive.timeline import instant_key
from tablespec.hudi.io import Storage, join
from tablespec.hudi.timeline.active import Timeline
from tablespec.hudi.timeline.instant import Instant

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable


def history_rows(storage: Storage, files: Sequence[StateFile]) -> list[dict[str, Any]]:
    """One HoodieLSMTimelineInstant row per completed instant among `files`: its completed file's
    bytes as `metadata`, its requested file's (a plan, where it has content) as `plan`."""
    by_key: dict[tuple[str, str], dict[str, StateFile]] = {}
    for f in files:
        by_key.setdefault(instant_key(f.instant), {})[f.instant.state] = f
    rows = []
    for states in by_key.values():
        done = states.get("completed")
        if done is None:
            continue
        requested = states.get("requested")
        plan = storage.read_bytes(requested.info.path) if requested is not None else b""
        metadata = storage.read_bytes(done.info.path)
        rows.append({"instantTime": done.instant.timestamp, "completionTime": done.instant.completed_at,
                     "action": done.instant.action, "metadata": metadata or None, "plan": plan or None,
                     "version": 1})
    return rows


def interrupted(table: HudiTable) -> tuple[Instant, ...]:
    """The active instants an interrupted run left behind (`interrupted_in` the table's history)."""
    return interrupted_in(table.storage, history_folder(table), table.timeline)


def interrupted_in(storage: Storage, folder: str, timeline: Timeline) -> tuple[Instant, ...]:
    """The active instants of `timeline` an interrupted run left behind in the LSM history at
    `folder`: those its newest layer-0 file holds (every run finishes the one before it before
    writing, and compacts only after deleting, so only the newest file can hold instants still
    active). Checked before every write: the file is read only when its name's time range
    reaches the active timeline."""
    names = [f["fileName"] for f in read_manifest(storage, folder, current_version(storage, folder))
             if file_layer(f["fileName"]) == 0]
    if not names or not timeline.instants:
        return ()
    newest = max(names, key=lambda n: n.split("_")[1])
    if newest.split("_")[1] < timeline.instants[0].timestamp:
        return ()       # its newest instant is older than every active one: nothing read
    archived = {(r["instantTime"], r["action"]) for r in read_file_rows(storage, join(folder, newest))}
    return tuple(i for i in timeline.instants if instant_key(i) in archived)


def _state_files(table: HudiTable, instants: Sequence[Instant]) -> list[StateFile]:
    return state_files(table.storage, table.base, instants, table.timeline.folder)


def finish(table: HudiTable) -> tuple[Instant, ...]:
    """Complete an interrupted run: the instants it left behind lose their active files."""
    leftovers = interrupted(table)
    if leftovers:
        delete_archived(table.storage, table.base, _state_files(table, leftovers))
        table.refresh(config=False)
    return leftovers


def archive(table: HudiTable, settings: ArchiveSettings) -> ArchiveResult:
    """One archiving run on a version-8/9 table: finish an interrupted run, plan, write the
    history, delete the active files, compact and clean the history. The handle is refreshed.
    The metadata table's own timeline is archived after it (archiver.archive: mdt/lsm_archiver.py)."""
    finished = finish(table)
    plan = plan_archive(table.timeline, settings, read_bounds(table))
    written = None
    try:
        files = _state_files(table, plan.instants)
        rows = history_rows(table.storage, files)
        if rows:
            folder = history_folder(table)
            written = join(folder, write_batch(table.storage, folder, rows))
            crash_point("archive_written")
            delete_archived(table.storage, table.base, files)
            crash_point("archive_deleted")
            compact_and_clean(table.storage, folder)
    finally:
        table.refresh(config=False)
    return ArchiveResult(plan.instants if written else (), written, finished)

"""The active files of instants being archived (either archive form): which files, and their
deletion in Hudi's order once the archive holds the instants."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tablespec.faults import crash_point
from tablespec.hudi.archive.timeline import instant_key
from tablespec.hudi.config import META_FOLDER
from tablespec.hudi.formats.markers import MARKER_FOLDER
from tablespec.hudi.io import FileInfo, Storage, join
from tablespec.hudi.timeline.instant import Instant


@dataclass(frozen=True)
class StateFile:
    """One file of the active timeline: an instant in one state."""
    instant: Instant
    info: FileInfo


@dataclass(frozen=True)
class ArchiveResult:
    archived: tuple[Instant, ...]   # completed instants this run moved to the archive
    archive_file: str | None        # the archive version it wrote
    finished: tuple[Instant, ...]   # instants an interrupted run had archived, now gone from .hoodie/

    def __str__(self) -> str:
        done = f"archived {len(self.archived)} instant(s)" if self.archived else "nothing to archive"
        tail = f"; finished archiving {len(self.finished)} left by an interrupted run" if self.finished else ""
        return done + tail


def state_files(storage: Storage, base: str, instants: Iterable[Instant], folder: str = META_FOLDER) -> list[StateFile]:
    """Every active state file of each of `instants` (from one listing of the timeline's `folder`,
    Timeline.folder), in the order Hudi archives them: instant by instant, requested, inflight, completed."""
    by_key: dict[tuple[str, str], list[StateFile]] = {}
    layout = 1 if folder == META_FOLDER else 2
    for info in storage.list_dir(join(base, folder)):
        instant = None if info.is_dir else Instant.parse(info.name, layout, info.path)
        if instant is not None:
            by_key.setdefault(instant_key(instant), []).append(StateFile(instant, info))
    return [f for i in instants for f in sorted(by_key.get(instant_key(i), []), key=lambda f: f.instant)]


def deletion_order(files: Sequence[StateFile]) -> list[StateFile]:
    """Hudi's order of deleting archived instants' files: pending states, then completed ones by time."""
    pending = [f for f in files if not f.instant.is_completed]
    return pending + sorted((f for f in files if f.instant.is_completed), key=lambda f: f.instant)


def delete_archived(storage: Storage, base: str, files: Sequence[StateFile]) -> None:
    """Step 2: the archived instants' left-over markers (.hoodie/.temp/<instant>/) and active files
    go, in `deletion_order` (deleting is idempotent)."""
    markers = join(base, META_FOLDER, MARKER_FOLDER)
    left = {f.name for f in storage.list_dir(markers) if f.is_dir}      # one listing, not one per instant
    for ts in sorted(left & {f.instant.timestamp for f in files}):
        storage.delete_tree(join(markers, ts))
    order = deletion_order(files)
    pending = [f.info.path for f in order if not f.instant.is_completed]
    storage.delete_files(pending)                   # in any order (object stores: batched)
    crash_point("archive_pending_deleted")
    for f in order[len(pending):]:                  # completed ones one by one, oldest first
        storage.delete(f.info.path)

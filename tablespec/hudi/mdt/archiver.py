"""The metadata table's own archiving, as Apache Hudi 0.15's archiver treats a metadata table
(HoodieTimelineArchiver, TimelineUtils.getEarliestInstantForMetadataArchival; limits from
HoodieMetadataWriteUtils).

Into `.hoodie/metadata/.hoodie/archived/` with the data archiver's log format (archive/log.py),
keeping one more commit than the data table's limits (min + 1, max + 1), as Hudi configures the
metadata writer; and nothing at or after the data table's first active write or first pending
instant (blocks of instants the data table still lists must stay readable), nor at or after the
metadata table's latest compaction (its base file's slice), nor after its first pending
instant. Run right after the data table's archiving run: only that moves the data bound.
Crash-safe as the data archive: the archive version is written before any active file goes,
and every run first deletes the active files of instants the latest version holds as completed.

Metadata instants have 17 or 20 digits, which the data `Instant` refuses; this module works on
`layout.MetaInstant` and hands `entry.entry_record` the same three fields.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tablespec.faults import crash_point
from tablespec.hudi.archive.entry import entry_record
from tablespec.hudi.archive.log import DEFAULT_FOLDER, archive_files, read_records, write_version
from tablespec.hudi.archive.merge import finish_merge, merge_small_files
from tablespec.hudi.archive.plan import ArchiveSettings
from tablespec.hudi.io import FileInfo, Storage
from tablespec.hudi.mdt import layout
from tablespec.hudi.mdt.cleaner import COMMIT_ACTIONS
from tablespec.hudi.mdt.layout import COMMIT, COMPACTION, MetaInstant
from tablespec.hudi.timeline.active import Timeline
from tablespec.hudi.timeline.instant import CLEAN, ROLLBACK, WRITE_ACTIONS, format_instant_time

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

_DATA_COMMITS = WRITE_ACTIONS | {"compaction", "logcompaction"}


@dataclass(frozen=True)
class MetaLimits:
    """Completed metadata commits to keep (min, max): the data table's archive limits plus one."""
    min_commits: int
    max_commits: int

    @classmethod
    def of(cls, settings: ArchiveSettings) -> MetaLimits:
        return cls(settings.min_commits + 1, settings.max_commits + 1)


def data_bound(data: Timeline) -> str | None:
    """The data table's earliest write instant (any state) or pending instant, whichever is first:
    metadata instants from there on stay active."""
    firsts = [i.timestamp for i in data.instants if i.action in _DATA_COMMITS][:1]
    firsts += [i.timestamp for i in data.pending()][:1]
    return min(firsts, default=None)


def plan_archive(metadata: Sequence[MetaInstant], data: Timeline, limits: MetaLimits) -> list[MetaInstant]:
    """The completed metadata instants Hudi 0.15's archiver would move off the metadata timeline:
    cleans and rollbacks per action, then commits (deltacommits and compactions), oldest first,
    down to `limits.min_commits` once more than `limits.max_commits` are completed; all below the
    bounds of the module doc."""
    bounds = [b for b in (data_bound(data),) if b is not None]
    bounds += [i.timestamp for i in metadata if not i.completed][:1]
    compacted = [i.timestamp for i in metadata if i.action == COMPACTION and i.completed]
    if compacted:
        bounds.append(compacted[-1])
    else:
        return []          # before the first compaction every block is still in the log files
    out: list[MetaInstant] = []
    for action in (CLEAN, ROLLBACK):
        done = [i for i in metadata if i.completed and i.action == action]
        if len(done) > limits.max_commits:
            out += done[:len(done) - limits.min_commits]
    commits = [i for i in metadata if i.completed and i.action in COMMIT_ACTIONS]
    if len(commits) > limits.max_commits:
        out += commits[:len(commits) - limits.min_commits]
    return [i for i in out if all(i.timestamp < b for b in bounds)]


# ---------------------------------------------------------------- archiving (run)

@dataclass(frozen=True)
class _StateFile:
    instant: MetaInstant      # the state this file is (a completed compaction: action `commit`)
    info: FileInfo


def _state_of(name: str) -> MetaInstant | None:
    stem, _, rest = name.partition(".")
    action, _, state = rest.partition(".")
    if not stem.isdigit() or not action or (state and state not in ("requested", "inflight")):
        return None
    if action == "inflight" and not state:
        return None
    return MetaInstant(stem, action, state or "completed")


def _key(instant: MetaInstant) -> tuple[str, str]:
    return instant.timestamp, COMMIT if instant.action == COMPACTION else instant.action


_ORDER = {"requested": 0, "inflight": 1, "completed": 2}


def state_files(storage: Storage, base: str, keys: set[tuple[str, str]]) -> list[_StateFile]:
    """Every active state file of the instants `keys` names, instant by instant, requested first."""
    out = []
    for info in storage.list_dir(layout.meta_path(base)):
        state = None if info.is_dir else _state_of(info.name)
        if state is not None and _key(state) in keys:
            out.append(_StateFile(state, info))
    return sorted(out, key=lambda f: (f.instant.timestamp, _ORDER[f.instant.state]))


def _entry(storage: Storage, f: _StateFile) -> dict[str, Any]:
    stamp = format_instant_time(datetime.fromtimestamp(f.info.mtime_ms / 1000, UTC))
    if f.instant.action == COMPACTION:   # requested / inflight: the plan is not archived (see report)
        return {"commitTime": f.instant.timestamp, "actionType": COMPACTION,
                "actionState": f.instant.state.upper(), "stateTransitionTime": stamp, "version": None}
    return entry_record(f.instant, storage.read_bytes(f.info.path), stamp, f.info.path)  # type: ignore[arg-type]


def _delete(storage: Storage, files: Sequence[_StateFile]) -> None:
    """Hudi's order: pending states first, then the completed files oldest first."""
    storage.delete_files([f.info.path for f in files if f.instant.state != "completed"])
    crash_point("mdt_archive_pending_deleted")
    for f in sorted((f for f in files if f.instant.state == "completed"), key=lambda f: f.instant.timestamp):
        storage.delete(f.info.path)


def finish_archive(storage: Storage, base: str) -> int:
    """Delete the active files of instants the latest archive version holds as completed (an
    interrupted run's); returns how many instants that were."""
    mdt = layout.table_path(base)
    files = archive_files(storage, mdt)
    if not files:
        return 0
    done = {(r["commitTime"], r["actionType"]) for r in read_records(storage, files[-1])
            if r.get("actionState") == "COMPLETED"}
    left = state_files(storage, base, done)
    _delete(storage, left)
    return len({_key(f.instant) for f in left})


def archive(table: HudiTable, settings: ArchiveSettings) -> list[MetaInstant]:
    """One archiving run of the metadata table (under Hudi's transaction lock, the data timeline
    read under it): finish an interrupted one, then archive what `plan_archive` names."""
    storage, base = table.storage, table.base
    mdt = layout.table_path(base)
    finish_merge(storage, mdt, DEFAULT_FOLDER)
    finish_archive(storage, base)
    planned = plan_archive(layout.timeline(storage, base), table.timeline, MetaLimits.of(settings))
    files = state_files(storage, base, {_key(i) for i in planned})
    if not files:
        return []
    merge_small_files(storage, mdt, DEFAULT_FOLDER)
    write_version(storage, mdt, [_entry(storage, f) for f in files])
    crash_point("mdt_archive_written")
    _delete(storage, files)
    return planned



def archive_after_data(table: HudiTable, settings: ArchiveSettings) -> list[MetaInstant]:
    """The metadata table's archiving run, right after the data table's (under the same locks):
    only the data archive moves the data table's first active instant, which bounds it. (Hudi
    1.x's metadata table archives into its own LSM history: lsm_archiver.py.)"""
    if not table.lists_folder(layout.FOLDER) or layout.Format.of(table.config).is_1x:   # nothing read
        return []
    return archive(table, settings)

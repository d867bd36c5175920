"""The metadata table's own archiving and cleaning, as Apache Hudi 0.15's metadata writer runs
them after its deltacommit and compaction (HoodieBackedTableMetadataWriter.performTableServices,
settings from HoodieMetadataWriteUtils).

Cleaning: KEEP_LATEST_COMMITS retaining `CLEANER_COMMITS_RETAINED` commits of the metadata
timeline; of each file group the latest slice and the newest slice older than the earliest
commit to retain stay, older slices (base HFile and its log files) go. The clean instant is the
latest deltacommit's time with `002` appended, written requested -> inflight -> completed with
the data clean's Avro formats (clean.py); one that died is finished by the next run.

Archiving: into `.hoodie/metadata/.hoodie/archived/` with the data archiver's log format
(archive/log.py), keeping one more commit than the data table's limits (min + 1, max + 1), as
Hudi configures the metadata writer; and nothing at or after the data table's first active
commit or first pending instant (TimelineUtils.getEarliestInstantForMetadataArchival: blocks of
instants the data table still lists must stay readable), nor at or after the metadata table's
latest compaction (its base file's slice), nor after its first pending instant. Crash-safe as
the data archive: the archive version is written before any active file goes, and every run
first deletes the active files of instants the latest version holds as completed.

Metadata instants have 17 or 20 digits, which the data `Instant` refuses; this module works on
`layout.MetaInstant` and hands `entry.entry_record` the same three fields.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tablespec.faults import crash_point
from tablespec.hudi.archive.entry import entry_record
from tablespec.hudi.archive.log import DEFAULT_FOLDER, archive_files, read_records, write_version
from tablespec.hudi.archive.merge import finish_merge, merge_small_files
from tablespec.hudi.archive.plan import ArchiveSettings
from tablespec.hudi.clean import CLEAN_METADATA_SCHEMA, CLEANER_PLAN_SCHEMA, POLICY, VERSION
from tablespec.hudi.instant import CLEAN, ROLLBACK, WRITE_ACTIONS, format_instant_time
from tablespec.hudi.io import FileInfo, Storage, join
from tablespec.hudi.mdt import layout
from tablespec.hudi.mdt.layout import COMMIT, COMPACTION, DELTA_COMMIT, MetaInstant
from tablespec.hudi.naming import LogFileName
from tablespec.hudi.timeline import Timeline, avro_content, avro_record

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

CLEANER_COMMITS_RETAINED = 3     # HoodieMetadataWriteUtils' DEFAULT_METADATA_CLEANER_COMMITS_RETAINED
CLEAN_SUFFIX = "002"             # Hudi's suffix of a metadata-table clean instant
_COMMIT_ACTIONS = (DELTA_COMMIT, COMPACTION)
_DATA_COMMITS = WRITE_ACTIONS | {"compaction", "logcompaction"}


@dataclass(frozen=True)
class MetaLimits:
    """Completed metadata commits to keep (min, max): the data table's archive limits plus one."""
    min_commits: int
    max_commits: int

    @classmethod
    def of(cls, settings: ArchiveSettings) -> MetaLimits:
        return cls(settings.min_commits + 1, settings.max_commits + 1)


# ---------------------------------------------------------------- archiving (pure plan)

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
    commits = [i for i in metadata if i.completed and i.action in _COMMIT_ACTIONS]
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


# ---------------------------------------------------------------- cleaning

def earliest_to_retain(metadata: Sequence[MetaInstant], retained: int = CLEANER_COMMITS_RETAINED) -> MetaInstant | None:
    commits = [i for i in metadata if i.completed and i.action in _COMMIT_ACTIONS]
    return commits[-retained] if len(commits) > retained else None


def slices_to_clean(names: Sequence[str], completed: set[str], earliest: str, start: str = "") -> list[str]:
    """The files of `files-0000-0`'s slices KEEP_LATEST_COMMITS removes (pure): slices whose base
    instant is completed (on the active timeline, or archived: older than its first commit
    `start`, Hudi's "before the timeline starts") and older than `earliest`, except the latest slice and the newest one older than
    `earliest` (readers as of `earliest` need it)."""
    bases: dict[str, str] = {}
    logs: dict[str, list[str]] = {}
    for name in names:
        parsed = layout._BASE.fullmatch(name)
        if parsed and parsed["file_id"] == layout.FILE_ID:
            bases[parsed["instant"]] = name
            continue
        log = LogFileName.parse(name)
        if log is not None and log.file_id == layout.FILE_ID:
            logs.setdefault(log.base_instant, []).append(name)
    slices = sorted(b for b in bases if b in completed or b < start)
    if not slices:
        return []
    keep = {slices[-1]} | set([b for b in slices if b < earliest][-1:])
    return sorted(f for b in slices if b < earliest and b not in keep for f in [bases[b], *logs.get(b, [])])


def clean_due(metadata: Sequence[MetaInstant]) -> bool:
    """Cheap check on the listed timeline: a compaction completed since the last clean, and the
    earliest commit to retain is past it (so a slice before it may be superseded)."""
    compactions = [i.timestamp for i in metadata if i.action == COMPACTION and i.completed]
    earliest = earliest_to_retain(metadata)
    last_clean = max((i.timestamp for i in metadata if i.action == CLEAN), default="")
    return bool(compactions) and earliest is not None and earliest.timestamp > compactions[-1] > last_clean[:17]


def clean(table: HudiTable) -> str | None:
    """Finish a clean that died, else plan and run one when old slices exist; returns its instant."""
    storage, base = table.storage, table.base
    meta = layout.meta_path(base)
    metadata = layout.timeline(storage, base)
    pending = next((i for i in metadata if i.action == CLEAN and not i.completed), None)
    if pending is not None:
        plan = avro_content(storage.read_bytes(join(meta, layout.instant_file(pending.timestamp, CLEAN, "requested"))), meta)
        return _run_clean(storage, base, pending.timestamp, plan)
    if not clean_due(metadata):
        return None
    earliest = earliest_to_retain(metadata)
    assert earliest is not None
    part = layout.partition_path(base)
    doomed = slices_to_clean([i.name for i in storage.list_dir(part) if not i.is_dir],
                             {i.timestamp for i in metadata if i.completed}, earliest.timestamp,
                             next(i.timestamp for i in metadata if i.action in _COMMIT_ACTIONS))
    latest = [i.timestamp for i in metadata if i.action == DELTA_COMMIT and i.completed][-1]
    ts = latest[:17] + CLEAN_SUFFIX
    if not doomed or any(i.timestamp == ts for i in metadata):
        return None
    action = COMMIT if earliest.action == COMPACTION else earliest.action
    plan = {"earliestInstantToRetain": {"timestamp": earliest.timestamp, "action": action, "state": "COMPLETED"},
            "lastCompletedCommitTimestamp": [i.timestamp for i in metadata if i.completed and i.action in _COMMIT_ACTIONS][-1],
            "policy": POLICY, "filesToBeDeletedPerPartition": {}, "version": VERSION,
            "filePathsToBeDeletedPerPartition": {layout.FILES: [{"filePath": join(part, n), "isBootstrapBaseFile": False}
                                                                for n in doomed]},
            "partitionsToBeDeleted": [], "extraMetadata": {}}
    storage.create_exclusive(join(meta, layout.instant_file(ts, CLEAN, "requested")), avro_record(CLEANER_PLAN_SCHEMA, plan))
    crash_point("mdt_clean_requested")
    return _run_clean(storage, base, ts, plan)


def _run_clean(storage: Storage, base: str, ts: str, plan: dict[str, Any]) -> str:
    started = time.monotonic()
    meta = layout.meta_path(base)
    inflight = join(meta, layout.instant_file(ts, CLEAN, "inflight"))
    if not storage.exists(inflight):
        storage.write_bytes(inflight, storage.read_bytes(join(meta, layout.instant_file(ts, CLEAN, "requested"))))
    paths = [f["filePath"] for fs in (plan.get("filePathsToBeDeletedPerPartition") or {}).values() for f in fs]
    storage.delete_files(paths)            # idempotent: a resumed clean deletes what is left
    crash_point("mdt_clean_deleted")
    names = [p.rsplit("/", 1)[-1] for p in paths]
    retain = (plan.get("earliestInstantToRetain") or {}).get("timestamp", "")
    metadata = {"startCleanTime": ts, "timeTakenInMillis": int((time.monotonic() - started) * 1000),
                "totalFilesDeleted": len(paths), "earliestCommitToRetain": retain,
                "lastCompletedCommitTimestamp": plan.get("lastCompletedCommitTimestamp") or "",
                "partitionMetadata": {layout.FILES: {
                    "partitionPath": layout.FILES, "policy": POLICY, "deletePathPatterns": names,
                    "successDeleteFiles": names, "failedDeleteFiles": [], "isPartitionDeleted": False}},
                "version": VERSION, "bootstrapPartitionMetadata": {}, "extraMetadata": {}}
    storage.write_bytes(join(meta, layout.instant_file(ts, CLEAN)), avro_record(CLEAN_METADATA_SCHEMA, metadata))
    return ts


# ---------------------------------------------------------------- when

def clean_if_due(table: HudiTable, metadata: Sequence[MetaInstant] | None) -> str | None:
    """After a data instant was recorded in the metadata table and any compaction ran (`metadata`:
    the metadata timeline the caller listed; None: nothing recorded): clean when the listing makes
    it due or a clean is pending, under Hudi's transaction lock. Nothing else is read otherwise."""
    if metadata is None or not (clean_due(metadata) or any(i.action == CLEAN and not i.completed for i in metadata)):
        return None
    with table.transaction_lock("metadata clean"):
        return clean(table)


def archive_after_data(table: HudiTable, settings: ArchiveSettings) -> list[MetaInstant]:
    """The metadata table's archiving run, right after the data table's (under the same locks):
    only the data archive moves the data table's first active instant, which bounds it."""
    if not table.lists_folder(layout.FOLDER):     # no metadata table: nothing read
        return []
    return archive(table, settings)

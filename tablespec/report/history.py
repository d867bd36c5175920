"""A table's timeline as the report shows it: every completed instant of the active and archived
timelines (commits with the rows, bytes and files their write statistics record, cleans with the
files they deleted, rollbacks), how long each took, and the work still pending.

A commit's duration is from its requested time to its completion: the completion time a version
8/9 file name or archived entry carries, else the completed file's modification time (version 6,
as Hudi's archiver records it); None where neither is known or the clock went backwards (a writer
whose instant times are in another time zone)."""
from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

from tablespec.hudi.archive import ArchivedTimeline, History
from tablespec.hudi.archive.log import folder_of, folder_path
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.instant import CLEAN, ROLLBACK, WRITE_ACTIONS, Instant
from tablespec.state import TableState

RECENT = 50           # commits listed one by one (the JSON's `recent`, the per-commit charts)
SliceKey = tuple[str, str, str]   # (partition, file id, base instant)


def _moment(timestamp: str) -> datetime:
    """An instant time (validated: 14 or 17 digits) as a UTC datetime; strptime is too slow for a
    timeline of thousands of instants."""
    t = timestamp
    return datetime(int(t[:4]), int(t[4:6]), int(t[6:8]), int(t[8:10]), int(t[10:12]), int(t[12:14]),
                    int(t[14:17] or 0) * 1000, tzinfo=UTC)


def _seconds(instant: Instant, finished: datetime | None) -> float | None:
    if finished is None:
        return None
    took = (finished - _moment(instant.timestamp)).total_seconds()
    return round(took, 3) if took >= 0 else None


def _finished(instant: Instant, archived: ArchivedTimeline | None, mtimes: dict[str, int]) -> datetime | None:
    """When `instant` completed, as far as the metadata tells (`archived`: the archive it is read from)."""
    if instant.completion:
        return _moment(instant.completion)
    if archived is not None:
        when = archived.records.get(instant, {}).get("stateTransitionTime")
        return _moment(when) if isinstance(when, str) and when.isdigit() and len(when) in (14, 17) else None
    ms = mtimes.get(instant.file_name)
    return datetime.fromtimestamp(ms / 1000, UTC) if ms is not None else None


def _archive(table: HudiTable) -> tuple[ArchivedTimeline, dict]:
    """The archived timeline's completed instants (read only when .hoodie/ lists its folder: the
    report sums what completed) and its files' count and bytes."""
    folder = folder_of(table.config)
    if not table.lists_folder(folder):
        return ArchivedTimeline([]), {"files": 0, "bytes": 0}
    files = list(table.storage.walk_files(folder_path(table.base, folder)))
    return ArchivedTimeline.of(table, completed_only=True), {"files": len(files), "bytes": sum(f.size for f in files)}


def timeline_figures(table: HudiTable, state: TableState) -> tuple[dict, dict[SliceKey, int]]:
    """The timeline section, and the rows each latest file slice holds (from its commit's numWrites)."""
    timeline = table.timeline
    archived, archive_files = _archive(table)
    history = History(timeline, archived)
    mtimes = {f.name: f.mtime_ms for f in table.meta_listing if not f.is_dir} if timeline.layout == 1 else {}
    wanted = {(g.partition, g.file_id, g.base_instant) for g in state.file_groups if g.base_file}
    slice_rows: dict[SliceKey, int] = {}
    by_action: Counter[str] = Counter()
    by_operation: Counter[str] = Counter()
    by_day: dict[str, Counter[str]] = {}
    commits: list[dict] = []
    durations: list[float] = []
    cleans, files_cleaned, last_clean, rollbacks = 0, 0, None, 0
    archived_only = set(history.instants).difference(timeline.instants)   # History.is_archived, as a set
    for instant in history.completed():
        source = archived if instant in archived_only else timeline
        by_action[instant.action] += 1
        ts = instant.timestamp
        day = f"{ts[:4]}-{ts[4:6]}-{ts[6:8]}"
        counts = by_day.setdefault(day, Counter())
        seconds = _seconds(instant, _finished(instant, archived if source is archived else None, mtimes))
        if instant.action in WRITE_ACTIONS:
            meta = source.commit_metadata(instant)
            stats = meta.write_stats()
            operation = meta.operation_type or "UNKNOWN"
            by_operation[operation] += 1
            counts[f"{instant.action} {operation}"] += 1   # writes per day by action and operation
            rows = inserts = updates = deletes = written = 0   # one pass over a commit's stats
            for s in stats:
                if (key := (s.partition_path or "", s.file_id, instant.timestamp)) in wanted:
                    slice_rows[key] = slice_rows.get(key, 0) + s.num_writes
                rows, inserts, updates = rows + s.num_writes, inserts + s.num_inserts, updates + s.num_update_writes
                deletes, written = deletes + s.num_deletes, written + s.total_write_bytes
            commits.append({"instant": instant.timestamp, "action": instant.action, "operation": operation,
                            "rows": rows, "inserts": inserts, "updates": updates, "deletes": deletes,
                            "bytes": written, "files": len(stats), "seconds": seconds, "archived": source is archived})
            if seconds is not None:
                durations.append(seconds)
        else:
            counts[instant.action] += 1
            if instant.action == CLEAN:
                deleted = source.read_metadata(instant).get("totalFilesDeleted")
                cleans += 1
                files_cleaned += deleted if isinstance(deleted, int) else 0
                last_clean = instant.timestamp
            elif instant.action == ROLLBACK:
                rollbacks += 1
    expired = set(state.expired)
    figures = {
        "activeInstants": len(timeline.instants),
        "archivedInstants": len(history.instants) - len(timeline.instants),
        "archive": archive_files,
        "commits": len(commits),
        "firstCommit": commits[0]["instant"] if commits else None,
        "lastCommit": commits[-1]["instant"] if commits else None,
        "byAction": dict(sorted(by_action.items())),
        "byOperation": dict(sorted(by_operation.items())),
        "byDay": [{"day": day, **dict(sorted(counts.items()))} for day, counts in sorted(by_day.items())],
        "rowsWritten": sum(c["rows"] for c in commits),
        "bytesWritten": sum(c["bytes"] for c in commits),
        "durations": _spread(durations),
        "cleans": {"count": cleans, "filesDeleted": files_cleaned, "last": last_clean},
        "rollbacks": rollbacks,
        "pending": [{"instant": i.timestamp, "action": i.action, "state": i.state,
                     "heartbeatAgeSeconds": (None if (age := state.heartbeat_ages.get(i.timestamp)) is None else round(age)),
                     "failed": i in expired} for i in state.pending],
        "recent": commits[-RECENT:],
    }
    return figures, slice_rows


def _spread(values: list[float]) -> dict | None:
    """Median, 90th percentile and maximum (None: no values)."""
    if not values:
        return None
    ordered = sorted(values)
    return {"p50": nearest_rank(ordered, 50), "p90": nearest_rank(ordered, 90), "max": ordered[-1]}


def nearest_rank(ordered: list, pct: int):
    """The `pct`th percentile of sorted values by the nearest-rank method (a value that occurs)."""
    return ordered[max(0, -(-pct * len(ordered) // 100) - 1)]

"""A table's timeline as the report shows it: every completed instant of the active and archived
timelines (commits with the rows, bytes and files their write statistics record, cleans with the
files they deleted, rollbacks), how long each took, and the work still pending.

A commit's duration is from its requested time to its completion: the completion time a version
8/9 file name or archived entry carries, else the completed file's modification time (version 6,
as Hudi's archiver records it); None where neither is known or the clock went backwards (a writer
whose instant times are in another time zone)."""
from __future__ import annotations

import functools
from collections import Counter
from datetime import date

from tablespec.errors import HudiFormatError
from tablespec.hudi.archive import ArchivedTimeline, History
from tablespec.hudi.archive.log import folder_of, folder_path
from tablespec.hudi.io import join
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.instant import CLEAN, ROLLBACK, WRITE_ACTIONS, Instant
from tablespec.state import TableState

EPOCH = date(1970, 1, 1)
RECENT = 50           # commits listed one by one (the JSON's `recent`, the per-commit charts)
SliceKey = tuple[str, str, str]   # (partition, file id, base instant)
COMMIT_KEYS = ("instant", "action", "operation", "rows", "inserts", "updates", "deletes", "bytes", "files", "seconds", "archived")


@functools.lru_cache(maxsize=4096)
def _day_ms(day: str) -> int:
    """The start of `day` (yyyyMMdd, UTC) in milliseconds since the epoch; ValueError: not a date."""
    return (date(int(day[:4]), int(day[4:6]), int(day[6:8])) - EPOCH).days * 86_400_000


def _epoch_ms(t: str) -> int:
    """An instant time (validated: 14 or 17 digits) in milliseconds since the epoch, UTC; ValueError:
    not a date and time. Integer arithmetic on a cached day: a datetime per instant is too slow for
    a timeline of thousands."""
    hour, minute, second = int(t[8:10]), int(t[10:12]), int(t[12:14])
    if hour > 23 or minute > 59 or second > 59:
        raise ValueError(f"{t}: not a time of day")
    return _day_ms(t[:8]) + ((hour * 60 + minute) * 60 + second) * 1000 + int(t[14:17] or 0)


def _finished_ms(instant: Instant, archived: ArchivedTimeline | None, mtimes: dict[str, int]) -> int | None:
    """When `instant` completed (ms since the epoch), as far as the metadata tells (`archived`: the
    archive it is read from). ValueError: a completion time in a file name that is no date (the
    caller refuses it as it refuses such a requested time); an archived transition time that is
    none is unknown (None)."""
    if instant.completion:
        return _epoch_ms(instant.completion)
    if archived is not None:
        when = archived.records.get(instant, {}).get("stateTransitionTime")
        if not (isinstance(when, str) and when.isdigit() and len(when) in (14, 17)):
            return None
        try:
            return _epoch_ms(when)
        except ValueError:
            return None
    return mtimes.get(instant.file_name)


def _seconds(started: int, finished: int | None) -> float | None:
    """Seconds from `started` to `finished` (ms); None where unknown or the clock went backwards."""
    if finished is None or finished < started:
        return None
    return round((finished - started) / 1000, 3)


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
    by_kind: Counter[tuple[str, str]] = Counter()   # (day, "commit UPSERT" / "clean" / ...): instants
    by_operation: Counter[str] = Counter()
    commits: list[tuple] = []   # per commit: (instant, action, operation, rows, inserts, updates, deletes, bytes, files, seconds, archived)
    durations: list[float] = []
    cleans, files_cleaned, last_clean, rollbacks = 0, 0, None, 0
    archived_only = set(history.instants).difference(timeline.instants)   # History.is_archived, as a set
    for instant in history.completed():
        is_archived = instant in archived_only
        source = archived if is_archived else timeline
        action, ts = instant.action, instant.timestamp
        by_action[action] += 1
        day = f"{ts[:4]}-{ts[4:6]}-{ts[6:8]}"
        if action in WRITE_ACTIONS:
            try:   # only a write's duration is shown: the other instants' times are not read
                seconds = _seconds(_epoch_ms(ts), _finished_ms(instant, archived if is_archived else None, mtimes))
            except ValueError:
                where = f"archived instant {instant}" if is_archived else join(timeline.meta, instant.file_name)
                raise HudiFormatError(f"{where}: its time is not a date and time (yyyyMMddHHmmss[SSS])") from None
            meta = source.commit_metadata(instant)
            operation = meta.operation_type or "UNKNOWN"
            by_operation[operation] += 1
            by_kind[day, f"{action} {operation}"] += 1   # writes per day by action and operation
            rows = inserts = updates = deletes = written = files = 0   # one pass over a commit's stats
            for stats in meta.partition_to_write_stats.values():
                files += len(stats)
                for s in stats:
                    if (key := (s.partition_path or "", s.file_id, ts)) in wanted:
                        slice_rows[key] = slice_rows.get(key, 0) + s.num_writes
                    rows, inserts, updates = rows + s.num_writes, inserts + s.num_inserts, updates + s.num_update_writes
                    deletes, written = deletes + s.num_deletes, written + s.total_write_bytes
            commits.append((ts, action, operation, rows, inserts, updates, deletes, written, files, seconds, is_archived))
            if seconds is not None:
                durations.append(seconds)
        else:
            by_kind[day, action] += 1
            if action == CLEAN:
                deleted = source.read_metadata(instant).get("totalFilesDeleted")
                cleans += 1
                files_cleaned += deleted if isinstance(deleted, int) else 0
                last_clean = ts
            elif action == ROLLBACK:
                rollbacks += 1
    by_day: dict[str, dict[str, str | int]] = {}
    for (day, kind), n in sorted(by_kind.items()):
        by_day.setdefault(day, {"day": day})[kind] = n
    expired = set(state.expired)
    figures = {
        "activeInstants": len(timeline.instants),
        "archivedInstants": len(history.instants) - len(timeline.instants),
        "archive": archive_files,
        "commits": len(commits),
        "firstCommit": commits[0][0] if commits else None,
        "lastCommit": commits[-1][0] if commits else None,
        "byAction": dict(sorted(by_action.items())),
        "byOperation": dict(sorted(by_operation.items())),
        "byDay": list(by_day.values()),
        "rowsWritten": sum(c[3] for c in commits),
        "bytesWritten": sum(c[7] for c in commits),
        "durations": _spread(durations),
        "cleans": {"count": cleans, "filesDeleted": files_cleaned, "last": last_clean},
        "rollbacks": rollbacks,
        "pending": [{"instant": i.timestamp, "action": i.action, "state": i.state,
                     "heartbeatAgeSeconds": (None if (age := state.heartbeat_ages.get(i.timestamp)) is None else round(age)),
                     "failed": i in expired} for i in state.pending],
        "recent": [dict(zip(COMMIT_KEYS, c)) for c in commits[-RECENT:]],
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

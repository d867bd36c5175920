"""What a read of a merge-on-read file slice takes from its log files, and by which rule it merges.

The driver decides from metadata (`slice_reads`): the slices' log files, the instants whose
blocks count (completed writes, up to the instant read as of; instants older than the active
timeline were archived and count too) and the bytes each completed deltacommit wrote into each log
file (its write stat: log offset to file size). Executors then read each slice's log files
(`log_blocks`) as Hudi's log scanner does: blocks in order, file by file; a block of an instant
that does not count is skipped (a failed or running write, or one after the instant read), a
rollback command block drops the blocks of the instant it targets, and a corrupt block (a torn
append) is skipped. A block skipped or undecodable inside the bytes a counting deltacommit wrote
is damage: the read is refused naming the file, as a read silently missing a committed update
would return stale rows.

The merge rule (`MergeRules.of`): version 6 by the table's payload class:
DefaultHoodieRecordPayload orders every merge by the ordering field (the greater value wins, ties
to the later write); OverwriteWithLatestAvroPayload orders log records among themselves by it too
(its preCombine; measured with Hudi 0.15), but the logs' result replaces the base file's row
whatever its ordering value. Versions 8/9 by `hoodie.record.merge.mode` (COMMIT_TIME_ORDERING:
the later write wins; EVENT_TIME_ORDERING). Custom payloads and mergers are refused.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tablespec.errors import HudiFormatError, LogFileDamaged, UnsupportedTableError
from tablespec.hudi import keys
from tablespec.hudi.config import TableConfig
from tablespec.hudi.formats.logfile import (
    BlockType,
    Header,
    LogBlock,
    avro_records,
    delete_records,
    parquet_block_table,
    read_blocks,
    rollback_target,
)
from tablespec.hudi.fs_view import FileSlice, FileSystemView, LogFile
from tablespec.hudi.io import Storage
from tablespec.hudi.timeline.active import Timeline
from tablespec.hudi.timeline.instant import COMPACTION, DELTA_COMMIT, LOG_COMPACTION, WRITE_ACTIONS, Instant

COMMIT_TIME, EVENT_TIME = "COMMIT_TIME_ORDERING", "EVENT_TIME_ORDERING"
OVERWRITE_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
_PAYLOADS = {OVERWRITE_PAYLOAD: COMMIT_TIME, "org.apache.hudi.common.model.DefaultHoodieRecordPayload": EVENT_TIME}
DATA_BLOCKS = (BlockType.AVRO_DATA, BlockType.PARQUET_DATA)


@dataclass(frozen=True)
class MergeRules:
    """How two versions of a record merge, by `ordering_field`: log records among themselves by
    `mode`, the logs' result with the base file's row by `base_mode` (COMMIT_TIME / EVENT_TIME)."""
    mode: str = COMMIT_TIME
    ordering_field: str | None = None
    base_mode: str = COMMIT_TIME

    @classmethod
    def of(cls, config: TableConfig) -> MergeRules:
        """The table's rule, from hoodie.properties; UnsupportedTableError for a custom merge."""
        ordering = config.precombine_field
        if config.version >= 8:
            mode = config.extra.get(keys.RECORD_MERGE_MODE.name) or (EVENT_TIME if ordering else COMMIT_TIME)
            if mode not in (COMMIT_TIME, EVENT_TIME):
                raise UnsupportedTableError(f"table {config.name!r}: {keys.RECORD_MERGE_MODE.name}={mode} (a custom "
                                            "merger) is not supported: tablespec merges log records by commit or "
                                            "event time only")
        else:
            payload = config.extra.get(keys.COMPACTION_PAYLOAD_CLASS.name) or next(iter(_PAYLOADS))
            if payload not in _PAYLOADS:
                raise UnsupportedTableError(f"table {config.name!r}: {keys.COMPACTION_PAYLOAD_CLASS.name}={payload} "
                                            "is not supported: tablespec merges log records as "
                                            f"{' or '.join(p.rsplit('.', 1)[-1] for p in _PAYLOADS)} do")
            if payload == OVERWRITE_PAYLOAD:
                return cls(EVENT_TIME if ordering else COMMIT_TIME, ordering, COMMIT_TIME)
            mode = _PAYLOADS[payload]
        return cls(mode, ordering if mode == EVENT_TIME else None, mode)


@dataclass(frozen=True)
class SliceRead:
    """One file slice as executors read it (picklable): its base file and its log files, each with
    the byte ranges (start, end, instant) counting deltacommits wrote in it."""
    partition: str
    file_id: str
    base_path: str | None
    logs: tuple[tuple[str, tuple[tuple[int, int, str], ...]], ...] = ()


@dataclass(frozen=True)
class Counting:
    """The instants whose log blocks a read merges: `instants`, and any before `archived_before`
    (the active timeline's first write; older ones were archived, completed)."""
    instants: frozenset[str]
    archived_before: str | None = None

    def __contains__(self, instant: object) -> bool:
        return isinstance(instant, str) and (instant in self.instants or (
            self.archived_before is not None and instant < self.archived_before))


def counting(timeline: Timeline, as_of: str | None = None) -> Counting:
    """The instants a snapshot (as of `as_of`, a requested time) reads the log blocks of."""
    done = {i.timestamp for i in timeline.completed() if i.action in WRITE_ACTIONS | {COMPACTION, LOG_COMPACTION}
            and (as_of is None or i.timestamp <= as_of)}
    first = min((i.timestamp for i in timeline.instants if i.action in WRITE_ACTIONS | {COMPACTION, LOG_COMPACTION}),
                default=None)
    return Counting(frozenset(done), first)


def written_ranges(timeline: Timeline, wanted: Counting) -> dict[str, list[tuple[int, int, str]]]:
    """Log file (`partition/name` as write stats give it) -> the (start, end, instant) byte ranges
    completed deltacommits that count wrote in it."""
    out: dict[str, list[tuple[int, int, str]]] = {}
    for instant in timeline.commits():
        if instant.action != DELTA_COMMIT or instant.timestamp not in wanted:
            continue
        for stat in timeline.commit_metadata(instant).write_stats():
            name = (stat.path or "").rsplit("/", 1)[-1]
            if name.startswith(".") and ".log." in name:
                start = int(stat.extra.get("logOffset") or 0)
                out.setdefault(stat.path or "", []).append((start, stat.file_size_in_bytes, instant.timestamp))
    return out


def slice_reads(timeline: Timeline, slices: Iterable[FileSlice], wanted: Counting) -> list[SliceRead]:
    """The slices as executors read them, with the bytes each log file's counting deltacommits wrote."""
    ranges = written_ranges(timeline, wanted)
    return [slice_read(s, ranges) for s in slices]


def slice_read(s: FileSlice, ranges: Mapping[str, list[tuple[int, int, str]]]) -> SliceRead:
    """One slice as executors read it, given the `written_ranges` of the deltacommits that count."""
    logs = tuple((f.path, tuple(ranges.get(f"{s.partition}/{f.file_name.format()}" if s.partition
                                           else f.file_name.format(), ())))
                 for f in s.log_files)
    return SliceRead(s.partition, s.file_id, s.base_file.path if s.base_file else None, logs)


def incremental_slices(view: FileSystemView, commits: Iterable[Instant]) -> list[FileSlice]:
    """The slices an incremental read of `commits` merges, as Hudi's incremental query of a
    merge-on-read table takes them: only the base files and log files those commits wrote (their
    write stats), merged with `Counting(commits)` (the blocks they wrote). So a record's update in
    the range wins over a log record before it even where the snapshot orders the older one first
    (measured with Hudi 0.15). Version 6: of each file group's slice as of the range's last commit.
    Versions 8/9: Hudi 1.x slices the written files alone, by completion time: a file group's newest
    base file the range wrote, with the range's log files after it (none written: all the range's
    log files of the group), so a compaction requested inside the range but completed after it
    does not hide the log files written before it (measured with Hudi 1.0.2 and 1.2)."""
    commits = list(commits)
    timeline = view.timeline
    written = {stat.path for i in commits for stat in timeline.commit_metadata(i).write_stats()}
    last = max((i.timestamp for i in commits), default=None)

    def named(partition: str, name: str) -> str:
        return f"{partition}/{name}" if partition else name

    out = []
    for group in view.file_groups(as_of=last):
        newest_first = reversed(group.slices) if timeline.layout == 2 else [group.slice_as_of(last)]
        base, instant = None, None
        logs: tuple[LogFile, ...] = ()
        for s in newest_first:
            if s is None:
                continue
            logs = tuple(f for f in s.log_files if named(s.partition, f.file_name.format()) in written) + logs
            instant = s.base_instant
            if s.base_file is not None and named(s.partition, s.base_file.name) in written:
                base = s.base_file
                break
        if instant is not None and (base is not None or logs):
            out.append(FileSlice(group.file_id, group.partition, instant, base, logs))
    return out


@dataclass
class LogScan:
    """What a read of one slice's log files met, as Hudi's compaction records it in the write stat of
    the slice's new base file: every block read (whatever its instant), rollback command blocks,
    corrupt blocks, data records (deletes aside), and the keys the logs' merge left (deletes
    included); the milliseconds spent scanning and merging."""
    blocks: int = 0
    rollback_blocks: int = 0
    corrupt_blocks: int = 0
    records: int = 0
    merged_keys: int = 0
    scan_ms: int = 0

    def write_stat_fields(self, write_ms: int, created: bool) -> dict[str, Any]:
        """The WriteStat fields (`created`: the slice had no base file, Hudi creates rather than upserts)."""
        return dict(total_log_records=self.records, total_log_blocks=self.blocks,
                    total_rollback_blocks=self.rollback_blocks, total_corrupt_log_block=self.corrupt_blocks,
                    total_updated_records_compacted=self.merged_keys,
                    runtime_stats={"totalScanTime": self.scan_ms, "totalUpsertTime": 0 if created else write_ms,
                                   "totalCreateTime": write_ms if created else 0})


def _skipped(block: LogBlock) -> str:
    if block.type == BlockType.CORRUPT:
        return f"a corrupt log block at byte {block.offset}"
    return f"a {block.type.name} block at byte {block.offset} of instant {block.instant}, which is not committed"


def log_blocks(storage: Storage, read: SliceRead, wanted: Counting,
               scan: LogScan | None = None) -> list[tuple[str, LogBlock]]:
    """(path, block) of the data and delete blocks of a slice's log files that a reader merges, in
    order (see the module doc); HudiFormatError naming the file for damage. `scan` counts the blocks met."""
    blocks: list[tuple[str, LogBlock]] = []
    scan = scan if scan is not None else LogScan()
    for path, written in read.logs:
        for block in read_blocks(storage.read_bytes(path)):
            scan.blocks += 1
            scan.rollback_blocks += block.type == BlockType.COMMAND
            scan.corrupt_blocks += block.type == BlockType.CORRUPT
            if block.type in (*DATA_BLOCKS, BlockType.DELETE) and block.instant in wanted:
                if Header.COMPACTED_BLOCK_TIMES in block.header:
                    raise UnsupportedTableError(f"{path}: a log-compacted block at byte {block.offset}: log "
                                                "compaction (logcompaction) is not supported")
                blocks.append((path, block))
                continue
            if block.type == BlockType.HFILE_DATA and block.instant in wanted:
                raise UnsupportedTableError(f"{path}: an HFile data block at byte {block.offset}: tablespec reads "
                                            "Avro and Parquet data blocks of a data table")
            if block.type == BlockType.COMMAND:
                try:
                    target = rollback_target(block)
                except HudiFormatError as e:
                    raise HudiFormatError(f"{path}: {e} (byte {block.offset})") from None
                blocks = [(p, b) for p, b in blocks if b.instant != target]
                continue
            for start, end, instant in written:
                if start <= block.offset < end:
                    raise LogFileDamaged(path, f"{_skipped(block)}, in the bytes completed deltacommit {instant} wrote")
    return blocks


def damaged(path: str, block: LogBlock, error: Exception) -> LogFileDamaged:
    """A counting block that does not decode, as the one line naming its file."""
    return LogFileDamaged(path, f"the {block.type.name} block at byte {block.offset} (instant {block.instant}) "
                                f"does not decode: {error}")


def decoded(path: str, block: LogBlock) -> None:
    """Decode a counting data or delete block, for checking: LogFileDamaged naming the file when it does not."""
    try:
        if block.type == BlockType.AVRO_DATA:
            avro_records(block)
        elif block.type == BlockType.PARQUET_DATA:
            parquet_block_table(block)
        elif block.type == BlockType.DELETE:
            delete_records(block)
    except Exception as e:  # noqa: BLE001 - fastavro and pyarrow raise several types for bytes that are not records
        raise damaged(path, block, e) from None


def damaged_logs(storage: Storage, timeline: Timeline, slices: Iterable[FileSlice]) -> list[LogFileDamaged]:
    """Each slice's first damaged log file (every block that counts read and decoded), for `verify`."""
    wanted = counting(timeline)
    found = []
    for read in slice_reads(timeline, [s for s in slices if s.log_files], wanted):
        try:
            for path, block in log_blocks(storage, read, wanted):
                decoded(path, block)
        except LogFileDamaged as e:
            found.append(e)
    return found


"""Where the metadata table keeps things, and its own timeline and file slices.

The metadata table's instants are the data table's (a deltacommit per data instant) plus its
own, suffixed: `<data instant>010` initializes a partition (`00000000000000010` on a table
without instants), `<deltacommit>001` compacts. Its instant times are thus 17 or 20 digits,
which the data timeline's `Instant` refuses, so this module names them itself. A compaction
is requested and inflight as `compaction`, completed as `commit`.

Hudi 1.x (data table versions 8 and 9) lays the metadata table out differently; `Format` is
the one place that tells the two apart (see `Format.of`): the timeline sits in
`.hoodie/metadata/.hoodie/timeline/`, a completed instant is named
`<requested>_<completion>.<action>` and holds Avro, each deltacommit writes a new log file named
by its own instant (version 1), compactions take a new instant time, and a log file belongs to
the newest file slice whose base instant is before the log's completion time.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from tablespec.errors import HudiFormatError
from tablespec.hudi.config import META_FOLDER, TableConfig, timeline_layout
from tablespec.hudi.formats.logfile import LogBlock
from tablespec.hudi.formats.naming import LogFileName
from tablespec.hudi.io import Storage, join, join_inside

FOLDER = "metadata"
FILES = "files"
FILE_ID = "files-0000-0"                      # the files partition's single file group
SECONDARY_INDEX_PREFIX = "secondary_index_"   # a secondary index's partition: this and its name
SOLO_COMMIT_TIMESTAMP = "00000000000000"        # Hudi's instant before any instant
INIT_SUFFIX, COMPACTION_SUFFIX = "010", "001"
WRITE_TOKEN = "0-0-0"
HFILE = ".hfile"

DELTA_COMMIT, COMMIT, COMPACTION = "deltacommit", "commit", "compaction"
_INSTANT = re.compile(r"(?P<ts>\d{14,20})(?:_(?P<completion>\d{17}))?\.(?P<action>[a-z]+)"
                      r"(?:\.(?P<state>requested|inflight))?")
TIMELINE_FOLDER = "timeline"       # Hudi 1.x: the metadata table's timeline below its .hoodie/


@dataclass(frozen=True)
class Format:
    """How a metadata table is laid out: Hudi 0.15's (`timeline` 1, data table version 6) or
    Hudi 1.x's (`timeline` 2, versions 8 and 9)."""
    timeline: int = 1

    @classmethod
    def of(cls, config: TableConfig | None) -> Format:
        """The metadata table's format follows its data table's timeline layout: the one place that decides."""
        return V2 if timeline_layout(config) == 2 else V1

    @property
    def is_1x(self) -> bool:
        return self.timeline == 2


V1, V2 = Format(1), Format(2)
_BASE = re.compile(rf"(?P<file_id>[^_.][^_]*)_(?P<token>\d+-\d+-\d+)_(?P<instant>\d{{14,20}}){re.escape(HFILE)}")


def table_path(base: str) -> str:
    """The metadata table's base path."""
    return join(base, META_FOLDER, FOLDER)


def meta_path(base: str) -> str:
    """The metadata table's `.hoodie` folder."""
    return join(table_path(base), META_FOLDER)


def timeline_path(base: str, fmt: Format = V1) -> str:
    """The folder of the metadata table's active timeline."""
    return join(meta_path(base), TIMELINE_FOLDER) if fmt.is_1x else meta_path(base)


def partition_path(base: str, partition: str = FILES) -> str:
    """A metadata partition's folder; its name may come from hoodie.properties: kept inside the metadata table."""
    return join_inside(table_path(base), partition, origin=f"metadata table partition {partition!r}")


def instant_file(timestamp: str, action: str, state: str = "completed", completion: str | None = None) -> str:
    """An instant's file name (`completion`: Hudi 1.x's completed files carry it)."""
    done = COMMIT if action == COMPACTION else action
    if state != "completed":
        return f"{timestamp}.{action}.{state}"
    return f"{timestamp}_{completion}.{done}" if completion else f"{timestamp}.{done}"


def base_file_name(instant: str, file_id: str = FILE_ID, token: str = WRITE_TOKEN) -> str:
    return f"{file_id}_{token}_{instant}{HFILE}"


def parse_base_file(name: str) -> tuple[str, str] | None:
    """(file id, base instant) of a metadata base file's name, None for any other name."""
    m = _BASE.fullmatch(name)
    return (m["file_id"], m["instant"]) if m else None


INIT_1X = "0" * 17     # Hudi 1.2's initializing deltacommit of the files partition (measured)


def init_instant(latest_data_instant: str | None, fmt: Format = V1) -> str:
    """The deltacommit that initializes the files partition: the data table's latest completed
    instant (any action) with `010` appended (0.15); all zeros, whatever the data table holds (1.x)."""
    if fmt.is_1x:
        return INIT_1X
    return (latest_data_instant or SOLO_COMMIT_TIMESTAMP) + INIT_SUFFIX


@dataclass(frozen=True)
class MetaInstant:
    timestamp: str
    action: str                  # deltacommit, compaction (completed: commit), clean, rollback, ...
    state: str                   # requested, inflight, completed
    completion: str | None = None   # Hudi 1.x: the completion time its completed file names

    @property
    def completed(self) -> bool:
        return self.state == "completed"

    @property
    def file_name(self) -> str:
        return instant_file(self.timestamp, self.action, self.state, self.completion)


def timeline(storage: Storage, base: str, fmt: Format = V1) -> list[MetaInstant]:
    """The metadata table's active timeline: each instant once, in its most advanced state,
    in time order."""
    order = {"requested": 0, "inflight": 1, "completed": 2}
    latest: dict[str, MetaInstant] = {}
    for info in storage.list_dir(timeline_path(base, fmt)):
        if info.is_dir:
            continue
        m = _INSTANT.fullmatch(info.name)
        if (m is None or bool(m["completion"]) != (fmt.is_1x and not m["state"])
                or (m["action"] == "inflight" and not m["state"])):   # `T.inflight` is a data-table commit name only
            if info.name[:1].isdigit():   # skipped, a completed instant would read as pending: refused
                raise HudiFormatError(f"{info.path}: not a metadata table timeline file name; restore its name "
                                      "or move it out of the timeline")
            continue
        state = m["state"] or "completed"
        action = m["action"]
        instant = MetaInstant(m["ts"], COMPACTION if action == COMMIT else action, state, m["completion"])
        old = latest.get(instant.timestamp)
        if old is None or order[state] > order[old.state]:
            latest[instant.timestamp] = instant
    return sorted(latest.values(), key=lambda i: i.timestamp)


def stored_format(storage: Storage, base: str) -> Format:
    """The metadata table's format from its own files (Hudi 1.x's timeline folder holds instants),
    for readers given plain arguments (executors) rather than the table's config."""
    return V2 if timeline(storage, base, V2) else V1


@dataclass(frozen=True)
class Slice:
    """The latest file slice of a metadata file group: its base file (name, size) and log files
    (oldest first), as of the completed instants."""
    partition: str
    file_id: str
    base_instant: str
    base_file: str | None
    base_size: int
    log_files: tuple[tuple[LogFileName, int], ...]

    @property
    def next_log_version(self) -> int:
        return max((n.version for n, _ in self.log_files), default=0) + 1

    def new_log(self, instant: str, token: str, fmt: Format = V1) -> LogFileName:
        """The log file a deltacommit at `instant` appends to this slice: the next version on the
        base instant (0.15), or version 1 named by the deltacommit itself (1.x)."""
        if fmt.is_1x:
            return LogFileName(self.file_id, instant, 1, token)
        return LogFileName(self.file_id, self.base_instant, self.next_log_version, token)


@dataclass(frozen=True)
class LogAppend:
    """What a deltacommit appends to one file group: a new log file continuing `slice`, of `blocks`
    holding `records` records (written or deleted)."""
    slice: Slice
    blocks: tuple[LogBlock, ...]
    records: int


def completions(metadata: list[MetaInstant]) -> dict[str, str]:
    """Completed instant -> its completion time (0.15: its own time): what file slicing needs."""
    return {i.timestamp: i.completion or i.timestamp for i in metadata if i.completed}


def latest_slice(storage: Storage, base: str, completed: Mapping[str, str] | set[str], partition: str = FILES,
                 file_id: str = FILE_ID, fmt: Format = V1) -> Slice | None:
    """The file group's newest slice whose base instant is completed (see `latest_slices`)."""
    return next((s for s in latest_slices(storage, base, completed, partition, fmt) if s.file_id == file_id), None)


def latest_slices(storage: Storage, base: str, completed: Mapping[str, str] | set[str], partition: str = FILES,
                  fmt: Format = V1) -> list[Slice]:
    """The newest slice of each file group of a metadata partition (`completed`: instant ->
    completion time, `completions`); Hudi 1.x's in `_latest_slices_1x`, 0.15's here."""
    if fmt.is_1x:
        assert isinstance(completed, Mapping)
        return _latest_slices_1x(storage, base, completed, partition)
    return _latest_slices(storage, base, set(completed), partition)


def _listing(storage: Storage, base: str, partition: str) -> tuple[dict[str, dict[str, tuple[str, int]]],
                                                                 dict[str, list[tuple[LogFileName, int]]]]:
    """One listing of a metadata partition, both slicings' input: file id -> base instant ->
    (base file name, size), and file id -> its log files (name, size), as listed."""
    bases: dict[str, dict[str, tuple[str, int]]] = {}
    logs: dict[str, list[tuple[LogFileName, int]]] = {}
    for info in storage.list_dir(partition_path(base, partition)):
        if info.is_dir:
            continue
        m = _BASE.fullmatch(info.name)
        if m:
            bases.setdefault(m["file_id"], {})[m["instant"]] = (info.name, info.size)
            continue
        log = LogFileName.parse(info.name)
        if log is not None and log.extension == "log":
            logs.setdefault(log.file_id, []).append((log, info.size))
    return bases, logs


def _latest_slices_1x(storage: Storage, base: str, completed: Mapping[str, str], partition: str) -> list[Slice]:
    """Hudi 1.x's slicing: a file group's newest completed base file (none yet: its first log file)
    starts its latest slice; the slice's log files are the completed deltacommits' whose completion
    time is after that base instant, oldest completion first (a pending deltacommit's log file is
    no one's yet)."""
    listed, listed_logs = _listing(storage, base, partition)
    bases = {f: done for f, own in listed.items() if (done := {i: v for i, v in own.items() if i in completed})}
    logs = {f: kept for f, own in listed_logs.items() if (kept := [(n, z) for n, z in own if n.base_instant in completed])}
    slices = []
    for file_id in sorted(set(bases) | set(logs)):
        # a file group never compacted (a record index file group without keys) starts with its first log
        instant = max(bases[file_id]) if file_id in bases else min(n.base_instant for n, _ in logs[file_id])
        name, size = bases[file_id][instant] if file_id in bases else (None, 0)
        found = sorted(((n, z) for n, z in logs.get(file_id, []) if name is None or completed[n.base_instant] > instant),
                       key=lambda e: (completed[e[0].base_instant], e[0].base_instant, e[0].version))
        slices.append(Slice(partition, file_id, instant, name, size, tuple(found)))
    return slices


def _latest_slices(storage: Storage, base: str, completed: set[str], partition: str = FILES) -> list[Slice]:
    """The newest slice of each file group of a metadata partition, sorted by file id (the order
    Hudi maps keys to file groups in). A slice's base instant is the newest completed instant of
    a base file or, for a file group whose base file was never written (no records), of its log
    files. Every log file on that base instant is listed (also those of failed attempts: readers
    skip their blocks by instant, and a new log file must take a version none of them has)."""
    listed, logs = _listing(storage, base, partition)
    bases = {f: {i: v for i, v in own.items() if i in completed} for f, own in listed.items()}
    slices = []
    for file_id in sorted(set(bases) | set(logs)):
        own = bases.get(file_id, {})
        instant = max(own, default=None) or max((n.base_instant for n, _ in logs.get(file_id, [])
                                                 if n.base_instant in completed), default=None)
        if instant is None:
            continue
        name, size = own.get(instant, (None, 0))
        found = sorted(((n, z) for n, z in logs.get(file_id, []) if n.base_instant == instant),
                       key=lambda e: (e[0].version, e[0].write_token or ""))
        slices.append(Slice(partition, file_id, instant, name, size, tuple(found)))
    return slices

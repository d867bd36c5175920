"""Where the metadata table keeps things, and its own timeline and file slices.

The metadata table's instants are the data table's (a deltacommit per data instant) plus its
own, suffixed: `<data instant>010` initializes a partition (`00000000000000010` on a table
without instants), `<deltacommit>001` compacts. Its instant times are thus 17 or 20 digits,
which the data timeline's `Instant` refuses, so this module names them itself. A compaction
is requested and inflight as `compaction`, completed as `commit`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tablespec.hudi.config import META_FOLDER
from tablespec.hudi.io import Storage, join
from tablespec.hudi.logfile import LogBlock
from tablespec.hudi.naming import LogFileName

FOLDER = "metadata"
FILES = "files"
FILE_ID = "files-0000-0"                      # the files partition's single file group
SOLO_COMMIT_TIMESTAMP = "00000000000000"        # Hudi's instant before any instant
INIT_SUFFIX, COMPACTION_SUFFIX = "010", "001"
WRITE_TOKEN = "0-0-0"
HFILE = ".hfile"

DELTA_COMMIT, COMMIT, COMPACTION = "deltacommit", "commit", "compaction"
_INSTANT = re.compile(r"(?P<ts>\d{14,20})\.(?P<action>[a-z]+)(?:\.(?P<state>requested|inflight))?")
_BASE = re.compile(rf"(?P<file_id>[^_.][^_]*)_(?P<token>\d+-\d+-\d+)_(?P<instant>\d{{14,20}}){re.escape(HFILE)}")


def table_path(base: str) -> str:
    """The metadata table's base path."""
    return join(base, META_FOLDER, FOLDER)


def meta_path(base: str) -> str:
    """The metadata table's `.hoodie` folder."""
    return join(table_path(base), META_FOLDER)


def partition_path(base: str, partition: str = FILES) -> str:
    return join(table_path(base), partition)


def instant_file(timestamp: str, action: str, state: str = "completed") -> str:
    done = COMMIT if action == COMPACTION else action
    return f"{timestamp}.{done}" if state == "completed" else f"{timestamp}.{action}.{state}"


def base_file_name(instant: str, file_id: str = FILE_ID, token: str = WRITE_TOKEN) -> str:
    return f"{file_id}_{token}_{instant}{HFILE}"


def parse_base_file(name: str) -> tuple[str, str] | None:
    """(file id, base instant) of a metadata base file's name, None for any other name."""
    m = _BASE.fullmatch(name)
    return (m["file_id"], m["instant"]) if m else None


def init_instant(latest_data_instant: str | None) -> str:
    """The deltacommit that initializes the files partition: the data table's latest completed
    instant (any action) with `010` appended."""
    return (latest_data_instant or SOLO_COMMIT_TIMESTAMP) + INIT_SUFFIX


@dataclass(frozen=True)
class MetaInstant:
    timestamp: str
    action: str                  # deltacommit, compaction (completed: commit), clean, rollback, ...
    state: str                   # requested, inflight, completed

    @property
    def completed(self) -> bool:
        return self.state == "completed"


def timeline(storage: Storage, base: str) -> list[MetaInstant]:
    """The metadata table's active timeline: each instant once, in its most advanced state,
    in time order."""
    order = {"requested": 0, "inflight": 1, "completed": 2}
    latest: dict[str, MetaInstant] = {}
    for info in storage.list_dir(meta_path(base)):
        m = _INSTANT.fullmatch(info.name) if not info.is_dir else None
        if m is None:
            continue
        state = m["state"] or "completed"
        action = m["action"]
        if action == "inflight" and state == "completed":      # `T.inflight` is a data-table commit name only
            continue
        instant = MetaInstant(m["ts"], COMPACTION if action == COMMIT else action, state)
        old = latest.get(instant.timestamp)
        if old is None or order[state] > order[old.state]:
            latest[instant.timestamp] = instant
    return sorted(latest.values(), key=lambda i: i.timestamp)


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


@dataclass(frozen=True)
class LogAppend:
    """What a deltacommit appends to one file group: a new log file continuing `slice`, of `blocks`
    holding `records` records (written or deleted)."""
    slice: Slice
    blocks: tuple[LogBlock, ...]
    records: int


def latest_slice(storage: Storage, base: str, completed: set[str], partition: str = FILES,
                 file_id: str = FILE_ID) -> Slice | None:
    """The file group's newest slice whose base instant is completed (see `latest_slices`)."""
    return next((s for s in latest_slices(storage, base, completed, partition) if s.file_id == file_id), None)


def latest_slices(storage: Storage, base: str, completed: set[str], partition: str = FILES) -> list[Slice]:
    """The newest slice of each file group of a metadata partition, sorted by file id (the order
    Hudi maps keys to file groups in). A slice's base instant is the newest completed instant of
    a base file or, for a file group whose base file was never written (no records), of its log
    files. Every log file on that base instant is listed (also those of failed attempts: readers
    skip their blocks by instant, and a new log file must take a version none of them has)."""
    bases: dict[str, dict[str, tuple[str, int]]] = {}
    logs: dict[str, dict[str, list[tuple[LogFileName, int]]]] = {}
    for info in storage.list_dir(partition_path(base, partition)):
        if info.is_dir:
            continue
        m = _BASE.fullmatch(info.name)
        if m and m["instant"] in completed:
            bases.setdefault(m["file_id"], {})[m["instant"]] = (info.name, info.size)
            continue
        log = LogFileName.parse(info.name)
        if log is not None and log.extension == "log":
            logs.setdefault(log.file_id, {}).setdefault(log.base_instant, []).append((log, info.size))
    slices = []
    for file_id in sorted(set(bases) | set(logs)):
        own = bases.get(file_id, {})
        instant = max(own, default=None) or max((i for i in logs.get(file_id, {}) if i in completed), default=None)
        if instant is None:
            continue
        name, size = own.get(instant, (None, 0))
        found = sorted(logs.get(file_id, {}).get(instant, []), key=lambda e: (e[0].version, e[0].write_token or ""))
        slices.append(Slice(partition, file_id, instant, name, size, tuple(found)))
    return slices

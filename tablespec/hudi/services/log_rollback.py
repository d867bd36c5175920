"""Rolling back a failed deltacommit's log blocks on table version 6, as Apache Hudi 0.15 does
(measured): its log files stay, and each file group it appended to (its APPEND markers name the
log files) gets a new log file, the next version after every log file of the slice, holding one
rollback command block (TARGET_INSTANT_TIME: the failed instant; INSTANT_TIME: the rollback).
Readers drop the failed instant's blocks at that command block, also once the timeline is
archived past it. The plan's request per file group names the marked log files
(`logBlocksToBeDeleted`, each with Hudi's stub size 1) and the slice's base instant.
"""
from __future__ import annotations

from typing import Any

from tablespec.hudi.formats.logfile import BlockType, Header, encode_block, read_blocks, rollback_block
from tablespec.hudi.formats.markers import markers
from tablespec.hudi.formats.naming import LogFileName, write_token
from tablespec.hudi.io import Storage, join

ROLLBACK_TOKEN = write_token(0, 0, 0)   # the rollback's own log files are written by the driver


def log_requests(storage: Storage, base: str, instant: str) -> list[dict[str, Any]]:
    """HoodieRollbackRequests for the log files `instant`'s APPEND markers name, one per file group."""
    grouped: dict[tuple[str, str, str], dict[str, int]] = {}
    for m in markers(storage, base, instant):
        name = LogFileName.parse(m.file_name)
        if m.kind == "APPEND" and name is not None:
            grouped.setdefault((m.partition, name.file_id, name.base_instant), {})[m.file_name] = 1
    return [{"partitionPath": p, "fileId": f, "latestBaseInstant": b, "filesToBeDeleted": [], "logBlocksToBeDeleted": logs}
            for (p, f, b), logs in sorted(grouped.items())]


SliceLogs = dict[tuple[str, str, str], list[tuple[LogFileName, str, int]]]


def slice_logs(storage: Storage, base: str, requests: list[dict[str, Any]]) -> SliceLogs:
    """(partition, file id, base instant) -> the slice's log files (name, path, size), oldest first,
    each requested partition listed once (one request per file group, many in a partition)."""
    out: SliceLogs = {}
    for partition in sorted({r["partitionPath"] for r in requests if r.get("logBlocksToBeDeleted")}):
        for info in storage.list_dir(join(base, partition) if partition else base):
            name = LogFileName.parse(info.name)
            if name is not None:
                out.setdefault((partition, name.file_id, name.base_instant), []).append((name, info.path, info.size))
    for logs in out.values():
        logs.sort(key=lambda f: (f[0].version, f[0].write_token or ""))
    return out


def _of(logs: SliceLogs, request: dict[str, Any]) -> list[tuple[LogFileName, str, int]]:
    return logs.get((request["partitionPath"], request["fileId"], request["latestBaseInstant"]), [])


def _rolled_back_in(storage: Storage, path: str, target: str) -> bool:
    return any(b.type == BlockType.COMMAND and b.header.get(Header.TARGET_INSTANT_TIME) == target
               for b in read_blocks(storage.read_bytes(path)))


def append_rollback_blocks(storage: Storage, base: str, rollback_ts: str, target: str,
                           requests: list[dict[str, Any]], listed: SliceLogs | None = None) -> dict[str, dict[str, int]]:
    """Give each requested file group its rollback command block (once: a resumed rollback finds the
    block an earlier attempt wrote). `listed`: `slice_logs` of the requests, listed before (else here).
    Returns partition -> rollback log file path -> size."""
    listed = slice_logs(storage, base, requests) if listed is None else listed
    written: dict[str, dict[str, int]] = {}
    for request in requests:
        if not request.get("logBlocksToBeDeleted"):
            continue
        partition, logs = request["partitionPath"], _of(listed, request)
        done = next(((path, size) for name, path, size in logs
                     if name.write_token == ROLLBACK_TOKEN and _rolled_back_in(storage, path, target)), None)
        if done is None:
            name = LogFileName(request["fileId"], request["latestBaseInstant"],
                               max((n.version for n, _, _ in logs), default=0) + 1, ROLLBACK_TOKEN)
            data = encode_block(rollback_block(rollback_ts, target))
            path = join(base, partition, name.format()) if partition else join(base, name.format())
            storage.write_bytes(path, data)
            done = (path, len(data))
        written.setdefault(partition, {})[done[0]] = done[1]
    return written


def failed_log_files(storage: Storage, base: str, requests: list[dict[str, Any]],
                     listed: SliceLogs | None = None) -> dict[str, dict[str, int]]:
    """partition -> name -> size of the failed write's log files that exist (the metadata table lists
    them: they stay on storage). `listed`: `slice_logs` of the requests, listed before (else here)."""
    listed = slice_logs(storage, base, requests) if listed is None else listed
    out: dict[str, dict[str, int]] = {}
    for request in requests:
        named = set(request.get("logBlocksToBeDeleted") or ())
        for name, path, size in _of(listed, request) if named else ():
            if name.format() in named:
                out.setdefault(request["partitionPath"], {})[path.rsplit("/", 1)[-1]] = size
    return out

"""Hudi's write markers: which data files a write created (CREATE) or appended to (APPEND), kept
in `.hoodie/.temp/<instant>/` while the write runs, so that a rollback of a failed write finds
its log files (named by their slice's base instant on table version 6, not by the write).

Two layouts, both read: direct markers (an empty file `<partition>/<file name>.marker.<TYPE>`
per data file; tablespec writes these) and the timeline server's (`MARKERS.type` holding
`TIMELINE_SERVER_BASED`, then `MARKERS0`, `MARKERS1`, ... each listing marker paths one a line;
Apache Hudi 0.15's Spark writers default to it).
"""
from __future__ import annotations

from dataclasses import dataclass

from tablespec.errors import HudiFormatError
from tablespec.hudi.config import META_FOLDER
from tablespec.hudi.io import Storage, join, outside_reason

MARKER_FOLDER = ".temp"
_SUFFIX = ".marker."
KINDS = ("CREATE", "MERGE", "APPEND")
_TYPE_FILE = "MARKERS.type"


@dataclass(frozen=True)
class Marker:
    partition: str
    file_name: str
    kind: str           # CREATE | MERGE | APPEND


def marker_dir(base: str, instant: str) -> str:
    return join(base, META_FOLDER, MARKER_FOLDER, instant)


def write_marker(storage: Storage, base: str, instant: str, partition: str, file_name: str, kind: str) -> None:
    """The direct marker of `file_name`, written before the file itself."""
    rel = f"{partition}/{file_name}" if partition else file_name
    storage.write_bytes(join(marker_dir(base, instant), f"{rel}{_SUFFIX}{kind}"), b"")


def _parse(rel: str, origin: str) -> Marker:
    head, sep, kind = rel.rpartition(_SUFFIX)
    if not sep or kind not in KINDS or (reason := outside_reason(head)) is not None:
        raise HudiFormatError(f"{origin}: {rel!r} is not a marker of a file inside the table"
                              f"{'' if not sep or kind not in KINDS else f' ({reason})'}")
    partition, _, name = head.rpartition("/")
    return Marker(partition, name, kind)


def markers(storage: Storage, base: str, instant: str) -> list[Marker]:
    """The markers of `instant`'s write, in either layout ([] when it left none)."""
    folder = marker_dir(base, instant)
    top = storage.list_dir(folder)
    if any(i.name == _TYPE_FILE for i in top):
        found = []
        for info in top:
            if info.name.startswith("MARKERS") and info.name[7:].isdigit():
                lines = storage.read_text(info.path).split("\n")
                found += [_parse(line, info.path) for line in lines if line.strip()]
        return found
    prefix = folder.rstrip("/") + "/"
    return [_parse(info.path[len(prefix):], folder) for info in storage.walk_files(folder)
            if _SUFFIX in info.name and not info.name.endswith(".crc")]   # a log file's marker starts with "."

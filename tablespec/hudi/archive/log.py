"""The archive log: `.hoodie/archived/.commits_.archive.<version>_<writeToken>` files of Avro
data blocks of HoodieArchivedMetaEntry records (entry.py), in the log format of logfile.py.

Where the file system cannot append (local disks, object stores) Hudi 0.15 writes each archiving
run as a new version of the log, `.commits_.archive.<N+1>_1-0-1`, in blocks of at most
`hoodie.commits.archival.batch` (10) records; readers take the files in version order. tablespec
does the same, creating the new version whole and only if no one else created it (so a crash
leaves the run's file complete or absent, and two archivers cannot write one version).
"""
from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from tablespec.errors import HudiFormatError
from tablespec.hudi import keys
from tablespec.hudi.archive.entry import ENTRY_SCHEMA
from tablespec.hudi.config import META_FOLDER, PROPERTIES_FILE, archive_folder
from tablespec.hudi.formats.logfile import BlockType, Header, avro_block, avro_records, encode_block, read_blocks
from tablespec.hudi.io import FileInfo, Storage, join, join_inside

DEFAULT_FOLDER = "archived"      # hoodie.archivelog.folder
WRITE_TOKEN = "1-0-1"            # Hudi's write token for logs written outside a Spark task
BATCH_SIZE = 10                  # hoodie.commits.archival.batch
_NAME = re.compile(r"\.commits_\.archive\.(?P<version>\d+)_(?P<token>\d+-\d+-\d+)")


@dataclass(frozen=True)
class ArchiveFile:
    version: int
    info: FileInfo

    @property
    def path(self) -> str:
        return self.info.path


def folder_path(base: str, folder: str = DEFAULT_FOLDER) -> str:
    """The archive folder of the table at `base` (`folder` is hoodie.archivelog.folder)."""
    return join_inside(join(base, META_FOLDER), folder, origin=f"{PROPERTIES_FILE} {keys.ARCHIVELOG_FOLDER.name}")


def folder_of(config: Any) -> str:
    """The archive folder (relative to .hoodie/) a table's config (a TableConfig, or None: no table)
    names; versions 8 and 9: their LSM history's."""
    return archive_folder(config) if config is not None else DEFAULT_FOLDER


def file_name(version: int) -> str:
    return f".commits_.archive.{version}_{WRITE_TOKEN}"


def archive_files(storage: Storage, base: str, folder: str = DEFAULT_FOLDER) -> list[ArchiveFile]:
    """The archive log's files, oldest version first (checksum sidecars and other files ignored)."""
    return archive_files_of(storage.list_dir(folder_path(base, folder)))


def archive_files_of(listed: Iterable[FileInfo]) -> list[ArchiveFile]:
    """The archive log's files among the entries of the archive folder's listing, oldest version first."""
    out = [ArchiveFile(int(m["version"]), f) for f in listed if not f.is_dir and (m := _NAME.fullmatch(f.name))]
    return sorted(out, key=lambda a: (a.version, a.info.name))


def read_records(storage: Storage, file: ArchiveFile, completed_only: bool = False) -> Iterator[dict[str, Any]]:
    """The entries of one archive file. A torn block (a writer that died appending) is skipped,
    as Hudi's reader skips it; blocks of other types are not Hudi's and are refused.
    `completed_only`: the entries of completed states only, the others not decoded (see `_completed`)."""
    for block in read_blocks(storage.read_bytes(file.path)):
        if block.type == BlockType.CORRUPT:
            continue
        if block.type != BlockType.AVRO_DATA:
            raise HudiFormatError(f"{file.path}: unexpected {block.type.name} block in the archived timeline")
        wanted = _completed if completed_only and _state_is_text(block.header.get(Header.SCHEMA)) else None
        try:
            records = avro_records(block, wanted=wanted)
        except (HudiFormatError, ValueError, EOFError) as e:
            raise HudiFormatError(f"{file.path}: unreadable archived entries: {e}") from None
        yield from (r for r in records if r.get("actionState") == COMPLETED) if completed_only else records


COMPLETED = "COMPLETED"
_COMPLETED_TEXT = b"\x12" + COMPLETED.encode()   # "COMPLETED" as an Avro string: its length 9 (zigzag 18), its bytes


def _completed(raw: bytes) -> bool:
    """Whether an encoded entry may be a completed state's: one is only if it holds its actionState
    "COMPLETED" as an Avro string (the others are skipped undecoded; one that holds those bytes
    elsewhere is decoded, and dropped by its actionState)."""
    return _COMPLETED_TEXT in raw


@functools.lru_cache(maxsize=16)
def _state_is_text(schema: str | None) -> bool:
    """Whether a block's writer schema types actionState as a string (Hudi's: null or string), so
    that a completed entry's bytes hold the text; any other schema has every entry decoded."""
    try:
        fields = json.loads(schema or "").get("fields") or []
        kind = next(f["type"] for f in fields if isinstance(f, dict) and f.get("name") == "actionState")
    except (ValueError, AttributeError, TypeError, KeyError, StopIteration):
        return False
    branches = kind if isinstance(kind, list) else [kind]
    return any(map(_is_string, branches)) and all(b == "null" or _is_string(b) for b in branches)


def _is_string(kind: Any) -> bool:
    """An Avro string type: "string", or {"type": "string", ...} (as Java-generated schemas write it)."""
    return kind == "string" or (isinstance(kind, dict) and kind.get("type") == "string")


def encode(records: Sequence[dict[str, Any]]) -> bytes:
    """An archive file's bytes: `records` in Avro data blocks of at most BATCH_SIZE records."""
    return b"".join(encode_block(avro_block(records[i:i + BATCH_SIZE], ENTRY_SCHEMA))
                    for i in range(0, len(records), BATCH_SIZE))


def write_version(storage: Storage, base: str, records: Sequence[dict[str, Any]],
                  folder: str = DEFAULT_FOLDER) -> str:
    """Write `records` as the archive log's next version; returns its path. Fails, writing
    nothing, when another writer created that version first."""
    existing = archive_files(storage, base, folder)
    version = existing[-1].version + 1 if existing else 1
    path = join(folder_path(base, folder), file_name(version))
    try:
        storage.create_exclusive(path, encode(records))
    except FileExistsError:
        raise HudiFormatError(f"{path} appeared while archiving: another writer is archiving this table") from None
    return path

"""The archived timeline of table versions 8 and 9 (Apache Hudi 1.x), read: an LSM tree of Parquet files.

Layout (under `.hoodie/<hoodie.timeline.path>/<hoodie.timeline.history.path>/`, by default
`.hoodie/timeline/history/`): `_version_` holds the number N of the current manifest, and
`manifest_N` (JSON: `{"files": [{"fileName", "fileLen"}]}`) lists the Parquet files that make up the
history now; files its compaction replaced may still lie around and are not read. Each file
(`<min>_<max>_<level>.parquet`) holds one row per archived *completed* instant
(HoodieLSMTimelineInstant): `instantTime`, `completionTime`, `action` (as completed), `metadata`
(the completed file's bytes: Avro) and `plan` (the requested file's bytes, where it had content).
"""
from __future__ import annotations

import io
import json
from typing import Any

import pyarrow.parquet as pq

from tablespec.errors import HudiFormatError
from tablespec.hudi import keys
from tablespec.hudi.config import META_FOLDER, PROPERTIES_FILE, archive_folder
from tablespec.hudi.io import Storage, join, join_inside

VERSION_FILE = "_version_"
MANIFEST_PREFIX = "manifest_"
COLUMNS = ["instantTime", "completionTime", "action", "metadata", "plan"]


def history_folder(table: Any) -> str:
    """The LSM history's folder of a `HudiTable` of version 8 or 9."""
    return join_inside(join(table.base, META_FOLDER), archive_folder(table.config),
                       origin=f"{PROPERTIES_FILE} {keys.TIMELINE_HISTORY_PATH.name}")


def manifest_files(storage: Storage, folder: str) -> list[str]:
    """The Parquet files the current manifest lists (none: nothing was archived yet)."""
    try:
        version = storage.read_bytes(join(folder, VERSION_FILE)).decode("ascii").strip()
    except (FileNotFoundError, NotADirectoryError):
        return []
    manifest = join(folder, MANIFEST_PREFIX + version)
    try:
        files = json.loads(storage.read_bytes(manifest))["files"]
        return [join(folder, f["fileName"]) for f in files]
    except (FileNotFoundError, ValueError, KeyError, TypeError) as e:
        raise HudiFormatError(f"{manifest}: unreadable LSM timeline manifest: {e}") from None


def lsm_rows(table: Any) -> list[tuple[dict[str, Any], str]]:
    """Every archived instant's row of a version-8/9 `HudiTable`, with the file it came from."""
    storage, rows = table.storage, []
    for path in manifest_files(storage, history_folder(table)):
        try:
            data = pq.read_table(io.BytesIO(storage.read_bytes(path)), columns=COLUMNS)
        except (OSError, ValueError, KeyError) as e:
            raise HudiFormatError(f"{path}: unreadable LSM timeline file: {e}") from None
        rows += [(r, path) for r in data.to_pylist()]
    return rows

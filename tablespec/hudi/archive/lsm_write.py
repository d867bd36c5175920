"""The LSM history of table versions 8 and 9, written as Apache Hudi 1.2's LSMTimelineWriter does.

A batch of archived instants becomes one new layer-0 file (`<min>_<max>_0.parquet`), then a new
manifest (`manifest_<N+1>`: the previous one's files plus it) and last the `_version_` file
naming it: readers (lsm.py) see the batch only once `_version_` moves, so a file a crash leaves
unlisted is never read (and the next write of the same batch replaces it). Compaction follows
Hudi's: once a layer holds `batch_size` files (hoodie.timeline.compaction.batch.size, 10), its
oldest `batch_size` files are merged into one file of the next layer (a new manifest replaces
them), layer after layer; then cleaning keeps the latest `retained + layers compacted` manifests
(hoodie.timeline.manifest.retained.versions, 3) and deletes older manifests and every Parquet
file none of the kept ones lists. Callers hold Hudi's transaction lock.
"""
from __future__ import annotations

import io
import json
import re
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tablespec.errors import HudiFormatError
from tablespec.faults import crash_point
from tablespec.hudi.archive.lsm import COLUMNS, MANIFEST_PREFIX, VERSION_FILE
from tablespec.hudi.io import Storage, join

COMPACTION_BATCH_SIZE = 10      # hoodie.timeline.compaction.batch.size
RETAINED_MANIFESTS = 3          # hoodie.timeline.manifest.retained.versions
_FILE = re.compile(r"(\d+)_(\d+)_(\d+)\.parquet")
_MANIFEST = re.compile(re.escape(MANIFEST_PREFIX) + r"(\d+)")

# HoodieLSMTimelineInstant, the LSM history's row, as Hudi 1.2's Parquet files declare it.
_STRING = ["null", {"type": "string", "avro.java.string": "String"}]
LSM_AVRO_SCHEMA = {"type": "record", "name": "HoodieLSMTimelineInstant", "namespace": "org.apache.hudi.avro.model",
                   "fields": [{"name": "instantTime", "type": _STRING, "default": None},
                              {"name": "completionTime", "type": _STRING, "default": None},
                              {"name": "action", "type": _STRING, "default": None},
                              {"name": "metadata", "type": ["null", "bytes"], "default": None},
                              {"name": "plan", "type": ["null", "bytes"], "default": None},
                              {"name": "version", "type": "int", "default": 1}]}
LSM_SCHEMA = pa.schema([("instantTime", pa.string()), ("completionTime", pa.string()), ("action", pa.string()),
                        ("metadata", pa.binary()), ("plan", pa.binary()), pa.field("version", pa.int32(), False)],
                       metadata={"parquet.avro.schema": json.dumps(LSM_AVRO_SCHEMA, separators=(",", ":")),
                                 "writer.model.name": "avro"})


def file_layer(name: str) -> int | None:
    """The layer of an LSM history file named `<min>_<max>_<layer>.parquet` (None: not one)."""
    m = _FILE.fullmatch(name)
    return int(m.group(3)) if m else None


def lsm_file(rows: Sequence[dict[str, Any]], layer: int = 0) -> tuple[str, bytes]:
    """One file of the LSM history: its name (`<min>_<max>_<layer>.parquet`) and bytes, rows
    sorted by instant time as Hudi writes them."""
    rows = sorted(rows, key=lambda r: r["instantTime"])
    out = io.BytesIO()
    pq.write_table(pa.Table.from_pylist([{**r, "version": r.get("version", 1)} for r in rows], schema=LSM_SCHEMA),
                   out, compression="gzip")
    return f"{rows[0]['instantTime']}_{rows[-1]['instantTime']}_{layer}.parquet", out.getvalue()


def current_version(storage: Storage, folder: str) -> int:
    """The number of the current manifest (0: none yet)."""
    try:
        raw = storage.read_bytes(join(folder, VERSION_FILE)).decode("ascii").strip()
    except (FileNotFoundError, NotADirectoryError):
        return 0
    if not raw.isdigit():
        raise HudiFormatError(f"{join(folder, VERSION_FILE)}: not a manifest version: {raw!r}")
    return int(raw)


def read_manifest(storage: Storage, folder: str, version: int) -> list[dict[str, Any]]:
    """The file entries (`fileName`, `fileLen`) of manifest `version` (none for version 0)."""
    if version == 0:
        return []
    path = join(folder, f"{MANIFEST_PREFIX}{version}")
    try:
        return list(json.loads(storage.read_bytes(path))["files"])
    except (FileNotFoundError, ValueError, KeyError, TypeError) as e:
        raise HudiFormatError(f"{path}: unreadable LSM timeline manifest: {e}") from None


def update_manifest(storage: Storage, folder: str, add: tuple[str, int], remove: Sequence[str] = ()) -> int:
    """A new manifest: the current one's files without `remove`, with `add` (name, length); then
    `_version_` names it (the switch). Returns the new version."""
    version = current_version(storage, folder)
    files = [f for f in read_manifest(storage, folder, version) if f["fileName"] not in set(remove) | {add[0]}]
    files = sorted(files + [{"fileName": add[0], "fileLen": add[1]}], key=lambda f: f["fileName"])
    storage.write_bytes(join(folder, f"{MANIFEST_PREFIX}{version + 1}"),
                        json.dumps({"files": files}, indent=2).encode())
    crash_point("lsm_manifest_written")
    storage.write_atomic(join(folder, VERSION_FILE), str(version + 1).encode("ascii"))
    return version + 1


def write_batch(storage: Storage, folder: str, rows: Sequence[dict[str, Any]]) -> str:
    """Step 1 of an archiving run: `rows` as a new layer-0 file, listed by a new manifest.
    Returns the file's name."""
    name, data = lsm_file(rows)
    storage.mkdirs(folder)
    storage.write_bytes(join(folder, name), data)
    crash_point("lsm_file_written")
    update_manifest(storage, folder, (name, len(data)))
    return name


def read_file_rows(storage: Storage, path: str) -> list[dict[str, Any]]:
    try:
        return pq.read_table(io.BytesIO(storage.read_bytes(path)), columns=COLUMNS).to_pylist()
    except (OSError, ValueError, KeyError) as e:
        raise HudiFormatError(f"{path}: unreadable LSM timeline file: {e}") from None


def _compact_layer(storage: Storage, folder: str, layer: int, batch_size: int) -> bool:
    """Merge the oldest `batch_size` files of `layer` into one file of the next, when the layer
    has that many (Hudi's doCompact, files far below its 1 GB target). Returns whether it did."""
    entries = read_manifest(storage, folder, current_version(storage, folder))
    names = sorted(f["fileName"] for f in entries if file_layer(f["fileName"]) == layer)
    if len(names) < max(batch_size, 2):
        return False
    chosen = names[:batch_size]
    rows = [r for n in chosen for r in read_file_rows(storage, join(folder, n))]
    first, last = _FILE.fullmatch(chosen[0]), _FILE.fullmatch(chosen[-1])
    assert first is not None and last is not None
    name = f"{first.group(1)}_{last.group(2)}_{layer + 1}.parquet"
    _, data = lsm_file(rows, layer + 1)
    storage.write_bytes(join(folder, name), data)
    update_manifest(storage, folder, (name, len(data)), chosen)
    return True


def clean(storage: Storage, folder: str, extra: int = 0, retained: int = RETAINED_MANIFESTS) -> list[str]:
    """Hudi's cleaning: keep the latest `retained + extra` manifests, delete older manifests first,
    then every LSM file no kept manifest lists. Returns what it deleted."""
    listed = storage.list_dir(folder)
    versions = sorted((int(m.group(1)) for f in listed if (m := _MANIFEST.fullmatch(f.name))), reverse=True)
    keep = retained + extra
    if len(versions) <= keep:
        return []
    kept = {f["fileName"] for v in versions[:keep] for f in read_manifest(storage, folder, v)}
    manifests = [join(folder, f"{MANIFEST_PREFIX}{v}") for v in versions[keep:]]
    storage.delete_files(manifests)
    data = [f.path for f in listed if file_layer(f.name) is not None and f.name not in kept]
    storage.delete_files(data)
    return manifests + data


def compact_and_clean(storage: Storage, folder: str, batch_size: int = COMPACTION_BATCH_SIZE,
                      retained: int = RETAINED_MANIFESTS) -> int:
    """After an archiving run (Hudi's compactAndClean): compact layer 0, then each next layer a
    compaction filled, then clean. Returns the number of layers compacted."""
    layers = 0
    while _compact_layer(storage, folder, layers, batch_size):
        layers += 1
    clean(storage, folder, layers, retained)
    return layers

"""Reading Hudi's record index (the metadata table's `record_index` partition) as Hudi 0.15 and 1.x
do (their records and merging agree; 1.x adds a null `position` the reader ignores).

A key is looked up in its own file group only (`record_index.file_group_index` over the latest
slices sorted by file id): the log blocks that count (`reader.log_blocks`: valid instants, less
rolled back ones) are merged oldest first, the newest record or delete of a key winning; keys the
logs do not settle are sought in the base HFile through its block index, reading (by byte range)
and decoding only the data blocks they fall in. Deleted keys are absent from the answer. Records
in Hudi's stored layout are decoded by `record_index.decode_location`, others by the Avro schema
their file or block names.

Base files never change once written (a new slice is a new file), so a process keeps what it
decoded of them: each read data block as its sorted keys (numpy) and a code per key into the
file's distinct locations (a file's keys share few: one per data file group and inserting
instant), and a file whose blocks are all kept as one array ordered by 64-bit key fingerprints
(an integer search); least recently used dropped past `CACHE_BYTES` (env
TABLESPEC_RECORD_INDEX_CACHE_MB, 0 turns it off). Repeated lookups on a driver or a reused
executor worker then seek in memory, as Hudi's readers do through their block cache. Keys are
encoded and hashed with numpy, not key by key: 100k keys per lookup.
"""
from __future__ import annotations

import functools
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tablespec.errors import HudiFormatError
from tablespec.hudi.formats.hfile import SCHEMA_KEY, Cells, HFileReader, bytes_array, clear_hfile_heads, metadata_records
from tablespec.hudi.formats.logfile import BlockType, LogBlock, deleted_keys
from tablespec.hudi.io import Storage, join
from tablespec.hudi.mdt import layout, reader
from tablespec.hudi.mdt.record_index import (
    RECORD_INDEX,
    Location,
    ascii_matrix,
    decode_location,
    file_group_indices,
    location_of,
)
from tablespec.hudi.mdt.records import STORED_SCHEMA, STORED_SCHEMA_1X_JSON

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

Cell = tuple[HFileReader, str, bytes]        # the file or block, its schema (JSON), a stored value


def slices(table: HudiTable) -> tuple[list[layout.Slice], set[str]]:
    """The record index's latest file slices (sorted by file id) and the instants whose log blocks
    count, as the handle's data timeline shows them."""
    fmt = layout.Format.of(table.config)
    metadata = layout.timeline(table.storage, table.base, fmt)
    completed = layout.completions(metadata)
    found = layout.latest_slices(table.storage, table.base, completed, RECORD_INDEX, fmt)
    return found, reader.valid_instants(table.timeline, metadata) & set(completed)


def _shape(schema: Any) -> Any:
    """A schema without its docs: what decides the binary layout."""
    if isinstance(schema, dict):
        return {k: _shape(v) for k, v in schema.items() if k != "doc"}
    if isinstance(schema, list):
        return [_shape(v) for v in schema]
    return schema


@functools.lru_cache(maxsize=64)
def _stored_layout(schema: str) -> bool:
    """Whether records under `schema` have the layout `decode_location` reads."""
    return _shape(json.loads(schema)) in (_shape(STORED_SCHEMA), _shape(json.loads(STORED_SCHEMA_1X_JSON)))


def _record(cell: Cell) -> dict[str, Any]:
    hfile, schema, value = cell
    return next(metadata_records(hfile, schema, [(b"", value)]))[1]


def _location(cell: Cell) -> Location:
    fast = decode_location(cell[2]) if _stored_layout(cell[1]) else None
    if fast is not None:
        return fast
    try:
        return location_of(_record(cell))
    except HudiFormatError as e:
        raise HudiFormatError(f"{cell[0].source}: {e}" if cell[0].source not in str(e) else str(e)) from None


def _log_cells(storage: Storage, base: str, current: layout.Slice, valid: set[str],
               wanted: Callable[[], set[bytes]] | None) -> dict[bytes, Cell | None]:
    """Key -> its newest record in the slice's log files (None: deleted), for the keys `wanted`
    gives (called only once a block holds keys; all keys: None)."""
    out: dict[bytes, Cell | None] = {}
    keys: set[bytes] | None = None
    for path, block in reader.log_blocks(storage, base, current, valid):
        deleted = reader.damaged_if_unreadable(RECORD_INDEX, functools.partial(_deleted, path, block)) \
            if block.type == BlockType.DELETE else None
        if deleted == []:
            continue                               # a log file's first block: nothing in it
        if wanted is not None and keys is None:
            keys = wanted()
        if deleted is not None:
            for key, _ in deleted:
                raw = key.encode()
                if keys is None or raw in keys:
                    out[raw] = None
            continue
        schema = reader.block_schema(RECORD_INDEX, path, block)
        hfile = HFileReader(block.content, path)
        cells = hfile.records() if keys is None else hfile.get_many(keys)
        out.update((k, (hfile, schema, v)) for k, v in cells)
    return out


def _deleted(path: str, block: LogBlock) -> list[tuple[str, str | None]]:
    try:
        return deleted_keys(block)
    except HudiFormatError as e:
        raise HudiFormatError(f"{path}: the delete block at byte {block.offset}: {e}") from None


def _base_cells(storage: Storage, base: str, current: layout.Slice) -> Iterator[tuple[bytes, Cell]]:
    """Every cell of the slice's base file (read whole: a scan or compaction needs all of it)."""
    if not current.base_file:
        return
    path = join(layout.partition_path(base, RECORD_INDEX), current.base_file)
    hfile = HFileReader(storage.read_bytes(path), path)
    schema = hfile.file_info.get(SCHEMA_KEY, b"").decode()
    for key, value in hfile.records():
        yield key, (hfile, schema, value)


CACHE_BYTES = int(float(os.environ.get("TABLESPEC_RECORD_INDEX_CACHE_MB", "512")) * (1 << 20))


@dataclass(frozen=True)
class _Located:
    """One data block of a base file (or all of them), decoded: its keys and each key's location.
    Keys are sorted, or (a whole file with `fingerprints`) in the order of their fingerprints."""
    cells: Cells                 # rows only (no data kept)
    codes: np.ndarray            # per key: its location's number in `locations`
    locations: list[Location]    # the file's distinct locations (shared by its blocks)
    fingerprints: np.ndarray | None = None

    @property
    def nbytes(self) -> int:
        extra = self.fingerprints.nbytes if self.fingerprints is not None else 0
        return int(self.cells.rows.nbytes + self.codes.nbytes + extra)

    def find(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The positions in `keys` of those present, and their places in `cells`."""
        if self.fingerprints is None:
            return self.cells.find(keys)
        if keys.dtype == object:           # keys ending in a NUL: no row here (rows of S arrays never do)
            plain = np.flatnonzero([not k.endswith(b"\x00") for k in keys.tolist()])
            hit, at = self.find(np.array(keys[plain].tolist() or [b""], dtype="S")[:len(plain)])
            return plain[hit], at
        rows, wanted = self.cells.rows, _fingerprints(keys, self.cells.rows.dtype.itemsize)
        at = np.minimum(np.searchsorted(self.fingerprints, wanted), len(rows) - 1)
        hit = np.flatnonzero(self.fingerprints[at] == wanted)
        hit = hit[rows[at[hit]] == keys[hit]]            # a fingerprint is not the key: compare the two
        return hit, at[hit]


def _fingerprints(rows: np.ndarray, width: int) -> np.ndarray:
    """A 64-bit hash of each of the numpy bytes `rows` taken `width` bytes wide (zero-padded or cut):
    integer searches instead of byte-string ones. The same key gives the same fingerprint at any
    array width; different keys rarely collide, and equal fingerprints are checked against the keys."""
    n, have = len(rows), rows.dtype.itemsize
    words = -(-width // 8)
    raw = np.zeros((n, words * 8), np.uint8)
    raw[:, :min(width, have)] = np.ascontiguousarray(rows).view(np.uint8).reshape(n, have)[:, :width]
    chunks = raw.view(">u8").astype(np.uint64)
    out = np.full(n, 0x9E3779B97F4A7C15, np.uint64)
    for column in range(words):
        out = (out ^ chunks[:, column]) * np.uint64(0xBF58476D1CE4E5B9)
        out ^= out >> np.uint64(31)
    return out


_BLOCKS: OrderedDict[tuple[str, int, int], _Located] = OrderedDict()   # (path, size, block or WHOLE_FILE)
WHOLE_FILE = -1
_cached_bytes = 0
_LOCK = threading.RLock()      # the caches, and a file's value numbering, are shared by threads
# per base file: each distinct stored value seen -> its number, and the locations by number (a
# file's keys share few locations: one per data file group and inserting instant)
_VALUES: OrderedDict[tuple[str, int], tuple[dict[bytes, int], list[Location]]] = OrderedDict()
_VALUES_KEPT = 256


def _file_values(hfile: HFileReader) -> tuple[dict[bytes, int], list[Location]]:
    key = (hfile.source, hfile.size)
    found = _VALUES.get(key)
    if found is None:
        found = _VALUES[key] = ({}, [])
        while len(_VALUES) > _VALUES_KEPT:
            _VALUES.popitem(last=False)
    _VALUES.move_to_end(key)
    return found


def _located(hfile: HFileReader, schema: str, block_no: int) -> _Located:
    global _cached_bytes
    with _LOCK:
        key = (hfile.source, hfile.size, block_no)
        found = _BLOCKS.get(key)
        if found is not None:
            _BLOCKS.move_to_end(key)
            return found
        cells = hfile.cells(block_no)
        numbers, locations = _file_values(hfile)
        data, known = cells.data, len(numbers)
        codes = np.fromiter((numbers.setdefault(data[a:b], len(numbers)) for a, b in
                             zip(cells.value_start.tolist(), cells.value_end.tolist())), np.int32, len(cells.rows))
        locations.extend(_location((hfile, schema, value)) for value in list(numbers)[known:])
        empty = np.empty(0, np.int64)
        located = _Located(Cells(cells.rows, empty, empty, b""), codes, locations)
        if located.nbytes <= CACHE_BYTES:
            _BLOCKS[key] = located
            _cached_bytes += located.nbytes
            while _cached_bytes > CACHE_BYTES:
                _cached_bytes -= _BLOCKS.popitem(last=False)[1].nbytes
        return located


def clear_cache() -> None:
    """Forget every decoded block and parsed HFile index (a cold start, e.g. for a bench)."""
    global _cached_bytes
    with _LOCK:
        _BLOCKS.clear()
        _VALUES.clear()
        _cached_bytes = 0
        clear_hfile_heads()


def _base_locations(storage: Storage, base: str, current: layout.Slice,
                    keys: np.ndarray) -> tuple[np.ndarray, list[Location]]:
    """The positions in `keys` (numpy bytes) of those the slice's base file holds, and their
    locations."""
    if not current.base_file or not len(keys):
        return np.empty(0, np.int64), []
    path = join(layout.partition_path(base, RECORD_INDEX), current.base_file)
    with _LOCK:
        whole = _BLOCKS.get((path, current.base_size, WHOLE_FILE))
        if whole is not None:
            _BLOCKS.move_to_end((path, current.base_size, WHOLE_FILE))
    if whole is not None:                      # every block decoded earlier: one seek in memory
        hits, at = whole.find(keys)
        return hits, _pick(whole.locations, whole.codes[at])
    hfile = HFileReader.open(storage, path, current.base_size)
    schema = hfile.file_info.get(SCHEMA_KEY, b"").decode()
    blocks = hfile.blocks_of(keys)
    order = np.argsort(blocks, kind="stable")
    groups = np.split(order, np.flatnonzero(np.diff(blocks[order])) + 1)
    groups = [g for g in groups if blocks[g[0]] >= 0]
    hfile.prefetch(n for n in (int(blocks[g[0]]) for g in groups) if (hfile.source, hfile.size, n) not in _BLOCKS)
    positions, locations = [], []
    for group in groups:
        located = _located(hfile, schema, int(blocks[group[0]]))
        hits, at = located.cells.find(keys[group])
        positions.append(group[hits])
        known = located.locations              # the block's own list: the file's may have been dropped since
        locations += _pick(known, located.codes[at])
    _join_blocks(hfile)
    return (np.concatenate(positions) if positions else np.empty(0, np.int64)), locations


def _pick(locations: list[Location], codes: np.ndarray) -> list[Location]:
    """locations[c] for each of `codes` (numpy takes them: 50k keys in one call)."""
    table = np.empty(len(locations), object)
    table[:] = locations
    return table[codes].tolist()


def _join_blocks(hfile: HFileReader) -> None:
    """Once every block of a file is kept, keep them as one (a lookup then seeks once per file)."""
    global _cached_bytes
    with _LOCK:
        keys = [(hfile.source, hfile.size, n) for n in range(hfile.block_count)]
        parts = [_BLOCKS.get(k) for k in keys]
        if not parts or any(p is None for p in parts):
            return
        kept = [p for p in parts if p is not None]
        if len({id(p.locations) for p in kept}) != 1:        # numbered apart (the file's values were dropped between)
            return
        empty = np.empty(0, np.int64)
        rows = [p.cells.rows for p in kept]
        codes = np.concatenate([p.codes for p in kept])
        if any(r.dtype == object for r in rows):
            whole = _Located(Cells(np.concatenate([r.astype(object) for r in rows]), empty, empty, b""), codes,
                             kept[0].locations)
        else:
            joined = np.concatenate(rows)
            prints = _fingerprints(joined, joined.dtype.itemsize)
            order = np.argsort(prints)
            whole = _Located(Cells(joined[order], empty, empty, b""), codes[order], kept[0].locations, prints[order])
        for key in keys:
            _cached_bytes -= _BLOCKS.pop(key).nbytes
        _BLOCKS[(hfile.source, hfile.size, WHOLE_FILE)] = whole
        _cached_bytes += whole.nbytes


def _encoded(keys: list[str]) -> np.ndarray:
    """`keys` in UTF-8 as a numpy bytes array (ASCII keys converted by numpy in one go)."""
    found = ascii_matrix(keys)
    if found is not None:
        return np.ascontiguousarray(found[0]).view(f"S{found[0].shape[1]}").ravel()
    return bytes_array([k.encode() for k in keys])


def _objects(keys: list[str]) -> np.ndarray:
    out = np.empty(len(keys), object)
    out[:] = keys
    return out


def _in_file_group(storage: Storage, base: str, current: layout.Slice, valid: set[str], keys: np.ndarray,
                   raw: np.ndarray, subset: np.ndarray) -> dict[str, Location]:
    """Key -> location of the `keys` (an object array of str) at `subset` (their UTF-8 in `raw`)
    that file group `current` holds; a file of it that does not decode is damage."""
    return reader.damaged_if_unreadable(RECORD_INDEX, lambda: _found_in(storage, base, current, valid, keys, raw, subset))


def _found_in(storage: Storage, base: str, current: layout.Slice, valid: set[str], keys: np.ndarray,
              raw: np.ndarray, subset: np.ndarray) -> dict[str, Location]:
    logged = _log_cells(storage, base, current, valid, lambda: set(raw[subset].tolist())) if current.log_files else {}
    if logged:
        subset = subset[np.fromiter((k not in logged for k in raw[subset].tolist()), bool, len(subset))]
    positions, locations = _base_locations(storage, base, current, raw[subset])
    out = dict(zip(keys[subset[positions]].tolist(), locations))
    out.update((k.decode(), _location(cell)) for k, cell in logged.items() if cell is not None)
    return out


def lookup(table: HudiTable, keys: Iterable[str]) -> dict[str, Location]:
    """Key -> location of each of `keys` the record index holds (Hudi's readRecordIndex)."""
    found, valid = slices(table)
    wanted = list(set(keys))
    if not found or not wanted:
        return {}
    raw, strings = _encoded(wanted), _objects(wanted)
    indices = file_group_indices(wanted, len(found))
    order = np.argsort(indices, kind="stable")
    out: dict[str, Location] = {}
    for part in np.split(order, np.flatnonzero(np.diff(indices[order])) + 1):
        out.update(_in_file_group(table.storage, table.base, found[int(indices[part[0]])], valid, strings, raw, part))
    return out


def lookup_file_group(storage: Storage, base: str, current: layout.Slice, valid: set[str],
                      keys: Sequence[str]) -> dict[str, Location]:
    """Key -> location of each of `keys` (all of them hashing to file group `current`) the file
    group holds. Plain arguments, so executors call it with a slice the driver listed."""
    wanted = list(dict.fromkeys(keys))
    if not wanted:
        return {}
    return _in_file_group(storage, base, current, valid, _objects(wanted), _encoded(wanted), np.arange(len(wanted)))


def _merged(table: HudiTable, current: layout.Slice, valid: set[str]) -> dict[bytes, Cell]:
    merged: dict[bytes, Cell | None] = dict(_base_cells(table.storage, table.base, current))
    merged.update(_log_cells(table.storage, table.base, current, valid, None))
    return {k: c for k, c in merged.items() if c is not None}


def log_entries(table: HudiTable, current: layout.Slice, valid: set[str]) -> int:
    """How many keys the file group's log blocks that count settle (each block decoded: a check)."""
    return len(reader.damaged_if_unreadable(RECORD_INDEX, lambda: _log_cells(
        table.storage, table.base, current, valid, None)))


def entries(table: HudiTable, current: layout.Slice, valid: set[str]) -> dict[str, dict[str, Any]]:
    """Every key of one file group with its merged record (base file and valid log blocks): what
    compaction writes."""
    return reader.damaged_if_unreadable(RECORD_INDEX, lambda: {
        k.decode(): _record(c) for k, c in _merged(table, current, valid).items()})


def scan(table: HudiTable) -> dict[str, Location]:
    """The whole record index: key -> location."""
    found, valid = slices(table)
    return reader.damaged_if_unreadable(RECORD_INDEX, lambda: {
        k.decode(): _location(c) for current in found for k, c in _merged(table, current, valid).items()})


__all__ = ["clear_cache", "entries", "log_entries", "lookup", "lookup_file_group", "scan", "slices"]

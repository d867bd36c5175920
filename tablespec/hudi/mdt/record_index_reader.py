"""Reading Hudi's record index (the metadata table's `record_index` partition) as Hudi 0.15 and 1.x
do (their records and merging agree; 1.x adds a null `position` the reader ignores).

A key is looked up in its own file group only (`record_index.file_group_index` over the latest
slices sorted by file id): the log blocks that count (`reader.log_blocks`: valid instants, less
rolled back ones) are merged oldest first, the newest record or delete of a key winning; keys the
logs do not settle are sought in the base HFile through its block index, reading (by byte range)
and decoding only the data blocks they fall in. Deleted keys are absent from the answer.

A base file's values (Hudi's, tablespec's) share every byte before the location (the meta fields
name the file, the key is blanked): a data block is decoded to its sorted keys (numpy) and, per
key, a code numbering its value's location part (`record_index.location_start`), all new blocks of
a file hashed together by Arrow into the index's `_Parts`, shared by its files. Locations are
decoded only for the keys a lookup finds, all at once with numpy (`record_index.decode_locations`),
and each distinct one once per process: 100k keys look up in a 2M-key index that holds ~30k
distinct locations. A block whose values differ before their locations, or whose schema is not
Hudi's record layout, is decoded value by value (`decode_location`, else the Avro schema its file
names); log blocks are too (they are small).

Base files never change once written (a new slice is a new file), so a process keeps what it
decoded of them: each read block's keys and codes, and a file whose blocks are all kept as one
array, searched by 64-bit integers that order the keys as their bytes do; least recently used dropped past
`CACHE_BYTES` (env TABLESPEC_RECORD_INDEX_CACHE_MB, 0 turns it off). Repeated lookups on a driver
or a reused executor worker then seek in memory, as Hudi's readers do through their block cache.
Keys are encoded and hashed with numpy, not key by key.
"""
from __future__ import annotations

import functools
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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
    decode_locations,
    file_group_indices,
    location_of,
    location_start,
)
from tablespec.hudi.mdt.records import STORED_SCHEMA, STORED_SCHEMA_1X_JSON

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

Cell = tuple[HFileReader, str, bytes]        # the file or block, its schema (JSON), a stored value


def slices(table: HudiTable) -> tuple[list[layout.Slice], set[str]]:
    """The record index's latest file slices (sorted by file id) and the instants whose log blocks
    count, as the handle's data timeline shows them."""
    return reader.latest_slices(table, RECORD_INDEX)


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


class _Parts:
    """The distinct location parts (`record_index.location_start`) of one index's base-file values
    under one schema, numbered as first seen, each decoded to its location once a lookup needs it:
    blocks keep a code per key, and a location shared by many keys, blocks and files is one object."""

    def __init__(self) -> None:
        self.known = pa.array([], pa.binary())          # code -> part
        self.locations = np.empty(0, object)
        self.decoded = np.zeros(0, bool)

    def number(self, parts: pa.Array) -> np.ndarray:
        """The codes of the distinct `parts` (binary), new ones added."""
        codes = pc.fill_null(pc.index_in(parts, value_set=self.known), -1).to_numpy().astype(np.int32)
        new = codes < 0
        if new.any():
            codes[new] = np.arange(len(self.known), len(self.known) + int(new.sum()), dtype=np.int32)
            self.known = pa.concat_arrays([self.known, parts.filter(pa.array(new))])
            self.locations = np.concatenate([self.locations, np.empty(int(new.sum()), object)])
            self.decoded = np.concatenate([self.decoded, np.zeros(int(new.sum()), bool)])
        return codes

    def pick(self, codes: np.ndarray, alone: Callable[[bytes], Location]) -> list[Location]:
        """The location of each of `codes`, those not yet decoded decoded together (numpy); a part
        numpy does not settle by `alone` (its whole value through `_location`)."""
        missing = np.unique(codes[~self.decoded[codes]])
        if len(missing):
            taken = self.known.take(pa.array(missing))
            _, offsets, data = taken.buffers()
            ends = np.frombuffer(offsets, np.int32, len(taken) + 1, taken.offset * 4).astype(np.int64)
            raw = np.frombuffer(data, np.uint8) if data is not None and data.size else np.zeros(1, np.uint8)
            found = decode_locations(raw, ends[:-1], ends[1:])
            for i in (i for i, loc in enumerate(found) if loc is None):
                found[i] = alone(raw[ends[i]:ends[i + 1]].tobytes())
            self.locations[missing] = _objects(found)
            self.decoded[missing] = True
        return self.locations[codes].tolist()


class _Listed:
    """The distinct values of one block decoded one by one: blocks whose values `_Parts` cannot
    number (values of another layout or schema, meta fields that vary)."""

    def __init__(self, locations: list[Location]) -> None:
        self.locations = _objects(locations)

    def pick(self, codes: np.ndarray, alone: Callable[[bytes], Location]) -> list[Location]:
        return self.locations[codes].tolist()


@dataclass(frozen=True)
class _Located:
    """One data block of a base file (or all of them), decoded: its keys (sorted) and each key's
    location. A whole file also has `ordinals`: each key's 8 bytes after the prefix all its keys
    share (`skip` bytes), as big-endian integers, as sorted as the keys (a lookup searches integers;
    a key outside the prefix may share an integer, never its row)."""
    cells: Cells                 # rows only (no data kept)
    codes: np.ndarray            # per key: its location's number in `values`
    values: _Parts | _Listed     # the locations by number (one `_Parts` shared by an index's files)
    prefix: bytes                # the bytes before every value's location part (`_Parts` only)
    schema: str                  # the file's schema (JSON)
    ordinals: np.ndarray | None = None
    skip: int = 0                # the length of the prefix all its keys share

    @property
    def nbytes(self) -> int:
        extra = self.ordinals.nbytes if self.ordinals is not None else 0
        return int(self.cells.rows.nbytes + self.codes.nbytes + extra)

    def find(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The positions in `keys` of those present, and their places in `cells`."""
        if self.ordinals is None:
            return self.cells.find(keys)
        if keys.dtype == object:           # keys ending in a NUL: no row here (rows of S arrays never do)
            plain = np.flatnonzero([not k.endswith(b"\x00") for k in keys.tolist()])
            hit, at = self.find(np.array(keys[plain].tolist() or [b""], dtype="S")[:len(plain)])
            return plain[hit], at
        rows, wanted = self.cells.rows, _ordinals(keys, self.skip)
        order = np.argsort(wanted)                       # sorted needles: each search starts where the last ended
        at = np.empty(len(wanted), np.int64)
        at[order] = np.minimum(np.searchsorted(self.ordinals, wanted[order]), len(rows) - 1)
        same = self.ordinals[at] == wanted               # a present key has its row's integer
        hit = same & (rows[at] == keys)
        tied = np.flatnonzero(same & ~hit)               # keys alike in those 8 bytes: search the bytes
        if len(tied):
            near = np.minimum(np.searchsorted(rows, keys[tied]), len(rows) - 1)
            ok = rows[near] == keys[tied]
            hit[tied[ok]], at[tied[ok]] = True, near[ok]
        hit = np.flatnonzero(hit)
        return hit, at[hit]


def _ordinals(rows: np.ndarray, skip: int) -> np.ndarray:
    """Bytes `skip` to `skip + 8` of each of the numpy bytes `rows` (zero-padded) as 64-bit
    integers read big-endian: ordered as the rows are (ties aside)."""
    rows = np.ascontiguousarray(rows)
    n, width = len(rows), rows.dtype.itemsize
    if width >= skip + 8:                        # one strided read
        return np.ndarray((n,), ">u8", buffer=rows, offset=skip, strides=(width,)).astype(np.uint64)
    out = np.zeros((n, 8), np.uint8)
    take = max(0, width - skip)
    out[:, :take] = rows.view(np.uint8).reshape(n, width)[:, skip:skip + take]
    return out.view(">u8").ravel().astype(np.uint64)


_BLOCKS: OrderedDict[tuple[str, int, int], _Located] = OrderedDict()   # (path, size, block or WHOLE_FILE)
WHOLE_FILE = -1
_cached_bytes = 0
_LOCK = threading.RLock()      # the caches and the numbering of parts are shared by threads
_PARTS: OrderedDict[tuple[str, str], _Parts] = OrderedDict()          # (index folder, schema) -> its parts
_PARTS_KEPT = 64


def _parts_of(path: str, schema: str) -> _Parts:
    """The numbering of location parts of the index holding base file `path`, under `schema`; one
    grown past what the cache may hold (or Arrow's 32-bit offsets) is started anew (blocks numbered
    by the old keep it)."""
    key = (path.rpartition("/")[0], schema)
    found = _PARTS.get(key)
    if found is None or len(found.known) > max(CACHE_BYTES // 64, 1 << 16) or found.known.nbytes > 1 << 30:
        found = _PARTS[key] = _Parts()
        while len(_PARTS) > _PARTS_KEPT:
            _PARTS.popitem(last=False)
    _PARTS.move_to_end(key)
    return found


def _keep(key: tuple[str, int, int], located: _Located) -> None:
    global _cached_bytes
    if located.nbytes > CACHE_BYTES:
        return
    old = _BLOCKS.pop(key, None)
    _cached_bytes += located.nbytes - (old.nbytes if old is not None else 0)
    _BLOCKS[key] = located
    while _cached_bytes > CACHE_BYTES:
        _cached_bytes -= _BLOCKS.popitem(last=False)[1].nbytes


def _shared_start(cells: Cells) -> int | None:
    """Where every value of the block starts its location part, when all share the bytes before
    it (Hudi's base files: the meta fields hold the file's name, the key is blanked); else None."""
    data, starts, ends = cells.data, cells.value_start, cells.value_end
    if not len(starts):
        return None
    start = location_start(data[int(starts[0]):int(ends[0])])
    if start is None or int((ends - starts).min()) < start:
        return None
    buf = np.frombuffer(data, np.uint8)
    head = buf[int(starts[0]):int(starts[0]) + start]
    if start < 8:
        return start if bool((buf[starts[:, None] + np.arange(start)] == head).all()) else None
    words = np.ndarray((len(buf) - 7,), "<u8", buffer=data, strides=(1,))
    for at in sorted({*range(0, start - 7, 8), start - 8}):     # 8 bytes at a time, the last overlapping
        if not bool((words[starts + at] == words[int(starts[0]) + at]).all()):
            return None
    return start


def _block_views(cells: Cells, start: int, number: int) -> np.ndarray:
    """Arrow binary-view structs (length, first 4 bytes, buffer `number`, offset) of the block's
    values from their byte `start` on: best made while the block's bytes are in the CPU's cache."""
    buf = np.frombuffer(cells.data, np.uint8)
    at = cells.value_start + start
    length = (cells.value_end - at).astype("<i4")
    view = np.empty((len(at), 4), "<i4")
    view[:, 0] = length
    view[:, 2] = number
    view[:, 3] = at
    if len(buf) >= 4:                                          # a strided view: one gather
        view[:, 1] = np.ndarray((len(buf) - 3,), "<i4", buffer=cells.data, strides=(1,))[np.minimum(at, len(buf) - 4)]
    bytes_ = view.view(np.uint8)
    short = np.flatnonzero(length <= 12)                       # held in the view itself, zero-padded
    if len(short):
        inline = buf[np.minimum(at[short, None] + np.arange(12), len(buf) - 1)]
        inline[np.arange(12) >= length[short, None]] = 0
        bytes_[short, 4:] = inline
    return view


def _views(blocks: list[tuple[Cells, np.ndarray]]) -> pa.Array:
    """The blocks' values (their `_block_views`, block i numbered i) as one Arrow binary-view
    array over the blocks' own bytes: hashed without copying them out one by one."""
    return pa.Array.from_buffers(pa.binary_view(), sum(len(v) for _, v in blocks),
                                 [None, pa.py_buffer(np.concatenate([v for _, v in blocks])),
                                  *(pa.py_buffer(c.data) for c, _ in blocks)])


@dataclass(frozen=True)
class _Hashed:
    """Blocks' whole values hashed together: which blocks, per value the number of its distinct
    value, and the distinct values' location parts past the `prefix` they all share."""
    blocks: tuple[int, ...]
    indices: np.ndarray
    parts: pa.Array
    prefix: bytes


def _hashed(read: dict[int, Cells], views: list[np.ndarray]) -> _Hashed | None:
    """The values of blocks `read` (their `_block_views` from byte 0) hashed by Arrow, and the
    distinct ones (a file of Hudi's holds ~7x fewer than keys) checked to share the bytes before
    their locations; None if they do not. Touches no shared state: runs outside the lock."""
    if not read or any(not len(cells.rows) for cells in read.values()):
        return None
    encoded = pc.dictionary_encode(_views(list(zip(read.values(), views))))
    distinct = encoded.dictionary.cast(pa.binary())
    _, offsets, data = distinct.buffers()
    ends = np.frombuffer(offsets, np.int32, len(distinct) + 1, distinct.offset * 4).astype(np.int64)
    raw = data.to_pybytes() if data is not None else b""
    empty = np.empty(0, np.int64)
    start = _shared_start(Cells(empty, ends[:-1], ends[1:], raw))
    if start is None:
        return None
    longest = int((ends[1:] - ends[:-1]).max())                  # (Arrow's slice without an end fails)
    return _Hashed(tuple(read), encoded.indices.to_numpy(), pc.binary_slice(distinct, start, longest),
                   raw[int(ends[0]):int(ends[0]) + start])


def _decode_blocks(hfile: HFileReader, schema: str, read: dict[int, Cells],
                   hashed: _Hashed | None = None) -> dict[int, _Located]:
    """Blocks of a base file (their cells `read`; `hashed`: their values, if hashed already)
    decoded and kept: their keys, and their values numbered in the index's `_Parts`; locations
    are decoded later, for the keys a lookup finds."""
    if hashed is not None and hashed.blocks != tuple(read):
        hashed = None                                 # another thread kept some of them meanwhile
    if hashed is None and read and _stored_layout(schema):
        hashed = _hashed(read, [_block_views(cells, 0, i) for i, cells in enumerate(read.values())])
    out = _numbered_together(hfile, schema, read, hashed) if hashed is not None else _numbered_apart(hfile, schema, read)
    for n, located in out.items():
        _keep((hfile.source, hfile.size, n), located)
    return out


def _numbered_together(hfile: HFileReader, schema: str, read: dict[int, Cells], hashed: _Hashed) -> dict[int, _Located]:
    """Blocks whose values share the bytes before their locations: the distinct location parts
    numbered in the index's `_Parts`, each key given its value's number."""
    parts = _parts_of(hfile.source, schema)
    codes = parts.number(hashed.parts)[hashed.indices]
    empty = np.empty(0, np.int64)
    out, at = {}, 0
    for n, cells in read.items():
        out[n] = _Located(Cells(cells.rows, empty, empty, b""), codes[at:at + len(cells.rows)], parts,
                          hashed.prefix, schema)
        at += len(cells.rows)
    return out


def _numbered_apart(hfile: HFileReader, schema: str, read: dict[int, Cells]) -> dict[int, _Located]:
    """Blocks whose values do not all share the bytes before their locations: each block whose
    own values do numbered in `_Parts`, any other decoded value by value."""
    out: dict[int, _Located] = {}
    fast: list[tuple[int, Cells, int]] = []
    empty = np.empty(0, np.int64)
    for n, cells in read.items():
        start = _shared_start(cells) if _stored_layout(schema) else None
        if start is None:
            numbers: dict[bytes, int] = {}
            data = cells.data
            codes = np.fromiter((numbers.setdefault(data[a:b], len(numbers)) for a, b in
                                 zip(cells.value_start.tolist(), cells.value_end.tolist())), np.int32, len(cells.rows))
            listed = _Listed([_location((hfile, schema, value)) for value in numbers])
            out[n] = _Located(Cells(cells.rows, empty, empty, b""), codes, listed, b"", schema)
        else:
            fast.append((n, cells, start))
    if fast:
        encoded = pc.dictionary_encode(_views([(c, _block_views(c, s, i)) for i, (_, c, s) in enumerate(fast)]))
        parts = _parts_of(hfile.source, schema)
        codes = parts.number(encoded.dictionary.cast(pa.binary()))[encoded.indices.to_numpy()]
        at = 0
        for n, cells, start in fast:
            first = int(cells.value_start[0])
            out[n] = _Located(Cells(cells.rows, empty, empty, b""), codes[at:at + len(cells.rows)], parts,
                              cells.data[first:first + start], schema)
            at += len(cells.rows)
    return out


def clear_cache() -> None:
    """Forget every decoded block and parsed HFile index (a cold start, e.g. for a bench)."""
    global _cached_bytes
    with _LOCK:
        _BLOCKS.clear()
        _PARTS.clear()
        _cached_bytes = 0
        clear_hfile_heads()


def _alone(storage: Storage, path: str, size: int, schema: str, prefix: bytes) -> Callable[[bytes], Location]:
    """How a location part numpy does not settle is decoded: its whole value, as one record of the file."""
    def decode(part: bytes) -> Location:
        return _location((HFileReader.open(storage, path, size), schema, prefix + part))
    return decode


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
            hits, at = whole.find(keys)                # every block decoded earlier: one seek in memory
            return hits, whole.values.pick(whole.codes[at], _alone(storage, path, current.base_size, whole.schema,
                                                                   whole.prefix))
    hfile = HFileReader.open(storage, path, current.base_size)
    schema = hfile.file_info.get(SCHEMA_KEY, b"").decode()
    blocks = hfile.blocks_of(keys)
    order = np.argsort(blocks, kind="stable")
    groups = [g for g in np.split(order, np.flatnonzero(np.diff(blocks[order])) + 1) if blocks[g[0]] >= 0]
    wanted = [int(blocks[g[0]]) for g in groups]
    with _LOCK:
        missing = [n for n in wanted if (path, current.base_size, n) not in _BLOCKS]
    hfile.prefetch(missing)              # read, decompressed and hashed outside the lock: other threads work meanwhile
    read: dict[int, Cells] = {}
    views: list[np.ndarray] = []
    for n in missing:
        read[n] = hfile.cells(n)
        if _stored_layout(schema):
            views.append(_block_views(read[n], 0, len(views)))      # while the block is in the CPU's cache
    hashed = _hashed(read, views) if views else None
    with _LOCK:
        have = {n: _BLOCKS.get((path, current.base_size, n)) for n in wanted}
        for n in (n for n, found in have.items() if found is not None):
            _BLOCKS.move_to_end((path, current.base_size, n))       # recently used
        have.update(_decode_blocks(hfile, schema, {n: read[n] if n in read else hfile.cells(n)
                                                   for n, found in have.items() if found is None}, hashed))
        positions: list[np.ndarray] = []
        codes: list[np.ndarray] = []
        runs: list[tuple[_Located, int]] = []          # blocks in a row picking from the same values: where they start
        for group, n in zip(groups, wanted):
            located = have[n]
            assert located is not None
            hits, at = located.cells.find(keys[group])
            positions.append(group[hits])
            codes.append(located.codes[at])
            if not runs or (runs[-1][0].values, runs[-1][0].prefix) != (located.values, located.prefix):
                runs.append((located, len(codes) - 1))
        locations: list[Location] = []
        for i, (located, first) in enumerate(runs):          # one pick per run: decoded together
            last = runs[i + 1][1] if i + 1 < len(runs) else len(codes)
            locations += located.values.pick(np.concatenate(codes[first:last]),
                                             _alone(storage, path, current.base_size, schema, located.prefix))
        _join_blocks(hfile)
    return (np.concatenate(positions) if positions else np.empty(0, np.int64)), locations


def _join_blocks(hfile: HFileReader) -> None:
    """Once every block of a file is kept, keep them as one (a lookup then seeks once per file)."""
    global _cached_bytes
    with _LOCK:
        keys = [(hfile.source, hfile.size, n) for n in range(hfile.block_count)]
        parts = [_BLOCKS.get(k) for k in keys]
        if not parts or any(p is None for p in parts):
            return
        kept = [p for p in parts if p is not None]
        if len({(id(p.values), p.prefix) for p in kept}) != 1:      # numbered apart, or block by block
            return
        empty = np.empty(0, np.int64)
        rows = [p.cells.rows for p in kept]
        codes = np.concatenate([p.codes for p in kept])
        first = kept[0]
        if any(r.dtype == object for r in rows):
            whole = _Located(Cells(np.concatenate([r.astype(object) for r in rows]), empty, empty, b""), codes,
                             first.values, first.prefix, first.schema)
        else:
            joined = np.concatenate(rows)                # the blocks in file order: the keys stay sorted
            skip = len(os.path.commonprefix([joined[0], joined[-1]]))
            whole = _Located(Cells(joined, empty, empty, b""), codes, first.values, first.prefix, first.schema,
                             _ordinals(joined, skip), skip)
        for key in keys:
            _cached_bytes -= _BLOCKS.pop(key).nbytes
        _BLOCKS[(hfile.source, hfile.size, WHOLE_FILE)] = whole
        _cached_bytes += whole.nbytes


def _encoded(keys: list[str], found: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
    """`keys` (`found`: their `ascii_matrix`) in UTF-8 as a numpy bytes array (ASCII keys
    converted by numpy in one go)."""
    if found is not None:
        return np.ascontiguousarray(found[0]).view(f"S{found[0].shape[1]}").ravel()
    return bytes_array([k.encode() for k in keys])


def _objects(items: Sequence[Any]) -> np.ndarray:
    """`items` as a numpy object array (never taken apart as sequences)."""
    out = np.empty(len(items), object)
    out[:] = items
    return out


def _in_file_group(storage: Storage, base: str, current: layout.Slice, valid: set[str], keys: np.ndarray,
                   raw: np.ndarray, subset: np.ndarray) -> tuple[list[str], list[Location]]:
    """The `keys` (an object array of str) at `subset` (their UTF-8 in `raw`) that file group
    `current` holds, and their locations; a file of it that does not decode is damage."""
    return reader.damaged_if_unreadable(RECORD_INDEX, lambda: _found_in(storage, base, current, valid, keys, raw, subset))


def _found_in(storage: Storage, base: str, current: layout.Slice, valid: set[str], keys: np.ndarray,
              raw: np.ndarray, subset: np.ndarray) -> tuple[list[str], list[Location]]:
    logged = _log_cells(storage, base, current, valid, lambda: set(raw[subset].tolist())) if current.log_files else {}
    if logged:
        subset = subset[np.fromiter((k not in logged for k in raw[subset].tolist()), bool, len(subset))]
    positions, locations = _base_locations(storage, base, current, raw[subset])
    found = keys[subset[positions]].tolist()
    for k, cell in logged.items():
        if cell is not None:
            found.append(k.decode())
            locations.append(_location(cell))
    return found, locations


def lookup(table: HudiTable, keys: Iterable[str]) -> dict[str, Location]:
    """Key -> location of each of `keys` the record index holds (Hudi's readRecordIndex)."""
    found, valid = slices(table)
    wanted = list(keys)                    # a key asked twice is looked up twice: cheaper than a set of 100k
    if not found or not wanted:
        return {}
    matrix = ascii_matrix(wanted)
    raw, strings = _encoded(wanted, matrix), _objects(wanted)
    indices = file_group_indices(wanted, len(found), matrix)
    order = np.argsort(indices, kind="stable")
    keys_found: list[str] = []
    locations: list[Location] = []
    parts = np.split(order, np.flatnonzero(np.diff(indices[order])) + 1)
    for more, where in _threads().map(lambda part: _in_file_group(
            table.storage, table.base, found[int(indices[part[0]])], valid, strings, raw, part), parts):
        keys_found += more
        locations += where
    return dict(zip(keys_found, locations))


@functools.lru_cache(maxsize=1)
def _threads() -> ThreadPoolExecutor:
    """The threads file groups are looked up in: reading and decompressing blocks (a cold lookup's
    most) runs outside the GIL, so a lookup over several file groups uses the cores there are."""
    return ThreadPoolExecutor(max_workers=max(1, min(8, os.cpu_count() or 1)), thread_name_prefix="record-index")


def lookup_file_group(storage: Storage, base: str, current: layout.Slice, valid: set[str],
                      keys: Sequence[str]) -> dict[str, Location]:
    """Key -> location of each of `keys` (all of them hashing to file group `current`) the file
    group holds. Plain arguments, so executors call it with a slice the driver listed."""
    wanted = list(dict.fromkeys(keys))
    if not wanted:
        return {}
    return dict(zip(*_in_file_group(storage, base, current, valid, _objects(wanted),
                                    _encoded(wanted, ascii_matrix(wanted)), np.arange(len(wanted)))))


def _merged(table: HudiTable, current: layout.Slice, valid: set[str]) -> dict[bytes, Cell]:
    merged: dict[bytes, Cell | None] = dict(_base_cells(table.storage, table.base, current))
    merged.update(_log_cells(table.storage, table.base, current, valid, None))
    return {k: c for k, c in merged.items() if c is not None}


def check_log_blocks(table: HudiTable, current: layout.Slice, valid: set[str]) -> None:
    """Decode each of the file group's log blocks that count, as a lookup decodes them (its cells
    found, no record made a Python object: a write's check of a large index costs its blocks'
    decoding, not a dict of every key); MetadataTableDamaged naming the file where one does not."""
    reader.damaged_if_unreadable(RECORD_INDEX, lambda: _decode_log_blocks(table.storage, table.base, current, valid))


def _decode_log_blocks(storage: Storage, base: str, current: layout.Slice, valid: set[str]) -> None:
    for path, block in reader.log_blocks(storage, base, current, valid):
        if block.type == BlockType.DELETE:
            _deleted(path, block)
            continue
        reader.block_schema(RECORD_INDEX, path, block)
        hfile = HFileReader(block.content, path)
        for n in range(hfile.block_count):
            hfile.cells(n)


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


__all__ = ["check_log_blocks", "clear_cache", "entries", "lookup", "lookup_file_group", "scan", "slices"]

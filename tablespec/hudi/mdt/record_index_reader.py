"""Reading Hudi's record index (the metadata table's `record_index` partition) as Hudi 0.15 does.

A key is looked up in its own file group only (`record_index.file_group_index` over the latest
slices sorted by file id): the log blocks that count (`reader.log_blocks`: valid instants, less
rolled back ones) are merged oldest first, the newest record or delete of a key winning; keys the
logs do not settle are sought in the base HFile through its block index, a batch sorted so that
each data block is decoded at most once. Deleted keys are absent from the answer. Records in
Hudi's stored layout are decoded by `record_index.decode_location`, others by the Avro schema
their file or block names.
"""
from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from tablespec.hudi.hfile import SCHEMA_KEY, HFileReader, metadata_records
from tablespec.hudi.io import Storage, join
from tablespec.hudi.logfile import BlockType, Header, deleted_keys
from tablespec.hudi.mdt import layout, reader
from tablespec.hudi.mdt.record_index import (
    RECORD_INDEX,
    Location,
    decode_location,
    file_group_indices,
    location_of,
)
from tablespec.hudi.mdt.records import STORED_SCHEMA

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

Cell = tuple[HFileReader, str, bytes]        # the file or block, its schema (JSON), a stored value


def slices(table: HudiTable) -> tuple[list[layout.Slice], set[str]]:
    """The record index's latest file slices (sorted by file id) and the instants whose log blocks
    count, as the handle's data timeline shows them."""
    metadata = layout.timeline(table.storage, table.base)
    completed = {i.timestamp for i in metadata if i.completed}
    found = layout.latest_slices(table.storage, table.base, completed, RECORD_INDEX)
    return found, reader.valid_instants(table.timeline, metadata) & completed


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
    return _shape(json.loads(schema)) == _shape(STORED_SCHEMA)


def _record(cell: Cell) -> dict[str, Any]:
    hfile, schema, value = cell
    return next(metadata_records(hfile, json.loads(schema), [(b"", value)]))[1]


def _location(cell: Cell) -> Location:
    fast = decode_location(cell[2]) if _stored_layout(cell[1]) else None
    return fast if fast is not None else location_of(_record(cell))


def _log_cells(storage: Storage, base: str, current: layout.Slice, valid: set[str],
               wanted: set[bytes] | None) -> dict[bytes, Cell | None]:
    """Key -> its newest record in the slice's log files (None: deleted), for `wanted` keys (all: None)."""
    out: dict[bytes, Cell | None] = {}
    for path, block in reader.log_blocks(storage, base, current, valid):
        if block.type == BlockType.DELETE:
            for key, _ in deleted_keys(block):
                raw = key.encode()
                if wanted is None or raw in wanted:
                    out[raw] = None
            continue
        hfile = HFileReader(block.content, path)
        schema = block.header[Header.SCHEMA]
        cells = hfile.records() if wanted is None else hfile.get_many(wanted)
        out.update((k, (hfile, schema, v)) for k, v in cells)
    return out


def _base(storage: Storage, base: str, current: layout.Slice) -> tuple[HFileReader, str] | None:
    if not current.base_file:
        return None
    path = join(layout.partition_path(base, RECORD_INDEX), current.base_file)
    hfile = HFileReader(storage.read_bytes(path), path)
    return hfile, hfile.file_info.get(SCHEMA_KEY, b"").decode()


def _base_cells(storage: Storage, base: str, current: layout.Slice,
                wanted: Iterable[bytes] | None) -> Iterator[tuple[bytes, Cell]]:
    found = _base(storage, base, current)
    if found is not None:
        hfile, schema = found
        for key, value in hfile.records() if wanted is None else hfile.get_many(wanted):
            yield key, (hfile, schema, value)


def lookup(table: HudiTable, keys: Iterable[str]) -> dict[str, Location]:
    """Key -> location of each of `keys` the record index holds (Hudi's readRecordIndex)."""
    found, valid = slices(table)
    wanted = sorted(set(keys))
    if not found or not wanted:
        return {}
    groups: dict[int, list[str]] = {}
    for key, index in zip(wanted, file_group_indices(wanted, len(found)).tolist()):
        groups.setdefault(index, []).append(key)
    out: dict[str, Location] = {}
    for index, group in sorted(groups.items()):
        out.update(lookup_file_group(table.storage, table.base, found[index], valid, group))
    return out


def lookup_file_group(storage: Storage, base: str, current: layout.Slice, valid: set[str],
                      keys: Sequence[str]) -> dict[str, Location]:
    """Key -> location of each of `keys` (all of them hashing to file group `current`) the file
    group holds. Plain arguments, so executors call it with a slice the driver listed."""
    wanted = sorted({k.encode() for k in keys})
    logged = _log_cells(storage, base, current, valid, set(wanted))
    rest = [k for k in wanted if k not in logged] if logged else wanted
    out: dict[str, Location] = {}
    if rest:
        out.update((k.decode(), _location(cell)) for k, cell in _base_cells(storage, base, current, rest))
    out.update((k.decode(), _location(cell)) for k, cell in logged.items() if cell is not None)
    return out


def _merged(table: HudiTable, current: layout.Slice, valid: set[str]) -> dict[bytes, Cell]:
    merged: dict[bytes, Cell | None] = dict(_base_cells(table.storage, table.base, current, None))
    merged.update(_log_cells(table.storage, table.base, current, valid, None))
    return {k: c for k, c in merged.items() if c is not None}


def entries(table: HudiTable, current: layout.Slice, valid: set[str]) -> dict[str, dict[str, Any]]:
    """Every key of one file group with its merged record (base file and valid log blocks): what
    compaction writes."""
    return {k.decode(): _record(c) for k, c in _merged(table, current, valid).items()}


def scan(table: HudiTable) -> dict[str, Location]:
    """The whole record index: key -> location."""
    found, valid = slices(table)
    return {k.decode(): _location(c) for current in found for k, c in _merged(table, current, valid).items()}


__all__ = ["entries", "lookup", "lookup_file_group", "scan", "slices"]

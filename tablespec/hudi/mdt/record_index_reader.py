"""Reading Hudi's record index (the metadata table's `record_index` partition) as Hudi 0.15 does.

A key is looked up in its own file group only (`record_index.file_group_index` over the latest
slices sorted by file id): the log blocks that count (`reader.log_blocks`: valid instants, less
rolled back ones) are merged oldest first, the newest record or delete of a key winning; keys the
logs do not settle are sought in the base HFile through its block index, a batch sorted so that
each data block is decoded at most once. Deleted keys are absent from the answer.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tablespec.hudi.hfile import HFileReader, metadata_records
from tablespec.hudi.io import join
from tablespec.hudi.logfile import BlockType, Header, deleted_keys
from tablespec.hudi.mdt import layout, reader
from tablespec.hudi.mdt.record_index import RECORD_INDEX, Location, file_group_indices, location_of

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable


def slices(table: HudiTable) -> tuple[list[layout.Slice], set[str]]:
    """The record index's latest file slices (sorted by file id) and the instants whose log blocks
    count, as the handle's data timeline shows them."""
    metadata = layout.timeline(table.storage, table.base)
    completed = {i.timestamp for i in metadata if i.completed}
    found = layout.latest_slices(table.storage, table.base, completed, RECORD_INDEX)
    return found, reader.valid_instants(table.timeline, metadata) & completed


def _log_entries(table: HudiTable, current: layout.Slice, valid: set[str],
                 wanted: set[bytes] | None) -> dict[bytes, dict[str, Any] | None]:
    """Key -> its newest record in the slice's log files (None: deleted), for `wanted` keys (all: None)."""
    out: dict[bytes, dict[str, Any] | None] = {}
    for path, block in reader.log_blocks(table, current, valid):
        if block.type == BlockType.DELETE:
            for key, _ in deleted_keys(block):
                raw = key.encode()
                if wanted is None or raw in wanted:
                    out[raw] = None
            continue
        hfile = HFileReader(block.content, path)
        schema = json.loads(block.header[Header.SCHEMA])
        if wanted is None:
            out.update((k.encode(), r) for k, r in metadata_records(hfile, schema))
        else:
            out.update((k.encode(), r) for k, r in metadata_records(hfile, schema, hfile.get_many(wanted)))
    return out


def _base(table: HudiTable, current: layout.Slice) -> HFileReader | None:
    if not current.base_file:
        return None
    path = join(layout.partition_path(table.base, RECORD_INDEX), current.base_file)
    return HFileReader(table.storage.read_bytes(path), path)


def lookup(table: HudiTable, keys: Iterable[str]) -> dict[str, Location]:
    """Key -> location of each of `keys` the record index holds (Hudi's readRecordIndex)."""
    found, valid = slices(table)
    wanted = sorted(set(keys))
    if not found or not wanted:
        return {}
    groups: dict[int, list[bytes]] = {}
    for key, index in zip(wanted, file_group_indices(wanted, len(found)).tolist()):
        groups.setdefault(index, []).append(key.encode())
    out: dict[str, Location] = {}
    for index, group in sorted(groups.items()):
        current = found[index]
        logged = _log_entries(table, current, valid, set(group))
        rest = sorted(k for k in group if k not in logged)
        base = _base(table, current) if rest else None
        hits = metadata_records(base, None, base.get_many(rest)) if base is not None else ()
        for key, record in hits:
            out[key] = location_of(record)
        out.update((k.decode(), location_of(r)) for k, r in logged.items() if r is not None)
    return out


def entries(table: HudiTable, current: layout.Slice, valid: set[str]) -> dict[str, dict[str, Any]]:
    """Every key of one file group with its merged record (base file and valid log blocks): what
    a full scan reads and compaction writes."""
    merged: dict[bytes, dict[str, Any] | None] = {}
    base = _base(table, current)
    if base is not None:
        merged.update((k.encode(), r) for k, r in metadata_records(base))
    merged.update(_log_entries(table, current, valid, None))
    return {k.decode(): r for k, r in merged.items() if r is not None}


def scan(table: HudiTable) -> dict[str, Location]:
    """The whole record index: key -> location."""
    found, valid = slices(table)
    return {k: location_of(r) for current in found for k, r in entries(table, current, valid).items()}


__all__ = ["entries", "lookup", "scan", "slices"]

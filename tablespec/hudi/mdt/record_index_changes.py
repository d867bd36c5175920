"""What a data commit or replacecommit does to Hudi's record index, read from the files it wrote.

Apache Hudi 0.15 derives it from each written record's old and new location: a key with no old
location (inserted) or that left its file group (moved partition or file group; clustering and
bucket rewrites move every key they rewrite) gets its new location at the instant; an update in
place records nothing (the index keeps the inserting instant); a deleted key gets a delete.

tablespec's executors do not report per-record locations, so the same change is read back on the
driver from the key column (`_hoodie_record_key`, a Parquet projection) of each base file the
instant wrote, compared with the slice it replaces in the same file group: keys new to the file
group are upserts; keys of the replaced slices (and of replaced file groups) the instant wrote
nowhere are deletes. Cost: one key-column read per new base file and per previous base file (the
read the other indexes' updates share, base_reads.py).

A deltacommit's log file (merge-on-read) holds updates of keys its file group has (inserts go to
base files, as Hudi 0.15 and, on version 9, Hudi 1.2 lay them out with their record index, measured:
neither indexes log files, and an update keeps the key's entry) and the keys its delete blocks
remove: those are deletes unless the instant wrote them into a base file elsewhere (a key moving
partition). Cost: reading the log file the instant wrote.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from tablespec.errors import HudiFormatError
from tablespec.hudi.formats.base_keys import KEY
from tablespec.hudi.formats.commit import CLUSTER
from tablespec.hudi.formats.logfile import BlockType, deleted_keys, read_blocks
from tablespec.hudi.formats.naming import LogFileName
from tablespec.hudi.io import join
from tablespec.hudi.mdt.base_reads import BaseFileReads
from tablespec.hudi.mdt.record_index import Location, RecordIndexChange

if TYPE_CHECKING:
    from tablespec.hudi.formats.commit import CommitMetadata
    from tablespec.hudi.fs_view import FileSlice
    from tablespec.hudi.table import HudiTable

_NO_KEYS = pa.array([], pa.string())


def from_commit(table: HudiTable, instant: str, metadata: CommitMetadata,
                reads: BaseFileReads | None = None) -> RecordIndexChange:
    """The record-index change of data instant `instant` (not yet completed) with `metadata`, its base files
    read through `reads` (the update's shared reads, the key column among their columns)."""
    reads = reads or BaseFileReads(table.storage, (KEY,))
    written = {p: [s for s in stats if s.path] for p, stats in metadata.partition_to_write_stats.items()}
    replaced = metadata.partition_to_replace_file_ids or {}
    partitions = sorted({p for p, stats in written.items() if stats} | {p for p, ids in replaced.items() if ids})
    if not partitions:
        return RecordIndexChange()
    view = table.view_of(table.timeline, partitions)       # the slices before the instant (it is pending)
    before = {(g.partition, g.file_id): g.latest_slice for g in view.file_groups()}
    upserts: dict[str, Location] = {}
    new_keys, old_keys = [], []
    for partition, stats in written.items():
        for stat in stats:
            if stat.path is None:
                raise HudiFormatError(f"{table.base}: commit {instant} names no path for file group {stat.file_id}")
            if LogFileName.parse(stat.path.rsplit("/", 1)[-1]) is not None:
                if stat.num_inserts:   # a bucket table's inserts: not measured, so not guessed
                    raise HudiFormatError(f"{table.base}: deltacommit {instant} inserts keys into the log file "
                                          f"{stat.path}; tablespec keeps Hudi's record index for inserts into base "
                                          "files only (RECORD_LEVEL): drop the record index or write with Apache Hudi")
                old_keys.append(_deleted(table, stat.path))
                continue
            new = reads.keys(join(table.base, stat.path), stat.file_size_in_bytes or None)
            old = _keys(reads, before.get((partition, stat.file_id)))
            location = Location(partition, stat.file_id, instant)
            upserts.update((k, location) for k in pc.filter(new, pc.invert(pc.is_in(new, old))).to_pylist())
            new_keys.append(new)
            old_keys.append(old)
    if metadata.operation_type == CLUSTER:
        # a clustering moves every live key and deletes none: a key a replaced base file holds but the
        # output lacks left by a log's delete block (deleted, or moved to another partition, already indexed)
        return RecordIndexChange(upserts, set())
    old_keys += [_keys(reads, before.get((p, file_id))) for p, ids in replaced.items() for file_id in ids]
    old = pa.concat_arrays(old_keys) if old_keys else _NO_KEYS
    kept = pa.concat_arrays(new_keys) if new_keys else _NO_KEYS
    deletes = set(pc.filter(old, pc.invert(pc.is_in(old, kept))).to_pylist())
    return RecordIndexChange(upserts, deletes)


def _deleted(table: HudiTable, path: str) -> pa.Array:
    """The keys the delete blocks of the log file at `path` (relative to the table) remove."""
    blocks = read_blocks(table.storage.read_bytes(join(table.base, path)))
    return pa.array([key for b in blocks if b.type == BlockType.DELETE for key, _ in deleted_keys(b)], pa.string())


def _keys(reads: BaseFileReads, slice_: FileSlice | None) -> pa.Array:
    """The record keys of a slice's base file (none for a missing slice or one without a base file)."""
    if slice_ is None or slice_.base_file is None:
        return _NO_KEYS
    return reads.keys(slice_.base_file.path, slice_.base_file.size)


__all__ = ["from_commit"]

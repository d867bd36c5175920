"""The listing the metadata table's `files` partition gives, read with Hudi 0.15's rules.

A log block counts when its instant is completed on the metadata timeline and valid for the
data table (Hudi's HoodieTableMetadataUtil.getValidInstantTimestamps): a completed data instant,
a data instant a completed rollback or restore rolled back, or one of the metadata table's own
suffixed instants (20 digits: initialization, compaction, ...), or one starting with
`00000000000000`. So a metadata deltacommit written for a data instant that has not completed
is not read. A rollback command block drops the blocks of the instant it targets.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from tablespec.hudi.hfile import FilesListing, HFileReader, merge_files_records, metadata_records
from tablespec.hudi.instant import RESTORE, ROLLBACK
from tablespec.hudi.io import Storage, join
from tablespec.hudi.logfile import BlockType, Header, LogBlock
from tablespec.hudi.logfile import read_blocks as read_log_blocks
from tablespec.hudi.mdt import layout
from tablespec.hudi.mdt.records import partition_of
from tablespec.hudi.timeline import Timeline

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

SUFFIXED_LENGTH = 20


def valid_instants(data: Timeline, metadata: list[layout.MetaInstant]) -> set[str]:
    """The instants whose metadata log blocks readers merge."""
    valid = {i.timestamp for i in data.completed()}
    valid |= {i.timestamp for i in metadata if i.completed and i.action == layout.DELTA_COMMIT
              and (len(i.timestamp) == SUFFIXED_LENGTH or i.timestamp.startswith(layout.SOLO_COMMIT_TIMESTAMP))}
    valid |= {i.timestamp for i in metadata if i.completed and i.action in (ROLLBACK, RESTORE)}
    earliest = min(valid, default=layout.SOLO_COMMIT_TIMESTAMP)
    for instant in data.completed():
        if instant.action == ROLLBACK and instant.timestamp > earliest:
            valid.update(data.read_metadata(instant).get("commitsRollback") or ())
        elif instant.action == RESTORE and instant.timestamp > earliest:
            for rollbacks in (data.read_metadata(instant).get("hoodieRestoreMetadata") or {}).values():
                for meta in rollbacks:
                    valid.update(meta.get("commitsRollback") or ())
    return valid


def records(table: HudiTable) -> Iterator[tuple[str, dict[str, Any]]]:
    """The `files` records of the latest file slice that readers merge, oldest first (valid as
    the handle's data timeline shows its instants)."""
    storage, base = table.storage, table.base
    fmt = layout.Format.of(table.config)
    metadata = layout.timeline(storage, base, fmt)
    completed = layout.completions(metadata)
    current = layout.latest_slice(storage, base, completed, fmt=fmt)
    if current is None:
        return
    if current.base_file:
        path = join(layout.partition_path(base), current.base_file)
        yield from metadata_records(HFileReader(storage.read_bytes(path), path))
    valid = valid_instants(table.timeline, metadata) & set(completed)
    for path, block in log_blocks(storage, base, current, valid):
        if block.type == BlockType.HFILE_DATA:
            yield from metadata_records(HFileReader(block.content, path), json.loads(block.header[Header.SCHEMA]))


def log_blocks(storage: Storage, base: str, current: layout.Slice, valid: set[str]) -> list[tuple[str, LogBlock]]:
    """(path, block) of the data and delete blocks of a slice's log files that readers merge, in
    order: those of `valid` instants, less those a later rollback command block targets."""
    blocks: list[tuple[str, LogBlock]] = []
    for log, _ in current.log_files:
        path = join(layout.partition_path(base, current.partition), log.format())
        for block in read_log_blocks(storage.read_bytes(path)):
            if block.type == BlockType.COMMAND:
                target = block.header.get(Header.TARGET_INSTANT_TIME)
                blocks = [(p, b) for p, b in blocks if b.instant != target]
            elif block.type in (BlockType.HFILE_DATA, BlockType.DELETE) and block.instant in valid:
                blocks.append((path, block))
    return blocks


def listing(table: HudiTable) -> FilesListing:
    """Partition ("" when not partitioned) -> file name -> size, and the partitions, as the
    metadata table lists the table."""
    merged = merge_files_records(records(table))
    return FilesListing({partition_of(k): v for k, v in merged.files.items()},
                        {partition_of(p) for p in merged.partitions})

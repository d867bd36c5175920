"""The listing the metadata table's `files` partition gives, read with Hudi 0.15's rules.

A log block counts when its instant is completed on the metadata timeline and valid for the
data table (Hudi's HoodieTableMetadataUtil.getValidInstantTimestamps): a completed data instant,
a data instant a completed rollback or restore rolled back, or one of the metadata table's own
suffixed instants (20 digits: initialization, compaction, ...), or one starting with
`00000000000000`. So a metadata deltacommit written for a data instant that has not completed
is not read. A rollback command block drops the blocks of the instant it targets.

A block readers skip (corrupt, of an unknown type, of an instant that does not count) is a torn
append or a failed writer's, unless it lies in the bytes a completed deltacommit that counts
wrote (its write stat's log offset to file size): then the file is damaged and reading it is
refused (`MetadataTableDamaged`), as a lookup that silently misses keys would make writers insert
them again. A block that counts but cannot be decoded is refused too.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from tablespec.errors import HudiFormatError, MetadataTableDamaged
from tablespec.hudi.formats.avro import parsed_schema
from tablespec.hudi.formats.hfile import FilesListing, HFileReader, merge_files_records, metadata_records
from tablespec.hudi.formats.logfile import BlockType, Header, LogBlock, deleted_keys
from tablespec.hudi.formats.logfile import read_blocks as read_log_blocks
from tablespec.hudi.io import Storage, join
from tablespec.hudi.mdt import layout
from tablespec.hudi.mdt.instants import write_stats
from tablespec.hudi.mdt.records import partition_of
from tablespec.hudi.timeline.active import Timeline
from tablespec.hudi.timeline.instant import RESTORE, ROLLBACK

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

SUFFIXED_LENGTH = 20
T = TypeVar("T")


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


def latest_slices(table: HudiTable, partition: str) -> tuple[list[layout.Slice], set[str]]:
    """A metadata partition's latest file slices and the instants whose log blocks count in them, as
    the handle's data timeline shows them: `valid_instants` that are also completed on the metadata
    timeline (a metadata deltacommit that did not complete never counts, whatever the data table
    says). What every read of a partition starts from."""
    fmt = layout.Format.of(table.config)
    metadata = layout.timeline(table.storage, table.base, fmt)
    completed = layout.completions(metadata)
    return (layout.latest_slices(table.storage, table.base, completed, partition, fmt),
            valid_instants(table.timeline, metadata) & set(completed))


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
        yield from damaged_if_unreadable(layout.FILES, partial(_decoded, storage.read_bytes(path), path, None))
    valid = valid_instants(table.timeline, metadata) & set(completed)
    for path, block in log_blocks(storage, base, current, valid):
        if block.type == BlockType.HFILE_DATA:
            schema = block_schema(layout.FILES, path, block)
            yield from damaged_if_unreadable(layout.FILES, partial(_decoded, block.content, path, schema))


def _decoded(data: bytes | HFileReader, path: str, schema: str | None, named: bool = False,
             keys: Collection[str] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The records of one metadata HFile (base file or log block; only those of `keys`, found through
    its block index, when given); a `files` record is checked for the fields the listing merges (a
    schema whose field names were changed decodes, into other fields)."""
    hfile = data if isinstance(data, HFileReader) else HFileReader(data, path)
    found = list(metadata_records(hfile, schema, None if keys is None else hfile.get_many(keys), named=named))
    for key, record in found:
        entries = record.get("filesystemMetadata") or {}
        if not isinstance(entries, dict) or not all(
                isinstance(e, dict) and isinstance(e.get("size"), int) and isinstance(e.get("isDeleted"), bool)
                for e in entries.values()):
            raise HudiFormatError(f"{path}: the `files` record of {key!r} lacks a file's size or isDeleted")
    return found


def damaged_if_unreadable(partition: str, read: Callable[[], T]) -> T:
    """`read()` of a metadata file that counts; a decoding failure (it names the file) is damage."""
    try:
        return read()
    except MetadataTableDamaged:
        raise
    except HudiFormatError as e:
        raise MetadataTableDamaged(partition, str(e)) from None


def _is_metadata_record(schema: dict[str, Any]) -> bool:
    """Whether a schema names the HoodieMetadataRecord fields readers take values from (a schema
    that parses but misnames them, say a flipped byte, would decode records without them)."""
    fields = {f.get("name"): f for f in schema.get("fields") or [] if isinstance(f, dict)}
    if not {"key", "type", "filesystemMetadata"} <= set(fields):
        return False
    info = json.dumps(fields["filesystemMetadata"].get("type"))
    return '"size"' in info and '"isDeleted"' in info


def block_schema(partition: str, path: str, block: LogBlock) -> str:
    """The Avro schema (JSON) in the SCHEMA header of a data block that counts."""
    schema = block.header.get(Header.SCHEMA)
    try:
        if schema is not None and isinstance(parsed := json.loads(schema), dict) and _is_metadata_record(parsed):
            parsed_schema(schema)
            return schema
    except Exception:  # noqa: BLE001 - json and fastavro raise several types for what is no schema
        pass
    raise MetadataTableDamaged(partition, f"{path}: the data block at byte {block.offset} has no readable "
                                          "Avro schema in its header")


def written_ranges(storage: Storage, base: str, valid: set[str]) -> dict[str, list[tuple[int, int, str]]]:
    """Log file (`partition/name`) -> (start, end, instant) of the bytes completed deltacommits in
    `valid` wrote in it, as their write stats say (log offset, file size)."""
    fmt = layout.stored_format(storage, base)
    out: dict[str, list[tuple[int, int, str]]] = {}
    for instant in layout.timeline(storage, base, fmt):
        if instant.completed and instant.action == layout.DELTA_COMMIT and instant.timestamp in valid:
            for stat in write_stats(storage, base, instant, fmt):
                if stat.path:
                    out.setdefault(stat.path, []).append(
                        (int(stat.extra.get("logOffset") or 0), stat.file_size_in_bytes, instant.timestamp))
    return out


def _skipped(block: LogBlock) -> str:
    if block.type == BlockType.CORRUPT:
        return f"a corrupt log block at byte {block.offset}"
    if block.type == BlockType.COMMAND:
        return f"a rollback command block at byte {block.offset}"
    if block.type in (BlockType.HFILE_DATA, BlockType.DELETE):
        return f"a {block.type.name} block at byte {block.offset} naming instant {block.instant}, which does not count"
    return f"a {block.type.name} block at byte {block.offset}, a type the metadata table does not write"


def log_blocks(storage: Storage, base: str, current: layout.Slice, valid: set[str]) -> list[tuple[str, LogBlock]]:
    """(path, block) of the data and delete blocks of a slice's log files that readers merge, in
    order: those of `valid` instants, less those a later rollback command block targets. A block
    skipped inside what a valid deltacommit wrote is refused (see the module doc)."""
    blocks: list[tuple[str, LogBlock]] = []
    ranges: dict[str, list[tuple[int, int, str]]] | None = None       # read only once a block is skipped
    for log, _ in current.log_files:
        path = join(layout.partition_path(base, current.partition), log.format())
        written: list[tuple[int, int, str]] | None = None
        for block in read_log_blocks(storage.read_bytes(path)):
            if block.type in (BlockType.HFILE_DATA, BlockType.DELETE) and block.instant in valid:
                blocks.append((path, block))
                continue
            # a rollback's command block, or one readers skip: never inside what a deltacommit wrote
            if written is None:
                ranges = written_ranges(storage, base, valid) if ranges is None else ranges
                written = ranges.get(f"{current.partition}/{log.format()}", [])
            for start, end, instant in written:
                if start <= block.offset < end:
                    raise MetadataTableDamaged(current.partition, f"{path}: {_skipped(block)}, in the bytes "
                                                                  f"completed deltacommit {instant} wrote")
            if block.type == BlockType.COMMAND:
                target = block.header.get(Header.TARGET_INSTANT_TIME)
                blocks = [(p, b) for p, b in blocks if b.instant != target]
    return blocks


def slice_records(storage: Storage, base: str, current: layout.Slice, valid: set[str],
                  keys: Collection[str] | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every record of one file slice readers merge (or only those of `keys`: the base file is then
    read by ranges, the blocks its index points the keys to), oldest first: its base file's, then its
    valid log blocks' (a delete block's keys as records without a payload: `{"isDeleted": True}`),
    with unions of records named (`metadata_records`), so they encode back as they were."""
    folder = layout.partition_path(base, current.partition)
    if current.base_file:
        path = join(folder, current.base_file)
        yield from damaged_if_unreadable(current.partition, partial(_base_records, storage, path, current.base_size, keys))
    for path, block in log_blocks(storage, base, current, valid):
        if block.type == BlockType.HFILE_DATA:
            schema = block_schema(current.partition, path, block)
            yield from damaged_if_unreadable(current.partition, partial(_decoded, block.content, path, schema, True, keys))
        else:
            yield from ((key, {"isDeleted": True}) for key, _ in deleted_keys(block) if keys is None or key in keys)


def _base_records(storage: Storage, path: str, size: int, keys: Collection[str] | None) -> list[tuple[str, dict[str, Any]]]:
    if keys is None:
        return _decoded(storage.read_bytes(path), path, None, True)
    return _decoded(HFileReader.open(storage, path, size), path, None, True, keys)


def listing(table: HudiTable) -> FilesListing:
    """Partition ("" when not partitioned) -> file name -> size, and the partitions, as the
    metadata table lists the table."""
    merged = merge_files_records(records(table))
    return FilesListing({partition_of(k): v for k, v in merged.files.items()},
                        {partition_of(p) for p in merged.partitions})

"""Damage to Hudi's metadata table, found from its files and the storage (no Spark): what `verify`
reports and `plan` rebuilds. A damaged partition is worse than none: readers trusting it miss
files (Apache Hudi counts fewer rows) or keys (an upsert inserts a key again).

- `files`: every block that counts decoded (`reader.listing`), and the listing it gives compared
  with the storage, as Hudi's `validate_metadata_table_files` compares them: the data (base) files
  of live file groups that completed commits record, per partition, by name and size. Skipped while
  a clean, rollback or restore is pending (they are deleting files).
- `record_index`: every log block that counts decoded, and each base file's trailer and index read.
- `bloom_filters` and secondary indexes (those tablespec keeps, completely built): every file decoded, and
  nothing missing that readers look up: a filter for each latest base file; for each key the record
  index holds, an entry (and none of a key it lacks).
- all: each log file as long as the completed deltacommits' write stats say they made it.
"""
from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from tablespec.errors import HudiFormatError, MetadataTableDamaged
from tablespec.hudi.config import named_partitions
from tablespec.hudi.formats.hfile import HFileReader
from tablespec.hudi.formats.naming import BaseFileName
from tablespec.hudi.io import join
from tablespec.hudi.mdt import bloom_filters, layout, reader, record_index_reader, secondary_index
from tablespec.hudi.mdt.bloom_filters import BLOOM_FILTERS
from tablespec.hudi.mdt.column_stats import latest
from tablespec.hudi.mdt.column_stats_changes import half_built, kept
from tablespec.hudi.mdt.record_index import RECORD_INDEX
from tablespec.hudi.timeline.instant import CLEAN, RESTORE, ROLLBACK

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

EXAMPLES = 3
CHECKED = (layout.FILES, RECORD_INDEX)


@dataclass(frozen=True)
class Damage:
    """A damaged metadata partition and one line saying why, naming the file."""
    partition: str
    message: str


def checked(table: HudiTable) -> list[str]:
    """The partitions `find` checks: those of `CHECKED` hoodie.properties name as ready, and the bloom
    filters and secondary indexes tablespec keeps there, completely built (a half-built one is dropped)."""
    config = table.config
    named = named_partitions(config)
    indexes = [p for p in (BLOOM_FILTERS,) if p in kept(table)] + list(secondary_index.kept_in(config))
    unbuilt = half_built(table) if indexes else ()
    return [p for p in CHECKED if p in named] + [p for p in indexes if p not in unbuilt]


def find(table: HudiTable) -> list[Damage]:
    """The damaged partitions among those `checked`."""
    return [d for p in checked(table) if (d := _damage(table, p)) is not None]


def require_intact(table: HudiTable, partition: str) -> None:
    """Refuse (MetadataTableDamaged, one line naming the file) when `partition` is damaged: a write
    must not build on an index that lost entries."""
    found = _damage(table, partition) if partition in checked(table) else None
    if found is not None:
        raise MetadataTableDamaged(partition, found.message, explained=True)


def record_index_damage(table: HudiTable) -> str | None:
    """Why Hudi's record index must not be looked up (one line naming the file), or None: what a
    write asks before it changes anything."""
    found = _damage(table, RECORD_INDEX) if RECORD_INDEX in checked(table) else None
    return found.message if found is not None else None


def _damage(table: HudiTable, partition: str) -> Damage | None:
    check = {layout.FILES: _files, RECORD_INDEX: _record_index, BLOOM_FILTERS: _bloom_filters}.get(
        partition, partial(_secondary_index, partition=partition))
    try:
        why = _short_logs(table, partition) or check(table)
        if why is None:
            return None
        raise MetadataTableDamaged(partition, why)
    except MetadataTableDamaged as e:
        return Damage(partition, str(e))
    except HudiFormatError as e:   # a file of it that does not decode
        return Damage(partition, str(MetadataTableDamaged(partition, str(e))))


def _short_logs(table: HudiTable, partition: str) -> str | None:
    """A log file of the partition's latest slices shorter than the deltacommits that wrote it say."""
    fmt = layout.Format.of(table.config)
    metadata = layout.timeline(table.storage, table.base, fmt)
    completed = layout.completions(metadata)
    valid = reader.valid_instants(table.timeline, metadata) & set(completed)
    ranges: dict[str, list[tuple[int, int, str]]] | None = None
    for current in layout.latest_slices(table.storage, table.base, completed, partition, fmt):
        for log, size in current.log_files:
            ranges = reader.written_ranges(table.storage, table.base, valid) if ranges is None else ranges
            for _, end, instant in ranges.get(f"{partition}/{log.format()}", []):
                if size < end:
                    path = join(layout.partition_path(table.base, partition), log.format())
                    return f"{path}: {size} bytes, completed deltacommit {instant} wrote {end}"
    return None


def _files(table: HudiTable) -> str | None:
    """How the `files` partition's listing differs from the storage, or None."""
    from tablespec.hudi.mdt.writer import list_data_files
    timeline = table.timeline
    pending = timeline.pending()
    if any(i.action in (CLEAN, ROLLBACK, RESTORE) for i in pending):
        return None
    listed = reader.listing(table)
    done = [i.timestamp for i in timeline.instants if i.is_completed]
    skip = {i.timestamp for i in pending}
    stored = list_data_files(table.storage, table.base, max(done, default=None))
    # file groups a completed replacecommit replaced are no longer read (their files may be gone
    # before a clean records it): compared on neither side, as Hudi compares latest file slices
    replaced = timeline.replaced_file_ids()
    # a file it lists that storage lacks, or holds at another size than its commit wrote, is a lost or
    # truncated data file, not damage here: verify and fs_view's refuse_missing_latest name it, and a
    # rebuild from the storage would hide the loss
    # and a file no completed commit records (an orphan: verify names it) is none of its business
    recorded = functools.partial(_recorded_size, timeline, {})
    unlisted, resized = [], []
    for partition in sorted(set(stored) | set(listed.files)):
        gone = replaced.get(partition, ())
        on_storage = {n: z for n, z in stored.get(partition, {}).items() if _compared(n, skip, gone)}
        in_table = {n: z for n, z in listed.files.get(partition, {}).items()
                    if _instant(n) is not None and _compared(n, skip, gone)}
        where = (lambda n, p=partition: f"{p}/{n}" if p else n)   # noqa: E731
        unlisted += [where(n) for n in sorted(set(on_storage) - set(in_table)) if recorded(partition, n) is not None]
        resized += [where(n) for n in sorted(set(on_storage) & set(in_table))
                    if on_storage[n] != in_table[n] and on_storage[n] == recorded(partition, n)]
    parts = [f"{len(found)} data file(s) {what} (e.g. {', '.join(found[:EXAMPLES])})"
             for found, what in ((unlisted, "on storage it does not list"),
                                 (resized, "it lists with another size")) if found]
    if not parts:
        return None
    return (f"{layout.partition_path(table.base)}: the metadata table's listing differs from the storage: "
            f"{'; '.join(parts)}")


def _instant(name: str) -> str | None:
    parsed = BaseFileName.parse(name)
    return parsed.instant if parsed is not None else None


def _recorded_size(timeline, read: dict, partition: str, name: str) -> int | None:
    """The size the completed commit on the active timeline that wrote data file `name` recorded for
    it (None: no such commit records it); `read` keeps each commit's sizes once read."""
    ts = _instant(name)
    if ts not in read:
        instant = next((i for i in timeline.instants if i.is_completed and i.timestamp == ts), None)
        try:
            stats = timeline.commit_metadata(instant).write_stats() if instant is not None else []
        except HudiFormatError:
            stats = []
        read[ts] = {s.path: s.file_size_in_bytes for s in stats}
    return read[ts].get(f"{partition}/{name}" if partition else name)


def _compared(name: str, pending: set[str], replaced) -> bool:
    """A data file both sides must agree on: not written by a pending instant, not of a replaced file group."""
    parsed = BaseFileName.parse(name)
    return parsed is None or (parsed.instant not in pending and parsed.file_id not in replaced)


def _record_index(table: HudiTable) -> str | None:
    """Every record-index log block that counts decoded, every base file's head read; None when they are."""
    found, valid = record_index_reader.slices(table)
    folder = layout.partition_path(table.base, RECORD_INDEX)
    for current in found:
        record_index_reader.log_entries(table, current, valid)
        if current.base_file:
            path = join(folder, current.base_file)
            reader.damaged_if_unreadable(RECORD_INDEX, partial(HFileReader.open, table.storage, path, current.base_size))
    return None


def _entries(table: HudiTable, partition: str) -> Mapping[str, Mapping[str, Any]]:
    """Every live record of a partition's latest slices, each block and base file decoded."""
    fmt = layout.Format.of(table.config)
    metadata = layout.timeline(table.storage, table.base, fmt)
    completed = layout.completions(metadata)
    valid = reader.valid_instants(table.timeline, metadata) & set(completed)
    return latest(record for current in layout.latest_slices(table.storage, table.base, completed, partition, fmt)
                   for record in reader.slice_records(table.storage, table.base, current, valid))


def _bloom_filters(table: HudiTable) -> str | None:
    """A latest base file the `bloom_filters` partition holds no filter of (a BLOOM lookup through it would
    miss the file's keys), or None."""
    stored = _entries(table, BLOOM_FILTERS)
    missing = [f"{s.partition}/{s.base_file.name}" if s.partition else s.base_file.name
               for s in table.view.latest_slices()
               if s.base_file is not None and bloom_filters.key(s.partition, s.base_file.name) not in stored]
    if not missing:
        return None
    return (f"{layout.partition_path(table.base, BLOOM_FILTERS)}: no bloom filter of {len(missing)} latest base "
            f"file(s) (e.g. {', '.join(missing[:EXAMPLES])})")


def _secondary_index(table: HudiTable, partition: str) -> str | None:
    """Record keys the record index holds that the secondary index has no entry of (a lookup by value would
    miss their rows), or keys it has entries of that the record index lacks, or None."""
    indexed = {secondary_index.record_key(k) for k in _entries(table, partition)}
    try:
        held = set(record_index_reader.scan(table))
    except MetadataTableDamaged:
        return None                        # the record index's own check reports it
    parts = [f"{len(found)} record key(s) {what} (e.g. {', '.join(sorted(found)[:EXAMPLES])})"
             for found, what in ((held - indexed, "the record index holds have no entry"),
                                 (indexed - held, "it has entries of are not in the table")) if found]
    if not parts:
        return None
    return f"{layout.partition_path(table.base, partition)}: {'; '.join(parts)}"

"""Damage to Hudi's metadata table, found from its files and the storage (no Spark): what `verify`
reports and `plan` rebuilds. A damaged partition is worse than none: readers trusting it miss
files (Apache Hudi counts fewer rows) or keys (an upsert inserts a key again).

- `files`: every block that counts decoded (`reader.listing`), and the listing it gives compared
  with the storage, as Hudi's `validate_metadata_table_files` compares them: the data (base) files
  of live file groups that completed commits record, per partition, by name and size. Skipped while
  a clean, rollback or restore is pending (they are deleting files).
- `record_index`: every log block that counts decoded, and each base file's trailer and index read.
- `column_stats`, `partition_stats`, `bloom_filters` and secondary indexes (those tablespec keeps,
  completely built): each base file's trailer and index read; and their content (`full`: `verify`
  always, `plan` while small, see `CONTENT_CHECK_BYTES`): every file decoded, and nothing missing that
  readers look up: a filter of each latest base file; for each key the record index holds, an entry
  (and none of a key it lacks); and no partition's bounds narrower than a latest base file's
  statistics in it (readers would prune the partition away while the file holds rows it matches). A
  file or partition without statistics is no damage: readers read it, never skip it.
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
from tablespec.hudi.mdt import bloom_filters, column_stats, layout, reader, record_index_reader, secondary_index
from tablespec.hudi.mdt.bloom_filters import BLOOM_FILTERS
from tablespec.hudi.mdt.column_stats import COLUMN_STATS, PARTITION_STATS, latest
from tablespec.hudi.mdt.column_stats_changes import half_built, kept
from tablespec.hudi.mdt.column_stats_reader import bound
from tablespec.hudi.mdt.record_index import RECORD_INDEX
from tablespec.hudi.timeline.instant import CLEAN, RESTORE, ROLLBACK

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

EXAMPLES = 3
CHECKED = (layout.FILES, RECORD_INDEX)
CONTENT_CHECK_BYTES = 8 << 20
"""The most bytes of a data-skipping or secondary-index partition's latest files (with those it is
compared with: a secondary index's with the record index's, partition stats' with column stats') whose
content `find` checks by default: `plan`, `report` and each `apply` observation read metadata only,
cheaply, and a filter is ~330 KB per base file, so a large table's would be gigabytes per plan. A small one's content stays checked, so plan
proposes its rebuild; a larger one's is checked by `verify`, whose message says how to rebuild it."""


@dataclass(frozen=True)
class Damage:
    """A damaged metadata partition and one line saying why, naming the file."""
    partition: str
    message: str


def checked(table: HudiTable) -> list[str]:
    """The partitions `find` checks: those of `CHECKED` hoodie.properties name as ready, and the data-
    skipping partitions and secondary indexes tablespec keeps there, completely built (a half-built one
    is dropped)."""
    config = table.config
    named = named_partitions(config)
    indexes = list(kept(table)) + list(secondary_index.kept_in(config))
    unbuilt = half_built(table) if indexes else ()
    return [p for p in CHECKED if p in named] + [p for p in indexes if p not in unbuilt]


def find(table: HudiTable, full: bool = False) -> list[Damage]:
    """The damaged partitions among those `checked`: every one's files read as the module doc says, the
    bloom filters' and secondary indexes' content only when `full` (verify) or within
    `CONTENT_CHECK_BYTES`. The record index is scanned once at most, for all secondary indexes."""
    check = _Check(table, None if full else CONTENT_CHECK_BYTES)
    return [d for p in check.checked if (d := check.damage(p)) is not None]


Listed = tuple[list[layout.Slice], set[str]]
"""A metadata partition's latest slices and the instants whose log blocks count (`reader.latest_slices`)."""


class RecordIndexCheck:
    """The record index's damage check of one write: what the write asks before it changes anything,
    and its index job again before it looks keys up, the check itself run again only where the index's
    files differ from those it found intact (a writer committed, a rollback or compaction ran in between:
    the check runs before the table lock). Metadata files are written once or appended to, never
    rewritten in place, so the same slices (file names and sizes) under the same counting instants are
    the same bytes, and the check holds. One per write: bytes changed in place are found by the next
    write's check."""

    def __init__(self, table: HudiTable) -> None:
        self.table = table
        self.intact: Listed | None = None     # the slices and instants last found intact

    def damage(self, listed: Listed | None = None) -> str | None:
        """Why the record index must not be looked up (one line naming the file), or None; `listed`: its
        slices as the caller listed them just now (None: listed here)."""
        if self.intact is not None and (listed or reader.latest_slices(self.table, RECORD_INDEX)) == self.intact:
            return None
        check = _Check(self.table, CONTENT_CHECK_BYTES)
        if RECORD_INDEX not in check.checked:
            return None
        found = check.damage(RECORD_INDEX)
        self.intact = check.slices(RECORD_INDEX) if found is None else None
        return found.message if found is not None else None

    def require(self, listed: Listed | None = None) -> None:
        """Refuse (MetadataTableDamaged, one line naming the file) where `damage` finds any: a write must
        not build on an index that lost entries."""
        why = self.damage(listed)
        if why is not None:
            raise MetadataTableDamaged(RECORD_INDEX, why, explained=True)


class _Check:
    """One damage check of a table: `budget` bytes at most of a partition whose content is checked
    (None: any), and the record index's keys, scanned once for all its secondary indexes."""

    def __init__(self, table: HudiTable, budget: int | None) -> None:
        self.table = table
        self.budget = budget
        self._slices: dict[str, tuple[list[layout.Slice], set[str]]] = {}
        self._entries: dict[str, Mapping[str, Mapping[str, Any]]] = {}

    def slices(self, partition: str) -> tuple[list[layout.Slice], set[str]]:
        if partition not in self._slices:
            self._slices[partition] = reader.latest_slices(self.table, partition)
        return self._slices[partition]

    @functools.cached_property
    def checked(self) -> list[str]:
        return checked(self.table)

    @functools.cached_property
    def held(self) -> set[str] | None:
        """The keys the record index holds; None where it does not decode (its own check reports it)."""
        try:
            return set(record_index_reader.scan(self.table))
        except MetadataTableDamaged:
            return None

    def compared(self, partition: str) -> tuple[str, ...]:
        """The partitions a content check of `partition` decodes: a secondary index with the record index,
        partition stats with column stats (when kept, completely built)."""
        if partition.startswith(secondary_index.PREFIX):
            return partition, RECORD_INDEX
        if partition == PARTITION_STATS and COLUMN_STATS in self.checked:
            return partition, COLUMN_STATS
        return (partition,)

    def entries(self, partition: str) -> Mapping[str, Mapping[str, Any]]:
        if partition not in self._entries:
            self._entries[partition] = _entries(self.table, *self.slices(partition))
        return self._entries[partition]

    def size(self, partition: str) -> int:
        """The bytes a content check of `partition` reads: its latest files and those it is `compared` with."""
        compared = self.compared(partition)
        return sum(s.base_size + sum(z for _, z in s.log_files) for p in compared for s in self.slices(p)[0])

    def damage(self, partition: str) -> Damage | None:
        """What is wrong with `partition` (one of `checked`), or None."""
        table = self.table
        try:
            why = _short_logs(table, partition, *self.slices(partition))
            if why is None and partition == layout.FILES:
                why = _files(table)
            elif why is None and partition == RECORD_INDEX:
                _record_index(table, *self.slices(partition))
            elif why is None:
                _base_files_open(table, partition, self.slices(partition)[0])
                why = self.content(partition)
            if why is None:
                return None
            raise MetadataTableDamaged(partition, why)
        except MetadataTableDamaged as e:
            return Damage(partition, str(e))
        except HudiFormatError as e:   # a file of it that does not decode
            return Damage(partition, str(MetadataTableDamaged(partition, str(e))))

    def content(self, partition: str) -> str | None:
        """What is missing from a bloom-filter or secondary-index partition, when its size is within the
        budget; beyond `CONTENT_CHECK_BYTES` (verify) the message says how to rebuild it, as plan does not
        (MetadataTableDamaged)."""
        size = self.size(partition)
        if self.budget is not None and size > self.budget:
            return None
        entries = self.entries(partition)
        if partition == BLOOM_FILTERS:
            why = _bloom_filters(self.table, entries)
        elif partition == COLUMN_STATS:   # every entry decodes; a file without statistics is read, never skipped
            why = None
        elif partition == PARTITION_STATS:
            why = _partition_stats(self.table, entries, self.column_stats())
        else:
            why = _secondary_index(self.table, partition, entries, self.held)
        if why is None or size <= CONTENT_CHECK_BYTES:
            return why
        declared = {BLOOM_FILTERS: "bloomFilters", COLUMN_STATS: "columnStats", PARTITION_STATS: "partitionStats"}.get(
            partition) or f"the secondary index {partition.removeprefix(secondary_index.PREFIX)}"
        raise MetadataTableDamaged(partition, (
            f"{why}; the metadata table's {partition} partition is damaged, and plan does not read one this large "
            f"({size} bytes of files): to rebuild it, leave {declared} out of the spec's dataSkipping section (one "
            "apply drops it), then declare it again (the next apply builds it afresh)"), explained=True)


    def column_stats(self) -> Mapping[str, Mapping[str, Any]] | None:
        """The `column_stats` entries partition stats are compared with; None when it is not checked or
        does not decode (its own check reports it)."""
        if COLUMN_STATS not in self.compared(PARTITION_STATS):
            return None
        try:
            return self.entries(COLUMN_STATS)
        except (MetadataTableDamaged, HudiFormatError):
            return None


def _short_logs(table: HudiTable, partition: str, slices: list[layout.Slice], valid: set[str]) -> str | None:
    """A log file of the partition's latest `slices` shorter than the deltacommits that wrote it say."""
    ranges: dict[str, list[tuple[int, int, str]]] | None = None
    for current in slices:
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


def _record_index(table: HudiTable, slices: list[layout.Slice], valid: set[str]) -> None:
    """Every record-index log block that counts decoded, every base file's head read (MetadataTableDamaged
    where one does not)."""
    for current in slices:
        record_index_reader.check_log_blocks(table, current, valid)
    _base_files_open(table, RECORD_INDEX, slices)


def _base_files_open(table: HudiTable, partition: str, slices: list[layout.Slice]) -> None:
    """Each base HFile of `slices` opened: its trailer and block index read, no data block
    (MetadataTableDamaged where one does not open)."""
    folder = layout.partition_path(table.base, partition)
    for current in slices:
        if current.base_file:
            path = join(folder, current.base_file)
            reader.damaged_if_unreadable(partition, partial(HFileReader.open, table.storage, path, current.base_size))


def _entries(table: HudiTable, slices: list[layout.Slice], valid: set[str]) -> Mapping[str, Mapping[str, Any]]:
    """Every live record of a partition's latest `slices`, each block and base file decoded."""
    return latest(record for current in slices
                  for record in reader.slice_records(table.storage, table.base, current, valid))


def _bloom_filters(table: HudiTable, stored: Mapping[str, Mapping[str, Any]]) -> str | None:
    """A latest base file the `bloom_filters` partition (its `stored` records) holds no filter of (a BLOOM
    lookup through it would miss the file's keys), or None."""
    missing = [_named(p, n) for p, n in _latest_base_files(table) if bloom_filters.key(p, n) not in stored]
    if not missing:
        return None
    return (f"{layout.partition_path(table.base, BLOOM_FILTERS)}: no bloom filter of {len(missing)} latest base "
            f"file(s) (e.g. {', '.join(missing[:EXAMPLES])})")


NAME_ID = len(column_stats.name_id(""))
"""The characters of a column's (or a partition's) hash at the head of a statistics key."""


def _latest_base_files(table: HudiTable) -> list[tuple[str, str]]:
    """(data partition, file name) of each latest base file."""
    return [(s.partition, s.base_file.name) for s in table.view.latest_slices() if s.base_file is not None]


def _named(partition: str, name: str) -> str:
    return f"{partition}/{name}" if partition else name


def _partition_stats(table: HudiTable, stored: Mapping[str, Mapping[str, Any]],
                     files: Mapping[str, Mapping[str, Any]] | None) -> str | None:
    """A data partition whose `partition_stats` bounds (its `stored` records) of a column leave out a latest
    base file's (`files`: the `column_stats` records, None: not compared): readers would prune it away for
    rows it holds. A file or partition without statistics is no damage: readers read it, and Apache Hudi
    1.2, writing with its defaults on a table whose metadata table tablespec built, left the latest files
    of the partitions its write did not touch without statistics, its own validation passing (measured)."""
    if not files:
        return None
    by_file: dict[str, list[str]] = {}
    for k in files:
        by_file.setdefault(k[NAME_ID:], []).append(k)
    wider = [_named(p, n) for p, n in _latest_base_files(table)
             if any(_outside(stored.get(k[:NAME_ID] + column_stats.partition_stats_key("", p)[NAME_ID:]), files[k])
                    for k in by_file.get(column_stats.column_stats_key("", p, n)[NAME_ID:], ()))]
    if not wider:
        return None
    return (f"{layout.partition_path(table.base, PARTITION_STATS)}: {len(wider)} latest base file(s) with values "
            f"beyond their partition's bounds (e.g. {', '.join(wider[:EXAMPLES])})")


def _outside(partition: Mapping[str, Any] | None, file: Mapping[str, Any]) -> bool:
    """Whether a file's range of a column reaches beyond its partition's (both records; False where either
    has no bounds or they are not numbers, strings or booleans alike). Strings compare as Java's
    `String.compareTo` (Hudi's order): by UTF-16 code units."""
    if partition is None:
        return False
    outer, inner = partition.get("ColumnStatsMetadata") or {}, file.get("ColumnStatsMetadata") or {}
    lo, hi = bound(outer.get("minValue")), bound(outer.get("maxValue"))
    a, b = bound(inner.get("minValue")), bound(inner.get("maxValue"))
    kinds = {_kind(x) for x in (lo, hi, a, b)}
    if len(kinds) != 1 or None in kinds:
        return False
    if kinds == {"string"}:
        lo, hi, a, b = (java_order(x) for x in (lo, hi, a, b))
    return bool(a < lo or b > hi)


def java_order(text: str) -> bytes:
    """`text` as Java orders strings: its UTF-16 code units, big-endian (a character beyond U+FFFF, a
    surrogate pair from U+D800, sorts before U+E000..U+FFFF, unlike in Python)."""
    return text.encode("utf-16-be", "surrogatepass")


def _kind(value: Any) -> str | None:
    """What a bound compares as (None: not compared, e.g. a decimal's unscaled bytes)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "string" if isinstance(value, str) else None


def _secondary_index(table: HudiTable, partition: str, stored: Mapping[str, Mapping[str, Any]],
                     held: set[str] | None) -> str | None:
    """Record keys the record index holds (`held`, None: it does not decode, its own check reports it) that
    the secondary index (its `stored` records) has no entry of (a lookup by value would miss their rows), or
    keys it has entries of that the record index lacks, or None."""
    if held is None:
        return None
    indexed = {secondary_index.record_key(k) for k in stored}
    parts = [f"{len(found)} record key(s) {what} (e.g. {', '.join(sorted(found)[:EXAMPLES])})"
             for found, what in ((held - indexed, "the record index holds have no entry"),
                                 (indexed - held, "it has entries of are not in the table")) if found]
    if not parts:
        return None
    return f"{layout.partition_path(table.base, partition)}: {'; '.join(parts)}"

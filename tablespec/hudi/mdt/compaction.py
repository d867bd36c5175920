"""Compacting the metadata table's `files` file group, when and as Apache Hudi 0.15 does.

Every file group with log files is compacted: the `files` file group and the touched ones of the
record index, the data-skipping partitions and the secondary indexes (whose changes would
otherwise stay in log blocks named by data instants, which stop counting once archived).

When: after a deltacommit, once `hoodie.metadata.compact.max.delta.commits` (default 10) completed
deltacommits (the initializing one included) follow the last compaction, no metadata instant is
pending and no data instant up to the latest deltacommit is pending (a compacted base file must
hold completed instants only: Hudi compacts after the data instant completes). The compaction instant is the latest deltacommit's time with
`001` appended; it is requested with a HoodieCompactionPlan (Avro), inflight (empty), and
completes as a `commit` whose new base file holds the merged listing. New log files then start at
version 1 on the new base instant. A compaction that died before completing is finished by
`finish_pending` (the next `writer.record` does so first): until then readers keep the old slice.

Hudi 1.x (`layout.Format`) counts the deltacommits that completed after the last compaction, takes
a new instant time for the compaction (after every time on the metadata timeline), writes its plan
with 1.x's schema and its completed `<requested>_<completion>.commit` in Avro.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tablespec.errors import HudiFormatError
from tablespec.faults import crash_point
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.formats.compaction_format import PLAN_SCHEMA, PLAN_SCHEMA_1X, PLAN_VERSION
from tablespec.hudi.io import Storage, join
from tablespec.hudi.mdt import column_stats, layout, reader, record_index_reader
from tablespec.hudi.mdt.bloom_filters import BLOOM_FILTERS
from tablespec.hudi.mdt.column_stats import COLUMN_STATS, PARTITION_STATS
from tablespec.hudi.mdt.instants import commit_bytes, complete_instant
from tablespec.hudi.mdt.layout import (
    COMPACTION,
    COMPACTION_SUFFIX,
    DELTA_COMMIT,
    FILE_ID,
    FILES,
    SECONDARY_INDEX_PREFIX,
    V1,
    Format,
    MetaInstant,
)
from tablespec.hudi.mdt.record_index import RECORD_INDEX
from tablespec.hudi.mdt.records import base_hfile, listing_records, schema_json
from tablespec.hudi.timeline.active import Timeline, avro_record
from tablespec.hudi.timeline.instant import new_instant_time

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

MAX_DELTA_COMMITS = 10          # hoodie.metadata.compact.max.delta.commits
DATA_INSTANT_LENGTH = 17


def due_by_metadata(metadata: list[MetaInstant], max_delta_commits: int = MAX_DELTA_COMMITS) -> str | None:
    """The latest deltacommit when the metadata timeline alone makes a compaction due (enough
    deltacommits since the last one, nothing pending), else None: the data timeline need not be read."""
    if any(not i.completed for i in metadata):
        return None
    last = max((i.timestamp for i in metadata if i.action == COMPACTION), default="")
    # a deltacommit is after the compaction when it completed after it (0.15: the same as its time)
    deltas = [i.timestamp for i in metadata if i.action == DELTA_COMMIT and (i.completion or i.timestamp) > last]
    if len(deltas) < max_delta_commits or len(deltas[-1]) != DATA_INSTANT_LENGTH:
        return None
    return deltas[-1]


def compaction_due(data: Timeline, metadata: list[MetaInstant], max_delta_commits: int = MAX_DELTA_COMMITS,
                   fmt: Format = V1) -> str | None:
    """The compaction instant Hudi would schedule now, or None: the latest deltacommit's time with
    `001` appended (0.15), a new instant time (1.x)."""
    latest = due_by_metadata(metadata, max_delta_commits)
    if latest is None or any(p.timestamp <= latest for p in data.pending()):
        return None
    if fmt.is_1x:   # after every time on both timelines (times come from one generator in Hudi)
        times = [t for i in metadata for t in (i.timestamp, i.completion) if t] + [data.latest_time or ""]
        return new_instant_time(after=max(times))
    return latest + COMPACTION_SUFFIX


def slices_to_compact(storage: Storage, base: str, fmt: Format = V1) -> list[layout.Slice]:
    """The file slices a compaction merges: the `files` file group's and, of the record index, the
    data-skipping partitions and the secondary indexes, each file group's with log files (Hudi plans
    only slices with log files)."""
    completed = layout.completions(layout.timeline(storage, base, fmt))
    current = layout.latest_slice(storage, base, completed, fmt=fmt)
    if current is None:
        raise HudiFormatError(f"{layout.partition_path(base)}: no completed file slice of {FILE_ID} to compact")
    folders = [i.name for i in storage.list_dir(layout.table_path(base)) if i.is_dir]   # the partitions present
    others = [p for p in (RECORD_INDEX, COLUMN_STATS, PARTITION_STATS, BLOOM_FILTERS) if p in folders]
    others += [name for name in folders if name.startswith(SECONDARY_INDEX_PREFIX)]
    return [current, *(s for p in others for s in layout.latest_slices(storage, base, completed, p, fmt) if s.log_files)]


def plan(storage: Storage, base: str, instant: str, fmt: Format = V1) -> dict:
    """The HoodieCompactionPlan of the latest slices (`slices_to_compact`)."""
    extra: dict[str, Any] = {"missingSchedulePartitions": []} if fmt.is_1x else {}
    return {**extra, "operations": [{
        "baseInstantTime": current.base_instant, "deltaFilePaths": [n.format() for n, _ in current.log_files],
        "dataFilePath": current.base_file, "fileId": current.file_id, "partitionPath": current.partition,
        "metrics": {"TOTAL_LOG_FILES": float(len(current.log_files)), "TOTAL_IO_MB": 0.0, "TOTAL_IO_READ_MB": 0.0,
                    "TOTAL_LOG_FILES_SIZE": float(sum(size for _, size in current.log_files)),
                    "TOTAL_IO_WRITE_MB": 0.0},
        "bootstrapFilePath": None} for current in slices_to_compact(storage, base, fmt)],
        "extraMetadata": None, "version": PLAN_VERSION, "strategy": None, "preserveHoodieMetadata": False}


def compact(table: HudiTable, instant: str) -> MetaInstant:
    """Schedule and run the compaction `instant` (from `compaction_due`) of the table's metadata table."""
    storage, base = table.storage, table.base
    fmt = Format.of(table.config)
    meta = layout.timeline_path(base, fmt)
    try:
        storage.create_exclusive(join(meta, layout.instant_file(instant, COMPACTION, "requested")),
                                 avro_record(PLAN_SCHEMA_1X if fmt.is_1x else PLAN_SCHEMA, plan(storage, base, instant, fmt)))
    except FileExistsError:
        raise HudiFormatError(f"{meta}: compaction {instant} is already scheduled") from None
    return _run(table, instant)


def _run(table: HudiTable, instant: str) -> MetaInstant:
    storage, base = table.storage, table.base
    fmt = Format.of(table.config)
    inflight = join(layout.timeline_path(base, fmt), layout.instant_file(instant, COMPACTION, "inflight"))
    if not storage.exists(inflight):
        storage.create_exclusive(inflight, b"")
    stats: dict[str, list[WriteStat]] = {}
    metadata = layout.timeline(storage, base, fmt)
    valid = reader.valid_instants(table.timeline, metadata) & {i.timestamp for i in metadata if i.completed}
    for previous in slices_to_compact(storage, base, fmt):
        if previous.partition == FILES:
            merged = reader.listing(table)
            records = listing_records({p: merged.files.get(p, {}) for p in merged.partitions})
        elif previous.partition == RECORD_INDEX:
            found = record_index_reader.entries(table, previous, valid)
            records = [(k, found[k]) for k in sorted(found, key=str.encode)]
        else:   # column_stats, partition_stats, bloom_filters, secondary indexes: a key's newest record, deleted
            # ones left out (a secondary index's `value$key` pair a delete block or isDeleted record removed)
            merged_stats = column_stats.latest(reader.slice_records(storage, base, previous, valid))
            records = [(k, dict(merged_stats[k])) for k in sorted(merged_stats, key=str.encode)]
        stats.setdefault(previous.partition, []).append(_compacted(storage, base, instant, previous, records,
                                                                       fmt.is_1x))
    done = CommitMetadata(stats, compacted=True, extra_metadata={"schema": schema_json(fmt.is_1x)},
                          operation_type="COMPACT")
    return complete_instant(storage, base, instant, COMPACTION, commit_bytes(done, fmt), fmt)


def _compacted(storage: Storage, base: str, instant: str, previous: layout.Slice,
               records: list[tuple[str, dict[str, Any]]], one_x: bool) -> WriteStat:
    """Write one file group's new base file at the compaction `instant`; its write stat."""
    name = layout.base_file_name(instant, previous.file_id)
    data = base_hfile(records, name, one_x)
    storage.write_bytes(join(layout.partition_path(base, previous.partition), name), data)
    crash_point("during_metadata_compaction")
    logs = previous.log_files
    return WriteStat(file_id=previous.file_id, path=f"{previous.partition}/{name}",
                     prev_commit=previous.base_instant, num_writes=len(records), num_update_writes=len(records),
                     total_write_bytes=len(data), partition_path=previous.partition,
                     total_log_files_compacted=len(logs), total_log_size_compacted=sum(size for _, size in logs),
                     file_size_in_bytes=len(data),
                     runtime_stats={"totalScanTime": 0, "totalUpsertTime": 0, "totalCreateTime": 0})


def finish_pending(table: HudiTable) -> list[MetaInstant]:
    """Finish every compaction an earlier run scheduled but did not complete, oldest first."""
    return [_run(table, i.timestamp) for i in layout.timeline(table.storage, table.base, Format.of(table.config))
            if i.action == COMPACTION and not i.completed]


def compact_if_due(table: HudiTable, max_delta_commits: int = MAX_DELTA_COMMITS) -> MetaInstant | None:
    """Compact when Hudi would: call after a data instant (and its deltacommit) completed, with
    a handle whose timeline shows it completed."""
    fmt = Format.of(table.config)
    instant = compaction_due(table.timeline, layout.timeline(table.storage, table.base, fmt), max_delta_commits, fmt)
    return compact(table, instant) if instant else None

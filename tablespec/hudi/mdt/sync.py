"""Keeping the metadata table in step with every change tablespec makes to a data table, as
Apache Hudi 0.15's writers do (HoodieBackedTableMetadataWriter).

Each data instant that changes files (commit, replacecommit, clean, rollback) writes the
metadata table's deltacommit at its own time *before* its completed file, under Hudi's
transaction lock; readers count a deltacommit only once its data instant completed
(`reader.valid_instants`), so a crash in between leaves the listing of the completed instants.
After the data instant completes, the metadata table is compacted when Hudi would.

A rollback of a data instant T at R records the files it deleted at R, and rolls back the
metadata table's own deltacommit T (if one was written) at R + `006`, as Hudi does: otherwise T's
blocks would count once R names T among the rolled-back instants. That also undoes what T wrote
to the record index, so a rollback records no record-index change of its own (nor does a clean:
it changes no key's place). The partitions kept are `MAINTAINED`; `partition_changes` is the one
place a data instant becomes metadata-table changes.

On a Hudi 1.x table (`layout.Format`) the same steps run in 1.x's layout; its metadata-table
rollback takes a new instant time instead of the `006` suffix (1.x instant times have 17 digits),
and its own clean follows Hudi 1.x's schedule (cleaner.py).
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from tablespec.faults import crash_point
from tablespec.hudi.formats import index_defs
from tablespec.hudi.formats.base_keys import KEY
from tablespec.hudi.formats.commit import CommitMetadata
from tablespec.hudi.formats.naming import LogFileName
from tablespec.hudi.formats.rollback_format import ROLLBACK_METADATA_SCHEMA, ROLLBACK_PLAN_SCHEMA
from tablespec.hudi.io import join
from tablespec.hudi.mdt import (
    cleaner,
    column_stats_changes,
    compaction,
    instants,
    layout,
    record_index_changes,
    record_index_writer,
    records,
    secondary_index,
    writer,
)
from tablespec.hudi.mdt.base_reads import BaseFileReads
from tablespec.hudi.mdt.bloom_filters import BLOOM_FILTERS
from tablespec.hudi.mdt.column_stats import COLUMN_STATS, PARTITION_STATS
from tablespec.hudi.mdt.layout import DELTA_COMMIT, FILES, Format, MetaInstant
from tablespec.hudi.mdt.record_index import RECORD_INDEX, HashedChange, RecordIndexChange
from tablespec.hudi.mdt.records import FilesChange
from tablespec.hudi.timeline.active import avro_content, avro_record
from tablespec.hudi.timeline.instant import new_instant_time

if TYPE_CHECKING:
    from tablespec.hudi.config import TableConfig
    from tablespec.hudi.table import HudiTable

MAINTAINED = frozenset({FILES, RECORD_INDEX, COLUMN_STATS, BLOOM_FILTERS})   # metadata-table partitions tablespec keeps true
MAINTAINED_1X = MAINTAINED | {PARTITION_STATS}                # and on Hudi 1.x's tables (versions 8, 9)


def maintained_partitions(config: TableConfig | None) -> frozenset[str]:
    """The metadata partitions tablespec keeps true on a table with `config` (its hoodie.properties): and
    the secondary indexes of a version 9 copy-on-write table with the record index."""
    if config is None or config.version < 8:
        return MAINTAINED
    return MAINTAINED_1X | frozenset(secondary_index.kept_in(config))
ROLLBACK_SUFFIX = "006"                  # Hudi's suffix of a metadata-table rollback instant


def partition_changes(table: HudiTable, instant: str, change: FilesChange, commit: CommitMetadata | None = None,
                      reported: secondary_index.Reported | None = None
                      ) -> tuple[FilesChange, RecordIndexChange | None, dict[str, HashedChange]]:
    """What data instant `instant` does to the maintained partitions: `files` gets its file
    change; `record_index` (when the table has it) the keys a commit or replacecommit (`commit`)
    wrote to a new place or deleted, read from its files (None when the table has no record
    index); `column_stats` / `partition_stats` (those the table has) the files' statistics, read
    from their footers, and those of files a clean deleted, by partition; the secondary indexes what the
    write's tasks `reported` (column -> index keys inserted and deleted), else read from the commit's files.
    A compaction moves no key (its slices' keys stay in their file groups; deletes were recorded by the
    deltacommits that wrote them)."""
    skipping = column_stats_changes.kept(table)
    keyed = commit is not None and not commit.compacted     # its keys may have moved: the record and secondary indexes
    named = secondary_index.kept_in(table.config) if keyed else ()
    # the index definitions, read once for the secondary indexes' columns and the statistics' columns
    defined = index_defs.definitions(table.storage, table.base, table.config) \
        if table.config is not None and (named or (skipping and commit is not None)) else None
    indexed = secondary_index.columns(table, named, defined)
    with_index = record_index_writer.is_enabled(table)
    if reported is not None and not set(indexed.values()) <= set(reported):
        reported = None                     # an index the tasks did not know of: read for all of them
    read_pairs = {} if reported is not None else indexed
    # each base file read once, with the columns every kept partition needs
    reads = BaseFileReads(table.storage, ({KEY} if keyed and (read_pairs or with_index) else set())
                          | set(read_pairs.values()))
    stats = (column_stats_changes.from_commit(table, instant, commit, skipping, reads, defined) if commit is not None
             else column_stats_changes.from_removed(table, instant, change, skipping)) if skipping else {}
    if commit is not None and indexed:
        stats |= (secondary_index.from_reported(indexed, reported) if reported is not None
                  else secondary_index.from_commit(table, commit, indexed, reads))
    if not with_index:
        return change, None, stats
    if commit is None or commit.compacted:
        return change, RecordIndexChange(), stats
    return change, record_index_changes.from_commit(table, instant, commit, reads), stats


def maintained(table: HudiTable) -> bool:
    """Whether the table's metadata table has its `files` partition ready (hoodie.properties
    name it): only then is there one to keep."""
    return writer.is_enabled(table)


def record(table: HudiTable, instant: str, change: FilesChange, commit: CommitMetadata | None = None,
           reported: secondary_index.Reported | None = None) -> list[MetaInstant] | None:
    """The metadata table's deltacommit at data instant `instant`, when the table keeps one. Call
    under Hudi's transaction lock, right before the data instant's completed file. Returns the
    metadata timeline with it (for `compact_if_due`), None when nothing was recorded: no
    metadata table, or an earlier attempt of this same instant (a clean or rollback resumed
    after a crash) recorded the same change already."""
    if not maintained(table):
        return None
    timeline = layout.timeline(table.storage, table.base, Format.of(table.config))
    if any(i.timestamp == instant and i.completed and i.action == DELTA_COMMIT for i in timeline):
        return None
    files, record_index, stats = partition_changes(table, instant, change, commit, reported)
    crash_point("before_metadata_deltacommit")
    done = writer.record(table, instant, files, record_index=record_index, stats=stats, timeline=timeline)
    crash_point("after_metadata_deltacommit")
    return [*(i for i in timeline if i.timestamp != instant), done]


def completed_by(recorded: list[MetaInstant] | None) -> str | None:
    """The latest completion time on the metadata timeline `record` returned (version 9): the data
    instant completes after it."""
    return max((i.completion for i in recorded or () if i.completion), default=None)


def record_commit(table: HudiTable, instant: str, metadata: CommitMetadata,
                  reported: secondary_index.Reported | None = None) -> list[MetaInstant] | None:
    """`record` of a commit or replacecommit; `reported`: its secondary-index changes as its tasks found them."""
    return record(table, instant, records.from_commit(metadata), metadata, reported)


def record_clean(table: HudiTable, instant: str, metadata: Mapping[str, Any]) -> list[MetaInstant] | None:
    return record(table, instant, records.from_clean(metadata))


def record_rollback(table: HudiTable, instant: str, target: str, deleted: Mapping[str, list[str]],
                    added: Mapping[str, Mapping[str, int]] | None = None) -> list[MetaInstant] | None:
    """A data rollback at `instant` of `target`: its deletions (and the log files a merge-on-read
    rollback leaves or writes: `added`, partition -> name -> size) recorded at `instant`, then the
    metadata table's deltacommit `target` (any state) rolled back."""
    if not maintained(table):
        return None
    change = records.from_deleted_files(deleted)
    change.added = {p: dict(files) for p, files in (added or {}).items() if files}
    done = record(table, instant, change)
    rollback_deltacommit(table, target, _rollback_time(table, instant, target))
    return done


def _rollback_time(table: HudiTable, instant: str, target: str) -> str:
    """The metadata-table rollback instant of `target` for data rollback `instant`: `instant` + `006`
    (0.15); on 1.x the pending one an interrupted run left for `target`, else a new instant time."""
    fmt = Format.of(table.config)
    if not fmt.is_1x:
        return instant + ROLLBACK_SUFFIX
    storage, base = table.storage, table.base
    metadata = layout.timeline(storage, base, fmt)
    for pending in (i for i in metadata if i.action == "rollback" and not i.completed):
        plan = avro_content(storage.read_bytes(join(layout.timeline_path(base, fmt), layout.instant_file(
            pending.timestamp, "rollback", "requested"))), pending.timestamp)
        if (plan.get("instantToRollback") or {}).get("commitTime") == target:
            return pending.timestamp
    return new_instant_time(after=max((t for i in metadata for t in (i.timestamp, i.completion) if t), default=None))


def rollback_deltacommit(table: HudiTable, target: str, rollback_ts: str) -> bool:
    """Roll back the metadata table's deltacommit `target` as a metadata-table rollback instant
    `rollback_ts`: its log files (only `target`'s blocks) and its instant files go. Idempotent;
    returns whether there was one to roll back."""
    storage, base = table.storage, table.base
    fmt = Format.of(table.config)
    meta = layout.timeline_path(base, fmt)
    metadata = layout.timeline(storage, base, fmt)
    found = next((i for i in metadata if i.timestamp == target and i.action == DELTA_COMMIT), None)
    if found is None or any(i.timestamp == rollback_ts and i.action == "rollback" and i.completed for i in metadata):
        return False
    started = time.monotonic()
    paths = writer.instant_log_files(storage, base, target)
    by_group = _by_file_group(base, paths)
    info = {"commitTime": target, "action": DELTA_COMMIT}
    requested = join(meta, layout.instant_file(rollback_ts, "rollback", "requested"))
    if not storage.exists(requested):
        storage.write_bytes(requested, avro_record(ROLLBACK_PLAN_SCHEMA, {
            "instantToRollback": info, "version": 1, "RollbackRequests": [{
                "partitionPath": partition, "fileId": file_id, "latestBaseInstant": "",
                "filesToBeDeleted": files, "logBlocksToBeDeleted": {}}
                for (partition, file_id), files in by_group.items()] or [{
                "partitionPath": FILES, "fileId": layout.FILE_ID, "latestBaseInstant": "",
                "filesToBeDeleted": [], "logBlocksToBeDeleted": {}}]}))
    inflight = join(meta, layout.instant_file(rollback_ts, "rollback", "inflight"))
    if not storage.exists(inflight):
        storage.write_bytes(inflight, b"")
    # the completed file first: from here on no reader counts the deltacommit's blocks
    for state in ("completed", "inflight", "requested"):
        completion = found.completion if state == "completed" else None
        storage.delete(join(meta, layout.instant_file(target, DELTA_COMMIT, state, completion)))
    crash_point("during_metadata_rollback")
    if paths:
        storage.delete_files(paths)
    by_partition: dict[str, list[str]] = {FILES: []}
    for (partition, _), files in by_group.items():
        by_partition.setdefault(partition, []).extend(files)
    instants.complete_instant(storage, base, rollback_ts, "rollback", avro_record(ROLLBACK_METADATA_SCHEMA, {
        "startRollbackTime": rollback_ts, "timeTakenInMillis": int((time.monotonic() - started) * 1000),
        "totalFilesDeleted": len(paths), "commitsRollback": [target],
        "partitionMetadata": {p: {"partitionPath": p, "successDeleteFiles": files, "failedDeleteFiles": [],
                                  "rollbackLogFiles": {}, "logFilesFromFailedCommit": {}}
                              for p, files in by_partition.items()},
        "version": 1, "instantsRollback": [info]}), fmt)
    return True


def _by_file_group(base: str, paths: list[str]) -> dict[tuple[str, str], list[str]]:
    """Metadata log file paths by (metadata partition, file group)."""
    out: dict[tuple[str, str], list[str]] = {}
    root = layout.table_path(base).rstrip("/") + "/"
    for path in paths:
        partition, name = path[len(root):].rsplit("/", 1)
        log = LogFileName.parse(name)
        out.setdefault((partition, log.file_id if log else name), []).append(path)
    return out


def compact_if_due(table: HudiTable, metadata: list[MetaInstant] | None) -> MetaInstant | None:
    """After a data instant completed and was recorded (`metadata`: the metadata timeline `record`
    returned; None: nothing recorded), compact as Hudi would. The data timeline is read (under
    Hudi's lock: pending instants hold a compaction back) only when the metadata timeline makes
    one due. Then the metadata table's own clean (cleaner.py), when due."""
    if metadata is None:
        return None
    done = None
    if compaction.due_by_metadata(metadata) is not None:
        with table.transaction_lock("metadata compaction"):
            table.fresh_timeline()
            done = compaction.compact_if_due(table)
    cleaner.clean_if_due(table, metadata if done is None else [*metadata, done])
    return done


def repair(table: HudiTable) -> list[MetaInstant]:
    """What a crash left in the metadata table that no data rollback repairs: a compaction that
    died is finished. Call under the table lock, after recovery."""
    if not maintained(table):
        return []
    if not any(i.action == compaction.COMPACTION and not i.completed
               for i in layout.timeline(table.storage, table.base, Format.of(table.config))):
        return []
    with table.transaction_lock("metadata compaction"):
        return compaction.finish_pending(table)


@contextmanager
def completing(table: HudiTable, who: str):
    """Hudi's transaction lock around a metadata-table record and the data completion that
    follows it, when the table keeps a metadata table (otherwise nothing is taken). Yields whether
    it holds the lock (the completion must then not take it again: `TimelineWriter.complete(locked=)`)."""
    if not maintained(table):
        yield False
        return
    with table.transaction_lock(who):
        yield True

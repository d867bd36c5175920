"""The driver's part of a deltacommit on a merge-on-read table: where each file group's log file
goes and how its stored rows are read, decided from the timeline and the file-system view, for
the partitions the batch writes (a deltacommit touches no file group elsewhere, and every task gets
the job), or for all of a table with few file groups (`target_partitions`)."""
from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tablespec.arrow.keys import partition_paths
from tablespec.engine.tasks import LogTarget, WriteJob
from tablespec.hudi.fs_view import FileSystemView
from tablespec.hudi.merge_on_read import MergeRules, counting, slice_reads
from tablespec.hudi.table import HudiTable

TARGETS_WITHOUT_SCAN = 4096
"""The most latest slices a deltacommit targets all of, without a Spark pass to find the batch's
partitions: their targets, pickled into every task, cost less than that pass's Python stage (about
a tenth of a small deltacommit, measured)."""


def target_partitions(df, job: WriteJob, partitions: frozenset[str], slices: int, moves: bool) -> frozenset[str]:
    """The partitions of the table (`partitions`, holding `slices` latest slices) whose file groups a
    deltacommit of `df` targets: all of them when keys `moves` partition (RECORD_LEVEL: a key leaves a
    file group of another partition) or when they are few; else the batch's (`batch_partitions`)."""
    if moves or slices <= TARGETS_WITHOUT_SCAN:
        return partitions
    return batch_partitions(df, job)


def batch_partitions(df, job: WriteJob) -> frozenset[str]:
    """The partition paths of the batch's rows: one Spark pass over the partition columns only (a
    columnar source reads no other column)."""
    if not job.partition_fields:
        return frozenset({""})
    rows = (df.select(*job.partition_fields)
            .mapInArrow(functools.partial(_distinct_partitions, job), "p string").distinct().collect())
    return frozenset(r[0] for r in rows)


def _distinct_partitions(job: WriteJob, batches: Iterable[pa.RecordBatch]):
    for batch in batches:
        table = pa.Table.from_batches([batch])
        parts = partition_paths(table, list(job.partition_fields), job.hive_style, job.url_encode, job.timestamp)
        yield pa.RecordBatch.from_arrays([pc.unique(parts)], names=["p"])


def log_targets(table: HudiTable, view: FileSystemView, instant: str, partitions: frozenset[str],
                no_fill: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The WriteJob fields of deltacommit `instant` into `partitions`: each of their file groups'
    latest slice as a LogTarget, the instants whose log blocks count and the table's merge rule.
    Version 6 (timeline layout 1): the log file is named by the slice's base instant, the next
    version after every log file of the slice on storage (a failed write's included); versions 8/9:
    named by the deltacommit, version 1, and the write stat names no base file and only its own log
    file (as Hudi 1.2 writes it, measured)."""
    slices = [s for s in view.latest_slices() if s.partition in partitions]
    wanted = counting(view.timeline)
    reads = {r.file_id: r for r in slice_reads(view.timeline, slices, wanted)}
    targets = {}
    for s in slices:
        if view.timeline.layout >= 2:
            targets[s.file_id] = LogTarget(partition=s.partition, log_instant=instant, base_file="", log_files=(),
                                           next_version=1, read=reads[s.file_id])
            continue
        names = [f.file_name for f in s.log_files if f.file_name.base_instant == s.base_instant]
        targets[s.file_id] = LogTarget(
            partition=s.partition, log_instant=s.base_instant,
            base_file=s.base_file.name if s.base_file is not None else "",
            log_files=tuple(n.format() for n in names),
            next_version=max((n.version for n in names), default=0) + 1, read=reads[s.file_id])
    with_logs = frozenset(s.file_id for s in slices if s.log_files)  # no rows land elsewhere (`untargeted`)
    return {"log_targets": targets, "counting": wanted, "merge_rules": MergeRules.of(table.table_config),
            # SIMPLE / BLOOM inserts fill small files whose slice has no log files only (Hudi 0.15, measured)
            "no_fill": no_fill | with_logs}


def untargeted(view: FileSystemView, job: WriteJob, stats: list[dict]) -> list[str]:
    """The partitions of existing file groups the tasks wrote without a log target. The job holds
    targets for the partitions the batch had on its first read; rows elsewhere on the second read (an
    input that changes between reads) would get a new base file that hides their committed slice."""
    existing = {s.file_id: s.partition for s in view.latest_slices()}
    targets = job.log_targets or {}
    return sorted({existing[s["file_id"]] for s in stats
                   if s["path"] and s["file_id"] in existing and s["file_id"] not in targets})

"""Running a clustering plan: `T.replacecommit.requested` (the plan) -> inflight -> completed.

Each clustering group is one Spark task: it reads its slices (pyarrow, aligned to the table's
current columns; a merge-on-read slice merged with the log files the plan names, as a snapshot
read and compaction merge it: arrow/merge.py; a slice of log files only, which Apache Hudi 1.x
plans, from its logs alone), lays the rows out (engine/arrow/layout.py), and
writes `numOutputFileGroups` new file groups of consecutive rows, so every output file holds a
narrow range of the layout.
With fewer groups than cores, a task reads and writes its files on several threads (the cores
other tasks leave idle).
Rows keep their record key, `_hoodie_commit_time` and `_hoodie_commit_seqno`. The replacecommit
(operationType CLUSTER) names the input file groups as replaced: until it completes readers
see the old files, after it the new ones. Writers refuse file groups under a pending plan
(deltacommits too: the logs a plan names are all it merges), and compaction skips them.

A plan is run from its requested file, whoever scheduled it (tablespec or Apache Hudi). A run
that fails rolls back to the requested plan; a run killed mid-way leaves an inflight instant
whose heartbeat expires, and recovery reverts it to the plan, which the next apply runs again.
"""
from __future__ import annotations

import functools
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tablespec.arrow.align import align_to_schema
from tablespec.arrow.basefile import write_base_file
from tablespec.arrow.layout import layout_indices
from tablespec.arrow.merge import read_slice
from tablespec.engine import tasks
from tablespec.engine.commit import Transaction, commit_metadata, crash_point
from tablespec.engine.schema import data_schema
from tablespec.errors import TablespecError
from tablespec.hudi.config import bloom_filters_expected, table_index_type
from tablespec.hudi.formats.naming import BaseFileName, bucket_file_id, bucket_of
from tablespec.hudi.fs_view import FileSlice, FileSystemView, refuse_missing_latest
from tablespec.hudi.io import Storage, join
from tablespec.hudi.merge_on_read import Counting, MergeRules, SliceRead, counting, slice_reads
from tablespec.hudi.services.clustering import CLUSTER, ClusteringPlan, cannot_run, encode_plan, pending_plans
from tablespec.hudi.table import AtLocation, HudiTable, Location
from tablespec.hudi.timeline.active import TimelineWriter
from tablespec.hudi.timeline.instant import Instant, new_instant_time, plan_action
from tablespec.results import Clustered


@dataclass(frozen=True)
class GroupTask:
    """One clustering group as an executor gets it: input slices, output file ids."""
    partition: str
    slices: tuple[SliceRead, ...]
    output_ids: tuple[str, ...]


@dataclass(frozen=True)
class ClusteringJob(AtLocation):
    location: Location            # the table (URI and storage; configuration, never credentials)
    instant: str
    strategy: str                 # NONE | SORT | ZORDER | HILBERT
    columns: tuple[str, ...]
    data_schema: pa.Schema
    avro_schema: str
    groups: tuple[GroupTask, ...]
    bloom_filter: bool = False
    threads: int = 1              # per task: the cores fewer groups than cores leave idle
    wanted: Counting = Counting(frozenset())   # merge-on-read: the instants whose log blocks merge
    rules: MergeRules = MergeRules()           # merge-on-read: how they merge


@dataclass
class ClusteringResult:
    instant: str
    groups: int = 0
    files_before: int = 0
    files_after: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    rows: int = 0
    seconds: float = 0.0

    def actual(self) -> Clustered:
        return Clustered(instant=self.instant, groups=self.groups, files=f"{self.files_before} -> {self.files_after}",
                         bytes_read=self.bytes_read, bytes_written=self.bytes_written, rows=self.rows,
                         seconds=round(self.seconds, 2))


def cluster_groups(job: ClusteringJob, batches):
    """Executor: rewrite the clustering groups whose numbers arrive in `batches`."""
    partition_id, token = tasks.task_token()
    schema = pa.schema([pa.field(c, pa.string()) for c in (tasks.COMMIT_TIME, tasks.SEQNO, tasks.KEY)]
                       + list(job.data_schema))
    for batch in batches:
        stats = []
        for index in batch.column(0).to_pylist():
            stats += _cluster_group(job, job.groups[index], schema, partition_id, token)
        if stats:
            yield tasks.stats_batch(stats)


def _cluster_group(job: ClusteringJob, group: GroupTask, schema: pa.Schema, partition_id: int, token: str) -> list[dict]:
    threads = max(1, min(job.threads, os.cpu_count() or 1))
    with ThreadPoolExecutor(threads) as pool:  # pyarrow releases the GIL: files read and written side by side
        rows = pa.concat_tables(list(pool.map(functools.partial(_read_slice, job, schema=schema), group.slices)))
        order = None
        if job.strategy != "NONE" and rows.num_rows:
            rows = rows.combine_chunks()  # one chunk: takes from it cost about half
            order = layout_indices(rows, job.strategy, list(job.columns), tasks.KEY, map_=pool.map)
        bounds = np.linspace(0, rows.num_rows, len(group.output_ids) + 1).round().astype(int)
        outputs = [(file_id, int(start), int(end)) for file_id, start, end in
                   zip(group.output_ids, bounds[:-1], bounds[1:]) if end > start]
        return list(pool.map(lambda o: _write_output(job, group, rows, order, partition_id, token, *o), outputs))


def _write_output(job: ClusteringJob, group: GroupTask, rows: pa.Table, order: pa.Array | None, partition_id: int,
                  token: str, file_id: str, start: int, end: int) -> dict:
    """One output file group: rows `start:end` of the layout (taken here, in the writing thread)."""
    part = rows.slice(start, end - start) if order is None else rows.take(order.slice(start, end - start))
    name = BaseFileName(file_id, token, job.instant).format()
    rel = f"{group.partition}/{name}" if group.partition else name
    written = write_base_file(join(job.base, rel), part.drop_columns([tasks.KEY]), commit_time=job.instant,
                              partition_path=group.partition, partition_id=partition_id,
                              record_keys=part.column(tasks.KEY), avro_schema_json=job.avro_schema,
                              preserve_meta=True, bloom_filter=job.bloom_filter,
                              keep_order=job.strategy != "NONE", storage=job.storage)
    return dict(partition=group.partition, file_id=file_id, path=rel, prev_commit="null",
                num_writes=written.num_rows, num_inserts=written.num_rows, num_updates=0, num_deletes=0,
                bytes=written.size, invalid=0, invalid_sample="")


def _read_slice(job: ClusteringJob, read: SliceRead, schema: pa.Schema) -> pa.Table:
    """A slice's rows in `schema`: its base file, merged with its log files when it has some."""
    if read.logs:
        return read_slice(job.storage, read, job.wanted, job.rules, schema)
    assert read.base_path is not None, "a slice without log files has a base file"
    return _read_aligned(job.storage, read.base_path, schema)


def _read_aligned(storage: Storage, path: str, schema: pa.Schema) -> pa.Table:
    """A base file's rows in `schema` (columns it predates are null); its footer is read once."""
    with storage.open_whole_file(path) as f:
        file = pq.ParquetFile(f)
        present = set(file.schema_arrow.names)
        return align_to_schema(file.read(columns=[n for n in schema.names if n in present]), schema)


def _output_ids(base: str, instant: str, index: int, plan_group, bucketed: bool) -> tuple[str, ...]:
    """New file ids, derived (every task attempt picks the same); a bucket keeps its number."""
    ids = []
    for k in range(plan_group.num_output_file_groups):
        seed = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{base}|{instant}|{index}|{k}"))
        bucket = bucket_of(plan_group.slices[0].file_id) if bucketed else None
        ids.append(bucket_file_id(bucket, seed) if bucket is not None else f"{seed}-0")
    return tuple(ids)


def _input_slices(view: FileSystemView, base: str, plan: ClusteringPlan, instant: Instant, spec,
                  bucketed: bool) -> tuple[list[list[FileSlice]], int]:
    """Each group's file slices and their total bytes; a plan that cannot run on them (the check
    `plan` makes, which then offers to discard it) is refused before anything is written."""
    latest = {(s.partition, s.file_id): s for s in view.latest_slices()}
    why = cannot_run(plan, {k: (s.base_file.name if s.base_file else None,
                                tuple(f.file_name.format() for f in s.log_files)) for k, s in latest.items()},
                     {c.name: c.data_type for c in spec.spec.columns}, bucketed)
    if why:
        raise TablespecError(f"{base}: clustering plan {instant.timestamp} cannot run ({why}); `tablespec plan` "
                             "offers to roll it back (discarding it)")
    slices = [[latest[(s.partition, s.file_id)] for s in g.slices] for g in plan.groups]
    return slices, sum(s.size for group in slices for s in group)


def schedule(table: HudiTable, plan: ClusteringPlan) -> Instant:
    """Write the plan as a new `T.replacecommit.requested` (`T.clustering.requested` in timeline
    layout 2); the caller holds the table lock."""
    partitions = {g.partition for g in plan.groups}
    content = encode_plan(plan)
    with table.transaction_lock("clustering"):  # instants are created under Hudi's lock
        # every instant another writer created counts: the new time must be after them all
        timeline = table.fresh_timeline()
        refuse_missing_latest(table.view, partitions, doing="to schedule clustering")  # (cached: run reads it)
        crash_point("before_requested")
        requested = TimelineWriter.of(timeline).request(
            plan_action(timeline.layout), new_instant_time(after=timeline.latest_time), content, listed=timeline)
        table.recorded(requested, content)  # the handle knows the plan: `run` reads nothing again
    return requested


def run(spark, spec, table: HudiTable, instant: Instant, avro_schema: str, lock=None,
        scheduled: bool = False) -> ClusteringResult:
    """Execute the requested clustering plan `instant` and complete its replacecommit.

    The caller holds the table `lock` and has run recovery (an inflight attempt whose writer
    died is back to requested). `scheduled`: the caller scheduled `instant` itself under that
    lock (`schedule`), so its requested file is not looked for again."""
    base = table.base
    started = time.monotonic()
    timeline = table.timeline
    plan = next((p for i, p in pending_plans(timeline).items() if i.timestamp == instant.timestamp), None)
    if plan is None:
        raise TablespecError(f"{base}: no pending clustering plan {instant.timestamp}")
    view = table.view  # as before the clustering
    refuse_missing_latest(view, {g.partition for g in plan.groups}, doing=f"to run clustering plan {instant.timestamp}")
    # the table's index as it is now (a pending plan may run before the spec's index is applied)
    props = table.table_config.to_properties()
    bucketed = table_index_type(props) == "BUCKET"
    slices, bytes_read = _input_slices(view, base, plan, instant, spec, bucketed)
    logs = any(s.log_files for group in slices for s in group)
    wanted = counting(timeline, as_of=instant.timestamp)   # the log blocks of writes before the plan
    reads = [slice_reads(timeline, group, wanted) for group in slices]
    with Transaction(table, "replacecommit", lock, requested=instant.to("requested"), basis=timeline,
                     scheduled=scheduled) as txn:
        groups = tuple(GroupTask(g.partition, tuple(r), _output_ids(base, txn.instant, i, g, bucketed))
                       for i, (g, r) in enumerate(zip(plan.groups, reads)))
        cores = spark.sparkContext.defaultParallelism
        job = ClusteringJob(table.location, txn.instant, plan.layout.strategy, plan.layout.columns, data_schema(spec),
                            avro_schema, groups, bloom_filter=bloom_filters_expected(props),
                            threads=max(1, cores // max(1, len(groups))), wanted=wanted,
                            rules=MergeRules.of(table.table_config) if logs else MergeRules())
        rows = (spark.range(len(groups), numPartitions=max(1, len(groups)))
                .mapInArrow(functools.partial(cluster_groups, job), tasks.STATS_DDL).collect())
        stats = [r.asDict() for r in rows]
        crash_point("mid_write")
        replaced = plan.replaced()
        # keys moved to new file groups: Hudi's record index (if any) records them with the commit (mdt/sync.py)
        txn.commit(stats, commit_metadata(stats, CLUSTER, avro_schema, {"tablespec.action": "clustering"},
                                          replaced=replaced))
    return ClusteringResult(txn.instant, len(groups), sum(len(g) for g in slices), len(stats), bytes_read,
                            sum(s["bytes"] for s in stats), sum(s["num_writes"] for s in stats),
                            time.monotonic() - started)


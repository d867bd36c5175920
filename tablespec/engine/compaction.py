"""Running a merge-on-read compaction plan: `T.compaction.requested` -> inflight -> `T.commit`.

Each operation (one file slice) is one Spark task: it merges the slice's base file with exactly
the log files the plan names (arrow/merge.py: the snapshot read's merge, by the table's rules,
deletes applied) and writes the result as the file group's new base file at the compaction's
instant. Records keep `_hoodie_commit_time` and `_hoodie_commit_seqno` (Hudi's compaction
preserves them). The commit (hudi/services/compaction.py) names the slices' base instants and
the log files merged; Hudi's metadata table records the new base files in the same transaction.

A plan is run from its requested file, whoever scheduled it (tablespec or Apache Hudi). A run
that fails rolls back to the requested plan; a run killed mid-way leaves an inflight instant,
which the next run of the plan rolls back first (its files deleted, the plan kept), as Hudi's
compaction does.
"""
from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.compute as pc

from tablespec.arrow.basefile import write_base_file
from tablespec.arrow.merge import RECORD_KEY, merge_slice, read_base
from tablespec.engine import tasks
from tablespec.engine.commit import Transaction, commit_metadata, crash_point
from tablespec.engine.schema import data_schema
from tablespec.errors import TablespecError
from tablespec.hudi.config import bloom_filters_expected
from tablespec.hudi.formats.commit import CommitMetadata
from tablespec.hudi.formats.naming import BaseFileName
from tablespec.hudi.io import join
from tablespec.hudi.merge_on_read import Counting, LogScan, MergeRules, SliceRead, counting, log_blocks, slice_reads
from tablespec.hudi.services.compaction import COMPACT, compaction_metadata, operation_slices, pending_plans
from tablespec.hudi.services.rollback import rollback
from tablespec.hudi.table import AtLocation, HudiTable, Location
from tablespec.hudi.timeline.heartbeat import heartbeat_expired, tolerance_seconds
from tablespec.hudi.timeline.instant import COMPACTION, Instant
from tablespec.results import Compacted


@dataclass(frozen=True)
class CompactionJob(AtLocation):
    location: Location            # the table (URI and storage; configuration, never credentials)
    instant: str
    reads: tuple[SliceRead, ...]  # one per operation
    wanted: Counting
    rules: MergeRules
    schema: pa.Schema             # what a slice is read as: commit time, seqno, key, then the data columns
    avro_schema: str
    bloom_filter: bool = False


def compact_slices(job: CompactionJob, batches):
    """Executor: write the new base file of each operation whose number arrives in `batches`."""
    partition_id, token = tasks.task_token()
    for batch in batches:
        stats = [_compact(job, job.reads[i], partition_id, token) for i in batch.column(0).to_pylist()]
        if stats:
            yield tasks.stats_batch(stats)


def _compact(job: CompactionJob, read: SliceRead, partition_id: int, token: str) -> dict:
    storage = job.storage
    base, scan, started = read_base(storage, read, job.schema), LogScan(), time.monotonic()
    blocks = log_blocks(storage, read, job.wanted, scan)
    scanned = time.monotonic()
    scan.scan_ms = round((scanned - started) * 1000)
    merged = merge_slice(base, blocks, job.rules, job.schema, scan)
    name = BaseFileName(read.file_id, token, job.instant).format()
    rel = f"{read.partition}/{name}" if read.partition else name
    written = write_base_file(join(job.base, rel), merged.drop_columns([RECORD_KEY]), commit_time=job.instant,
                              partition_path=read.partition, partition_id=partition_id,
                              record_keys=merged.column(RECORD_KEY), avro_schema_json=job.avro_schema,
                              preserve_meta=True, bloom_filter=job.bloom_filter, storage=storage)
    before = base if base is not None else job.schema.empty_table()
    # a row version the base file did not hold (by its sequence number) came from the logs
    changed = int(pc.sum(pc.invert(pc.is_in(merged.column(tasks.SEQNO), before.column(tasks.SEQNO)))).as_py() or 0)
    inserts = int(pc.sum(pc.invert(pc.is_in(merged.column(RECORD_KEY), before.column(RECORD_KEY)))).as_py() or 0)
    deletes = int(pc.sum(pc.invert(pc.is_in(before.column(RECORD_KEY), merged.column(RECORD_KEY)))).as_py() or 0)
    return dict(partition=read.partition, file_id=read.file_id, path=rel, prev_commit="null",
                num_writes=written.num_rows, num_inserts=inserts, num_updates=changed - inserts, num_deletes=deletes,
                bytes=written.size, invalid=0, invalid_sample="", num_ignored=0,
                log_scan=json.dumps(scan.write_stat_fields(round((time.monotonic() - scanned) * 1000),
                                                           created=base is None)))


def _with_log_scans(written: CommitMetadata, stats: list[dict]) -> CommitMetadata:
    """`written` with each new base file's log counts and timings (`LogScan`), as Hudi's compaction records them."""
    scans = {(s["partition"], s["file_id"]): json.loads(s["log_scan"]) for s in stats}
    return replace(written, partition_to_write_stats={
        partition: [replace(st, **scans[(partition, st.file_id)]) for st in found]
        for partition, found in written.partition_to_write_stats.items()})


def _slice_schema(spec) -> pa.Schema:
    return pa.schema([pa.field(c, pa.string()) for c in (tasks.COMMIT_TIME, tasks.SEQNO, RECORD_KEY)]
                     + list(data_schema(spec)))


def running(table: HudiTable, instant: Instant) -> bool:
    """Whether a process is running the pending compaction `instant`: inflight, its heartbeat live
    (an expired one's run died; the next run rolls it back to its plan)."""
    return instant.state == "inflight" and not heartbeat_expired(table.storage, table.base, instant.timestamp,
                                                                 tolerance_seconds())


def run(spark, spec, table: HudiTable, instant: Instant, avro_schema: str, lock=None,
        scheduled: bool = False) -> Compacted:
    """Execute the pending compaction plan `instant` and complete it as a commit.

    The caller holds the table `lock`. An inflight run (its process died) is rolled back to the
    plan first, unless its heartbeat says it is running. `scheduled`: the caller scheduled `instant`
    itself under that lock, so its requested file is not looked for again. A plan naming a file the
    table does not have is refused before anything changes."""
    started = time.monotonic()
    base = table.base
    current = next((i for i in pending_plans(table.timeline) if i.timestamp == instant.timestamp), None)
    if current is None:
        raise TablespecError(f"{base}: no pending compaction plan {instant.timestamp}")
    if current.state == "inflight":
        if running(table, current):
            raise TablespecError(f"{base}: compaction {current.timestamp} is running (its heartbeat is live); "
                                 "run `tablespec apply` again once it completes or its heartbeat expires")
        rollback(table, current)   # back to the plan, its files deleted (refreshes the handle)
    timeline = table.timeline
    plan = pending_plans(timeline)[Instant(instant.timestamp, COMPACTION, "requested")]
    slices = operation_slices(table.view_of(timeline), base, instant, plan)
    wanted = counting(timeline, as_of=instant.timestamp)
    reads = tuple(slice_reads(timeline, slices, wanted))
    config = table.config
    assert config is not None, "a table with a compaction plan has hoodie.properties"
    rules = MergeRules.of(config)
    crash_point("compaction_requested")
    with Transaction(table, COMPACTION, lock, requested=instant.to("requested"), basis=timeline,
                     scheduled=scheduled, conflicts=False) as txn:
        crash_point("compaction_inflight")
        job = CompactionJob(table.location, txn.instant, reads, wanted, rules, _slice_schema(spec), avro_schema,
                            bloom_filter=bloom_filters_expected(config.to_properties()))
        # a few slices per task (each merged and written on its own, memory bounded per slice): a task
        # per slice paid a Python worker's start-up per slice
        tasks_n = max(1, min(len(reads), spark.sparkContext.defaultParallelism * 2))
        rows = (spark.range(len(reads), numPartitions=tasks_n)
                .mapInArrow(functools.partial(compact_slices, job), tasks.STATS_DDL).collect())
        stats = [r.asDict() for r in rows]
        crash_point("compaction_written")
        txn.commit(stats, compaction_metadata(plan, _with_log_scans(commit_metadata(stats, COMPACT, avro_schema),
                                                                    stats)))
    return Compacted(instant=txn.instant, file_slices=len(reads),
                     log_files=sum(len(r.logs) for r in reads), rows=sum(s["num_writes"] for s in stats),
                     bytes_written=sum(s["bytes"] for s in stats), seconds=round(time.monotonic() - started, 2))


def after_deltacommit(spark, spec, table: HudiTable, avro_schema: str, lock) -> Compacted | None:
    """Compaction as housekeeping after a tablespec deltacommit, under the table `lock` the writer
    holds (as clean and archiving run after actions): when the spec gives compaction to tablespec and
    its trigger is due, a plan is scheduled and run as `apply` does. None when it is not due, or when
    a pending plan or write (another writer's) leaves it to the next `apply`."""
    from datetime import UTC, datetime

    from tablespec.hudi.services.clustering import planned_file_groups
    from tablespec.hudi.services.compaction import SCHEDULED_ON, CompactionRefused, backlog, due_reasons, schedule, select
    from tablespec.plan.compaction import policy, run_by_tablespec
    wanted = policy(spec)
    if wanted is None or not run_by_tablespec(spec) or table.table_config.version not in SCHEDULED_ON:
        return None
    timeline = table.timeline   # as the deltacommit left it (the writer refreshed the handle)
    found = backlog(timeline, table.view, planned_file_groups(timeline))
    reasons = due_reasons(wanted, found, datetime.now(UTC))
    if found.pending or not reasons or not select(wanted, found.operations):
        return None
    try:
        instant, _ = schedule(table, wanted, reasons)   # checked again under Hudi's lock
    except CompactionRefused:   # another writer scheduled one or started a write meanwhile
        return None
    return run(spark, spec, table, instant, avro_schema, lock, scheduled=True).model_copy(
        update={"scheduled": instant.timestamp})

"""Bucket bootstrap and rescale: rewrite partitions into bucket file groups in one replacecommit.

Rows keep their record key, partition path, `_hoodie_commit_time` and `_hoodie_commit_seqno`;
only `_hoodie_file_name` changes. New files are written partition batch by partition batch
(progress is reported after each batch), all under the same instant, and the old file groups
are replaced when the replacecommit completes: readers see the old layout or the new one.

A partition's rows never cross the network: each Spark task streams one partition's latest base
files (pyarrow, through the table's storage) and writes the bucket file groups of one subset of
its buckets. A partition too large for one task's memory budget is split into several subsets,
each task reading the whole partition and keeping only its buckets' rows.

On a merge-on-read table a slice with log files is read merged with them, as a snapshot read and
compaction merge it (arrow/merge.py: updates and deletes in the logs win, a log-only file group
counts), one slice at a time, and the replacecommit replaces the whole file group, its log files
included (measured with Hudi 0.15 on version 6 and Hudi 1.2 on version 9, whose log files are named
by their deltacommits and sliced by completion time, as the file-system view slices them: its
snapshot and read-optimized reads, and its next compaction, then see only the new base files). A
file group under a pending compaction is not rewritten: the compaction runs first.
"""
from __future__ import annotations

import functools
import math
import os
import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tablespec.arrow.align import align_to_schema
from tablespec.arrow.basefile import write_base_file
from tablespec.arrow.merge import read_slice
from tablespec.engine import tasks
from tablespec.engine.commit import Transaction, commit_metadata, crash_point
from tablespec.engine.schema import table_ddl
from tablespec.errors import TablespecError
from tablespec.hudi import partition_buckets
from tablespec.hudi.config import bloom_filters_expected
from tablespec.hudi.formats.naming import BaseFileName
from tablespec.hudi.fs_view import refuse_missing_latest
from tablespec.hudi.hashing import bucket_ids_for_record_keys
from tablespec.hudi.io import join
from tablespec.hudi.layout_switch import REWRITE_MARK
from tablespec.hudi.merge_on_read import Counting, MergeRules, SliceRead, counting, slice_reads
from tablespec.hudi.services.clustering import refuse_replacing_planned
from tablespec.hudi.services.compaction import pending_plans as pending_compactions
from tablespec.hudi.table import AtLocation, HudiTable, Location
from tablespec.plan.buckets import BucketLayout
from tablespec.results import Rebucketed

# Partitions are rewritten in batches of about this many input bytes (progress is per batch).
BATCH_BYTES = int(os.environ.get("TABLESPEC_REWRITE_BATCH_BYTES", 512 * 1024 * 1024))
# A task holds about this many bytes of rows: a larger partition's buckets are split among tasks.
# Arrow bytes in memory per byte of (snappy, dictionary-encoded) parquet: an estimate.
EXPANSION = 4


@dataclass(frozen=True)
class RebucketJob(AtLocation):
    location: Location            # the table (URI and storage; configuration, never credentials)
    instant: str
    layout: BucketLayout
    hash_fields: tuple[str, ...]
    avro_schema: str
    data_columns: tuple[str, ...]
    read_schema: pa.Schema        # commit time, seqno, record key, then the data columns as stored
    bloom_filter: bool = False    # the table keeps bloom_filters (or a BLOOM writer may follow): filters in footers
    wanted: Counting = Counting(frozenset())   # merge-on-read: the instants whose log blocks count
    rules: MergeRules = MergeRules()           # ... and how their records merge


@dataclass(frozen=True)
class BucketSubset:
    """One task's work: the buckets `b` with `b % subsets == subset` of a partition, from its latest slices."""
    partition: str
    slices: tuple[SliceRead, ...]
    subset: int
    subsets: int


@dataclass
class RebucketResult:
    instant: str
    partitions: int = 0
    file_groups_before: int = 0
    file_groups_after: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    seconds: float = 0.0
    replaced: dict = field(default_factory=dict)

    def actual(self) -> Rebucketed:
        return Rebucketed(partitions=self.partitions, file_groups=f"{self.file_groups_before} -> {self.file_groups_after}",
                          bytes_read=self.bytes_read, bytes_written=self.bytes_written, seconds=round(self.seconds, 2))


def write_subsets(job: RebucketJob, work: tuple[BucketSubset, ...], batches):
    """Executor: write the bucket subsets whose numbers arrive in `batches`."""
    partition_id, token = tasks.task_token()
    for batch in batches:
        stats = [s for i in batch.column(0).to_pylist() for s in _write_subset(job, work[i], partition_id, token)]
        if stats:
            yield tasks.stats_batch(stats)


def _slice_batches(job: RebucketJob, read: SliceRead):
    """A slice's rows in batches: its base file streamed, or, with log files, the merged slice."""
    if read.logs:
        yield from read_slice(job.storage, read, job.wanted, job.rules, job.read_schema).to_batches()
        return
    assert read.base_path is not None, "a slice without log files has a base file"
    with job.storage.open_whole_file(read.base_path) as f:
        file = pq.ParquetFile(f)
        present = set(file.schema_arrow.names)
        yield from file.iter_batches(columns=[n for n in job.read_schema.names if n in present])


def _subset_rows(job: RebucketJob, item: BucketSubset) -> tuple[pa.Table, np.ndarray]:
    """The rows of the item's buckets and their buckets, read slice by slice, batch by batch, so the
    task holds only its share of the partition. Files from before a schema evolution are cast up."""
    count = job.layout.buckets_for(item.partition)
    rows, buckets = [job.read_schema.empty_table()], [np.empty(0, np.int32)]
    for read in item.slices:
        for batch in _slice_batches(job, read):
            ids = bucket_ids_for_record_keys(batch.column(tasks.KEY), list(job.hash_fields), count)
            if item.subsets > 1:
                keep = ids % item.subsets == item.subset
                batch, ids = batch.filter(pa.array(keep)), ids[keep]
            rows.append(align_to_schema(pa.Table.from_batches([batch]), job.read_schema))
            buckets.append(ids)
    return pa.concat_tables(rows), np.concatenate(buckets)


def _write_subset(job: RebucketJob, item: BucketSubset, partition_id: int, token: str) -> list[dict]:
    """Write one base file per bucket of the item that has rows, meta columns preserved."""
    rows, buckets = _subset_rows(job, item)
    order = np.argsort(buckets, kind="stable")
    starts = np.flatnonzero(np.diff(buckets[order], prepend=-1))
    stats = []
    for s, e in zip(starts, [*starts[1:], len(order)]):
        group = rows.take(pa.array(order[s:e]))
        file_id = tasks.new_bucket_file_id(job, item.partition, int(buckets[order[s]]))
        name = BaseFileName(file_id, token, job.instant).format()
        rel = f"{item.partition}/{name}" if item.partition else name
        table = group.select([tasks.COMMIT_TIME, tasks.SEQNO] + list(job.data_columns))
        written = write_base_file(join(job.base, rel), table, commit_time=job.instant, partition_path=item.partition,
                                  partition_id=partition_id, record_keys=group.column(tasks.KEY),
                                  avro_schema_json=job.avro_schema, preserve_meta=True, bloom_filter=job.bloom_filter,
                                  storage=job.storage)
        stats.append(dict(partition=item.partition, file_id=file_id, path=rel, prev_commit="null",
                          num_writes=written.num_rows, num_inserts=written.num_rows, num_updates=0, num_deletes=0,
                          bytes=written.size, invalid=0, invalid_sample=""))
    return stats


def rebucket(spark, spec, table: HudiTable, partitions: list[str] | None, avro_schema: str,
             progress=None, lock=None) -> RebucketResult:
    """Rewrite `partitions` (None: all) into the spec's bucket layout as one replacecommit.

    The caller holds the table `lock` (verified at the commit point) and has run recovery. Any error rolls the instant back;
    a killed driver leaves an inflight replacecommit that the next apply rolls back.
    """
    base = table.base
    started = time.monotonic()
    timeline, view = table.timeline, table.view
    wanted = view.partitions if partitions is None else partitions
    slices = {p: [s for s in view.latest_slices(p) if s.base_file is not None or s.log_files] for p in wanted}
    slices = {p: ss for p, ss in slices.items() if ss}
    total = sum(s.size for ss in slices.values() for s in ss)
    replaced = {p: [s.file_id for s in ss] for p, ss in slices.items()}
    refuse_replacing_planned(timeline, replaced, base)
    _refuse_compacting(timeline, replaced, base)
    refuse_missing_latest(view, wanted, doing="to rewrite the partitions into buckets")
    logs = any(s.log_files for ss in slices.values() for s in ss)
    wanted_blocks = counting(timeline)
    reads = {p: slice_reads(timeline, ss, wanted_blocks) for p, ss in slices.items()}
    with Transaction(table, "replacecommit", lock, basis=timeline, rewrites=wanted) as txn:
        job = RebucketJob(table.location, txn.instant, BucketLayout.of_bucket_spec(spec), tuple(spec.effective_hash_fields),
                          avro_schema, tuple(c.name for c in spec.spec.columns), _read_schema(spec),
                          bloom_filters_expected(table.table_config.to_properties()), wanted_blocks,
                          MergeRules.of(table.table_config) if logs else MergeRules())
        result = RebucketResult(txn.instant, partitions=len(slices),
                                file_groups_before=sum(len(ss) for ss in slices.values()), replaced=replaced)
        stats: list[dict] = []
        for batch in _batches(slices):
            stats += _rewrite(spark, job, _subsets(slices, reads, batch, job.layout,
                                                   spark.sparkContext.defaultParallelism))
            result.bytes_read += sum(s.size for p in batch for s in slices[p])
            if progress:
                progress(done_partitions=len({s["partition"] for s in stats}), partitions=len(slices),
                         done_bytes=result.bytes_read, total_bytes=total, elapsed=time.monotonic() - started)
            crash_point("mid_write")
        if partition_buckets.kept(table.storage, base, table.table_config, job.layout.rules):   # Hudi 1.x writers
            partition_buckets.save(table.storage, base, job.layout.num_buckets, job.layout.rules, txn.instant)
        txn.commit(stats, commit_metadata(stats, "INSERT_OVERWRITE", avro_schema,  # Hudi's record index follows
                                          {"tablespec.action": "rebucket", REWRITE_MARK: "true"}, replaced=replaced))
    result.file_groups_after = len(stats)
    result.bytes_written = sum(s["bytes"] for s in stats)
    result.seconds = time.monotonic() - started
    return result


def _refuse_compacting(timeline, replaced: dict[str, list[str]], base: str) -> None:
    """A rewrite must not replace file groups under a pending compaction (merge-on-read): the plan
    could never run, and Hudi's writers would wait for it."""
    planned = set().union(*(plan.file_ids() for plan in pending_compactions(timeline).values()))
    hit = sorted(f"{p}/{f}" if p else f for p, ids in replaced.items() for f in ids if (p, f) in planned)
    if hit:
        raise TablespecError(f"{base}: the rewrite would replace file groups under a pending compaction "
                                f"({', '.join(hit[:5])}{', ...' if len(hit) > 5 else ''}); run the compaction "
                                "first (Apache Hudi's `run_compaction`, or tablespec with compaction.runBy: tablespec)")


def _batches(slices: dict) -> list[list[str]]:
    batches, current, size = [], [], 0
    for partition in sorted(slices):
        current.append(partition)
        size += sum(s.size for s in slices[partition])
        if size >= BATCH_BYTES:
            batches.append(current)
            current, size = [], 0
    return batches + ([current] if current else [])


def _subsets(slices: dict, reads: dict, batch: list[str], layout: BucketLayout, parallelism: int) -> list[BucketSubset]:
    """The tasks of a partition batch: each partition's buckets in as many subsets as its estimated
    size needs to stay within the task memory budget (`tasks.task_memory_bytes`), and, when the
    batch has fewer partitions than `parallelism`, enough to keep every core busy; never more
    subsets than buckets."""
    spread = math.ceil(parallelism / len(batch))
    budget = tasks.task_memory_bytes()
    work = []
    for partition in sorted(batch, key=lambda p: -sum(s.size for s in slices[p])):  # largest first
        size = sum(s.size for s in slices[partition]) * EXPANSION
        subsets = min(layout.buckets_for(partition), max(spread, math.ceil(size / budget)))
        work += [BucketSubset(partition, tuple(reads[partition]), k, subsets) for k in range(subsets)]
    return work


def _read_schema(spec) -> pa.Schema:
    """The Arrow columns tasks read, as Spark reads the table's base files (`table_ddl`, all nullable)."""
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import _parse_datatype_string

    schema = to_arrow_schema(_parse_datatype_string(table_ddl(spec)))  # type: ignore[arg-type]  # a DDL of columns parses to a StructType
    return pa.schema([f for f in schema if f.name not in (tasks.PART, "_hoodie_file_name")])


def _rewrite(spark, job: RebucketJob, work: list[BucketSubset]) -> list[dict]:
    """One task per bucket subset, no shuffle: each task reads its partition and writes its buckets."""
    rows = (spark.range(len(work), numPartitions=len(work))
            .mapInArrow(functools.partial(write_subsets, job, tuple(work)), tasks.STATS_DDL).collect())
    return [r.asDict() for r in rows]

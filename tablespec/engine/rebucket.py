"""Bucket bootstrap and rescale: rewrite partitions into bucket file groups in one replacecommit.

Rows keep their record key, partition path, `_hoodie_commit_time` and `_hoodie_commit_seqno`;
only `_hoodie_file_name` changes. New files are written partition batch by partition batch
(progress is reported after each batch), all under the same instant, and the old file groups
are replaced when the replacecommit completes: readers see the old layout or the new one.
"""
from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass, field


from tablespec.engine import tasks
from tablespec.engine.arrow.basefile import write_base_file
from tablespec.engine.arrow.hashing import bucket_ids_for_record_keys
from tablespec.engine.commit import Transaction, commit_metadata, crash_point
from tablespec.engine.evolution import read_files
from tablespec.engine.record_index import on_commit
from tablespec.engine.schema import table_ddl
from tablespec.hudi.clustering import refuse_replacing_planned
from tablespec.hudi.fs_view import FileSystemView, refuse_missing_latest
from tablespec.hudi.io import LOCAL, Storage, join, storage_for
from tablespec.hudi.naming import BaseFileName
from tablespec.hudi.timeline import Timeline
from tablespec.plan.buckets import BucketLayout

# Partitions are rewritten in batches of about this many input bytes (progress is per batch).
BATCH_BYTES = int(os.environ.get("TABLESPEC_REWRITE_BATCH_BYTES", 512 * 1024 * 1024))


@dataclass(frozen=True)
class RebucketJob:
    base: str
    instant: str
    layout: BucketLayout
    hash_fields: tuple[str, ...]
    avro_schema: str
    data_columns: tuple[str, ...]
    table_ddl: str
    storage: Storage = LOCAL


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

    def actual(self) -> dict:
        return {"partitions": self.partitions, "file_groups": f"{self.file_groups_before} -> {self.file_groups_after}",
                "bytes_read": self.bytes_read, "bytes_written": self.bytes_written, "seconds": round(self.seconds, 2)}


def assign_buckets(job: RebucketJob, batches):
    """Executor: each stored row's bucket file group under the new layout (all new file groups)."""
    for batch in batches:
        if not len(batch):
            continue
        keys, parts = batch.column(tasks.KEY), batch.column(tasks.PART)
        buckets = bucket_ids_for_record_keys(keys, list(job.hash_fields), tasks.buckets_per_row(job.layout, parts))
        yield batch.append_column(tasks.FG, tasks.bucket_file_groups(job, parts, buckets, {}))


def write_buckets(job: RebucketJob, batches):
    """Executor: write each bucket file group's rows, meta columns preserved."""
    partition_id, token = tasks.task_token()
    stats = []
    for file_id, group in tasks.by_file_group(batches):
        partition = group.column(tasks.PART)[0].as_py()
        name = BaseFileName(file_id, token, job.instant).format()
        rel = f"{partition}/{name}" if partition else name
        table = group.select([tasks.COMMIT_TIME, tasks.SEQNO] + list(job.data_columns))
        written = write_base_file(join(job.base, rel), table, commit_time=job.instant, partition_path=partition,
                                  partition_id=partition_id, record_keys=group.column(tasks.KEY),
                                  avro_schema_json=job.avro_schema, preserve_meta=True, storage=job.storage)
        stats.append(dict(partition=partition, file_id=file_id, path=rel, prev_commit="null",
                          num_writes=written.num_rows, num_inserts=written.num_rows, num_updates=0, num_deletes=0,
                          bytes=written.size, invalid=0, invalid_sample=""))
    if stats:
        yield tasks.stats_batch(stats)


def rebucket(spark, spec, location: str, partitions: list[str] | None, avro_schema: str,
             progress=None, lock=None) -> RebucketResult:
    """Rewrite `partitions` (None: all) into the spec's bucket layout as one replacecommit.

    The caller holds the table `lock` (verified at the commit point) and has run recovery. Any error rolls the instant back;
    a killed driver leaves an inflight replacecommit that the next apply rolls back.
    """
    storage, base = storage_for(location)
    started = time.monotonic()
    timeline = Timeline.load(storage, base)
    view = FileSystemView.build(storage, base, timeline)
    wanted = view.partitions if partitions is None else partitions
    slices = {p: [s for s in view.latest_slices(p) if s.base_file is not None] for p in wanted}
    slices = {p: ss for p, ss in slices.items() if ss}
    total = sum(s.base_file.size for ss in slices.values() for s in ss)
    replaced = {p: [s.file_id for s in ss] for p, ss in slices.items()}
    refuse_replacing_planned(timeline, replaced, base)
    refuse_missing_latest(view, wanted, doing="to rewrite the partitions into buckets")
    with Transaction(storage, base, "replacecommit", lock, basis=timeline, rewrites=wanted) as txn:
        job = RebucketJob(base, txn.instant, BucketLayout.from_spec(spec), tuple(spec.effective_hash_fields),
                          avro_schema, tuple(c.name for c in spec.spec.columns), table_ddl(spec), storage)
        result = RebucketResult(txn.instant, partitions=len(slices),
                                file_groups_before=sum(len(ss) for ss in slices.values()), replaced=replaced)
        stats: list[dict] = []
        for batch in _batches(slices):
            stats += _rewrite(spark, job, spec, [s.base_file.path for p in batch for s in slices[p]])
            result.bytes_read += sum(s.base_file.size for p in batch for s in slices[p])
            if progress:
                progress(done_partitions=len({s["partition"] for s in stats}), partitions=len(slices),
                         done_bytes=result.bytes_read, total_bytes=total, elapsed=time.monotonic() - started)
            crash_point("mid_write")
        marks = on_commit(spark, storage, base, txn.instant, view, stats, replaced)  # a RECORD_LEVEL index follows
        txn.commit(stats, commit_metadata(stats, "INSERT_OVERWRITE", avro_schema,
                                          {"tablespec.action": "rebucket", **marks}, replaced=replaced))
    result.file_groups_after = len(stats)
    result.bytes_written = sum(s["bytes"] for s in stats)
    result.seconds = time.monotonic() - started
    return result


def _batches(slices: dict) -> list[list[str]]:
    batches, current, size = [], [], 0
    for partition in sorted(slices):
        current.append(partition)
        size += sum(s.base_file.size for s in slices[partition])
        if size >= BATCH_BYTES:
            batches.append(current)
            current, size = [], 0
    return batches + ([current] if current else [])


def _rewrite(spark, job: RebucketJob, spec, files: list[str]) -> list[dict]:
    from pyspark.sql.types import StringType, StructField, StructType

    df = (read_files(spark, job.base, files, spec, job.table_ddl)  # files from before a schema evolution cast up
          .select(tasks.COMMIT_TIME, tasks.SEQNO, tasks.KEY, tasks.PART, *job.data_columns))
    schema = StructType(df.schema.fields + [StructField(tasks.FG, StringType())])
    tagged = df.mapInArrow(functools.partial(assign_buckets, job), schema)
    n = max(1, spark.sparkContext.defaultParallelism * 2)
    rows = (tagged.repartition(n, tasks.FG)
            .mapInArrow(functools.partial(write_buckets, job), tasks.STATS_DDL).collect())
    return [r.asDict() for r in rows]

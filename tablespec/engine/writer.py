"""The copy-on-write writer's driver: one write = one commit transaction on the timeline.

Order of events: take the table lock, finish or roll back leftover work, check the table
matches the spec, check the data's schema, request + start the instant (with a heartbeat),
let executors write file slices, refuse bad keys / pending-clustering conflicts, remove files
of failed task attempts, write partition metadata, and complete the instant last. Any error
after the instant was requested rolls it back; a killed driver leaves an inflight instant
whose heartbeat expires, and the next writer or apply rolls it back.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
from dataclasses import dataclass

import pyarrow.parquet as pq

from tablespec.engine import tasks
from tablespec.engine.commit import Transaction, commit_metadata, locked
from tablespec.engine.schema import conform, data_schema
from tablespec.engine.session import job_description
from tablespec.errors import HudiFormatError, TablespecError
from tablespec.hudi.avro import to_avro_schema
from tablespec.hudi.config import bloom_filters_expected, read_table_config
from tablespec.hudi.clustering import planned_file_groups, refuse_replacing_planned
from tablespec.hudi.fs_view import FileSystemView, refuse_missing_latest
from tablespec.hudi.index_coverage import build_marks, delta_marks, refuse_unseen
from tablespec.engine.parquet import read_parquet
from tablespec.hudi.io import storage_for
from tablespec.hudi.lock import TableLock
from tablespec.hudi.naming import bucket_of, new_file_id
from tablespec.hudi.conflict import ALL_PARTITIONS
from tablespec.hudi.timeline import Timeline
from tablespec.plan.buckets import BucketLayout
from tablespec.plan.builder import table_actions
from tablespec.plan.columns import spec_columns
from tablespec.state import observe

OPERATIONS = {"insert": "INSERT", "upsert": "UPSERT", "bulk_insert": "BULK_INSERT", "delete": "DELETE"}
DEFAULT_RECORD_BYTES = 128


def table_avro_schema(spec) -> str:
    """The table's Avro schema (JSON) as commits record it in extraMetadata.schema."""
    return json.dumps(to_avro_schema(spec_columns(spec), spec.metadata.name), separators=(",", ":"))


class WriteRefused(TablespecError):
    """A write that must not happen (table absent or out of date, bad keys, conflicts); nothing was committed."""


@dataclass(frozen=True)
class WriteResult:
    instant: str | None     # None: nothing was written (empty input)
    operation: str
    inserted: int
    updated: int
    deleted: int
    files: tuple[str, ...]

    index_buckets: int | None = None   # RECORD_LEVEL: the index's bucket count this commit used
    ignored: int = 0                   # incoming rows not written: the stored row's ordering value is greater

    def __str__(self) -> str:
        if self.instant is None:
            return f"nothing written ({self.operation}): the input has no rows, so no commit was made"
        ignored = f", {self.ignored} ignored (the stored row is newer)" if self.ignored else ""
        return (f"committed {self.instant} ({self.operation}): {self.inserted} inserted, {self.updated} updated, "
                f"{self.deleted} deleted{ignored}, {len(self.files)} files written")


def _pending_clustering_groups(timeline: Timeline) -> set[str]:
    """File ids under a pending clustering plan (requested or inflight replacecommit)."""
    return {file_id for _, file_id in planned_file_groups(timeline)}


class TableWriter:
    """Writes DataFrames into one table as its spec declares (keys, partitioning, index)."""

    def __init__(self, spark, spec, location: str, lock_timeout: float = 30.0,
                 heartbeat_tolerance: float | None = None):
        self.spark, self.spec, self.lock_timeout = spark, spec, lock_timeout
        self.heartbeat_tolerance = heartbeat_tolerance
        self.storage, self.base = storage_for(location)

    def write(self, df, operation: str = "upsert") -> WriteResult:
        if operation not in OPERATIONS:
            raise WriteRefused(f"unknown operation {operation!r}; choose one of {', '.join(OPERATIONS)}")
        with locked(self.base, "writer", self.lock_timeout, self.heartbeat_tolerance) as lock:
            return self._write_locked(df, operation, lock)

    def _record_index(self, timeline, props: dict, rows: int = 0):
        """RECORD_LEVEL tables: the index as of `timeline` (None for other indexes)."""
        if self.spec.spec.index.type != "RECORD_LEVEL":
            return None
        from tablespec.engine.record_index import chosen_num_buckets, index_job
        return index_job(self.storage, self.base, timeline, chosen_num_buckets(self.spec, props, rows),
                         self.spec.spec.ordering_field)

    def _check_table(self):
        state = observe(self.base)
        name = self.spec.qualified_name
        if not state.exists:
            raise WriteRefused(f"table {name} does not exist at {self.base}; run `tablespec plan` and `tablespec apply` first")
        pending = table_actions(self.spec, state)
        if pending:
            kinds = ", ".join(a.kind for a in pending)
            raise WriteRefused(f"table {name} does not match its spec ({kinds} pending); "
                               "run `tablespec plan` and `tablespec apply` first")
        if not state.config.populate_meta_fields:
            raise WriteRefused(f"table {name} does not populate Hudi meta fields; tablespec cannot write it yet")
        return state

    def _write_locked(self, df, operation: str, lock: TableLock) -> WriteResult:
        spec = self.spec.spec
        self._check_table()
        auto = spec.record_key.auto_generate
        if auto and operation in ("upsert", "delete") and "_hoodie_record_key" not in df.columns:
            raise WriteRefused(f"{operation} into {self.spec.qualified_name} needs the `_hoodie_record_key` column: "
                               "its keys are auto-generated, so only the stored key identifies a record")
        df = conform(df, self.spec, key_column_allowed=auto)
        if df.isEmpty():  # reads up to the first row: an empty input makes no (empty) commit
            return WriteResult(None, operation, 0, 0, 0, ())
        return self._commit(df, operation, lock)

    def overwrite(self, df, lock: TableLock) -> WriteResult:
        """Replace every file group with `df` written under this spec (one replacecommit).

        For a table whose keys or partitioning change: the caller holds `lock`, has recovered
        leftover work, and switches hoodie.properties to the new spec afterwards."""
        return self._commit(conform(df, self.spec), "bulk_insert", lock, replace=True)

    def _commit(self, df, operation: str, lock: TableLock, replace: bool = False) -> WriteResult:
        timeline = Timeline.load(self.storage, self.base)
        view = FileSystemView.build(self.storage, self.base, timeline)
        props = read_table_config(self.storage, self.base).to_properties()
        index = None if replace else self._record_index(timeline, props)
        if index is not None:  # tagging through the index: it must have seen every data commit
            refuse_unseen(timeline, self.base, f"a RECORD_LEVEL {operation}")
        replaced = None
        if replace:  # everything goes to new file groups and replaces every current one
            replaced = {}
            for s in view.latest_slices():
                replaced.setdefault(s.partition, []).append(s.file_id)
            refuse_replacing_planned(timeline, replaced, self.base)
            refuse_missing_latest(view, doing="to rewrite the table")  # it would carry older slices over
        with Transaction(self.storage, self.base, "replacecommit" if replace else "commit", lock, basis=timeline,
                         rewrites=[ALL_PARTITIONS] if replace else ()) as txn:
            job = self._job(txn.instant, operation, view, props)
            if index is not None and operation in ("insert", "bulk_insert"):
                job = dataclasses.replace(job, operation="upsert")  # keys stay unique across the table
            if replace:
                job = dataclasses.replace(job, bucket_groups={}, base_files={})
            stats = self._run(df, job, view, index)
            self._refuse_bad(stats, timeline)
            if not replace:  # a lost latest file: the tasks read the older slice (or missed its keys)
                refuse_missing_latest(view, {s["partition"] for s in stats}, doing=f"the {operation}")
            if replace:  # everything is rewritten: the index is rebuilt from the new files
                index = self._record_index(timeline, props, rows=sum(s["num_writes"] for s in stats))
            if index is not None:
                from tablespec.engine.record_index import write_index_delta
                write_index_delta(self.spark, self.storage, self.base, txn.instant, index.num_buckets, view, stats,
                                  replaced, full=replace)
            marks = None if index is None else build_marks(timeline) if replace else delta_marks()
            txn.commit(stats, commit_metadata(stats, "INSERT_OVERWRITE_TABLE" if replace else OPERATIONS[operation],
                                              table_avro_schema(self.spec), marks, replaced=replaced))
        return WriteResult(txn.instant, operation, sum(s["num_inserts"] for s in stats),
                           sum(s["num_updates"] for s in stats), sum(s["num_deletes"] for s in stats),
                           tuple(s["path"] for s in stats), index.num_buckets if index else None,
                           sum(s.get("num_ignored") or 0 for s in stats))

    def _job(self, instant_ts: str, operation: str, view: FileSystemView, props: dict[str, str]) -> tasks.WriteJob:
        spec = self.spec.spec
        slices = view.latest_slices()
        base_files = {s.file_id: (s.partition, s.base_file.name, s.base_instant, s.base_file.size)
                      for s in slices if s.base_file is not None}
        bucket_groups: dict = {}
        if spec.index.type == "BUCKET":
            for s in slices:
                key = (s.partition, bucket_of(s.file_id))
                if key in bucket_groups:
                    raise HudiFormatError(f"{self.base}: partition {s.partition!r} has two file groups for bucket "
                                          f"{key[1]}: {bucket_groups[key]} and {s.file_id}; the table is corrupt")
                bucket_groups[key] = s.file_id
        return tasks.WriteJob(
            base=self.base, instant=instant_ts, operation=operation, data_schema=data_schema(self.spec),
            avro_schema=table_avro_schema(self.spec),
            key_fields=tuple(spec.record_key.fields), complex_key=self.spec.complex_record_key, auto_keys=spec.record_key.auto_generate,
            partition_fields=tuple(spec.partitioning.fields), hive_style=spec.partitioning.hive_style,
            timestamp=self.spec.timestamp_partitioning,
            url_encode=False, ordering_field=spec.ordering_field,
            buckets=BucketLayout.from_spec(self.spec),
            hash_fields=tuple(self.spec.effective_hash_fields), bucket_groups=bucket_groups, base_files=base_files,
            bloom_filter=bloom_filters_expected(props), storage=self.storage)

    def _run(self, df, job: tasks.WriteJob, view: FileSystemView, index=None) -> list[dict]:
        """The Spark part: prepare rows, tag them with file groups, write file slices."""
        from pyspark.sql import functions as F

        from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

        fields = [f for f in df.schema.fields if f.name != tasks.KEY]
        out_schema = StructType(fields + [StructField(tasks.KEY, StringType()), StructField(tasks.PART, StringType()),
                                          StructField(tasks.FG, StringType()), StructField(tasks.SEQ, LongType()),
                                          StructField(tasks.INVALID, BooleanType())])
        if job.operation == "bulk_insert" and not job.buckets and index is None:
            per_file = max(1, self.spec.spec.clustering.target_file_size // _record_bytes(
                [s for s in view.latest_slices() if s.base_file is not None], job.storage))
            with job_description(self.spark, "tablespec: write"):
                rows = df.mapInArrow(functools.partial(tasks.write_new_file_groups, job, per_file), tasks.STATS_DDL)
                return [r.asDict() for r in rows.collect()]
        prepared = df.mapInArrow(functools.partial(tasks.prepare, job), out_schema)
        if job.buckets:
            tagged = prepared
            if job.operation == "delete":
                tagged = tagged.filter(F.col(tasks.FG).isin(list(job.base_files)) | F.col(tasks.INVALID))
        else:
            with job_description(self.spark, "tablespec: tag"):
                prepared = prepared.persist()
                if index is not None:
                    from tablespec.engine.record_index import tag
                    tagged = tag(self.spark, prepared, index, job.operation).persist()
                else:
                    tagged = self._tag(prepared, job, view).persist()
                counts = {r[0]: r[1] for r in tagged.filter(F.col(tasks.FG).isNull() & ~F.col(tasks.INVALID))
                          .groupBy(tasks.PART).count().collect()}
            job = _with_insert_targets(job, counts, view, self.spec)
            tagged = tagged.mapInArrow(functools.partial(tasks.assign_inserts, job), tagged.schema)
        n = max(1, self.spark.sparkContext.defaultParallelism * 2)
        # Sorted (Spark spills), each task gets its file groups' rows one file group after another.
        with job_description(self.spark, "tablespec: write"):
            rows = (tagged.repartition(n, tasks.FG).sortWithinPartitions(tasks.FG, tasks.SEQ)
                    .mapInArrow(functools.partial(tasks.write_file_groups, job), tasks.STATS_DDL).collect())
        if not job.buckets:
            prepared.unpersist()
            tagged.unpersist()
        return [r.asDict() for r in rows]

    def _tag(self, prepared, job: tasks.WriteJob, view: FileSystemView):
        """SIMPLE and BLOOM: find each incoming key's file group among the affected partitions."""
        from pyspark.sql import functions as F

        if job.operation in ("insert", "bulk_insert"):
            return prepared
        partitions = [r[0] for r in prepared.select(tasks.PART).distinct().collect()]
        files = [s.base_file.path for p in partitions for s in view.latest_slices(p) if s.base_file is not None]
        if self.spec.spec.index.type == "BLOOM" and files:
            files = self._bloom_candidates(prepared, files)
        if not files:
            tagged = prepared
        else:
            # An explicit schema and input_file_name, not _metadata: files Hudi's row writer wrote
            # (clustering) mark the meta columns as Spark metadata columns in their footer, and once
            # Hudi ran a procedure in the session Spark 3.5 stops resolving `_metadata` on them.
            existing = (read_parquet(self.spark, self.storage, files, f"{tasks.KEY} string, {tasks.PART} string",
                                     file_name_column="_ts_file")
                        .select(F.col(tasks.KEY), F.col(tasks.PART),
                                F.substring_index(F.col("_ts_file"), "_", 1).alias("_ts_efg")))
            tagged = (prepared.join(existing, [tasks.KEY, tasks.PART], "left")
                      .withColumn(tasks.FG, F.col("_ts_efg")).drop("_ts_efg")
                      .select(*prepared.columns))
        if job.operation == "delete":
            tagged = tagged.filter(F.col(tasks.FG).isNotNull() | F.col(tasks.INVALID))
        return tagged

    def _bloom_candidates(self, prepared, files: list[str]) -> list[str]:
        """BLOOM: files whose footer key range, then bloom filter, admits some incoming key."""
        from tablespec.engine.arrow.basefile import read_footer_keys
        ranges, unbounded = [], []
        for f in files:
            lo, hi = read_footer_keys(f, self.storage)
            part = f[len(self.base):].strip("/").rpartition("/")[0] or "."
            if lo is None or hi is None:
                unbounded.append(f)
            else:
                ranges.append((f, "" if part == "." else part, lo, hi))
        if not ranges:
            return unbounded
        hit = (prepared.select(tasks.KEY, tasks.PART)
               .mapInArrow(functools.partial(tasks.bloom_candidates, ranges, storage=self.storage), "file string")
               .distinct().collect())
        return unbounded + [r[0] for r in hit]

    def _refuse_bad(self, stats: list[dict], timeline: Timeline) -> None:
        invalid = sum(s["invalid"] for s in stats)
        if invalid:
            sample = next(s["invalid_sample"] for s in stats if s["invalid"])
            raise WriteRefused(f"{invalid} row(s) have a null or empty record key "
                               f"({', '.join(self.spec.spec.record_key.fields)}); nothing was committed. "
                               f"Sample: {sample}")
        locked = _pending_clustering_groups(timeline) & {s["file_id"] for s in stats}
        if locked:
            raise WriteRefused(f"the write touches file groups under a pending clustering plan: "
                               f"{', '.join(sorted(locked))}; run or roll back the clustering first")

def _with_insert_targets(job: tasks.WriteJob, counts: dict[str, int], view: FileSystemView, spec) -> tasks.WriteJob:
    """Plan where each partition's inserts go: fill small file groups up to the target size, then new groups.
    File groups under a pending clustering plan are not filled (the write would be refused)."""
    from dataclasses import replace
    target = spec.spec.clustering.target_file_size
    small = spec.spec.clustering.small_file_limit
    clustering = _pending_clustering_groups(view.timeline)
    targets = {}
    for partition, n in counts.items():
        slices = [s for s in view.latest_slices(partition) if s.base_file is not None]
        record_bytes = _record_bytes(slices, job.storage)
        per_file = max(1, target // record_bytes)
        plan: list[tuple[str, int]] = []
        remaining = n
        if job.operation != "bulk_insert":
            for s in sorted(slices, key=lambda s: s.base_file.size):
                if remaining <= 0 or s.base_file.size >= small or s.file_id in clustering:
                    continue
                room = max(0, (target - s.base_file.size) // record_bytes)
                take = min(remaining, room)
                if take:
                    plan.append((s.file_id, take))
                    remaining -= take
        for _ in range(math.ceil(remaining / per_file)):
            take = min(remaining, per_file)
            plan.append((new_file_id(), take))
            remaining -= take
        total = sum(t for _, t in plan)
        cumulative, acc = [], 0
        for fid, take in plan:
            acc += take
            cumulative.append((fid, round(acc * tasks.INSERT_SLOTS / total)))
        cumulative[-1] = (cumulative[-1][0], tasks.INSERT_SLOTS)
        targets[partition] = cumulative
    return replace(job, insert_targets=targets)


def _record_bytes(slices, storage) -> int:
    """Average stored bytes per record, from one base file's footer (metadata only)."""
    for s in slices:
        with storage.open_input_file(s.base_file.path, s.base_file.size) as f:
            rows = pq.read_metadata(f).num_rows
        if rows:
            return max(1, s.base_file.size // rows)
    return DEFAULT_RECORD_BYTES

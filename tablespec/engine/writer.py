"""The copy-on-write writer's driver: one write = one commit transaction on the timeline.

Order of events: check the table may be written (it matches the spec where rows are concerned;
no table type, layout or pending Hudi restore tablespec refuses, no compaction it would finish
running elsewhere) and the data's schema (an empty input stops here: nothing changes), take the
table lock and check again where the table changed, finish or roll back leftover work (and the
pending compactions a spec giving compaction to tablespec leaves the writer), request + start
the instant (with a heartbeat), let executors write file slices, refuse bad keys /
pending-clustering conflicts, remove files of failed task attempts, write partition metadata,
and complete the instant last. Any error after the instant was requested rolls it back; a killed
driver leaves an inflight instant whose heartbeat expires, and the next writer or apply rolls it
back.
"""
from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass

from tablespec.engine import tasks
from tablespec.engine.commit import Transaction, commit_metadata, locked, table_lock
from tablespec.engine.compaction import after_deltacommit, running
from tablespec.engine.compaction import run as run_compaction
from tablespec.engine.delta import log_targets, target_partitions, untargeted
from tablespec.engine.schema import conform, data_schema
from tablespec.engine.session import job_description
from tablespec.errors import HudiFormatError, TablespecError
from tablespec.hudi.archive import housekeep
from tablespec.hudi.config import bloom_filters_expected
from tablespec.hudi.formats.avro import to_avro_schema
from tablespec.hudi.formats.naming import bucket_of
from tablespec.hudi.fs_view import FileSystemView, refuse_missing_latest
from tablespec.hudi.layout_switch import REWRITE_MARK
from tablespec.hudi.mdt import record_index_writer, secondary_index
from tablespec.hudi.mdt.bloom_filters_reader import StoredFilters
from tablespec.hudi.mdt.damage import RecordIndexCheck
from tablespec.hudi.services.clustering import planned_file_groups, refuse_replacing_planned
from tablespec.hudi.services.compaction import pending_plans
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import Timeline
from tablespec.hudi.timeline.conflict import ALL_PARTITIONS
from tablespec.hudi.timeline.instant import COMPACTION
from tablespec.hudi.timeline.lock import TableLock
from tablespec.plan.buckets import BucketLayout
from tablespec.plan.builder import write_refusal
from tablespec.plan.columns import spec_columns
from tablespec.plan.compaction import run_by_tablespec
from tablespec.results import Compacted
from tablespec.state import TableState, observe
from tablespec.wording import counted

OPERATIONS = {"insert": "INSERT", "upsert": "UPSERT", "bulk_insert": "BULK_INSERT", "delete": "DELETE"}


def table_avro_schema(spec) -> str:
    """The table's Avro schema (JSON) as commits record it in extraMetadata.schema."""
    return json.dumps(to_avro_schema(spec_columns(spec), spec.metadata.name), separators=(",", ":"))


class WriteRefused(TablespecError):
    """A write that must not happen (table absent or out of date, bad keys, conflicts); nothing was committed."""


@dataclass(frozen=True)
class WriteResult:
    instant: str | None     # None: nothing was written (empty input, or a batch that changes nothing)
    operation: str
    inserted: int
    updated: int
    deleted: int
    files: tuple[str, ...]

    ignored: int = 0                   # incoming rows not written: the stored row's ordering value is greater
    tag_seconds: float = 0.0           # task seconds spent finding file groups (index lookup, insert placement)
    unchanged: bool = False            # the input has rows, but none changes the table: no commit
    archived: int = 0                  # instants housekeeping archived after the commit
    compaction: Compacted | None = None  # the compaction housekeeping ran after a deltacommit
    compaction_failed: str = ""        # why that compaction did not complete (the write stands; apply runs it)

    def __str__(self) -> str:
        if self.unchanged:
            n = self.ignored
            why = (f"{n} row{'s' * (n != 1)} ignored (the stored {'rows are' if n != 1 else 'row is'} newer)" if n
                   else "none of its keys is stored" if self.operation == "delete" else "no row changes the table")
            return f"no changes ({self.operation}): {why}, so no commit was made"
        if self.instant is None:
            return f"nothing written ({self.operation}): the input has no rows, so no commit was made"
        ignored = f", {self.ignored} ignored (the stored row is newer)" if self.ignored else ""
        archived = f"; archived {counted(self.archived, 'instant')}" if self.archived else ""
        compacted = (f"; compacted {counted(int(self.compaction.file_slices), 'file slice')} as {self.compaction.instant}"
                     if self.compaction is not None else "")
        if self.compaction_failed:
            compacted = (f"; the compaction after it did not complete ({self.compaction_failed}): "
                         "`tablespec apply` runs it")
        return (f"committed {self.instant} ({self.operation}): {self.inserted} inserted, {self.updated} updated, "
                f"{self.deleted} deleted{ignored}, {counted(len(self.files), 'file')} written{compacted}{archived}")


def _pending_clustering_groups(timeline: Timeline) -> set[str]:
    """File ids under a pending clustering plan (requested or inflight replacecommit)."""
    return {file_id for _, file_id in planned_file_groups(timeline)}


class TableWriter:
    """Writes DataFrames into one table as its spec declares (keys, partitioning, index)."""

    def __init__(self, spark, spec, table: HudiTable, lock_timeout: float = 30.0,
                 heartbeat_tolerance: float | None = None):
        self.spark, self.spec, self.lock_timeout = spark, spec, lock_timeout
        self.heartbeat_tolerance = heartbeat_tolerance
        self.table, self.storage, self.base = table, table.storage, table.base
        self.index_check = RecordIndexCheck(table)   # the record index checked once per write (`write`)

    def write(self, df, operation: str = "upsert") -> WriteResult:
        if operation not in OPERATIONS:
            raise WriteRefused(f"unknown operation {operation!r}; choose one of {', '.join(OPERATIONS)}")
        self.index_check = RecordIndexCheck(self.table)   # what an earlier write found intact is checked again
        state = self._refuse(observe(self.table.refresh(), check_metadata=False))  # before the lock, the table as it is now
        if (operation == "bulk_insert" and self.spec.spec.index.type == "BUCKET"
                and state.table_config.table_type == "MERGE_ON_READ"):
            raise WriteRefused(f"bulk_insert into the MERGE_ON_READ BUCKET table {self.spec.qualified_name} is refused: "
                               "Apache Hudi 0.15's opens a second file group for a bucket that has one, which readers "
                               "cannot tell apart; use insert (each bucket's rows to a log file of its file group)")
        # Bad input and a compaction another process runs are refused before the lock: recovery under
        # it, and the pending compactions the writer finishes first, change the table.
        self._refuse_running_compaction()
        df = self._conformed(df, operation)
        if df.isEmpty():  # reads up to the first row: an empty input changes nothing (no commit, no housekeeping)
            return WriteResult(None, operation, 0, 0, 0, ())
        if self.spec.spec.index.type == "RECORD_LEVEL":
            self._require_index()
        lock = table_lock(self.table, "writer", self.lock_timeout)
        try:
            # Refusals come before anything changes: `locked` drops metadata-table partitions tablespec
            # does not maintain and rolls back dead writes, which must not happen to a table the write
            # will not touch. The table as it is now: observed again only where it changed.
            generation = self.table.generation
            self.table.fresh_timeline()
            self.table.fresh_config()
            if self.table.generation != generation or state.pending:
                self._refuse(observe(self.table.refresh(), check_metadata=False))
            checked = self.table.generation
            with locked(self.table, "writer", self.lock_timeout, self.heartbeat_tolerance, held=lock) as lock:
                if self.table.generation != checked:  # recovery changed the table: checked again as it left it
                    self._refuse(observe(self.table, check_metadata=False))
                self._finish_compactions(lock)
                seen = self.table.timeline  # as `locked` read it (and a pending compaction run)
                result = self._commit(df, operation, lock)
                if result.instant is not None:  # the write added a commit: compact and archive as the spec says, if due
                    compacted, failed = self._compact_after(lock)
                    if failed:   # the table changed in ways archiving has not been checked against: next time
                        return dataclasses.replace(result, compaction_failed=failed)
                    done = housekeep(self.table, self.spec.archive_settings, seen, added=1 + (compacted is not None))
                    result = dataclasses.replace(result, archived=len(done.archived) if done else 0, compaction=compacted)
                return result
        finally:
            lock.release()

    def _finish_by_tablespec(self) -> bool:
        """Whether the writer finishes pending compactions first (`_finish_compactions`)."""
        return self.table.table_config.table_type == "MERGE_ON_READ" and run_by_tablespec(self.spec)

    def _refuse_running_compaction(self) -> None:
        """A pending compaction the writer would finish first that a live process is running: it
        would refuse under the lock, after recovery changed the table."""
        if not self._finish_by_tablespec():
            return
        for instant in self.table.timeline.pending():
            if instant.action == COMPACTION and running(self.table, instant):
                raise WriteRefused(f"table {self.spec.qualified_name} at {self.base}: compaction {instant.timestamp} "
                                   "is running (its heartbeat is live); write again once it completes or its "
                                   "heartbeat expires")

    def _finish_compactions(self, lock: TableLock) -> None:
        """Run the compactions pending on a merge-on-read table whose spec gives compaction to tablespec
        (a plan its housekeeping scheduled and was killed running, or one left to `apply`): deltacommits
        wait for them (write_refusal), so the writer finishes them first, as `apply` would."""
        if not self._finish_by_tablespec():
            return
        for instant in sorted(pending_plans(self.table.timeline), key=lambda i: i.timestamp):
            run_compaction(self.spark, self.spec, self.table, instant, table_avro_schema(self.spec), lock)

    def _compact_after(self, lock: TableLock) -> tuple[Compacted | None, str]:
        """The compaction housekeeping after a deltacommit, and why it failed ("" when it did not): the
        deltacommit is committed, so a failure is reported, not raised (a caller retrying an insert
        would write its rows twice); the plan stays pending for the next `apply`."""
        if self.table.table_config.table_type != "MERGE_ON_READ":
            return None, ""
        try:
            return after_deltacommit(self.spark, self.spec, self.table, table_avro_schema(self.spec), lock), ""
        except Exception as e:   # noqa: BLE001 - any failure, Spark's included: the write stands
            said = " ".join(line.strip() for line in str(e).splitlines() if line.strip())
            return None, f"{type(e).__name__}: {said[:300]}"

    def _refuse(self, state: TableState) -> TableState:
        """Raise WriteRefused when the table must not be written as observed (planner.write_refusal),
        or when its stored rows contradict a timestamp partitioning hoodie.properties does not record."""
        from tablespec.stored_paths import unconfirmed, unrecorded
        why = write_refusal(self.spec, state)
        if why is None and self.spec.spec.index.type == "RECORD_LEVEL" and record_index_writer.is_enabled(self.table):
            why = self.index_check.damage()   # its keys are looked up: one lost would be inserted again
        if why is None and unrecorded(self.spec, state.table_config.to_properties()):  # reads a few files: only then
            why = unconfirmed(self.spec, state)
            why = why and f"table {self.spec.qualified_name} at {self.base}: {why}"
        if why is not None:
            raise WriteRefused(why)
        return state

    def _require_index(self) -> None:
        """RECORD_LEVEL tables: refuse one whose metadata table has no record index (keys are looked up there)."""
        from tablespec.engine.record_index import IndexMissing, require_index
        try:
            require_index(self.table)
        except IndexMissing as e:
            raise WriteRefused(str(e)) from None

    def _record_index(self):
        """RECORD_LEVEL tables: Hudi's record index as the handle shows it (None for other indexes)."""
        if self.spec.spec.index.type != "RECORD_LEVEL":
            return None
        from tablespec.engine.record_index import IndexMissing, index_job
        try:
            return index_job(self.table, self.spec.spec.ordering_field, self.index_check)
        except IndexMissing as e:
            raise WriteRefused(str(e)) from None

    def _conformed(self, df, operation: str):
        """`df` as the spec's columns (schema.conform); input that does not fit the spec is refused."""
        auto = self.spec.spec.record_key.auto_generate
        if auto and operation in ("upsert", "delete") and "_hoodie_record_key" not in df.columns:
            raise WriteRefused(f"{operation} into {self.spec.qualified_name} needs the `_hoodie_record_key` column: "
                               "its keys are auto-generated, so only the stored key identifies a record")
        return conform(df, self.spec, key_column_allowed=auto)

    def overwrite(self, df, lock: TableLock) -> WriteResult:
        """Replace every file group with `df` written under this spec (one replacecommit).

        For a table whose keys or partitioning change: the caller holds `lock`, has recovered
        leftover work, and switches hoodie.properties to the new spec afterwards."""
        return self._commit(conform(df, self.spec), "bulk_insert", lock, replace=True)

    def _commit(self, df, operation: str, lock: TableLock, replace: bool = False) -> WriteResult:
        # as checked under the lock (`write`); nothing changed the table since
        timeline, view, props = self.table.timeline, self.table.view, self.table.table_config.to_properties()
        index = None if replace else self._record_index()  # the commit keeps it (mdt/sync.py)
        replaced: dict[str, list[str]] | None = None
        if replace:  # everything goes to new file groups and replaces every current one
            replaced = {}
            for s in view.latest_slices():
                replaced.setdefault(s.partition, []).append(s.file_id)
            refuse_replacing_planned(timeline, replaced, self.base)
            refuse_missing_latest(view, doing="to rewrite the table")  # it would carry older slices over
        merge_on_read = not replace and self.table.table_config.table_type == "MERGE_ON_READ"
        # bulk_insert: new file groups of base files in a deltacommit, as Hudi 0.15 writes it (measured);
        # RECORD_LEVEL's runs as an upsert (keys stay unique), to log files where keys are stored
        logs = merge_on_read and (operation != "bulk_insert" or index is not None)
        action = "replacecommit" if replace else "deltacommit" if merge_on_read else "commit"
        with Transaction(self.table, action, lock, basis=timeline,
                         rewrites=[ALL_PARTITIONS] if replace else ()) as txn:
            job = self._job(txn.instant, operation, view, props, df if logs else None)
            if index is not None and operation in ("insert", "bulk_insert"):
                job = dataclasses.replace(job, operation="upsert")  # keys stay unique across the table
            if replace:
                job = dataclasses.replace(job, bucket_groups={}, base_files={})
            elif not merge_on_read:   # the tasks report the secondary indexes' changes (an overwrite's, and
                job = dataclasses.replace(job, indexed=self._indexed_columns())  # log files', are read at commit)
            stats, tag_seconds = self._run(df, job, view, index, bulk=operation == "bulk_insert")
            self._refuse_bad(stats, timeline)
            if merge_on_read and (unseen := untargeted(view, job, stats)):
                raise WriteRefused(f"the input of the {operation} into {self.spec.qualified_name} gave rows in "
                                   f"partition(s) {', '.join(map(repr, unseen))} that its first read did not: it "
                                   "changes between reads (a non-deterministic expression, or a source that "
                                   "changes); nothing was committed. Cache it, or write it from files that stay put")
            if not replace:  # a lost latest file: the tasks read the older slice (or missed its keys)
                refuse_missing_latest(view, {s["partition"] for s in stats}, doing=f"the {operation}")
            ignored = sum(s.get("num_ignored") or 0 for s in stats)
            reports, stats = stats, [s for s in stats if s["path"]]  # file groups left as they are: no slice
            if not stats and not replace:  # the batch changes nothing: no commit, no instant left
                txn.abandon(reports)
                return WriteResult(None, operation, 0, 0, 0, (), ignored=ignored, tag_seconds=tag_seconds,
                                   unchanged=True)
            # replace: hoodie.properties switches to this spec after the commit (layout_switch)
            marks = {REWRITE_MARK: "true"} if replace else None
            txn.commit(stats, commit_metadata(stats, "INSERT_OVERWRITE_TABLE" if replace else OPERATIONS[operation],
                                              table_avro_schema(self.spec), marks, replaced=replaced),
                       secondary_index.gathered(s["index_changes"] for s in stats) if job.indexed else None)
        return WriteResult(txn.instant, operation, sum(s["num_inserts"] for s in stats),
                           sum(s["num_updates"] for s in stats), sum(s["num_deletes"] for s in stats),
                           tuple(s["path"] for s in stats), ignored, tag_seconds)

    def _indexed_columns(self) -> tuple[str, ...]:
        """The columns of the secondary indexes the table keeps (one on a column tablespec cannot key
        was refused before the write began: write_refusal)."""
        named = secondary_index.kept_in(self.table.config)
        return tuple(sorted(set(secondary_index.columns(self.table, named).values()))) if named else ()

    def _job(self, instant_ts: str, operation: str, view: FileSystemView, props: dict[str, str],
             delta=None) -> tasks.WriteJob:
        """What every task gets; `delta`: the batch of a deltacommit, whose partitions' file groups
        get their log targets."""
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
        job = tasks.WriteJob(
            location=self.table.location, instant=instant_ts, operation=operation, data_schema=data_schema(self.spec),
            avro_schema=table_avro_schema(self.spec),
            key_fields=tuple(spec.record_key.fields), complex_key=self.spec.complex_record_key, auto_keys=spec.record_key.auto_generate,
            partition_fields=tuple(spec.partitioning.fields), hive_style=spec.partitioning.hive_style,
            url_encode=spec.partitioning.url_encode, timestamp=self.spec.timestamp_partitioning,
            ordering_field=spec.ordering_field,
            buckets=BucketLayout.from_spec(self.spec),
            hash_fields=tuple(self.spec.effective_hash_fields), bucket_groups=bucket_groups, base_files=base_files,
            lookup=spec.index.type if spec.index.type in ("SIMPLE", "BLOOM") else None,
            target_file_size=spec.clustering.target_file_size, small_file_limit=spec.clustering.small_file_limit,
            no_fill=frozenset(_pending_clustering_groups(view.timeline)),
            bloom_filter=bloom_filters_expected(props),
            stored_filters=StoredFilters.of(self.table) if spec.index.type == "BLOOM" else None)
        if delta is None:
            return job
        # RECORD_LEVEL: a key moving partition leaves a file group of another partition (a delete block)
        partitions = target_partitions(delta, job, frozenset(s.partition for s in slices), len(slices),
                                       moves=spec.index.type == "RECORD_LEVEL")
        # version 9 SIMPLE / BLOOM: blocks name their records' base-file rows, as Hudi 1.2's (measured; its
        # BUCKET and RECORD_INDEX writes name none)
        return dataclasses.replace(job, **log_targets(self.table, view, instant_ts, partitions, job.no_fill),
                                   record_positions=job.lookup is not None and view.timeline.layout >= 2)

    def _run(self, df, job: tasks.WriteJob, view: FileSystemView, index=None,
             bulk: bool = False) -> tuple[list[dict], float]:
        """The Spark part, one job: prepare rows, tag them with file groups, write file slices.
        `bulk`: a bulk_insert (a RECORD_LEVEL one runs as an upsert, keeping keys unique).
        Returns the tasks' reports and the task seconds spent tagging."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

        fields = [f for f in df.schema.fields if f.name != tasks.KEY]
        out_schema = StructType(fields + [StructField(tasks.KEY, StringType()), StructField(tasks.PART, StringType()),
                                          StructField(tasks.FG, StringType()), StructField(tasks.SEQ, LongType()),
                                          StructField(tasks.INVALID, BooleanType())])
        n = max(1, self.spark.sparkContext.defaultParallelism * 2)
        with job_description(self.spark, "tablespec: write"):
            if job.operation == "bulk_insert" and not job.buckets and index is None:
                rows = df.mapInArrow(functools.partial(tasks.write_new_file_groups, job, self._rows_per_file(view, job)),
                                     tasks.STATS_DDL)
                return [r.asDict() for r in rows.collect()], 0.0
            # the log targets (every latest slice's log files and ranges) go to the write tasks only
            lean = dataclasses.replace(job, log_targets=None)
            tagged = df.mapInArrow(functools.partial(tasks.prepare, lean), out_schema)
            spread = True   # the write tasks get their rows by file group (a shuffle)
            seconds = self.spark.sparkContext.accumulator(0.0)
            if job.buckets:
                if job.operation == "delete":   # keys of existing file groups only (a slice may have no base file)
                    tagged = tagged.filter(F.col(tasks.FG).isin(list(job.bucket_groups.values())) | F.col(tasks.INVALID))
            else:
                if index is not None:
                    from tablespec.engine.record_index import tag
                    tagged = tag(self.spark, tagged, index, job.operation, seconds)
                    if bulk and not job.base_files:  # into an empty table: the index tasks write
                        # their rows (one per key) into new file groups, as a bulk_insert lays them out
                        rows = tagged.mapInArrow(functools.partial(tasks.write_new_file_groups, job,
                                                                   self._rows_per_file(view, job), prepared=True),
                                                 tasks.STATS_DDL)
                        return [r.asDict() for r in rows.collect()], seconds.value
                # A partition's rows in one task, by key: keys found there, inserts placed.
                tagged = (tagged.repartition(n, tasks.PART).sortWithinPartitions(tasks.PART, tasks.KEY, tasks.SEQ)
                          .mapInArrow(functools.partial(tasks.timed, seconds,
                                                        functools.partial(tasks.tag_partitions, lean)), tagged.schema))
                # (record-level: a key that moves partition leaves a file group of another partition,
                # by a delete row the index tasks gave that partition: its task writes it there too)
                spread = not self._writes_where_tagged(df, view)
            # Sorted (Spark spills), each task gets its file groups' rows one file group after another.
            rows = ((tagged.repartition(n, tasks.FG) if spread else tagged).sortWithinPartitions(tasks.FG, tasks.SEQ)
                    .mapInArrow(functools.partial(tasks.write_file_groups if job.log_targets is None
                                                  else tasks.append_file_groups, job), tasks.STATS_DDL).collect())
        return [r.asDict() for r in rows], seconds.value

    def _writes_where_tagged(self, df, view: FileSystemView) -> bool:
        """Whether the tasks that tag a partition's rows also write its file groups (no second
        shuffle, one Python stage less: on a small batch, the tasks' start-up is most of the write).
        Only where no task gets more to write than when spread by file group: no partition's latest
        slices add up to more than one target file, and the batch is smaller than one target file by
        Spark's estimate (an unknown size is huge), so its inserts open few new file groups."""
        target = self.spec.spec.clustering.target_file_size
        stored: dict[str, int] = {}
        for s in view.latest_slices():
            stored[s.partition] = stored.get(s.partition, 0) + s.size
        if max(stored.values(), default=0) > target:
            return False
        return int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes())) < target

    def _rows_per_file(self, view: FileSystemView, job: tasks.WriteJob) -> int:
        """Records per new file group: the target file size at the table's bytes per record."""
        return max(1, self.spec.spec.clustering.target_file_size // tasks.record_bytes(
            [(s.file_id, s.base_file.path, s.base_file.size) for s in view.latest_slices() if s.base_file is not None],
            job.storage))

    def _refuse_bad(self, stats: list[dict], timeline: Timeline) -> None:
        invalid = sum(s["invalid"] for s in stats)
        if invalid:
            sample = next(s["invalid_sample"] for s in stats if s["invalid"])
            raise WriteRefused(f"{invalid} row(s) have a null or empty record key "
                               f"({', '.join(self.spec.spec.record_key.fields)}); nothing was committed. "
                               f"Sample: {sample}")
        locked = _pending_clustering_groups(timeline) & {s["file_id"] for s in stats if s["path"]}
        if locked:
            raise WriteRefused(f"the write touches file groups under a pending clustering plan: "
                               f"{', '.join(sorted(locked))}; run or roll back the clustering first")

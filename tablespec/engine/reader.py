"""Snapshot, time-travel and incremental reads: the latest completed file slices, as Spark reads parquet.

Which files to read is decided from metadata only (timeline + file-system view); Spark only
reads them. Filters (engine/filters.py) prune: an equality filter on every hash field of a BUCKET
table to one bucket; with the metadata table's column statistics, base files whose ranges rule a
condition out are skipped, and with its partition statistics, in a partition whose range rules one out
(latest snapshot only), any slice whose files' (log files' too) column statistics rule it out
(mdt/column_stats_reader.py, one lookup for both; other slices with log files are always read); with a
secondary index (version 9) on a column an equality or IN filter compares, only the
file groups the record index places the keys of those values in (mdt/secondary_index_reader.py; latest
snapshot only); with its `bloom_filters`, an equality on every record-key field skips the base files whose
filter rules the key out.
On a merge-on-read table a snapshot reads each slice with log files merged on an executor
(arrow/merge.py: one slice at a time, so memory is bounded per slice); the read-optimized view
reads the newest base file of each file group only, as Hudi's read-optimized query does.
"""
from __future__ import annotations

import functools

import pyarrow as pa

from tablespec.arrow.bloom import parse_bloom_filter
from tablespec.arrow.keys import record_keys
from tablespec.arrow.merge import read_slice
from tablespec.engine.evolution import read_files
from tablespec.engine.filters import Condition, conditions, equalities, spark_filter
from tablespec.engine.schema import META_FIELDS, data_schema, table_ddl
from tablespec.errors import TablespecError
from tablespec.hudi.archive import ArchivedTimeline
from tablespec.hudi.formats.avro import from_avro_schema
from tablespec.hudi.formats.naming import bucket_of
from tablespec.hudi.fs_view import FileSlice
from tablespec.hudi.hashing import record_key_hashes
from tablespec.hudi.io import Storage
from tablespec.hudi.mdt import column_stats, column_stats_reader, secondary_index_reader
from tablespec.hudi.mdt.bloom_filters_reader import StoredFilters
from tablespec.hudi.merge_on_read import Counting, MergeRules, SliceRead, counting, incremental_slices, slice_reads
from tablespec.hudi.services.clean import earliest_readable_instant
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import Timeline
from tablespec.hudi.timeline.instant import SAVEPOINT, Instant
from tablespec.plan.buckets import BucketLayout
from tablespec.types import parse_type, stored


class ReadError(TablespecError):
    """A read that cannot be served (unknown or cleaned instant, bad filter)."""


SNAPSHOT, READ_OPTIMIZED = "snapshot", "read_optimized"
VIEWS = (SNAPSHOT, READ_OPTIMIZED)


def snapshot_files(table: HudiTable, as_of: str | None = None, spec=None, filters=None) -> list[str]:
    """Base files a snapshot (as of a completed instant) reads, pruned by bucket when possible
    (from the handle's timeline and view)."""
    return [s.base_file.path for s in snapshot_slices(table, as_of, spec, filters) if s.base_file is not None]


def snapshot_slices(table: HudiTable, as_of: str | None = None, spec=None, filters=None,
                    view: str = SNAPSHOT) -> list[FileSlice]:
    """The file slices a snapshot (as of a completed instant) reads, pruned by `filters` (a mapping or
    conditions, engine/filters.py; only with `spec`) when possible; `view` READ_OPTIMIZED: each file
    group's newest slice with a base file, without its log files."""
    return _slices(table, as_of, spec, _conditions(spec, filters) if spec is not None else (), view)


def _slices(table: HudiTable, as_of: str | None, spec, conds: tuple[Condition, ...], view: str) -> list[FileSlice]:
    """`snapshot_slices` pruned by conditions already normalized."""
    base, timeline = table.base, table.timeline
    if as_of is not None:
        earliest = earliest_readable_instant(timeline)
        savepoints = {i.timestamp for i in timeline.completed() if i.action == SAVEPOINT}
        if earliest is not None and as_of < earliest and as_of not in savepoints:
            raise ReadError(f"{base}: instant {as_of} has been cleaned: its files were deleted under the table's "
                            f"retention (spec.retention.keepCommits); the earliest instant still readable is "
                            f"{earliest}")
        completed = [i.timestamp for i in timeline.commits()]
        if as_of not in completed:
            if completed and as_of < completed[0] and ArchivedTimeline.of(table).contains_completed(as_of):
                raise ReadError(f"{base}: instant {as_of} has been archived (spec.retention.archive): time travel "
                                f"reads the active timeline, whose earliest commit is {completed[0]}")
            hint = f"; the oldest retained commit is {completed[0]}" if completed and as_of < completed[0] else ""
            raise ReadError(f"{base}: {as_of} is not a completed commit on the timeline{hint}")
    kinds = {f.name: column_stats.kind_of(f) for f in data_schema(spec)} if conds else {}
    files = table.view
    if view == READ_OPTIMIZED:
        slices = [FileSlice(s.file_id, s.partition, s.base_instant, s.base_file)
                  for g in files.file_groups(as_of=as_of)
                  if (s := next((s for s in reversed(g.slices) if s.base_file is not None
                                 and (as_of is None or s.base_instant <= as_of)), None)) is not None]
    else:
        slices = [s for s in files.latest_slices(as_of=as_of) if s.base_file is not None or s.log_files]
    if not conds:
        return slices
    key = _filter_key(spec, equalities(conds))
    key_hash = _filter_hash(spec, key)
    if key_hash is not None:
        layout = BucketLayout.of_bucket_spec(spec)  # buckets per partition (RFC-89) decide the modulus
        slices = [s for s in slices if bucket_of(s.file_id) == (key_hash & 0x7FFFFFFF) % layout.buckets_for(s.partition)]
    if as_of is None and (groups := secondary_index_reader.file_groups(table, conds, kinds)) is not None:
        slices = [s for s in slices if (s.partition, s.file_id) in groups]
    if key is not None:
        slices = _skipped_by_bloom_filters(table, slices, key)
    return column_stats_reader.slices_left(table, slices, conds, kinds, latest=as_of is None)


def _conditions(spec, filters) -> tuple[Condition, ...]:
    return conditions(filters, [*META_FIELDS, *data_schema(spec).names])


def _filter_key(spec, filters: dict) -> pa.Array | None:
    """The record key (a one-element array) an equality filter on every key field pins down."""
    key_fields = spec.spec.record_key.fields if spec is not None else ()
    if not filters or not key_fields or not set(key_fields) <= set(filters):
        return None
    schema = data_schema(spec)
    try:
        row = pa.table({f: pa.array([filters[f]], schema.field(f).type) for f in key_fields})
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return None          # a value of another type: Spark compares it, no key to derive
    keys, invalid = record_keys(row, key_fields, spec.complex_record_key)
    return None if invalid.any() else keys


def _filter_hash(spec, key: pa.Array | None) -> int | None:
    """The key hash an equality filter on all key fields pins down, if the table is bucketed on them."""
    if key is None or spec.spec.index.type != "BUCKET":
        return None
    hash_fields = spec.effective_hash_fields
    if set(hash_fields) != set(spec.spec.record_key.fields):
        return None  # key fields beyond the hash fields are unknown: cannot build the key
    return int(record_key_hashes(key, hash_fields).view("uint32")[0])


def _skipped_by_bloom_filters(table: HudiTable, slices: list[FileSlice], key: pa.Array) -> list[FileSlice]:
    """`slices` less the base files (without log files) whose bloom filter in the metadata table's
    `bloom_filters` rules the key out (no footer opened; a file it holds no filter of is read)."""
    stored = StoredFilters.of(table)
    files = {(s.partition, s.base_file.name) for s in slices if not s.log_files and s.base_file is not None}
    if stored is None or not files:
        return slices
    found = stored.filters(table.storage, files)
    return [s for s in slices if s.log_files or s.base_file is None
            or (f := found.get((s.partition, s.base_file.name))) is None
            or bool(parse_bloom_filter(*f).might_contain(key)[0])]


def read(spark, table: HudiTable, spec, as_of: str | None = None, filters=None, view: str = SNAPSHOT):
    """A DataFrame of the table (meta columns first) as of the latest or a given commit, as the
    table is now (a handle may have read it earlier: a read sees the latest commits). `view`:
    SNAPSHOT (log files merged) or READ_OPTIMIZED (base files only; the same on copy-on-write)."""
    if view not in VIEWS:
        raise ReadError(f"unknown view {view!r}: {' or '.join(VIEWS)}")
    # The table's files as they are now: a view kept over an unchanged timeline would still list a
    # base file removed outside any instant (lost or deleted by hand), which readers go on without.
    timeline = table.refresh().timeline
    conds = _conditions(spec, filters)          # a bad filter is refused before anything is read
    slices = _slices(table, as_of, spec, conds, view)
    merged = [s for s in slices if s.log_files]
    files = [s.base_file.path for s in slices if not s.log_files and s.base_file is not None]
    ddl = table_ddl(spec)
    # Files written before a schema evolution are read with their own columns and converted.
    df = read_files(spark, table, files, spec, ddl) if files else spark.createDataFrame([], ddl)
    if merged:
        df = df.unionByName(_merged_slices(spark, table, merged, counting(table.timeline, as_of), ddl))
    if as_of is not None:
        df = _as_of_columns(df, timeline.latest_schema(as_of=as_of), spec)
    return spark_filter(df, conds)


def _merged_slices(spark, table: HudiTable, slices: list[FileSlice], wanted: Counting, ddl: str):
    """The slices with log files as one DataFrame of `ddl`'s columns, each slice merged by a task
    with the log blocks of the instants `wanted`."""
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import _parse_datatype_string

    schema = _parse_datatype_string(ddl)
    reads = slice_reads(table.timeline, slices, wanted)
    config = table.config
    assert config is not None, "a table with log files has hoodie.properties"
    rules = MergeRules.of(config)
    task = functools.partial(_read_slices, table.storage, reads, wanted, rules,
                             to_arrow_schema(schema))  # type: ignore[arg-type]  # a DDL of columns parses to a StructType
    n = max(1, min(len(reads), spark.sparkContext.defaultParallelism * 2))
    # the slices' numbers from a range: no rows sent from the driver, no shuffle to spread them
    return spark.range(len(reads), numPartitions=n).mapInArrow(task, schema)


def _read_slices(storage: Storage, reads: list[SliceRead], wanted: Counting, rules: MergeRules, schema: pa.Schema,
                 batches):
    for batch in batches:
        for i in batch.column(0).to_pylist():
            yield from read_slice(storage, reads[i], wanted, rules, schema).to_batches()


def incremental_commits(timeline: Timeline, begin: str, end: str | None = None) -> list[Instant]:
    """The commits an incremental query from `begin` to `end` returns rows of, as Apache Hudi reads
    the table's version, after `begin` up to `end` (begin excluded, end included): version 6 (layout 1)
    by requested time; versions 8/9 (layout 2) by completion time, as Hudi 1.x does (a commit that
    completed late, after a later-requested one, is in the range it completed in)."""
    def at(i: Instant) -> str:
        return i.timestamp if timeline.layout == 1 else i.completed_at
    return sorted((i for i in timeline.commits() if begin < at(i) and (end is None or at(i) <= end)),
                  key=lambda i: (at(i), i.timestamp))


def read_incremental(spark, table: HudiTable, spec, begin: str, end: str | None = None):
    """A DataFrame of the records the commits in `incremental_commits(begin, end)` wrote that are
    still their latest version at the last of them (meta columns first), in the table's latest
    schema, as Hudi's incremental query returns them. On a merge-on-read table the files those
    commits wrote are merged (`incremental_slices`: blocks of commits outside the range do not
    count), deletes are not returned."""
    from pyspark.sql import functions as F

    timeline = table.refresh().timeline
    commits = incremental_commits(timeline, begin, end)
    ddl = table_ddl(spec)
    if not commits:
        return spark.createDataFrame([], ddl)
    earliest = earliest_readable_instant(timeline)
    first = min(i.timestamp for i in commits)
    if earliest is not None and first < earliest:
        raise ReadError(f"{table.base}: an incremental read from {begin} needs commit {first}, whose files have "
                        f"been cleaned (spec.retention.keepCommits); the earliest instant still readable is {earliest}")
    last = max(i.timestamp for i in commits)
    if table.config is not None and table.config.table_type == "MERGE_ON_READ":
        slices = incremental_slices(table.view, commits)
        files = [s.base_file.path for s in slices if not s.log_files and s.base_file is not None]
        merged = [s for s in slices if s.log_files]
    else:
        files, merged = snapshot_files(table, last, spec), []
    df = read_files(spark, table, files, spec, ddl) if files else spark.createDataFrame([], ddl)
    if merged:
        wanted = Counting(frozenset(i.timestamp for i in commits))
        df = df.unionByName(_merged_slices(spark, table, merged, wanted, ddl))
    return df.filter(F.col("_hoodie_commit_time").isin([i.timestamp for i in commits]))


def _as_of_columns(df, schema: str | None, spec):
    """Time travel shows the table as it was, as Apache Hudi does: the columns (and types) of the
    schema in force at the instant (`schema`), not columns a later schema evolution added."""
    from pyspark.sql import functions as F

    if schema is None:
        return df
    then = {c.name: c.type for c in from_avro_schema(schema)}
    now = {c.name: stored(parse_type(c.type)) for c in spec.spec.columns}
    if then.keys() >= now.keys() and all(then[n] == t for n, t in now.items()):
        return df
    kept = [n for n in df.columns if n in META_FIELDS or n in then]
    return df.select(*[F.col(f"`{n}`") if n in META_FIELDS or then[n] == now.get(n)
                       else F.col(f"`{n}`").cast(str(then[n])).alias(n) for n in kept])


def to_arrow(df) -> pa.Table:
    """Collect a DataFrame as a pyarrow Table (Spark 3.5 has no public `DataFrame.toArrow`)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    batches = df._collect_as_arrow()
    return pa.Table.from_batches(batches, schema=None if batches else to_arrow_schema(df.schema))

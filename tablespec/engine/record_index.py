"""RECORD_LEVEL on Spark: Apache Hudi's record index (the metadata table's `record_index`
partition) tags incoming rows on executors, and is built from the table's keys.

Tagging (`tag`): incoming rows are partitioned by the record index file group their key hashes
to (`file_group_indices` over the index's slice count, as Hudi places keys), so each task reads
only its file groups (`record_index_reader.lookup_file_group` with the slices the driver listed
once) and sees every row of a key; it keeps each key's latest row and gives it the key's current
file group. Global semantics: a key found in another partition is inserted in its new partition
and removed from the old file group (a delete row for that group); with an ordering field, a
stored row that is newer wins and the key stays (on merge-on-read the row a snapshot reads, base
file merged with log files, as Apache Hudi compares it). What the commit does to the index is
recorded with its metadata-table deltacommit (mdt/sync.py), read back from the files it wrote.

Build (`build_index`): executors read `_hoodie_record_key` of every latest base file (a merge-on-read
slice with log files: the keys of the slice merged with them, so a key only the logs hold counts and a
key they delete does not); each key's entry is (key, partition, file id, base instant of its slice),
as Hudi bootstraps the index. The entries stay on executors: shuffled to their file groups, sorted,
each file group's HFile written by the task holding it (`record_index_writer.write_file_group`); the
driver commits (`record_index_writer.initialize_written`, crash-safe: a build that died is redone).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tablespec.arrow.merge import MergedKeys, merged_keys, read_slice
from tablespec.engine import tasks
from tablespec.engine.session import job_description
from tablespec.errors import TablespecError
from tablespec.faults import crash_point
from tablespec.hudi import private_index
from tablespec.hudi.formats.base_keys import base_file_keys
from tablespec.hudi.mdt import damage, record_index_reader, record_index_writer
from tablespec.hudi.mdt.initializer import Written
from tablespec.hudi.mdt.layout import Slice
from tablespec.hudi.mdt.record_index import RECORD_INDEX, file_group_count, file_group_indices
from tablespec.hudi.merge_on_read import Counting, MergeRules, counting, slice_read, written_ranges
from tablespec.hudi.services.clustering import ClusteringPending, pending_plans
from tablespec.hudi.table import AtLocation, HudiTable, Location
from tablespec.results import IndexDropped, IndexResult

IB, DEL = "_ts_ib", tasks.DEL
EXAMPLES = 5


class IndexMissing(TablespecError):
    """A RECORD_LEVEL table whose metadata table has no record index yet."""


@dataclass(frozen=True)
class IndexJob(AtLocation):
    """What tasks need to look keys up in one table's record index (plain data, pickled to executors)."""

    location: Location            # the table (URI and storage; configuration, never credentials)
    slices: tuple[Slice, ...]     # the record index's latest slices, sorted by file id
    valid: frozenset[str]         # metadata-table instants whose log blocks count
    ordering_field: str | None = None
    file_groups: dict = field(default_factory=dict)  # live file id -> its latest FileSlice (elsewhere: stale)
    counting: Counting = Counting(frozenset())       # merge-on-read: the log blocks that count, and how they merge
    ranges: dict = field(default_factory=dict)       # merge-on-read: `written_ranges` of the counting deltacommits
    merge_rules: MergeRules = MergeRules()


def require_index(table: HudiTable) -> None:
    """Raise IndexMissing when the table's metadata table has no record index to look keys up in."""
    if not record_index_writer.is_enabled(table):
        raise IndexMissing(f"{table.base}: the table is RECORD_LEVEL but its metadata table has no record index; "
                           "run `tablespec plan` and `tablespec apply` to build it (record_index_build)")


def index_job(table: HudiTable, ordering_field: str | None = None,
              check: damage.RecordIndexCheck | None = None) -> IndexJob:
    """The record index as the handle's timeline shows it (listed once, on the driver), refused if
    damaged: a lookup missing keys would insert them again (`check`: the write's, which checks again
    only files that changed since it found the index intact)."""
    require_index(table)
    found, valid = record_index_reader.slices(table)
    (check or damage.RecordIndexCheck(table)).require((found, valid))
    if not found:
        raise IndexMissing(f"{table.base}: Hudi's record index has no file groups; the metadata table is damaged")
    live = {s.file_id: s for s in table.view.latest_slices() if s.base_file is not None}
    merge_on_read = table.table_config.table_type == "MERGE_ON_READ"   # copy-on-write: no log files
    wanted = counting(table.timeline) if merge_on_read else Counting(frozenset())
    return IndexJob(table.location, tuple(found), frozenset(valid), ordering_field, live, wanted,
                    written_ranges(table.timeline, wanted) if merge_on_read else {},
                    MergeRules.of(table.table_config) if merge_on_read else MergeRules())


def add_file_group(count: int, key: str, batches):
    """Executor: each row's record index file group of `count`, from its column `key` (rows with an
    invalid key go to group 0)."""
    for batch in batches:
        keys = pc.fill_null(batch.column(key), "").to_pylist()
        yield batch.append_column(IB, pa.array(file_group_indices(keys, count).astype(np.int32)))


def locate(job: IndexJob, keys: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Each key's (partition, file id) in the record index, null where it has none or names a
    file group the table no longer has (an index out of step: `verify` reports it)."""
    names = keys.to_pylist()
    groups = file_group_indices(names, len(job.slices))
    found = {}
    for index in np.unique(groups):
        wanted = [names[i] for i in np.flatnonzero(groups == index)]
        found.update(record_index_reader.lookup_file_group(job.storage, job.base, job.slices[int(index)],
                                                           set(job.valid), wanted))
    hits = [found.get(k) for k in names]
    hits = [h if h is not None and h.file_id in job.file_groups else None for h in hits]
    return (pa.array([h.partition if h else None for h in hits], pa.string()),
            pa.array([h.file_id if h else None for h in hits], pa.string()))


def probe_rows(job: IndexJob, operation: str, batches):
    """Executor: keep each key's latest row, look its location up, route it (see module doc)."""
    tables = [pa.Table.from_batches([b]) for b in batches if len(b)]
    if not tables:
        return
    rows = pa.concat_tables(tables).drop_columns([IB])
    invalid = rows.filter(rows.column(tasks.INVALID))
    rows = tasks.latest_per_key(rows.filter(pc.invert(rows.column(tasks.INVALID))), job.ordering_field)
    keys = rows.column(tasks.KEY).combine_chunks()
    old_part, old_fg = locate(job, keys)
    hit = np.asarray(old_fg.is_valid())
    fg_index = rows.schema.get_field_index(tasks.FG)
    part_index = rows.schema.get_field_index(tasks.PART)
    out = []
    if operation == "delete":
        found = pa.array(hit)
        gone = rows.filter(found)
        gone = gone.set_column(part_index, tasks.PART, old_part.filter(found))
        gone = gone.set_column(fg_index, tasks.FG, old_fg.filter(found))
        out.append(gone.append_column(DEL, pa.array(np.ones(gone.num_rows, bool))))
    else:
        same = hit & np.asarray(pc.fill_null(pc.equal(old_part, rows.column(tasks.PART)), False))
        moved = hit & ~same
        stale = np.zeros(len(keys), bool)
        if job.ordering_field and moved.any():  # a stale row loses, as it would in place: the key stays
            stale = _stored_wins(job, rows, keys, old_fg, moved)
            moved &= ~stale
        # a stale row goes to its stored row's file group, whose merge ignores (and counts) it
        stays = pa.array(same | stale)
        routed = rows.set_column(fg_index, tasks.FG, pc.if_else(stays, old_fg, pa.nulls(len(keys), pa.string())))
        routed = routed.set_column(part_index, tasks.PART, pc.if_else(pa.array(stale), old_part, rows.column(tasks.PART)))
        out.append(routed.append_column(DEL, pa.array(np.zeros(routed.num_rows, bool))))
        leaving_mask = pa.array(moved)
        leaving = rows.filter(leaving_mask)  # removed from the old partition's file group
        leaving = leaving.set_column(part_index, tasks.PART, old_part.filter(leaving_mask))
        leaving = leaving.set_column(fg_index, tasks.FG, old_fg.filter(leaving_mask))
        out.append(leaving.append_column(DEL, pa.array(np.ones(leaving.num_rows, bool))))
    out.append(invalid.append_column(DEL, pa.array(np.zeros(invalid.num_rows, bool))))
    schema = out[0].schema
    yield from pa.concat_tables([t.cast(schema) for t in out]).to_batches()


def _stored_wins(job: IndexJob, rows: pa.Table, keys: pa.Array, old_fg: pa.Array, moved: np.ndarray) -> np.ndarray:
    """Of the keys about to move partition, those whose stored row (its latest slice as a snapshot
    reads it, log files merged) has a strictly greater ordering value (or a value where the incoming
    one is null): the rule `tasks._write_group` and `tasks._append_group` apply in place."""
    wins = np.zeros(len(keys), bool)
    idx = np.flatnonzero(moved)
    fids = np.asarray(old_fg.take(pa.array(idx)).to_pylist(), dtype=object)
    incoming = rows.column(job.ordering_field).combine_chunks()
    # a file written before the field existed reads it as null, the smallest
    schema = pa.schema([pa.field(tasks.KEY, pa.string()), pa.field(job.ordering_field, incoming.type)])
    for fid in set(fids):
        sel = idx[fids == fid]
        wanted = keys.take(pa.array(sel))
        read = slice_read(job.file_groups[fid], job.ranges)   # only the moving keys' file groups are read
        stored = read_slice(job.storage, read, job.counting, job.merge_rules, schema)
        stored = stored.filter(pc.is_in(stored.column(tasks.KEY), value_set=wanted))
        old = stored.column(job.ordering_field).combine_chunks().take(pc.index_in(wanted, value_set=stored.column(tasks.KEY)))
        new = incoming.take(pa.array(sel))
        old = old.cast(new.type) if old.type != new.type else old
        w = np.asarray(pc.fill_null(pc.greater(old, new), False)) | (np.asarray(new.is_null()) & np.asarray(old.is_valid()))
        wins[sel[w]] = True
    return wins


def tag(spark, prepared, job: IndexJob, operation: str, seconds):
    """Tag prepared rows with their file groups through Hudi's record index; adds the DEL column.
    The lookups' task seconds add up in the accumulator `seconds`."""
    from pyspark.sql.types import BooleanType, IntegerType, StructField, StructType
    with_group = prepared.mapInArrow(functools.partial(add_file_group, len(job.slices), tasks.KEY),
                                     StructType(prepared.schema.fields + [StructField(IB, IntegerType())]))
    n = max(1, min(spark.sparkContext.defaultParallelism * 2, len(job.slices)))
    out_schema = StructType(prepared.schema.fields + [StructField(DEL, BooleanType())])
    return (with_group.repartition(n, IB)
            .mapInArrow(functools.partial(tasks.timed, seconds, functools.partial(probe_rows, job, operation)),
                        out_schema))


# --- build -----------------------------------------------------------------------------------

SLICES_DDL = "partition string, file_id string, path string, size long, instant string"
ENTRIES_DDL = ", ".join(f"{c} string" for c in record_index_writer.ENTRY_COLUMNS)


def slice_keys(location: Location, merged: MergedKeys | None, batches):
    """Executor: every key of each slice (its base file's, or its merged rows'), with its entry's
    partition, file id and instant."""
    for batch in batches:
        for r in batch.to_pylist():
            if merged is not None and (r["partition"], r["file_id"]) in merged.reads:
                keys = merged.keys(location.storage, r["partition"], r["file_id"]).to_pylist()
            else:
                keys = base_file_keys(r["path"], location.storage, r["size"] or None)
            n = len(keys)
            yield pa.RecordBatch.from_pydict({
                "key": keys, "partition": pa.array([r["partition"]] * n, pa.string()),
                "file_id": pa.array([r["file_id"]] * n, pa.string()), "instant": pa.array([r["instant"]] * n, pa.string())})


def _refuse_under_pending_clustering(timeline, base: str) -> None:
    """A scheduled clustering completes with its (older) instant time; the index must be built
    from the slices it leaves."""
    pending = sorted(i.timestamp for i in pending_plans(timeline))
    if pending:
        raise ClusteringPending(f"{base}: building the record index must wait for the pending clustering plan(s) "
                                f"{', '.join(pending)}; run or roll back the clustering first")


def table_entries(spark, table: HudiTable):
    """(key, partition, file id, instant) of every record of the latest slices: a DataFrame read
    on executors (None: the table has no slices)."""
    latest = [s for s in table.view.latest_slices() if s.base_file is not None or s.log_files]
    slices = [(s.partition, s.file_id, s.base_file.path if s.base_file else "", s.base_file.size if s.base_file else 0,
               s.base_instant) for s in latest]
    if not slices:
        return None
    n = max(1, min(len(slices), spark.sparkContext.defaultParallelism * 2))
    df = spark.createDataFrame(slices, SLICES_DDL).repartition(n)
    merged = merged_keys(table.table_config, table.timeline, latest, table.base)   # as verify reads them
    return df.mapInArrow(functools.partial(slice_keys, table.location, merged), ENTRIES_DDL)


def repeated_keys(batches):
    """Executor: a few keys stored twice among rows sorted by (file group, key): equal keys are neighbours."""
    chunks = [b.column("key") for b in batches if len(b)]
    keys = pa.concat_arrays(chunks) if chunks else pa.array([], pa.string())
    same = pc.equal(keys.slice(1), keys.slice(0, max(len(keys) - 1, 0)))
    twice = pc.unique(keys.slice(1).filter(same)).slice(0, EXAMPLES)
    yield pa.RecordBatch.from_arrays([twice], ["key"])


WRITTEN = pa.schema([("file_group", pa.int32()), ("name", pa.string()), ("size", pa.int64()), ("records", pa.int64())])
WRITTEN_DDL = "file_group int, name string, size long, records long"


def write_groups(location: Location, instant: str, one_x: bool, batches):
    """Executor: the base file of each file group among rows sorted by (file group, key), one file
    group's rows held at a time; yields what it wrote."""
    pending: list[pa.RecordBatch] = []
    written: list[tuple[int, str, int, int]] = []

    def flush() -> None:
        rows = pa.Table.from_batches(pending)
        written.append(record_index_writer.write_file_group(location.storage, location.uri, instant,
                                                            rows.column(IB)[0].as_py(), one_x, rows))
        pending.clear()
        crash_point("during_metadata_partition_build")
    for batch in batches:
        groups = batch.column(IB).to_numpy()
        cuts = [0, *(np.flatnonzero(np.diff(groups)) + 1).tolist(), len(groups)]
        for begin, end in zip(cuts, cuts[1:]):
            if pending and pending[0].column(IB)[0] != batch.column(IB)[begin]:
                flush()
            pending.append(batch.slice(begin, end - begin))
    if pending:
        flush()
    yield pa.RecordBatch.from_pylist([dict(zip(WRITTEN.names, w)) for w in written], schema=WRITTEN)


def checked_written(base: str, written: list[Written], rows: int) -> list[Written]:
    """What the executors wrote, refused unless each file group was written once and the file groups
    hold every entry counted (a lost or repeated task): the build then stays inflight, and the next
    one drops it and starts again."""
    numbers = [w[0] for w in written]
    twice = sorted({n for n in numbers if numbers.count(n) > 1})
    held = sum(w[3] for w in written)
    if twice or held != rows:
        raise TablespecError(f"{base}: the record index build's tasks wrote {held} entries in {len(written)} file "
                             f"group(s)" + (f", file group(s) {', '.join(map(str, twice))} more than once" if twice
                                            else "") + f", but the table has {rows} keys; nothing was committed: "
                             "run `tablespec apply` again")
    return written


def build_index(spark, table: HudiTable, file_groups: int | None = None) -> IndexResult:
    """Build Hudi's record index from the table's latest slices (RFC-08's bootstrap, as Hudi does
    it), with `file_groups` file groups (None: as many as Hudi would give it). Executors read the
    keys, place them in their file groups (one shuffle, sorted by key) and write each file group's
    base file; the driver holds counts and file names only, never the entries. The caller holds
    the table lock; the build itself is one metadata-table deltacommit under Hudi's transaction
    lock, refused if another writer committed while the keys were read. Keys stored twice (a
    writer with a non-global index inserted a key again elsewhere) are refused by name before
    anything is written."""
    from pyspark import StorageLevel
    base, timeline = table.base, table.timeline
    _refuse_under_pending_clustering(timeline, base)
    head = timeline.head
    entries = table_entries(spark, table)
    cached = []
    try:
        with job_description(spark, "tablespec: record index build"):
            if entries is not None:
                cached.append(entries.persist(StorageLevel.MEMORY_AND_DISK))
            rows = entries.count() if entries is not None else 0
            count = file_groups or file_group_count(rows)
            placed = None
            if rows:
                tasks_n = max(1, min(count, spark.sparkContext.defaultParallelism * 2))
                placed = (entries.mapInArrow(functools.partial(add_file_group, count, "key"), f"{ENTRIES_DDL}, {IB} int")
                          .repartition(tasks_n, IB).sortWithinPartitions(IB, "key"))
                cached.append(placed.persist(StorageLevel.MEMORY_AND_DISK))
                twice = sorted(r.key for r in placed.select("key").mapInArrow(repeated_keys, "key string").collect())
                entries.unpersist()   # `placed` is materialised: the entries are read from it from here on
                if twice:
                    raise TablespecError(
                        f"{base}: record key(s) stored more than once in the table, e.g. "
                        f"{', '.join(twice[:EXAMPLES])}; a RECORD_LEVEL index needs every key once in the table "
                        "(a writer with a non-global index may insert a key again in another partition): delete "
                        "the extra copies first")

            def write(instant: str, one_x: bool) -> list[Written]:
                if placed is None:
                    return []
                done = placed.mapInArrow(functools.partial(write_groups, table.location, instant, one_x), WRITTEN_DDL)
                return checked_written(base, [tuple(r) for r in done.collect()], rows)
            with table.transaction_lock("record_index_build"):
                now = table.fresh_timeline().head
                if now != head:
                    raise TablespecError(f"{base}: another writer committed {now} while the record index was being "
                                         "built; nothing was built: run `tablespec apply` again")
                instant = record_index_writer.initialize_written(table, count, write)
    finally:
        for df in cached:
            df.unpersist()
    found, _ = record_index_reader.slices(table)
    return IndexResult(rows=rows, instant=instant, file_groups=len(found))


def ensure_index(spark, table: HudiTable, file_groups: int | None = None) -> IndexResult:
    """Hudi's record index built with `file_groups` file groups (None: any count; one of another
    count is dropped and built again), then tablespec's private index folder removed (a migrated
    table). Idempotent: an apply that died half way is finished by the next one."""
    from tablespec.hudi.metadata_table import drop_partitions
    if record_index_writer.is_enabled(table):
        found, _ = record_index_reader.slices(table)
        if file_groups is None or len(found) == file_groups:
            result = IndexResult(file_groups=len(found))
            return result.model_copy(update={"private_files_removed": private_index.remove(table.storage, table.base)})
        with table.transaction_lock("record_index_build"):
            drop_partitions(table, (RECORD_INDEX,))
        table.refresh()
    result = build_index(spark, table, file_groups)
    return result.model_copy(update={"private_files_removed": private_index.remove(table.storage, table.base)})


def drop_index(table: HudiTable) -> IndexDropped:
    """Leaving RECORD_LEVEL: the metadata table's record_index partition dropped (under Hudi's
    transaction lock: its writers name partitions inside their commits), and a private index folder."""
    from tablespec.hudi.metadata_table import drop_partitions
    with table.transaction_lock("record_index_drop"):
        dropped = drop_partitions(table, (RECORD_INDEX,))
    return IndexDropped(partitions_dropped=len(dropped),
                        private_files_removed=private_index.remove(table.storage, table.base))


__all__ = ["IndexJob", "IndexMissing", "build_index", "drop_index", "ensure_index", "index_job", "require_index", "tag"]

"""The record-level index on Spark: distributed tagging, and the index delta of any commit.

Tagging (`tag`): incoming rows are partitioned by index bucket, so each task probes only its
buckets' files and sees every row of a key; it keeps each key's latest row and gives it the
key's current file group. Global semantics: a key found in another partition is inserted in
its new partition and removed from the old file group (a delete row for that group).

Index delta (`write_index_delta`): what a commit did to key locations, from its written file
slices and replaced file groups. For each touched file group, keys in the new slice and not in
the previous one get an entry, keys gone from it a tombstone (a key both added somewhere and
removed elsewhere keeps its new location). Every data-rewriting action calls it inside its
Transaction, before the commit completes: writes, replace_table, the index build, clustering;
their commits are marked as indexed (hudi/index_coverage).

Catch-up (`catch_up_index`): the same delta for the commits the index has not seen (written by
Apache Hudi or without index maintenance), each file group they touched diffed from its slice
before them to its slice now, and checked against what the index says.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tablespec.engine import tasks
from tablespec.engine.session import job_description
from tablespec.errors import TablespecError
from tablespec.hudi import index_coverage as coverage
from tablespec.hudi import record_index as ri
from tablespec.hudi.clustering import ClusteringPending, pending_plans
from tablespec.hudi.config import RECORD_LEVEL, table_index_type
from tablespec.hudi.io import LOCAL, Storage, join
from tablespec.hudi.table import AtLocation, HudiTable, Location
from tablespec.hudi.timeline import Timeline
from tablespec.results import IndexResult

IB, DEL = "_ts_ib", tasks.DEL
EXAMPLES = 5


@dataclass(frozen=True)
class IndexJob(AtLocation):
    """What tasks need to probe or extend one table's index (plain data, pickled to executors)."""

    location: Location            # the table (URI and storage; configuration, never credentials)
    num_buckets: int
    chains: dict = field(default_factory=dict)   # bucket -> live file names, newest first
    ordering_field: str | None = None
    file_groups: dict = field(default_factory=dict)  # live file id -> its base file (an entry elsewhere is stale)

    @property
    def folder(self) -> str:
        return ri.index_folder(self.base)


def chosen_num_buckets(spec, props: dict, rows: int = 0) -> int:
    """The index's bucket count: the spec's, else the table's (already RECORD_LEVEL), else sized from `rows`."""
    settings = getattr(spec.spec.index, "record_level", None)
    if settings is not None and settings.num_buckets:
        return settings.num_buckets
    if table_index_type(props) == RECORD_LEVEL and props.get(ri.NUM_BUCKETS_PROPERTY):
        return int(props[ri.NUM_BUCKETS_PROPERTY])
    return ri.default_num_buckets(rows)


def index_job(table: HudiTable, timeline, num_buckets: int, ordering_field: str | None = None) -> IndexJob:
    """The index as of `timeline` (the handle's own, whose view is cached, or an older one)."""
    idx = ri.RecordIndex(table.storage, table.base, timeline, num_buckets)
    view = table.view if timeline is table.timeline else table.view_of(timeline)
    live = {s.file_id: s.base_file.path for s in view.latest_slices() if s.base_file is not None}
    return IndexJob(table.location, num_buckets, idx.chains, ordering_field, live)


def add_bucket(job: IndexJob, batches):
    """Executor: each row's index bucket (rows with an invalid key go to bucket 0)."""
    for batch in batches:
        keys = pc.fill_null(batch.column(tasks.KEY), "")
        yield batch.append_column(IB, pa.array(ri.buckets_of(ri.key_hashes(keys), job.num_buckets)))


def probe_rows(job: IndexJob, operation: str, batches):
    """Executor: keep each key's latest row, look its location up, route it (see module doc)."""
    tables = [pa.Table.from_batches([b]) for b in batches if len(b)]
    if not tables:
        return
    rows = pa.concat_tables(tables).drop_columns([IB])
    invalid = rows.filter(rows.column(tasks.INVALID))
    rows = tasks.latest_per_key(rows.filter(pc.invert(rows.column(tasks.INVALID))), job.ordering_field)
    keys = rows.column(tasks.KEY).combine_chunks()
    found = ri.lookup_in(job.folder, job.chains, job.num_buckets, keys, job.storage)
    # never route into a file group the table no longer has (an index out of step: `verify` reports it)
    found = found.filter(pc.is_in(found.column("file_id"), value_set=pa.array(sorted(job.file_groups), pa.string())))
    pos = pc.index_in(keys, value_set=found.column("key"))
    old_part = found.column("partition_path").take(pos)
    old_fg = found.column("file_id").take(pos)
    hit = np.asarray(pos.is_valid())
    fg_index = rows.schema.get_field_index(tasks.FG)
    out = []
    if operation == "delete":
        gone = rows.filter(pa.array(hit))
        gone = gone.set_column(rows.schema.get_field_index(tasks.PART), tasks.PART, old_part.filter(pa.array(hit)))
        gone = gone.set_column(fg_index, tasks.FG, old_fg.filter(pa.array(hit)))
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
        part_index = rows.schema.get_field_index(tasks.PART)
        routed = routed.set_column(part_index, tasks.PART, pc.if_else(pa.array(stale), old_part, rows.column(tasks.PART)))
        out.append(routed.append_column(DEL, pa.array(np.zeros(routed.num_rows, bool))))
        moved = pa.array(moved)
        leaving = rows.filter(moved)  # removed from the old partition's file group
        leaving = leaving.set_column(rows.schema.get_field_index(tasks.PART), tasks.PART, old_part.filter(moved))
        leaving = leaving.set_column(fg_index, tasks.FG, old_fg.filter(moved))
        out.append(leaving.append_column(DEL, pa.array(np.ones(leaving.num_rows, bool))))
    out.append(invalid.append_column(DEL, pa.array(np.zeros(invalid.num_rows, bool))))
    schema = out[0].schema
    yield from pa.concat_tables([t.cast(schema) for t in out]).to_batches()


def _stored_wins(job: IndexJob, rows: pa.Table, keys: pa.Array, old_fg: pa.Array, moved: np.ndarray) -> np.ndarray:
    """Of the keys about to move partition, those whose stored row has a strictly greater ordering
    value (or a value where the incoming one is null): the rule `tasks._write_group` applies in place."""
    wins = np.zeros(len(keys), bool)
    idx = np.flatnonzero(moved)
    fids = np.asarray(old_fg.take(pa.array(idx)).to_pylist(), dtype=object)
    incoming = rows.column(job.ordering_field).combine_chunks()
    for fid in set(fids):
        sel = idx[fids == fid]
        path = job.file_groups[fid]
        wanted = keys.take(pa.array(sel))
        with job.storage.open_input_file(path) as f:
            file = pq.ParquetFile(f)
            if job.ordering_field not in file.schema_arrow.names:
                continue  # written before the field existed: its value is null, the smallest
            stored = file.read(columns=[tasks.KEY, job.ordering_field])
        stored = stored.filter(pc.is_in(stored.column(tasks.KEY), value_set=wanted))
        old = stored.column(job.ordering_field).combine_chunks().take(pc.index_in(wanted, value_set=stored.column(tasks.KEY)))
        new = incoming.take(pa.array(sel))
        old = old.cast(new.type) if old.type != new.type else old
        w = np.asarray(pc.fill_null(pc.greater(old, new), False)) | (np.asarray(new.is_null()) & np.asarray(old.is_valid()))
        wins[sel[w]] = True
    return wins


def tag(spark, prepared, job: IndexJob, operation: str, seconds):
    """Tag prepared rows with their file groups through the index; adds the DEL column. The
    lookups' task seconds add up in the accumulator `seconds`."""
    from pyspark.sql.types import BooleanType, IntegerType, StructField, StructType
    with_bucket = prepared.mapInArrow(functools.partial(add_bucket, job),
                                      StructType(prepared.schema.fields + [StructField(IB, IntegerType())]))
    n = max(1, spark.sparkContext.defaultParallelism * 2)
    out_schema = StructType(prepared.schema.fields + [StructField(DEL, BooleanType())])
    return (with_bucket.repartition(n, IB)
            .mapInArrow(functools.partial(tasks.timed, seconds, functools.partial(probe_rows, job, operation)),
                        out_schema))


# --- index delta ---------------------------------------------------------------------------

TOUCHED_DDL = "partition string, file_id string, new_path string, old_path string"
LEFT = "left_fg"   # of a tombstone: the file group the key left


def touched_file_groups(base: str, view, stats: list[dict], replaced: dict | None = None,
                        full: bool = False) -> list[dict]:
    """One row per file group a commit touched: its new slice's file and its previous one
    (from `view`, the file-system view before the commit); with `full`, no previous ones."""
    previous = {} if full else {(s.partition, s.file_id): s.base_file.path for s in view.latest_slices()
                                if s.base_file is not None}
    rows = {}
    for s in stats:
        if not s.get("file_id"):
            continue
        rows[(s["partition"], s["file_id"])] = dict(partition=s["partition"], file_id=s["file_id"],
                                                    new_path=join(base, s["path"]),
                                                    old_path=previous.get((s["partition"], s["file_id"]), ""))
    for partition, ids in (replaced or {}).items():
        for fid in ids:
            if (partition, fid) not in rows and (partition, fid) in previous:
                rows[(partition, fid)] = dict(partition=partition, file_id=fid, new_path="",
                                              old_path=previous[(partition, fid)])
    return sorted(rows.values(), key=lambda r: (r["partition"], r["file_id"]))


def _keys_of(path: str, storage: Storage) -> pa.Array:
    return ri.base_file_keys(path, storage) if path else pa.array([], pa.string())


def diff_file_groups(num_buckets: int, batches, storage: Storage = LOCAL):
    """Executor: per touched file group, entries for keys added to it, tombstones for keys gone
    (with the group they left, LEFT)."""
    for batch in batches:
        for r in batch.to_pylist():
            new, old = _keys_of(r["new_path"], storage), _keys_of(r["old_path"], storage)
            added = new.filter(pc.invert(pc.is_in(new, value_set=old))) if len(old) else new
            gone = old.filter(pc.invert(pc.is_in(old, value_set=new))) if len(new) else old
            keys = pa.concat_arrays([added, gone])
            if not len(keys):
                continue
            fids = pa.concat_arrays([pa.array([r["file_id"]] * len(added), pa.string()),
                                     pa.nulls(len(gone), pa.string())])
            left = pa.concat_arrays([pa.nulls(len(added), pa.string()),
                                     pa.array([r["file_id"]] * len(gone), pa.string())])
            yield pa.RecordBatch.from_pydict({
                IB: pa.array(ri.buckets_of(ri.key_hashes(keys), num_buckets)), "key": keys,
                "partition": pa.array([r["partition"]] * len(keys), pa.string()), "file_id": fids, LEFT: left})


def against_index(job: IndexJob, part: pa.Table) -> tuple[pa.Table, list[str]]:
    """Catch-up: check one bucket's delta rows against what the index says. A tombstone for a
    file group the index does not place the key in is dropped (it would hide where the key is);
    a key added to a file group while the index has it in another live one it did not leave is
    stored twice (a non-global index inserted it again): returned by name."""
    keys, fids, left = (part.column(c).combine_chunks() for c in ("key", "file_id", LEFT))
    found = ri.lookup_in(job.folder, job.chains, job.num_buckets, pc.unique(keys), job.storage)
    indexed = found.column("file_id").combine_chunks().take(pc.index_in(keys, value_set=found.column("key")))
    tomb = pc.is_null(fids)
    elsewhere = pc.fill_null(pc.not_equal(indexed, pc.fill_null(fids, "")), False)
    left = pc.fill_null(left, "")

    def pair(k, f):
        return pc.binary_join_element_wise(k, pc.fill_null(f, ""), "\x00")

    still_there = pc.invert(pc.is_in(pair(keys, indexed), value_set=pair(keys, left).filter(tomb)))
    live = pc.is_in(indexed, value_set=pa.array(sorted(job.file_groups), pa.string()))
    twice = pc.and_(pc.and_(pc.invert(tomb), elsewhere), pc.fill_null(pc.and_(live, still_there), False))
    stray = pc.and_(tomb, pc.fill_null(pc.not_equal(indexed, left), False))
    return part.filter(pc.invert(stray)), pc.unique(keys.filter(twice)).to_pylist()[:EXAMPLES]


def write_bucket_files(location: Location, instant: str, kind: str, num_buckets: int, batches,
                       against: IndexJob | None = None):
    """Executor: one index file per bucket of its rows; yields the names written, and (name null)
    keys stored twice: given a location more than once, or (`against`, a catch-up) in a file
    group while the index has them in another (a table-wide rewrite and a catch-up refuse them)."""
    base, storage = location.uri, location.storage
    tables = [pa.Table.from_batches([b]) for b in batches if len(b)]
    names, twice = [], []
    if tables:
        rows = pa.concat_tables(tables)
        rows = rows.take(pc.sort_indices(rows, [(IB, "ascending")]))
        buckets = rows.column(IB).to_numpy()
        bounds = np.flatnonzero(np.diff(buckets)) + 1
        for s, e in zip(np.r_[0, bounds], np.r_[bounds, len(buckets)]):
            part = rows.slice(int(s), int(e - s))
            if against is not None:
                part, elsewhere = against_index(against, part)
                twice += elsewhere
            file = ri.IndexFile(int(buckets[s]), instant, kind, num_buckets)
            ri.write_file(ri.index_folder(base), file,
                          ri.entries(part.column("key"), part.column("partition"), part.column("file_id")), storage)
            names.append(file.name)
            located = part.filter(pc.is_valid(part.column("file_id"))).group_by("key").aggregate([("key", "count")])
            twice += located.filter(pc.greater(located.column("key_count"), 1)).column("key").to_pylist()[:EXAMPLES]
    yield pa.RecordBatch.from_pydict({"name": pa.array(names + [None] * len(twice), pa.string()),
                                      "twice": pa.array([None] * len(names) + twice, pa.string())})


def write_index_delta(spark, location: Location, instant: str, num_buckets: int, view, stats: list[dict],
                      replaced: dict | None = None, full: bool = False, against: IndexJob | None = None) -> list[str]:
    """Write the record-index files of `instant` (the caller's Transaction, before it commits).

    `stats`: the commit's write stats (partition, file_id, path relative to the table);
    `replaced`: partition -> file ids the commit replaces; `view`: the file-system view before
    the commit. `full`: the written slices are the whole table (an index build, replace_table):
    every bucket gets a base file, so nothing older counts. `against`: the index to check the
    delta against (a catch-up, see `against_index`). Returns the file names written."""
    storage, base = location.storage, location.uri
    touched = touched_file_groups(base, view, stats, replaced, full)
    names: list[str] = []
    if touched:
        from pyspark.sql.types import IntegerType, StringType, StructField, StructType
        entry_schema = StructType([StructField(IB, IntegerType()), StructField("key", StringType()),
                                   StructField("partition", StringType()), StructField("file_id", StringType()),
                                   StructField(LEFT, StringType())])
        n = max(1, spark.sparkContext.defaultParallelism * 2)
        with job_description(spark, "tablespec: index"):  # Spark UI and event log
            groups = spark.createDataFrame(touched, TOUCHED_DDL).repartition(min(n, len(touched)))
            rows = (groups.mapInArrow(functools.partial(diff_file_groups, num_buckets, storage=storage), entry_schema)
                    .repartition(n, IB)
                    .mapInArrow(functools.partial(write_bucket_files, location, instant, "base" if full else "delta",
                                                  num_buckets, against=against), "name string, twice string").collect())
        names = [r.name for r in rows if r.name]
        twice = sorted(r.twice for r in rows if r.twice)
        if (full or against is not None) and twice:  # raised inside the caller's Transaction: its files roll back
            raise TablespecError(f"{base}: record key(s) stored more than once in the table, e.g. "
                                 f"{', '.join(twice[:EXAMPLES])}; a RECORD_LEVEL index needs every key once in "
                                 "the table (a writer with a non-global index may insert a key again in another "
                                 "partition): delete the extra copies first")
    if full:  # buckets without keys still get a (empty) base: it hides every older file
        for b in sorted(set(range(num_buckets)) - {f.bucket for n in names if (f := ri.IndexFile.parse(n)) is not None}):
            file = ri.IndexFile(b, instant, "base", num_buckets)
            ri.write_file(ri.index_folder(base), file, ri.ENTRY_SCHEMA.empty_table(), storage)
            names.append(file.name)
    _remove_strays(location, instant, set(names))
    return sorted(names)


def _remove_strays(location: Location, instant: str, keep: set[str]) -> None:
    """Delete `instant`'s index files that its successful tasks did not report (failed attempts)."""
    storage, base = location.storage, location.uri
    storage.delete_files([join(ri.index_folder(base), f.name) for f in ri.list_files(storage, base)
                          if f.instant == instant and f.name not in keep])


def on_commit(spark, table: HudiTable, instant: str, view, stats: list[dict], replaced: dict | None = None) -> dict:
    """The hook for data-rewriting actions other than writes (e.g. clustering): if the table has a
    record-level index, write `instant`'s index delta (call inside the Transaction, before commit).
    Returns the extraMetadata marking the commit as indexed. An index behind unseen commits gets
    no delta (it would be diffed from a view the index does not have): the commit stays unseen
    too, and the catch-up indexes it with them."""
    props = table.table_config.to_properties()  # the index type changes only under the table lock the caller holds
    if table_index_type(props) != RECORD_LEVEL or coverage.unseen_commits(view.timeline):
        return {}
    write_index_delta(spark, table.location, instant, ri.num_buckets_of(props), view, stats, replaced)
    return coverage.delta_marks()


def slice_stats(slices) -> list[dict]:
    """Write-stat-like rows for existing file slices (an index build reads the latest slices)."""
    return [dict(partition=s.partition, file_id=s.file_id,
                 path=f"{s.partition}/{s.base_file.name}" if s.partition else s.base_file.name)
            for s in slices if s.base_file is not None]


# --- actions: build, compaction --------------------------------------------------------------

INDEX_OPERATION = "INDEX"  # Hudi's WriteOperationType for index maintenance: a commit with no data


@dataclass
class IndexActionResult:
    instant: str | None
    num_buckets: int
    files_written: int = 0
    files_removed: int = 0
    entries: int = 0
    commits: int = 0     # a catch-up: the data commits it indexed

    def actual(self, rows: int | None = None) -> IndexResult:
        """`rows`: a build reports the keys it indexed."""
        return IndexResult(rows=rows, instant=self.instant, num_buckets=self.num_buckets,
                           index_files_written=self.files_written, index_files_removed=self.files_removed,
                           commits=self.commits or None)


def _index_commit(txn, timeline, action: str, marks: dict | None = None) -> None:
    """Complete an index-only instant: no write stats, the table schema carried over (hudi-rs
    resolves the schema from the latest commit and fails on one with neither); `marks`: what
    it indexed (hudi/index_coverage)."""
    from tablespec.hudi.commit import CommitMetadata
    extra = {"tablespec.action": action, **(marks or {})}
    if schema := timeline.latest_schema() or txn.table.config.create_schema:
        extra["schema"] = schema
    txn.commit([], CommitMetadata(extra_metadata=extra, operation_type=INDEX_OPERATION))


def remove_superseded(table: HudiTable, num_buckets: int) -> int:
    """Delete counted files no lookup reads (after the commit that wrote the hiding base)."""
    old = ri.superseded_files(table.storage, table.base, table.timeline, num_buckets)
    table.storage.delete_files([join(ri.index_folder(table.base), f.name) for f in old])
    return len(old)


def _refuse_under_pending_clustering(timeline, base: str, what: str) -> None:
    """A scheduled clustering completes with its (older) instant time: an index base written
    before it runs would hide its index delta, leaving its keys on the replaced file groups."""
    pending = sorted(i.timestamp for i in pending_plans(timeline))
    if pending:
        raise ClusteringPending(f"{base}: {what} must wait for the pending clustering plan(s) {', '.join(pending)}; "
                             "run or roll back the clustering first")


def build_index(spark, spec, table: HudiTable, lock) -> IndexActionResult:
    """Build the index from the latest file slices as one commit with no data change (RFC-08's
    bootstrap). Executors read the key column of each base file; every bucket gets a base file.
    The caller holds `lock`, switches hoodie.properties to RECORD_LEVEL and the built bucket count
    afterwards, then calls `remove_superseded` (the old layout serves until the switch)."""
    from tablespec.engine.commit import Transaction
    storage, base = table.storage, table.base
    timeline, view = table.timeline, table.view
    _refuse_under_pending_clustering(timeline, base, "building the record-level index")
    slices = [s for s in view.latest_slices() if s.base_file is not None]
    rows = sum(_num_rows(storage, s.base_file) for s in slices)
    props = table.table_config.to_properties()
    num_buckets = chosen_num_buckets(spec, props, rows)
    with Transaction(table, "commit", lock, basis=timeline) as txn:
        names = write_index_delta(spark, table.location, txn.instant, num_buckets, view, slice_stats(slices), full=True)
        _index_commit(txn, timeline, "record_index_build", coverage.build_marks(timeline))
    return IndexActionResult(txn.instant, num_buckets, len(names), 0, rows)


def drop_index(table: HudiTable) -> int:
    """Remove every index file (the table left RECORD_LEVEL); returns how many there were."""
    storage, base = table.storage, table.base
    count = len(ri.list_files(storage, base))
    storage.delete_tree(ri.index_folder(base))
    return count


def buckets_to_compact(chains: dict, max_files: int) -> dict:
    return {b: names for b, names in chains.items() if len(names) > max_files}


def _num_rows(storage: Storage, base_file) -> int:
    with storage.open_input_file(base_file.path, base_file.size) as f:
        return pq.read_metadata(f).num_rows


def compact_buckets(location: Location, instant: str, num_buckets: int, batches):
    """Executor: merge each bucket's live files into one base file, tombstones dropped."""
    storage, folder = location.storage, ri.index_folder(location.uri)
    names = []
    for batch in batches:
        for r in batch.to_pylist():
            state = ri.resolve([join(folder, n) for n in r["files"]], storage)
            state = state.filter(pc.is_valid(state.column("file_id")))
            file = ri.IndexFile(r["bucket"], instant, "base", num_buckets)
            ri.write_file(folder, file, state, storage)
            names.append(file.name)
    yield pa.RecordBatch.from_pydict({"name": pa.array(names, pa.string())})


def compact_index(spark, table: HudiTable, max_files: int, lock) -> IndexActionResult:
    """Compact buckets with more than `max_files` live files, as one commit with no data change.
    A crash before completion is rolled back like any write (its files go with it); files the
    new bases hide are deleted after completion (and ignored by lookups until then)."""
    from tablespec.engine.commit import Transaction
    storage, base = table.storage, table.base
    timeline = table.timeline
    _refuse_under_pending_clustering(timeline, base, "compacting the record-level index")
    coverage.refuse_unseen(timeline, base, "compacting the record-level index")
    props = table.table_config.to_properties()
    index = ri.RecordIndex(storage, base, timeline, ri.num_buckets_of(props))
    todo = buckets_to_compact(index.chains, max_files)
    if not todo:
        return IndexActionResult(None, index.num_buckets, 0, remove_superseded(table, index.num_buckets))
    with Transaction(table, "commit", lock, basis=timeline) as txn:
        jobs = spark.createDataFrame([(b, names) for b, names in sorted(todo.items())], "bucket int, files array<string>")
        rows = (jobs.repartition(min(len(todo), max(1, spark.sparkContext.defaultParallelism * 2)))
                .mapInArrow(functools.partial(compact_buckets, table.location, txn.instant, index.num_buckets),
                            "name string").collect())
        keep = {r.name for r in rows}
        _remove_strays(table.location, txn.instant, keep)
        _index_commit(txn, timeline, "record_index_compaction")
    return IndexActionResult(txn.instant, index.num_buckets, len(keep), remove_superseded(table, index.num_buckets))


def catch_up_index(spark, table: HudiTable, lock) -> IndexActionResult:
    """Index the data commits the index has not seen, as one commit with no data change (a crash
    before completion rolls it back like any write). Not a rebuild: only the file groups those
    commits wrote or replaced are read, each from its slice before them (the view the index has)
    to its slice now, and the delta is checked against what the index says (`against_index`)."""
    from tablespec.engine.commit import Transaction
    storage, base = table.storage, table.base
    timeline = table.timeline
    _refuse_under_pending_clustering(timeline, base, "catching the record-level index up")
    num_buckets = ri.num_buckets_of(table.table_config.to_properties())
    todo = coverage.catch_up(timeline)
    if todo is None:
        return IndexActionResult(None, num_buckets)
    unseen = set(todo.instants)
    before = table.view_of(Timeline(storage, base, [i.to("inflight") if i in unseen else i
                                                    for i in timeline.instants]))
    now = {(s.partition, s.file_id): s for s in table.view.latest_slices() if s.base_file is not None}
    touched = coverage.commit_file_groups(timeline, todo.instants)
    replaced: dict[str, list[str]] = {}
    for partition, fid in touched:
        if (partition, fid) not in now:
            replaced.setdefault(partition, []).append(fid)
    stats = slice_stats([now[k] for k in sorted(touched) if k in now])
    against = index_job(table, timeline, num_buckets)
    with Transaction(table, "commit", lock, basis=timeline) as txn:
        names = write_index_delta(spark, table.location, txn.instant, num_buckets, before, stats, replaced,
                                  against=against)
        _index_commit(txn, timeline, "record_index_catch_up", coverage.catch_up_marks(todo.instants))
    return IndexActionResult(txn.instant, num_buckets, len(names), 0, todo.rows, commits=len(todo.instants))

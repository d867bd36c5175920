"""What executors run: pure pyarrow functions over Arrow batches, given a picklable WriteJob.

`prepare` computes keys, partition paths and (for bucket tables) file groups row by row;
`tag_partitions` finds the file group of each key (SIMPLE, BLOOM) and gives inserts theirs, a
partition at a time; `write_file_groups` merges each file group's incoming records with its
latest base file and writes the new file slice. Nothing here touches the timeline: the driver
commits what the tasks report.
"""
from __future__ import annotations

import dataclasses
import json
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tablespec.arrow.align import align_to_schema
from tablespec.arrow.basefile import (
    ROW_GROUP_BYTES,
    BaseFileWriter,
    java_sort_indices,
    with_meta_fields,
    write_base_file,
)
from tablespec.arrow.keys import auto_keys, partition_paths, record_keys
from tablespec.arrow.merge import read_slice
from tablespec.hudi.bloom_lookup import may_hold
from tablespec.hudi.formats.base_keys import base_file_keys
from tablespec.hudi.formats.logfile import Header, LogBlock, avro_block, delete_block, encode_block
from tablespec.hudi.formats.markers import write_marker
from tablespec.hudi.formats.naming import BaseFileName, LogFileName, bucket_file_id, new_file_id, write_token
from tablespec.hudi.formats.positions import encode_positions
from tablespec.hudi.hashing import bucket_ids_for_record_keys
from tablespec.hudi.io import Storage, join
from tablespec.hudi.keygen import TimestampPartitioning
from tablespec.hudi.mdt.bloom_filters_reader import StoredFilters
from tablespec.hudi.mdt.secondary_index import PairChanges
from tablespec.hudi.merge_on_read import Counting, MergeRules, SliceRead
from tablespec.hudi.table import AtLocation, Location
from tablespec.plan.buckets import BucketLayout

KEY, PART, FG, SEQ, INVALID = "_hoodie_record_key", "_hoodie_partition_path", "_ts_fg", "_ts_seq", "_ts_invalid"
DEL = "_ts_del"  # record-level index: the row removes its key from this file group (the key moved)
COMMIT_TIME, SEQNO = "_hoodie_commit_time", "_hoodie_commit_seqno"
STATS_SCHEMA = pa.schema([
    ("partition", pa.string()), ("file_id", pa.string()), ("path", pa.string()), ("prev_commit", pa.string()),
    ("num_writes", pa.int64()), ("num_inserts", pa.int64()), ("num_updates", pa.int64()),
    ("num_deletes", pa.int64()), ("bytes", pa.int64()), ("invalid", pa.int64()), ("invalid_sample", pa.string()),
    ("num_ignored", pa.int64()),   # incoming rows not written: the stored row's ordering value is greater
    # a log file a deltacommit wrote (merge-on-read): its version, its slice's base file, the slice's log files (JSON)
    ("log_version", pa.int64()), ("base_file", pa.string()), ("log_files", pa.string()),
    ("log_scan", pa.string()),   # a compacted slice: what its log files held (LogScan.write_stat_fields, JSON)
    ("index_changes", pa.string()),   # secondary indexes: the pairs its file groups changed (PairChanges.report)
])
STATS_DDL = ("partition string, file_id string, path string, prev_commit string, num_writes bigint, "
             "num_inserts bigint, num_updates bigint, num_deletes bigint, bytes bigint, invalid bigint, "
             "invalid_sample string, num_ignored bigint, log_version bigint, base_file string, log_files string, "
             "log_scan string, index_changes string")
DEFAULT_RECORD_BYTES = 128   # bytes per stored record where no base file tells
TASK_MEMORY_BYTES = 512 * 1024 * 1024


def task_memory_bytes() -> int:
    """The memory a task may spend on one file group (`TABLESPEC_TASK_MEMORY_BYTES`, read on the
    driver): a base file larger than this is merged batch by batch rather than read whole."""
    return int(os.environ.get("TABLESPEC_TASK_MEMORY_BYTES", TASK_MEMORY_BYTES))


@dataclass(frozen=True)
class WriteJob(AtLocation):
    """Everything a task needs, decided on the driver (plain data: it is pickled to executors)."""

    location: Location                  # the table (its URI and storage; configuration, never credentials)
    instant: str
    operation: str                      # insert | upsert | bulk_insert | delete
    data_schema: pa.Schema              # the spec's columns
    avro_schema: str
    key_fields: tuple[str, ...]
    complex_key: bool
    auto_keys: bool
    partition_fields: tuple[str, ...]
    hive_style: bool
    url_encode: bool
    ordering_field: str | None
    timestamp: TimestampPartitioning | None = None   # the time-formatted partition field, if any
    buckets: BucketLayout | None = None  # BUCKET index: bucket count per partition
    hash_fields: tuple[str, ...] = ()
    bucket_groups: dict = field(default_factory=dict)    # (partition, bucket) -> existing file id
    base_files: dict = field(default_factory=dict)       # file id -> (partition, file name, base instant, bytes)
    lookup: str | None = None           # SIMPLE | BLOOM: find keys in their partition's base files
    target_file_size: int = 128 * 1024 * 1024   # inserts fill file groups up to it
    small_file_limit: int = 100 * 1024 * 1024   # file groups below it take inserts
    no_fill: frozenset = frozenset()    # file groups that take no inserts: under a pending clustering plan; MOR: with logs
    bloom_filter: bool = False          # BLOOM tables: Hudi writers expect a bloom filter in every footer
    stored_filters: StoredFilters | None = None   # BLOOM: the metadata table's bloom_filters, read before footers
    memory_bytes: int = field(default_factory=task_memory_bytes)  # base files above it are merged streaming
    # merge-on-read: the file groups whose changes go to a new log file (file id -> LogTarget), and how
    # their stored rows are read (the instants that count, the merge rule); None on copy-on-write
    log_targets: dict | None = None
    counting: Counting | None = None
    merge_rules: MergeRules | None = None
    record_positions: bool = False      # log blocks name their records' rows in the slice's base file
    indexed: tuple[str, ...] = ()       # columns of secondary indexes: each write reports their changed pairs

    @property
    def uses_existing(self) -> bool:
        """bulk_insert opens new file groups, except in bucket tables: one file group per bucket."""
        return self.operation != "bulk_insert" or self.buckets is not None


def _task_ids() -> tuple[int, int, int]:
    from pyspark import TaskContext
    ctx = TaskContext.get()
    return (ctx.partitionId(), ctx.stageId(), ctx.taskAttemptId()) if ctx else (0, 0, 0)


class _InstantJob(Protocol):
    """What a bucket's file id is derived from: the table and the instant writing it."""
    @property
    def base(self) -> str: ...
    @property
    def instant(self) -> str: ...


def new_bucket_file_id(job: _InstantJob, partition: str, bucket: int) -> str:
    """The file id of a bucket's new file group: derived, so every task picks the same one."""
    return bucket_file_id(bucket, str(uuid.uuid5(uuid.NAMESPACE_URL, f"{job.base}|{job.instant}|{partition}|{bucket}")))


def prepare(job: WriteJob, batches):
    """Add record key, partition path, bucket file group, input sequence and validity to each row."""
    partition_id = _task_ids()[0]
    row = 0
    for batch in batches:
        table = pa.Table.from_batches([batch])
        n = table.num_rows
        if job.auto_keys and KEY not in table.column_names:
            keys, invalid = auto_keys(job.instant, partition_id, n, row), np.zeros(n, dtype=bool)
        elif KEY in table.column_names:
            keys = table.column(KEY).combine_chunks()
            invalid = np.asarray(pc.fill_null(pc.equal(pc.binary_length(keys), 0), True))
            table = table.drop_columns([KEY])
        else:
            keys, invalid = record_keys(table, list(job.key_fields), job.complex_key)
        parts = partition_paths(table, list(job.partition_fields), job.hive_style, job.url_encode, job.timestamp)
        fg = pa.nulls(n, pa.string())
        if job.buckets and n:
            buckets = bucket_ids_for_record_keys(pc.fill_null(keys, ""), list(job.hash_fields),
                                                 buckets_per_row(job.buckets, parts))
            fg = bucket_file_groups(job, parts, buckets, job.bucket_groups)
        seq = (np.int64(partition_id) << np.int64(33)) + np.arange(row, row + n, dtype=np.int64)
        row += n
        out = table.append_column(KEY, keys).append_column(PART, parts).append_column(FG, fg)
        out = out.append_column(SEQ, pa.array(seq)).append_column(INVALID, pa.array(invalid))
        yield from out.to_batches()


def buckets_per_row(layout: BucketLayout, parts: pa.Array) -> np.ndarray:
    """Each row's partition's bucket count."""
    encoded = parts.dictionary_encode()
    counts = np.array([layout.buckets_for(p) for p in encoded.dictionary.to_pylist()], dtype=np.uint32)
    return counts[np.asarray(encoded.indices)]


def bucket_file_groups(job, parts: pa.Array, buckets: np.ndarray, existing: dict) -> pa.Array:
    """Each row's bucket file group: the existing one of its (partition, bucket), else the
    derived id of a new one (the same in every task). `job` supplies base and instant."""
    pairs = pc.binary_join_element_wise(parts, pa.array(buckets).cast(pa.string()), "\x00")
    encoded = pairs.dictionary_encode()
    ids = []
    for pair in encoded.dictionary.to_pylist():
        partition, bucket = pair.rsplit("\x00", 1)
        b = int(bucket)
        ids.append(existing.get((partition, b)) or new_bucket_file_id(job, partition, b))
    return pa.array(ids, pa.string()).take(encoded.indices)


def task_token() -> tuple[int, str]:
    """This task's Spark partition id and its write token (`<partition>-<stage>-<attempt>`)."""
    partition_id, stage_id, attempt = _task_ids()
    return partition_id, write_token(partition_id, stage_id, attempt)


def timed(seconds, fn, batches):
    """Run the task function `fn` over `batches` and add the seconds spent in it (its input
    included, the consumer's work excluded) to the accumulator `seconds`."""
    spent, out = 0.0, fn(batches)
    while True:
        start = time.perf_counter()
        try:
            batch = next(out)
        except StopIteration:
            seconds.add(spent + time.perf_counter() - start)
            return
        spent += time.perf_counter() - start
        yield batch


def tag_partitions(job: WriteJob, batches):
    """Give every row its file group, a partition at a time. Rows arrive sorted by partition
    path and key, all of a partition's rows in this task. SIMPLE and BLOOM (`job.lookup`) find
    each key among the partition's latest base files, reading only their key column (BLOOM:
    only files whose key range and bloom filter admit a key). Inserts then fill the partition's
    small file groups up to the target size, then new file groups, in key order; new ids derive
    from the instant, so a retried task picks the same. Memory: a chunk of a partition's
    incoming rows (a quarter of the task budget) and one file's keys."""
    files = _files_by_partition(job)
    targets: dict[str, _InsertTargets] = {}
    footers: dict[str, tuple] = {}
    counted: dict[str, int] = {}   # path -> records, of base files whose keys were read
    for partition, rows in partition_chunks(batches, max(1, job.memory_bytes // 4)):
        fg = rows.column(FG).combine_chunks()
        valid = pc.invert(rows.column(INVALID).combine_chunks())
        if job.lookup and job.operation in ("upsert", "delete"):
            fg = _look_up(job, rows.column(KEY).combine_chunks(), files.get(partition, []), footers, counted)
        if job.operation == "delete":
            keep = pc.or_(fg.is_valid(), pc.invert(valid))
            rows, fg = rows.filter(keep), fg.filter(keep)
        else:
            missing = np.flatnonzero(np.asarray(pc.and_(fg.is_null(), valid)))
            if len(missing):
                if partition not in targets:
                    targets[partition] = _InsertTargets(job, partition, files.get(partition, []), counted)
                chosen = fg.to_numpy(zero_copy_only=False)
                chosen[missing] = targets[partition].place(rows.column(KEY).take(pa.array(missing)).combine_chunks())
                fg = pa.array(chosen, pa.string())
        yield from rows.set_column(rows.schema.get_field_index(FG), FG, fg).to_batches()


def _files_by_partition(job: WriteJob) -> dict[str, list[tuple[str, str, int]]]:
    """partition -> (file id, path, bytes) of its latest base files."""
    out: dict[str, list[tuple[str, str, int]]] = {}
    for file_id, (partition, name, _, size) in sorted(job.base_files.items()):
        out.setdefault(partition, []).append((file_id, join(job.base, partition, name), size))
    return out


def _look_up(job: WriteJob, keys: pa.Array, files: list[tuple[str, str, int]], footers: dict,
             counted: dict | None = None) -> pa.Array:
    """The file group holding each key among `files` (null: none does). `counted` gets the
    record count of each file whose keys were read."""
    found = np.full(len(keys), None, dtype=object)
    if job.lookup == "BLOOM" and job.stored_filters is not None:
        job.stored_filters.into(job.storage, {job.base_files[fid][:2]: path for fid, path, _ in files
                                              if fid in job.base_files and path not in footers}, footers)
    for file_id, path, size in files:
        if job.lookup == "BLOOM" and not may_hold(path, keys, footers, job.storage):
            continue
        stored = base_file_keys(path, job.storage, size)
        if counted is not None:
            counted[path] = len(stored)
        found[np.asarray(pc.is_in(keys, value_set=stored))] = file_id
    return pa.array(found, pa.string())


class _InsertTargets:
    """Where one partition's inserts go, in key order: its small file groups (below the small
    file limit, not under a pending clustering plan) up to the target size, then new file groups
    of the target size, each as many records as fit at the partition's bytes per record."""

    def __init__(self, job: WriteJob, partition: str, files: list[tuple[str, str, int]],
                 counted: dict | None = None):
        per_record = record_bytes(files, job.storage, counted)
        self.per_file = max(1, job.target_file_size // per_record)
        small = [(fid, (job.target_file_size - size) // per_record)
                 for fid, _, size in sorted(files, key=lambda f: (f[2], f[0]))
                 if size < job.small_file_limit and fid not in job.no_fill]
        self.open = [(fid, room) for fid, room in small if room > 0]
        self.seed, self.opened = f"{job.base}|{job.instant}|{partition}|insert", 0
        self.last_key, self.last_id = None, None

    def place(self, keys: pa.Array) -> np.ndarray:
        """File ids for inserts with these `keys`, which arrive sorted: rows sharing a key (the
        merge keeps one) take one place and one file group, also across consecutive calls."""
        first = np.ones(len(keys), dtype=bool)
        first[1:] = np.asarray(pc.not_equal(keys[1:], keys[:-1]))
        carried = keys[0].as_py() == self.last_key
        first[0] = not carried
        ids = self.take(int(first.sum()))
        if carried:
            ids = np.concatenate([np.array([self.last_id], dtype=object), ids])
        chosen = ids[np.cumsum(first) - (0 if carried else 1)]
        self.last_key, self.last_id = keys[-1].as_py(), chosen[-1]
        return chosen

    def take(self, n: int) -> np.ndarray:
        """File ids for the next `n` inserts."""
        ids, counts = [], []
        while n:
            if not self.open:
                self.opened += 1
                fid = f"{uuid.uuid5(uuid.NAMESPACE_URL, f'{self.seed}|{self.opened}')}-0"
                self.open = [(fid, self.per_file)]
            fid, room = self.open[0]
            used = min(n, room)
            ids.append(fid)
            counts.append(used)
            n -= used
            self.open = self.open[1:] if used == room else [(fid, room - used)] + self.open[1:]
        return np.repeat(np.array(ids, dtype=object), counts)


def record_bytes(files: list[tuple[str, str, int]], storage: Storage, counted: dict | None = None) -> int:
    """Average stored bytes per record, from one base file's footer (metadata only), or from a
    file whose records the task `counted` already (no request)."""
    for _, path, size in files:
        if counted and counted.get(path):
            return max(1, size // counted[path])
    for _, path, size in files:
        with storage.open_input_file(path, size) as f:
            rows = pq.read_metadata(f).num_rows
        if rows:
            return max(1, size // rows)
    return DEFAULT_RECORD_BYTES


def _run_pieces(batches, column: str):
    """(value, rows) for each stretch of equal `column` values, in arrival order (null as "")."""
    for batch in batches:
        if not len(batch):
            continue
        ids = pc.fill_null(batch.column(column), "")
        starts = [0] + [int(i) + 1 for i in np.flatnonzero(np.asarray(pc.not_equal(ids[1:], ids[:-1])))]
        for s, e in zip(starts, starts[1:] + [len(batch)]):
            yield ids[s].as_py(), batch.slice(s, e - s)


def partition_chunks(batches, max_bytes: int):
    """A task's rows, which arrive sorted by partition path: yields (partition, rows), a
    partition's rows in chunks of about `max_bytes` at most."""
    current, size = None, 0
    pieces: list[pa.RecordBatch] = []
    for partition, piece in _run_pieces(batches, PART):
        if pieces and (partition != current or size + piece.nbytes > max_bytes):
            yield current, pa.Table.from_batches(pieces)
            pieces, size = [], 0
        current = partition
        pieces.append(piece)
        size += piece.nbytes
    if pieces:
        yield current, pa.Table.from_batches(pieces)


def file_group_runs(batches):
    """A task's rows, which arrive sorted by file group: yields (file id, rows of that file
    group), holding one file group's rows at a time."""
    current = None
    pieces: list[pa.RecordBatch] = []
    done: set[str | None] = set()
    for file_id, piece in _run_pieces(batches, FG):
        if pieces and file_id != current:
            yield current or None, pa.Table.from_batches(pieces)
            done.add(current)
            pieces = []
        if file_id in done:  # two slices of one file group in one instant would corrupt it
            raise RuntimeError(f"rows of file group {file_id!r} arrive out of order")
        current = file_id
        pieces.append(piece)
    if pieces:
        yield current or None, pa.Table.from_batches(pieces)


def write_file_groups(job: WriteJob, batches):
    """Merge each file group's incoming rows into its latest base file and write the new slice,
    for the file groups whose content changes (the others are reported with their ignored rows).

    Rows arrive sorted by file group, and are merged one file group at a time. Rows without a
    valid key make the task report them instead of its writes; it writes no more file groups,
    and the driver refuses the write, whose rollback deletes what was already written."""
    partition_id, token = task_token()
    stats: list[dict] = []
    invalid, sample = 0, list[dict]()
    for file_id, group in file_group_runs(batches):
        bad = group.filter(group.column(INVALID))
        if bad.num_rows:
            invalid += bad.num_rows
            sample += bad.drop_columns([KEY, PART, FG, SEQ, INVALID]).slice(0, 3 - len(sample)).to_pylist()
        elif not invalid:
            stats.append(_write_group(job, group, file_id, token, partition_id))
    if invalid:
        yield invalid_batch(invalid, sample)
    elif stats:
        yield stats_batch(stats)


@dataclass(frozen=True)
class LogTarget:
    """A merge-on-read file group's latest slice as a deltacommit appends to it: a new log file in
    every deltacommit (measured on Hudi 0.15 and 1.2), named by `log_instant` with `next_version`;
    `read` gives its stored rows. `log_instant`, `base_file` and `log_files` are also what the write
    stat records (prevCommit, baseFile, logFiles with the new one appended)."""
    partition: str
    log_instant: str                    # version 6: the slice's base instant; 8/9: the deltacommit
    base_file: str                      # its base file's name ("" for a slice without one; 8/9: "")
    log_files: tuple[str, ...]          # its log files' names, oldest first (8/9: none)
    next_version: int
    read: SliceRead


def append_file_groups(job: WriteJob, batches):
    """Merge-on-read (a deltacommit): each existing file group's changes go to a new log file of
    its latest slice (an Avro data block, or a delete block for deletes); a new file group (a
    bucket not yet written) gets a base file, as Apache Hudi 0.15 lays out a bucket table. Each
    file is marked (`.hoodie/.temp/<instant>/`) before it is written, so a rollback finds it.
    Rows arrive sorted by file group, as for `write_file_groups`."""
    partition_id, token = task_token()
    stats: list[dict] = []
    invalid, sample = 0, list[dict]()
    targets = job.log_targets or {}
    for file_id, group in file_group_runs(batches):
        bad = group.filter(group.column(INVALID))
        if bad.num_rows:
            invalid += bad.num_rows
            sample += bad.drop_columns([KEY, PART, FG, SEQ, INVALID]).slice(0, 3 - len(sample)).to_pylist()
        elif invalid:
            continue
        elif file_id in targets and not _merges_inserts(job, group, file_id, base := _base_keys(job, file_id)):
            stats.append(_append_group(job, group, file_id, targets[file_id], token, partition_id, base))
        elif file_id in targets:   # a small base file takes inserts: merged into its next base file
            target = targets[file_id]
            write_marker(job.storage, job.base, job.instant, target.partition,
                         BaseFileName(file_id, token, job.instant).format(), "MERGE")
            stats.append(_write_group(job, group, file_id, token, partition_id))
        else:
            partition = group.column(PART)[0].as_py()
            write_marker(job.storage, job.base, job.instant, partition,
                         BaseFileName(file_id, token, job.instant).format(), "CREATE")
            stats.append(_write_group(job, group, file_id, token, partition_id))
    if invalid:
        yield invalid_batch(invalid, sample)
    elif stats:
        yield stats_batch(stats)


def _fills(job: WriteJob, file_id: str) -> bool:
    """SIMPLE, BLOOM and RECORD_LEVEL (not BUCKET): a slice with a base file and without log files
    may take the batch's inserts. The slice's facts come from the job (`no_fill` holds the slices
    with log files), not from the target, whose base and log files are what the write stat names
    (none on version 9)."""
    return (job.buckets is None and job.operation != "delete" and file_id not in job.no_fill
            and file_id in job.base_files)


def _base_keys(job: WriteJob, file_id: str) -> pa.Array | None:
    """The keys of the slice's base file in row order, read once per file group when the small-file
    choice or the record positions need them (None otherwise, or without a base file)."""
    if not (_fills(job, file_id) or job.record_positions) or file_id not in job.base_files:
        return None
    partition, name, _, size = job.base_files[file_id]
    return base_file_keys(join(job.base, partition, name), job.storage, size)


def _merges_inserts(job: WriteJob, group: pa.Table, file_id: str, stored: pa.Array | None) -> bool:
    """A slice that `_fills` and that the batch gives inserts (keys its base file's `stored` keys
    lack: a small file chosen for them) is merged into a new base file, updates and all, as Apache
    Hudi 0.15 and 1.2 do (measured); other slices take the changes in a log file."""
    if not _fills(job, file_id) or stored is None:
        return False
    return not pc.all(pc.is_in(group.column(KEY), value_set=stored)).as_py()


def _stored_versions(job: WriteJob, target: LogTarget) -> pa.Table:
    """The keys a snapshot read of the slice returns, with their ordering values."""
    fields = [pa.field(KEY, pa.string())]
    if job.ordering_field:
        fields.append(job.data_schema.field(job.ordering_field))
    assert job.counting is not None and job.merge_rules is not None
    return read_slice(job.storage, target.read, job.counting, job.merge_rules, pa.schema(fields))


def _append_group(job: WriteJob, group: pa.Table, file_id: str, target: LogTarget, token: str,
                  partition_id: int, base_keys: pa.Array | None) -> dict:
    """One existing file group's log file: the incoming rows that change what a snapshot reads
    (an upsert's row older than the stored one is ignored, as on copy-on-write; a delete of a key
    the slice does not hold deletes nothing). Nothing to write: no file, only the counts.
    `base_keys`: the keys of the slice's base file in row order, for the record positions."""
    partition = target.partition
    leaving = pa.array([], pa.string())
    if DEL in group.column_names:   # RECORD_LEVEL: keys moving partition leave this file group (a delete block)
        if job.operation != "delete":
            leaving = group.filter(group.column(DEL)).column(KEY).combine_chunks()
            group = group.filter(pc.invert(group.column(DEL)))
        group = group.drop_columns([DEL])
    if job.operation in ("upsert", "delete"):
        group = latest_per_key(group, job.ordering_field)
    incoming = group.select(job.data_schema.names).cast(job.data_schema)
    keys = group.column(KEY).combine_chunks()
    n = len(keys)
    inserts = updates = deletes = ignored = 0
    take = np.ones(n, dtype=bool)
    if job.operation == "insert":
        inserts = n
    elif n:
        stored = _stored_versions(job, target)
        pos = pc.index_in(keys, value_set=stored.column(KEY).combine_chunks())
        matched = np.asarray(pos.is_valid())
        if job.operation == "delete":
            take, deletes = matched, int(matched.sum())
        else:
            if job.ordering_field and matched.any():
                idx = np.flatnonzero(matched)
                old = stored.column(job.ordering_field).take(pos.take(pa.array(idx)))
                take[idx[_old_wins(old, incoming.column(job.ordering_field).take(pa.array(idx)))]] = False
            updates, inserts = int((matched & take).sum()), int((~matched).sum())
            ignored = int((matched & ~take).sum())
    if not take.any() and not len(leaving):
        return _unchanged(partition, file_id, target.log_instant, ignored)
    incoming, keys = incoming.filter(pa.array(take)), keys.filter(pa.array(take))
    rows = _base_rows(keys, base_keys) if job.record_positions else None
    if rows is not None:   # a positional reader pairs the i-th record with the i-th smallest row
        order = pa.array(np.argsort(rows, kind="stable"))
        incoming, keys, rows = incoming.take(order), keys.take(order), rows[order.to_numpy()]
    name = LogFileName(file_id, target.log_instant, target.next_version, token).format()
    rel = f"{partition}/{name}" if partition else name
    schema = with_meta_fields(job.avro_schema)
    blocks = []
    if job.operation == "delete":
        blocks.append(delete_block(job.instant, [(k, partition) for k in keys.to_pylist()], schema))
    elif len(keys):
        meta = {COMMIT_TIME: job.instant, "_hoodie_partition_path": partition, "_hoodie_file_name": file_id}
        records = [{**meta, SEQNO: f"{job.instant}_{partition_id}_{i}", KEY: key, **row}
                   for i, (key, row) in enumerate(zip(keys.to_pylist(), incoming.to_pylist()))]
        blocks.append(avro_block(records, json.loads(schema), job.instant))
    if blocks and rows is not None:
        blocks[0] = _with_positions(blocks[0], rows, job.base_files[file_id][1])
    if len(leaving):   # after the data block, as Hudi's append handle writes both
        blocks.append(delete_block(job.instant, [(k, partition) for k in leaving.to_pylist()], schema))
        deletes += len(leaving)
    data = b"".join(encode_block(b) for b in blocks)
    write_marker(job.storage, job.base, job.instant, partition, name, "APPEND")
    job.storage.write_bytes(join(job.base, rel), data)
    return dict(partition=partition, file_id=file_id, path=rel, prev_commit=target.log_instant,
                num_writes=0 if job.operation == "delete" else len(keys), num_inserts=inserts, num_updates=updates,
                num_deletes=deletes, bytes=len(data), invalid=0, invalid_sample="", num_ignored=ignored,
                log_version=target.next_version, base_file=target.base_file,
                log_files=json.dumps([*target.log_files, name]))


def _base_rows(keys: pa.Array, stored: pa.Array | None) -> np.ndarray | None:
    """The row of each of `keys` in the slice's base file (`stored`: its keys in row order), or None
    when there is no base file or a key has no row there: Hudi then writes no positions, as it
    cannot name each record's row (a reader merges by key instead)."""
    if stored is None or not len(keys):
        return None
    rows = pc.index_in(keys, value_set=stored)
    return None if rows.null_count else rows.to_numpy(zero_copy_only=False)


def _with_positions(block: LogBlock, rows: np.ndarray, base_name: str) -> LogBlock:
    """`block` (its records in the order of `rows`) with those rows of the slice's base file
    `base_name` (RECORD_POSITIONS, and the base file's instant they refer to), as Apache Hudi 1.2
    writes the blocks of a SIMPLE or BLOOM deltacommit (measured): a reader may then merge by row
    number, pairing the i-th record with the i-th smallest position."""
    base = BaseFileName.parse(base_name)
    if base is None:
        return block
    return dataclasses.replace(block, header={
        **block.header, Header.RECORD_POSITIONS: encode_positions(rows.tolist()),
        Header.BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS: base.instant})


def write_new_file_groups(job: WriteJob, rows_per_file: int, batches, prepared: bool = False):
    """bulk_insert without a shuffle: each task writes its own rows (`prepared` or not yet)
    into new file groups of at most `rows_per_file` rows, one or more per partition it saw
    (Apache Hudi's bulk_insert with sort mode NONE lays files out the same way). Memory: the
    task's rows (one input split)."""
    kept = [b for b in (batches if prepared else prepare(job, batches)) if len(b)]
    if not kept:
        return
    rows = pa.Table.from_batches(kept)
    refused = invalid_report([rows])
    if refused is not None:
        yield refused
        return
    partition_id, token = task_token()
    encoded = rows.column(PART).combine_chunks().dictionary_encode()
    codes = np.asarray(encoded.indices)
    stats = []
    for code in range(len(encoded.dictionary)):
        group = rows.take(pa.array(np.flatnonzero(codes == code)))
        for start in range(0, group.num_rows, rows_per_file):
            stats.append(_write_group(job, group.slice(start, rows_per_file), new_file_id(), token, partition_id))
    yield stats_batch(stats)


def invalid_report(tables: list[pa.Table]) -> pa.RecordBatch | None:
    """The stats row reporting invalid rows among `tables`, or None when all are valid."""
    invalid_rows = [t.filter(t.column(INVALID)) for t in tables]
    invalid = sum(t.num_rows for t in invalid_rows)
    if not invalid:
        return None
    return invalid_batch(invalid, pa.concat_tables(invalid_rows).drop_columns([KEY, PART, FG, SEQ, INVALID])
                         .slice(0, 3).to_pylist())


def invalid_batch(invalid: int, sample: list[dict]) -> pa.RecordBatch:
    """A task's report of rows without a valid key (count and a sample): the driver refuses the write."""
    return stats_batch([dict(partition="", file_id="", path="", prev_commit="", num_writes=0, num_inserts=0,
                             num_updates=0, num_deletes=0, bytes=0, invalid=invalid,
                             invalid_sample=json.dumps(sample, default=str))])


def stats_batch(rows: list[dict]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(rows, schema=STATS_SCHEMA)


def latest_per_key(table: pa.Table, ordering: str | None) -> pa.Table:
    """One row per key: the greatest ordering value wins, ties go to the later input row."""
    order = [(KEY, "ascending")] + ([(ordering, "ascending", "at_start")] if ordering else []) + [(SEQ, "ascending")]
    table = table.take(pc.sort_indices(table, sort_keys=order))  # a null ordering value is the smallest
    keys = table.column(KEY).combine_chunks()
    if len(keys) < 2:
        return table
    last = np.append(np.asarray(pc.not_equal(keys[1:], keys[:-1])), True)
    return table.filter(pa.array(last))


def _write_group(job: WriteJob, group: pa.Table, file_id: str, token: str, partition_id: int) -> dict:
    partition = group.column(PART)[0].as_py()
    data_cols = job.data_schema.names
    leaving = pa.array([], pa.string())
    if DEL in group.column_names:
        leaving = group.filter(group.column(DEL)).column(KEY).combine_chunks()
        group = group.filter(pc.invert(group.column(DEL)))
    existing_info = job.base_files.get(file_id) if job.uses_existing else None
    if job.operation in ("upsert", "delete"):
        group = latest_per_key(group, job.ordering_field)
    incoming = group.select(data_cols).cast(job.data_schema)
    inc_keys = group.column(KEY).combine_chunks()
    name = BaseFileName(file_id, token, job.instant).format()
    rel = f"{partition}/{name}" if partition else name
    pairs = PairChanges(job.base, job.indexed) if job.indexed else None
    if existing_info is not None and existing_info[3] > job.memory_bytes:
        old_part, old_name, prev_commit, size = existing_info
        if not _changes_stored(job, join(job.base, old_part, old_name), size, incoming, inc_keys, leaving):
            return _unchanged(partition, file_id, prev_commit, ignored=len(inc_keys) if job.operation == "upsert" else 0)
        with BaseFileWriter(join(job.base, rel), _slice_schema(job), commit_time=job.instant, partition_path=partition,
                            partition_id=partition_id, avro_schema_json=job.avro_schema, preserve_meta=True,
                            bloom_filter=job.bloom_filter, storage=job.storage,
                            row_group_bytes=max(1, min(ROW_GROUP_BYTES, job.memory_bytes // 4))) as out:
            counts = _merge_streaming(job, join(job.base, old_part, old_name), size, incoming, inc_keys, leaving, out,
                                      pairs)
            written = out.close()
    else:
        prev_commit = existing_info[2] if existing_info is not None else "null"
        table, all_keys, counts = _merge_in_memory(job, existing_info, incoming, inc_keys, leaving, pairs)
        if not any(counts[:3]):
            return _unchanged(partition, file_id, prev_commit, ignored=counts[3])
        written = write_base_file(join(job.base, rel), table, commit_time=job.instant, partition_path=partition,
                                  partition_id=partition_id, record_keys=all_keys, avro_schema_json=job.avro_schema,
                                  preserve_meta=True, bloom_filter=job.bloom_filter, storage=job.storage)
    inserts, updates, deletes, ignored = counts
    return dict(partition=partition, file_id=file_id, path=rel, prev_commit=prev_commit, num_writes=written.num_rows,
                num_inserts=inserts, num_updates=updates, num_deletes=deletes, bytes=written.size, invalid=0,
                invalid_sample="", num_ignored=ignored, index_changes=None if pairs is None else pairs.report())


def _unchanged(partition: str, file_id: str, prev_commit: str, ignored: int) -> dict:
    """The report of a file group the merge leaves as it is (every incoming row lost to its stored
    row, no delete hit): no new slice (`path` empty), only the ignored rows counted."""
    return dict(partition=partition, file_id=file_id, path="", prev_commit=prev_commit, num_writes=0,
                num_inserts=0, num_updates=0, num_deletes=0, bytes=0, invalid=0, invalid_sample="",
                num_ignored=ignored)


def _changes_stored(job: WriteJob, path: str, size: int, incoming: pa.Table, inc_keys: pa.Array,
                    leaving: pa.Array) -> bool:
    """Whether merging the incoming rows into the (large) base file at `path` changes it, by the
    rules of `_merge_streaming`, before a byte is written: reads only the key and ordering columns,
    batch by batch, and stops at the first change. Unchanged: every incoming row lost to its stored
    row (an upsert) or names no stored key (a delete), and no key leaves."""
    if job.operation not in ("upsert", "delete") or (job.operation == "upsert" and not job.ordering_field):
        return bool(len(inc_keys)) or bool(len(leaving))  # every incoming row is written
    stored = _stored_schema(job)
    wanted = pa.schema([stored.field(c) for c in (KEY, job.ordering_field) if c])
    matched = np.zeros(len(inc_keys), dtype=bool)
    with job.storage.open_input_file(path, size) as f:
        file = pq.ParquetFile(f)
        columns = [c for c in wanted.names if c in file.schema_arrow.names]
        for batch in file.iter_batches(batch_size=_batch_rows(file.metadata, job.memory_bytes), columns=columns):
            old = align_to_schema(pa.Table.from_batches([batch]), wanted)
            old_keys = old.column(KEY).combine_chunks()
            if len(leaving) and pc.any(pc.is_in(old_keys, value_set=leaving)).as_py():
                return True
            pos = pc.index_in(old_keys, value_set=inc_keys)
            old_idx = np.flatnonzero(np.asarray(pos.is_valid()))
            if not len(old_idx):
                continue
            if job.operation == "delete":
                return True
            new_idx = np.asarray(pos.take(pa.array(old_idx)))
            if not _old_wins(old.column(job.ordering_field).take(pa.array(old_idx)),
                             incoming.column(job.ordering_field).take(pa.array(new_idx))).all():
                return True
            matched[new_idx] = True
    return job.operation == "upsert" and not matched.all()  # an unmatched incoming row is an insert


def _stored_schema(job: WriteJob) -> pa.Schema:
    """Stored rows as a merge reads them: the meta columns it keeps, then the table's columns."""
    return pa.schema([pa.field(c, pa.string()) for c in (COMMIT_TIME, SEQNO, KEY)] + list(job.data_schema))


def _slice_schema(job: WriteJob) -> pa.Schema:
    """Rows as a merge hands them to the base file writer (which adds the other meta columns)."""
    return pa.schema([pa.field(COMMIT_TIME, pa.string()), pa.field(SEQNO, pa.string())] + list(job.data_schema))


def _old_wins(old_ord: pa.Array, new_ord: pa.Array) -> np.ndarray:
    """Existing rows win only when their ordering value is strictly greater (a null one is the smallest)."""
    return np.asarray(pc.fill_null(pc.greater(old_ord, new_ord), False)) | (
        np.asarray(new_ord.is_null()) & ~np.asarray(old_ord.is_null()))


def _merge_in_memory(job: WriteJob, existing_info, incoming: pa.Table, inc_keys: pa.Array, leaving: pa.Array,
                     pairs: PairChanges | None = None):
    """The new slice's rows and keys from the whole base file and the incoming rows, and the
    counts (inserts, updates, deletes, ignored); `pairs` gets the stored rows dropped and the rows written."""
    n_in = len(inc_keys)
    old = None
    if existing_info is not None:
        old_part, old_name = existing_info[:2]
        with job.storage.open_whole_file(join(job.base, old_part, old_name)) as f:
            old = pq.ParquetFile(f).read(use_threads=False)   # a third of read_table's cost on a small file
        # A file written before a schema evolution: bring it to the current columns first.
        old = align_to_schema(old, _stored_schema(job))
    stored = old
    inserts = updates = deletes = ignored = 0
    if old is not None and len(leaving):
        gone = pc.is_in(old.column(KEY), value_set=leaving)
        deletes = pc.sum(gone).as_py() or 0
        old = old.filter(pc.invert(gone))
    if old is None or job.operation in ("insert", "bulk_insert"):
        kept = old
        new_rows, new_keys = incoming, inc_keys
        inserts = n_in
        if job.operation == "delete":
            new_rows, new_keys, inserts = incoming.slice(0, 0), inc_keys.slice(0, 0), 0
    else:
        old_keys = old.column(KEY).combine_chunks()
        matched_old = np.asarray(pc.is_in(old_keys, value_set=inc_keys))
        matched_new = np.asarray(pc.is_in(inc_keys, value_set=old_keys))
        if job.operation == "delete":
            deletes += int(matched_old.sum())
            kept, new_rows, new_keys = old.filter(pa.array(~matched_old)), incoming.slice(0, 0), inc_keys.slice(0, 0)
        else:
            take_new = np.ones(n_in, dtype=bool)
            replace_old = matched_old.copy()
            if job.ordering_field and matched_old.any():
                old_idx = np.flatnonzero(matched_old)
                old_ord = old.column(job.ordering_field).take(pa.array(old_idx))
                pos = np.asarray(pc.index_in(old_keys.take(pa.array(old_idx)), value_set=inc_keys))
                new_ord = incoming.column(job.ordering_field).take(pa.array(pos))
                old_wins = _old_wins(old_ord, new_ord)
                replace_old[old_idx[old_wins]] = False
                take_new[pos[old_wins]] = False
            updates = int((matched_new & take_new).sum())
            ignored = int((matched_new & ~take_new).sum())
            inserts = int((~matched_new).sum())
            kept = old.filter(pa.array(~replace_old))
            new_rows, new_keys = incoming.filter(pa.array(take_new)), inc_keys.filter(pa.array(take_new))
    schema = _slice_schema(job)
    if pairs is not None:
        if stored is not None:
            left = kept.column(KEY).combine_chunks() if kept is not None else pa.array([], pa.string())
            pairs.remove(stored.filter(pc.invert(pc.is_in(stored.column(KEY), value_set=left))))
        pairs.add(new_rows, new_keys)
    pieces, keys = [schema.empty_table()], [pa.array([], pa.string())]
    if kept is not None and kept.num_rows:
        pieces.append(align_to_schema(kept, schema))
        keys.append(kept.column(KEY).combine_chunks())
    if new_rows.num_rows:
        pieces.append(_new_rows(new_rows, schema))
        keys.append(new_keys)
    return pa.concat_tables(pieces), pa.concat_arrays(keys), (inserts, updates, deletes, ignored)


def _new_rows(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """Incoming rows in the slice's layout: no commit time or seqno yet (the writer gives them)."""
    nulls = pa.nulls(rows.num_rows, pa.string())
    return pa.Table.from_arrays([nulls, nulls] + list(rows.columns), schema=schema)


def _merge_streaming(job: WriteJob, path: str, size: int, incoming: pa.Table, inc_keys: pa.Array,
                     leaving: pa.Array, out: BaseFileWriter, pairs: PairChanges | None = None) -> tuple[int, int, int, int]:
    """Merge a base file too large to hold, batch by batch, with the same rules as
    `_merge_in_memory`: kept stored rows are written in their stored order, then the incoming
    rows that win, sorted by key (as Apache Hudi's merge handle lays a slice out). Returns the
    counts (inserts, updates, deletes, ignored); `pairs` gets the stored rows dropped and the rows written."""
    n_in = len(inc_keys)
    matched_new, take_new = np.zeros(n_in, dtype=bool), np.ones(n_in, dtype=bool)
    deletes = 0
    merging = job.operation in ("upsert", "delete")
    stored, schema = _stored_schema(job), _slice_schema(job)
    with job.storage.open_input_file(path, size) as f:
        file = pq.ParquetFile(f)
        for batch in file.iter_batches(batch_size=_batch_rows(file.metadata, job.memory_bytes)):
            old = align_to_schema(pa.Table.from_batches([batch]), stored)
            old_keys = old.column(KEY).combine_chunks()
            keep = np.ones(len(old_keys), dtype=bool)
            if len(leaving):
                gone = np.asarray(pc.is_in(old_keys, value_set=leaving))
                deletes += int(gone.sum())
                keep &= ~gone
            if merging and n_in:
                pos = pc.index_in(old_keys, value_set=inc_keys)
                old_idx = np.flatnonzero(np.asarray(pos.is_valid()) & keep)
                new_idx = np.asarray(pos.take(pa.array(old_idx)))
                if job.operation == "delete":
                    deletes += len(old_idx)
                    keep[old_idx] = False
                else:
                    matched_new[new_idx] = True
                    replaced = np.ones(len(old_idx), dtype=bool)
                    if job.ordering_field and len(old_idx):
                        old_wins = _old_wins(old.column(job.ordering_field).take(pa.array(old_idx)),
                                             incoming.column(job.ordering_field).take(pa.array(new_idx)))
                        take_new[new_idx[old_wins]] = False
                        replaced = ~old_wins
                    keep[old_idx[replaced]] = False
            kept = old.filter(pa.array(keep))
            if pairs is not None:
                pairs.remove(old.filter(pa.array(~keep)))
            if kept.num_rows:
                out.write(align_to_schema(kept, schema), kept.column(KEY))
    if job.operation == "delete":
        return 0, 0, deletes, 0
    if job.operation == "upsert":
        counts = (int((~matched_new).sum()), int((matched_new & take_new).sum()), deletes,
                  int((matched_new & ~take_new).sum()))
    else:
        counts = (n_in, 0, deletes, 0)
    new_rows, new_keys = incoming.filter(pa.array(take_new)), inc_keys.filter(pa.array(take_new))
    if pairs is not None:
        pairs.add(new_rows, new_keys)
    if len(new_keys):
        order = java_sort_indices(new_keys)
        out.write(_new_rows(new_rows.take(order), schema), new_keys.take(order))
    return counts


def _batch_rows(meta: pq.FileMetaData, memory_bytes: int) -> int:
    """Rows per batch read from a stored base file: about a sixteenth of the task's memory."""
    row_bytes = max(1, sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)) // max(1, meta.num_rows))
    return max(1, min(65_536, memory_bytes // 16 // row_bytes))

"""The record-level index on disk (seed RFC-08): record key -> (partition path, file id), no Spark.

Where: `.hoodie/.tablespec/record_index/`. Hudi and hudi-rs read only instant files directly
in `.hoodie/` (and their own sub-folders), so a dot folder of ours is invisible to them.

Buckets: a key's bucket is `(String.hashCode(key) & 0x7fffffff) % num_buckets`, vectorised by
hudi/hashing. The count is fixed for the table's life (`tablespec.record.level.num.buckets`
in hoodie.properties); changing it means rebuilding the index.

Files: `<bucket:05d>-of-<buckets:05d>_<instant>.<kind>.arrow`, immutable; `buckets` is the bucket
count the file's layout hashes with, and only files of the table's current count are read (a
rebuild with another count commits before hoodie.properties switches to it: until then the old
layout still serves, and it is deleted after the switch). Each commit writes one `delta` per
bucket it touches; a build or a compaction writes a `base` holding the bucket's whole state at
its instant. A file counts once its instant is completed on the timeline (or was archived);
rollback deletes the instant's files with its data files. A bucket's live files are those
newer than its newest counted base, plus that base; the newest entry for a key wins and a null
`file_id` is a tombstone.

Layout: Arrow IPC file, uncompressed, one record batch, columns `h` (uint32 Java hash of the key),
`key`, `partition` and `file_id` (dictionary-encoded), sorted by (h, key). Uncompressed IPC is
memory-mapped with zero copies, so a lookup touches only the pages it needs. Sorting by the hash
rather than the key lets `np.searchsorted` binary-search a fixed-width column for many keys at
once (there is no vectorised binary search over Arrow strings); equal hashes are told apart by
comparing the key, so collisions cost a slower path, never a wrong answer.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tablespec.errors import HudiFormatError, TablespecError
from tablespec.hudi import keys
from tablespec.hudi.config import META_FOLDER
from tablespec.hudi.hashing import INT_MAX, java_string_hash
from tablespec.hudi.io import LocalStorage, Storage, join

_LOCAL = LocalStorage()

FOLDER = ".tablespec/record_index"     # under .hoodie/
NUM_BUCKETS_PROPERTY = keys.RECORD_LEVEL_BUCKETS.name
ENTRIES_PER_BUCKET = 1_000_000          # RFC-08: a bucket file of ~1M entries serves lookups well
HEADROOM = 1.3                          # RFC-08: over-provision ~30%, buckets never change
MIN_BUCKETS = 4
# Per file: seek (binary search on the mapped hash column) when at most this fraction of its
# entries is looked up, else scan (hash every key of the file, then probe the hash table).
# Measured on this machine (2 cores, page cache warm; keys "key-%09d", half present) on a
# 1M-entry file, best of 5: 10k keys seek 3.6 / scan 78 ms; 100k 30 / 84; 300k 87 / 105;
# 400k 111 / 116; 500k 138 / 129; 650k 185 / 153; 1M 286 / 178. Crossover ~0.45 (RFC-08: ~0.3).
SCAN_FRACTION = 0.45

ENTRY_SCHEMA = pa.schema([
    ("h", pa.uint32()), ("key", pa.string()),
    ("partition", pa.dictionary(pa.int32(), pa.string())), ("file_id", pa.dictionary(pa.int32(), pa.string())),
])
# What a lookup answers: where each key lives.
LOCATIONS = pa.schema([("key", pa.string()), ("partition_path", pa.string()), ("file_id", pa.string())])
_NAME = re.compile(r"^(?P<bucket>\d{5})-of-(?P<buckets>\d{5})_(?P<instant>\d+)\.(?P<kind>base|delta)\.arrow$")


@dataclass(frozen=True, order=True)
class IndexFile:
    bucket: int
    instant: str
    kind: str          # base | delta
    buckets: int       # the bucket count of the layout the file belongs to

    @property
    def name(self) -> str:
        return f"{self.bucket:05d}-of-{self.buckets:05d}_{self.instant}.{self.kind}.arrow"

    @classmethod
    def parse(cls, name: str) -> IndexFile | None:
        m = _NAME.match(name)
        return cls(int(m["bucket"]), m["instant"], m["kind"], int(m["buckets"])) if m else None


def index_folder(base: str) -> str:
    return join(base, META_FOLDER, FOLDER)


def default_num_buckets(rows: int) -> int:
    """Buckets for a table of `rows` keys: ~1M entries each after 30% growth, at least MIN_BUCKETS."""
    return max(MIN_BUCKETS, math.ceil(rows * HEADROOM / ENTRIES_PER_BUCKET))


def num_buckets_of(props: dict[str, str]) -> int:
    raw = props.get(NUM_BUCKETS_PROPERTY)
    return int(raw) if raw else MIN_BUCKETS


def key_hashes(keys) -> np.ndarray:
    """Java `String.hashCode()` of each key, as uint32 (the sort column and the bucket source)."""
    return java_string_hash(keys).view(np.uint32)


def buckets_of(hashes: np.ndarray, num_buckets: int) -> np.ndarray:
    return ((hashes & INT_MAX) % num_buckets).astype(np.int32)


def entries(keys, partitions, file_ids) -> pa.Table:
    """Index entries sorted for search; a null file id is a tombstone. A key given twice keeps
    its location over its tombstone (a key moved within one commit: removed here, added there)."""
    keys, partitions, file_ids = (_strings(a) for a in (keys, partitions, file_ids))
    table = pa.table({"h": pa.array(key_hashes(keys)), "key": keys, "partition": partitions, "file_id": file_ids})
    return _first_per_key(table.append_column("_tomb", pc.is_null(table.column("file_id"))), "_tomb")


def _first_per_key(table: pa.Table, rank: str) -> pa.Table:
    """Sorted by (h, key), one entry per key: the one with the lowest `rank` (then dropped)."""
    table = table.take(pc.sort_indices(table, [("h", "ascending"), ("key", "ascending"), (rank, "ascending")]))
    k = table.column("key").combine_chunks()
    if len(k) > 1:
        table = table.filter(pa.array(np.concatenate([[True], np.asarray(pc.not_equal(k[1:], k[:-1]))])))
    return _encode(table.drop_columns([rank]))


def _strings(values) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return values.cast(pa.string()) if isinstance(values, pa.Array) else pa.array(values, pa.string())


def _encode(table: pa.Table) -> pa.Table:
    cols = {n: table.column(n).combine_chunks() for n in ("h", "key", "partition", "file_id")}
    for n in ("partition", "file_id"):
        if not pa.types.is_dictionary(cols[n].type):
            cols[n] = cols[n].dictionary_encode()
    return pa.Table.from_arrays([cols["h"], cols["key"], cols["partition"], cols["file_id"]], schema=ENTRY_SCHEMA)


def write_file(folder: str, file: IndexFile, table: pa.Table, storage: Storage | None = None) -> str:
    """Write one index file atomically (`write_atomic`: a temp file renamed locally, one PUT on an
    object store): a retried task rewrites it whole."""
    path = join(folder, file.name)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, ENTRY_SCHEMA) as writer:
        writer.write_table(table.combine_chunks() if table.num_rows else ENTRY_SCHEMA.empty_table(),
                           max_chunksize=max(1, table.num_rows))
    (storage or _LOCAL).write_atomic(path, sink.getvalue().to_pybytes())
    return path


WHOLE_READ_BYTES = 8 << 20   # object stores: a base file up to this size is read in one GET


def base_file_keys(path: str, storage: Storage | None = None, size: int | None = None) -> pa.Array:
    """The record keys of a data base file (`_hoodie_record_key` only: Parquet column projection).
    `size`, when the caller knows it (the file-system view does): no request to learn it, and a
    small file on an object store is fetched in one GET rather than footer, then column."""
    key = "_hoodie_record_key"
    storage = storage or _LOCAL
    small = size is not None and size <= WHOLE_READ_BYTES and not isinstance(storage, LocalStorage)
    with storage.open_whole_file(path) if small else storage.open_input_file(path, size) as f:
        return pq.read_table(f, columns=[key]).column(key).combine_chunks().cast(pa.string())


def read_file(path: str, storage: Storage | None = None) -> pa.Table:
    """An index file: memory-mapped on local disk (no copy: pages are read as they are touched),
    one GET on an object store."""
    try:
        if storage is None or isinstance(storage, LocalStorage):
            return pa.ipc.open_file(pa.memory_map(path)).read_all()
        return pa.ipc.open_file(pa.py_buffer(storage.read_bytes(path))).read_all()
    except pa.ArrowInvalid as e:
        raise HudiFormatError(f"{path}: not a readable record-level index file ({e}); the index is damaged: "
                              "rebuild it by changing the table's index away from RECORD_LEVEL and back") from None


def _counted(timeline):
    """Whether an instant's index files count: completed, or older than the active timeline (archived)."""
    done = {i.timestamp for i in timeline.completed()}
    first = timeline.instants[0].timestamp if timeline.instants else None
    return lambda ts: ts in done or (first is not None and ts < first)


def list_files(storage: Storage, base: str) -> list[IndexFile]:
    """Every index file in the folder, counted or not (temp files are hidden and skipped)."""
    return sorted(f for info in storage.list_dir(index_folder(base)) if (f := IndexFile.parse(info.name)))


def live_files(storage: Storage, base: str, timeline, num_buckets: int) -> dict[int, list[IndexFile]]:
    """Per bucket, the files a lookup reads, newest first: counted files of the `num_buckets`
    layout down to the newest base."""
    counted = _counted(timeline)
    by_bucket: dict[int, list[IndexFile]] = {}
    for f in sorted(list_files(storage, base), key=lambda f: f.instant, reverse=True):
        if not counted(f.instant) or f.buckets != num_buckets:
            continue
        chain = by_bucket.setdefault(f.bucket, [])
        if chain and chain[-1].kind == "base":
            continue
        chain.append(f)
    return by_bucket


def superseded_files(storage: Storage, base: str, timeline, num_buckets: int) -> list[IndexFile]:
    """Counted files no lookup reads any more: older than their bucket's newest base, or of
    another layout (bucket count)."""
    live = {f for chain in live_files(storage, base, timeline, num_buckets).values() for f in chain}
    counted = _counted(timeline)
    return [f for f in list_files(storage, base) if counted(f.instant) and f not in live]


def delete_instant_files(storage: Storage, base: str, instant: str) -> list[str]:
    """Remove an instant's index files (its rollback); returns their paths."""
    folder = index_folder(base)
    gone = [join(folder, f.name) for f in list_files(storage, base) if f.instant == instant]
    storage.delete_files(gone)
    return gone


def _seek(h: np.ndarray, keys: pa.Array, qh: np.ndarray, qkeys: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(query positions, entry rows) of the queries found, by binary search on the hash column."""
    lo = np.searchsorted(h, qh, "left")
    hi = np.searchsorted(h, qh, "right")
    span = hi - lo
    one = np.flatnonzero(span == 1)
    rows = lo[one]
    same = np.asarray(pc.equal(keys.take(pa.array(rows)), qkeys.take(pa.array(one)))) if len(one) else np.zeros(0, bool)
    q_found, e_found = [one[same]], [rows[same]]
    for q in np.flatnonzero(span > 1):  # hash collisions: compare the few keys sharing the hash
        for row in range(lo[q], hi[q]):
            if keys[int(row)] == qkeys[int(q)]:
                q_found.append(np.array([q]))
                e_found.append(np.array([row]))
                break
    return np.concatenate(q_found), np.concatenate(e_found)


def _scan(keys: pa.Array, qkeys: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(query positions, entry rows) of the queries found, by hashing every entry of the file."""
    pos = pc.index_in(qkeys, value_set=keys)
    found = np.flatnonzero(np.asarray(pos.is_valid()))
    return found, np.asarray(pos.take(pa.array(found))).astype(np.int64)


def probe(paths: list[str], qkeys: pa.Array, qh: np.ndarray, mode: str = "auto",
          storage: Storage | None = None) -> pa.Table:
    """Look keys up in one bucket's files (newest first). Returns (q, partition, file_id) for the
    queries resolved (q = position in `qkeys`); a tombstone resolves a key with a null file id."""
    remaining = np.arange(len(qkeys))
    out = []
    for path in paths:
        if not len(remaining):
            break
        file = read_file(path, storage)
        if not file.num_rows:
            continue
        keys = file.column("key").chunk(0)
        sub_keys = qkeys.take(pa.array(remaining))
        scan = mode == "scan" or (mode == "auto" and len(remaining) > SCAN_FRACTION * file.num_rows)
        if scan:
            q, rows = _scan(keys, sub_keys)
        else:
            q, rows = _seek(file.column("h").chunk(0).to_numpy(), keys, qh[remaining], sub_keys)
        if len(q):
            taken = pa.array(rows)
            out.append(pa.table({"q": pa.array(remaining[q]),
                                 "partition": file.column("partition").chunk(0).take(taken).cast(pa.string()),
                                 "file_id": file.column("file_id").chunk(0).take(taken).cast(pa.string())}))
            keep = np.ones(len(remaining), bool)
            keep[q] = False
            remaining = remaining[keep]
    if not out:
        return pa.table({"q": pa.array([], pa.int64()), "partition": pa.array([], pa.string()),
                         "file_id": pa.array([], pa.string())})
    return pa.concat_tables(out)


def _query_keys(keys) -> pa.Array:
    """Keys to look up as a string array, nulls dropped."""
    try:
        keys = _strings(keys)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        raise TablespecError(f"record keys to look up must be strings: {e}") from None
    return keys.filter(pc.is_valid(keys))


def lookup_in(folder: str, chains: dict[int, list[str]], num_buckets: int, keys,
              storage: Storage | None = None) -> pa.Table:
    """Where each key lives: (key, partition_path, file_id); missing and deleted keys are absent.
    `chains` maps a bucket to its live file names, newest first (see `live_files`)."""
    keys = _query_keys(keys)
    h = key_hashes(keys)
    buckets = buckets_of(h, num_buckets)
    order = np.argsort(buckets, kind="stable")
    bounds = np.flatnonzero(np.diff(buckets[order])) + 1
    parts = []
    for group in np.split(order, bounds) if len(order) else []:
        names = chains.get(int(buckets[group[0]]))
        if not names:
            continue
        found = probe([join(folder, n) for n in names], keys.take(pa.array(group)), h[group], storage=storage)
        found = found.filter(pc.is_valid(found.column("file_id")))
        parts.append(pa.table({"key": keys.take(pa.array(group[found.column("q").to_numpy()])),
                               "partition_path": found.column("partition"), "file_id": found.column("file_id")}))
    return pa.concat_tables(parts) if parts else LOCATIONS.empty_table()


def resolve(paths: list[str], storage: Storage | None = None) -> pa.Table:
    """A bucket's state from its live files (newest first): one entry per key, newest wins,
    tombstones kept (a compaction drops them)."""
    plain = pa.schema([("h", pa.uint32()), ("key", pa.string()), ("partition", pa.string()), ("file_id", pa.string())])
    tables = [read_file(p, storage).cast(plain) for p in paths]
    if not tables:
        return ENTRY_SCHEMA.empty_table()
    return _first_per_key(pa.concat_tables([t.append_column("_rank", pa.array(np.full(t.num_rows, i, np.int32)))
                                            for i, t in enumerate(tables)]), "_rank")


class RecordIndex:
    """The index of one table as of its timeline: which files count, bucket by bucket."""

    def __init__(self, storage: Storage, base: str, timeline, num_buckets: int):
        self.storage, self.base, self.num_buckets = storage, base, num_buckets
        self.folder = index_folder(base)
        self.chains = {b: [f.name for f in fs] for b, fs in live_files(storage, base, timeline, num_buckets).items()}

    def lookup(self, keys) -> pa.Table:
        """One row per distinct key found (a key asked for twice is answered once)."""
        return lookup_in(self.folder, self.chains, self.num_buckets, pc.unique(_query_keys(keys)), self.storage)

    def bucket_state(self, bucket: int) -> pa.Table:
        return resolve([join(self.folder, n) for n in self.chains.get(bucket, [])], self.storage)

    def live_entries(self) -> pa.Table:
        """Every indexed key with its location (tombstones dropped)."""
        parts = [t.filter(pc.is_valid(t.column("file_id"))) for b in sorted(self.chains) if (t := self.bucket_state(b)).num_rows]
        return pa.concat_tables(parts) if parts else ENTRY_SCHEMA.empty_table()

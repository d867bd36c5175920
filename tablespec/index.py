"""The record-level index as users meet it: `lookup` and `verify` (driver side, no Spark).

`verify` is RFC-08's comparison tool: it reads the record key, partition path and file id of
every row of the latest file slices, looks every key up as writers do, reads the index's live
entries, and reports the keys that are missing from the index (or unreachable by a lookup),
indexed at the wrong place, indexed but gone, or stored twice.
It reads key columns only (Parquet column projection), on the driver: no JVM.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from tablespec.errors import TablespecError
from tablespec.hudi import record_index as ri
from tablespec.hudi.config import RECORD_LEVEL, read_table_config, table_index_type
from tablespec.hudi.fs_view import FileSystemView
from tablespec.hudi.index_coverage import refuse_unseen
from tablespec.hudi.io import storage_for
from tablespec.hudi.timeline import Timeline

EXAMPLES = 5


class NotRecordLevel(TablespecError):
    """The table has no record-level index."""


def open_index(location: str, what: str) -> tuple[ri.RecordIndex, Timeline]:
    """The table's index, refused (IndexBehind) while it has not seen every data commit: its
    answers would be silently wrong."""
    storage, base = storage_for(location)
    config = read_table_config(storage, base)
    if config is None:
        raise TablespecError(f"{base}: no Hudi table here (no .hoodie/hoodie.properties)")
    props = config.to_properties()
    if table_index_type(props) != RECORD_LEVEL:
        raise NotRecordLevel(f"{base}: the table's index is {table_index_type(props)}, not "
                             "RECORD_LEVEL; there is no record-level index to look up or verify")
    timeline = Timeline.load(storage, base)
    refuse_unseen(timeline, base, what)
    return ri.RecordIndex(storage, base, timeline, ri.num_buckets_of(props)), timeline


def lookup(location: str, keys) -> pa.Table:
    """Where each key lives: (key, partition_path, file_id); keys the table lacks are absent."""
    location = location if isinstance(location, str) else location.base  # i28-engine shim: a HudiTable (i28-edges)
    index, _ = open_index(location, "a lookup")
    return index.lookup(keys)


@dataclass
class Difference:
    kind: str          # missing | misplaced | extra | duplicate
    count: int
    examples: list[str] = field(default_factory=list)


@dataclass
class VerifyResult:
    location: str
    keys: int
    entries: int
    differences: list[Difference]

    @property
    def ok(self) -> bool:
        return not self.differences

    def __str__(self) -> str:
        head = f"{self.location}: {self.keys} live keys, {self.entries} index entries"
        if self.ok:
            return f"{head}: the index matches the data"
        lines = [f"{head}: {sum(d.count for d in self.differences)} difference(s)"]
        lines += [f"  {d.kind}: {d.count} (e.g. {'; '.join(d.examples)})" for d in self.differences]
        return "\n".join(lines)


def data_locations(location: str, timeline: Timeline) -> pa.Table:
    """(key, partition_path, file_id) of every row of the latest file slices."""
    storage, base = storage_for(location)
    parts = []
    for s in FileSystemView.build(storage, base, timeline).latest_slices():
        if s.base_file is None:
            continue
        keys = ri.base_file_keys(s.base_file.path, storage)
        parts.append(pa.table({"key": keys, "partition_path": pa.array([s.partition] * len(keys), pa.string()),
                               "file_id": pa.array([s.file_id] * len(keys), pa.string())}))
    return pa.concat_tables(parts) if parts else ri.LOCATIONS.empty_table()


def verify(location: str) -> VerifyResult:
    """Compare the index with the data: every live key found by a lookup at its true location
    (the path writers take: an entry in the wrong bucket's files is missing), nothing extra."""
    index, timeline = open_index(location, "verify")
    data = data_locations(location, timeline)
    live = index.live_entries()
    found = index.lookup(data.column("key"))
    indexed = pa.table({"key": found.column("key"), "i_part": found.column("partition_path"),
                        "i_fid": found.column("file_id")})
    counts = data.group_by("key").aggregate([("key", "count")])
    dup = counts.filter(pc.greater(counts.column("key_count"), 1)).column("key")
    joined = data.join(indexed, "key", join_type="left outer")
    differences = []

    def report(kind: str, rows: pa.Table, describe) -> None:
        if rows.num_rows:
            differences.append(Difference(kind, rows.num_rows, [describe(r) for r in rows.slice(0, EXAMPLES).to_pylist()]))

    where = lambda p, f: f"{p or '(root)'}/{f}"  # noqa: E731
    report("missing", joined.filter(pc.is_null(joined.column("i_fid"))),
           lambda r: f"{r['key']} in {where(r['partition_path'], r['file_id'])} is not indexed")
    extra = live.filter(pc.invert(pc.is_in(live.column("key"), value_set=data.column("key").combine_chunks())))
    report("extra", extra, lambda r: f"{r['key']} indexed at {where(r['partition'], r['file_id'])} is not in the table")
    both = joined.filter(pc.is_valid(joined.column("i_fid")))
    wrong = both.filter(pc.or_(pc.not_equal(both.column("file_id"), both.column("i_fid")),
                               pc.not_equal(both.column("partition_path"), both.column("i_part"))))
    wrong = wrong.filter(pc.invert(pc.is_in(wrong.column("key"), value_set=dup)))
    report("misplaced", wrong, lambda r: f"{r['key']} is in {where(r['partition_path'], r['file_id'])}, "
                                         f"indexed at {where(r['i_part'], r['i_fid'])}")
    report("duplicate", pa.table({"key": dup}), lambda r: f"{r['key']} is stored in more than one file group")
    return VerifyResult(index.base, counts.num_rows, live.num_rows, differences)

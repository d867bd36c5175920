"""The record-level index as users meet it: `lookup` and `verify` (driver side, no Spark). A
RECORD_LEVEL table's index is Apache Hudi's record index (the metadata table's `record_index`
partition), read as Hudi reads it (hudi/mdt/record_index_reader.py).

`verify` is RFC-08's comparison tool: it reads the record key, partition path and file id of
every row of the latest file slices, looks every key up as writers do, scans the index's
entries, and reports the keys that are missing from the index (or unreachable by a lookup),
indexed at the wrong place, indexed but gone, or stored twice.
It reads key columns only (Parquet column projection; a merge-on-read slice's log files too, merged
as a snapshot reads them), on the driver: no JVM.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from tablespec.arrow.merge import merged_keys, slice_keys
from tablespec.errors import TablespecError
from tablespec.hudi import bloom_lookup
from tablespec.hudi.config import RECORD_LEVEL, table_index_type
from tablespec.hudi.mdt import record_index_reader, record_index_writer
from tablespec.hudi.mdt.record_index import Location
from tablespec.hudi.table import HudiTable

EXAMPLES = 5
LOCATIONS = pa.schema([("key", pa.string()), ("partition_path", pa.string()), ("file_id", pa.string())])


class NotRecordLevel(TablespecError):
    """The table has no record-level index."""


def open_index(table: HudiTable) -> HudiTable:
    """The table, refused when it has no Hudi record index to read."""
    base, config = table.base, table.config
    if config is None:
        raise TablespecError(f"{base}: no Hudi table here (no .hoodie/hoodie.properties)")
    props = config.to_properties()
    if table_index_type(props) != RECORD_LEVEL:
        raise NotRecordLevel(f"{base}: the table's index is {table_index_type(props)}, not "
                             "RECORD_LEVEL; there is no record-level index to look up or verify")
    if not record_index_writer.is_enabled(table):
        raise TablespecError(f"{base}: the table is RECORD_LEVEL but its metadata table has no record index yet; "
                             "run `tablespec plan` and `tablespec apply` to build it (record_index_build)")
    return table


def _locations(found: dict[str, Location]) -> pa.Table:
    keys = sorted(found)
    return pa.table({"key": pa.array(keys, pa.string()),
                     "partition_path": pa.array([found[k].partition for k in keys], pa.string()),
                     "file_id": pa.array([found[k].file_id for k in keys], pa.string())}, schema=LOCATIONS)


def _strings(keys) -> list[str]:
    """Keys to look up as strings, nulls dropped."""
    try:
        array = keys if isinstance(keys, pa.Array | pa.ChunkedArray) else pa.array(list(keys), pa.string())
        array = array.cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        raise TablespecError(f"record keys to look up must be strings: {e}") from None
    return [k for k in array.to_pylist() if k is not None]


def lookup(table: HudiTable, keys) -> pa.Table:
    """Where each key lives: (key, partition_path, file_id), one row per distinct key found (BLOOM
    tables: per key and partition holding it, through the files' bloom filters); keys the table lacks
    are absent."""
    if table.config is not None and table_index_type(table.config) == "BLOOM":
        found = sorted(bloom_lookup.lookup(table, _strings(keys)))
        return pa.table([pa.array(c, pa.string()) for c in zip(*found)] if found else
                        [pa.array([], pa.string())] * 3, schema=LOCATIONS)
    return _locations(record_index_reader.lookup(open_index(table), _strings(keys)))


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


def data_locations(table: HudiTable) -> pa.Table:
    """(key, partition_path, file_id) of every row of the latest file slices, as a snapshot reads them:
    a slice with log files merged with its counting blocks (a merge-on-read key moved or deleted keeps
    its row in the base file; a delete block removes it), as the index build reads them."""
    slices = table.view.latest_slices()
    merged = merged_keys(table.table_config, table.timeline, slices, table.base)
    parts = []
    for s in slices:
        if (keys := slice_keys(table.storage, merged, s)) is not None:
            parts.append(pa.table({"key": keys, "partition_path": pa.array([s.partition] * len(keys), pa.string()),
                                   "file_id": pa.array([s.file_id] * len(keys), pa.string())}))
    return pa.concat_tables(parts) if parts else LOCATIONS.empty_table()


def verify(table: HudiTable) -> VerifyResult:
    """Compare the index with the data: every live key found by a lookup at its true location
    (the path writers take: an entry in the wrong bucket's files is missing), nothing extra."""
    open_index(table)
    data = data_locations(table)
    entries = record_index_reader.scan(table)
    live = pa.table({"key": pa.array(list(entries), pa.string()),
                     "partition": pa.array([v.partition for v in entries.values()], pa.string()),
                     "file_id": pa.array([v.file_id for v in entries.values()], pa.string())})
    found = lookup(table, data.column("key"))
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
    return VerifyResult(table.base, counts.num_rows, live.num_rows, differences)

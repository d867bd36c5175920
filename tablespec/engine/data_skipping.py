"""Building the data-skipping indexes a spec declares (`column_stats`, `bloom_filters`, and
`partition_stats` on version 9) on Spark: executors read the Parquet footer of each latest base file
(never its rows) and return its column ranges and bloom filter (built from the file's record-key column
where the footer holds none, as on SIMPLE, BUCKET and RECORD_LEVEL tables); the driver writes the
partitions (mdt/column_stats_init.py) under Hudi's transaction lock, refused if another writer committed
meanwhile. A slice with log files (merge-on-read, not compacted) is refused: its statistics are not in
any footer. Secondary indexes alike: executors read each latest base file's key and indexed columns
once for all the indexes and return their index keys; the driver sorts them into file groups and writes.
"""
from __future__ import annotations

import functools
import pickle
import time
from collections.abc import Collection, Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from tablespec.arrow.bloom import build_bloom_filter
from tablespec.engine.session import job_description
from tablespec.errors import TablespecError
from tablespec.hudi.formats.base_keys import KEY
from tablespec.hudi.mdt import bloom_filters, column_stats, column_stats_init, secondary_index
from tablespec.hudi.mdt.bloom_filters import BLOOM_FILTERS, FILTER_TYPE, Footer
from tablespec.hudi.mdt.column_stats import ColumnRange
from tablespec.hudi.table import HudiTable, Location
from tablespec.results import DataSkippingBuilt

FILES_DDL = "partition string, path string, name string"
RANGES_DDL = "partition string, name string, ranges binary"   # ranges: pickled (ranges, footer filter)
SIZED_FILES_DDL = "path string, size long"
INDEX_KEYS_DDL = "name string, key string"                     # a secondary index, one of its keys


def _file_filter(f, metadata: pq.FileMetaData) -> Footer:
    """A base file's bloom filter: its footer's, or for a file written without one (SIMPLE, BUCKET and
    RECORD_LEVEL tables) the filter of its record keys, as a writer would have put there."""
    found = bloom_filters.footer_filter(metadata)
    if found is not None:
        return found
    keys = pq.ParquetFile(f, metadata=metadata).read(columns=[KEY]).column(KEY)
    return build_bloom_filter(keys), FILTER_TYPE


def footer_ranges(location: Location, columns: Collection[str] | None, filters: bool, batches):
    """Executor: each base file's column ranges from its footer, and (`filters`) its bloom filter
    (pickled: values of every type)."""
    for batch in batches:
        found: dict[str, list] = {"partition": [], "name": [], "ranges": []}
        for r in batch.to_pylist():
            with location.storage.open_input_file(r["path"]) as f:
                metadata = pq.read_metadata(f)
                footer = _file_filter(f, metadata) if filters else None
            found["partition"].append(r["partition"])
            found["name"].append(r["name"])
            found["ranges"].append(pickle.dumps((column_stats.file_ranges(metadata, r["name"], columns), footer)))
        yield pa.RecordBatch.from_pydict(found, pa.schema([("partition", pa.string()), ("name", pa.string()),
                                                           ("ranges", pa.binary())]))


def latest_base_files(table: HudiTable) -> list[tuple[str, str, str]]:
    """(partition, path, name) of each latest base file; refused where a slice has log files."""
    slices = table.view.latest_slices()
    logged = [s for s in slices if s.log_files]
    if logged:
        raise TablespecError(f"{table.base}: {len(logged)} file slice(s) have log files (e.g. {logged[0].partition}/"
                             f"{logged[0].file_id}); column statistics are built from base files' footers: compact "
                             "the table first, then apply again")
    return [(s.partition, s.base_file.path, s.base_file.name) for s in slices if s.base_file is not None]


Footers = dict[tuple[str, str], tuple[list[ColumnRange], Footer | None]]


def read_footers(spark, table: HudiTable, columns: Collection[str] | None, filters: bool = False) -> Footers:
    """Each latest base file's column ranges and (`filters`) bloom filter, by (partition, file name),
    read on executors."""
    from tablespec.engine.reader import to_arrow
    files = latest_base_files(table)
    if not files:
        return {}
    n = max(1, min(len(files), spark.sparkContext.defaultParallelism * 2))
    with job_description(spark, "tablespec: data-skipping index build"):
        df = spark.createDataFrame(files, FILES_DDL).repartition(n)
        out = to_arrow(df.mapInArrow(functools.partial(footer_ranges, table.location, columns, filters), RANGES_DDL))
    return {(p, name): pickle.loads(raw) for p, name, raw in zip(   # noqa: S301 - our own executors' output
        *(out.column(c).to_pylist() for c in ("partition", "name", "ranges")))}


def build(spark, table: HudiTable, partitions: Sequence[str], columns: Sequence[str] | None) -> DataSkippingBuilt:
    """Build `partitions` from the latest base files' footers (`columns`: those indexed, None: every
    column Hudi 0.15 indexes). The caller holds the table lock, with recovery done and half-built
    partitions dropped (`locked`)."""
    started = time.monotonic()
    head = table.timeline.head
    footers = read_footers(spark, table, columns, BLOOM_FILTERS in partitions)
    ranges = {f: r for f, (r, _) in footers.items()}
    filters = {f: found for f, (_, found) in footers.items() if found is not None}
    with table.transaction_lock("data-skipping index build"):
        now = table.fresh_timeline().head
        if now != head:
            raise TablespecError(f"{table.base}: another writer committed {now} while the column statistics were "
                                 "being read; nothing was built: run `tablespec apply` again")
        instants = column_stats_init.initialize(table, ranges, partitions, columns, filters)
    return DataSkippingBuilt(instants=instants, files=len(ranges), seconds=round(time.monotonic() - started, 3))


def secondary_keys(location: Location, indexes: Mapping[str, str], batches):
    """Executor: the index keys of each base file, for each of `indexes` (name -> column), from one read of
    the file's key and indexed columns."""
    schema = pa.schema([("name", pa.string()), ("key", pa.string())])
    for batch in batches:
        names: list[str] = []
        keys: list[str] = []
        for r in batch.to_pylist():
            found = secondary_index.file_keys(location.storage, location.uri, r["path"], r["size"],
                                              set(indexes.values()))
            for name, column in indexes.items():
                names += [name] * len(found[column])
                keys += found[column]
        yield pa.RecordBatch.from_pydict({"name": names, "key": keys}, schema)


def read_secondary_keys(spark, table: HudiTable, indexes: Mapping[str, str]) -> tuple[dict[str, set[str]], int]:
    """Each of `indexes`' (name -> column) keys over the latest base files, read on executors, and the
    number of files read."""
    from tablespec.engine.reader import to_arrow
    files = [(s.base_file.path, s.base_file.size) for s in table.view.latest_slices() if s.base_file is not None]
    out: dict[str, set[str]] = {name: set() for name in indexes}
    if not files:
        return out, 0
    n = max(1, min(len(files), spark.sparkContext.defaultParallelism * 2))
    with job_description(spark, "tablespec: secondary index build"):
        df = spark.createDataFrame(files, SIZED_FILES_DDL).repartition(n)
        found = to_arrow(df.mapInArrow(functools.partial(secondary_keys, table.location, dict(indexes)), INDEX_KEYS_DDL))
    for name, key in zip(found.column("name").to_pylist(), found.column("key").to_pylist()):
        out[name].add(key)
    return out, len(files)


def build_secondary_indexes(spark, table: HudiTable, indexes: Mapping[str, str],
                            built: DataSkippingBuilt) -> DataSkippingBuilt:
    """Build the secondary indexes `indexes` (name -> column) after `built`, each from the key and indexed
    columns of the latest base files (read on executors); the caller holds the table lock, as for `build`."""
    started = time.monotonic()
    instants = list(built.instants)
    head = table.timeline.head
    keys, files = read_secondary_keys(spark, table, indexes)
    with table.transaction_lock("secondary index build"):
        now = table.fresh_timeline().head
        if now != head:
            raise TablespecError(f"{table.base}: another writer committed {now} while the secondary indexes' keys "
                                 "were being read; nothing more was built: run `tablespec apply` again")
        for name, column in sorted(indexes.items()):
            instants.append(secondary_index.initialize(table, name, column, keys[name]))
    return DataSkippingBuilt(instants=instants, files=max(built.files, files),
                             seconds=round((built.seconds or 0) + time.monotonic() - started, 3))


__all__ = ["build", "build_secondary_indexes", "latest_base_files", "read_footers", "read_secondary_keys"]

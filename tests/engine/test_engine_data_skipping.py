"""Data-skipping reads: `Table.read(filters=...)` skips the base files whose column statistics (the
metadata table's column_stats, built by `build_data_skipping` and kept by each write) exclude the
value, and returns the rows a read of every file filtered the same way returns."""
from __future__ import annotations

import pytest
from _support import RecordingStorage
from helpers import make_table, rows

from tablespec.engine.commit import locked
from tablespec.engine.data_skipping import build
from tablespec.engine.filters import FilterError
from tablespec.engine.reader import snapshot_files, snapshot_slices, to_arrow
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.mdt import column_stats

pytestmark = pytest.mark.spark

DDL = "id string, v int, f float, dt string"
COLUMNS = ("id", "v", "f", "dt")
SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: ranges}
spec:
  location: ranges
  columns:
    - {name: id, type: string, nullable: false}
    - {name: v, type: int}
    - {name: f, type: float}
    - {name: dt, type: string}
  recordKey: {fields: [id]}
  partitioning: {fields: [dt]}
"""


def test_filters_skip_files_by_column_statistics(spark, warehouse):
    table = make_table(spark, warehouse, SPEC)
    for dt, values in (("d1", range(0, 10)), ("d2", range(10, 20))):
        table.write(spark.createDataFrame([(f"k{v}", v, 16777216.0 if v == 15 else float(v), dt) for v in values],
                                          DDL))
    with locked(table.table):
        build(spark, table.table, ["column_stats"], None)
    table.write(spark.createDataFrame([("k30", 30, 30.0, "d3"), ("k31", None, None, "d3"),
                                       ("k32", 32, float("-inf"), "d3")], DDL))

    def files(*conditions, **equal):
        return sorted(p.rsplit("/", 2)[-2].removeprefix("dt=")
                      for p in snapshot_files(table.table.refresh(), None, table.spec, list(conditions) or equal))

    assert files() == ["d1", "d2", "d3"]
    assert files(v=15) == ["d2"]                             # the other files' ranges exclude 15
    assert files(v=30) == ["d3"]                             # kept by the write after the build
    assert files(v=99) == [] and files(v=15, id="k1") == []
    assert files(id="k30") == ["d1", "d3"]                   # strings, as Hudi orders them: k10..k19 excludes it
    assert files(v="15") == ["d1", "d2", "d3"]               # a value of another type skips nothing
    assert files(f=16777217) == ["d2"]   # Spark compares it as float32, 16777216.0: d2's maximum (k15)
    assert files(f=-1e39) == ["d3"] and files(f=1e39) == []   # beyond float32: compared as doubles, as Spark does
    # Ranges: by the minimum and maximum; a float column's maximum leaves NaN out, so never by it.
    assert files(("v", "<", 10)) == ["d1"] and files(("v", ">=", 19)) == ["d2", "d3"]
    assert files(("v", "between", (5, 12))) == ["d1", "d2"] and files(("v", ">", 9), ("v", "<", 30)) == ["d2"]
    assert files(("v", "in", (3, 31, None))) == ["d1", "d3"] and files(("dt", "!=", "d1")) == ["d2", "d3"]
    assert files(("f", "<", 10.0000001)) == ["d1", "d2", "d3"]   # a double literal is not rounded to float32 (10.0)
    assert files(("f", ">", 20.0)) == ["d1", "d2", "d3"] and files(("f", "<=", -1e39)) == ["d3"]
    cases = [({"v": 15}, "v = 15"), ({"v": 30}, "v = 30"), ({"v": 99}, "v = 99"), ({"id": "k30"}, "id = 'k30'"),
             ({"dt": "d1", "v": 5}, "dt = 'd1' AND v = 5"), ({"f": 16777217}, "f = 16777217"),
             ({"f": -1e39}, "f = -1e39D"), ({"f": float("-inf")}, "f = CAST('-Infinity' AS DOUBLE)")]
    if warehouse.startswith("s3"):
        cases = cases[:1]
    else:
        cases += [([("v", ">", 9), ("v", "<", 30)], "v > 9 AND v < 30"), ([("v", "between", (5, 12))], "v BETWEEN 5 AND 12"),
                  ([("v", "in", (3, 31, None))], "v IN (3, 31, NULL)"), ([("dt", "!=", "d1")], "dt != 'd1'"),
                  ([("f", "<", 10.0000001)], "f < 10.0000001D"), ([("id", ">=", "k5")], "id >= 'k5'")]
    everything = table.read()
    for filters, condition in cases:
        assert rows(to_arrow(table.read(filters=filters))) == rows(to_arrow(everything.filter(condition))), filters
    assert rows(to_arrow(table.read(filters={"v": 15}).select("id"))) == [(("id", "k15"),)]
    for bad, message in (([("w", "<", 1)], "the table has no column 'w'"), ([("v", "~", 1)], "unknown op '~'"),
                         ([("v", "between", (1,))], r"`between` takes a \(low, high\) pair")):
        with pytest.raises(FilterError, match=message):
            table.read(filters=bad)


def test_partition_statistics_prune_partitions_their_files_rule_out(spark, tmp_path):
    table = make_table(spark, str(tmp_path), SPEC.replace("  location: ranges\n", "  location: ranges\n  tableVersion: 9\n"))
    table.write(spark.createDataFrame([(f"k{v}", v, float(v), "d1" if v < 10 else "d2") for v in range(20)], DDL))
    with locked(table.table):
        build(spark, table.table, ["column_stats", "partition_stats"], None)
    table.write(spark.createDataFrame([("k30", 30, 30.0, "d3"), ("k31", None, None, "d3")], DDL))   # kept by writes

    def read(*conditions):
        return sorted({s.partition.removeprefix("dt=")
                       for s in snapshot_slices(table.table.refresh(), None, table.spec, list(conditions))})

    assert read(("v", ">=", 25)) == ["d3"] and read(("v", "between", (3, 12))) == ["d1", "d2"]
    assert read(("dt", "=", "d2"), ("id", "<", "k2")) == ["d2"]     # k10..k19 only
    assert read(("f", ">", 25.0)) == ["d1", "d2", "d3"]              # a float maximum rules nothing out
    everything = table.read()
    for filters, condition in (([("v", ">=", 25)], "v >= 25"), ([("v", "<", 3)], "v < 3")):
        assert rows(to_arrow(table.read(filters=filters))) == rows(to_arrow(everything.filter(condition))), filters


def test_int_statistics_of_a_column_now_float_compare_as_its_values(spark, tmp_path):
    """A file written while `x` was an int keeps int bounds after `x` became a float; Spark reads its
    values as float32 (16777217 as 16777216.0), so the bounds are compared rounded the same way."""
    from test_engine_clustering import plan_for

    from tablespec.apply import Applier
    from tablespec.spec.loader import load_spec_text
    from tablespec.table import Table
    text = SPEC.replace("{name: f, type: float}", "{name: f, type: int}")
    table = make_table(spark, str(tmp_path), text)
    table.write(spark.createDataFrame([("k1", 1, 16777217, "d1")], "id string, v int, f int, dt string"))
    with locked(table.table):
        build(spark, table.table, ["column_stats"], None)
    plan = plan_for(SPEC, tmp_path)
    assert [a.kind for _, a in plan.actions] == ["schema_evolution"], plan.actions
    Applier(spark=spark).apply(plan)
    evolved = Table(load_spec_text(SPEC, "test.yaml").specs[0].spec, table.location, spark)
    everything = evolved.read()
    assert everything.filter("f = 16777217").count() == 1
    for filters, condition in (({"f": 16777217}, "f = 16777217"), ([("f", ">=", 16777217)], "f >= 16777217"),
                               ([("f", "<", 16777217)], "f < 16777217"), ({"f": 16777216.0}, "f = 16777216.0D")):
        assert rows(to_arrow(evolved.read(filters=filters))) == rows(to_arrow(everything.filter(condition))), filters


def test_partition_statistics_added_beside_column_statistics_cover_its_columns(spark, tmp_path):
    """partitionStats added to a version 9 table that keeps column statistics of `id` only are built for
    `id`: bounds of `v`, which later writes do not keep, would rule out a partition `v` now matches in."""
    from test_engine_clustering import plan_for

    from tablespec.apply import Applier
    text = SPEC.replace("  location: ranges\n", "  location: ranges\n  tableVersion: 9\n") + (
        "  dataSkipping:\n    columnStats: {columns: [id]}\n")
    table = make_table(spark, str(tmp_path), text)
    table.write(spark.createDataFrame([("k1", 1, 1.0, "d1"), ("k2", 2, 2.0, "d2")], DDL))
    Applier(spark=spark).apply(plan_for(text, tmp_path))                    # column_stats of id
    plan = plan_for(text + "    partitionStats: true\n", tmp_path)
    [build_stats] = [a for _, a in plan.actions if a.kind == "build_data_skipping"]
    assert build_stats.params.columns == ["id"]
    Applier(spark=spark).apply(plan)
    table.write(spark.createDataFrame([("k3", 99, 3.0, "d1")], DDL))
    assert rows(to_arrow(table.read(filters={"v": 99}).select("id"))) == [(("id", "k3"),)]


def _bloom_records(handle) -> dict[tuple[str, str], bytes]:
    """Each latest base file's bloom_filters record (the filter as its footer stores it), by (partition, name)."""
    from tablespec.hudi.mdt import bloom_filters, layout, reader
    files = [(s.partition, s.base_file.name) for s in handle.view.latest_slices() if s.base_file is not None]
    keys = {bloom_filters.key(p, n): (p, n) for p, n in files}
    fmt = layout.Format.of(handle.config)
    metadata = layout.timeline(handle.storage, handle.base, fmt)
    valid = reader.valid_instants(handle.timeline, metadata)
    found = column_stats.latest(r for s in layout.latest_slices(handle.storage, handle.base, layout.completions(metadata),
                                                                bloom_filters.BLOOM_FILTERS, fmt)
                                for r in reader.slice_records(handle.storage, handle.base, s, valid, list(keys)))
    assert set(found) == set(keys)
    return {keys[k]: r["BloomFilterMetadata"]["bloomFilter"] for k, r in found.items()}


def test_bloom_filters_declared_on_a_simple_table_built_and_kept_through_bucket_bootstrap(spark, tmp_path):
    """A SIMPLE-index table's files carry no footer filter: declaring bloomFilters builds each file's
    filter from its keys, and a bucket bootstrap afterwards writes new files with theirs."""
    import pyarrow.parquet as pq
    from test_engine_clustering import plan_for

    from tablespec.apply import Applier
    from tablespec.arrow.bloom import build_bloom_filter, read_bloom_filter
    text = SPEC.replace("  partitioning:", "  index: {type: SIMPLE}\n  partitioning:") + (
        "  dataSkipping:\n    bloomFilters: true\n")
    table = make_table(spark, str(tmp_path), text)
    table.write(spark.createDataFrame([(f"k{v}", v, float(v), f"d{v % 2}") for v in range(6)], DDL))
    assert all(read_bloom_filter(s.base_file.path) is None
               for s in table.table.refresh().view.latest_slices())
    Applier(spark=spark).apply(plan_for(text, tmp_path))
    handle = table.table.refresh()

    def keys(partition, name):
        return pq.read_table(f"{table.location}/{partition}/{name}", columns=["_hoodie_record_key"]).column(0)

    built = _bloom_records(handle)
    assert len(built) == 2 and all(encoded == build_bloom_filter(keys(*f)) for f, encoded in built.items())
    bucketed = text.replace("{type: SIMPLE}", "{type: BUCKET, numBuckets: 2, hashFields: [id]}")
    plan = plan_for(bucketed, tmp_path)
    assert [a.kind for _, a in plan.actions] == ["bucket_bootstrap"], plan.actions
    Applier(spark=spark).apply(plan)
    kept = _bloom_records(table.table.refresh())
    assert set(kept).isdisjoint(built) and len(kept) >= 2
    for (p, n), encoded in kept.items():
        assert read_bloom_filter(f"{table.location}/{p}/{n}").might_contain(keys(p, n)).all()
        assert encoded == build_bloom_filter(keys(p, n))


def test_bloom_index_takes_the_files_filters_from_the_metadata_table(spark, tmp_path, capsys):
    """A BLOOM table keeping bloom_filters: tagging looks each base file's filter up in the metadata table
    (no base file opened for it), the filter its footer holds; an upsert tags as the footers would, and a read
    by key reads only the file whose filter admits it. An index
    missing a file's filter is reported, planned for a rebuild, and tagging goes on correct without it."""
    import pyarrow.parquet as pq
    from test_engine_clustering import plan_for

    from tablespec.apply import Applier
    from tablespec.hudi.mdt.bloom_filters import footer_filter
    from tablespec.hudi.mdt.bloom_filters_reader import StoredFilters
    text = SPEC.replace("  partitioning:", "  index: {type: BLOOM}\n  partitioning:") + (
        "  dataSkipping:\n    bloomFilters: true\n")
    table = make_table(spark, str(tmp_path), text)
    table.write(spark.createDataFrame([(f"k{v}", v, float(v), f"d{v % 2}") for v in range(6)], DDL))
    Applier(spark=spark).apply(plan_for(text, tmp_path))
    table.write(spark.createDataFrame([("k6", 6, 6.0, "d0")], DDL))         # a new file the write adds to the index
    handle = table.table.refresh()
    files = {(s.partition, s.base_file.name): s.base_file.path for s in handle.view.latest_slices() if s.base_file}
    storage = RecordingStorage()
    stored = StoredFilters.of(handle)
    assert stored is not None
    found = stored.filters(storage, files)
    assert found == {f: footer_filter(pq.read_metadata(path)) for f, path in files.items()}
    assert storage.paths() and all("/.hoodie/metadata/bloom_filters/" in p for p in storage.paths())
    result = table.write(spark.createDataFrame([("k1", 10, 1.0, "d1"), ("k6", 60, 6.0, "d0"), ("k9", 9, 9.0, "d1")], DDL))
    assert (result.inserted, result.updated) == (1, 2)
    every = snapshot_files(table.table.refresh(), spec=table.spec)         # a read by key skips files by filter
    [only] = snapshot_files(table.table, spec=table.spec, filters={"id": "k1"})
    assert len(every) >= 2 and only in every and "/dt=d1/" in only
    assert rows(to_arrow(table.read(filters={"id": "k1"}).select("id", "v"))) == [(("id", "k1"), ("v", 10))]
    assert rows(to_arrow(table.read().select("id", "v"))) == rows(to_arrow(spark.createDataFrame(
        [("k0", 0), ("k1", 10), ("k2", 2), ("k3", 3), ("k4", 4), ("k5", 5), ("k6", 60), ("k9", 9)], "id string, v int")))
    expected = _held(table, LOOKED_UP)
    assert _looked_up(table) == (expected, {p for _, _, p in expected})     # the stored filters: only holders opened

    # the index misses a file tablespec wrote (the log file holding its filter lost): verify reports it, plan
    # proposes the rebuild and changes nothing, tagging still finds the file's keys (its footer); apply rebuilds it
    from pathlib import Path

    from _support import cli, table_files
    folder = Path(table.location, ".hoodie", "metadata", "bloom_filters")
    for log in folder.glob(".bloom-filters-*.log.*"):
        if log.stat().st_size > 1000:           # blocks holding filters (an empty block is 83 bytes)
            log.unlink()
    code, out, err = cli(capsys, "verify", table.location)
    assert code != 0 and "no bloom filter of" in out, out + err
    before = table_files(table.location)
    [(_, drop)] = plan_for(text, tmp_path).actions
    assert drop.kind == "drop_metadata_partitions" and drop.params.partitions == ["bloom_filters"]
    assert drop.reasons[0].startswith("rebuild: ") and table_files(table.location) == before
    assert _looked_up(table)[0] == expected                                  # the footers where filters are gone
    result = table.write(spark.createDataFrame([("k9", 90, 9.0, "d1"), ("k6", 61, 6.0, "d0")], DDL))
    assert (result.inserted, result.updated) == (0, 2)
    Applier(spark=spark).apply(plan_for(text, tmp_path))       # drops it
    Applier(spark=spark).apply(plan_for(text, tmp_path))       # builds it again
    handle = table.table.refresh()
    files = {(s.partition, s.base_file.name): s.base_file.path for s in handle.view.latest_slices() if s.base_file}
    assert StoredFilters.of(handle).filters(LocalStorage(), files) == {
        f: footer_filter(pq.read_metadata(path)) for f, path in files.items()}
    code, shown, _ = cli(capsys, "show", table.location)
    assert code == 0 and "; data-skipping indexes bloom_filters " in shown, shown


LOOKED_UP = ["k1", "k6", "k9", "absent"]


def _held(table, keys) -> list[tuple[str, str, str]]:
    """(key, partition path, data file path) of each of `keys` a full read of the latest slices finds."""
    from tablespec.index import data_locations
    handle = table.table.refresh()
    paths = {s.file_id: s.base_file.path for s in handle.view.latest_slices() if s.base_file}
    full = data_locations(handle).to_pylist()
    return sorted((r["key"], r["partition_path"], paths[r["file_id"]]) for r in full if r["key"] in keys)


def _looked_up(table) -> tuple[list[tuple[str, str, str]], set[str]]:
    """`lookup` of LOOKED_UP on a BLOOM table (key, partition path, data file path), and the data files it opened."""
    from dataclasses import replace

    from tablespec.hudi.table import HudiTable
    from tablespec.hudi.table import Location as TableLocation
    from tablespec.index import lookup
    storage = RecordingStorage()
    handle = HudiTable.open(replace(TableLocation.parse(table.location), storage=storage))
    paths = {s.file_id: s.base_file.path for s in handle.view.latest_slices() if s.base_file}
    storage.reads.clear()
    found = lookup(handle, LOOKED_UP).to_pylist()
    opened = {p for p in storage.paths() if "/.hoodie/" not in p and p.endswith(".parquet")}
    return sorted((r["key"], r["partition_path"], paths[r["file_id"]]) for r in found), opened

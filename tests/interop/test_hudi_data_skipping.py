"""Hudi's data-skipping indexes kept on a version 6 table: Apache Hudi 0.15 writes the table with
`column_stats` and `bloom_filters` on, tablespec imports it and plans clean, writes rows whose values
lie outside every file's range into an existing and a new partition, clusters and cleans, keeping
both partitions in each change. Hudi 0.15 then reads with data skipping on exactly what it reads
with it off for filters only the new rows satisfy, its own column-stats lookup finds each latest
file's range, its bloom-filter lookup each latest file's filter (none of a cleaned file), its BLOOM
index reading them from the metadata table finds the keys tablespec wrote, and its next write with
both on does not build the partitions again; its delete of every key of a file group leaves a base file
of no record, without statistics, which `verify` finds healthy."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
from _support import cli
from helpers import hudi_rs_rows, tablespec_rows
from hudi_process import bloom_filter_lookup, column_stats_lookup
from interop_support import apply_until_done, hudi_df, hudi_write, save_spec
from test_hudi_metadata_table import assert_listing_is_storage
from test_hudi_metadata_table_kept import hudi_validates_in_place
from test_hudi_tables import SCHEMA, _import, _options, _table

from tablespec.faults import CRASH_ENV
from tablespec.hudi.mdt import layout, reader
from tablespec.hudi.table import HudiTable
from tablespec.state import observe
from tablespec.verify import verify_table

COLUMN_STATS = {"hoodie.metadata.enable": "true", "hoodie.metadata.index.column.stats.enable": "true"}
BLOOM_FILTERS = {"hoodie.metadata.index.bloom.filter.enable": "true"}
# Hudi's BLOOM index with each file's filter (and key range) read from the metadata table
BLOOM_FROM_METADATA = {"hoodie.index.type": "BLOOM", "hoodie.bloom.index.use.metadata": "true"}
ON = {**COLUMN_STATS, "hoodie.enable.data.skipping": "true"}
OFF = {"hoodie.metadata.enable": "true", "hoodie.enable.data.skipping": "false"}
NEW_ONLY = ("v >= 500", "ts >= 50", "id = 'x'")


def _ids(spark, location, where: str, **options: str) -> list[str]:
    return sorted(r.id for r in hudi_df(spark, str(location), **options).where(where).select("id").collect())



def _assert_hudi_skips_with_it(hudi, location) -> None:
    """Hudi's reads with data skipping on equal its reads with it off, and its column-stats lookup
    gives each latest base file's range of `v`."""
    for where in NEW_ONLY:
        assert _ids(hudi, location, where, **ON) == _ids(hudi, location, where, **OFF) != [], where
    assert _ids(hudi, location, "v >= 500", **ON) == ["x", "y"]
    view = HudiTable.open(str(location)).view
    files = [(s.partition, s.base_file.name) for s in view.latest_slices() if s.base_file is not None]
    found = column_stats_lookup(hudi, str(location), files, "v")
    expected = {f"{p}/{n}": pq.read_table(Path(location, p, n), columns=["v"]).column("v").to_pylist() for p, n in files}
    assert {f: [int(lo), int(hi)] for f, (lo, hi, _, _) in found.items()} == {
        f: [min(v), max(v)] for f, v in expected.items()}

def _assert_hudi_finds_the_filters(hudi, location, gone: list[tuple[str, str]]) -> None:
    """Hudi's lookup in the metadata table's bloom_filters gives each latest base file a filter that
    holds each of its keys (and not a key of another partition's files), and none to `gone` (files a
    clean deleted)."""
    view = HudiTable.open(str(location)).view
    files = {(s.partition, s.base_file.name): pq.read_table(Path(location, s.partition, s.base_file.name),
                                                            columns=["_hoodie_record_key"]).column(0).to_pylist()
             for s in view.latest_slices() if s.base_file is not None}
    keys = sorted({k for found in files.values() for k in found})
    found = bloom_filter_lookup(hudi, str(location), [*files, *gone], keys)
    assert set(found) == {f"{p}/{n}" for p, n in files}
    for (p, n), held in files.items():
        assert set(held) <= set(found[f"{p}/{n}"]) != set(keys), (p, n)


def test_tablespec_keeps_column_stats_and_bloom_filters_hudi_0_15_skips_with(hudi, tmp_path, capsys):
    location = tmp_path / "s6"
    options = _options("orders_s6", **COLUMN_STATS, **BLOOM_FILTERS)
    for batch in ([("a", 1, "2024-01-01", 1), ("b", 2, "2024-01-01", 1), ("c", 3, "2024-01-02", 1)],
                  [("a", 10, "2024-01-01", 2)]):
        hudi_write(hudi.createDataFrame(batch, SCHEMA), str(location), options)
    kept = ("bloom_filters", "column_stats", "files")
    assert observe(HudiTable.open(str(location))).metadata_table.partitions == kept
    built = [i.timestamp for i in layout.timeline(HudiTable.open(str(location)).storage, str(location))
             if i.timestamp.startswith("0" * 14)]
    doc, spec_file = _import(tmp_path, location, capsys)       # plans clean: nothing to drop
    assert doc["spec"]["dataSkipping"] == {"columnStats": {}, "bloomFilters": True}
    before = set(reader.listing(HudiTable.open(str(location))).files["2024-01-01"])
    table = _table(hudi, doc, location)
    table.write(hudi.createDataFrame([("x", 500, "2024-01-01", 50)], SCHEMA))     # an existing partition
    table.write(hudi.createDataFrame([("y", 600, "2024-01-09", 60)], SCHEMA))     # a new one
    doc["spec"]["clustering"].update(strategy="SORT", sortColumns=["v"], everyNCommits=1)
    doc["spec"]["retention"]["keepCommits"] = 1
    doc["spec"]["index"] = {"type": "BLOOM"}                    # Hudi's BLOOM writers below agree with the table
    save_spec(doc, spec_file)
    assert {"index_migration", "clustering", "clean"} <= set(apply_until_done(capsys, spec_file, tmp_path))
    assert observe(HudiTable.open(str(location))).metadata_table.partitions == kept
    assert_listing_is_storage(str(location))
    gone = [("2024-01-01", n) for n in before - set(reader.listing(HudiTable.open(str(location))).files["2024-01-01"])]
    assert gone                                                   # the clean deleted files Hudi wrote

    _assert_hudi_skips_with_it(hudi, location)
    _assert_hudi_finds_the_filters(hudi, location, gone)
    hudi_validates_in_place(hudi, str(location))
    assert hudi_rs_rows(str(location)) == tablespec_rows(table)      # hudi-rs reads what tablespec wrote and clustered

    # Hudi's next write with both on continues the partitions (nothing built again); its BLOOM index, reading
    # the filters from the metadata table, finds the keys tablespec wrote: updated, not inserted twice
    hudi_write(hudi.createDataFrame([("z", 700, "2024-01-02", 70), ("x", 501, "2024-01-01", 51),
                                     ("y", 601, "2024-01-09", 61)], SCHEMA), str(location),
               {**options, **BLOOM_FROM_METADATA})
    handle = HudiTable.open(str(location))
    assert [i.timestamp for i in layout.timeline(handle.storage, str(location)) if i.timestamp.startswith("0" * 14)] \
        == built
    rows = hudi_df(hudi, str(location), **OFF).select("id", "v").collect()
    assert sorted((r.id, r.v) for r in rows if r.v >= 500) == [("x", 501), ("y", 601), ("z", 700)]
    assert len(rows) == len({r.id for r in rows}) == 6
    assert _ids(hudi, location, "v >= 500", **ON) == ["x", "y", "z"]
    _assert_hudi_finds_the_filters(hudi, location, gone)

    # every key of a file group deleted (y, all of 2024-01-09): Hudi writes a base file of no record, which
    # its column_stats may hold no statistics of; tablespec finds a healthy table
    hudi_write(hudi.createDataFrame([("y", 601, "2024-01-09", 61)], SCHEMA), str(location),
               {**options, **BLOOM_FROM_METADATA, "hoodie.datasource.write.operation": "delete"})
    handle = HudiTable.open(str(location))
    [emptied] = [s.base_file for s in handle.view.latest_slices() if s.partition == "2024-01-09"]
    assert emptied is not None and pq.read_metadata(emptied.path).num_rows == 0
    report = verify_table(handle)
    assert not [f for f in report.findings if f.kind == "metadata"], str(report)


KILLED_BUILD = """
import sys
import pyarrow.parquet as pq
from tablespec.hudi.mdt import column_stats, column_stats_init
from tablespec.hudi.table import HudiTable
table = HudiTable.open(sys.argv[1])
ranges = {}
for s in table.view.latest_slices():
    with table.storage.open_input_file(s.base_file.path) as f:
        ranges[(s.partition, s.base_file.name)] = column_stats.file_ranges(pq.read_metadata(f), s.base_file.name)
column_stats_init.initialize(table, ranges, ["column_stats"], None)
"""


def test_declared_column_stats_are_built_from_footers_hudi_0_15_skips_with(hudi, tmp_path, capsys):
    """A version 6 table Hudi 0.15 wrote without column stats: declaring them plans
    `build_data_skipping` (latest base files, bytes); a build killed half-way leaves them inflight,
    planned to be built again; apply builds them (and the bloom filters, declared too) from the
    footers; Hudi 0.15 then skips with them (equal rows to a read without), its lookups find each
    file's range and filter, and its next write with both on continues the partitions instead of
    building them again."""
    location = tmp_path / "b6"
    options = _options("orders_b6", **{"hoodie.metadata.enable": "true"})
    for batch in ([("a", 1, "2024-01-01", 1), ("b", 2, "2024-01-01", 1), ("c", 3, "2024-01-02", 1)],
                  [("a", 10, "2024-01-01", 2), ("x", 500, "2024-01-09", 50)]):
        hudi_write(hudi.createDataFrame(batch, SCHEMA), str(location), options)
    doc, spec_file = _import(tmp_path, location, capsys)
    assert "dataSkipping" not in doc["spec"]
    doc["spec"]["dataSkipping"] = {"columnStats": {}, "bloomFilters": True}
    save_spec(doc, spec_file)
    view = HudiTable.open(str(location)).view
    latest = [s.base_file for s in view.latest_slices() if s.base_file is not None]
    [build] = _actions(capsys, spec_file, tmp_path)
    assert build["kind"] == "build_data_skipping" and build["params"] == {"partitions": ["column_stats",
                                                                                        "bloom_filters"]}
    assert build["estimate"] == {"partitions": 3, "files": len(latest), "bytes": sum(f.size for f in latest)}

    # killed after its first file group: named inflight, no reader uses it; planned to be built again
    killed = subprocess.run([sys.executable, "-c", KILLED_BUILD, str(location)], capture_output=True,
                            env={**os.environ, CRASH_ENV: "during_metadata_partition_build"})
    assert killed.returncode == -9, killed.stderr
    assert observe(HudiTable.open(str(location))).metadata_table.inflight == ("column_stats",)
    [build] = _actions(capsys, spec_file, tmp_path)
    assert build["kind"] == "build_data_skipping" and "half-built (column_stats" in build["reasons"][0]
    assert apply_until_done(capsys, spec_file, tmp_path) == ["build_data_skipping"]
    state = observe(HudiTable.open(str(location)))
    assert state.metadata_table.partitions == ("bloom_filters", "column_stats", "files")
    assert state.metadata_table.inflight == ()
    built = _initializations(location)
    assert len(built) == 3                # files, then column_stats (the killed one's is gone), bloom_filters

    table = _table(hudi, doc, location)
    table.write(hudi.createDataFrame([("y", 600, "2024-01-09", 60)], SCHEMA))     # kept from now on
    _assert_hudi_skips_with_it(hudi, location)
    _assert_hudi_finds_the_filters(hudi, location, [])
    assert_listing_is_storage(str(location))

    hudi_write(hudi.createDataFrame([("z", 700, "2024-01-02", 70)], SCHEMA), str(location),
               {**options, **COLUMN_STATS, **BLOOM_FILTERS})
    assert _initializations(location) == built
    assert _ids(hudi, location, "v >= 500", **ON) == ["x", "y", "z"]


def _actions(capsys, spec_file, warehouse) -> list[dict]:
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(warehouse), "--format", "json")
    assert code == 0, err
    return [a for t in json.loads(out)["tables"] for a in t["actions"]]


def _initializations(location) -> list[str]:
    """The metadata table's deltacommits that initialized a partition: Hudi's at the table's first
    write (`00000000000000010`), or a data instant's time and a 3-digit suffix."""
    return [i.timestamp for i in layout.timeline(HudiTable.open(str(location)).storage, str(location))
            if i.action == layout.DELTA_COMMIT and (i.timestamp.startswith("0" * 14) or len(i.timestamp) > 17)]

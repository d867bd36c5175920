"""Hudi's data-skipping index kept on a version 6 table: Apache Hudi 0.15 writes the table with
`column_stats` on, tablespec imports it and plans clean, writes rows whose values lie outside every
file's range into an existing and a new partition, clusters and cleans, keeping `column_stats` in
each change. Hudi 0.15 then reads with data skipping on exactly what it reads with it off for
filters only the new rows satisfy, its own column-stats lookup finds each latest file's range, and
its next write with column stats on does not build the partition again."""
from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
from hudi_process import column_stats_lookup
from interop_support import apply_until_done, hudi_df, hudi_write, save_spec
from test_hudi_metadata_table import assert_listing_is_storage
from test_hudi_tables import SCHEMA, _import, _options, _table

from tablespec.hudi.mdt import layout
from tablespec.hudi.table import HudiTable
from tablespec.state import observe

COLUMN_STATS = {"hoodie.metadata.enable": "true", "hoodie.metadata.index.column.stats.enable": "true"}
ON = {**COLUMN_STATS, "hoodie.enable.data.skipping": "true"}
OFF = {"hoodie.metadata.enable": "true", "hoodie.enable.data.skipping": "false"}
NEW_ONLY = ("v >= 500", "ts >= 50", "id = 'x'")


def _ids(spark, location, where: str, **options: str) -> list[str]:
    return sorted(r.id for r in hudi_df(spark, str(location), **options).where(where).select("id").collect())


def test_tablespec_keeps_column_stats_hudi_0_15_skips_with(hudi, tmp_path, capsys):
    location = tmp_path / "s6"
    options = _options("orders_s6", **COLUMN_STATS)
    for batch in ([("a", 1, "2024-01-01", 1), ("b", 2, "2024-01-01", 1), ("c", 3, "2024-01-02", 1)],
                  [("a", 10, "2024-01-01", 2)]):
        hudi_write(hudi.createDataFrame(batch, SCHEMA), str(location), options)
    assert observe(HudiTable.open(str(location))).metadata_table.partitions == ("column_stats", "files")
    built = [i.timestamp for i in layout.timeline(HudiTable.open(str(location)).storage, str(location))
             if i.timestamp.startswith("0" * 14)]
    doc, spec_file = _import(tmp_path, location, capsys)       # plans clean: nothing to drop
    table = _table(hudi, doc, location)
    table.write(hudi.createDataFrame([("x", 500, "2024-01-01", 50)], SCHEMA))     # an existing partition
    table.write(hudi.createDataFrame([("y", 600, "2024-01-09", 60)], SCHEMA))     # a new one
    doc["spec"]["clustering"].update(strategy="SORT", sortColumns=["v"], everyNCommits=1)
    doc["spec"]["retention"]["keepCommits"] = 1
    save_spec(doc, spec_file)
    assert {"clustering", "clean"} <= set(apply_until_done(capsys, spec_file, tmp_path))
    assert observe(HudiTable.open(str(location))).metadata_table.partitions == ("column_stats", "files")
    assert_listing_is_storage(str(location))

    for where in NEW_ONLY:
        assert _ids(hudi, location, where, **ON) == _ids(hudi, location, where, **OFF) != [], where
    assert _ids(hudi, location, "v >= 500", **ON) == ["x", "y"]
    view = HudiTable.open(str(location)).view
    files = [(s.partition, s.base_file.name) for s in view.latest_slices() if s.base_file is not None]
    found = column_stats_lookup(hudi, str(location), files, "v")
    expected = {f"{p}/{n}": pq.read_table(Path(location, p, n), columns=["v"]).column("v").to_pylist() for p, n in files}
    assert {f: [int(lo), int(hi)] for f, (lo, hi, _, _) in found.items()} == {
        f: [min(v), max(v)] for f, v in expected.items()}

    # Hudi's next write with column stats on continues the partition: nothing built again
    hudi_write(hudi.createDataFrame([("z", 700, "2024-01-02", 70)], SCHEMA), str(location), options)
    handle = HudiTable.open(str(location))
    assert [i.timestamp for i in layout.timeline(handle.storage, str(location)) if i.timestamp.startswith("0" * 14)] \
        == built
    assert _ids(hudi, location, "v >= 500", **ON) == ["x", "y", "z"]

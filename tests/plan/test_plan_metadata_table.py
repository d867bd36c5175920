"""Hudi's metadata table in plan and apply (metadata only: no JVM): a real Hudi table written with
it off gets `build_metadata_table`, whose apply builds a `files` partition listing the storage;
partitions tablespec does not maintain get `drop_metadata_partitions`, naming them, whose apply
drops them (hoodie.properties first, then the folders)."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
from _support import cli as _cli
from _support import table_files

from tablespec.hudi.config import write_table_config
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.mdt import column_stats, column_stats_init, layout, reader, writer
from tablespec.hudi.metadata_table import INFLIGHT_KEY, PARTITIONS_KEY
from tablespec.hudi.table import HudiTable
from tablespec.spec.sizes import human_bytes

TABLE = "cow_v6_simplekeygen_nonhivestyle"



def _plan(capsys, spec: str, warehouse: str) -> list[dict]:
    code, out, err = _cli(capsys, "plan", spec, "--warehouse", warehouse, "--format", "json")
    assert code == 0, err
    return [a for t in json.loads(out)["tables"] for a in t["actions"]]


def test_plan_builds_the_metadata_table_and_drops_what_tablespec_does_not_maintain(real_table, tmp_path, capsys,
                                                                                   monkeypatch):
    base = real_table(TABLE)
    monkeypatch.chdir(tmp_path)
    code, out, err = _cli(capsys, "import", str(base))
    assert code == 0, err
    (tmp_path / "t.yaml").write_text(out)
    warehouse = str(base.parent)
    storage = LocalStorage()
    on_storage = writer.list_data_files(storage, str(base))

    [build] = _plan(capsys, "t.yaml", warehouse)
    assert build["kind"] == "build_metadata_table"
    assert build["estimate"] == {"partitions": len(on_storage), "files": sum(map(len, on_storage.values())),
                                 "bytes": sum(s for f in on_storage.values() for s in f.values())}
    assert _cli(capsys, "apply", "t.yaml", "--warehouse", warehouse, "--auto-approve")[0] == 0
    table = HudiTable.open(str(base))
    assert writer.is_enabled(table)
    listed = reader.listing(table)
    assert listed.files == on_storage and listed.partitions == set(on_storage)
    assert _plan(capsys, "t.yaml", warehouse) == []

    # a Hudi writer was building column stats, and bloom filters are named with no file group: both dropped,
    # files kept
    # (column stats a Hudi writer finished are kept: tests/interop/test_hudi_data_skipping.py)
    config = table.table_config
    write_table_config(storage, str(base), config.with_updates(extra={
        **config.extra, PARTITIONS_KEY: "files,bloom_filters", INFLIGHT_KEY: "column_stats"}))
    for partition in ("column_stats", "bloom_filters"):
        storage.write_bytes(layout.partition_path(str(base), partition) + "/x.hfile", b"stale")
    [drop] = _plan(capsys, "t.yaml", warehouse)
    assert drop["kind"] == "drop_metadata_partitions" and drop["params"] == {"partitions": ["column_stats",
                                                                                           "bloom_filters"]}
    assert "metadata table has column_stats half-built (inflight in hoodie.properties" in drop["reasons"][0]
    assert _cli(capsys, "apply", "t.yaml", "--warehouse", warehouse, "--auto-approve")[0] == 0
    props = HudiTable.open(str(base)).table_config.to_properties()
    assert props[PARTITIONS_KEY] == "files" and props[INFLIGHT_KEY] == ""
    assert not storage.is_dir(layout.partition_path(str(base), "column_stats"))
    assert not storage.is_dir(layout.partition_path(str(base), "bloom_filters"))
    assert reader.listing(HudiTable.open(str(base))).files == on_storage
    assert _plan(capsys, "t.yaml", warehouse) == []


def test_data_skipping_declared_imported_kept_or_dropped(real_table, tmp_path, capsys, monkeypatch):
    """A table whose metadata table has column_stats: import declares it (spec.dataSkipping) and plans
    clean; a spec without the section keeps it; one whose section leaves it out drops it; one declaring
    an index the table lacks plans its build (files to read, bytes), bloom filters with it."""
    base = real_table(TABLE)
    monkeypatch.chdir(tmp_path)
    warehouse = str(base.parent)
    assert _cli(capsys, "import", str(base))[0] == 0
    (tmp_path / "t.yaml").write_text(_cli(capsys, "import", str(base))[1])
    assert _cli(capsys, "apply", "t.yaml", "--warehouse", warehouse, "--auto-approve")[0] == 0   # builds `files`
    config = HudiTable.open(str(base)).table_config
    write_table_config(LocalStorage(), str(base), config.with_updates(extra={**config.extra,
                                                                           PARTITIONS_KEY: "column_stats,files"}))
    code, out, err = _cli(capsys, "import", str(base))
    assert code == 0 and "dataSkipping" not in out, out + err     # named, but no file group of it: not declared
    (tmp_path / "t.yaml").write_text(out)
    [drop] = _plan(capsys, "t.yaml", warehouse)                    # ... and never trusted
    assert drop["params"] == {"partitions": ["column_stats"]} and "no completed file group" in drop["reasons"][0]
    (tmp_path / "d.yaml").write_text(out.replace("  retention:", "  dataSkipping:\n    columnStats: {}\n  retention:", 1))
    [build] = _plan(capsys, "d.yaml", warehouse)                   # declared: built again instead
    assert build["kind"] == "build_data_skipping" and "half-built (column_stats" in build["reasons"][0]
    # built as Hudi builds it (statistics of every latest base file; a file group lacking them is damage)
    table = HudiTable.open(str(base))
    write_table_config(LocalStorage(), str(base), config)
    table = table.refresh()
    ranges = {(s.partition, s.base_file.name): column_stats.file_ranges(pq.read_metadata(s.base_file.path), s.base_file.name)
              for s in table.view.latest_slices() if s.base_file is not None}
    with table.transaction_lock("statistics build"):
        column_stats_init.initialize(table, ranges, ["column_stats"], None)
    size = sum(f.stat().st_size for f in Path(layout.partition_path(str(base), "column_stats")).iterdir())
    code, out, err = _cli(capsys, "import", str(base))
    assert code == 0 and "dataSkipping:\n    columnStats: {}\n" in out, out + err
    (tmp_path / "t.yaml").write_text(out)
    assert _plan(capsys, "t.yaml", warehouse) == []
    code, shown, _ = _cli(capsys, "show", str(base))
    assert code == 0 and f"; data-skipping indexes column_stats {human_bytes(size)}" in shown, shown
    code, shown, _ = _cli(capsys, "show", str(base), "--format", "json")
    assert json.loads(shown)["metadataTable"]["partitionBytes"]["column_stats"] == size
    without = out.replace("  dataSkipping:\n    columnStats: {}\n", "")
    assert without != out
    (tmp_path / "t.yaml").write_text(without)
    assert _plan(capsys, "t.yaml", warehouse) == []                 # no section: what the table has is kept
    (tmp_path / "t.yaml").write_text(out.replace("    columnStats: {}\n", "    partitionStats: false\n"))
    [drop] = _plan(capsys, "t.yaml", warehouse)
    assert drop["kind"] == "drop_metadata_partitions" and drop["params"] == {"partitions": ["column_stats"]}
    assert "does not declare column_stats" in drop["reasons"][0]
    assert _cli(capsys, "apply", "t.yaml", "--warehouse", warehouse, "--auto-approve")[0] == 0
    assert HudiTable.open(str(base)).table_config.to_properties()[PARTITIONS_KEY] == "files"

    (tmp_path / "t.yaml").write_text(out)                           # declared, but the table lacks it now
    [build] = _plan(capsys, "t.yaml", warehouse)                    # built from the latest base files' footers
    latest = [s.base_file for s in HudiTable.open(str(base)).view.latest_slices() if s.base_file is not None]
    assert build["kind"] == "build_data_skipping" and build["params"] == {"partitions": ["column_stats"]}
    assert build["estimate"] == {"partitions": len(on_storage := writer.list_data_files(LocalStorage(), str(base))),
                                 "files": len(latest), "bytes": sum(f.size for f in latest)}
    assert 0 < len(latest) < sum(map(len, on_storage.values()))     # latest files only, not older versions
    assert "declares column_stats, which the table's metadata table does not have" in build["reasons"][0]
    code, text, _ = _cli(capsys, "plan", "t.yaml", "--warehouse", warehouse)
    assert code == 0 and "~ build_data_skipping" in text and f"files={len(latest)}" in text, text
    assert "+ metadataTable.partitions = [\"column_stats\"]" in text, text
    code, text, _ = _cli(capsys, "plan", "t.yaml", "--warehouse", warehouse, "--format", "markdown")
    assert code == 0 and "build_data_skipping" in text and "metadataTable.partitions" in text, text
    (tmp_path / "t.yaml").write_text(out.replace("    columnStats: {}\n", "    columnStats: {}\n    bloomFilters: true\n"))
    [build] = _plan(capsys, "t.yaml", warehouse)                    # bloom filters: built from the same footers
    assert build["params"] == {"partitions": ["column_stats", "bloom_filters"]} and build["estimate"]["files"] == len(latest)
    assert "declares column_stats, bloom_filters" in build["reasons"][0] and "their bloom filters" in build["reasons"][0]


def test_data_skipping_on_a_merge_on_read_table_is_refused_untouched(real_table, tmp_path, capsys, monkeypatch):
    """Column statistics are built from base files' footers; a merge-on-read table's log files have none:
    declaring them on such a table is refused in one line, the table untouched."""
    base = real_table("mor_parquet_v6_simplekeygen_nonhivestyle")
    monkeypatch.chdir(tmp_path)
    code, out, err = _cli(capsys, "import", str(base))
    assert code == 0, err
    (tmp_path / "t.yaml").write_text(out.replace("  retention:", "  dataSkipping:\n    columnStats: {}\n  retention:", 1))
    before = table_files(base)
    code, _, err = _cli(capsys, "plan", "t.yaml", "--warehouse", str(base.parent))
    assert code == 1 and "a MERGE_ON_READ table's log files have none" in err, err
    assert len([n for n in err.splitlines() if ": warning:" not in n]) == 1 and "Traceback" not in err
    assert table_files(base) == before

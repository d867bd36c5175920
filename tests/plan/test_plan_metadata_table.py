"""Hudi's metadata table in plan and apply (metadata only: no JVM): a real Hudi table written with
it off gets `build_metadata_table`, whose apply builds a `files` partition listing the storage;
partitions tablespec does not maintain get `drop_metadata_partitions`, naming them, whose apply
drops them (hoodie.properties first, then the folders)."""
from __future__ import annotations

import json

from _support import cli as _cli

from tablespec.hudi.config import write_table_config
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.mdt import layout, reader, writer
from tablespec.hudi.metadata_table import INFLIGHT_KEY, PARTITIONS_KEY
from tablespec.hudi.table import HudiTable

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

    # a Hudi writer enabled column stats and was building bloom filters: both dropped, files kept
    config = table.table_config
    write_table_config(storage, str(base), config.with_updates(extra={
        **config.extra, PARTITIONS_KEY: "files,column_stats", INFLIGHT_KEY: "bloom_filters"}))
    for partition in ("column_stats", "bloom_filters"):
        storage.write_bytes(layout.partition_path(str(base), partition) + "/x.hfile", b"stale")
    [drop] = _plan(capsys, "t.yaml", warehouse)
    assert drop["kind"] == "drop_metadata_partitions" and drop["params"] == {"partitions": ["column_stats",
                                                                                           "bloom_filters"]}
    assert "tablespec does not maintain (column_stats, bloom_filters)" in drop["reasons"][0]
    assert _cli(capsys, "apply", "t.yaml", "--warehouse", warehouse, "--auto-approve")[0] == 0
    props = HudiTable.open(str(base)).table_config.to_properties()
    assert props[PARTITIONS_KEY] == "files" and props[INFLIGHT_KEY] == ""
    assert not storage.is_dir(layout.partition_path(str(base), "column_stats"))
    assert not storage.is_dir(layout.partition_path(str(base), "bloom_filters"))
    assert reader.listing(HudiTable.open(str(base))).files == on_storage
    assert _plan(capsys, "t.yaml", warehouse) == []

"""Version 9 tables with Hudi 1.x's metadata table: Apache Hudi 1.2.0 (its own process) creates the
table with its defaults (metadata table on: `files`, `column_stats`, `partition_stats`); tablespec
keeps them all (data skipping: test_hudi_1x_data_skipping.py), upserts, deletes, clusters and cleans, keeping `files` as
Hudi 1.2 lays it out (`.hoodie/metadata/.hoodie/timeline/`, `<requested>_<completion>.deltacommit`
in Avro, one log file per deltacommit named by it) and compacting it when due. After that Hudi 1.2
reads the table through its metadata table equal to tablespec, its `validate_metadata_table_files`
finds no difference, it writes on, and tablespec imports and plans clean. A write killed after its
metadata deltacommit and rolled back with it: test_hudi_1x_record_index.py (on a table whose metadata
table holds `files` and the record index)."""
from __future__ import annotations

import pyarrow as pa
from helpers import hudi_rs_rows, rows, tablespec_rows
from hudi_process import Batch, read_step, sql_step, write_step
from interop_support import apply_until_done, save_spec
from test_hudi_metadata_table import assert_listing_is_storage, files_on_storage
from test_hudi_tables import KEYED, SCHEMA, _import, _table

from tablespec.hudi.mdt import layout
from tablespec.hudi.mdt.compaction import MAX_DELTA_COMMITS
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import avro_content
from tablespec.state import observe

DEFAULTS = {"hoodie.table.name": "orders_m9", **KEYED}          # Hudi 1.2's defaults: metadata table on
V9_MDT = tuple(Batch.of({**DEFAULTS, "hoodie.datasource.write.operation": op}, SCHEMA, batch) for op, batch in [
    ("upsert", [("a", 1, "2024-01-01", 1), ("b", 2, "2024-01-01", 1), ("c", 3, "2024-01-02", 1)]),
    ("upsert", [("a", 10, "2024-01-01", 2)]),
    ("upsert", [("d", 4, "2024-01-03", 2)]),
])
METADATA_ON = {"hoodie.metadata.enable": "true"}
# a Hudi 1.2 writer on the table as tablespec keeps it: the metadata table on, with its data-skipping partitions
HUDI_WRITER = {**DEFAULTS, **METADATA_ON, "hoodie.datasource.write.operation": "upsert"}
SKIPPING = ("column_stats", "files", "partition_stats")


def _by_id(read) -> dict:
    return {dict(r)["id"]: dict(r)["v"] for r in read}


def _hudi_checks(location, name: str) -> list[dict]:
    """Hudi 1.2's metadata-table validation (every file, then the differences) and its read through
    the metadata table, as steps of one process."""
    return [sql_step(f"CREATE TABLE {name} USING hudi LOCATION '{location}'"),
            sql_step(f"CALL validate_metadata_table_files(table => '{name}', verbose => true)"),
            sql_step(f"CALL validate_metadata_table_files(table => '{name}')"),
            read_step(location, **METADATA_ON)]


def _on_storage(location) -> set[tuple[str, str]]:
    return files_on_storage(str(location))


def _assert_validated(on_storage: set[tuple[str, str]], every: list[dict], differences: list[dict]) -> None:
    """Hudi 1.2's validation listed every data file `on_storage` (as it was when Hudi ran), each in the
    metadata table at its size on the storage, and found no difference."""
    assert {(r["partition"], r["file_name"]) for r in every} == on_storage
    assert all(r["is_present_in_fs"] and r["is_present_in_metadata"] and r["fs_size"] == r["metadata_size"]
               for r in every)
    assert differences == []


def clustered_and_cleaned(capsys, doc: dict, spec_file, warehouse, location):
    """A SORT clustering every commit and a clean keeping one commit, run by `apply`: a replacecommit
    and a clean, each recorded in the metadata table; its (table handle, timeline) after them."""
    doc["spec"]["clustering"].update(strategy="SORT", sortColumns=["v"], everyNCommits=1)
    doc["spec"]["retention"]["keepCommits"] = 1
    save_spec(doc, spec_file)
    kinds = apply_until_done(capsys, spec_file, warehouse)
    assert {"clustering", "clean"} <= set(kinds), kinds
    return _metadata(location)


def _metadata(location) -> tuple[HudiTable, list[layout.MetaInstant]]:
    table = HudiTable.open(str(location))
    return table, layout.timeline(table.storage, table.base, layout.Format.of(table.config))


def test_tablespec_keeps_the_metadata_table_hudi_1_2_created(hudi, hudi1, tmp_path, capsys):
    location, hudi_read = hudi1.copy(V9_MDT, tmp_path / "m9")
    assert observe(HudiTable.open(str(location))).metadata_table.partitions == ("column_stats", "files",
                                                                                "partition_stats")
    doc, spec_file = _import(tmp_path, location, capsys)
    table = _table(hudi, doc, location)
    assert tablespec_rows(table) == rows(pa.Table.from_pylist(hudi_read))

    upsert = table.write(hudi.createDataFrame([("a", 11, "2024-01-01", 3), ("e", 5, "2024-01-02", 3)], SCHEMA))
    deleted = table.write(hudi.createDataFrame([("c", 3, "2024-01-02", 4)], SCHEMA), "delete")
    assert observe(HudiTable.open(str(location))).metadata_table.partitions == SKIPPING
    assert sorted(p.name for p in (location / ".hoodie" / "metadata").iterdir()) == [".hoodie", *SKIPPING]

    # each data instant has its deltacommit as Hudi 1.2 writes one: completed before the data
    # instant, Avro, its own log file (version 1, named by the deltacommit)
    handle, metadata = _metadata(location)
    data = {i.timestamp: i for i in handle.timeline.completed()}
    names = {p.name for p in (location / ".hoodie" / "metadata" / "files").iterdir()}
    for instant in (upsert.instant, deleted.instant):
        [delta] = [i for i in metadata if i.timestamp == instant]
        assert delta.action == layout.DELTA_COMMIT and delta.completion and delta.completion < data[instant].completion
        raw = (location / ".hoodie" / "metadata" / ".hoodie" / "timeline" / delta.file_name).read_bytes()
        [stat] = avro_content(raw, delta.file_name)["partitionToWriteStats"]["files"]   # column_stats' beside it
        assert stat["path"] == f"files/.files-0000-0_{instant}.log.1_0-0-0" and stat["prevCommit"] == instant
        assert f".files-0000-0_{instant}.log.1_0-0-0" in names
    assert_listing_is_storage(str(location))

    # clustering and a clean through `apply`: a replacecommit and a clean, each with its deltacommit;
    # by then the metadata table has MAX_DELTA_COMMITS deltacommits since it began: tablespec compacts it
    handle, metadata = clustered_and_cleaned(capsys, doc, spec_file, tmp_path, location)
    actions = {i.action for i in handle.timeline.completed() if i.timestamp in {m.timestamp for m in metadata}}
    assert {"commit", "replacecommit", "clean"} <= actions
    deltas = [i for i in metadata if i.action == layout.DELTA_COMMIT]
    assert len(deltas) >= MAX_DELTA_COMMITS
    [compacted] = [i for i in metadata if i.action == layout.COMPACTION]
    assert compacted.completed and compacted.completion and len(compacted.timestamp) == 17
    assert (location / ".hoodie" / "metadata" / "files" / f"files-0000-0_0-0-0_{compacted.timestamp}.hfile").exists()
    assert not [i for i in metadata if not i.completed] and not handle.timeline.pending()
    assert_listing_is_storage(str(location))
    doc["spec"]["clustering"]["everyNCommits"] = 4      # back to settings under which Hudi's next write
    doc["spec"]["retention"]["keepCommits"] = 10        # leaves nothing to plan
    save_spec(doc, spec_file)
    assert apply_until_done(capsys, spec_file, tmp_path) == ["update_settings"]

    ours = tablespec_rows(table)
    assert _by_id(ours) == {"a": 11, "b": 2, "d": 4, "e": 5} and hudi_rs_rows(str(location)) == ours
    stored = _on_storage(location)
    _, every, differences, theirs, _, after = hudi1.process.run([
        *_hudi_checks(location, "m9"), write_step(location, HUDI_WRITER, SCHEMA, [("b", 20, "2024-01-01", 9)]),
        read_step(location, **METADATA_ON)])
    _assert_validated(stored, every, differences)
    assert rows(pa.Table.from_pylist(theirs)) == ours
    assert _by_id(after) == {"a": 11, "b": 20, "d": 4, "e": 5} == _by_id(tablespec_rows(table))

    # after Hudi 1.2's write: tablespec imports and plans clean, and writes on
    doc, _ = _import(tmp_path, location, capsys)
    table = _table(hudi, doc, location)
    table.write(hudi.createDataFrame([("f", 6, "2024-01-03", 10)], SCHEMA))
    assert_listing_is_storage(str(location))
    _, every, differences, theirs = hudi1.process.run(_hudi_checks(location, "m9_again"))
    _assert_validated(_on_storage(location), every, differences)
    assert rows(pa.Table.from_pylist(theirs)) == tablespec_rows(table)

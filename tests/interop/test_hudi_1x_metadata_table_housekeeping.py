"""A version 9 table without Hudi's metadata table (Apache Hudi 1.2.0 wrote it with
hoodie.metadata.enable=false) gets one by `apply` (`build_metadata_table`, Hudi 1.x's layout), which
Hudi 1.2.0 validates; then tablespec writes until the metadata table's own services ran as Hudi 1.2
schedules them: compactions, its clean (at new instant times) and its archiving into its own LSM
history (`.hoodie/metadata/.hoodie/timeline/history/`). Hudi 1.2.0 (its own process) validates the
metadata table again (`validate_metadata_table_files`), reads through it equal to tablespec, writes
on with it, and tablespec imports, plans clean and writes after."""
from __future__ import annotations

import pyarrow as pa
from helpers import hudi_rs_rows, rows, tablespec_rows
from hudi_process import read_step, write_step
from interop_support import apply_until_done, save_spec
from test_hudi_1x_metadata_table import HUDI_WRITER, METADATA_ON, _assert_validated, _by_id, _hudi_checks, _on_storage
from test_hudi_1x_writes import V9_NO_MDT
from test_hudi_metadata_table import assert_listing_is_storage
from test_hudi_tables import SCHEMA, _import, _table

from tablespec.hudi.archive.lsm import manifest_files
from tablespec.hudi.archive.lsm_write import read_file_rows
from tablespec.hudi.io import LocalStorage, join
from tablespec.hudi.mdt import layout, lsm_archiver
from tablespec.hudi.mdt.cleaner import CLEANER_COMMITS_RETAINED_1X
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import avro_content

# Enough for three compactions of the metadata table (one per 10 of its deltacommits), more commits than its
# cleaner's 20 retained and archiving: 30 writes do it (measured; 26 make two compactions), 2 spare
WRITES = 32


def _history(location) -> list[dict]:
    folder = join(layout.table_path(str(location)), lsm_archiver.HISTORY)
    return [r for f in manifest_files(LocalStorage(), folder) for r in read_file_rows(LocalStorage(), f)]


def test_apply_builds_the_metadata_table_and_it_cleans_and_archives_as_hudi_1_2_does(hudi, hudi1, tmp_path, capsys):
    location, hudi_read = hudi1.copy(V9_NO_MDT, tmp_path / "h9")
    doc, spec_file = _import(tmp_path, location, capsys, ("build_metadata_table",))
    # archive limits above the metadata cleaner's retained commits (the metadata table keeps one more)
    doc["spec"]["retention"] = {**doc["spec"].get("retention", {}), "keepCommits": 2,
                                "archive": {"minCommits": CLEANER_COMMITS_RETAINED_1X + 1,
                                            "maxCommits": CLEANER_COMMITS_RETAINED_1X + 3}}
    save_spec(doc, spec_file)
    assert "build_metadata_table" in apply_until_done(capsys, spec_file, tmp_path)
    props = (location / ".hoodie" / "metadata" / ".hoodie" / "hoodie.properties").read_text()
    assert "hoodie.table.version=9" in props and "hoodie.timeline.layout.version=2" in props
    [init] = layout.timeline(LocalStorage(), str(location), layout.V2)
    assert init.timestamp == layout.INIT_1X and init.completed and init.completion
    assert_listing_is_storage(str(location))
    table = _table(hudi, doc, location)
    assert tablespec_rows(table) == rows(pa.Table.from_pylist(hudi_read))
    stored = _on_storage(location)
    _, every, differences, theirs = hudi1.process.run(_hudi_checks(location, "h9_built"))
    _assert_validated(stored, every, differences)
    assert rows(pa.Table.from_pylist(theirs)) == tablespec_rows(table)

    for n in range(WRITES):
        table.write(hudi.createDataFrame([(f"k{n % 7}", n, f"2024-01-0{1 + n % 7 % 3}", 10 + n)], SCHEMA))
        if n == 5:   # a clean past Hudi's replacecommit (insert_overwrite): archiving may pass it from then on
            assert apply_until_done(capsys, spec_file, tmp_path) == ["clean"]
    handle = HudiTable.open(str(location))
    metadata = layout.timeline(handle.storage, handle.base, layout.V2)
    history = _history(location)
    assert all(i.completed for i in metadata) and not handle.timeline.pending()
    compactions = [i for i in metadata if i.action == layout.COMPACTION] + [r for r in history if r["action"] == "commit"]
    assert len(compactions) >= 3
    # its clean: a new instant time, `<requested>_<completion>.clean`, the superseded slices gone
    cleans = [i for i in metadata if i.action == "clean"]
    assert cleans or [r for r in history if r["action"] == "clean"]
    for clean in cleans:
        done = avro_content((location / ".hoodie" / "metadata" / ".hoodie" / "timeline" / clean.file_name).read_bytes(),
                            clean.file_name)
        assert clean.completion and done["partitionMetadata"]["files"]["successDeleteFiles"]
    assert not (location / ".hoodie" / "metadata" / "files" / layout.base_file_name(layout.INIT_1X)).exists()
    # its archiving: what left its timeline is in its LSM history, each once, older than the data table's
    assert history and not {r["instantTime"] for r in history} & {i.timestamp for i in metadata}
    assert all(r["instantTime"] < handle.timeline.instants[0].timestamp for r in history)
    assert [r for r in history if r["action"] == "deltacommit" and r["instantTime"] != layout.INIT_1X]
    assert len([i for i in metadata if i.action == layout.DELTA_COMMIT]) <= CLEANER_COMMITS_RETAINED_1X + 4 + 10
    assert_listing_is_storage(str(location))

    ours = tablespec_rows(table)
    assert hudi_rs_rows(str(location)) == ours
    stored = _on_storage(location)
    _, every, differences, theirs, _, after = hudi1.process.run([
        *_hudi_checks(location, "h9"), write_step(location, {**HUDI_WRITER, "hoodie.table.name": "orders_w9"}, SCHEMA,
                                                  [("k1", 100, "2024-01-02", 99)]),   # k1 lives in 2024-01-02
        read_step(location, **METADATA_ON)])
    _assert_validated(stored, every, differences)
    assert rows(pa.Table.from_pylist(theirs)) == ours
    assert _by_id(after) == {**_by_id(theirs), "k1": 100} == _by_id(tablespec_rows(table))

    # after Hudi 1.2's write: tablespec imports and plans clean, and writes on; Hudi validates again
    doc, _ = _import(tmp_path, location, capsys)
    table = _table(hudi, doc, location)
    table.write(hudi.createDataFrame([("z", 1, "2024-01-03", 200)], SCHEMA))
    assert_listing_is_storage(str(location))
    _, every, differences, theirs = hudi1.process.run(_hudi_checks(location, "h9_again"))
    _assert_validated(_on_storage(location), every, differences)
    assert rows(pa.Table.from_pylist(theirs)) == tablespec_rows(table)

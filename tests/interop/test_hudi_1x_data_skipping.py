"""Hudi's data-skipping indexes kept on a version 9 table: Apache Hudi 1.2.0 creates the table with
its defaults (`column_stats` and `partition_stats` on) and `bloom_filters` on, tablespec imports it
and plans clean, writes rows whose values lie outside every file's range into an existing and a new
partition, clusters and cleans, keeping the three partitions in each change (and compacting them
with the metadata table). Then Hudi 1.2 reads with data skipping on exactly what it reads with it
off, for filters only the new rows satisfy; its own column-stats lookup finds each file's range and
its bloom-filter lookup each file's filter; its next write (BLOOM index reading the filters from the
metadata table) updates the keys tablespec wrote and does not build the partitions again."""
from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _support import DriverReads, cli, table_files
from helpers import hudi_rs_rows, tablespec_rows
from hudi_process import (
    Batch,
    bloom_filter_step,
    column_stats_step,
    read_step,
    secondary_index_step,
    sql_step,
    write_step,
)
from interop_support import apply_until_done, save_spec
from test_hudi_1x_metadata_table import DEFAULTS, V9_MDT, _metadata, clustered_and_cleaned
from test_hudi_1x_record_index import HUDI_RLI, V9_RLI
from test_hudi_metadata_table import assert_listing_is_storage
from test_hudi_tables import SCHEMA, _import, _table

from tablespec.engine.reader import snapshot_slices
from tablespec.errors import TablespecError
from tablespec.hudi.mdt import damage, layout, record_index_reader, secondary_index
from tablespec.hudi.table import HudiTable
from tablespec.hudi.table import Location as TableLocation
from tablespec.importer import spec_document
from tablespec.plan.metadata_table import metadata_table_actions
from tablespec.state import observe

SKIPPING = ("column_stats", "files", "partition_stats")
ON = {"hoodie.metadata.enable": "true", "hoodie.enable.data.skipping": "true",
      "hoodie.metadata.index.column.stats.enable": "true"}
OFF = {"hoodie.metadata.enable": "true", "hoodie.enable.data.skipping": "false"}
BLOOM_FILTERS = {"hoodie.metadata.index.bloom.filter.enable": "true"}
V9_BLOOM = tuple(Batch.of({**dict(b.options), **BLOOM_FILTERS}, b.schema, list(b.rows)) for b in V9_MDT)
# Hudi's BLOOM index with each file's filter (and key range) read from the metadata table
BLOOM_FROM_METADATA = {"hoodie.index.type": "BLOOM", "hoodie.bloom.index.use.metadata": "true"}
# filters only rows tablespec wrote satisfy: values past every range Hudi's files had
NEW_ONLY = ("v >= 500", "ts >= 50", "id = 'x'", "dt = '2024-01-09' and v > 0")


def _ids(read) -> list[str]:
    return sorted(dict(r)["id"] for r in read)


def _latest_files(location) -> list[tuple[str, str]]:
    view = HudiTable.open(str(location)).view
    return [(s.partition, s.base_file.name) for s in view.latest_slices() if s.base_file is not None]


def _initializations(location) -> list[str]:
    """The metadata table's instants that built a partition (Hudi 1.2: all zeros but the last digits)."""
    _, metadata = _metadata(location)
    return [i.timestamp for i in metadata if i.timestamp.startswith("0" * 14)]


def test_tablespec_keeps_column_and_partition_stats_and_bloom_filters_hudi_1_2_skips_with(hudi, hudi1, tmp_path,
                                                                                         capsys):
    location, _ = hudi1.copy(V9_BLOOM, tmp_path / "s9")
    kept = ("bloom_filters", *SKIPPING)
    built = _initializations(location)
    doc, spec_file = _import(tmp_path, location, capsys)       # plans clean: nothing to drop
    # Hudi's default column selection imports as the default: it follows the schema as it evolves
    assert doc["spec"]["dataSkipping"] == {"columnStats": {}, "partitionStats": True, "bloomFilters": True}
    table = _table(hudi, doc, location)
    table.write(hudi.createDataFrame([("x", 500, "2024-01-01", 50)], SCHEMA))     # an existing partition
    table.write(hudi.createDataFrame([("y", 600, "2024-01-09", 60)], SCHEMA))     # a new one
    assert observe(HudiTable.open(str(location))).metadata_table.partitions == kept

    # clustering and a clean through `apply`: a replacecommit and a clean, each recorded in both
    doc["spec"]["index"] = {"type": "BLOOM"}                    # Hudi's BLOOM writer below agrees with the table
    handle, metadata = clustered_and_cleaned(capsys, doc, spec_file, tmp_path, location)
    assert observe(handle).metadata_table.partitions == kept
    assert any(i.action == layout.COMPACTION and i.completed for i in metadata)
    assert list(Path(location, ".hoodie", "metadata", "column_stats").glob("col-stats-*.hfile"))
    assert list(Path(location, ".hoodie", "metadata", "bloom_filters").glob("bloom-filters-*.hfile"))
    assert_listing_is_storage(str(location))
    doc["spec"]["clustering"]["everyNCommits"] = 4
    doc["spec"]["retention"]["keepCommits"] = 10
    save_spec(doc, spec_file)
    assert apply_until_done(capsys, spec_file, tmp_path) == ["update_settings"]
    assert hudi_rs_rows(str(location)) == tablespec_rows(table)      # hudi-rs reads what tablespec wrote and clustered

    files = _latest_files(location)
    expected = {f"{p}/{n}": pq.read_table(Path(location, p, n), columns=["v"]).column("v") for p, n in files}
    held = {f"{p}/{n}": pq.read_table(Path(location, p, n), columns=["_hoodie_record_key"]).column(0).to_pylist()
            for p, n in files}
    keys = sorted({k for found in held.values() for k in found})
    steps = [step for where in NEW_ONLY for step in (read_step(location, where, **ON), read_step(location, where, **OFF))]
    steps += [column_stats_step(location, files, "v"), bloom_filter_step(location, files, keys),
              sql_step(f"CREATE TABLE s9 USING hudi LOCATION '{location}'"),
              sql_step("CALL validate_metadata_table_files(table => 's9')"),
              write_step(location, {**DEFAULTS, "hoodie.datasource.write.operation": "upsert", **BLOOM_FILTERS,
                                    **BLOOM_FROM_METADATA}, SCHEMA,
                         [("z", 700, "2024-01-02", 70), ("x", 501, "2024-01-01", 51), ("y", 601, "2024-01-09", 61)]),
              read_step(location, "v >= 500", **ON), read_step(location)]
    statistics = Path(location, ".hoodie", "metadata", "column_stats")
    before_hudi = set(statistics.iterdir())
    *reads, stats, filters, _, differences, _, after, every = hudi1.process.run(steps)
    assert set(filters) == set(held)
    for name, found in held.items():        # each file's filter holds its keys, not every key of the table
        assert set(found) <= set(filters[name]) != set(keys), name
    assert sorted((r["id"], r["v"]) for r in every if r["v"] >= 500) == [("x", 501), ("y", 601), ("z", 700)]
    assert len(every) == len({r["id"] for r in every})          # the BLOOM index found x and y: no key twice
    for where, on, off in zip(NEW_ONLY, reads[::2], reads[1::2]):
        assert _ids(on) == _ids(off) and _ids(on), where
    assert [_ids(r) for r in reads[::2]] == [["x", "y"], ["x", "y"], ["x"], ["y"]]
    assert {f: [int(lo), int(hi)] for f, (lo, hi, _, _) in stats.items()} == {
        f: [min(v.to_pylist()), max(v.to_pylist())] for f, v in expected.items()}
    assert differences == []
    assert _ids(after) == ["x", "y", "z"]
    # Hudi's write with its defaults kept the partitions: none built again
    assert _initializations(location) == built
    assert observe(HudiTable.open(str(location))).metadata_table.partitions == kept
    assert sorted(dict(r)["id"] for r in tablespec_rows(table)) == ["a", "b", "c", "d", "x", "y", "z"]
    assert damage.find(HudiTable.open(str(location)), full=True) == []      # Hudi 1.2's statistics check whole
    # the column statistics of Hudi's write lost: no damage (files without statistics are read), nothing planned
    for lost in set(statistics.iterdir()) - before_hudi:
        lost.unlink()
    assert damage.find(HudiTable.open(str(location)), full=True) == []
    assert metadata_table_actions(observe(HudiTable.open(str(location)))) == []


WITHOUT = {**DEFAULTS, "hoodie.datasource.write.operation": "upsert", "hoodie.metadata.index.column.stats.enable": "false",
           "hoodie.metadata.index.partition.stats.enable": "false"}
V9_PLAIN = tuple(Batch.of(WITHOUT, SCHEMA, batch) for batch in (
    [("a", 1, "2024-01-01", 1), ("b", 2, "2024-01-01", 1), ("c", 3, "2024-01-02", 1)],
    [("a", 10, "2024-01-01", 2), ("x", 500, "2024-01-09", 50)]))


def test_declared_column_and_partition_stats_are_built_hudi_1_2_skips_with(hudi, hudi1, tmp_path, capsys):
    """A version 9 table Hudi 1.2 wrote with its data-skipping partitions off: declaring them plans one
    `build_data_skipping` (both partitions, the columns of Hudi's default selection, files and bytes to
    read); apply builds them from the footers with the column_stats definition; Hudi 1.2 then reads
    with data skipping on what it reads with it off, its lookup finds each file's range, its
    validation passes, and its next write with its defaults continues both partitions."""
    location, _ = hudi1.copy(V9_PLAIN, tmp_path / "b9")
    doc, spec_file = _import(tmp_path, location, capsys)
    assert "dataSkipping" not in doc["spec"]
    doc["spec"]["dataSkipping"] = {"columnStats": {}, "partitionStats": True}
    save_spec(doc, spec_file)
    latest = [s.base_file for s in HudiTable.open(str(location)).view.latest_slices() if s.base_file is not None]
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path), "--format", "json")
    [build] = [a for t in json.loads(out)["tables"] for a in t["actions"]]
    assert build["kind"] == "build_data_skipping" and build["params"] == {
        "partitions": ["column_stats", "partition_stats"],
        "columns": ["_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_record_key", "id", "v", "dt", "ts"]}
    assert build["estimate"] == {"partitions": 3, "files": len(latest), "bytes": sum(f.size for f in latest)}
    assert apply_until_done(capsys, spec_file, tmp_path) == ["build_data_skipping"]
    assert observe(HudiTable.open(str(location))).metadata_table.partitions == SKIPPING
    built = _initializations(location)
    code, out, _ = cli(capsys, "import", str(location))
    assert code == 0 and "dataSkipping:\n    columnStats: {}\n    partitionStats: true\n" in out, out

    table = _table(hudi, doc, location)
    table.write(hudi.createDataFrame([("y", 600, "2024-01-09", 60)], SCHEMA))     # kept from now on
    files = _latest_files(location)
    expected = {f"{p}/{n}": pq.read_table(Path(location, p, n), columns=["v"]).column("v") for p, n in files}
    steps = [step for where in NEW_ONLY for step in (read_step(location, where, **ON), read_step(location, where, **OFF))]
    steps += [column_stats_step(location, files, "v"),
              sql_step(f"CREATE TABLE b9 USING hudi LOCATION '{location}'"),
              sql_step("CALL validate_metadata_table_files(table => 'b9')"),
              write_step(location, {**DEFAULTS, "hoodie.datasource.write.operation": "upsert"}, SCHEMA,
                         [("z", 700, "2024-01-02", 70)]),
              read_step(location, "v >= 500", **ON)]
    *reads, stats, _, differences, _, after = hudi1.process.run(steps)
    for where, on, off in zip(NEW_ONLY, reads[::2], reads[1::2]):
        assert _ids(on) == _ids(off) and _ids(on), where
    assert [_ids(r) for r in reads[::2]] == [["x", "y"], ["x", "y"], ["x"], ["x", "y"]]
    assert {f: [int(lo), int(hi)] for f, (lo, hi, _, _) in stats.items()} == {
        f: [min(v.to_pylist()), max(v.to_pylist())] for f, v in expected.items()}
    assert differences == []
    assert _ids(after) == ["x", "y", "z"]
    assert _initializations(location) == built                  # Hudi's write continued them
    assert observe(HudiTable.open(str(location))).metadata_table.partitions == SKIPPING


LOCKED = "SET hoodie.write.lock.provider=org.apache.hudi.client.transaction.lock.InProcessLockProvider"  # CREATE INDEX needs one
SECONDARY = "secondary_index_idx_v"


def _secondary_index(location) -> dict[str, str]:
    """The secondary index's live keys (merged as readers merge them), each checked in its value's file group."""
    handle = HudiTable.open(str(location))
    found = secondary_index.stored(handle, SECONDARY)
    for key, group in found.items():
        assert group == secondary_index.file_id("idx_v", secondary_index.file_group(key, secondary_index.FILE_GROUPS))
    return dict.fromkeys(found)


def _pairs(read) -> dict[str, None]:
    return dict.fromkeys(sorted(f"{dict(r)['v']}${dict(r)['id']}" for r in read))


def _read_through_index(table, rows, filters, ids: list[str]) -> None:
    """A read filtered by values of the indexed column opens only the file groups the record index places
    `ids` (the keys holding those values) in, fewer than the table's, and returns the rows of `ids`."""
    handle = HudiTable.open(table.location)
    located = record_index_reader.lookup(handle, ids)
    read = {(s.partition, s.file_id) for s in snapshot_slices(handle, spec=table.spec, filters=filters)}
    assert read == {(located[i].partition, located[i].file_id) for i in ids}, filters
    assert len(read) < len(snapshot_slices(handle, spec=table.spec))
    assert tablespec_rows(table, filters=filters) == [r for r in rows if dict(r)["id"] in ids]


def test_tablespec_keeps_the_secondary_index_hudi_1_2_created(hudi, hudi1, tmp_path, capsys):
    """A version 9 copy-on-write table with Hudi 1.2's record index and `CREATE INDEX idx_v ON t (v)`: it imports
    with the index declared and plans clean; tablespec's upsert (a value changed, a key moved with a new value, a
    key inserted) and delete keep the index as Hudi keeps it (the old value's entry deleted, the new one
    inserted, in the file group of the value), the write tasks finding the old values in the rows they merge (the
    driver reads no indexed column); Hudi 1.2's lookup through the index finds each key under its new value only,
    it reads by value with data skipping what it reads without, validates, and writes on; removing the
    declaration drops the partition and its definition."""
    location, _ = hudi1.copy(V9_RLI, tmp_path / "x9")
    hudi1.process.run([sql_step(f"CREATE TABLE x9 USING hudi LOCATION '{location}'"), sql_step(LOCKED),
                       sql_step("CREATE INDEX idx_v ON x9 (v)")])
    doc, spec_file = _import(tmp_path, location, capsys)       # plans clean: nothing to drop
    assert doc["spec"]["dataSkipping"] == {"secondaryIndexes": [{"name": "idx_v", "column": "v"}]}
    table = _table(hudi, doc, location)
    driver = DriverReads()
    table.table = HudiTable.open(replace(TableLocation.parse(str(location)), storage=driver))
    table.write(hudi.createDataFrame([("b", 20, "2024-01-03", 3), ("c", 30, "2024-01-02", 3),
                                      ("d", 4, "2024-01-01", 3), ("e", 5, "2024-01-01", 3)], SCHEMA))
    table.write(hudi.createDataFrame([("a", 10, "2024-01-02", 4)], SCHEMA), "delete")
    data_files = {path for path, _ in driver.opened if "/.hoodie/" not in path}
    assert data_files and driver.column_read("v") == []    # the record index's keys read, never the values
    ours = tablespec_rows(table)
    assert sorted((dict(r)["id"], dict(r)["v"]) for r in ours) == [("b", 20), ("c", 30), ("d", 4), ("e", 5)]
    assert hudi_rs_rows(str(location)) == ours
    assert _secondary_index(location) == _pairs(ours)
    _read_through_index(table, ours, {"v": 20}, ["b"])                  # tablespec reads by value through it too
    _read_through_index(table, ours, [("v", "in", [4, 30, 99])], ["c", "d"])

    wheres = ("v = 20", "v = 30", "v = 4", "v = 5", "v = 10", "v = 2", "v = 3")
    steps = [step for where in wheres for step in (read_step(location, where, **ON), read_step(location, where, **OFF))]
    values = ["1", "2", "3", "4", "5", "10", "20", "30"]                   # the values before and after
    steps += [secondary_index_step(location, SECONDARY, values),
              sql_step(f"CREATE TABLE x9 USING hudi LOCATION '{location}'"),
              sql_step("CALL validate_metadata_table_files(table => 'x9')"),
              write_step(location, {**HUDI_RLI, "hoodie.write.lock.provider": LOCKED.split("=", 1)[1]}, SCHEMA,
                         [("c", 31, "2024-01-02", 5), ("f", 6, "2024-01-09", 5)]),
              read_step(location, "v = 31", **ON), read_step(location)]
    *reads, looked_up, _, differences, _, after, every = hudi1.process.run(steps)
    assert looked_up == {"20": ["b"], "30": ["c"], "4": ["d"], "5": ["e"]}
    for where, on, off in zip(wheres, reads[::2], reads[1::2]):
        assert _ids(on) == _ids(off), where
    assert [_ids(r) for r in reads[::2]] == [["b"], ["c"], ["d"], ["e"], [], [], []]
    assert differences == []
    assert _ids(after) == ["c"]
    assert _secondary_index(location) == _pairs(every)             # Hudi continued it
    rows = tablespec_rows(table)
    _read_through_index(table, rows, {"v": 31}, ["c"])

    # a truncated HFile of the index: verify reports it, plan proposes the rebuild and changes nothing, reads
    # go on without it (every file group read) and stay correct; apply rebuilds it as it was
    for hfile in Path(location, ".hoodie", "metadata", SECONDARY).glob("*.hfile"):
        hfile.write_bytes(hfile.read_bytes()[:100])
    code, out, err = cli(capsys, "verify", str(location))
    assert code != 0 and f"{SECONDARY}/" in out and ".hfile" in out, out + err
    before = table_files(location)
    code, out, _ = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path), "--format", "json")
    [drop] = [a for t in json.loads(out)["tables"] for a in t["actions"]]
    assert drop["kind"] == "drop_metadata_partitions" and drop["params"]["partitions"] == [SECONDARY]
    assert drop["reasons"][0].startswith("rebuild: ") and ".hfile" in drop["reasons"][0]
    assert table_files(location) == before
    handle = HudiTable.open(str(location))
    assert len(snapshot_slices(handle, spec=table.spec, filters={"v": 31})) == len(snapshot_slices(handle, spec=table.spec))
    assert tablespec_rows(table, filters={"v": 31}) == [r for r in rows if dict(r)["id"] == "c"]
    assert apply_until_done(capsys, spec_file, tmp_path) == ["drop_metadata_partitions", "build_data_skipping"]
    assert _secondary_index(location) == _pairs(every)
    code, shown, _ = cli(capsys, "show", str(location))
    assert code == 0 and f"; data-skipping indexes {SECONDARY} " in shown, shown

    doc["spec"]["dataSkipping"] = {}                            # declares none: the index is dropped
    save_spec(doc, spec_file)
    assert apply_until_done(capsys, spec_file, tmp_path) == ["drop_metadata_partitions"]
    assert SECONDARY not in observe(HudiTable.open(str(location))).metadata_table.partitions
    assert SECONDARY not in json.loads(Path(location, ".hoodie", ".index_defs", "index.json").read_text())["indexDefinitions"]
    assert not Path(location, ".hoodie", "metadata", SECONDARY).exists()


def test_a_declared_secondary_index_is_built_hudi_1_2_reads_and_continues_it(hudi, hudi1, tmp_path, capsys):
    """Declaring a secondary index on a version 9 RECORD_LEVEL table that lacks it plans one `build_data_skipping`
    (the partition, files and bytes of the latest base files to read); apply builds it as Hudi 1.2 lays it out;
    `import` declares it; Hudi 1.2 reads by value with data skipping what it reads without, validates, and its
    next upsert continues the index tablespec built."""
    location, _ = hudi1.copy(V9_RLI, tmp_path / "y9")
    doc, spec_file = _import(tmp_path, location, capsys)
    doc["spec"]["dataSkipping"] = {"secondaryIndexes": [{"name": "idx_v", "column": "v"}]}
    save_spec(doc, spec_file)
    latest = [s.base_file for s in HudiTable.open(str(location)).view.latest_slices() if s.base_file is not None]
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path), "--format", "json")
    [build] = [a for t in json.loads(out)["tables"] for a in t["actions"]]
    assert build["kind"] == "build_data_skipping" and build["params"]["partitions"] == [SECONDARY]
    assert build["estimate"] == {"partitions": 3, "files": len(latest), "bytes": sum(f.size for f in latest)}
    assert apply_until_done(capsys, spec_file, tmp_path) == ["build_data_skipping"]
    code, out, _ = cli(capsys, "import", str(location))
    assert code == 0 and "dataSkipping:\n    secondaryIndexes:\n    - {name: idx_v, column: v}\n" in out, out
    assert json.loads(Path(location, ".hoodie", ".index_defs", "index.json").read_text())["indexDefinitions"][
        SECONDARY] == secondary_index.definition("idx_v", "v")
    assert _secondary_index(location) == _pairs(tablespec_rows(_table(hudi, doc, location)))

    steps = [read_step(location, "v = 10", **ON), read_step(location, "v = 10", **OFF),
             sql_step(f"CREATE TABLE y9 USING hudi LOCATION '{location}'"),
             sql_step("CALL validate_metadata_table_files(table => 'y9')"),
             write_step(location, {**HUDI_RLI, "hoodie.write.lock.provider": LOCKED.split("=", 1)[1]}, SCHEMA,
                        [("d", 40, "2024-01-03", 5)]),
             read_step(location, "v = 40", **ON), read_step(location)]
    on, off, _, differences, _, after, every = hudi1.process.run(steps)
    assert _ids(on) == _ids(off) == ["a"]
    assert differences == []
    assert _ids(after) == ["d"]
    assert _secondary_index(location) == _pairs(every)


EXPRESSION = "expr_index_idx_day"


def test_an_expression_index_hudi_1_2_created_is_imported_and_never_left_stale(hudi, hudi1, tmp_path, capsys):
    """Hudi 1.2's `CREATE INDEX idx_day ON t USING column_stats(ts) OPTIONS(expr='from_unixtime', format=...)`
    (measured: partition `expr_index_idx_day`, its definition's type, function, source field and options):
    `import` declares it; tablespec cannot keep it, so a plan keeping it (declared, or a spec without a
    dataSkipping section) and a write are refused in one line naming it, every file unchanged; a spec
    leaving it out drops the partition and its definition in a plan action, and writes go on."""
    location, _ = hudi1.copy(V9_RLI, tmp_path / "e9")
    hudi1.process.run([sql_step(f"CREATE TABLE e9 USING hudi LOCATION '{location}'"), sql_step(LOCKED),
                       sql_step("CREATE INDEX idx_day ON e9 USING column_stats(ts) "
                                "OPTIONS(expr='from_unixtime', format='yyyy-MM-dd')")])
    defined = json.loads(Path(location, ".hoodie", ".index_defs", "index.json").read_text())["indexDefinitions"]
    assert {k: defined[EXPRESSION][k] for k in ("indexType", "indexFunction", "sourceFields", "indexOptions")} == {
        "indexType": "column_stats", "indexFunction": "from_unixtime", "sourceFields": ["ts"],
        "indexOptions": {"expr": "from_unixtime", "format": "yyyy-MM-dd"}}
    code, out, err = cli(capsys, "import", str(location), "--warehouse", str(tmp_path))
    assert code == 0 and ("    expressionIndexes:\n    - name: idx_day\n      type: column_stats\n      column: ts\n"
                          "      expression: from_unixtime\n      options: {format: yyyy-MM-dd}\n") in out, out + err
    spec_file = tmp_path / "e9.yaml"
    spec_file.write_text(out)
    doc = spec_document(observe(HudiTable.open(str(location))), TableLocation.parse(str(tmp_path)))
    named = "idx_day (column_stats of from_unixtime(ts), format=yyyy-MM-dd)"
    before = table_files(location)
    without = {**doc, "spec": {k: v for k, v in doc["spec"].items() if k != "dataSkipping"}}
    for kept in (doc, without):                     # declared, or no dataSkipping section (keeps the table's)
        save_spec(kept, spec_file)
        code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path))
        [refusal] = [line for line in err.splitlines() if "warning:" not in line]    # the spec's own warnings aside
        assert code != 0 and named in refusal and "DROP INDEX" in refusal, out + err
        with pytest.raises(TablespecError, match=re.escape(named)):
            _table(hudi, kept, location).write(hudi.createDataFrame([("z", 9, "2024-01-01", 9)], SCHEMA))
        assert table_files(location) == before

    doc["spec"]["dataSkipping"] = {k: v for k, v in doc["spec"]["dataSkipping"].items() if k != "expressionIndexes"}
    save_spec(doc, spec_file)
    with pytest.raises(TablespecError, match=r"expression index\(es\) idx_day, which its spec leaves out"):
        _table(hudi, doc, location).write(hudi.createDataFrame([("z", 9, "2024-01-01", 9)], SCHEMA))
    assert table_files(location) == before                     # a write never drops it unplanned
    code, out, _ = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path), "--format", "json")
    [drop] = [a for t in json.loads(out)["tables"] for a in t["actions"]]
    assert drop["kind"] == "drop_metadata_partitions" and drop["params"]["partitions"] == [EXPRESSION]
    assert apply_until_done(capsys, spec_file, tmp_path) == ["drop_metadata_partitions"]
    assert EXPRESSION not in observe(HudiTable.open(str(location))).metadata_table.partitions
    assert EXPRESSION not in json.loads(Path(location, ".hoodie", ".index_defs", "index.json").read_text())[
        "indexDefinitions"]
    table = _table(hudi, doc, location)
    table.write(hudi.createDataFrame([("z", 9, "2024-01-01", 9)], SCHEMA))
    assert ("z", 9) in {(dict(r)["id"], dict(r)["v"]) for r in tablespec_rows(table)}

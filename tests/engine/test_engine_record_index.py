"""RECORD_LEVEL = Apache Hudi's record index through tablespec's writes: tagging on executors,
global moves, deletes, re-inserts, builds, rebuilds, migration from tablespec's private index,
the switch away from RECORD_LEVEL; verify and lookup read the index."""
from __future__ import annotations

import pyarrow as pa
import pytest
from _support import storage_and_base
from helpers import assert_hudi_rs_agrees, make_table, run_script

from tablespec.hudi import private_index
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.mdt import initializer
from tablespec.hudi.mdt import record_index_reader as rli_reader
from tablespec.hudi.mdt import record_index_writer as rli_writer
from tablespec.hudi.metadata_table import INFLIGHT_KEY
from tablespec.hudi.table import HudiTable, Location
from tablespec.hudi.timeline.active import Timeline
from tablespec.index import verify

pytestmark = pytest.mark.spark

SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: people}
spec:
  location: people
  columns:
    - {name: id, type: string, nullable: false}
    - {name: city, type: string}
    - {name: n, type: int}
  recordKey: {fields: [id]}
  partitioning: {fields: [city]}
  orderingField: n
  index: {type: RECORD_LEVEL, recordLevel: {numBuckets: 3}}
"""
SIMPLE = SPEC.replace("{type: RECORD_LEVEL, recordLevel: {numBuckets: 3}}", "{type: SIMPLE}")
DDL = "id string, city string, n int"


def where(table) -> dict[str, tuple[str, str]]:
    """key -> (partition, file id) as the data says (via tablespec's reader)."""
    return {r._hoodie_record_key: (r._hoodie_partition_path, r._hoodie_file_name.split("_")[0])
            for r in table.read().collect()}


def looked_up(table, keys) -> dict[str, tuple[str, str]]:
    t = table.lookup(keys)
    return {k: (p, f) for k, p, f in zip(*(t.column(c).to_pylist() for c in ("key", "partition_path", "file_id")))}


def file_groups(location: str) -> int:
    """The record index's file-group count (0: the table has none)."""
    table = HudiTable.open(location)
    return len(rli_reader.slices(table)[0]) if rli_writer.is_enabled(table) else 0


def assert_consistent(table):
    result = verify(HudiTable.open(table.location))
    assert result.ok, str(result)
    data = where(table)
    assert looked_up(table, list(data) + ["nope"]) == data
    return data


def test_upsert_move_delete_reinsert_keep_index_and_data_consistent(spark, tmp_path):
    """On local disk: the index's storage operations on S3 (built, written by upserts, looked up)
    are test_engine_object_storage.py::test_every_action_and_read[s3]'s."""
    table = make_table(spark, tmp_path, SPEC)
    rows = [(f"k{i}", ["ams", "ber", "cph"][i % 3], i) for i in range(30)]
    assert table.write(spark.createDataFrame(rows, DDL), "insert").inserted == 30
    first = assert_consistent(table)
    assert len(first) == 30
    # update in place, move k1 ber -> ams, insert k99
    r = table.write(spark.createDataFrame([("k0", "ams", 100), ("k1", "ams", 101), ("k99", "cph", 1)], DDL), "upsert")
    assert (r.inserted, r.updated) == (2, 1) and r.deleted == 1  # the move: inserted in ams, removed from ber
    after = assert_consistent(table)
    assert after["k1"][0] == "city=ams" or after["k1"][0] == "ams"
    assert after["k0"] == first["k0"]  # an update in place keeps its file group
    assert sorted(r.id for r in table.read().filter("id = 'k1'").collect()) == ["k1"]  # unique across partitions
    # delete by key (any partition value), then re-insert elsewhere
    r = table.write(spark.createDataFrame([("k2", "zzz", 0), ("absent", "ams", 0)], DDL), "delete")
    assert r.deleted == 1
    assert "k2" not in assert_consistent(table)
    table.write(spark.createDataFrame([("k2", "ber", 5)], DDL), "upsert")
    assert assert_consistent(table)["k2"][0].endswith("ber")
    # insert of an existing key keeps keys unique (updated where it lives)
    table.write(spark.createDataFrame([("k3", "ams", 300)], DDL), "insert")
    data = assert_consistent(table)
    assert len(data) == 31 and table.read().filter("id = 'k3'").collect()[0].n == 300
    assert_hudi_rs_agrees(table)
    # the index is Hudi's (3 file groups, as the spec says); there is no private index
    assert file_groups(table.location) == 3
    assert not private_index.present(*storage_and_base(table.location))


def test_real_fixture_migrates_to_record_level_and_back(spark, real_table):
    from test_engine_rebucket import apply_spec, content

    from tablespec.importer import import_yaml
    from tablespec.spec.loader import load_spec_text
    from tablespec.state import observe
    from tablespec.table import Table
    base = real_table("cow_v6_simplekeygen_nonhivestyle")
    text = import_yaml(observe(HudiTable.open(str(base))), Location.parse(str(base.parent)))
    original = Table(load_spec_text(text, "f.yaml").specs[0].spec, str(base), spark)
    before = content(original)
    plan, result, spec = apply_spec(spark, text.replace("{type: SIMPLE}", "{type: RECORD_LEVEL}"), base.parent)
    # (Hudi wrote the fixture with its metadata table off: the same apply builds it first)
    assert [a.kind for _, a in plan.actions] == ["build_metadata_table", "index_migration"]
    (_, action), = [(t, a) for t, a in plan.actions if a.kind == "index_migration"]
    assert action.estimate.rows == len(before)
    assert [r.actual.rows for r in result.actions if r.kind == "index_migration"] == [len(before)]
    props = observe(HudiTable.open(str(base))).config.to_properties()
    assert (props["tablespec.index.type"], props["hoodie.index.type"]) == ("RECORD_LEVEL", "RECORD_INDEX")
    assert props["tablespec.record.level.num.buckets"] == "10" == str(file_groups(str(base)))  # Hudi's sizing: small
    table = Table(spec, str(base), spark)
    data = assert_consistent(table)
    assert content(table) == before and len(data) == len(before)
    assert_hudi_rs_agrees(table)
    # writes keep using and extending it
    row = table.read().orderBy("_hoodie_record_key").limit(1)
    cols = [c.name for c in spec.spec.columns]
    table.write(row.select(*cols).withColumn("intField", row["intField"] + 1), "upsert")
    assert assert_consistent(table) == data
    # away from RECORD_LEVEL: the record_index partition is dropped in the same action, as Hudi 0.15's
    # writers with the record index off drop it
    plan, result, _ = apply_spec(spark, text, base.parent)
    assert [a.kind for _, a in plan.actions] == ["index_migration"]
    assert result.actions[0].actual.partitions_dropped == 1 and file_groups(str(base)) == 0
    assert not LocalStorage().is_dir(str(base / ".hoodie" / "metadata" / "record_index"))


def test_lookup_refuses_other_indexes_clearly_verify_checks_them(spark, tmp_path, capsys):
    from tablespec.cli import main
    table = make_table(spark, tmp_path, SIMPLE)
    assert main(["lookup", table.location, "k1"]) == 1
    assert "not RECORD_LEVEL" in capsys.readouterr().err
    assert main(["verify", table.location]) == 0  # its files; a SIMPLE index keeps nothing to compare
    assert "record-level" not in capsys.readouterr().out


@pytest.mark.parametrize("point", ["after_data_files", "before_completion"])
def test_crashed_write_rolls_back_data_and_index_together(spark, tmp_path, point):
    """On local disk: a killed write rolled back on S3 (its data files and metadata-table
    deltacommit) is test_engine_object_storage.py::test_killed_apply_is_rolled_back_and_redone."""
    table = make_table(spark, tmp_path / "wh", SPEC)
    table.write(spark.createDataFrame([(f"k{i}", "ams", i) for i in range(12)], DDL), "insert")
    before = assert_consistent(table)
    (tmp_path / "people.yaml").write_text(SPEC)
    proc = run_script(f"""
        from tablespec.engine.session import get_spark
        from tablespec.spec.loader import load_spec_text
        from tablespec.table import Table
        spark = get_spark("local[1]")
        spec = load_spec_text(open({str(tmp_path / "people.yaml")!r}).read(), "p.yaml").specs[0].spec
        table = Table(spec, {table.location!r}, spark)
        df = spark.createDataFrame([("k1", "ber", 7), ("new", "cph", 1)], {DDL!r})
        table.write(df, "upsert")
    """, TABLESPEC_CRASH_AT=point)
    assert proc.returncode == -9, proc.stderr[-3000:]
    storage = storage_and_base(table.location)[0]
    assert Timeline.load(storage, table.location).pending()
    assert assert_consistent(table) == before  # readers and lookups see the table as before
    r = table.write(spark.createDataFrame([("k2", "cph", 9)], DDL), "upsert", heartbeat_tolerance=0)
    assert r.deleted == 1  # k2 moved ams -> cph
    assert not Timeline.load(storage, table.location).pending()
    after = assert_consistent(table)
    assert after["k1"] == before["k1"] and "new" not in after and after["k2"][0].endswith("cph")
    assert_hudi_rs_agrees(table)


def test_replace_table_into_record_level_rebuilds_the_index(spark, tmp_path):
    from test_engine_rebucket import plan_for

    from tablespec.apply import Applier
    from tablespec.state import observe
    from tablespec.table import Table
    table = make_table(spark, tmp_path, SIMPLE)
    table.write(spark.createDataFrame([(f"k{i}", ["ams", "ber"][i % 2], i) for i in range(10)], DDL), "insert")
    rekeyed = SPEC.replace("partitioning: {fields: [city]}", "partitioning: {fields: [n]}") \
        .replace("{type: RECORD_LEVEL, recordLevel: {numBuckets: 3}}", "{type: RECORD_LEVEL}")
    plan, spec = plan_for(rekeyed, tmp_path)
    assert [a.kind for _, a in plan.actions] == ["replace_table"]
    Applier(spark=spark).apply(plan, allow_destructive=True)
    after, _ = plan_for(rekeyed, tmp_path)
    assert not after.has_changes
    props = observe(HudiTable.open(table.location)).config.to_properties()
    assert props["tablespec.record.level.num.buckets"] == "10" == str(file_groups(table.location))
    replaced = Table(spec, table.location, spark)
    assert len(assert_consistent(replaced)) == 10
    assert_hudi_rs_agrees(replaced)


def record_level_writes_on_separate_executors(spark, warehouse: str) -> None:
    """Tagging and index deltas on separate executor JVMs (test_engine_local_cluster.py): nothing
    depends on driver-local state."""
    table = make_table(spark, warehouse, SPEC)
    df = spark.range(0, 300, numPartitions=4).selectExpr("concat('k', id) as id",
                                                         "if(id % 2 = 0, 'ams', 'ber') as city", "cast(id as int) as n")
    assert table.write(df, "upsert").inserted == 300
    moved = df.filter("n < 50").selectExpr("id", "'cph' as city", "n + 1 as n")
    r = table.write(moved, "upsert")
    assert (r.inserted, r.deleted) == (50, 50), r
    report = verify(HudiTable.open(table.location))
    assert report.ok, str(report)
    assert table.read().count() == 300 and table.read().filter("city = 'cph'").count() == 50
    assert table.lookup(["k1", "k299", "nope"]).num_rows == 2


def test_index_build_on_a_table_without_commits_keeps_hudi_rs_reading(spark, tmp_path):
    from helpers import hudi_rs_rows
    from test_engine_rebucket import apply_spec
    table = make_table(spark, tmp_path, SIMPLE)
    plan, result, spec = apply_spec(spark, SPEC, tmp_path)
    assert [a.kind for _, a in plan.actions] == ["index_migration"]
    assert result.actions[0].actual.rows == 0 and file_groups(table.location) == 3
    assert hudi_rs_rows(table.location) == []
    assert verify(HudiTable.open(table.location)).ok


def test_a_stale_row_does_not_move_a_key_to_another_partition(spark, tmp_path):
    """Global semantics respect the ordering field as updates in place do: a row older than the
    stored one loses, wherever it would move the key (Hudi merges before relocating)."""
    table = make_table(spark, tmp_path, SPEC)
    table.write(spark.createDataFrame([("k1", "ber", 5), ("k2", "ber", 5), ("k3", "ber", 5)], DDL), "insert")
    r = table.write(spark.createDataFrame([("k1", "ams", 1), ("k2", "ams", 9), ("k3", "ams", None)], DDL), "upsert")
    assert (r.inserted, r.deleted, r.ignored) == (1, 1, 2)  # only k2 moves; k1 and k3 lose to the stored rows
    data = assert_consistent(table)
    assert data["k1"][0].endswith("ber") and data["k2"][0].endswith("ams") and data["k3"][0].endswith("ber")
    assert {x.id: (x.city, x.n) for x in table.read().collect()} == {"k1": ("ber", 5), "k2": ("ams", 9),
                                                                     "k3": ("ber", 5)}


def test_fewer_index_buckets_leave_no_stale_bucket_files(spark, tmp_path):
    from test_engine_rebucket import apply_spec

    from tablespec.table import Table
    table = make_table(spark, tmp_path, SPEC.replace("numBuckets: 3", "numBuckets: 7"))
    assert file_groups(table.location) == 7
    table.write(spark.createDataFrame([(f"k{i}", ["ams", "ber"][i % 2], i) for i in range(40)], DDL), "insert")
    _, _, spec = apply_spec(spark, SPEC, tmp_path)  # 7 -> 3 buckets: the index is rebuilt
    table = Table(spec, table.location, spark)
    table.write(spark.createDataFrame([(f"k{i}", "cph", 100) for i in range(10)], DDL), "upsert")  # moves
    result = verify(HudiTable.open(table.location))
    assert result.ok and result.entries == result.keys == 40, str(result)
    assert file_groups(table.location) == 3
    assert len(assert_consistent(table)) == 40


@pytest.mark.parametrize("operation", ["upsert", "insert", "bulk_insert"])
def test_first_write_with_a_key_twice_across_partitions_keeps_one_row(spark, tmp_path, operation):
    table = make_table(spark, tmp_path, SPEC)
    rows = [("k1", "ams", 2), ("k1", "ber", 7), ("k1", "cph", 3), ("k2", "ams", 1)]
    assert table.write(spark.createDataFrame(rows, DDL), operation).inserted == 2
    data = assert_consistent(table)
    assert data["k1"][0].endswith("ber")
    # the same operation with a key stored elsewhere moves it (keys stay unique across the table)
    r = table.write(spark.createDataFrame([("k2", "cph", 5)], DDL), operation)
    assert (r.inserted, r.deleted) == (1, 1) and assert_consistent(table)["k2"][0].endswith("cph")
    assert sorted((x.id, x.city, x.n) for x in table.read().collect()) == [("k1", "ber", 7), ("k2", "cph", 5)]


def test_bucket_bootstrap_from_record_level_keeps_the_index_until_the_switch_then_drops_it(spark, tmp_path):
    from test_engine_rebucket import plan_for

    from tablespec.actions import metadata
    from tablespec.apply import Applier
    from tablespec.state import observe
    table = make_table(spark, tmp_path, SPEC)
    table.write(spark.createDataFrame([(f"k{i}", ["ams", "ber"][i % 2], i) for i in range(12)], DDL), "insert")
    bucket = SPEC.replace("{type: RECORD_LEVEL, recordLevel: {numBuckets: 3}}", "{type: BUCKET, numBuckets: 2}")
    plan, _ = plan_for(bucket, tmp_path)
    assert [a.kind for _, a in plan.actions] == ["bucket_bootstrap"]

    def crash(*_args, **_kw):
        raise OSError("crash before the switch")

    with pytest.MonkeyPatch.context() as mp, pytest.raises(OSError, match="crash before"):
        mp.setattr(metadata, "update_settings", crash)
        Applier(spark=spark).apply(plan)
    assert len(assert_consistent(table)) == 12  # data rewritten, still RECORD_LEVEL: the index followed
    plan, _ = plan_for(bucket, tmp_path)
    Applier(spark=spark).apply(plan)
    assert observe(HudiTable.open(table.location)).config.to_properties()["hoodie.index.type"] == "BUCKET"
    assert file_groups(table.location) == 0 and table.read().count() == 12
    assert not plan_for(bucket, tmp_path)[0].has_changes


def test_a_rebuild_with_a_new_file_group_count_cut_before_the_switch_keeps_the_index_working(spark, tmp_path):
    """The rebuild completes before hoodie.properties takes the new count: writers and lookups
    read the index's own file groups, whatever the property says; the next apply only switches."""
    from test_engine_rebucket import plan_for

    from tablespec.actions import metadata
    from tablespec.apply import Applier
    seven = SPEC.replace("numBuckets: 3", "numBuckets: 7")
    table = make_table(spark, tmp_path, seven)
    table.write(spark.createDataFrame([(f"k{i}", ["ams", "ber"][i % 2], i) for i in range(20)], DDL), "insert")
    plan, _ = plan_for(SPEC, tmp_path)  # 7 -> 3 buckets
    assert [a.kind for _, a in plan.actions] == ["index_migration"]

    def crash(*_args, **_kw):
        raise OSError("crash before the switch")

    with pytest.MonkeyPatch.context() as mp, pytest.raises(OSError, match="crash before"):
        mp.setattr(metadata, "update_settings", crash)
        Applier(spark=spark).apply(plan)
    before = assert_consistent(table)  # rebuilt with 3 file groups; hoodie.properties still says 7
    assert file_groups(table.location) == 3
    r = table.write(spark.createDataFrame([(f"k{i}", "cph", 100) for i in range(20)], DDL), "upsert")
    assert (r.inserted, r.deleted) == (20, 20)  # every key found and moved, none duplicated
    assert len(assert_consistent(table)) == len(before) == 20
    plan, result, _ = __import__("test_engine_rebucket").apply_spec(spark, SPEC, tmp_path)  # the switch, no rebuild
    assert result.actions[0].actual.instant is None and file_groups(table.location) == 3
    assert len(assert_consistent(table)) == 20


def test_building_the_index_refuses_keys_stored_in_two_partitions(spark, tmp_path, capsys):
    """SIMPLE keeps keys unique per partition only; a global index cannot pick one copy silently."""
    from test_engine_rebucket import plan_for

    from tablespec.apply import Applier
    from tablespec.errors import TablespecError
    from tablespec.state import observe
    table = make_table(spark, tmp_path, SIMPLE)
    table.write(spark.createDataFrame([("k1", "ams", 1), ("k1", "ber", 2), ("k2", "ams", 3)], DDL), "insert")
    plan, _ = plan_for(SPEC, tmp_path)
    with pytest.raises(TablespecError, match=r"stored more than once in the table, e.g. k1;"):
        Applier(spark=spark).apply(plan)
    assert observe(HudiTable.open(table.location)).config.to_properties()["hoodie.index.type"] == "SIMPLE"
    assert file_groups(table.location) == 0 and not Timeline.load(LocalStorage(), table.location).pending()


def _rebuild_index(location: str, entries) -> None:
    """Replace the table's record index with one built from `entries` (key, partition, file id, instant)."""
    from tablespec.hudi.mdt.record_index import RECORD_INDEX
    from tablespec.hudi.metadata_table import drop_partitions
    table = HudiTable.open(location)
    drop_partitions(table, (RECORD_INDEX,))
    rli_writer.initialize(table.refresh(), entries, 3)


def test_verify_reports_injected_inconsistencies(spark, tmp_path, capsys):
    from tablespec.cli import main
    table = make_table(spark, tmp_path, SPEC)
    table.write(spark.createDataFrame([(f"k{i}", "ams", i) for i in range(10)], DDL), "insert")
    assert main(["verify", table.location]) == 0
    assert "matches" in capsys.readouterr().out
    # an index that lost k2, places k1 in another file group and holds k404, which the table does not
    index = rli_reader.scan(HudiTable.open(table.location))
    entries = [(k, v.partition, "elsewhere" if k == "k1" else v.file_id, v.instant) for k, v in index.items() if k != "k2"]
    _rebuild_index(table.location, entries + [("k404", "city=ber", "x", index["k0"].instant)])
    assert main(["verify", table.location]) == 1
    out = capsys.readouterr().out
    assert "missing: 1" in out and "k2" in out and "extra: 1" in out and "k404" in out
    assert "misplaced: 1" in out and "k1 is in" in out and "3 finding(s)" in out


def test_a_private_index_table_migrates_to_hudis_record_index(spark, tmp_path):
    """A table tablespec kept RECORD_LEVEL with its private index (.hoodie/.tablespec/record_index,
    hoodie.index.type GLOBAL_SIMPLE, no record_index partition): plan proposes the migration with
    its reason, apply builds Hudi's record index and removes the folder, the table plans clean and
    writes tag through Hudi's index. The build's entries stay on executors: they write the HFiles."""
    from test_engine_rebucket import plan_for

    from tablespec.apply import Applier
    from tablespec.hudi.config import read_table_config, write_table_config
    from tablespec.hudi.mdt.record_index import RECORD_INDEX
    from tablespec.hudi.metadata_table import drop_partitions
    from tablespec.table import Table
    table = make_table(spark, tmp_path, SPEC)
    table.write(spark.createDataFrame([(f"k{i}", ["ams", "ber"][i % 2], i) for i in range(12)], DDL), "insert")
    storage, base = LocalStorage(), table.location
    drop_partitions(HudiTable.open(base), (RECORD_INDEX,))  # the table as the private index left it
    config = read_table_config(storage, base)
    write_table_config(storage, base, config.with_updates(index_type="GLOBAL_SIMPLE", extra={
        **config.extra, "tablespec.record.level.max.files.per.bucket": "2"}))
    folder = private_index.folder(base)
    head = Timeline.load(storage, base).head.timestamp
    for bucket in range(3):  # the private index's files (Arrow IPC), no longer read
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, pa.schema([("key", pa.string()), ("file_id", pa.string())])) as out:
            out.write_table(pa.table({"key": [f"k{bucket}"], "file_id": ["f"]}))
        storage.write_bytes(f"{folder}/{bucket:05d}-of-00003_{head}.base.arrow", sink.getvalue().to_pybytes())
    plan, spec = plan_for(SPEC, tmp_path)
    [(_, action)] = plan.actions
    assert action.kind == "record_index_build" and action.estimate.rows == 12
    assert any(".hoodie/.tablespec/record_index" in r for r in action.reasons), action.reasons
    with pytest.raises(Exception, match="record_index_build"):  # writers wait for the migration
        table.write(spark.createDataFrame([("k1", "ams", 50)], DDL), "upsert")
    def on_the_driver(*_args, **_kw):
        raise AssertionError("the driver encoded a record index base file")

    with pytest.MonkeyPatch.context() as mp:  # executors (other processes) write the HFiles, the driver only commits
        mp.setattr(initializer, "write_hfile", on_the_driver)
        result = Applier(spark=spark).apply(plan)
    assert result.actions[0].actual.rows == 12 and result.actions[0].actual.private_files_removed == 3
    assert not private_index.present(storage, base) and file_groups(base) == 3
    assert read_table_config(storage, base).to_properties()["hoodie.index.type"] == "RECORD_INDEX"
    assert not plan_for(SPEC, tmp_path)[0].has_changes
    table = Table(spec, base, spark)
    r = table.write(spark.createDataFrame([("k1", "ams", 50), ("k2", "ams", 50)], DDL), "upsert")  # k1 moves
    assert (r.inserted, r.updated, r.deleted) == (1, 1, 1)
    assert len(assert_consistent(table)) == 12
    assert_hudi_rs_agrees(table)


def test_a_table_hudi_wrote_without_the_record_index_gets_it_built(spark, tmp_path):
    from test_engine_rebucket import plan_for

    from tablespec.apply import Applier
    from tablespec.engine.writer import WriteRefused
    from tablespec.hudi.mdt.record_index import RECORD_INDEX
    from tablespec.hudi.metadata_table import drop_partitions
    table = make_table(spark, tmp_path, SPEC)
    table.write(spark.createDataFrame([(f"k{i}", ["ams", "ber"][i % 2], i) for i in range(8)], DDL), "insert")
    drop_partitions(HudiTable.open(table.location), (RECORD_INDEX,))
    with pytest.raises(WriteRefused, match="record_index_build"):
        table.write(spark.createDataFrame([("k1", "ams", 50)], DDL), "upsert")
    plan, _ = plan_for(SPEC, tmp_path)
    assert [a.kind for _, a in plan.actions] == ["record_index_build"]
    assert "without hoodie.metadata.record.index.enable" in plan.actions[0][1].reasons[0]
    Applier(spark=spark).apply(plan)
    assert file_groups(table.location) == 3 and not plan_for(SPEC, tmp_path)[0].has_changes
    assert len(assert_consistent(table)) == 8


def test_a_build_whose_executors_died_is_left_inflight_and_redone(spark, tmp_path):
    """The executors write the index's file groups; initialize names record_index ready in
    hoodie.properties last (inflight before its first file, as Hudi does): a build whose tasks are
    killed after their first HFile (every attempt) fails before its deltacommit completes, leaving
    files no reader uses, which the next plan shows half-built and its apply drops before building again."""
    from test_engine_rebucket import plan_for

    from tablespec.apply import Applier
    from tablespec.faults import CRASH_ENV
    table = make_table(spark, tmp_path, SIMPLE)
    table.write(spark.createDataFrame([(f"k{i}", ["ams", "ber"][i % 2], i) for i in range(8)], DDL), "insert")
    plan, _ = plan_for(SPEC, tmp_path)
    folder = tmp_path / "people" / ".hoodie" / "metadata" / "record_index"
    workers = spark.sparkContext.environment      # the environment of the Python workers it starts from now on
    workers[CRASH_ENV] = "during_metadata_partition_build"
    try:
        with pytest.raises(Exception, match="Python worker exited unexpectedly"):
            Applier(spark=spark).apply(plan)
    finally:
        del workers[CRASH_ENV]
    assert file_groups(table.location) == 0  # not named ready: no reader or writer uses the files
    assert HudiTable.open(table.location).table_config.extra[INFLIGHT_KEY] == "record_index"
    left = {p.name for p in folder.glob("*.hfile")}
    assert left   # the killed tasks' first files
    plan, _ = plan_for(SPEC, tmp_path)
    assert [a.kind for _, a in plan.actions] == ["drop_metadata_partitions", "index_migration"]
    assert "half-built" in " ".join(plan.actions[0][1].reasons), plan.actions[0][1].reasons
    Applier(spark=spark).apply(plan)
    assert file_groups(table.location) == 3 and not plan_for(SPEC, tmp_path)[0].has_changes
    # the same initializing instant again (the data timeline's head): each file group's HFile once, no temp files
    assert len(list(folder.glob("*.hfile"))) == 3 and not list(folder.glob(".*.tmp"))
    from tablespec.table import Table
    assert len(assert_consistent(Table(plan_for(SPEC, tmp_path)[1], table.location, spark))) == 8


def test_building_the_index_waits_for_a_pending_clustering_plan(spark, tmp_path):
    from tablespec.engine.clustering import schedule
    from tablespec.engine.record_index import build_index
    from tablespec.errors import TablespecError
    from tablespec.plan.clustering import clustering_plan
    from tablespec.state import observe
    text = SIMPLE + "  clustering: {strategy: SORT, sortColumns: [n], everyNCommits: 1}\n"
    table = make_table(spark, tmp_path, text)
    for i in range(3):
        table.write(spark.createDataFrame([(f"k{i}-{j}", "ams", j) for j in range(4)], DDL), "bulk_insert")
    schedule(table.table, clustering_plan(table.spec, observe(HudiTable.open(table.location))))
    with pytest.raises(TablespecError, match="pending clustering"):
        build_index(spark, HudiTable.open(table.location))
    assert file_groups(table.location) == 0

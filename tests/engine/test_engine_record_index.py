"""The record-level index through writes: tagging, global moves, deletes, re-inserts, verify, lookup."""
from __future__ import annotations

import os

import pyarrow as pa
import pytest
from _support import storage_and_base
from helpers import assert_hudi_rs_agrees, make_table, run_script

from tablespec.hudi import record_index as ri
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.table import HudiTable, Location
from tablespec.hudi.timeline import Timeline
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
  index: {type: RECORD_LEVEL, recordLevel: {numBuckets: 3, maxFilesPerBucket: 2}}
"""
DDL = "id string, city string, n int"


def where(table) -> dict[str, tuple[str, str]]:
    """key -> (partition, file id) as the data says (via tablespec's reader)."""
    return {r._hoodie_record_key: (r._hoodie_partition_path, r._hoodie_file_name.split("_")[0])
            for r in table.read().collect()}


def looked_up(table, keys) -> dict[str, tuple[str, str]]:
    t = table.lookup(keys)
    return {k: (p, f) for k, p, f in zip(*(t.column(c).to_pylist() for c in ("key", "partition_path", "file_id")))}


def assert_consistent(table):
    result = verify(HudiTable.open(table.location))
    assert result.ok, str(result)
    data = where(table)
    assert looked_up(table, list(data) + ["nope"]) == data
    return data


def test_upsert_move_delete_reinsert_keep_index_and_data_consistent(spark, warehouse):
    table = make_table(spark, warehouse, SPEC)
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
    # index files live under .hoodie/.tablespec and count only for completed instants
    storage, base = storage_and_base(table.location)
    files = ri.list_files(storage, base)
    done = {i.timestamp for i in Timeline.load(storage, base).completed()}
    assert files and all(f.instant in done for f in files)


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
    assert (props["tablespec.index.type"], props["hoodie.index.type"]) == ("RECORD_LEVEL", "GLOBAL_SIMPLE")
    assert props[ri.NUM_BUCKETS_PROPERTY] == str(ri.MIN_BUCKETS)  # sized from the table: small
    table = Table(spec, str(base), spark)
    data = assert_consistent(table)
    assert content(table) == before and len(data) == len(before)
    assert_hudi_rs_agrees(table)  # hudi-rs reads the table with .hoodie/.tablespec/ present
    # writes keep using and extending it
    row = table.read().orderBy("_hoodie_record_key").limit(1)
    cols = [c.name for c in spec.spec.columns]
    table.write(row.select(*cols).withColumn("intField", row["intField"] + 1), "upsert")
    assert assert_consistent(table) == data
    # away from RECORD_LEVEL: the index files are dropped in the same action
    plan, result, _ = apply_spec(spark, text, base.parent)
    assert [a.kind for _, a in plan.actions] == ["index_migration"]
    assert not ri.list_files(LocalStorage(), str(base)) and result.actions[0].actual.index_files_removed > 0


def test_verify_reports_injected_inconsistencies(spark, tmp_path, capsys):
    from tablespec.cli import main
    table = make_table(spark, tmp_path, SPEC)
    table.write(spark.createDataFrame([(f"k{i}", "ams", i) for i in range(10)], DDL), "insert")
    assert main(["verify", table.location]) == 0
    assert "matches" in capsys.readouterr().out
    # corrupt the index files in place: k1 points elsewhere, k2 is dropped, k404 is invented
    folder = ri.index_folder(table.location)
    for f in ri.list_files(LocalStorage(), table.location):
        t = ri.read_file(os.path.join(folder, f.name)).to_pydict()
        rows = {k: (p, fid) for k, p, fid in zip(t["key"], t["partition"], t["file_id"]) if k != "k2"}
        if "k1" in rows:
            rows["k1"] = (rows["k1"][0], "elsewhere")
        if f.bucket == ri.buckets_of(ri.key_hashes(pa.array(["k404"])), 3)[0]:
            rows["k404"] = ("ber", "x")
        ri.write_file(folder, f, ri.entries(list(rows), [v[0] for v in rows.values()], [v[1] for v in rows.values()]))
    assert main(["verify", table.location]) == 1
    out = capsys.readouterr().out
    assert "missing: 1" in out and "k2" in out and "extra: 1" in out and "k404" in out
    assert "misplaced: 1" in out and "k1 is in" in out and "3 finding(s)" in out


def test_lookup_refuses_other_indexes_clearly_verify_checks_them(spark, tmp_path, capsys):
    from tablespec.cli import main
    table = make_table(spark, tmp_path, SPEC.replace("{type: RECORD_LEVEL, recordLevel: {numBuckets: 3, maxFilesPerBucket: 2}}",
                                                     "{type: SIMPLE}"))
    assert main(["lookup", table.location, "k1"]) == 1
    assert "not RECORD_LEVEL" in capsys.readouterr().err
    assert main(["verify", table.location]) == 0  # its files; a SIMPLE index keeps nothing to compare
    assert "record-level" not in capsys.readouterr().out


def test_compaction_planned_and_applied_keeps_lookups(spark, tmp_path):
    from test_engine_rebucket import plan_for

    from tablespec.apply import Applier
    from tablespec.state import observe
    table = make_table(spark, tmp_path, SPEC)
    for i in range(4):  # each commit adds a delta to most buckets; deletes leave tombstones
        table.write(spark.createDataFrame([(f"k{i}-{j}", "ams", j) for j in range(6)], DDL), "insert")
    table.write(spark.createDataFrame([("k0-0", "ams", 0), ("k1-1", "ams", 0)], DDL), "delete")
    data = assert_consistent(table)
    over = {b: n for b, (n, _) in observe(HudiTable.open(table.location)).index_buckets.items() if n > 2}
    assert over
    plan, _ = plan_for(SPEC, tmp_path)
    assert [a.kind for _, a in plan.actions] == ["record_index_compaction"]
    # a compaction failing before its commit point leaves nothing behind (its files roll back)
    from tablespec.engine import record_index
    files_before = ri.list_files(LocalStorage(), table.location)

    def disk_full(*_):
        raise OSError("disk full")

    with pytest.MonkeyPatch.context() as mp, pytest.raises(OSError, match="disk full"):
        mp.setattr(record_index, "_index_commit", disk_full)
        Applier(spark=spark).apply(plan)
    assert ri.list_files(LocalStorage(), table.location) == files_before and assert_consistent(table) == data
    plan, _ = plan_for(SPEC, tmp_path)
    result = Applier(spark=spark).apply(plan)
    assert result.actions[0].actual.index_files_written == len(over)
    assert all(n == 1 for b, (n, _) in observe(HudiTable.open(table.location)).index_buckets.items() if b in over)
    assert assert_consistent(table) == data
    files = ri.list_files(LocalStorage(), table.location)
    assert not ri.superseded_files(LocalStorage(), table.location, Timeline.load(LocalStorage(), table.location), 3)
    assert not any(ri.read_file(os.path.join(ri.index_folder(table.location), f.name)).column("file_id").null_count
                   for f in files if f.kind == "base")  # tombstones dropped
    plan, _ = plan_for(SPEC, tmp_path)
    assert not plan.has_changes
    assert_hudi_rs_agrees(table)  # the compaction commit (no data) does not disturb readers


@pytest.mark.parametrize("point, warehouse", [("after_data_files", "local"), ("before_completion", "local"),
                                              ("after_data_files", "s3")], indirect=["warehouse"])
def test_crashed_write_rolls_back_data_and_index_together(spark, tmp_path, warehouse, point):
    table = make_table(spark, warehouse, SPEC)
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
    crashed = Timeline.load(storage, table.location).pending()[0].timestamp
    assert any(f.instant == crashed for f in ri.list_files(storage, table.location))  # written, not counted
    assert assert_consistent(table) == before  # readers and lookups see the table as before
    r = table.write(spark.createDataFrame([("k2", "cph", 9)], DDL), "upsert", heartbeat_tolerance=0)
    assert r.deleted == 1  # k2 moved ams -> cph
    assert not any(f.instant == crashed for f in ri.list_files(storage, table.location))
    after = assert_consistent(table)
    assert after["k1"] == before["k1"] and "new" not in after and after["k2"][0].endswith("cph")
    assert_hudi_rs_agrees(table)


def test_replace_table_into_record_level_rebuilds_the_index(spark, tmp_path):
    from test_engine_rebucket import plan_for

    from tablespec.apply import Applier
    from tablespec.state import observe
    from tablespec.table import Table
    simple = SPEC.replace("{type: RECORD_LEVEL, recordLevel: {numBuckets: 3, maxFilesPerBucket: 2}}", "{type: SIMPLE}")
    table = make_table(spark, tmp_path, simple)
    table.write(spark.createDataFrame([(f"k{i}", ["ams", "ber"][i % 2], i) for i in range(10)], DDL), "insert")
    rekeyed = SPEC.replace("partitioning: {fields: [city]}", "partitioning: {fields: [n]}") \
        .replace("{type: RECORD_LEVEL, recordLevel: {numBuckets: 3, maxFilesPerBucket: 2}}", "{type: RECORD_LEVEL}")
    plan, spec = plan_for(rekeyed, tmp_path)
    assert [a.kind for _, a in plan.actions] == ["replace_table"]
    Applier(spark=spark).apply(plan, allow_destructive=True)
    after, _ = plan_for(rekeyed, tmp_path)
    assert not after.has_changes
    assert observe(HudiTable.open(table.location)).config.to_properties()[ri.NUM_BUCKETS_PROPERTY] == str(ri.MIN_BUCKETS)
    replaced = Table(spec, table.location, spark)
    assert len(assert_consistent(replaced)) == 10
    assert_hudi_rs_agrees(replaced)


def test_record_level_writes_on_local_cluster(tmp_path):
    """Tagging and index deltas on separate executor JVMs: nothing depends on driver-local state."""
    (tmp_path / "people.yaml").write_text(SPEC)
    proc = run_script(f"""
        from helpers import make_table
        from tablespec.engine.session import get_spark
        from tablespec.hudi.table import HudiTable
        from tablespec.index import verify
        spark = get_spark("local-cluster[2,1,1024]", {{"spark.executor.memory": "512m"}})
        table = make_table(spark, {str(tmp_path)!r}, open({str(tmp_path / "people.yaml")!r}).read())
        df = spark.range(0, 300, numPartitions=4).selectExpr("concat('k', id) as id",
                                                             "if(id % 2 = 0, 'ams', 'ber') as city", "cast(id as int) as n")
        assert table.write(df, "upsert").inserted == 300
        moved = df.filter("n < 50").selectExpr("id", "'cph' as city", "n + 1 as n")
        r = table.write(moved, "upsert")
        assert (r.inserted, r.deleted) == (50, 50), r
        assert verify(HudiTable.open(table.location)).ok, str(verify(HudiTable.open(table.location)))
        assert table.read().count() == 300 and table.read().filter("city = 'cph'").count() == 50
        assert table.lookup(["k1", "k299", "nope"]).num_rows == 2
        spark.stop()
        print("LOCAL-CLUSTER OK")
    """)
    assert "LOCAL-CLUSTER OK" in proc.stdout, proc.stderr[-3000:]


def test_index_build_on_a_table_without_commits_keeps_hudi_rs_reading(spark, tmp_path):
    from helpers import hudi_rs_rows
    from test_engine_rebucket import apply_spec
    simple = SPEC.replace("{type: RECORD_LEVEL, recordLevel: {numBuckets: 3, maxFilesPerBucket: 2}}", "{type: SIMPLE}")
    table = make_table(spark, tmp_path, simple)
    plan, result, spec = apply_spec(spark, SPEC, tmp_path)
    assert [a.kind for _, a in plan.actions] == ["index_migration"]
    assert len(ri.list_files(LocalStorage(), table.location)) == 3  # an empty base per bucket
    assert hudi_rs_rows(table.location) == []
    assert verify(HudiTable.open(table.location)).ok


def test_a_clustering_like_rewrite_keeps_the_index_through_on_commit(spark, tmp_path):
    """The contract for data-rewriting actions: stitch a partition's file groups into a new one
    in a replacecommit, calling `on_commit` inside the Transaction and recording the marks it
    returns (the commit is then seen by the index); the index follows."""
    import pyarrow.parquet as pq

    from tablespec.engine import tasks
    from tablespec.engine.arrow.basefile import write_base_file
    from tablespec.engine.commit import Transaction, commit_metadata, locked
    from tablespec.engine.record_index import on_commit
    from tablespec.engine.writer import table_avro_schema
    from tablespec.hudi.fs_view import FileSystemView
    from tablespec.hudi.index_coverage import delta_marks
    from tablespec.hudi.naming import BaseFileName, new_file_id
    table = make_table(spark, tmp_path, SPEC)
    for i in range(2):
        table.write(spark.createDataFrame([(f"k{i}-{j}", "ams", j) for j in range(4)], DDL), "insert")
    storage = LocalStorage()
    view = FileSystemView.build(storage, table.location, Timeline.load(storage, table.location))
    inputs = view.latest_slices("city=ams")
    with locked(table.table) as lock, Transaction(table.table, "replacecommit", lock) as txn:
        rows = pa.concat_tables([pq.read_table(s.base_file.path) for s in inputs])
        fid = new_file_id()
        rel = f"city=ams/{BaseFileName(fid, '0-0-0', txn.instant).format()}"
        written = write_base_file(os.path.join(table.location, rel), rows.drop_columns(["_hoodie_file_name"]),
                                  commit_time=txn.instant, partition_path="city=ams", partition_id=0,
                                  record_keys=rows.column(tasks.KEY), avro_schema_json=table_avro_schema(table.spec),
                                  preserve_meta=True)
        stats = [dict(partition="city=ams", file_id=fid, path=rel, prev_commit="null", num_writes=written.num_rows,
                      num_inserts=written.num_rows, num_updates=0, num_deletes=0, bytes=written.size)]
        replaced = {"city=ams": [s.file_id for s in inputs]}
        marks = on_commit(spark, table.table, txn.instant, view, stats, replaced)
        assert marks == delta_marks() and any(f.instant == txn.instant for f in ri.list_files(storage, table.location))
        txn.commit(stats, commit_metadata(stats, "CLUSTER", table_avro_schema(table.spec), marks, replaced=replaced))
    data = assert_consistent(table)
    assert len(data) == 8 and {f for _, f in data.values()} == {fid}
    assert_hudi_rs_agrees(table)


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

    from tablespec.state import observe
    from tablespec.table import Table
    table = make_table(spark, tmp_path, SPEC.replace("numBuckets: 3", "numBuckets: 7"))
    table.write(spark.createDataFrame([(f"k{i}", ["ams", "ber"][i % 2], i) for i in range(40)], DDL), "insert")
    _, _, spec = apply_spec(spark, SPEC, tmp_path)  # 7 -> 3 buckets: the index is rebuilt
    table = Table(spec, table.location, spark)
    table.write(spark.createDataFrame([(f"k{i}", "cph", 100) for i in range(10)], DDL), "upsert")  # moves
    result = verify(HudiTable.open(table.location))
    assert result.ok and result.entries == result.keys == 40, str(result)
    assert set(observe(HudiTable.open(table.location)).index_buckets) == {0, 1, 2}
    assert len(assert_consistent(table)) == 40


def test_replace_table_of_a_record_level_table_deletes_the_old_index_files(spark, tmp_path):
    from test_engine_rebucket import plan_for

    from tablespec.apply import Applier
    from tablespec.table import Table
    table = make_table(spark, tmp_path, SPEC)
    for i in range(2):
        table.write(spark.createDataFrame([(f"k{i}-{j}", ["ams", "ber"][j % 2], j) for j in range(6)], DDL), "insert")
    rekeyed = SPEC.replace("partitioning: {fields: [city]}", "partitioning: {fields: [n]}")
    plan, spec = plan_for(rekeyed, tmp_path)
    assert [a.kind for _, a in plan.actions] == ["replace_table"]
    Applier(spark=spark).apply(plan, allow_destructive=True)
    replace = Timeline.load(LocalStorage(), table.location).completed()[-1].timestamp
    assert {f.instant for f in ri.list_files(LocalStorage(), table.location)} == {replace}
    assert len(assert_consistent(Table(spec, table.location, spark))) == 12


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
    bucket = SPEC.replace("{type: RECORD_LEVEL, recordLevel: {numBuckets: 3, maxFilesPerBucket: 2}}",
                          "{type: BUCKET, numBuckets: 2}")
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
    assert not ri.list_files(LocalStorage(), table.location) and table.read().count() == 12


def test_index_compaction_waits_for_a_pending_clustering_plan(spark, tmp_path):
    """A scheduled clustering completes after later instants but carries its older instant time:
    an index base written meanwhile would hide its index delta (keys left on replaced file groups)."""
    from test_engine_rebucket import plan_for

    from tablespec.apply import Applier
    from tablespec.engine.clustering import schedule
    from tablespec.engine.commit import locked
    from tablespec.engine.record_index import build_index, compact_index
    from tablespec.errors import TablespecError
    from tablespec.plan.clustering import clustering_plan
    from tablespec.state import observe
    text = SPEC + "  clustering: {strategy: SORT, sortColumns: [n], everyNCommits: 1}\n"
    table = make_table(spark, tmp_path, text)
    for i in range(4):
        table.write(spark.createDataFrame([(f"k{i}-{j}", "ams", j) for j in range(6)], DDL), "bulk_insert")
    plan = clustering_plan(table.spec, observe(HudiTable.open(table.location)))
    assert plan is not None
    schedule(table.table, plan)
    assert any(n > 2 for n, _ in observe(HudiTable.open(table.location)).index_buckets.values())
    kinds = []
    while "clustering" not in kinds or "record_index_compaction" not in kinds:  # plan -> apply
        plan, _ = plan_for(text, tmp_path)
        kinds += [a.kind for _, a in plan.actions]
        Applier(spark=spark).apply(plan)
        assert len(assert_consistent(table)) == 24
    assert kinds.index("clustering") < kinds.index("record_index_compaction")
    table.write(spark.createDataFrame([("k9", "ber", 1)], DDL), "upsert")
    schedule(table.table, clustering_plan(table.spec, observe(HudiTable.open(table.location))))
    with locked(table.table) as lock:
        with pytest.raises(TablespecError, match="pending clustering"):
            compact_index(spark, table.table, 0, lock)
        with pytest.raises(TablespecError, match="pending clustering"):
            build_index(spark, table.spec, table.table, lock)


@pytest.mark.parametrize("action", ["index_build", "replace_table"])
def test_index_writing_actions_failing_before_their_commit_leave_the_index_as_it_was(spark, tmp_path, action):
    from test_engine_rebucket import plan_for

    from tablespec.apply import Applier
    from tablespec.engine import record_index, writer
    simple = SPEC.replace("{type: RECORD_LEVEL, recordLevel: {numBuckets: 3, maxFilesPerBucket: 2}}", "{type: SIMPLE}")
    table = make_table(spark, tmp_path, simple if action == "index_build" else SPEC)
    table.write(spark.createDataFrame([(f"k{i}", ["ams", "ber"][i % 2], i) for i in range(8)], DDL), "insert")
    files_before = ri.list_files(LocalStorage(), table.location)
    target = SPEC if action == "index_build" else SPEC.replace("partitioning: {fields: [city]}", "partitioning: {fields: [n]}")
    plan, _ = plan_for(target, tmp_path)
    written = []

    def fail(*_args, **_kw):
        written.extend(ri.list_files(LocalStorage(), table.location))
        raise OSError("disk full")

    with pytest.MonkeyPatch.context() as mp, pytest.raises(OSError, match="disk full"):
        mp.setattr(record_index, "_index_commit", fail)
        mp.setattr(writer, "commit_metadata", fail)
        Applier(spark=spark).apply(plan, allow_destructive=True)
    assert len(written) > len(files_before)  # the failed instant had written index files
    assert ri.list_files(LocalStorage(), table.location) == files_before
    assert not Timeline.load(LocalStorage(), table.location).pending()
    if action == "replace_table":
        assert len(assert_consistent(table)) == 8


def test_a_rebuild_with_a_new_bucket_count_cut_before_the_switch_leaves_the_old_index_working(spark, tmp_path):
    """The build commits before hoodie.properties takes the new count: until the switch, readers
    and writers use the old count, so they must still find the index laid out for it."""
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
    before = assert_consistent(table)  # still 7 buckets by hoodie.properties
    assert not plan_for(seven, tmp_path)[0].has_changes  # the spec went back to 7: nothing to do
    r = table.write(spark.createDataFrame([(f"k{i}", "cph", 100) for i in range(20)], DDL), "upsert")
    assert (r.inserted, r.deleted) == (20, 20)  # every key found and moved, none duplicated
    assert len(assert_consistent(table)) == len(before) == 20
    _, _, spec = __import__("test_engine_rebucket").apply_spec(spark, SPEC, tmp_path)  # 7 -> 3 after all
    assert len(assert_consistent(table)) == 20
    assert {f.bucket for f in ri.list_files(LocalStorage(), table.location)} == {0, 1, 2}


def test_verify_reports_an_entry_filed_in_the_wrong_bucket(spark, tmp_path):
    """Lookups (and so writers) never read another bucket's files: such an entry is missing."""
    table = make_table(spark, tmp_path, SPEC)
    table.write(spark.createDataFrame([(f"k{i}", "ams", i) for i in range(10)], DDL), "insert")
    folder = ri.index_folder(table.location)
    home = int(ri.buckets_of(ri.key_hashes(pa.array(["k5"])), 3)[0])
    for f in ri.list_files(LocalStorage(), table.location):
        t = ri.read_file(os.path.join(folder, f.name)).to_pydict()
        rows = {k: (p, fid) for k, p, fid in zip(t["key"], t["partition"], t["file_id"])}
        if f.bucket == home:
            k5 = rows.pop("k5")
        ri.write_file(folder, f, ri.entries(list(rows), [v[0] for v in rows.values()], [v[1] for v in rows.values()]))
    other = next(f for f in ri.list_files(LocalStorage(), table.location) if f.bucket != home)
    t = ri.read_file(os.path.join(folder, other.name)).to_pydict()
    ri.write_file(folder, other, ri.entries(t["key"] + ["k5"], t["partition"] + [k5[0]], t["file_id"] + [k5[1]]))
    result = verify(HudiTable.open(table.location))
    assert [(d.kind, d.count) for d in result.differences] == [("missing", 1)] and "k5" in str(result)


def test_building_the_index_refuses_keys_stored_in_two_partitions(spark, tmp_path, capsys):
    """SIMPLE keeps keys unique per partition only; a global index cannot pick one copy silently."""
    from test_engine_rebucket import plan_for

    from tablespec.apply import Applier
    from tablespec.errors import TablespecError
    from tablespec.state import observe
    simple = SPEC.replace("{type: RECORD_LEVEL, recordLevel: {numBuckets: 3, maxFilesPerBucket: 2}}", "{type: SIMPLE}")
    table = make_table(spark, tmp_path, simple)
    table.write(spark.createDataFrame([("k1", "ams", 1), ("k1", "ber", 2), ("k2", "ams", 3)], DDL), "insert")
    plan, _ = plan_for(SPEC, tmp_path)
    with pytest.raises(TablespecError, match=r"stored more than once in the table, e.g. k1;"):
        Applier(spark=spark).apply(plan)
    assert observe(HudiTable.open(table.location)).config.to_properties()["hoodie.index.type"] == "SIMPLE"
    assert not ri.list_files(LocalStorage(), table.location) and not Timeline.load(LocalStorage(), table.location).pending()

"""`tablespec verify` on tables tablespec wrote: clean ones, damaged files, cleaned history,
bucket layouts, the record-level index, and which tables a run selects."""
from __future__ import annotations

import os
import shutil

import pytest
from _support import ORDERS_SPEC, storage_and_base
from helpers import make_table
from test_engine_rebucket import load_orders, plan_for
from test_engine_record_index import DDL as PEOPLE_DDL
from test_engine_record_index import SPEC as PEOPLE_SPEC
from test_engine_record_index import _rebuild_index

from tablespec.actions.metadata import update_settings
from tablespec.apply import Applier
from tablespec.cli import main
from tablespec.hudi.formats.naming import BaseFileName, new_file_id
from tablespec.hudi.fs_view import FileSystemView
from tablespec.hudi.io import LocalStorage, join
from tablespec.hudi.mdt import record_index_reader as rli_reader
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import Timeline
from tablespec.hudi.timeline.instant import new_instant_time

pytestmark = pytest.mark.spark
SIMPLE = (ORDERS_SPEC.replace("index: {type: BUCKET, numBuckets: 16}", "index: {type: SIMPLE}")
          .replace("name: orders,", "name: orders_simple,").replace("location: sales/orders", "location: sales/simple"))


def verify(capsys, *args) -> tuple[int, str, str]:
    code = main(["verify", *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def latest_base_files(table) -> list[str]:
    """Paths (relative to the table) of the base files a snapshot reads."""
    st, base = storage_and_base(table.location)
    view = FileSystemView.build(st, base, Timeline.load(st, base))
    paths = [s.base_file.path for s in view.latest_slices()]
    assert all(p.startswith(base + "/") for p in paths), (base, paths)
    return sorted(p[len(base) + 1:] for p in paths)


def updated_table(spark, tmp_path, text=SIMPLE):
    """A table with two partitions, written three times: old slices stay beside the latest."""
    table = make_table(spark, tmp_path, text)
    load_orders(spark, table, n=20, days=2)
    upsert = table.read().limit(3).drop("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                                        "_hoodie_partition_path", "_hoodie_file_name")
    table.write(upsert, "upsert")
    return table


def findings(out: str, location: str) -> list[tuple[str, str]]:
    """(kind, file) of every finding line of `location`."""
    return [tuple(line.split("\t")[1:3]) for line in out.splitlines() if line.startswith(location + "\t")]


def test_a_written_table_verifies_clean_and_damage_is_reported(spark, warehouse, capsys):
    table = updated_table(spark, warehouse)
    storage, base = storage_and_base(table.location)
    code, out, _ = verify(capsys, table.location)
    assert code == 0 and out.strip().startswith(f"{table.location}: clean (")
    assert table.verify().ok
    rows = table.read().count()
    victim, damaged = latest_base_files(table)[:2]

    # a base file of the latest slice deleted: readers go on without it; verify names it
    assert storage.exists(join(base, victim))
    storage.delete(join(base, victim))
    assert not storage.exists(join(base, victim))
    assert table.read().count() <= rows  # no error: an older slice (or nothing) is served
    code, out, _ = verify(capsys, table.location)
    assert code == 1 and findings(out, table.location) == [("missing", victim)]
    assert "the latest slice of file group" in out and f"{table.location}: 1 finding(s)" in out

    # another one truncated
    path = join(base, damaged)
    data = storage.read_bytes(path)
    storage.write_bytes(path, data[:len(data) // 2])
    code, out, _ = verify(capsys, table.location)
    assert code == 1 and ("truncated", damaged) in findings(out, table.location)
    assert "fileSizeInBytes" in out

    report = table.verify()
    assert not report.ok and {f.kind for f in report.findings} == {"missing", "truncated"}


def test_stray_parquet_files_are_orphans(spark, tmp_path, capsys):
    table = updated_table(spark, tmp_path)
    source = os.path.join(table.location, latest_base_files(table)[0])
    partition = os.path.dirname(latest_base_files(table)[0])
    head = Timeline.load(LocalStorage(), table.location).commits()[-1].timestamp
    strays = [os.path.join(partition, BaseFileName(new_file_id(), "0-1-2", instant).format())
              for instant in (new_instant_time(head), "20200101000000000")]  # after and before the timeline
    for stray in strays:
        shutil.copy(source, os.path.join(table.location, stray))
    code, out, _ = verify(capsys, table.location)
    assert code == 1 and sorted(findings(out, table.location)) == sorted(("orphan", s) for s in strays)
    assert "readers ignore it" in out and "readers take the file for part of the table" in out


def test_a_cleaned_table_verifies_clean(spark, tmp_path, capsys):
    keep1 = SIMPLE.replace("index: {type: SIMPLE}", "index: {type: SIMPLE}\n  retention: {keepCommits: 1}")
    table = updated_table(spark, tmp_path, keep1)
    before = set(os.listdir(os.path.join(table.location, os.path.dirname(latest_base_files(table)[0]))))
    plan, _ = plan_for(keep1, tmp_path)
    assert [a.kind for _, a in plan.actions] == ["clean"]
    Applier(spark=spark).apply(plan)
    after = set(os.listdir(os.path.join(table.location, os.path.dirname(latest_base_files(table)[0]))))
    assert after < before  # old slices are gone
    code, out, _ = verify(capsys, table.location)
    assert code == 0 and f"{table.location}: clean" in out, out


def test_a_bucket_table_verifies_clean_and_its_layout_is_checked(spark, tmp_path, capsys):
    table = make_table(spark, tmp_path, ORDERS_SPEC)
    load_orders(spark, table, n=40, days=2)
    code, out, _ = verify(capsys, table.location)
    groups = len(latest_base_files(table))
    assert code == 0 and f"bucket index: {groups} file group(s)" in out, out
    # hoodie.properties saying fewer buckets than the files use: lookups miss those file groups
    update_settings(table.table, table.spec, {"hoodie.bucket.index.num.buckets": "2"})
    code, out, _ = verify(capsys, table.location)
    found = findings(out, table.location)
    assert code == 1 and found and {kind for kind, _ in found} == {"index"}
    assert "has 2 bucket(s): lookups never reach it" in out


def test_a_record_index_mismatch_is_a_finding(spark, tmp_path, capsys):
    table = make_table(spark, tmp_path, PEOPLE_SPEC)
    table.write(spark.createDataFrame([(f"k{i}", "ams", i) for i in range(10)], PEOPLE_DDL), "insert")
    code, out, _ = verify(capsys, table.location)
    assert code == 0 and "record-level index: 10 live keys, 10 entries, matches the data" in out
    index = rli_reader.scan(HudiTable.open(table.location))  # Hudi's record index without k2
    _rebuild_index(table.location, [(k, v.partition, v.file_id, v.instant) for k, v in index.items() if k != "k2"])
    code, out, _ = verify(capsys, table.location)
    assert code == 1 and findings(out, table.location) == [("index", ".hoodie/metadata/record_index")]
    assert "record-level index: missing: 1 key(s) (e.g. k2 in" in out


def test_verify_selects_tables_from_specs_and_refuses_bad_input_clearly(spark, tmp_path, capsys):
    warehouse, specs = tmp_path / "warehouse", tmp_path / "specs"
    specs.mkdir()
    (specs / "simple.yaml").write_text(SIMPLE)
    (specs / "orders.yaml").write_text(ORDERS_SPEC)
    simple, orders = make_table(spark, warehouse, SIMPLE), make_table(spark, warehouse, ORDERS_SPEC)
    load_orders(spark, simple, n=10, days=1)
    load_orders(spark, orders, n=10, days=1)
    code, out, _ = verify(capsys, str(specs), "--warehouse", str(warehouse))
    assert code == 0 and "2 tables verified: all clean" in out
    assert f"{simple.location}: clean" in out and f"{orders.location}: clean" in out
    code, out, _ = verify(capsys, str(specs), "--warehouse", str(warehouse), "--name", "sales.orders")
    assert code == 0 and out.count(": clean (") == 1 and orders.location in out
    code, out, _ = verify(capsys, "sales/simple", "--warehouse", str(warehouse))  # under the warehouse
    assert code == 0 and f"{simple.location}: clean" in out
    os.remove(os.path.join(simple.location, latest_base_files(simple)[0]))
    code, out, _ = verify(capsys, str(specs), "--warehouse", str(warehouse))
    assert code == 1 and "2 tables verified: 1 with findings or errors" in out

    code, out, err = verify(capsys, str(specs), "--warehouse", str(warehouse), "--name", "nope")
    assert code == 1 and out == "" and "no table named nope" in err
    code, out, err = verify(capsys, str(tmp_path / "nowhere"))
    assert code == 1 and out == "" and "no Hudi table there" in err
    (specs / "later.yaml").write_text(SIMPLE.replace("orders_simple", "later").replace("sales/simple", "sales/later"))
    code, out, err = verify(capsys, str(specs), "--warehouse", str(warehouse))
    assert code == 1 and out == "" and "sales.later" in err and "`tablespec apply` creates it" in err

"""A copy-on-write write rewrites only the file groups whose content changes: a file group whose
incoming rows all lose to the stored rows (strictly older ordering value), or whose deletes name
no stored key, keeps its slice; a batch that changes nothing leaves no instant, no file, no
heartbeat and no held lock behind, and says so. An incoming row with an equal ordering value wins
(Hudi's DefaultHoodieRecordPayload), so it is a change."""
from __future__ import annotations

import datetime as dt
import os
import shutil
from decimal import Decimal

import pytest
from _support import ORDERS_SPEC, storage_and_base
from helpers import assert_hudi_rs_agrees, make_table

from tablespec.hudi.formats.naming import BaseFileName
from tablespec.hudi.fs_view import FileSystemView
from tablespec.hudi.io import table_location
from tablespec.hudi.timeline.active import Timeline
from tablespec.hudi.timeline.lock import read_lock
from tablespec.table import Table

pytestmark = pytest.mark.spark

INDEXES = ["BUCKET", "SIMPLE", "BLOOM", "RECORD_LEVEL"]
SCHEMA = "order_id string, customer_id bigint, amount decimal(12,2), updated_at timestamp, order_date date"
T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
STORED = [(f"o{i:02d}", 5, 1 + i // 6) for i in range(12)]   # (key, hour, day): six keys a day, stored at hour 5
TINY = "2000"   # TABLESPEC_TASK_MEMORY_BYTES below every base file: each merge streams


def spec_for(index: str) -> str:
    """Several file groups a partition: four buckets, or about two records a file."""
    if index == "BUCKET":
        return ORDERS_SPEC.replace("numBuckets: 16", "numBuckets: 4")
    return ORDERS_SPEC.replace("  index: {type: BUCKET, numBuckets: 16}",
                               f"  clustering: {{targetFileSize: 256, smallFileLimit: 100}}\n  index: {{type: {index}}}")


def orders(spark, rows):
    """rows: (order_id, hour, day); the amount tells the hour."""
    return spark.createDataFrame([(k, 1, Decimal(h), T0 + dt.timedelta(hours=h), dt.date(2026, 11, d))
                                  for k, h, d in rows], SCHEMA)


def write_stored(spark, warehouse, index: str) -> Table:
    """A table of the STORED rows with `index`, written in `warehouse`."""
    table = make_table(spark, warehouse, spec_for(index))
    table.write(orders(spark, STORED), "upsert")
    return table


@pytest.fixture(scope="module")
def written() -> dict[str, Table]:
    """The STORED rows written once per index for the module (on first use); tests change copies."""
    return {}


@pytest.fixture
def stored_table(spark, written, tmp_path_factory):
    """A factory: stored_table(warehouse, index) copies that index's table of the STORED rows into `warehouse`."""
    def make(warehouse, index: str) -> Table:
        if index not in written:
            written[index] = write_stored(spark, tmp_path_factory.mktemp(index.lower()), index)
        table = Table(written[index].spec, table_location(str(warehouse), written[index].spec.spec.location), spark)
        shutil.copytree(written[index].location, table.location)
        return table
    return make


def slices_per_group(table) -> dict[tuple[str, str], int]:
    """(partition, file id) -> its number of file slices, in the table's file-system view."""
    storage, base = storage_and_base(table.location)
    view = FileSystemView.build(storage, base, Timeline.load(storage, base))
    return {(g.partition, g.file_id): len(g.slices) for g in view.file_groups()}


def group_of(table) -> dict[str, tuple[str, str]]:
    """Each stored key's (partition, file id)."""
    return {r.order_id: (r._hoodie_partition_path, BaseFileName.parse(r._hoodie_file_name).file_id)
            for r in table.read().collect()}


def table_files(table) -> tuple[list[str], list[str]]:
    """The timeline's instant files and every file outside .hoodie (data, partition metadata)."""
    meta, data = [], []
    for root, _dirs, files in os.walk(table.location):
        rel = os.path.relpath(root, table.location)
        if rel == ".hoodie":
            meta += files
        elif rel.split(os.sep)[0] != ".hoodie":
            data += [os.path.join(rel, f) for f in files]
    return sorted(meta), sorted(data)


def assert_nothing_left(table) -> None:
    """No heartbeat of a pending instant, no pending instant, the table lock free."""
    storage, base = storage_and_base(table.location)
    heartbeats = os.path.join(table.location, ".hoodie", ".heartbeat")
    assert not os.path.isdir(heartbeats) or not os.listdir(heartbeats)
    assert not Timeline.load(storage, base).pending()
    assert read_lock(storage, base) is None


def assert_changes_nothing(table, df, operation: str, message: str) -> None:
    before, slices, snapshot = table_files(table), slices_per_group(table), sorted(map(str, table.read().collect()))
    result = table.write(df, operation)
    assert (result.instant, result.files, result.unchanged) == (None, (), True)
    assert (result.inserted, result.updated, result.deleted) == (0, 0, 0)
    assert str(result) == message
    assert table_files(table) == before and slices_per_group(table) == slices
    assert sorted(map(str, table.read().collect())) == snapshot
    assert_nothing_left(table)


@pytest.mark.parametrize("index", INDEXES)
def test_a_batch_that_changes_nothing_commits_nothing(spark, tmp_path, index, stored_table):
    table = stored_table(tmp_path, index)
    assert len(slices_per_group(table)) > 2   # several file groups to leave alone
    stale = [(k, 1, d) for k, _, d in STORED]
    assert_changes_nothing(table, orders(spark, stale), "upsert",
                           "no changes (upsert): 12 rows ignored (the stored rows are newer), so no commit was made")
    assert_changes_nothing(table, orders(spark, [("absent", 1, 1), ("gone", 1, 2)]), "delete",
                           "no changes (delete): none of its keys is stored, so no commit was made")
    if index == "RECORD_LEVEL":  # a global index: a stale row for another partition loses to the stored row too
        assert_changes_nothing(table, orders(spark, [("o00", 1, 2), ("o07", 1, 1)]), "upsert",
                               "no changes (upsert): 2 rows ignored (the stored rows are newer), so no commit was made")
    # the next write commits as usual: nothing of the withdrawn instants is in its way
    result = table.write(orders(spark, [("o00", 6, 1), ("new", 1, 1)]), "upsert")
    assert (result.inserted, result.updated, result.ignored) == (1, 1, 0) and result.instant
    assert_hudi_rs_agrees(table)


@pytest.mark.parametrize("index", INDEXES)
def test_only_the_file_groups_whose_content_changes_get_a_new_slice(spark, tmp_path, index, stored_table):
    table = stored_table(tmp_path, index)
    before, groups = slices_per_group(table), group_of(table)
    # o02 newer, o08 an identical row with an equal ordering value (it wins: a change), the rest older
    batch = [("o02", 6, 1), ("o08", 5, 2)] + [(k, 1, d) for k, _, d in STORED if k not in ("o02", "o08")]
    result = table.write(orders(spark, batch), "upsert")
    assert (result.inserted, result.updated, result.deleted, result.ignored) == (0, 2, 0, 10)
    touched = {groups["o02"], groups["o08"]}
    assert {(p, BaseFileName.parse(os.path.basename(f)).file_id) for f in result.files
            for p in [os.path.dirname(f)]} == touched
    assert slices_per_group(table) == {g: n + (g in touched) for g, n in before.items()}
    commit_times = {r.order_id: r._hoodie_commit_time for r in table.read().collect()}
    assert {k for k, t in commit_times.items() if t == result.instant} == {"o02", "o08"}
    # a delete that hits one file group rewrites that one only
    before, groups = slices_per_group(table), group_of(table)
    result = table.write(orders(spark, [("o10", 0, 2), ("absent", 0, 2)]), "delete")
    assert result.deleted == 1 and len(result.files) == 1
    assert slices_per_group(table) == {g: n + (g == groups["o10"]) for g, n in before.items()}
    assert_hudi_rs_agrees(table)


@pytest.mark.parametrize("index", ["BUCKET", "RECORD_LEVEL"])
def test_a_streamed_merge_decides_before_it_writes(spark, tmp_path, monkeypatch, index, stored_table):
    """A base file above the task's memory is merged streaming: whether it changes is found from
    its key and ordering columns first, so an unchanged file group is not rewritten either."""
    table = stored_table(tmp_path, index)
    monkeypatch.setenv("TABLESPEC_TASK_MEMORY_BYTES", TINY)
    assert_changes_nothing(table, orders(spark, [(k, 1, d) for k, _, d in STORED]), "upsert",
                           "no changes (upsert): 12 rows ignored (the stored rows are newer), so no commit was made")
    assert_changes_nothing(table, orders(spark, [("absent", 1, 1)]), "delete",
                           "no changes (delete): none of its keys is stored, so no commit was made")
    assert_changes_nothing(table, orders(spark, [("o05", 4, 1)]), "upsert",
                           "no changes (upsert): 1 row ignored (the stored row is newer), so no commit was made")
    before, groups = slices_per_group(table), group_of(table)
    result = table.write(orders(spark, [("o03", 5, 1), ("o04", 1, 1), ("o09", 1, 2)]), "upsert")
    assert (result.updated, result.ignored, len(result.files)) == (1, 2, 1)
    assert slices_per_group(table) == {g: n + (g == groups["o03"]) for g, n in before.items()}
    assert_hudi_rs_agrees(table)


def test_ingest_says_the_batch_changed_nothing(spark, tmp_path, capsys, stored_table):
    from tablespec.cli import main
    spec = tmp_path / "orders.yaml"
    spec.write_text(spec_for("BUCKET"))
    table = stored_table(tmp_path / "wh", "BUCKET")
    stale = tmp_path / "stale.csv"   # every row three hours older than the stored one
    stale.write_text("order_id,customer_id,amount,updated_at,order_date\n"
                     + "".join(f"{k},1,1.00,2026-11-01T14:00:00Z,2026-11-0{d}\n" for k, _, d in STORED))
    code = main(["ingest", str(spec), "--input", str(stale), "--input-format", "csv", "--operation", "upsert",
                 "--warehouse", str(tmp_path / "wh")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.strip().splitlines()[-1] == ("no changes (upsert): 12 rows ignored (the stored rows are newer), "
                                            "so no commit was made")
    storage, base = storage_and_base(table.location)
    assert len(Timeline.load(storage, base).instants) == 1
    assert_nothing_left(table)

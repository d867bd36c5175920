"""A file group whose latest base file is gone from storage: writers refuse it instead of merging
into the older slice (which would make the loss permanent)."""
from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import pytest
from _support import ORDERS_SPEC, storage_and_base
from helpers import make_table

from tablespec.errors import HudiFormatError
from tablespec.hudi.io import LocalStorage, join
from tablespec.hudi.table import HudiTable, Location
from tablespec.hudi.timeline.active import Timeline

pytestmark = pytest.mark.spark

SCHEMA = "order_id string, customer_id bigint, amount decimal(12,2), updated_at timestamp, order_date date"
T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)


def orders(spark, rows):
    data = [(o, c, Decimal(a), T0 + dt.timedelta(hours=h), dt.date(2026, 11, d)) for o, c, a, h, d in rows]
    return spark.createDataFrame(data, SCHEMA)


def data_files(location):
    """Every file of the table outside .hoodie, relative to it (on local disk or S3)."""
    storage, base = storage_and_base(location)
    files = sorted(i.path[len(base) + 1:] for i in storage.walk_files(base))
    return [f for f in files if ".hoodie" not in f.split("/")[:-1]]


@pytest.mark.parametrize("index, warehouse", [("SIMPLE", "local"), ("BUCKET", "local"), ("SIMPLE", "s3")],
                         indirect=["warehouse"])
def test_upsert_into_a_file_group_whose_latest_base_file_is_missing_is_refused(spark, warehouse, index):
    block = "{type: BUCKET, numBuckets: 1}" if index == "BUCKET" else "{type: SIMPLE}"
    table = make_table(spark, warehouse, ORDERS_SPEC.replace("index: {type: BUCKET, numBuckets: 16}", "index: " + block))
    table.write(orders(spark, [("o1", 1, "10.00", 0, 1), ("o2", 2, "20.00", 0, 1), ("o3", 3, "30.00", 0, 2)]), "upsert")
    second = table.write(orders(spark, [("o1", 1, "11.00", 1, 1)]), "upsert")
    (lost,) = second.files
    storage, base = storage_and_base(table.location)
    assert storage.exists(join(base, lost))
    storage.delete(join(base, lost))
    files, rows = data_files(table.location), sorted(map(tuple, table.read().collect()))
    assert lost not in files and files
    commits = Timeline.load(storage, base).commits()

    with pytest.raises(HudiFormatError) as e:
        table.write(orders(spark, [("o2", 2, "21.00", 1, 1)]), "upsert")
    name = os.path.basename(lost)
    assert f"in partition '{os.path.dirname(lost)}': its latest base file {name} (written by instant " \
           f"{second.instant}) is missing from storage; restore it or roll back {second.instant}" in str(e.value)
    assert "nothing was committed" in str(e.value)
    assert Timeline.load(storage, base).commits() == commits
    assert data_files(table.location) == files and sorted(map(tuple, table.read().collect())) == rows

    # other partitions are written as usual
    assert table.write(orders(spark, [("o3", 3, "33.00", 1, 2)]), "upsert").updated == 1


def _table_with_lost_file(spark, warehouse, text: str):
    """Two writes to partition 2026-11-01 (the second a new slice of its file group), then that slice lost."""
    table = make_table(spark, warehouse, text)
    table.write(orders(spark, [("o1", 1, "10.00", 0, 1), ("o2", 2, "20.00", 0, 1), ("o3", 3, "30.00", 0, 2)]), "upsert")
    second = table.write(orders(spark, [("o1", 1, "11.00", 1, 1)]), "upsert")
    (lost,) = second.files
    os.remove(os.path.join(table.location, lost))
    return table, os.path.basename(lost), second.instant


def _plan(text: str, warehouse):
    from tablespec.plan.builder import build_plan
    from tablespec.spec.loader import load_spec_text
    from tablespec.state import observe_specs
    loaded = load_spec_text(text, "orders.yaml")
    assert not loaded.errors, loaded.errors
    return build_plan(loaded.specs, observe_specs(loaded.specs, Location.parse(str(warehouse))), Location.parse(str(warehouse)))


SIMPLE = ORDERS_SPEC.replace("index: {type: BUCKET, numBuckets: 16}", "index: {type: SIMPLE}")


@pytest.mark.parametrize("change, kind", [
    ("index: {type: BUCKET, numBuckets: 2}", "bucket_bootstrap"),
    ("recordKey: {fields: [order_id, customer_id]}", "replace_table"),
])
def test_rewrites_over_a_missing_latest_base_file_are_refused(spark, tmp_path, change, kind):
    from tablespec.apply import Applier
    table, lost, instant = _table_with_lost_file(spark, tmp_path, SIMPLE)
    files, rows = data_files(table.location), sorted(map(tuple, table.read().collect()))
    commits = Timeline.load(LocalStorage(), table.location).commits()
    old = "index: {type: SIMPLE}" if kind == "bucket_bootstrap" else "recordKey: {fields: [order_id]}"
    plan = _plan(SIMPLE.replace(old, change), tmp_path)
    assert [a.kind for _, a in plan.actions] == [kind]
    with pytest.raises(HudiFormatError, match=f"its latest base file {lost} \\(written by instant {instant}\\) is "
                                              "missing from storage"):
        Applier(spark=spark).apply(plan, allow_destructive=True)
    assert Timeline.load(LocalStorage(), table.location).commits() == commits
    assert data_files(table.location) == files and sorted(map(tuple, table.read().collect())) == rows


def test_clustering_over_a_missing_latest_base_file_is_neither_scheduled_nor_run(spark, tmp_path):
    from tablespec.apply import Applier
    from tablespec.hudi.services.clustering import encode_plan
    from tablespec.hudi.timeline.active import TimelineWriter
    from tablespec.hudi.timeline.instant import new_instant_time
    from tablespec.plan.clustering import clustering_plan
    from tablespec.state import observe
    text = SIMPLE + "  clustering: {strategy: SORT, sortColumns: [customer_id], everyNCommits: 2}\n"
    table, lost, instant = _table_with_lost_file(spark, tmp_path, text)
    storage = LocalStorage()
    before = Timeline.load(storage, table.location).instants
    plan = _plan(text, tmp_path)
    assert [a.kind for _, a in plan.actions] == ["clustering"]
    with pytest.raises(HudiFormatError, match=f"refusing to schedule clustering: .*{lost} \\(written by instant "
                                              f"{instant}\\) is missing"):
        Applier(spark=spark).apply(plan)
    assert Timeline.load(storage, table.location).instants == before  # no plan on the timeline

    # a plan another tool scheduled from the same listing (reading the older slice) does not run either
    scheduled = clustering_plan(table.spec, observe(HudiTable.open(table.location)))
    ts = new_instant_time(before[-1].timestamp)
    TimelineWriter(storage, table.location).request("replacecommit", ts, encode_plan(scheduled))
    with pytest.raises(HudiFormatError, match=f"refusing to run clustering plan {ts}: .*{lost}"):
        Applier(spark=spark).apply(_plan(text, tmp_path))
    assert Timeline.load(storage, table.location).commits() == tuple(i for i in before if i.is_completed
                                                                      and i.action in ("commit", "replacecommit"))

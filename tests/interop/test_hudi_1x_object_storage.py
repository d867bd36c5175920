"""Version 9 on an `s3://` warehouse (the loopback S3 API server, tests/s3server.py): the 6 -> 9
upgrade, archiving into the LSM history and the partition-level bucket index (RFC-89 hashing
configs) run on the bucket as on local disk, and tablespec and hudi-rs (from the same server) read
the same rows after each. Apache Hudi 1.2 reads these layouts locally (test_hudi_1x_upgrade.py,
test_hudi_1x_archive.py, test_hudi_1x_partition_buckets.py); its process has no S3 client here."""
from __future__ import annotations

import pyarrow as pa
from helpers import hudi_rs_options, hudi_rs_rows, rows, tablespec_rows
from interop_support import HISTORY_DDL as DDL
from interop_support import apply_until_done, history_spec
from test_hudi_1x_upgrade import SPEC, V9, _v6_table

from tablespec.hudi import partition_buckets as pb
from tablespec.hudi.archive import ArchivedTimeline
from tablespec.hudi.archive.lsm import history_folder
from tablespec.hudi.archive.lsm_write import current_version, read_manifest
from tablespec.hudi.formats.naming import bucket_of
from tablespec.hudi.hashing import bucket_ids
from tablespec.hudi.io import table_location
from tablespec.hudi.services.clean import earliest_readable_instant
from tablespec.hudi.table import HudiTable
from tablespec.plan.buckets import BucketLayout
from tablespec.spec.loader import load_spec_text
from tablespec.table import Table


def _table(spark, text: str, warehouse: str) -> Table:
    spec = load_spec_text(text, "t.yaml").specs[0].spec
    return Table(spec, table_location(warehouse, spec.spec.location), spark)


def _hudi_rs_as_of(location: str, as_of: str) -> list[tuple]:
    import hudi
    table = hudi.HudiTableBuilder.from_base_uri(location).with_storage_options(hudi_rs_options(location)).build()
    batches = table.read(hudi.HudiReadOptions().with_as_of_timestamp(as_of))
    return rows(pa.Table.from_batches(batches)) if batches else []


def _readable(location: str) -> list[str]:
    """The commits time travel can still read (the cleaner kept their files)."""
    timeline = HudiTable.open(location).timeline
    earliest = earliest_readable_instant(timeline) or ""
    return [i.timestamp for i in timeline.commits() if i.timestamp >= earliest]


def _agree(table: Table) -> list[tuple]:
    ours = tablespec_rows(table)
    assert ours and hudi_rs_rows(table.location) == ours, "hudi-rs disagrees with tablespec"
    report = table.verify()
    assert report.ok, str(report)
    return ours


def test_upgrade_6_to_9_on_s3(hudi, s3_bucket, tmp_path, capsys):
    warehouse = s3_bucket + "/wh"
    table, _ = _v6_table(hudi, warehouse)   # metadata table on, part of the history archived
    location = table.location
    assert location.startswith("s3://") and HudiTable.open(location).config.version == 6
    before = _agree(table)
    archived_before = ArchivedTimeline.of(HudiTable.open(location)).commits()
    as_of = {t: tablespec_rows(table, as_of=t) for t in _readable(location)}   # time travel before the upgrade
    assert archived_before and as_of

    spec_file = tmp_path / "upgraded.yaml"
    spec_file.write_text(V9)
    kinds = apply_until_done(capsys, spec_file, warehouse)
    assert kinds[0] == "upgrade_table" and set(kinds[1:]) <= {"build_metadata_table", "clean"}, kinds
    upgraded = HudiTable.open(location)
    assert upgraded.config.version == 9 and upgraded.timeline.layout == 2
    assert all(i.completion and i.completion >= i.timestamp for i in upgraded.timeline.completed())
    assert [i.timestamp for i in ArchivedTimeline.of(upgraded).commits()] == [i.timestamp for i in archived_before]
    # the version 6 metadata table retired by the upgrade, a version 9 one built by the next plan
    assert "hoodie.table.version=9" in upgraded.storage.read_bytes(
        location + "/.hoodie/metadata/.hoodie/hoodie.properties").decode("latin-1")
    assert not [f for f in upgraded.storage.list_dir(location + "/.hoodie") if not f.is_dir and f.name[:1].isdigit()]

    table = _table(hudi, V9, warehouse)
    assert _agree(table) == before
    still = [t for t in _readable(location) if t in as_of]   # (the clean after the upgrade took the oldest)
    assert still
    for t in still:
        assert tablespec_rows(table, as_of=t) == as_of[t] == _hudi_rs_as_of(location, t), t
    written = table.write(hudi.createDataFrame([("k0", 100, 100, "d0"), ("new", 1, 1, "d1")], DDL)).instant
    completed = HudiTable.open(location).timeline.commits()[-1]
    assert completed.timestamp == written and completed.completion > written
    after = {dict(r)["id"]: dict(r)["v"] for r in _agree(table)}
    assert after["k0"] == 100 and after["new"] == 1 and len(after) == len(before) + 1
    assert SPEC != V9


def test_lsm_archiving_on_s3(hudi, s3_bucket, tmp_path, capsys):
    warehouse = s3_bucket + "/wh"
    text = history_spec("archived", spec_lines=("tableVersion: 9",))
    spec_file = tmp_path / "archived.yaml"
    spec_file.write_text(text)
    assert apply_until_done(capsys, spec_file, warehouse) == ["create_table"]
    table = _table(hudi, text, warehouse)
    # housekeeping after each write archives past maxCommits 3, down to 2, but nothing that completed after
    # the metadata table's latest compaction (after its 10th deltacommit; test_hudi_1x_archive.py)
    for i in range(16):
        table.write(hudi.createDataFrame([(f"k{i % 3}", i, i, f"d{i % 2}")], DDL))
    handle = HudiTable.open(table.location)
    assert handle.config.version == 9 and table.location.startswith("s3://")
    archived = [i.timestamp for i in ArchivedTimeline.of(handle).commits()]
    active = [i.timestamp for i in handle.timeline.commits()]
    assert archived and max(archived) < min(active)
    assert len(archived) + len(active) == 16
    folder = history_folder(handle)
    manifest = read_manifest(handle.storage, folder, current_version(handle.storage, folder))
    assert manifest and all(handle.storage.exists(f"{folder}/{f['fileName']}") for f in manifest)
    ours = _agree(table)
    assert {dict(r)["id"]: dict(r)["v"] for r in ours} == {"k0": 15, "k1": 13, "k2": 14}
    assert tablespec_rows(table, as_of=active[0]) == _hudi_rs_as_of(table.location, active[0])


BUCKETS = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: pb9}
spec:
  location: pb9
  tableVersion: 9
  columns:
    - {name: id, type: string, nullable: false}
    - {name: v, type: long}
    - {name: ts, type: long}
    - {name: day, type: string, nullable: false}
  recordKey: {fields: [id]}
  partitioning: {fields: [day]}
  orderingField: ts
  index: {type: BUCKET, numBuckets: 2, partitionBuckets: [RULES]}
"""


def _buckets(handle: HudiTable, day: str) -> set[int | None]:
    """The buckets of the partition of `day`'s file groups."""
    return {bucket_of(s.file_id) for s in handle.view.latest_slices() if s.partition.rsplit("=", 1)[-1] == day}


def _assert_routed(table: Table) -> None:
    """Every stored key sits in the bucket the table's per-partition count hashes it to."""
    layout = BucketLayout.of_bucket_spec(table.spec)
    for r in map(dict, tablespec_rows(table)):
        partition, key = r["_hoodie_partition_path"], r["_hoodie_record_key"]
        expected = int(bucket_ids([pa.array([key])], layout.buckets_for(partition))[0])
        assert bucket_of(r["_hoodie_file_name"].split("_")[0]) == expected, (key, partition)


def test_partition_buckets_on_s3(hudi, s3_bucket, tmp_path, capsys):
    warehouse = s3_bucket + "/wh"
    spec_file = tmp_path / "pb9.yaml"
    text = BUCKETS.replace("RULES", "{pattern: '.*d0', numBuckets: 3}")
    spec_file.write_text(text)
    assert apply_until_done(capsys, spec_file, warehouse) == ["create_table"]
    table = _table(hudi, text, warehouse)
    table.write(hudi.createDataFrame([(f"k{i}", i, 1, f"d{i % 2}") for i in range(20)], DDL))
    handle = HudiTable.open(table.location)
    first = pb.latest(handle.storage, table.location, handle.table_config)
    assert first is not None and (first.expressions, first.default_bucket_number) == ("^(?:.*d0)$,3", 2)
    assert _buckets(handle, "d0") == {0, 1, 2} and _buckets(handle, "d1") == {0, 1}
    _assert_routed(table)
    _agree(table)

    # d1, with data, rescaled to 4: a new hashing config the replacecommit names, keys rehashed
    text = text.replace("{pattern: '.*d0', numBuckets: 3}", "{pattern: '.*d1', numBuckets: 4}, {pattern: '.*d0', numBuckets: 3}")
    spec_file.write_text(text)
    assert apply_until_done(capsys, spec_file, warehouse) == ["bucket_rescale"]
    handle = HudiTable.open(table.location)
    latest = pb.latest(handle.storage, table.location, handle.table_config)
    rescale = handle.timeline.commits()[-1]
    assert rescale.action == "replacecommit" and latest is not None and latest.instant == rescale.timestamp
    assert latest.expressions == "^(?:.*d1)$,4;^(?:.*d0)$,3"
    table = _table(hudi, text, warehouse)
    table.write(hudi.createDataFrame([("k1", 100, 2, "d1"), ("n1", 1, 2, "d1"), ("n0", 2, 2, "d0")], DDL))
    assert _buckets(HudiTable.open(table.location), "d1") == {0, 1, 2, 3}
    _assert_routed(table)
    values = {dict(r)["id"]: dict(r)["v"] for r in _agree(table)}
    assert len(values) == 22 and values["k1"] == 100

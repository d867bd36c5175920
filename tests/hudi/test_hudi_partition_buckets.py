"""Hudi 1.1+'s partition-level bucket index (RFC-89), without Spark: the hashing config as Hudi 1.2.0
lays it out (measured on a table its `partition_bucket_index_manager` procedure rescaled, see
tests/interop/test_hudi_1x_partition_buckets.py), which one Hudi loads, and tablespec's rules as
Hudi's expressions and back (Hudi finds a regex in the path, tablespec matches the whole path)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_hudi_layout2 import T4, _version_9_table

from tablespec.errors import HudiFormatError
from tablespec.hudi import keys
from tablespec.hudi import partition_buckets as pb
from tablespec.hudi.config import TableConfig
from tablespec.hudi.services.rollback import rollback
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import TimelineWriter
from tablespec.hudi.timeline.instant import REPLACE_COMMIT, Instant, new_instant_time
from tablespec.plan.buckets import BucketLayout

HUDI_1_2_CONFIG = (b'{\n  "expressions" : "^(?:2024-01-0[12])$,3",\n  "defaultBucketNumber" : 2,\n'
                   b'  "rule" : "regex",\n  "version" : 1,\n  "instant" : "20261126023229159"\n}')
PARTITIONS = ["2024-01-01", "2024-01-02", "2024-01-03", "x2024-01-01", "2024-01-011", "dt=2024-01-01", "", "eu,west"]


def test_the_hashing_config_is_written_as_hudi_1_2_writes_it():
    config = pb.HashingConfig.parse(HUDI_1_2_CONFIG, "f")
    assert config == pb.HashingConfig("^(?:2024-01-0[12])$,3", 2, "20261126023229159")
    assert config.to_json() == HUDI_1_2_CONFIG
    assert config.rules == (("2024-01-0[12]", 3),)


@pytest.mark.parametrize("rules", [
    (("2024-01-0[12]", 3),),
    (("2024-01-01", 8), ("2024-.*", 4)),
    (("dt=2024-01-0(1|3)", 5), (".*", 7)),
    (("", 9),),
    (),
])
def test_rules_route_as_hudi_finds_its_expressions(rules):
    """Each partition gets from Hudi's rule engine (first regex found in the path, else the default)
    the count tablespec's layout gives it; and the expressions read back as the same rules."""
    expressions = pb.expressions_of(rules, 2)
    hudi = []
    for part in expressions.split(";"):
        regex, count = part.rsplit(",", 1)
        hudi.append((re.compile(regex), int(count)))
    layout = BucketLayout(2, rules)
    for partition in PARTITIONS:
        found = next((n for regex, n in hudi if regex.search(partition)), 2)
        assert found == layout.buckets_for(partition), (rules, partition)
    assert pb.rules_of(expressions, 2) == rules


def test_expressions_hudi_wrote_are_read_as_whole_path_patterns():
    """A regex Hudi finds anywhere in the path reads as a pattern matching paths that contain it."""
    rules = pb.rules_of("2024-01-0[12],3;^eu,5", 2)
    assert rules == ((".*(?:2024-01-0[12]).*", 3), (".*(?:^eu).*", 5))
    layout = BucketLayout(2, rules)
    assert [layout.buckets_for(p) for p in ("x2024-01-011", "2024-01-03", "eu-west", "west-eu")] == [3, 2, 5, 2]


def test_separators_cannot_be_expressed():
    with pytest.raises(HudiFormatError, match="holds ',' or ';'"):
        pb.expressions_of((("a{1,2}", 3),), 2)
    with pytest.raises(HudiFormatError, match="expected 'regex,bucketNumber'"):
        pb.rules_of("2024", 2)
    with pytest.raises(HudiFormatError, match="regex rules only"):
        pb.rules_of("2024,3", 2, "range")


def _configs(table: HudiTable) -> list[str]:
    return sorted(p.name for p in (Path(table.base) / pb.CONFIGS_FOLDER).iterdir())


def test_a_version_9_table_reads_its_layout_from_the_hashing_config(tmp_path):
    """hoodie.properties of a table Hudi created names no index; the hashing config Hudi's writers
    load (not one a pending replacecommit wrote) gives the index, the default count and the rules."""
    table = _version_9_table(tmp_path)
    assert table.config.index_type is None and keys.PARTITION_BUCKETS.name not in table.config.extra
    folder = tmp_path / pb.CONFIGS_FOLDER
    folder.mkdir(parents=True)
    (folder / f"{T4}{pb.SUFFIX}").write_bytes(pb.HashingConfig("^(?:p)$,3", 2, T4).to_json())
    pending = "20250101000000040"   # a rescale in flight: its config is not loaded yet
    (tmp_path / ".hoodie" / "timeline" / f"{pending}.replacecommit.requested").write_bytes(b"")
    (folder / f"{pending}{pb.SUFFIX}").write_bytes(pb.HashingConfig("^(?:p)$,9", 4, pending).to_json())
    config = HudiTable.open(str(tmp_path)).table_config
    props = config.to_properties()
    assert (config.index_type, config.bucket_num) == ("BUCKET", 2)
    assert props[keys.PARTITION_BUCKETS.name] == '[{"pattern":"p","numBuckets":3}]'
    assert BucketLayout.from_properties(props) == BucketLayout(2, (("p", 3),))


def test_a_layout_change_writes_a_new_hashing_config_hudi_loads(tmp_path):
    table = _version_9_table(tmp_path)
    current = table.table_config
    plain = current.with_updates(index_type="BUCKET", bucket_num=2)
    assert pb.record(table.storage, table.base, current, plain, ()) is None   # no rules: Hudi's plain bucket index
    first = pb.record(table.storage, table.base, current, plain, (("p", 3),))
    assert first is not None and _configs(table) == [f"{first.instant}{pb.SUFFIX}"]
    assert first.instant > "20250101000000030"   # after every instant on the timeline
    assert pb.latest(table.storage, table.base, current) == first
    assert pb.record(table.storage, table.base, current, plain, (("p", 3),)) is None   # unchanged: nothing written
    dropped = pb.record(table.storage, table.base, current, plain, ())   # rules gone: Hudi still reads a config
    assert dropped is not None and dropped.instant > first.instant and dropped.rules == ()
    assert pb.latest(table.storage, table.base, current) == dropped
    assert HudiTable.open(str(tmp_path)).table_config.to_properties().get(keys.PARTITION_BUCKETS.name) is None


def test_version_6_tables_keep_the_layout_in_hoodie_properties(tmp_path):
    table = _version_9_table(tmp_path)
    v6 = TableConfig(name="t", index_type="BUCKET", bucket_num=2)
    assert pb.record(table.storage, table.base, v6, v6, (("p", 3),)) is None
    assert not (tmp_path / pb.CONFIGS_FOLDER).exists()


def test_a_rolled_back_rescale_takes_its_hashing_config_along(tmp_path):
    """A rescale that died before completing: its config (named by its replacecommit) is not loaded
    while pending, and its rollback deletes it, so Hudi goes on loading the one before."""
    table = _version_9_table(tmp_path)
    config = table.table_config
    before = pb.save(table.storage, table.base, 2, (("p", 3),), "20250101000000031")
    writer = TimelineWriter.of(table.timeline)
    ts = new_instant_time(after=table.timeline.latest_time)
    writer.start(writer.request(REPLACE_COMMIT, ts))
    assert pb.kept(table.storage, table.base, config, ())
    pb.save(table.storage, table.base, 2, (("p", 5),), ts)
    assert pb.latest(table.storage, table.base, config) == before   # pending: not loaded
    table.refresh()
    rollback(table, Instant(ts, REPLACE_COMMIT, "inflight"))
    assert _configs(table) == [f"{before.instant}{pb.SUFFIX}"]
    assert pb.latest(table.storage, table.base, config) == before


def test_the_handle_lists_the_timeline_once_for_its_hashing_configs(tmp_path):
    """Reading the layout takes the handle's own timeline (which pending replacecommit made which
    config): hoodie.properties and the timeline of a version 9 table with hashing configs cost one
    listing of the timeline folder, and the overlay is the same as without the handle's timeline."""
    from tablespec.hudi.io import LocalStorage
    from tablespec.hudi.table import Location

    class Listings(LocalStorage):
        def __init__(self):
            self.listed: list[str] = []

        def list_dir(self, path):
            self.listed.append(path.rstrip("/"))
            return super().list_dir(path)

    table = _version_9_table(tmp_path)
    folder = tmp_path / pb.CONFIGS_FOLDER
    folder.mkdir(parents=True)
    (folder / f"{T4}{pb.SUFFIX}").write_bytes(pb.HashingConfig("^(?:p)$,3", 2, T4).to_json())
    (tmp_path / ".hoodie" / "timeline" / "20250101000000040.replacecommit.requested").write_bytes(b"")
    (folder / f"20250101000000040{pb.SUFFIX}").write_bytes(pb.HashingConfig("^(?:p)$,9", 4, "20250101000000040").to_json())
    storage = Listings()
    handle = HudiTable(Location(str(tmp_path), storage))
    config, timeline = handle.table_config, handle.timeline
    assert storage.listed.count(str(tmp_path / ".hoodie" / "timeline")) == 1
    assert (config.bucket_num, config.extra[keys.PARTITION_BUCKETS.name]) == (2, '[{"pattern":"p","numBuckets":3}]')
    assert config == pb.overlay(table.storage, table.base, HudiTable.open(str(tmp_path)).table_config)
    assert "20250101000000040" in {i.timestamp for i in timeline.instants}


def test_a_version_9_table_created_with_rules_gets_its_first_hashing_config(tmp_path):
    """Hudi 1.2's writers take per-partition counts from the hashing configs only: a table created at
    version 9 with `partitionBuckets` has one from the start (one without rules needs none)."""
    from tablespec.actions.metadata import create_table
    from tablespec.spec.loader import load_spec_text

    text = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: t}
spec:
  location: t
  tableVersion: 9
  columns:
    - {name: id, type: string, nullable: false}
    - {name: day, type: string, nullable: false}
  recordKey: {fields: [id]}
  partitioning: {fields: [day]}
  index: {type: BUCKET, numBuckets: 2, partitionBuckets: [{pattern: d0, numBuckets: 3}]}
"""
    for name, spec_text, expected in (("rules", text, ("^(?:d0)$,3", 2)),
                                      ("plain", text.replace(", partitionBuckets: [{pattern: d0, numBuckets: 3}]", ""), None)):
        spec = load_spec_text(spec_text, "t.yaml").specs[0].spec
        create_table(HudiTable.open(str(tmp_path / name)), spec, version=9)
        table = HudiTable.open(str(tmp_path / name))
        hashing = pb.latest(table.storage, table.base, table.table_config)
        assert (hashing and (hashing.expressions, hashing.default_bucket_number)) == (expected or None), name
        assert BucketLayout.from_properties(table.table_config.to_properties()) == BucketLayout.from_spec(spec)

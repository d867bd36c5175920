"""`tablespec hudi-options`: the Apache Hudi writer options for a spec, per index type (golden files),
and its errors. The interop tier (tests/interop/test_hudi_options.py) writes with them through Hudi."""
from __future__ import annotations

import json

import pytest
from _support import ORDERS_SPEC, check_golden
from _support import cli as run

from tablespec.cli import main
from tablespec.hudi.table import HudiTable
from tablespec.hudi_options import hudi_write_options
from tablespec.plan.settings import desired_properties
from tablespec.spec.loader import load_spec_text

# orders (partitioned, one key field, ordering) under each index; events: auto keys; clicks: complex key
INDEXES = {
    "SIMPLE": "{type: SIMPLE}",
    "BLOOM": "{type: BLOOM}",
    "BUCKET": "{type: BUCKET, numBuckets: 8, hashFields: [order_id]}",
    "RECORD_LEVEL": "{type: RECORD_LEVEL}",
}
OTHERS = """---
apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: events}
spec:
  location: raw/events
  columns:
    - {name: event_id, type: string}
    - {name: day, type: string}
  recordKey: {autoGenerate: true}
  partitioning: {fields: [day], hiveStyle: false}
---
apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: clicks, database: raw}
spec:
  location: raw/clicks
  columns:
    - {name: user_id, type: long, nullable: false}
    - {name: ts, type: long, nullable: false}
  recordKey: {fields: [user_id, ts]}
  index: {type: BLOOM}
"""


def _orders(index: str) -> str:
    return ORDERS_SPEC.replace("{type: BUCKET, numBuckets: 16}", INDEXES[index])



@pytest.fixture
def specs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TABLESPEC_WAREHOUSE", raising=False)
    for index in INDEXES:
        (tmp_path / f"orders_{index.lower()}.yaml").write_text(_orders(index))
    (tmp_path / "others.yaml").write_text(OTHERS)
    return tmp_path


@pytest.mark.parametrize("index", list(INDEXES))
def test_options_per_index_type(specs, capsys, tmp_path, index):
    code, out, err = run(capsys, "hudi-options", f"orders_{index.lower()}.yaml", "--warehouse", str(tmp_path / "wh"))
    assert code == 0, err
    check_golden(f"hudi_options_{index.lower()}.properties", out, tmp_path)


@pytest.mark.parametrize("name", ["events", "raw.clicks"])
def test_options_auto_and_complex_keys_as_json(specs, capsys, tmp_path, name):
    code, out, err = run(capsys, "hudi-options", "others.yaml", "--name", name, "--format", "json",
                         "--warehouse", str(tmp_path / "wh"))
    assert code == 0, err
    options = json.loads(out)
    assert all(isinstance(v, str) for v in options.values())
    check_golden(f"hudi_options_{name.split('.')[-1]}.json", out, tmp_path)


@pytest.mark.parametrize("index", list(INDEXES))
def test_options_agree_with_the_table_properties(index):
    """Every option naming a table property carries the value tablespec writes into hoodie.properties."""
    spec = load_spec_text(_orders(index), "t.yaml").specs[0].spec
    options, props = hudi_write_options(spec, HudiTable.open("/wh/sales/orders")), desired_properties(spec)
    assert options["hoodie.datasource.write.keygenerator.class"] == props["hoodie.table.keygenerator.class"]
    assert options["hoodie.datasource.write.recordkey.field"] == props["hoodie.table.recordkey.fields"]
    assert options["hoodie.datasource.write.partitionpath.field"] == props["hoodie.table.partition.fields"]
    assert options["hoodie.datasource.write.precombine.field"] == props["hoodie.table.precombine.field"]
    shared = {k: v for k, v in props.items() if k in options}
    assert shared and all(options[k] == v for k, v in shared.items())
    assert options["path"] == "/wh/sales/orders"


def test_partition_buckets_are_refused_at_their_line(specs, capsys, tmp_path):
    (tmp_path / "rules.yaml").write_text(_orders("BUCKET").replace(
        "hashFields: [order_id]}", "hashFields: [order_id],\n    partitionBuckets: [{pattern: '.*', numBuckets: 2}]}"))
    code, out, err = run(capsys, "hudi-options", "rules.yaml", "--warehouse", "wh")
    assert code == 1 and out == "" and "Traceback" not in err
    assert err.startswith("rules.yaml:16:5: ") and "spec.index.partitionBuckets: per-partition bucket counts" in err


def test_bad_input_is_reported_without_traceback(specs, capsys, tmp_path):
    code, _, err = run(capsys, "hudi-options", "others.yaml", "--warehouse", "wh")
    assert code == 1 and "expected one table, found: events, raw.clicks; pick one by name (--name)" in err
    code, _, err = run(capsys, "hudi-options", "others.yaml", "--name", "nope", "--warehouse", "wh")
    assert code == 1 and "expected one table named nope" in err
    (tmp_path / "bad.yaml").write_text(_orders("SIMPLE").replace("orderingField: updated_at", "orderingField: nope"))
    code, _, err = run(capsys, "hudi-options", "bad.yaml", "--warehouse", "wh")
    assert code == 1 and "bad.yaml:" in err and "spec.orderingField" in err and "Traceback" not in err
    code, _, err = run(capsys, "hudi-options", "orders_simple.yaml")
    assert code == 1 and "no warehouse" in err
    with pytest.raises(SystemExit) as exit_:
        main(["hudi-options", "orders_simple.yaml", "--format", "yaml"])
    assert exit_.value.code == 2 and "invalid choice: 'yaml'" in capsys.readouterr().err


def test_warehouse_from_the_environment_and_project_file(specs, capsys, tmp_path, monkeypatch):
    (tmp_path / "tablespec.project.yaml").write_text("warehouse: ./from_project\n")
    _, out, _ = run(capsys, "hudi-options", "orders_simple.yaml", "--format", "json")
    assert json.loads(out)["path"] == str(tmp_path / "from_project" / "sales" / "orders")
    monkeypatch.setenv("TABLESPEC_WAREHOUSE", str(tmp_path / "from_env"))
    _, out, _ = run(capsys, "hudi-options", "orders_simple.yaml", "--format", "json")
    assert json.loads(out)["path"] == str(tmp_path / "from_env" / "sales" / "orders")


def test_options_are_the_tables_while_it_lags_its_spec(specs, capsys, tmp_path):
    """A merged spec change the table does not have yet: the options are the table's (a Hudi job with
    the spec's would fail on Config conflict), and stderr names what lags; once equal, no note."""
    from tablespec.actions.metadata import create_table
    from tablespec.hudi.io import table_location
    from tablespec.hudi.table import HudiTable
    spec = load_spec_text(_orders("BUCKET"), "t.yaml").specs[0].spec
    create_table(HudiTable.open(table_location(str(tmp_path / "wh"), spec.spec.location)), spec)
    code, out, err = run(capsys, "hudi-options", "orders_bucket.yaml", "--warehouse", str(tmp_path / "wh"))
    assert code == 0 and err == ""
    (tmp_path / "later.yaml").write_text(_orders("BUCKET").replace("numBuckets: 8", "numBuckets: 2")
                                         .replace("orderingField: updated_at", "orderingField: amount"))
    code, out, err = run(capsys, "hudi-options", "later.yaml", "--warehouse", str(tmp_path / "wh"), "--format", "json")
    options = json.loads(out)
    assert code == 0 and options["hoodie.bucket.index.num.buckets"] == "8"
    assert options["hoodie.datasource.write.precombine.field"] == "updated_at"
    assert err.startswith("note: ") and "the table lags its spec" in err and err.count("\n") == 1
    assert "hoodie.bucket.index.num.buckets=8 (spec: 2)" in err
    assert "hoodie.datasource.write.precombine.field=updated_at (spec: amount)" in err


def test_hudi_jobs_archive_with_the_specs_limits():
    def options(retention: str) -> dict[str, str]:
        spec = load_spec_text(_orders("SIMPLE") + retention, "orders.yaml").specs[0].spec
        return hudi_write_options(spec, HudiTable.open("/wh/sales/orders"))

    declared = options("  retention: {keepCommits: 1, archive: {minCommits: 2, maxCommits: 3}}\n")
    assert {k: declared[k] for k in ("hoodie.archive.automatic", "hoodie.keep.min.commits", "hoodie.keep.max.commits",
                                     "hoodie.cleaner.commits.retained", "hoodie.clean.automatic")} == {
        "hoodie.archive.automatic": "true", "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
        "hoodie.cleaner.commits.retained": "1", "hoodie.clean.automatic": "false"}
    # omitted: Hudi's 20/30, raised above a larger keepCommits as Hudi's archiver raises them
    raised = options("  retention: {keepCommits: 25}\n")
    assert (raised["hoodie.keep.min.commits"], raised["hoodie.keep.max.commits"]) == ("26", "36")


@pytest.mark.parametrize("line", ["1.2", None])
def test_record_level_on_version_9_keeps_the_metadata_table_on(tmp_path, line):
    """A Hudi 1.x job on a version 9 RECORD_LEVEL table tags through Hudi's record index in the metadata
    table (which tablespec keeps there): metadata on, the partitions tablespec does not keep off, the
    global record index enabled under 1.1+'s key, the type as hoodie.properties name it (Hudi checks)."""
    spec = load_spec_text(_orders("RECORD_LEVEL"), "orders.yaml").specs[0].spec
    options = hudi_write_options(spec, HudiTable.open(str(tmp_path / "t")), 9, line)
    assert options["hoodie.index.type"] == desired_properties(spec)["hoodie.index.type"] == "RECORD_INDEX"
    assert options["hoodie.metadata.enable"] == "true"
    assert options["hoodie.metadata.global.record.level.index.enable"] == "true"
    assert "hoodie.metadata.record.index.enable" not in options
    assert options["hoodie.metadata.index.column.stats.enable"] == "false"
    assert options["hoodie.metadata.index.partition.stats.enable"] == "false"
    assert options["hoodie.record.index.update.partition.path"] == "true"
    simple = hudi_write_options(load_spec_text(_orders("SIMPLE"), "o.yaml").specs[0].spec,
                                HudiTable.open(str(tmp_path / "t")), 9, line)
    assert simple["hoodie.metadata.enable"] == "true" and "hoodie.metadata.global.record.level.index.enable" \
        not in simple   # every 1.x job keeps the metadata table tablespec keeps on 9


def _merge_on_read(compaction: str = "") -> str:
    spec = ORDERS_SPEC.replace("  columns:", "  tableType: MERGE_ON_READ\n  columns:")
    return spec + (f"  compaction: {compaction}\n" if compaction else "")


@pytest.mark.parametrize("run_by, inline, async_", [("hudi", "true", "true"), ("tablespec", "false", "false")])
def test_merge_on_read_jobs_compact_with_the_specs_policy_or_leave_it(run_by, inline, async_):
    """runBy hudi: batch jobs compact inline, streaming ones asynchronously, by the spec's trigger and
    strategy; runBy tablespec: the jobs neither schedule nor run compactions (tablespec schedules)."""
    spec = load_spec_text(_merge_on_read(f"{{runBy: {run_by}, trigger: BOTH, deltaCommits: 2, elapsedSeconds: 30, "
                                         "strategy: BOUNDED_IO, targetIO: 2GiB}"), "o.yaml").specs[0].spec
    options = hudi_write_options(spec, HudiTable.open("/wh/sales/orders"))
    assert {k: v for k, v in options.items() if "compact" in k} == {
        "hoodie.compact.inline": inline, "hoodie.compact.schedule.inline": "false",
        "hoodie.datasource.compaction.async.enable": async_,
        "hoodie.compact.inline.trigger.strategy": "NUM_AND_TIME", "hoodie.compact.inline.max.delta.commits": "2",
        "hoodie.compact.inline.max.delta.seconds": "30", "hoodie.compaction.target.io": "2048",
        "hoodie.compaction.strategy": "org.apache.hudi.table.action.compact.strategy.BoundedIOCompactionStrategy"}
    assert options["hoodie.datasource.write.table.type"] == "MERGE_ON_READ"
    props = desired_properties(spec)   # what the writers load from hoodie.properties says the same
    assert all(props[k] == v for k, v in options.items() if k.startswith("hoodie.compaction.") or ".max.delta." in k)


def test_copy_on_write_jobs_get_no_compaction_options():
    options = hudi_write_options(load_spec_text(ORDERS_SPEC, "o.yaml").specs[0].spec, HudiTable.open("/wh/sales/orders"))
    assert not [k for k in options if "compact" in k]


@pytest.mark.parametrize("partitions, rendered", [
    ("files,bloom_filters", {"hoodie.metadata.index.bloom.filter.enable": "true"}),
    ("files,column_stats,bloom_filters", {"hoodie.metadata.index.column.stats.enable": "true",
                                          "hoodie.metadata.index.bloom.filter.enable": "true"}),
    ("files", {})])
def test_the_data_skipping_partitions_a_table_keeps_are_enabled_for_hudis_writers(tmp_path, partitions, rendered):
    """A Hudi 0.15 writer with a metadata partition off lets it go stale: hudi-options enables those the
    table has (bloom filters among them) and no other."""
    from tablespec.hudi.config import TableConfig, init_table
    from tablespec.hudi.io import LocalStorage
    from tablespec.hudi.metadata_table import PARTITIONS_KEY
    base = str(tmp_path / "t")
    init_table(LocalStorage(), base, TableConfig(name="orders", table_type="COPY_ON_WRITE", record_key_fields=["id"],
                                                 extra={PARTITIONS_KEY: partitions}))
    spec = load_spec_text(_orders("SIMPLE"), "orders.yaml").specs[0].spec
    options = hudi_write_options(spec, HudiTable.open(base))
    assert {k: v for k, v in options.items() if k.startswith("hoodie.metadata.index.")} == rendered

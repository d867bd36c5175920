"""Hudi 1.1+'s partition-level bucket index (RFC-89) on a version 9 table, both ways: Apache Hudi
1.2.0 (its own process) rescales a bucket table to per-partition counts with its
`partition_bucket_index_manager` procedure; tablespec imports it with the equivalent
`index.partitionBuckets` and plans clean, changes the counts (a new hashing config), writes with
them; Hudi 1.2.0 upserts with `hudi-options` and every key stays in the file group tablespec's
routing gives it (no duplicate keys: Hudi reads what tablespec reads)."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
from helpers import rows, tablespec_rows
from hudi_process import read_step, sql_step, write_step
from interop_support import apply_until_done, cli, save_spec
from test_hudi_tables import KEYED, SCHEMA, _table

from tablespec.hudi import partition_buckets as pb
from tablespec.hudi.hashing import bucket_ids
from tablespec.hudi.table import HudiTable
from tablespec.hudi_options import hudi_write_options
from tablespec.plan.buckets import BucketLayout

BUCKETED = {"hoodie.table.name": "pb9", **KEYED, "hoodie.metadata.enable": "false", "hoodie.index.type": "BUCKET",
            "hoodie.index.bucket.engine": "SIMPLE", "hoodie.bucket.index.num.buckets": "2",
            "hoodie.bucket.index.hash.field": "id", "hoodie.datasource.write.operation": "upsert"}
DAYS = ("2024-01-01", "2024-01-02", "2024-01-03")
FIRST = [(f"k{i}", i, DAYS[i % 3], 1) for i in range(24)]


def _routed(location) -> dict[str, tuple[str, int]]:
    """Each stored key's partition and bucket (the file group's bucket prefix), asserting one row per key."""
    table = HudiTable.open(str(location))
    out: dict[str, tuple[str, int]] = {}
    for s in table.view.latest_slices():
        if s.base_file is None:
            continue
        import pyarrow.parquet as pq
        for key in pq.read_table(s.base_file.path, columns=["_hoodie_record_key"]).column(0).to_pylist():
            assert key not in out, f"key {key} stored twice"
            out[key] = (s.partition, int(s.file_id[:8]))
    return out


def _expected_bucket(layout: BucketLayout, key: str, partition: str) -> int:
    return int(bucket_ids([pa.array([key])], layout.buckets_for(partition))[0])


def test_partition_level_buckets_round_trip_with_hudi_1_2(hudi, hudi1, tmp_path, capsys):
    location = tmp_path / "pb9"
    hudi1.process.run([
        write_step(location, BUCKETED, SCHEMA, FIRST),
        sql_step(f"CREATE TABLE pb9 USING hudi LOCATION '{location}'"),
        sql_step("CALL partition_bucket_index_manager(table => 'pb9', overwrite => '2024-01-0[12],3', bucket_number => 2, "
                 "dry_run => false, options => 'hoodie.index.type=BUCKET,hoodie.index.bucket.engine=SIMPLE,"
                 "hoodie.metadata.enable=false')")])
    hudis = sorted((location / pb.CONFIGS_FOLDER).glob("*" + pb.SUFFIX))
    assert len(hudis) == 1

    # import reads Hudi's hashing config (its regex is found anywhere in the path) and plans clean
    code, out, err = cli(capsys, "import", str(location), "--warehouse", str(tmp_path))
    assert code == 0, err
    spec_file = tmp_path / "pb9.yaml"
    spec_file.write_text(out)
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path), "--format", "json")
    assert code == 0 and [a["kind"] for t in json.loads(out)["tables"] for a in t["actions"]] == \
        ["build_metadata_table"], out + err   # Hudi wrote it without a metadata table
    from ruamel.yaml import YAML
    doc = YAML(typ="safe").load(spec_file.read_text())
    assert doc["spec"]["index"] == {"type": "BUCKET", "numBuckets": 2,
                                    "partitionBuckets": [{"pattern": ".*(?:2024-01-0[12]).*", "numBuckets": 3}]}

    # a new rule for partitions without data: a rescale of no partition (settings only), and a new
    # hashing config Hudi loads
    doc["spec"]["index"]["partitionBuckets"].insert(0, {"pattern": "2024-01-0[45]", "numBuckets": 4})
    save_spec(doc, spec_file)
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path), "--format", "json")
    [rescale] = [a for t in json.loads(out)["tables"] for a in t["actions"] if a["kind"] != "build_metadata_table"]
    assert rescale["kind"] == "bucket_rescale" and rescale["estimate"]["partitions"] == 0, out + err
    assert apply_until_done(capsys, spec_file, tmp_path) == ["build_metadata_table", "bucket_rescale"]
    configs = sorted((location / pb.CONFIGS_FOLDER).glob("*" + pb.SUFFIX))
    assert len(configs) == 2 and configs[0] == hudis[0]
    ours = pb.HashingConfig.parse(configs[1].read_bytes(), str(configs[1]))
    assert (ours.expressions, ours.default_bucket_number) == ("^(?:2024-01-0[45])$,4;^(?:.*(?:2024-01-0[12]).*)$,3", 2)

    # tablespec writes with the per-partition counts
    table = _table(hudi, doc, location)
    table.write(hudi.createDataFrame([("k0", 100, "2024-01-01", 2), ("n1", 1, "2024-01-04", 2),
                                      ("n2", 2, "2024-01-04", 2), ("n3", 3, "2024-01-05", 2)], SCHEMA))
    layout = BucketLayout.of_bucket_spec(table.spec)

    # Hudi 1.2.0 upserts with hudi-options: updates of keys in every partition, and new keys
    options = {k: v for k, v in hudi_write_options(table.spec, HudiTable.open(str(location))).items() if k != "path"}
    assert options[pb.EXPRESSIONS_KEY] == ours.expressions and options[pb.RULE_KEY] == "regex"
    options.update({"hoodie.write.table.version": "9", "hoodie.datasource.write.operation": "upsert"})
    upsert = [("k1", 101, "2024-01-02", 3), ("k2", 102, "2024-01-03", 3), ("n1", 11, "2024-01-04", 3),
              ("n3", 13, "2024-01-05", 3), ("n4", 14, "2024-01-04", 3), ("n5", 15, "2024-01-01", 3)]
    [after] = hudi1.process.run([write_step(location, options, SCHEMA, upsert), read_step(location)])[1:]

    routed = _routed(location)
    assert set(routed) == {f"k{i}" for i in range(24)} | {"n1", "n2", "n3", "n4", "n5"}
    for key, (partition, bucket) in routed.items():
        assert bucket == _expected_bucket(layout, key, partition), (key, partition)
    assert {p: layout.buckets_for(p) for p in ("2024-01-01", "2024-01-03", "2024-01-04")} == \
        {"2024-01-01": 3, "2024-01-03": 2, "2024-01-04": 4}
    ours_read = tablespec_rows(table)
    assert rows(pa.Table.from_pylist(after)) == ours_read
    values = {dict(r)["id"]: dict(r)["v"] for r in ours_read}
    assert (values["k0"], values["k1"], values["n1"], values["n3"], values["n5"]) == (100, 101, 11, 13, 15)
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path), "--format", "json")
    assert code == 0 and not [a for t in json.loads(out)["tables"] for a in t["actions"]], out + err
    assert Path(location, ".hoodie", "hoodie.properties").read_text().count("hoodie.table.version=9") == 1

    # a rescale of a partition with data: its replacecommit names the new hashing config (as Hudi's
    # rescale does); Hudi 1.2.0 then upserts into the rescaled partition by the new count
    doc["spec"]["index"]["partitionBuckets"].insert(0, {"pattern": "2024-01-03", "numBuckets": 5})
    save_spec(doc, spec_file)
    assert apply_until_done(capsys, spec_file, tmp_path) == ["bucket_rescale"]
    timeline = HudiTable.open(str(location)).timeline
    rescale = timeline.commits()[-1]
    assert rescale.action == "replacecommit"
    latest = pb.latest(HudiTable.open(str(location)).storage, str(location), HudiTable.open(str(location)).table_config)
    assert latest is not None and latest.instant == rescale.timestamp and latest.expressions.startswith("^(?:2024-01-03)$,5;")
    table = _table(hudi, doc, location)
    layout = BucketLayout.of_bucket_spec(table.spec)
    assert layout.buckets_for("2024-01-03") == 5
    [after] = hudi1.process.run([write_step(location, options, SCHEMA, [("k2", 202, "2024-01-03", 4), ("n6", 16, "2024-01-03", 4)]),
                                 read_step(location)])[1:]
    routed = _routed(location)
    for key, (partition, bucket) in routed.items():
        assert bucket == _expected_bucket(layout, key, partition), (key, partition)
    assert {b for p, b in routed.values() if p == "2024-01-03"} <= set(range(5))
    ours_read = tablespec_rows(table)
    assert rows(pa.Table.from_pylist(after)) == ours_read
    assert {dict(r)["id"]: dict(r)["v"] for r in ours_read}["k2"] == 202
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path), "--format", "json")
    assert code == 0 and not [a for t in json.loads(out)["tables"] for a in t["actions"]], out + err

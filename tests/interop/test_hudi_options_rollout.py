"""`hudi-options` during a rollout: a merged spec change (4 -> 2 buckets) is not the table yet, so
Hudi jobs restarted before or during its apply get the table's options (and a note that the table
lags its spec); after the apply they get the new ones. Apache Hudi 0.15 writes at every step and
every reader agrees."""
from __future__ import annotations

import json

import pytest
from interop_support import assert_readers_agree, cli, hudi_write

from tablespec.engine.rebucket import rebucket
from tablespec.engine.writer import table_avro_schema
from tablespec.hudi.table import HudiTable
from tablespec.hudi_options import hudi_write_options
from tablespec.spec.loader import load_spec_text
from tablespec.table import Table

SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {{name: orders}}
spec:
  location: orders
  columns:
    - {{name: id, type: string, nullable: false}}
    - {{name: v, type: int}}
    - {{name: day, type: string, nullable: false}}
  recordKey: {{fields: [id]}}
  partitioning: {{fields: [day]}}
  orderingField: v
  index: {{type: BUCKET, numBuckets: {buckets}}}
"""
SCHEMA = "id string, v int, day string"
BUCKETS = "hoodie.bucket.index.num.buckets"



def _spec(buckets: int):
    return load_spec_text(SPEC.format(buckets=buckets), "orders.yaml").specs[0].spec


def _options(capsys, spec_file, warehouse) -> tuple[dict, str]:
    code, out, err = cli(capsys, "hudi-options", spec_file, "--warehouse", str(warehouse), "--format", "json")
    assert code == 0, err
    return json.loads(out), err


def _upsert(spark, location, options, rows) -> None:
    hudi_write(spark.createDataFrame(rows, SCHEMA), location, {**options, "hoodie.datasource.write.operation": "upsert"})


def test_hudi_jobs_restarting_during_a_rescale_get_the_tables_options(hudi, tmp_path, capsys):
    spec_file, location = str(tmp_path / "orders.yaml"), str(tmp_path / "orders")
    (tmp_path / "orders.yaml").write_text(SPEC.format(buckets=4))
    code, out, err = cli(capsys, "apply", spec_file, "--warehouse", str(tmp_path), "--auto-approve")
    assert code == 0, out + err
    Table(_spec(4), location, hudi).write(hudi.createDataFrame(
        [(f"k{i}", 1, f"d{i % 2}") for i in range(8)], SCHEMA), "upsert")
    options, err = _options(capsys, spec_file, tmp_path)
    assert options[BUCKETS] == "4" and err == ""
    _upsert(hudi, location, options, [("k0", 2, "d0")])

    # merged, not applied: the spec says 2 buckets, the table has 4
    (tmp_path / "orders.yaml").write_text(SPEC.format(buckets=2))
    with pytest.raises(Exception, match="Config conflict"):  # what a job with the spec's values meets
        _upsert(hudi, location, hudi_write_options(_spec(2), HudiTable.open(location)), [("k1", 2, "d1")])
    options, err = _options(capsys, spec_file, tmp_path)
    assert options[BUCKETS] == "4"
    assert "the table lags its spec" in err and f"{BUCKETS}=4 (spec: 2)" in err
    _upsert(hudi, location, options, [("k1", 2, "d1")])
    assert_readers_agree(hudi, Table(_spec(4), location, hudi))

    # a job restarting while the rescale rewrites the data: the table is still at 4 buckets; its
    # commit into the rewritten partitions refuses the rescale on a conflict, nothing is mixed
    during: dict = {}

    def restart_job(**_):
        opts, note = _options(capsys, spec_file, tmp_path)
        during.update(buckets=opts[BUCKETS], note=note, options=opts)
        _upsert(hudi, location, opts, [("k2", 3, "d0")])

    with pytest.raises(Exception, match="(?i)conflict"):
        rebucket(hudi, _spec(2), HudiTable.open(location), None, table_avro_schema(_spec(2)), progress=restart_job)
    assert during["buckets"] == "4" and "is in flight" in during["note"] and "lags its spec" in during["note"]
    during_options = during["options"]
    rows = {dict(r)["id"]: dict(r) for r in assert_readers_agree(hudi, Table(_spec(4), location, hudi))}
    assert rows["k2"]["v"] == 3

    # the rewrite committed but hoodie.properties not switched (an apply that stopped in between):
    # no options describe the table, so hudi-options refuses and says how to finish
    rebucket(hudi, _spec(2), HudiTable.open(location), None, table_avro_schema(_spec(2)))
    code, out, err = cli(capsys, "hudi-options", spec_file, "--warehouse", str(tmp_path))
    assert code == 1 and out == "" and "Run `tablespec apply` to finish" in err and "Traceback" not in err

    code, out, err = cli(capsys, "apply", spec_file, "--warehouse", str(tmp_path), "--auto-approve")
    assert code == 0 and "bucket_rescale" in out, out + err
    with pytest.raises(Exception, match="Config conflict"):  # a job not restarted after the apply
        _upsert(hudi, location, during_options, [("k3", 9, "d1")])
    options, err = _options(capsys, spec_file, tmp_path)
    assert options[BUCKETS] == "2" and err == ""
    _upsert(hudi, location, options, [("k3", 4, "d1"), ("new", 1, "d2")])
    table = Table(_spec(2), location, hudi)
    rows = {dict(r)["id"]: dict(r) for r in assert_readers_agree(hudi, table)}
    assert len(rows) == 9 and rows["k3"]["v"] == 4 and rows["k0"]["v"] == 2 and rows["k2"]["v"] == 3
    assert {dict(r)["_hoodie_file_name"][:8] for r in rows.values()} <= {"00000000", "00000001"}
    code, out, err = cli(capsys, "plan", spec_file, "--warehouse", str(tmp_path), "--detailed-exitcode")
    assert code == 0, out + err

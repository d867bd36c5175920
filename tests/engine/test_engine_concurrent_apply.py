"""Two `tablespec apply` processes on the same tables: one proceeds per table at a time, the other
waits for the lock and then finds its plan done (or fails naming the holder); the end state is the
one a single apply leaves."""
import os
import subprocess
import sys

from _support import ROOT, SHORT_LIVED_JVM
from helpers import assert_hudi_rs_agrees, make_table

from tablespec.hudi.io import table_location
from tablespec.hudi.table import HudiTable, Location
from tablespec.plan.builder import build_plan
from tablespec.spec.loader import load_specs
from tablespec.state import observe_specs
from tablespec.table import Table

SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {{name: {name}, database: race}}
spec:
  location: race/{name}
  columns:
    - {{name: id, type: string, nullable: false}}
    - {{name: v, type: long}}
  recordKey: {{fields: [id]}}
  index: {index}
"""


def test_two_applies_serialize_per_table(spark, tmp_path):
    """On local disk: the lock's storage operations on S3 (a conditional create refused while the
    holder renews, taken over once it died) are
    test_engine_object_storage.py::test_two_processes_contend_for_the_table_lock[s3]'s."""
    warehouse = str(tmp_path / "wh")
    names = ("left", "right")
    for name in names:
        table = make_table(spark, warehouse, SPEC.format(name=name, index="{type: SIMPLE}"))
        table.write(spark.createDataFrame([(f"{name}{i}", i) for i in range(20)], "id string, v bigint"), "upsert")
    specs = []
    for name in names:
        path = tmp_path / f"{name}.yaml"
        path.write_text(SPEC.format(name=name, index="{type: BUCKET, numBuckets: 4}"))
        specs.append(str(path))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TABLESPEC_SPARK_MASTER": "local[1]", **SHORT_LIVED_JVM}
    cmd = [sys.executable, "-c", "import sys; from tablespec.cli import main; sys.exit(main())", "apply", *specs,
           "--warehouse", warehouse, "--auto-approve"]
    procs = [subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = [(p.wait(timeout=600), *p.communicate()) for p in procs]
    for code, out, err in results:   # each one applied or found its change made; or gave up naming the holder
        assert code == 0 or "is locked by owner 'tablespec apply" in err, (code, out, err)
        assert "Traceback" not in err, err
    assert any(code == 0 for code, _, _ in results), results
    loaded = load_specs(specs).specs
    assert not build_plan(loaded, observe_specs(loaded, Location.parse(warehouse)), Location.parse(warehouse)).has_changes
    for name, ls in zip(names, loaded):
        location = table_location(warehouse, f"race/{name}")
        timeline = HudiTable.open(location).timeline
        rewrites = [i for i in timeline.commits() if i.action == "replacecommit"]
        assert len(rewrites) == 1, timeline.instants   # the table was re-laid out once, not twice
        assert not [i for i in timeline.instants if i.action == "rollback"] and not timeline.pending()
        rows = assert_hudi_rs_agrees(Table(ls.spec, location, spark))
        assert sorted(dict(r)["id"] for r in rows) == sorted(f"{name}{i}" for i in range(20))

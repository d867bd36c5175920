"""Nothing depends on driver-local state: writes, record-index tagging, clustering and object
storage on a `local-cluster` (executors in separate JVMs with their own Python workers).

One cluster start serves every scenario (each module keeps its own, next to the tests it belongs
with); a cluster takes three JVMs, the costliest start of the suite."""
from __future__ import annotations

import pytest
from _support import ROOT
from helpers import run_script

pytestmark = pytest.mark.spark   # starts JVMs in a subprocess: not in the fast selection (tests/conftest.py)

SCENARIOS = {   # name: (module, function)
    "upsert": ("test_engine_tables", "upsert_on_separate_executors"),
    "record_level": ("test_engine_record_index", "record_level_writes_on_separate_executors"),
    "clustering": ("test_engine_clustering", "clustering_on_separate_executors"),
    "s3": ("test_engine_object_storage", "s3_writes_on_separate_executors"),
}


def test_scenarios_on_separate_executor_jvms(s3_bucket, tmp_path):
    warehouses = {name: (f"{s3_bucket}/wh" if name == "s3" else str(tmp_path / name)) for name in SCENARIOS}
    proc = run_script(f"""
        import importlib
        sys.path.insert(0, {str(ROOT / 'tests')!r})
        from tablespec.engine.session import get_spark
        spark = get_spark("local-cluster[2,1,1024]", {{"spark.executor.memory": "512m"}})
        for name, (module, function) in {SCENARIOS!r}.items():
            getattr(importlib.import_module(module), function)(spark, {warehouses!r}[name])
            print("PASSED", name, flush=True)
        spark.stop()
    """)
    passed = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("PASSED ")]
    assert passed == list(SCENARIOS), proc.stdout[-2000:] + proc.stderr[-3000:]

"""The fast default selection: a plain `pytest` leaves out every test that starts Spark."""
from __future__ import annotations

import os
import subprocess
import sys

from _support import ROOT


def _collected(*args: str) -> set[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return {line.strip() for line in proc.stdout.splitlines() if "::" in line}


def test_plain_pytest_deselects_spark_tests_and_full_runs_them():
    fast, full = _collected(), _collected("--full")
    assert fast < full
    spark_files = ("tests/interop/", "tests/engine/test_engine_write.py",
                   "tests/engine/test_engine_local_cluster.py")   # a JVM started in a subprocess only
    assert not [t for t in fast if t.startswith(spark_files)]
    assert [t for t in full if t.startswith("tests/engine/test_engine_local_cluster.py")]
    assert [t for t in full if t.startswith("tests/interop/")]
    assert [t for t in full if t.startswith("tests/engine/test_engine_write.py")]
    # a file with no `spark` marker whose tests ask for the session is left out too
    unmarked = "tests/engine/test_engine_index_type.py"
    assert "pytestmark" not in (ROOT / unmarked).read_text()
    with_session = f"{unmarked}::test_a_record_level_table_in_the_old_layout_plans_clean_writes_and_moves_to_the_new_keys"
    without = f"{unmarked}::test_new_tables_name_their_index_under_both_keys[SIMPLE]"
    assert with_session in full and with_session not in fast
    assert without in fast

"""The type checker CI runs (mypy, configured in pyproject.toml) catches a wrongly typed action
parameter before anything runs: the same call type-checks once the value has the right type."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.typecheck
ROOT = Path(__file__).resolve().parents[1]

ACTION = '''
from tablespec.plan.actions import BucketEstimate, BucketRescale, BucketSwitch

BucketRescale(
    params=BucketSwitch(from_="BUCKET", to="BUCKET", partitions={partitions}),
    estimate=BucketEstimate(partitions=1, file_groups="4 -> 8", bytes_to_read=10, bytes_to_write=10),
)
'''


def _mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    probe = tmp_path / "probe.py"
    probe.write_text(source)
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                           "--cache-dir", str(tmp_path / "cache"), str(probe)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def mypy_available():
    if shutil.which("mypy") is None and subprocess.run([sys.executable, "-m", "mypy", "--version"],
                                                       capture_output=True).returncode != 0:
        pytest.skip("mypy is not installed (pip install -e '.[test]')")


def test_a_wrongly_typed_action_parameter_is_a_type_error(tmp_path, mypy_available):
    wrong = _mypy(tmp_path, ACTION.format(partitions='"2026-11-01"'))   # a string where a list is declared
    assert wrong.returncode == 1 and 'Argument "partitions" to "BucketSwitch"' in wrong.stdout, wrong.stdout
    right = _mypy(tmp_path, ACTION.format(partitions='["2026-11-01"]'))
    assert right.returncode == 0, right.stdout

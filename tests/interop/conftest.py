"""The Apache Hudi tier: every test here runs real Apache Hudi in the session's SparkSession.
Engine test helpers (tests/engine) are shared with it."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))


def pytest_collection_modifyitems(items):
    for item in items:
        if "/interop/" in str(item.fspath):
            item.add_marker(pytest.mark.hudi)


HUDI_1X = "1.2.0"   # Apache Hudi 1.x, run in its own process (tests/interop/hudi_process.py)


@pytest.fixture(scope="session")
def hudi1(tmp_path_factory):
    """Apache Hudi 1.2.0 in a subprocess, and the tables it writes (each once per run): a
    `hudi_process.HudiTables`. Skipped without the bundle; under CI=true that fails instead."""
    import os

    from hudi_process import HudiProcess, HudiTables

    from tablespec.engine.hudi_bundle import HudiBundleUnavailable, bundle_jar
    try:
        jar = bundle_jar(version=HUDI_1X)
    except HudiBundleUnavailable as e:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(f"Apache Hudi {HUDI_1X} is not available: {e}")
    return HudiTables(HudiProcess(HUDI_1X, jar), tmp_path_factory.mktemp(f"hudi-{HUDI_1X}"))

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


_PROCESSES = []   # the run's Apache Hudi 1.x processes, for the summary

HUDI_1X = "1.2.0"   # Apache Hudi 1.x, run in its own process (tests/interop/hudi_process.py): table version 9
HUDI_10 = "1.0.2"   # Apache Hudi 1.0, the same way: table version 8


def _hudi_tables(version: str, tmp_path_factory):
    """Apache Hudi `version` in a worker subprocess kept for the run, and the tables it writes (each
    once per run): a `hudi_process.HudiTables`. Skipped without the bundle; under CI=true that fails instead."""
    import os

    from hudi_process import HudiProcess, HudiTables

    from tablespec.engine.hudi_bundle import HudiBundleUnavailable, bundle_jar
    try:
        jar = bundle_jar(version=version)
    except HudiBundleUnavailable as e:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(f"Apache Hudi {version} is not available: {e}")
    _PROCESSES.append(HudiProcess(version, jar))
    return HudiTables(_PROCESSES[-1], tmp_path_factory.mktemp(f"hudi-{version}"))


def pytest_terminal_summary(terminalreporter):
    """How many runs each Apache Hudi 1.x version served and how many worker processes (JVM and Hudi
    starts) they took: a start costs 10-20 s, so a rise in starts is a slower suite."""
    for process in _PROCESSES:
        terminalreporter.write_line(f"Apache Hudi {process.version}: {process.runs} runs in {process.starts} "
                                    "worker processes")


@pytest.fixture(scope="session")
def hudi1(tmp_path_factory):
    """Apache Hudi 1.2.0 (writes table version 9) in a subprocess, and the tables it writes."""
    tables = _hudi_tables(HUDI_1X, tmp_path_factory)
    yield tables
    tables.process.close()


@pytest.fixture(scope="session")
def hudi10(tmp_path_factory):
    """Apache Hudi 1.0.2 (writes table version 8) in a subprocess, and the tables it writes."""
    tables = _hudi_tables(HUDI_10, tmp_path_factory)
    yield tables
    tables.process.close()

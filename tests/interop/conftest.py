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

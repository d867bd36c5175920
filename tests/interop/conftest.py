"""The Apache Hudi tier: every test here runs real Apache Hudi in the session's SparkSession."""
import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if "/interop/" in str(item.fspath):
            item.add_marker(pytest.mark.hudi)

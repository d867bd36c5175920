"""Fixtures for every test: real Hudi tables from ../shared/fixtures (skipped when absent)."""
from __future__ import annotations

import pytest

from _support import unzip_fixture


@pytest.fixture
def real_table(tmp_path):
    """A factory: real_table(name) unzips that real table into tmp_path and returns its base dir."""
    def make(name: str):
        try:
            return unzip_fixture(name, tmp_path / "fixtures" / name)
        except FileNotFoundError:
            pytest.skip("../shared/fixtures not found")
    return make


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of the test run: 2 threads, task retries allowed (tests make tasks fail)."""
    from tablespec.engine.session import get_spark
    session = get_spark("local[2,4]", {"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "2"})
    yield session
    session.stop()

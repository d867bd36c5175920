"""Fixtures for every test: real Hudi tables from ../shared/fixtures (skipped when absent)."""
from __future__ import annotations

import os

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


def _hudi_conf() -> tuple[dict[str, str], str | None]:
    """Spark settings that load Apache Hudi (fetched with Maven on first use), or why not.
    Under CI=true Hudi is required: a missing bundle fails the run instead of skipping."""
    from tablespec.engine.hudi_bundle import HudiBundleUnavailable, bundle_jar, session_conf
    try:
        return session_conf(bundle_jar()), None
    except HudiBundleUnavailable as e:
        if os.environ.get("CI") == "true":
            raise
        return {}, str(e)


@pytest.fixture(scope="session")
def spark_session():
    """The one SparkSession of the test run: 2 threads, task retries allowed (tests make tasks fail),
    with Apache Hudi loaded beside tablespec when its bundle is available."""
    from tablespec.engine.session import get_spark
    hudi, missing = _hudi_conf()
    session = get_spark("local[2,4]", {"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "2", **hudi})
    yield session, missing
    session.stop()


@pytest.fixture(scope="session")
def spark(spark_session):
    return spark_session[0]


@pytest.fixture
def hudi(spark_session):
    """The session, for tests that run Apache Hudi in it; skipped (never under CI=true) without the bundle."""
    session, missing = spark_session
    if missing:
        pytest.skip(f"Apache Hudi is not available: {missing}")
    return session

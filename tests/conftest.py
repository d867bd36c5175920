"""Fixtures for every test: real Hudi tables from ../shared/fixtures (skipped when absent)."""
from __future__ import annotations

import os

import pytest
from _support import S3_KEY_ID, S3_SECRET, TINY_JOBS_JVM_OPTIONS, unzip_fixture

# The S3 tests' credentials are in the environment from the start, as a user's would be: Spark's
# Python workers inherit the environment of the JVM the session fixture starts, and take their
# credentials from it (the endpoint travels with each task's storage configuration).
os.environ.setdefault("AWS_ACCESS_KEY_ID", S3_KEY_ID)
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", S3_SECRET)


# --- the fast default selection -------------------------------------------------------------
# A plain `pytest` runs what needs no JVM (about a minute); naming test paths runs them whole;
# `--full` (and CI=true) runs every tier. Left out: tests that use the session's SparkSession
# (marked `spark` here, whatever their file says), the Apache Hudi tier (`hudi`, which also runs
# Hudi 1.x in processes of its own); a test that starts a JVM in a subprocess is marked `spark`.

def pytest_addoption(parser):
    parser.addoption("--full", action="store_true",
                     help="run every test tier (Spark, Apache Hudi, S3); CI=true implies it")


def _full(config) -> bool:
    return (config.getoption("--full") or os.environ.get("CI") == "true"
            or config.args_source != pytest.Config.ArgsSource.TESTPATHS)


def pytest_configure(config):
    if os.environ.get("CI") == "true" and not config.getoption("durations"):
        config.option.durations = 25  # where CI's time goes, in every CI log


_FULL_ONLY = ("spark", "hudi", "typecheck")   # tiers that start a JVM, or the type checker


@pytest.hookimpl(trylast=True)  # after the tiers' conftests mark their tests
def pytest_collection_modifyitems(config, items):
    for item in items:
        if "spark_session" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
    if _full(config):
        return
    jvm = {i for i in items if any(i.get_closest_marker(m) for m in _FULL_ONLY)}
    if jvm:
        config.hook.pytest_deselected(items=[i for i in items if i in jvm])
        items[:] = [i for i in items if i not in jvm]


def pytest_report_header(config):
    if not _full(config):
        return ("fast selection: tests that need Spark (and the Apache Hudi and S3 tiers with them) and the "
                "type checker's are deselected; `pytest --full` or naming test paths runs them")


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
    with Apache Hudi loaded beside tablespec when its bundle is available; its JVM is tuned for tiny jobs."""
    from tablespec.engine.session import DRIVER_OPTIONS, get_spark
    hudi, missing = _hudi_conf()
    java = " ".join(filter(None, [hudi.pop(DRIVER_OPTIONS, None), TINY_JOBS_JVM_OPTIONS]))
    session = get_spark("local[2,4]", {"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "2", **hudi,
                                       DRIVER_OPTIONS: java})
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


# --- object storage: a real S3 API server on loopback (moto's, `moto[server]`) ----------------

@pytest.fixture(scope="session")
def s3_server():
    """moto's S3 server in its own process on 127.0.0.1 (tests/s3server.py), for the whole run.
    Skipped when moto[server] is not installed; under CI=true that fails instead."""
    try:
        import moto.server  # noqa: F401
        import werkzeug  # noqa: F401
    except ImportError as e:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(f"the S3 test server needs moto[server] (pip install -e '.[test]'): {e}")
    from s3server import S3Server
    server = S3Server()
    yield server
    server.stop()




@pytest.fixture
def s3_bucket(s3_server, monkeypatch, request):
    """A new, empty bucket on the test server, and the standard AWS environment pointing at it
    (as a user would set it: endpoint, region, credentials). Returns `s3://BUCKET`."""
    import re
    import uuid

    import boto3
    for name, value in {"AWS_ENDPOINT_URL": s3_server.endpoint, "AWS_REGION": "us-east-1",
                        "AWS_ACCESS_KEY_ID": S3_KEY_ID, "AWS_SECRET_ACCESS_KEY": S3_SECRET}.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    bucket = f"{re.sub(r'[^a-z0-9]+', '-', request.node.name.lower())[:40].strip('-')}-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=s3_server.endpoint, region_name="us-east-1", aws_access_key_id=S3_KEY_ID,
                 aws_secret_access_key=S3_SECRET).create_bucket(Bucket=bucket)
    return f"s3://{bucket}"


@pytest.fixture(params=["local", "s3"])
def warehouse(request, tmp_path):
    """A warehouse root on local disk and on the S3 server: end-to-end tests whose behaviour is
    the same on both run twice."""
    if request.param == "local":
        return str(tmp_path / "wh")
    return request.getfixturevalue("s3_bucket") + "/wh"

"""Apache Hudi's Spark bundle beside tablespec in one SparkSession (tests, benchmarks, users' jobs).

The bundle is fetched with Maven into a cache outside any checkout (`$TABLESPEC_CACHE`, default
`~/.cache/tablespec`), never into the repository. Hudi ships bundles for Spark 3.5 (Scala 2.12);
0.15.0 writes table version 6 natively (0.15.1 is not on Maven Central), so it is the default.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tablespec.errors import TablespecError

DEFAULT_HUDI_VERSION = "0.15.0"
# Spark minor version -> the Scala build of Hudi's bundle for it.
BUNDLES = {"3.5": "2.12"}
# What Hudi's docs ask a session for: its SQL extension and catalog, and Kryo with Hudi's registrar.
SESSION_CONF = {
    "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
    "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
    "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
}


class HudiBundleUnavailable(TablespecError):
    """The bundle is not in the cache and cannot be fetched here (no Maven, no network, no bundle)."""


def hudi_version() -> str:
    return os.environ.get("TABLESPEC_HUDI_VERSION", DEFAULT_HUDI_VERSION)


def spark_minor() -> str:
    """The installed pyspark's `major.minor`, read without starting a JVM."""
    import pyspark
    return ".".join(pyspark.__version__.split(".")[:2])


def coordinate(spark: str | None = None, version: str | None = None) -> str:
    spark = spark or spark_minor()
    if spark not in BUNDLES:
        raise HudiBundleUnavailable(f"Apache Hudi ships no Spark bundle for Spark {spark} "
                                    f"(bundles exist for Spark {', '.join(sorted(BUNDLES))})")
    return f"org.apache.hudi:hudi-spark{spark}-bundle_{BUNDLES[spark]}:{version or hudi_version()}"


def cache_dir() -> Path:
    return Path(os.environ.get("TABLESPEC_CACHE") or Path.home() / ".cache" / "tablespec")


def _jar_path(coord: str, repo: Path) -> Path:
    group, artifact, version = coord.split(":")
    return repo.joinpath(*group.split("."), artifact, version, f"{artifact}-{version}.jar")


def bundle_jar(fetch: bool = True, version: str | None = None) -> Path:
    """The bundle jar of Hudi `version` (default: hudi_version()) for the installed Spark, fetched
    with `mvn dependency:get` when missing."""
    return maven_jar(coordinate(version=version), fetch)


SQLITE_JDBC = "org.xerial:sqlite-jdbc:3.46.1.3"
"""The JDBC driver Spark's Hive client reaches the embedded metastore (SQLite) through."""


def sqlite_jdbc_jar(fetch: bool = True) -> Path:
    return maven_jar(SQLITE_JDBC, fetch)


def maven_jar(coord: str, fetch: bool = True) -> Path:
    """The jar of Maven coordinate `group:artifact:version` in the cache, fetched with `mvn dependency:get` when missing."""
    repo = cache_dir() / "m2"
    jar = _jar_path(coord, repo)
    if jar.is_file():
        return jar
    if not fetch:
        raise HudiBundleUnavailable(f"{coord} is not in {repo}")
    mvn = shutil.which("mvn")
    if mvn is None:
        raise HudiBundleUnavailable(f"{coord} is not cached in {repo} and `mvn` is not on PATH to fetch it")
    cmd = [mvn, "-B", "-q", "dependency:get", f"-Dartifact={coord}", "-Dtransitive=false",
           f"-Dmaven.repo.local={repo}"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        raise HudiBundleUnavailable(f"fetching {coord} with Maven timed out") from None
    if done.returncode != 0 or not jar.is_file():
        lines = [ln for ln in (done.stdout + done.stderr).splitlines() if "ERROR" in ln][:3]
        raise HudiBundleUnavailable(f"`{' '.join(cmd)}` failed: " + (" | ".join(lines) or f"exit {done.returncode}"))
    return jar


# Hudi's BLOOM index reading the filters from the metadata table (hoodie.bloom.index.use.metadata)
# serializes a ReentrantReadWriteLock with Kryo, which Java 17 refuses unless its package is open
# (measured with Hudi 0.15: "module java.base does not opens java.util.concurrent.locks").
DRIVER_OPENS = "--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED"


def session_conf(jar: Path | str) -> dict[str, str]:
    """Spark settings that load Hudi from `jar` into a session tablespec also runs in."""
    return {"spark.jars": str(jar), **SESSION_CONF, "spark.driver.extraJavaOptions": DRIVER_OPENS}

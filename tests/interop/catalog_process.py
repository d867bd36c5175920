"""Spark with Hive support on an embedded metastore, in its own Python process.

The test session's SparkSession has no Hive support (and one per run); what a SQL user sees of a
table through the embedded metastore, and what Apache Hudi 0.15's own HiveSyncTool writes there,
run in a subprocess with a SparkSession (local[1], Hudi's bundle and sqlite-jdbc on the class path)
whose metastore is the given SQLite file.

Run as a script it is the worker: `python catalog_process.py METASTORE.db STEPS.json RESULTS.json`,
steps being {"op": "sql", "statement"} (rows as dicts) or {"op": "hive_sync", "base", "database",
"table", "partition_fields", "metastore"} (Hudi's HiveSyncTool in hms mode; into another SQLite file
where "metastore" names one, from a thread of its own: Hive keeps its metastore client per thread).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from contextlib import contextmanager
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def sql_step(statement: str) -> dict:
    return {"op": "sql", "statement": statement}


def hive_sync_step(base: str, database: str, table: str, partition_fields: list[str],
                   metastore: Path | None = None) -> dict:
    """Hudi's sync of `base`, into the process's metastore or into `metastore` (a second one, in the same start)."""
    return {"op": "hive_sync", "base": base, "database": database, "table": table,
            "partition_fields": ",".join(partition_fields), "metastore": str(metastore) if metastore else None}


def run_steps(metastore: Path, steps: list[dict], timeout: float = 600) -> list:
    """Run `steps` in one subprocess (a short-lived JVM) against `metastore`; each step's result (rows, or None)."""
    from _support import SHORT_LIVED_JVM
    with tempfile.TemporaryDirectory(prefix="catalog-process-") as tmp:
        steps_file, results_file = Path(tmp, "steps.json"), Path(tmp, "results.json")
        steps_file.write_text(json.dumps(steps))
        env = {**os.environ, "PYTHONPATH": str(ROOT), **SHORT_LIVED_JVM}
        done = subprocess.run([sys.executable, __file__, str(metastore), str(steps_file), str(results_file)],
                              capture_output=True, text=True, timeout=timeout, env=env, cwd=tmp)
        if not results_file.exists():
            raise AssertionError(f"catalog process failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
        out = json.loads(results_file.read_text())
        if "error" in out:
            raise AssertionError(f"catalog process step failed:\n{out['error']}")
        return out["results"]


@contextmanager
def standalone_metastore(db: Path, timeout: float = 120):
    """A real Hive metastore (Hive 2.3.9's `HiveMetaStore`, from pip pyspark's jars) serving Thrift on a
    free loopback port, backed by the SQLite file `db` (created empty if missing); yields its URI."""
    import socket

    import pyspark
    from _support import SHORT_LIVED_JVM

    from tablespec.catalog.metastore import EmbeddedMetastore, spark_conf
    from tablespec.engine.hudi_bundle import sqlite_jdbc_jar
    if not db.exists():
        EmbeddedMetastore(db, "test")._writer().close()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    jars = Path(pyspark.__file__).parent / "jars"
    conf = [f"{k.removeprefix('spark.hadoop.')}={v}" for k, v in spark_conf(db).items() if k.startswith("spark.hadoop.")]
    cmd = ["java", "-Dhive.async.log.enabled=false", "-cp", f"{jars}/*:{sqlite_jdbc_jar()}",
           "org.apache.hadoop.hive.metastore.HiveMetaStore", "-p", str(port),
           "--hiveconf", "hive.metastore.warehouse.dir=" + str(db.parent / "hms-warehouse"),
           *[a for c in conf for a in ("--hiveconf", c)]]
    log = open(db.parent / "metastore.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **SHORT_LIVED_JVM})
    try:
        deadline = time.monotonic() + timeout
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the standalone metastore did not start: {(db.parent / 'metastore.log').read_text()[-3000:]}")
            time.sleep(0.5)
        yield f"thrift://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def _plain(value):
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return value.hex()
    return value


def _hive_sync(spark, step: dict, metastore: Path) -> None:
    """Apache Hudi's HiveSyncTool (hms mode) of the step's table into `metastore`."""
    from tablespec.catalog.metastore import spark_conf
    jvm = spark._jvm
    props = jvm.java.util.Properties()
    for k, v in {"hoodie.datasource.hive_sync.mode": "hms",
                 "hoodie.datasource.meta.sync.base.path": step["base"],
                 "hoodie.datasource.hive_sync.database": step["database"],
                 "hoodie.datasource.hive_sync.table": step["table"],
                 "hoodie.datasource.hive_sync.partition_fields": step["partition_fields"],
                 "hoodie.datasource.hive_sync.partition_extractor_class":
                     "org.apache.hudi.hive.MultiPartKeysValueExtractor" if step["partition_fields"]
                     else "org.apache.hudi.hive.NonPartitionedExtractor"}.items():
        props.setProperty(k, v)
    conf = jvm.org.apache.hadoop.conf.Configuration(spark._jsc.hadoopConfiguration())
    for k, v in spark_conf(metastore).items():
        if k.startswith("spark.hadoop."):
            conf.set(k.removeprefix("spark.hadoop."), v)
    tool = jvm.org.apache.hudi.hive.HiveSyncTool(props, conf)
    try:
        tool.syncHoodieTable()
    finally:
        tool.close()


def _hive_sync_into(spark, step: dict, failed: list[str]) -> None:
    """`_hive_sync` into the step's own metastore; what failed, into `failed`."""
    try:
        _hive_sync(spark, step, Path(step["metastore"]))
    except Exception:
        failed.append(traceback.format_exc())


def _worker(metastore: str, steps_file: str, results_file: str) -> None:
    from pyspark.sql import SparkSession

    from tablespec.catalog.metastore import spark_conf
    from tablespec.engine.hudi_bundle import SESSION_CONF, bundle_jar, sqlite_jdbc_jar
    builder = (SparkSession.builder.master("local[1]").appName("catalog-process")
               .config("spark.driver.extraClassPath", f"{bundle_jar()}:{sqlite_jdbc_jar()}")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1")
               .config("spark.sql.warehouse.dir", str(Path(metastore).parent / "spark-warehouse")))
    for key, value in {**SESSION_CONF, **spark_conf(Path(metastore))}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    results: list = []
    try:
        for step in json.loads(Path(steps_file).read_text()):
            if step["op"] == "sql":
                results.append([_plain(r.asDict(recursive=True)) for r in spark.sql(step["statement"]).collect()])
            elif step["op"] == "hive_sync" and step.get("metastore"):
                failed: list[str] = []
                thread = threading.Thread(target=_hive_sync_into, args=(spark, step, failed))
                thread.start()   # its own JVM thread (PySpark pins one to each Python thread)
                thread.join()
                if failed:
                    raise RuntimeError(failed[0])
                results.append(None)
            elif step["op"] == "hive_sync":
                _hive_sync(spark, step, Path(metastore))
                results.append(None)
        Path(results_file).write_text(json.dumps({"results": results}))
    except Exception:
        Path(results_file).write_text(json.dumps({"error": traceback.format_exc()}))
    finally:
        spark.stop()


if __name__ == "__main__":
    _worker(*sys.argv[1:4])

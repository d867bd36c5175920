"""The SparkSession tablespec runs on: `local[*]` by default, any master by configuration."""
from __future__ import annotations

import os
from contextlib import contextmanager

DEFAULT_MASTER = "local[*]"
# Arrow transfer (mapInArrow needs it), UTC session time (Hudi stores timestamps in UTC),
# and no speculation: a write task's files must come from the attempt whose result is committed.
BASE_CONF = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.speculation": "false",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    # tablespec always hands Spark explicit file lists (the file-system view decides what to read);
    # listing them again in a parallel job costs seconds for a few thousand files.
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
    # Python workers fork from a daemon that has pyarrow and the task modules imported already.
    "spark.python.daemon.module": "tablespec.engine.worker_daemon",
}


def get_spark(master: str | None = None, conf: dict[str, str] | None = None, app_name: str = "tablespec"):
    """The active session if there is one, else a new one (master: argument > $TABLESPEC_SPARK_MASTER > local[*])."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.appName(app_name).master(master or os.environ.get("TABLESPEC_SPARK_MASTER") or DEFAULT_MASTER)
    for key, value in {**BASE_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(os.environ.get("TABLESPEC_SPARK_LOG_LEVEL", "ERROR"))
    return session


@contextmanager
def job_description(spark, text: str):
    """Label the Spark jobs run inside (Spark UI, event log: which jobs tag, write, index); the caller's label after."""
    sc = spark.sparkContext
    caller = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(text)
    try:
        yield
    finally:
        sc.setJobDescription(caller)

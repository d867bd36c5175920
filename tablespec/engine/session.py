"""The SparkSession tablespec runs on: `local[*]` by default, any master by configuration.

A session tablespec starts keeps Spark off the console: log4j (Spark, Hadoop, Hudi) and whatever
the JVM or its Python workers print go to one file per session in `$TABLESPEC_LOG_DIR` (default
`~/.cache/tablespec/logs`), so a failure reaches the user as one line that names that file.
Starting needs pyspark (the `spark` extra) and Java; either missing is one line saying what to install.
"""
from __future__ import annotations

import os
import shutil
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from tablespec.errors import TablespecError

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
LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")
KEEP_LOGS = 20  # older session logs are removed when a session starts
DRIVER_OPTIONS = "spark.driver.extraJavaOptions"
NO_PYSPARK = "this command runs Spark, and pyspark is not installed: pip install 'tablespec[spark]'"

_log_file: str | None = None


def with_log(message: str) -> str:
    """`message`, naming the full log when there is one."""
    return f"{message} (full log: {_log_file})" if _log_file else message


def require_pyspark() -> None:
    try:
        import py4j  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError:
        raise TablespecError(NO_PYSPARK) from None


def get_spark(master: str | None = None, conf: dict[str, str] | None = None, app_name: str = "tablespec"):
    """The active session if there is one, else a new one (master: argument > $TABLESPEC_SPARK_MASTER > local[*])."""
    require_pyspark()
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    conf = {**BASE_CONF, **(conf or {})}
    # a new JVM gets tablespec's logging, unless the caller configures log4j itself
    log = None
    if (SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ
            and "log4j2.configurationFile" not in conf.get(DRIVER_OPTIONS, "")):
        log = _new_log_file()
        conf[DRIVER_OPTIONS] = " ".join(filter(None, [conf.get(DRIVER_OPTIONS), *_java_options(log)]))
    builder = SparkSession.builder.appName(app_name).master(master or os.environ.get("TABLESPEC_SPARK_MASTER") or DEFAULT_MASTER)
    for key, value in conf.items():
        builder = builder.config(key, value)
    global _log_file
    with _stderr_to(log):
        try:
            session = builder.getOrCreate()
        except Exception as e:
            if getattr(e, "getErrorClass", lambda: None)() == "JAVA_GATEWAY_EXITED":
                _log_file = log or _log_file
                raise TablespecError(with_log(f"cannot start Spark: {_java_problem()}")) from None
            raise
    if log:
        _log_file = log
    elif not _log_file:  # someone else's logging: at least keep Spark's INFO/WARN off the console
        session.sparkContext.setLogLevel(os.environ.get("TABLESPEC_SPARK_LOG_LEVEL", "ERROR"))
    return session


def _java_options(log: str) -> list[str]:
    options = [f"-Dlog4j2.configurationFile={LOG4J_CONFIG}", f"-Dtablespec.log.file={log}"]
    if os.environ.get("TABLESPEC_SPARK_LOG_LEVEL"):
        options.append(f"-Dtablespec.log.level={os.environ['TABLESPEC_SPARK_LOG_LEVEL']}")
    return [f'"{o}"' if any(c.isspace() for c in o) else o for o in options]  # Spark splits on blanks


def _new_log_file() -> str:
    """A new log file for this session; the oldest logs beyond KEEP_LOGS are removed."""
    from tablespec.engine.hudi_bundle import cache_dir
    folder = Path(os.environ.get("TABLESPEC_LOG_DIR") or cache_dir() / "logs")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TablespecError(f"cannot create the log folder {folder} ($TABLESPEC_LOG_DIR): {e.strerror}") from None
    logs = sorted(folder.glob("tablespec-spark-*.log"))  # by name: by start time; only the logs tablespec made
    for old in logs[:max(0, len(logs) - KEEP_LOGS + 1)]:
        old.unlink(missing_ok=True)
    return str(folder / f"tablespec-spark-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log")


@contextmanager
def _stderr_to(path: str | None):
    """File descriptor 2 points at `path` while the JVM starts, so the JVM (and the Python workers
    it forks) inherit it: the launcher's and JVM's own messages land in the log, not the terminal."""
    if path is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(target, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(target)


def _java_problem() -> str:
    """Why the JVM did not start, as far as it can be told without it."""
    need = "Spark actions need Java 17: install it and set JAVA_HOME (or put java on PATH)"
    home = os.environ.get("JAVA_HOME")
    if home and not os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return f"JAVA_HOME={home} has no bin/java; {need}"
    if not home and shutil.which("java") is None:
        return f"no Java found (JAVA_HOME is not set and java is not on PATH); {need}"
    return f"Java exited before Spark started; {need}"


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

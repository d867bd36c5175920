"""Another Apache Hudi version in its own Python process (one JVM holds one Hudi bundle).

The test session's SparkSession holds Hudi 0.15; tables written or read by another version (1.x)
go through `HudiProcess`: a worker subprocess per version, started on the first `run` and kept for
the test run, with a SparkSession (local[1]) on that version's bundle. Each `run` sends it a list of
steps (write a batch, read a table, run SQL) over its stdin and gets the results back on its stdout;
the steps run in a fresh session (`newSession`: its own SQL settings) and the run's catalog tables
and cached data are dropped after it, so a run sees what a new process would, without the 10-20 s
of a JVM and Hudi start. A run in which a step failed ends the worker (a failed Hudi write may leave
its threads and locks behind); the next run starts a new one, as after a crash.
`HudiTables` keeps the tables a version writes for the whole test run: each distinct table is
written once (all missing ones in one run) and every test gets its own copy.

Run as a script it is the worker: `python hudi_process.py JAR`, one JSON job a line on stdin, one
JSON answer a line on stdout.
"""
from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


# --- steps (plain dicts: they travel to the worker as JSON) -----------------------------------

def write_step(path, options: dict[str, str], schema: str, rows: list, mode: str = "append") -> dict:
    """Write `rows` (tuples in the order of `schema`, a Spark DDL string) with Hudi's datasource."""
    return {"op": "write", "path": str(path), "options": dict(options), "schema": schema,
            "rows": [list(r) for r in rows], "mode": mode}


def read_step(path, where: str | None = None, **options: str) -> dict:
    """Read the table as a snapshot query (`options`: more read options, e.g. `as.of.instant`;
    `where`: a filter Spark pushes into Hudi's read, where data skipping prunes files): its rows as
    dicts (meta columns included)."""
    return {"op": "read", "path": str(path), "options": options, **({"where": where} if where else {})}


def column_stats_step(path, files: list[tuple[str, str]], column: str) -> dict:
    """Hudi's own lookup of `column`'s statistics of `files` ((partition, file name) pairs) in the
    metadata table's column_stats (HoodieTableMetadata.getColumnStats): "partition/file" ->
    [min, max, null count, value count] as strings."""
    return {"op": "column_stats", "path": str(path), "files": [list(f) for f in files], "column": column}


def bloom_filter_step(path, files: list[tuple[str, str]], keys: list[str]) -> dict:
    """Hudi's own lookup of `files`' bloom filters in the metadata table (`bloom_filter_lookup`)."""
    return {"op": "bloom_filters", "path": str(path), "files": [list(f) for f in files], "keys": list(keys)}


def record_index_step(path, keys: list[str]) -> dict:
    """Hudi 1.x's own lookup of `keys` in the table's record index
    (HoodieBackedTableMetadata.readRecordIndexLocationsWithKeys): key -> [partition, file id, instant]."""
    return {"op": "record_index", "path": str(path), "keys": list(keys)}


def secondary_index_step(path, partition: str, values: list[str]) -> dict:
    """Hudi 1.x's own lookup of `values` through the secondary index `partition`
    (HoodieBackedTableMetadata.readSecondaryIndexDataTableRecordKeysWithKeys): value -> record keys."""
    return {"op": "secondary_index", "path": str(path), "partition": partition, "values": list(values)}


def sql_step(statement: str) -> dict:
    """Run Spark SQL (Hudi's extension loaded); the result rows as dicts."""
    return {"op": "sql", "statement": statement}


def failing(step: dict) -> dict:
    """`step`, expected to fail: its result is Hudi's error message (None if it did not fail), and the
    steps after it still run."""
    return {**step, "may_fail": True}


# --- the parent side -------------------------------------------------------------------------

class HudiProcessError(AssertionError):
    """A step failed in the Hudi process (its Java/Python error in the message)."""


class HudiProcess:
    """Apache Hudi `version`, run in a worker subprocess whose SparkSession loads `jar`."""

    def __init__(self, version: str, jar: Path, timeout: float = 900):
        self.version, self.jar, self.timeout = version, jar, timeout
        self.runs = self.starts = 0   # runs, and workers started for them (each a JVM and Hudi start)
        self._worker: subprocess.Popen | None = None
        self._home: tempfile.TemporaryDirectory | None = None

    def run(self, steps: list[dict]) -> list:
        """Run `steps` in order in one fresh session; each step's result (rows for reads and SQL, None for writes)."""
        worker = self._worker if self._worker and self._worker.poll() is None else self._start()
        self.runs += 1
        log = Path(self._home.name, "stderr.log")
        seen = log.stat().st_size
        try:
            worker.stdin.write(json.dumps({"steps": steps}) + "\n")
            worker.stdin.flush()
            ready, _, _ = select.select([worker.stdout], [], [], self.timeout)
            answer = json.loads(worker.stdout.readline() or "null") if ready else None
        except (BrokenPipeError, ValueError):
            answer = None
        if answer is None:   # gone or hung
            worker.kill()
            with open(log, errors="replace") as f:
                f.seek(seen)
                answer = {"error": f"worker died or timed out: {f.read()[-3000:]}", "last": True}
        if answer["last"]:   # the next run starts a new worker
            self.close()
        if "error" in answer:
            raise HudiProcessError(f"Apache Hudi {self.version}: {answer['error']}")
        return answer["results"]

    def _start(self) -> subprocess.Popen:
        from _support import SHORT_LIVED_JVM  # the flags for tiny jobs, on a JVM kept for the run too
        self.close()
        self._home = tempfile.TemporaryDirectory(prefix="hudi-process-")
        paths = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        env = {**os.environ, **SHORT_LIVED_JVM, "TABLESPEC_HUDI_VERSION": self.version,
               "PYTHONPATH": os.pathsep.join([str(ROOT), *paths])}
        with open(Path(self._home.name, "stderr.log"), "w") as log:
            self._worker = subprocess.Popen([sys.executable, __file__, str(self.jar)], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=log, text=True, env=env,
                                            cwd=self._home.name)
        self.starts += 1
        return self._worker

    def close(self) -> None:
        """End the worker (it ends by itself when its stdin closes) and remove its folder."""
        if self._worker is not None:
            try:
                self._worker.stdin.close()
            except BrokenPipeError:   # it is gone already
                pass
            try:
                self._worker.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._worker.kill()
                self._worker.wait()
            self._worker.stdout.close()
            self._worker = None
        if self._home is not None:
            self._home.cleanup()
            self._home = None

    def write(self, path, options: dict[str, str], schema: str, rows: list, mode: str = "append") -> None:
        self.run([write_step(path, options, schema, rows, mode)])

    def read(self, path) -> list[dict]:
        return self.run([read_step(path)])[0]


@dataclass(frozen=True)
class Batch:
    """One write of a table's recipe (hashable: recipes are cache keys)."""
    options: tuple[tuple[str, str], ...]
    schema: str
    rows: tuple[tuple, ...]
    mode: str = "append"

    @classmethod
    def of(cls, options: dict[str, str], schema: str, rows: list, mode: str = "append") -> Batch:
        return cls(tuple(sorted(options.items())), schema, tuple(tuple(r) for r in rows), mode)


@dataclass
class HudiTables:
    """Tables `process` writes, each recipe (a tuple of batches) once per test run, kept under `root`."""
    process: HudiProcess
    root: Path
    _written: dict = field(default_factory=dict)   # recipe -> (pristine path, rows as Hudi read them)

    def prepare(self, *recipes: tuple[Batch, ...]) -> None:
        """Write every recipe not written yet, all in one process, each read back after its batches."""
        missing = [r for r in dict.fromkeys(recipes) if r not in self._written]
        if not missing:
            return
        steps, paths = [], []
        for recipe in missing:
            path = self.root / f"t{len(self._written) + len(paths)}"
            paths.append(path)
            steps += [write_step(path, dict(b.options), b.schema, list(b.rows), b.mode) for b in recipe]
            steps.append(read_step(path))
        reads = [r for r, s in zip(self.process.run(steps), steps) if s["op"] == "read"]
        self._written.update({recipe: (path, rows) for recipe, path, rows in zip(missing, paths, reads)})

    def copy(self, recipe: tuple[Batch, ...], dest) -> tuple[Path, list[dict]]:
        """A copy of the recipe's table at `dest` (written first if needed), and its rows as Hudi read them."""
        self.prepare(recipe)
        path, rows = self._written[recipe]
        shutil.copytree(path, dest)
        return Path(dest), rows


# --- the worker ------------------------------------------------------------------------------

def _session(jar: str):
    from pyspark.sql import SparkSession

    from tablespec.engine.hudi_bundle import session_conf
    builder = SparkSession.builder.master("local[1]").appName("hudi-process")
    conf = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "1",
            "spark.default.parallelism": "1", "spark.sql.session.timeZone": "UTC", **session_conf(jar)}
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _rows(df) -> list[dict]:
    """Rows as JSON-able dicts (values JSON cannot hold, such as timestamps, as their str)."""
    return json.loads(json.dumps([r.asDict(recursive=True) for r in df.collect()], default=str))


def _step(spark, step: dict):
    if step.get("may_fail"):
        try:
            _step(spark, {k: v for k, v in step.items() if k != "may_fail"})
        except Exception as e:  # noqa: BLE001 - the failure is the result
            return str(e)
        return None
    if step["op"] == "write":
        df = spark.createDataFrame([tuple(r) for r in step["rows"]], step["schema"])
        df.write.format("hudi").options(**step["options"]).mode(step["mode"]).save(step["path"])
        return None
    if step["op"] == "read":
        reader = spark.read.format("hudi").option("hoodie.datasource.query.type", "snapshot")
        df = reader.options(**step.get("options", {})).load(step["path"])
        return _rows(df.where(step["where"]) if step.get("where") else df)
    if step["op"] == "sql":
        return _rows(spark.sql(step["statement"]))
    if step["op"] == "record_index":
        return _record_index(spark, step["path"], step["keys"])
    if step["op"] == "secondary_index":
        return _secondary_index(spark, step["path"], step["partition"], step["values"])
    if step["op"] == "column_stats":
        return column_stats_lookup(spark, step["path"], step["files"], step["column"])
    if step["op"] == "bloom_filters":
        return bloom_filter_lookup(spark, step["path"], step["files"], step["keys"])
    raise ValueError(f"unknown step {step['op']!r}")


def _table_metadata(spark, base: str, record_index: bool = False):
    """Hudi's reader of the table's metadata table (`record_index`: with its global record index on)."""
    jsc = spark._jsc
    hudi = spark._jvm.org.apache.hudi
    context = hudi.client.common.HoodieSparkEngineContext(jsc)
    storage = hudi.storage.HoodieStorageUtils.getStorage(
        base, hudi.storage.hadoop.HadoopStorageConfiguration(jsc.hadoopConfiguration()))
    config = hudi.common.config.HoodieMetadataConfig.newBuilder().enable(True)
    if record_index:
        config = config.withEnableGlobalRecordLevelIndex(True)
    return hudi.metadata.HoodieBackedTableMetadata(context, storage, config.build(), base)


def _record_index(spark, base: str, keys: list[str]) -> dict:
    """Hudi 1.x's record-index lookup, run as a Spark job over the keys."""
    jvm, jsc = spark._jvm, spark._jsc
    metadata = _table_metadata(spark, base, record_index=True)
    try:
        wanted = jvm.org.apache.hudi.data.HoodieJavaRDD.of(jsc.parallelize(jvm.java.util.ArrayList(keys), 1))
        found = metadata.readRecordIndexLocationsWithKeys(wanted).collectAsList()
        return {p.getKey(): [p.getValue().getPartitionPath(), p.getValue().getFileId(), p.getValue().getInstantTime()]
                for p in found}
    finally:
        metadata.close()


def _secondary_index(spark, base: str, partition: str, values: list[str]) -> dict:
    """Hudi 1.x's lookup of values through a secondary index, run as a Spark job over the values."""
    jvm, jsc = spark._jvm, spark._jsc
    metadata = _table_metadata(spark, base)
    try:
        wanted = jvm.org.apache.hudi.data.HoodieJavaRDD.of(jsc.parallelize(jvm.java.util.ArrayList(values), 1))
        found: dict[str, list[str]] = {}
        for pair in metadata.readSecondaryIndexDataTableRecordKeysWithKeys(wanted, partition).collectAsList():
            found.setdefault(pair.getKey(), []).append(pair.getValue())
        return {value: sorted(keys) for value, keys in sorted(found.items())}
    finally:
        metadata.close()


def bloom_filter_lookup(spark, base: str, files: list, keys: list[str]) -> dict:
    """Hudi's lookup of (partition, file name) pairs in the metadata table's bloom_filters
    (HoodieTableMetadata.getBloomFilters): "partition/file" -> those of `keys` its filter may hold;
    a file without a live filter there is left out."""
    jvm = spark._jvm
    hudi = jvm.org.apache.hudi
    metadata = _table_metadata(spark, base)
    try:
        pairs = jvm.java.util.ArrayList([hudi.common.util.collection.Pair.of(p, f) for p, f in files])
        try:
            found = metadata.getBloomFilters(pairs)
        except Exception:  # noqa: BLE001 - Hudi 1.x names the metadata partition to read
            found = metadata.getBloomFilters(pairs, "bloom_filters")
        return {f"{e.getKey().getLeft()}/{e.getKey().getRight()}": [k for k in keys if e.getValue().mightContain(k)]
                for e in found.entrySet().toArray()}
    finally:
        metadata.close()


def column_stats_lookup(spark, base: str, files: list, column: str) -> dict:
    """Hudi's column-stats lookup of (partition, file name) pairs for one column."""
    jvm = spark._jvm
    hudi = jvm.org.apache.hudi
    metadata = _table_metadata(spark, base)
    try:
        pairs = jvm.java.util.ArrayList([hudi.common.util.collection.Pair.of(p, f) for p, f in files])
        found = metadata.getColumnStats(pairs, column)
        out = {}
        for entry in found.entrySet().toArray():
            stats = entry.getValue()
            value = [stats.getMinValue(), stats.getMaxValue()]
            out[f"{entry.getKey().getLeft()}/{entry.getKey().getRight()}"] = [
                None if v is None else str(v.get(0)) for v in value] + [stats.getNullCount(), stats.getValueCount()]
        return out
    finally:
        metadata.close()


def _fresh_session(root):
    """A new session on the worker's JVM (its own SQL settings, temporary views and session catalog), made
    the active and default one, as Hudi looks the session up."""
    spark = root.newSession()
    jvm_session = spark._jvm.org.apache.spark.sql.SparkSession
    jvm_session.setActiveSession(spark._jsparkSession)
    jvm_session.setDefaultSession(spark._jsparkSession)
    return spark


def _forget(spark) -> None:
    """Drop what a run leaves in the state sessions share: catalog tables (each test's tables are
    external: their files stay) and databases, and cached data."""
    catalog = spark._jsparkSession.sharedState().externalCatalog()
    as_list = spark._jvm.scala.collection.JavaConverters.seqAsJavaList
    for db in as_list(catalog.listDatabases()):
        for table in as_list(catalog.listTables(db)):
            catalog.dropTable(db, table, True, False)
        if db != "default":
            catalog.dropDatabase(db, True, True)
    spark.catalog.clearCache()


def _run(spark, steps: list[dict]) -> dict:
    """The answer to one job: the results, or the error; `last` if a step failed (the worker then ends)."""
    results = []
    try:
        for step in steps:
            results.append(_step(spark, step))
    except Exception:  # noqa: BLE001 - reported to the parent with Hudi's own message
        trace = traceback.format_exc()   # Java's message heads a Py4J error; its causes end it
        trace = trace if len(trace) <= 6000 else f"{trace[:3000]}\n...\n{trace[-3000:]}"
        return {"error": f"step {len(results)}: {trace}", "last": True}
    failed = any(s.get("may_fail") and r is not None for s, r in zip(steps, results))
    return {"results": results, "last": failed}


def main(jar: str) -> int:
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)   # the JVM's and Spark's own output goes to stderr: stdout carries the answers alone
    root = None
    for line in sys.stdin:
        try:
            root = root or _session(jar)
            spark = _fresh_session(root)
        except Exception:  # noqa: BLE001 - no session: this worker ends
            answer = {"error": traceback.format_exc()[-6000:], "last": True}
        else:
            answer = _run(spark, json.loads(line)["steps"])
            try:
                _forget(spark)
            except Exception:  # noqa: BLE001 - not reset: the next run gets a new worker
                answer["last"] = True
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
        if answer["last"]:
            break
    if root is not None:
        root.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

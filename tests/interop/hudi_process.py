"""Another Apache Hudi version in its own Python process (one JVM holds one Hudi bundle).

The test session's SparkSession holds Hudi 0.15; tables written or read by another version (1.x)
go through `HudiProcess`: one subprocess per `run`, with its own SparkSession (local[1]) on that
version's bundle, running a list of steps (write a batch, read a table, run SQL) in order. Each
process costs 10-20 s, so callers put every step they can into one `run`.
`HudiTables` keeps the tables a version writes for the whole test run: each distinct table is
written once (all missing ones in one process) and every test gets its own copy.

Run as a script it is the worker: `python hudi_process.py STEPS.json RESULTS.json`.
"""
from __future__ import annotations

import json
import os
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


def record_index_step(path, keys: list[str]) -> dict:
    """Hudi 1.x's own lookup of `keys` in the table's record index
    (HoodieBackedTableMetadata.readRecordIndexLocationsWithKeys): key -> [partition, file id, instant]."""
    return {"op": "record_index", "path": str(path), "keys": list(keys)}


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


@dataclass(frozen=True)
class HudiProcess:
    """Apache Hudi `version`, run in a subprocess whose SparkSession loads `jar`."""
    version: str
    jar: Path
    timeout: float = 900

    def run(self, steps: list[dict]) -> list:
        """Run `steps` in order in one process; each step's result (rows for reads and SQL, None for writes)."""
        with tempfile.TemporaryDirectory(prefix="hudi-process-") as tmp:
            todo, done = Path(tmp, "steps.json"), Path(tmp, "results.json")
            todo.write_text(json.dumps({"jar": str(self.jar), "steps": steps}))
            env = {**os.environ, "TABLESPEC_HUDI_VERSION": self.version,
                   "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
            proc = subprocess.run([sys.executable, __file__, str(todo), str(done)], env=env, capture_output=True,
                                  text=True, timeout=self.timeout)
            result = json.loads(done.read_text()) if done.exists() else None
        if result is None or "error" in result:
            detail = result["error"] if result else proc.stderr[-3000:]
            raise HudiProcessError(f"Apache Hudi {self.version} (exit {proc.returncode}): {detail}")
        return result["results"]

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
    if step["op"] == "column_stats":
        return column_stats_lookup(spark, step["path"], step["files"], step["column"])
    raise ValueError(f"unknown step {step['op']!r}")


def _record_index(spark, base: str, keys: list[str]) -> dict:
    """Hudi 1.x's record-index lookup, run as a Spark job over the keys."""
    jvm, jsc = spark._jvm, spark._jsc
    hudi = jvm.org.apache.hudi
    context = hudi.client.common.HoodieSparkEngineContext(jsc)
    storage = hudi.storage.HoodieStorageUtils.getStorage(
        base, hudi.storage.hadoop.HadoopStorageConfiguration(jsc.hadoopConfiguration()))
    config = hudi.common.config.HoodieMetadataConfig.newBuilder().enable(True).withEnableGlobalRecordLevelIndex(True)
    metadata = hudi.metadata.HoodieBackedTableMetadata(context, storage, config.build(), base)
    try:
        wanted = hudi.data.HoodieJavaRDD.of(jsc.parallelize(jvm.java.util.ArrayList(keys), 1))
        found = metadata.readRecordIndexLocationsWithKeys(wanted).collectAsList()
        return {p.getKey(): [p.getValue().getPartitionPath(), p.getValue().getFileId(), p.getValue().getInstantTime()]
                for p in found}
    finally:
        metadata.close()


def column_stats_lookup(spark, base: str, files: list, column: str) -> dict:
    """Hudi's column-stats lookup of (partition, file name) pairs for one column."""
    jvm, jsc = spark._jvm, spark._jsc
    hudi = jvm.org.apache.hudi
    context = hudi.client.common.HoodieSparkEngineContext(jsc)
    storage = hudi.storage.HoodieStorageUtils.getStorage(
        base, hudi.storage.hadoop.HadoopStorageConfiguration(jsc.hadoopConfiguration()))
    config = hudi.common.config.HoodieMetadataConfig.newBuilder().enable(True).build()
    metadata = hudi.metadata.HoodieBackedTableMetadata(context, storage, config, base)
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


def main(todo: str, done: str) -> int:
    job = json.loads(Path(todo).read_text())
    results = []
    try:
        spark = _session(job["jar"])
        for step in job["steps"]:
            results.append(_step(spark, step))
    except Exception:  # noqa: BLE001 - reported to the parent with Hudi's own message
        trace = traceback.format_exc()   # Java's message heads a Py4J error; its causes end it
        trace = trace if len(trace) <= 6000 else f"{trace[:3000]}\n...\n{trace[-3000:]}"
        Path(done).write_text(json.dumps({"error": f"step {len(results)}: {trace}"}))
        return 1
    Path(done).write_text(json.dumps({"results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))

"""Commands that run Spark fail in one line each, naming the full log, never with Java or Python
stacks: bad data, an input format that does not match, no pyspark, no Java. Each case runs the
CLI in a fresh interpreter (what a user's terminal sees, the JVM's own output included), several
commands per interpreter to start Spark once."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from _support import ROOT

from tablespec.cli import main as cli
from tablespec.hudi.config import read_table_config, table_index_type
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.timeline.active import Timeline

pytestmark = pytest.mark.spark  # a JVM starts (in a subprocess)

SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: readings}
spec:
  location: readings
  columns:
    - {name: id, type: string, nullable: false}
    - {name: v, type: int}
    - {name: p, type: string}
  recordKey: {fields: [id]}
  partitioning: {fields: [p]}
"""
# Runs `tablespec ARGV` once per argument list, in one interpreter; after each, a line "@@ rc" on stderr.
RUNNER = """
import json, os, sys
from tablespec.cli import main
for step in json.loads(sys.argv[1]):
    for k, v in step.get("env", {}).items():
        os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    if step.get("unblock"):
        sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "Block"]
    rc = main(step["argv"])
    sys.stdout.flush(); sys.stderr.write(f"@@ {rc}\\n"); sys.stderr.flush()
"""
BLOCK = """
import sys
class Block:  # pyspark and py4j are not installed, as far as this interpreter can tell
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pyspark", "py4j"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "readings.yaml").write_text(SPEC)
    assert cli(["apply", str(tmp_path / "readings.yaml"), "--warehouse", str(tmp_path / "wh"), "--auto-approve"]) == 0
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_steps(project, steps, prelude: str = "") -> list[tuple[int, list[str]]]:
    """(exit code, stderr lines) of each step."""
    import json
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TABLESPEC_LOG_DIR": str(project / "logs")}
    env.pop("TABLESPEC_WAREHOUSE", None)
    proc = subprocess.run([sys.executable, "-c", prelude + RUNNER, json.dumps(steps)], cwd=project, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    results, lines = [], []
    for line in proc.stderr.splitlines():
        if line.startswith("@@ "):
            results.append((int(line[3:]), lines))
            lines = []
        else:
            lines.append(line)
    assert len(results) == len(steps), proc.stderr
    return results


def commits(project) -> int:
    return len(Timeline.load(LocalStorage(), str(project / "wh" / "readings")).commits())


def test_ingest_errors_are_one_line_naming_the_log(project):
    (project / "bad.csv").write_text("p,v,id\nday1,1,a\nday2,abc,b\n")
    (project / "good.csv").write_text("p,v,id\nday1,7,keyA\n")
    (project / "good.txt").write_text("p,v,id\nday1,7,keyA\n")
    ingest = ["ingest", "readings.yaml", "--warehouse", "wh", "--input"]
    (bad, bad_err), (good, good_err), (txt, txt_err), (parquet, parquet_err) = run_steps(project, [
        {"argv": ingest + ["bad.csv"]},                               # starts Spark; a task fails on "abc"
        {"argv": ingest + ["good.csv"]},                              # csv, from the name
        {"argv": ingest + ["good.txt"]},                              # no format to infer
        {"argv": ingest + ["good.csv", "--input-format", "parquet"]},  # the format given does not match
    ])
    assert bad == 1 and len(bad_err) == 2, bad_err
    assert bad_err[0] == "bad.csv: reading csv (from the file name; --input-format overrides)"
    assert bad_err[1].startswith(f"error: {project}/bad.csv: column 'v': cannot parse 'abc' as int; "
                                 "nothing was committed (full log: "), bad_err
    log = bad_err[1].split("(full log: ")[1].rstrip(")")
    assert log.startswith(str(project / "logs"))
    # what used to reach the terminal is in the log: Spark's task failure and the JVM's own messages
    text = open(log, encoding="utf-8").read()
    assert "NumberFormatException" in text and "Python worker exited unexpectedly" in text

    assert good == 0 and good_err == ["good.csv: reading csv (from the file name; --input-format overrides)"]
    assert txt == 1 and txt_err == ["error: good.txt: cannot tell the input format from the file name (known: .csv, "
                                    ".json, .jsonl, .ndjson, .parquet); pass --input-format parquet|csv|json"]
    assert parquet == 1 and len(parquet_err) == 1 and "CANNOT_READ_FILE_FOOTER" in parquet_err[0], parquet_err
    assert parquet_err[0].endswith(f"nothing was committed (full log: {log})")
    assert commits(project) == 1  # only the good file's


def test_without_pyspark_or_java_spark_commands_say_what_to_install(project):
    """`ingest`, and `apply` of an action that runs Spark (here an index migration), with no
    pyspark importable, then with JAVA_HOME an empty folder, then with no JAVA_HOME and no java on PATH."""
    (project / "in.csv").write_text("p,v,id\nday1,7,keyA\n")
    (project / "rli.yaml").write_text(SPEC.replace("  recordKey:", "  index: {type: RECORD_LEVEL}\n  recordKey:"))
    (project / "empty-jdk").mkdir()
    nojava = project / "bin"  # every program on PATH but java
    nojava.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        for name in os.listdir(folder) if os.path.isdir(folder) else []:
            if name != "java" and not (nojava / name).exists() and os.access(os.path.join(folder, name), os.X_OK):
                (nojava / name).symlink_to(os.path.join(folder, name))
    assert shutil.which("java", path=str(nojava)) is None
    ingest = {"argv": ["ingest", "readings.yaml", "--warehouse", "wh", "--input", "in.csv", "--input-format", "csv"]}
    apply = {"argv": ["apply", "rli.yaml", "--warehouse", "wh", "--auto-approve"]}
    results = run_steps(project, [
        ingest, apply,
        {**ingest, "unblock": True, "env": {"JAVA_HOME": str(project / "empty-jdk")}}, apply,
        {**ingest, "env": {"JAVA_HOME": None, "PATH": str(nojava)}},
    ], prelude=BLOCK)
    install = "error: this command runs Spark, and pyspark is not installed: pip install 'tablespec[spark]'"
    assert [r[0] for r in results] == [1] * 5
    assert results[0][1] == [install] and results[1][1] == [install]
    java = ("error: cannot start Spark: JAVA_HOME={} has no bin/java; Spark actions need Java 17: install it and "
            "set JAVA_HOME (or put java on PATH) (full log: ").format(project / "empty-jdk")
    assert len(results[2][1]) == 1 and results[2][1][0].startswith(java), results[2][1]
    assert len(results[3][1]) == 1 and results[3][1][0].startswith(java), results[3][1]
    assert len(results[4][1]) == 1 and results[4][1][0].startswith(
        "error: cannot start Spark: no Java found (JAVA_HOME is not set and java is not on PATH); Spark actions need Java 17"), \
        results[4][1]
    assert commits(project) == 0  # nothing written, the index not migrated
    assert table_index_type(read_table_config(LocalStorage(), str(project / "wh" / "readings"))) == "SIMPLE"

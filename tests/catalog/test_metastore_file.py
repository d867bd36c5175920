"""The embedded metastore's file: a first creation cut short by kill -9 (or left half-made by a tablespec
whose creation was not one transaction) is created again while it holds nothing, one holding rows is
refused naming it and left as it is, and a project folder named with `#`, `?` or `%` holds its own
metastore (issue 34)."""
from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from _support import ROOT, scratch_project
from _support import cli as run
from test_catalog import SPEC

from tablespec.catalog import EmbeddedMetastore
from tablespec.catalog.metastore import schema_statements, schema_tables, spark_conf


def project_at(root: Path, monkeypatch) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    return scratch_project(root, monkeypatch, {n: SPEC.format(name=n) for n in ("orders", "returns")},
                           "warehouse: lake\ncatalog: hive\n")


def registered(project: Path) -> list[str]:
    return sorted(EmbeddedMetastore(project / ".tablespec" / "metastore.db", "t").tables("sales"))


def plan_apply_plan(capsys) -> None:
    code, out, err = run(capsys, "plan", "specs")
    assert code == 0 and out.count("~ catalog_sync") == 2, out + err
    code, out, err = run(capsys, "apply", "specs", "--auto-approve")
    assert code == 0, out + err
    assert run(capsys, "plan", "specs")[1].startswith("No changes.")


def half_made(db: Path, tables: int) -> None:
    """What a kill left before creation was one transaction: the script's statements up to its
    `tables`-th table, each committed on its own."""
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    made = 0
    for statement in schema_statements():
        if re.search(r"^CREATE TABLE", statement, re.M):
            if made == tables:
                break
            made += 1
        conn.execute(statement)
    conn.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_kill_during_the_first_sync_then_plan_and_apply_work(tmp_path, monkeypatch, capsys):
    project = project_at(tmp_path / "p", monkeypatch)
    env = {**os.environ, "TABLESPEC_CRASH_AT": "metastore_schema", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "tablespec.cli", "apply", "specs", "--auto-approve"], cwd=project,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stdout + proc.stderr          # killed inside the schema's creation
    db = project / ".tablespec" / "metastore.db"
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'").fetchone() == (0,)   # all or nothing
    conn.close()
    plan_apply_plan(capsys)
    assert registered(project) == ["orders", "returns"]


@pytest.mark.parametrize("tables", [0, 13, 44])
def test_a_half_made_metastore_is_made_again(tmp_path, monkeypatch, capsys, tables):
    project = project_at(tmp_path / "p", monkeypatch)
    db = project / ".tablespec" / "metastore.db"
    half_made(db, tables)
    conn = sqlite3.connect(db)
    assert len({n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}) == tables
    conn.close()
    plan_apply_plan(capsys)
    assert registered(project) == ["orders", "returns"]


def test_a_zero_byte_metastore_is_made_again(tmp_path, monkeypatch, capsys):
    project = project_at(tmp_path / "p", monkeypatch)
    (project / ".tablespec").mkdir()
    (project / ".tablespec" / "metastore.db").write_bytes(b"")
    plan_apply_plan(capsys)
    assert registered(project) == ["orders", "returns"]


def test_a_half_made_metastore_with_rows_is_refused_and_kept(tmp_path, monkeypatch, capsys):
    project = project_at(tmp_path / "p", monkeypatch)
    db = project / ".tablespec" / "metastore.db"
    half_made(db, 20)
    conn = sqlite3.connect(db)
    assert "DBS" in schema_tables() & {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    with conn:
        conn.execute("INSERT INTO DBS (DB_ID, DB_LOCATION_URI, NAME) VALUES (1, '', 'kept')")
    conn.close()
    before = digest(db)
    for command in (["plan", "specs"], ["apply", "specs", "--auto-approve"]):
        code, out, err = run(capsys, *command)
        assert code == 1 and len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert f"the embedded metastore {db} is damaged" in err and "holds rows (DBS)" in err, err
    assert digest(db) == before
    assert not (project / "lake").exists()          # refused before any table was made


def test_a_project_folder_named_with_hash_question_mark_and_percent(tmp_path, monkeypatch, capsys):
    parent = tmp_path / "in"
    project = project_at(parent / "a#b?c%20d", monkeypatch)
    plan_apply_plan(capsys)
    assert registered(project) == ["orders", "returns"]
    assert sorted(p.name for p in parent.iterdir()) == ["a#b?c%20d"]     # nothing made beside the project
    url = spark_conf(project / ".tablespec" / "metastore.db")["spark.hadoop.javax.jdo.option.ConnectionURL"]
    assert url == f"jdbc:sqlite:file://{tmp_path}/in/a%23b%3Fc%2520d/.tablespec/metastore.db?journal_mode=WAL&busy_timeout=30000"


def test_table_names_read_from_the_file_are_quoted(tmp_path, monkeypatch, capsys):
    """A half-made file's table names are read from the file itself: one with a quote in it is an
    identifier, not SQL."""
    project = project_at(tmp_path / "p", monkeypatch)
    db = project / ".tablespec" / "metastore.db"
    half_made(db, 13)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute('CREATE TABLE "x"" ; DROP TABLE DBS; --" (a)')
    conn.close()
    plan_apply_plan(capsys)
    assert registered(project) == ["orders", "returns"]

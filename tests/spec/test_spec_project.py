"""The project file: discovery from nested directories, validation with lines, warehouse precedence."""
from __future__ import annotations

import os

import pytest

from tablespec.errors import SpecError
from tablespec.spec.project import PROJECT_FILE, Project, find_project, load_project, resolve_warehouse

PROJECT = """\
warehouse: ../lake
vars: {env: dev, retention: 7, strict: true}
spark:
  master: local[2]
  conf:
    spark.sql.shuffle.partitions: 4
    spark.sql.adaptive.enabled: true
"""


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "specs" / "sales").mkdir(parents=True)
    (root / PROJECT_FILE).write_text(PROJECT)
    return root


def test_found_from_a_nested_directory(repo):
    project = find_project(repo / "specs" / "sales")
    assert project.file == repo / PROJECT_FILE
    assert project.vars == {"env": "dev", "retention": 7, "strict": True}
    assert project.spark.master == "local[2]"
    assert project.spark.conf == {"spark.sql.shuffle.partitions": "4", "spark.sql.adaptive.enabled": "true"}


def test_explicit_path(repo):
    assert find_project(repo / PROJECT_FILE).file == repo / PROJECT_FILE


def test_none_when_absent(tmp_path):
    project = find_project(tmp_path)  # a stray project file above the test's tmp dir is outside our control
    assert project is None or not project.file.is_relative_to(tmp_path)


def test_missing_explicit_path_is_an_error(tmp_path):
    with pytest.raises(SpecError, match="no such file or directory"):
        find_project(tmp_path / "elsewhere.yaml")


def test_empty_project_file_means_defaults(tmp_path):
    (tmp_path / PROJECT_FILE).write_text("# nothing\n")
    project = load_project(tmp_path / PROJECT_FILE)
    assert (project.warehouse, project.vars, project.spark.conf) == (None, {}, {})


def test_invalid_project_file_reports_every_problem_with_lines(tmp_path):
    path = tmp_path / PROJECT_FILE
    path.write_text("warehous: x\nvars: {ok: 1, nested: {a: 1}}\nspark:\n  master: 3\n")
    with pytest.raises(SpecError) as info:
        load_project(path)
    assert [str(d).replace(str(path), "P") for d in info.value.diagnostics] == [
        "P:1:1: warehous: unknown key 'warehous'; did you mean 'warehouse'?",
        "P:2:15: vars.nested: a variable must be a string, number or boolean, got a dict",
        "P:4:3: spark.master: expected a string, got the number 3",
    ]


def test_vars_is_not_a_variable_name(tmp_path):
    path = tmp_path / PROJECT_FILE
    path.write_text("vars:\n  vars: 1\n")
    with pytest.raises(SpecError) as info:
        load_project(path)
    assert str(info.value) == f"{path}:1:1: vars: 'vars' cannot be a variable name: it is the mapping of all variables"


def test_project_yaml_syntax_error(tmp_path):
    path = tmp_path / PROJECT_FILE
    path.write_text("vars: {a: 1\n")
    with pytest.raises(SpecError) as info:
        load_project(path)
    assert str(info.value).startswith(f"{path}:2:1: invalid YAML: ")


def test_warehouse_precedence(repo, monkeypatch):
    project = find_project(repo)
    monkeypatch.delenv("TABLESPEC_WAREHOUSE", raising=False)
    assert project.resolve_warehouse(None) == os.path.normpath(repo.resolve().parent / "lake")
    monkeypatch.setenv("TABLESPEC_WAREHOUSE", "/from/env")
    assert project.resolve_warehouse(None) == "/from/env"
    assert project.resolve_warehouse("/from/cli") == "/from/cli"
    assert resolve_warehouse(None, None) == "/from/env"
    monkeypatch.delenv("TABLESPEC_WAREHOUSE")
    assert resolve_warehouse(None, None) is None


def test_absolute_and_uri_warehouses_are_kept(monkeypatch):
    monkeypatch.delenv("TABLESPEC_WAREHOUSE", raising=False)
    assert Project(warehouse="s3://bucket/lake").resolve_warehouse() == "s3://bucket/lake"
    assert Project(warehouse="/abs/lake").resolve_warehouse() == "/abs/lake"
    assert Project(warehouse="rel").resolve_warehouse() == "rel"  # built in code: no file to be relative to


@pytest.mark.parametrize("value", ["hive", "glue", "thrift://localhost:9083", "thrift://[::1]:9083"])
def test_catalog_settings(tmp_path, value, monkeypatch):
    from tablespec.spec.project import resolve_catalog
    monkeypatch.delenv("TABLESPEC_CATALOG", raising=False)
    (tmp_path / PROJECT_FILE).write_text(f"catalog: {value}\n")
    setting = resolve_catalog(load_project(tmp_path / PROJECT_FILE))
    assert (setting.uri, setting.home) == (value, tmp_path.resolve())
    assert setting.kind == ("thrift" if value.startswith("thrift") else value)


@pytest.mark.parametrize("value", ["thrift://metastore", "thrift://h:0", "derby", "http://h:9083", "3"])
def test_bad_catalog_setting_names_file_line_and_field(tmp_path, value):
    (tmp_path / PROJECT_FILE).write_text(f"warehouse: lake\ncatalog: {value}\n")
    with pytest.raises(SpecError) as e:
        load_project(tmp_path / PROJECT_FILE)
    assert str(e.value.diagnostics[0]).startswith(f"{tmp_path / PROJECT_FILE}:2:1: catalog: catalog must be `hive`")


def test_catalog_from_the_environment_wins_and_is_checked(tmp_path, monkeypatch):
    from tablespec.spec.project import resolve_catalog
    (tmp_path / PROJECT_FILE).write_text("catalog: hive\n")
    project = load_project(tmp_path / PROJECT_FILE)
    monkeypatch.setenv("TABLESPEC_CATALOG", "thrift://127.0.0.1:9083")
    assert resolve_catalog(project).origin == "$TABLESPEC_CATALOG"
    monkeypatch.setenv("TABLESPEC_CATALOG", "thrift://127.0.0.1:99999")
    with pytest.raises(SpecError, match=r"^\$TABLESPEC_CATALOG: catalog must be"):
        resolve_catalog(project)
    monkeypatch.delenv("TABLESPEC_CATALOG")
    assert resolve_catalog(Project()) is None

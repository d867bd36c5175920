"""What a plain `pip install tablespec` (a wheel, no extras) needs: every import declared in
pyproject.toml, the Spark extra imported lazily, and the plan templates shipped in the package."""
from __future__ import annotations

import ast
import importlib.metadata
import importlib.resources
import os
import re
import sys
import tomllib
from pathlib import Path

import pytest
from _support import ROOT

from tablespec.plan import render
from tablespec.report import html as report_html

PACKAGE = ROOT / "tablespec"
# The `spark` extra may be imported at module level only here: nothing validate or plan runs imports it.
SPARK_MODULES = PACKAGE / "engine"


def _norm(dist: str) -> str:
    return re.sub(r"[-_.]+", "-", dist).lower()


def _requirement_name(req: str) -> str:
    return _norm(re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req).group(1))


def declared() -> tuple[set[str], dict[str, set[str]]]:
    """pyproject.toml's dependencies and its extras, as normalised distribution names."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return ({_requirement_name(r) for r in project["dependencies"]},
            {extra: {_requirement_name(r) for r in reqs} for extra, reqs in project["optional-dependencies"].items()})


def third_party_imports(source: str) -> list[tuple[str, int, bool]]:
    """(top-level module, line, runs when the module is imported) of every absolute import that is
    neither the standard library nor tablespec. Imports inside a function or an
    `if TYPE_CHECKING:` block do not run on import."""
    found = []

    def visit(node, eager: bool):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            eager = False
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                visit(child, False)
            for child in node.orelse:
                visit(child, eager)
            return
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module]
        else:
            names = []
        for name in names:
            top = name.split(".")[0]
            if top not in sys.stdlib_module_names and top != "tablespec":
                found.append((top, node.lineno, eager))
        for child in ast.iter_child_nodes(node):
            visit(child, eager)

    visit(ast.parse(source), True)
    return found


def undeclared(path: Path, source: str, providers: dict[str, list[str]]) -> list[str]:
    """Problems with the imports of one module: a package no declared distribution provides, or
    an optional one (an extra) imported at module level outside tablespec/engine (Spark only)."""
    base, extras = declared()
    spark = extras["spark"]
    optional = set().union(*extras.values())
    problems = []
    for top, line, eager in third_party_imports(source):
        dists = {_norm(d) for d in providers.get(top, [])}
        where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{line}: import {top}"
        if not dists:
            problems.append(f"{where}: no installed distribution provides it; declare it in pyproject.toml")
        elif not dists & (base | optional):
            problems.append(f"{where}: {'/'.join(sorted(dists))} is not declared in pyproject.toml")
        elif eager and not dists & base:
            in_engine = path.is_relative_to(SPARK_MODULES) and dists & spark
            if not in_engine:
                problems.append(f"{where}: {'/'.join(sorted(dists))} is optional (an extra), so import it "
                                "inside the function that needs it")
    return problems


def test_every_third_party_import_is_declared():
    providers = importlib.metadata.packages_distributions()
    problems = []
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 20
    for path in modules:
        problems += undeclared(path, path.read_text(encoding="utf-8"), providers)
    assert not problems, "\n".join(problems)


def test_the_import_check_catches_what_it_should():
    """The check above on made-up modules: it would fail on each of these."""
    providers = importlib.metadata.packages_distributions()
    plan_module, engine_module = PACKAGE / "plan" / "x.py", SPARK_MODULES / "x.py"
    # pip is installed but declared nowhere; pytest is the test extra, not Spark
    assert undeclared(plan_module, "import pip\n", providers) == [
        "tablespec/plan/x.py:1: import pip: pip is not declared in pyproject.toml"]
    assert "no installed distribution" in undeclared(plan_module, "import no_such_pkg_xyz\n", providers)[0]
    assert "inside the function" in undeclared(plan_module, "from pyspark.sql import DataFrame\n", providers)[0]
    assert "inside the function" in undeclared(engine_module, "import pytest\n", providers)[0]
    assert undeclared(engine_module, "import pyspark\n", providers) == []
    assert undeclared(plan_module, "def f():\n    import pyspark\n", providers) == []
    assert undeclared(plan_module, "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pyspark\n",
                      providers) == []
    assert undeclared(plan_module, "import os, numpy, jinja2.sandbox\nfrom . import x\n", providers) == []


@pytest.fixture
def package_templates(monkeypatch):
    monkeypatch.delenv("TABLESPEC_TEMPLATES", raising=False)
    render._env.cache_clear()
    report_html._env.cache_clear()
    yield importlib.resources.files("tablespec") / "templates"
    render._env.cache_clear()
    report_html._env.cache_clear()


def test_plan_templates_load_from_the_package(package_templates):
    """The renderers find their templates as package data of `tablespec` (what a wheel ships),
    not through a path relative to the repository root."""
    names = sorted(p.name for p in (ROOT / "templates").glob("*.j2"))
    assert names == ["plan.md.j2", "plan.txt.j2", "report.html.j2"]
    for name in names:
        shipped = package_templates / name
        assert shipped.read_text(encoding="utf-8") == (ROOT / "templates" / name).read_text(encoding="utf-8")
        loaded = (report_html._env() if name.endswith(".html.j2") else render._env()).get_template(name)
        assert os.path.normpath(loaded.filename) == os.path.normpath(str(shipped))
        assert Path(loaded.filename).parent.parent == Path(str(importlib.resources.files("tablespec")))

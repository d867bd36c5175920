"""The documentation: generated reference pages are current, and the README front page keeps its
promises (CI's test command, links that resolve). `mkdocs build --strict` in .ci/run checks the
site's own links and anchors."""
from __future__ import annotations

import argparse
import re

import pytest
from _support import ROOT

from tablespec.cli import _parser
from tablespec.docs_reference import PAGES, cli_page, render_pages, spec_page
from tablespec.plan.settings import REGISTRY
from tablespec.spec.schema import json_schema

REFERENCE = ROOT / "docs" / "reference"
REGENERATE = "regenerate with: python -m tablespec.docs_reference"


def test_committed_reference_pages_are_current():
    pages = render_pages()
    assert sorted(pages) == sorted(PAGES)
    for name, text in pages.items():
        path = REFERENCE / name
        assert path.exists(), f"docs/reference/{name} is missing; {REGENERATE}"
        assert path.read_text() == text, f"docs/reference/{name} is stale; {REGENERATE}"


def test_spec_reference_has_every_field_and_every_key():
    """Every field of every model (index types included) has a row, and every registry key too."""
    page = spec_page()
    rows = set(re.findall(r"^\| `([^`]+)` \|", page, re.MULTILINE))
    schema = json_schema()
    defs = schema["$defs"]

    def fields(node: dict, path: str):
        node = defs[node["$ref"].rsplit("/", 1)[-1]] if "$ref" in node else node
        for name, prop in node.get("properties", {}).items():
            here = f"{path}.{name}" if path else name
            objects = [o for o in prop.get("anyOf", []) + prop.get("oneOf", []) + [prop] if "$ref" in o]
            if objects:
                for option in objects:
                    yield from fields(option, here)
            elif "$ref" in prop.get("items", {}):
                yield here + "[]"
                yield from fields(prop["items"], here + "[]")
            else:
                yield here
    expected = set(fields(schema, ""))
    assert {"spec.index.numBuckets", "spec.index.recordLevel.maxFilesPerBucket", "spec.columns[].type",
            "spec.partitioning.timestamp.timeZone", "spec.index.type"} <= expected
    assert expected - rows == set()
    assert {s.prop for s in REGISTRY} - rows == set()
    assert "| `spec.clustering.targetFileSize` | size: bytes, or a number with a unit (`256MiB`, `1GB`) | `128MiB` |" in page


def test_cli_reference_has_every_command_and_argument():
    page = cli_page()
    parser = _parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in subparsers.choices.items():
        assert f"## `tablespec {name}`" in page
        for action in sub._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert re.search(rf"\| `{re.escape(option)}[ `]", page), f"{name} {option}"


def test_readme_runs_the_ci_test_command_and_stays_a_front_page():
    """.ci/run runs the README's test command (quietly); README stays short and its links resolve."""
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    command = ci[ci.index("# The README's test command:") + 1]
    assert command.replace("pip install -q ", "pip install ") in readme
    assert len(readme.splitlines()) <= 200
    links = re.findall(r"\]\((?!https?://|#)([^)#]+)(?:#[^)]*)?\)", readme)
    assert links and [link for link in links if not (ROOT / link).exists()] == []


def test_the_page_generator_takes_a_folder_and_prints_its_usage(tmp_path, capsys):
    from tablespec.docs_reference import main
    assert main([str(tmp_path / "ref")]) == 0
    assert {p.name for p in (tmp_path / "ref").iterdir()} == set(render_pages())
    with pytest.raises(SystemExit) as stopped:   # --help is not a folder to write into
        main(["--help"])
    assert stopped.value.code == 0 and "out_dir" in capsys.readouterr().out

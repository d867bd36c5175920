"""Property-based fuzzing of the inputs people and CI hand tablespec: spec YAML, templates, saved plan
files, CSV headers. Every case ends in a result or a clear error (never a traceback), quickly, and a
rejected command leaves the table untouched."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tablespec.errors import TablespecError
from tablespec.spec.loader import load_spec_text
from tablespec.spec.templating import render

FUZZ = settings(max_examples=60, deadline=None,  # a loaded machine pauses; a hang meets the run's timeout
                derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
GOLDEN = Path(__file__).parent / "golden"
VALID = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: t}
spec:
  location: t
  columns:
    - {name: id, type: string, nullable: false}
    - {name: v, type: int}
  recordKey: {fields: [id]}
  partitioning: {fields: [v]}
  index: {type: BUCKET, numBuckets: 4}
"""
WORDS = ["apiVersion", "kind", "metadata", "spec", "name", "location", "columns", "type", "fields", "index",
         "numBuckets", "hashFields", "recordKey", "partitioning", "timestamp", "clustering", "strategy",
         "sortColumns", "targetFileSize", "retention", "keepCommits", "BUCKET", "SIMPLE", "id", "v", "string",
         "int", "decimal(3,1)", "map<string,int>", "yyyy/MM/dd", "128MiB", "-1", "0", "&a", "*a", "!!str",
         "{{ x }}", "{% for %}", "[", "]", "{", "}", ":", "-", "'", '"', "#", "\t", "\n", "  ", "..", "/"]


def _check_diagnostics(result) -> None:
    for d in result.diagnostics:
        text = str(d)
        assert text.startswith("t.yaml") and d.message and len(text) < 700 and "Traceback" not in text


@FUZZ
@given(st.lists(st.sampled_from(WORDS), max_size=40))
def test_random_yaml_gives_located_diagnostics(tokens):
    _check_diagnostics(load_spec_text(" ".join(tokens), "t.yaml"))


@FUZZ
@given(st.data())
def test_mutated_specs_validate_or_report(data):
    lines = VALID.splitlines(keepends=True)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(lines) - 1))
        op = data.draw(st.sampled_from(["drop", "dup", "word", "indent"]))
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "word":
            lines[i] = lines[i].rstrip("\n") + " " + data.draw(st.sampled_from(WORDS)) + "\n"
        else:
            lines[i] = " " + lines[i]
        if not lines:
            break
    result = load_spec_text("".join(lines), "t.yaml")
    _check_diagnostics(result)
    assert result.specs or result.errors


TEMPLATE_PARTS = ["{{ ", " }}", "{% ", " %}", "for i in range(9)", "endfor", "if x", "endif", "x", "vars.x",
                  "'a'", "* 99999", "|center(999999999)", "|indent(99)", "|replace('a','aa')", "|format(1)",
                  ".ljust(99999999)", ".__class__", "range(10**9)", "%", "'%9999999999d'", "9**9**9", "dict(a=1)",
                  "lipsum()", "cycler", "joiner", "self", "namespace()", "\n"]


@FUZZ
@given(st.lists(st.sampled_from(TEMPLATE_PARTS), max_size=25))
def test_random_templates_render_or_refuse(parts):
    try:
        out = render("".join(parts) + "{{ '' }}", "t.yaml", {"x": "1"})
    except TablespecError as e:
        assert "Traceback" not in str(e)
    else:
        assert len(out) <= 10_000_000


def _saved_plan() -> dict:
    return json.loads((GOLDEN / "plan_change.json").read_text())


def _mutate(value, data, depth=0):
    """A random edit somewhere in a JSON value: a replaced scalar, a dropped key or item, a wrong type."""
    if isinstance(value, dict) and value and depth < 6:
        key = data.draw(st.sampled_from(sorted(value)))
        choice = data.draw(st.sampled_from(["dive", "drop", "replace"]))
        if choice == "drop":
            return {k: v for k, v in value.items() if k != key}
        if choice == "dive":
            return {**value, key: _mutate(value[key], data, depth + 1)}
    if isinstance(value, list) and value and depth < 6:
        i = data.draw(st.integers(0, len(value) - 1))
        return value[:i] + [_mutate(value[i], data, depth + 1)] + value[i + 1:]
    return data.draw(st.one_of(st.none(), st.booleans(), st.integers(-2, 10**12), st.text(max_size=20),
                               st.just([]), st.just({}), st.just("../../etc")))


@FUZZ
@given(st.data())
def test_edited_plan_files_load_or_refuse(tmp_path_factory, data):
    from tablespec.errors import PlanError
    from tablespec.plan.render import load_plan
    path = tmp_path_factory.mktemp("plans") / "plan.json"
    path.write_text(json.dumps(_mutate(_saved_plan(), data)))
    try:
        load_plan(str(path))
    except PlanError as e:
        assert str(path) in str(e) and "Traceback" not in str(e)


HEADER_NAMES = ["id", "v", "p", "ID", " v", "colour", "", "id,v", '"p"', "v"]


@FUZZ
@given(st.lists(st.sampled_from(HEADER_NAMES), min_size=1, max_size=6))
def test_csv_headers_map_or_refuse_by_name(tmp_path_factory, names):
    from tablespec.engine.ingest import _check_names, csv_header
    spec = load_spec_text(VALID.replace("partitioning: {fields: [v]}", "partitioning: {fields: [p]}")
                          .replace("    - {name: v, type: int}", "    - {name: v, type: int}\n    - {name: p, type: string}"),
                          "t.yaml").specs[0].spec
    path = tmp_path_factory.mktemp("csv") / "in.csv"
    path.write_text(",".join(names) + "\n")
    try:
        header = csv_header(str(path))
        _check_names(str(path), header, spec)
    except TablespecError as e:
        assert str(path) in str(e)
        assert "is not a column" in str(e) or "are not columns" in str(e) or "appears twice" in str(e) \
            or "no header line" in str(e)
    else:
        assert set(header) <= {"id", "v", "p"} and len(set(header)) == len(header)


@pytest.mark.parametrize("argv", [["validate"], ["plan", "--warehouse", "{wh}"], ["apply", "--warehouse", "{wh}", "--auto-approve"]])
def test_rejected_commands_leave_the_table_untouched(tmp_path, capsys, monkeypatch, argv):
    """A spec made invalid after its table exists: every command refuses, and the table's files stay byte-equal."""
    from tablespec.cli import main
    specs, wh = tmp_path / "specs", tmp_path / "wh"
    specs.mkdir()
    (specs / "t.yaml").write_text(VALID)
    monkeypatch.chdir(tmp_path)
    assert main(["apply", "--warehouse", str(wh), "--auto-approve"]) == 0
    before = {p: p.read_bytes() for p in wh.rglob("*") if p.is_file()}
    (specs / "t.yaml").write_text(VALID.replace("numBuckets: 4", "numBuckets: 0") + "a: &a [*a]\n")
    capsys.readouterr()
    code = main([a.replace("{wh}", str(wh)) for a in argv])
    out, err = capsys.readouterr()
    assert code != 0 and "Traceback" not in err
    assert {p: p.read_bytes() for p in wh.rglob("*") if p.is_file()} == before

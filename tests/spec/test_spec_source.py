"""Reading YAML: the one-pass reader on libyaml's events gives what ruamel's round-trip loader gives
(data, scalar types, document lines, every key's and item's position), or leaves the file to it."""
from __future__ import annotations

import io
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from tablespec.spec.loader import load_spec_text
from tablespec.spec.source import _read_events, _read_round_trip, _RoundTripOnly, read_documents

EXAMPLES = sorted((Path(__file__).parents[2] / "specs" / "examples").glob("*.yaml"))
SCALARS = ["yes", "on", "1e3", "1.0e+3", "0o7", "012", "0x1F", "0b101", "1_000", ".inf", "-.5", "+1", "2026-01-01",
           "2026-01-01 10:00:00", "2026-01-01T10:00:00Z", "~", "null", "", "true", "False", "1:20", "a: b", "#x",
           "é😀", "line\nbreak\n", "x" * 120, "- a", "[", "'q'", "!x", "&x", "*x", "%x", "@x", "?", "=", "<<"]


def _typed(value):
    """`value` with the type of every scalar, NaN comparable."""
    if isinstance(value, dict):
        return [(type(k), k, _typed(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return type(value), "nan" if isinstance(value, float) and math.isnan(value) else value


def _same_as_round_trip(text: str) -> bool:
    """Whether the fast reader read `text` (False: it left it to the round-trip loader); asserts it
    read it as the round-trip loader does."""
    try:
        fast = _read_events(text)
    except _RoundTripOnly:
        return False
    slow, problems = _read_round_trip(text, "t.yaml")
    assert problems == []
    assert [(d.index, d.line, d.col, _typed(d.data), list(d.positions.items())) for d in fast] == \
        [(d.index, d.line, d.col, _typed(d.data), list(d.positions.items())) for d in slow]
    return True


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_specs_read_once_as_the_round_trip_loader_reads_them(path):
    text = path.read_text()
    assert _same_as_round_trip(text)
    assert _same_as_round_trip(text.replace("\n", "\r\n"))
    assert _same_as_round_trip("\ufeff" + text + "---\n" + text)


values = st.recursive(
    st.one_of(st.sampled_from(SCALARS), st.integers(-10**12, 10**12), st.booleans(), st.none(),
              st.sampled_from([1.5, -0.0, 1e300])),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.one_of(st.sampled_from(SCALARS), st.integers(0, 9)), inner, max_size=4)),
    max_leaves=25)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(values, st.sampled_from([None, True, False]), st.sampled_from([16, 80]), st.booleans())
def test_generated_documents_read_as_the_round_trip_loader_reads_them(data, flow, width, shared):
    if shared and isinstance(data, dict) and data:   # anchors and aliases, as a dumper writes them
        data = {"first": data, "again": data, "items": [data, data]}
    yaml = YAML()
    yaml.default_flow_style, yaml.width = flow, width
    out = io.StringIO()
    yaml.dump(data, out)
    _same_as_round_trip(out.getvalue())


@pytest.mark.parametrize("text", [
    "a: 1\nb:\n  c: 2\n\td: 3\n",                                   # a tab where libyaml takes one
    "a: 1\n...\n...\nb: 2\n",                                       # two document ends
    "a: |#\n  x\n",                                                 # a comment against a block indicator
    "%YAML 1.1\n---\na: yes\n",                                     # directives change how scalars resolve
    "a: !!str 1\n", "a: &x {p: 1}\nb: {<<: *x}\n", "? [a]\n: b\n",  # tags, merge keys, complex keys
    "a: 1\na: 2\n", "a: &x [*x]\n", "a: *nowhere\n",                # duplicates, recursion, undefined aliases
])
def test_what_the_readers_differ_on_or_only_ruamel_builds_is_left_to_ruamel(text):
    assert not _same_as_round_trip(text)
    assert read_documents(text, "t.yaml") == _read_round_trip(text, "t.yaml")


def test_aliases_keep_their_anchors_positions_and_count_towards_the_bound():
    text = "a: &x {p: 1, q: [2, 3]}\nb: *x\nc: [*x, *x]\n"
    assert _same_as_round_trip(text)
    (doc,), _ = read_documents(text, "t.yaml")
    assert doc.positions["c[1].q[1]"] == doc.positions["a.q[1]"] == (1, 21)
    assert doc.data["c"][1] == doc.data["a"] and doc.data["c"][1] is not doc.data["a"]


def test_merge_keys_load_and_merged_keys_point_at_their_mapping():
    text = ("apiVersion: tablespec/v1\nkind: HudiTable\nmetadata: {name: t}\nx-id: &id {name: id, type: long}\n"
            "spec:\n  location: t\n  columns:\n    - <<: *id\n      nullable: false\n  recordKey: {fields: [id]}\n")
    result = load_spec_text(text, "t.yaml")
    assert result.diagnostics == [] or all("x-id" in d.path for d in result.diagnostics), result.diagnostics
    (doc,), problems = read_documents(text, "t.yaml")
    assert problems == [] and doc.data["spec"]["columns"] == [{"nullable": False, "name": "id", "type": "long"}]
    assert doc.positions["spec.columns[0].nullable"] == (9, 7) and "spec.columns[0].name" not in doc.positions

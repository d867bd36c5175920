"""The committed JSON Schema is generated from the models, and accepts exactly what editors should accept."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from ruamel.yaml import YAML

from tablespec.spec.schema import SCHEMA_ID, json_schema, render_schema
from tablespec.spec.templating import render

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "specs" / "tablespec.schema.json"
EXAMPLES = sorted((ROOT / "specs" / "examples").glob("*.yaml"))


def test_committed_schema_is_current():
    assert SCHEMA_FILE.read_text() == render_schema(), (
        "specs/tablespec.schema.json is stale; regenerate it with: "
        "python -m tablespec.spec.schema > specs/tablespec.schema.json")


def test_schema_is_valid_draft_2020_12():
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert (schema["$id"], schema["$schema"]) == (SCHEMA_ID, "https://json-schema.org/draft/2020-12/schema")
    assert schema["required"] == ["apiVersion", "kind", "metadata", "spec"]


def test_schema_uses_yaml_names_and_field_docs():
    body = json_schema()["$defs"]["TableBody"]["properties"]
    assert {"recordKey", "orderingField", "tableType"} <= body.keys()
    assert body["orderingField"]["description"].startswith("Precombine field")


def _validator():
    return jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_examples_match_the_json_schema(example):
    data = YAML(typ="safe").load(render(example.read_text(), str(example), {}))
    errors = [e.message for e in _validator().iter_errors(data)]
    assert errors == []


def _spec(**body):
    return {"apiVersion": "tablespec/v1", "kind": "HudiTable", "metadata": {"name": "t"},
            "spec": {"location": "t", "columns": [{"name": "id", "type": "long"}], "recordKey": {"fields": ["id"]}, **body}}


@pytest.mark.parametrize("body", [
    {"clustering": {"targetFileSize": 268435456, "smallFileLimit": "100 MB"}},
    {"clustering": {"targetFileSize": "1.5GiB"}},
    {"index": {"type": "BUCKET", "numBuckets": 4, "partitionBuckets": [{"pattern": "2024-.*", "numBuckets": 8}]}},
    {"index": {"type": "RECORD_LEVEL", "recordLevel": {"maxFilesPerBucket": 2}}},
])
def test_schema_accepts(body):
    assert list(_validator().iter_errors(_spec(**body))) == []


@pytest.mark.parametrize("body", [
    {"clustering": {"targetFileSize": "256mib"}},
    {"clustering": {"targetFileSize": -1}},
    {"index": {"type": "SIMPLE", "numBuckets": 4}},
    {"index": {"numBuckets": 4}},
    {"index": {"type": "BUCKET"}},
    {"record_key": {"fields": ["id"]}},
    {"columns": []},
])
def test_schema_rejects(body):
    assert list(_validator().iter_errors(_spec(**body))) != []

"""The JSON Schema of the spec language, generated from the models so it cannot drift from them.

Editors use it (via the `# yaml-language-server: $schema=...` line) to validate as users type.
Regenerate the committed copy with: python -m tablespec.spec.schema > specs/tablespec.schema.json
"""
from __future__ import annotations

import json
from typing import Any

from tablespec.spec.model import TableSpec

SCHEMA_ID = "https://tablespec.dev/schema/v1/tablespec.schema.json"


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one spec document, with the YAML (camelCase) key names."""
    schema = TableSpec.model_json_schema(by_alias=True)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **schema,
        "title": "tablespec HudiTable",
    }


def render_schema() -> str:
    """The schema as committed: sorted keys, two-space indent, trailing newline."""
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


def main() -> None:
    print(render_schema(), end="")


if __name__ == "__main__":
    main()

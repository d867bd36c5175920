"""Shared helpers for the spec-language tests: a valid spec with known line numbers, and ways to break it."""
from __future__ import annotations

import pytest

from tablespec.spec.loader import load_spec_text

# Line numbers matter: tests assert them. Line 1 is `apiVersion`.
VALID = """\
apiVersion: tablespec/v1
kind: HudiTable
metadata:
  name: orders
  database: sales
spec:
  location: sales/orders
  columns:
    - {name: order_id, type: string, nullable: false}
    - {name: customer_id, type: long}
    - {name: amount, type: "decimal(12,2)"}
    - {name: updated_at, type: timestamp}
    - {name: order_date, type: date}
    - {name: address, type: "struct<city:string>"}
  recordKey:
    fields: [order_id]
  partitioning:
    fields: [order_date]
  orderingField: updated_at
  index:
    type: BUCKET
    numBuckets: 16
    hashFields: [order_id]
  clustering:
    strategy: SORT
    sortColumns: [customer_id]
    targetFileSize: 256MiB
    smallFileLimit: 100MiB
"""


def _edit(text: str, replacements) -> str:
    for old, new in replacements:
        assert text.count(old) == 1, f"anchor {old!r} must occur exactly once"
        text = text.replace(old, new)
    return text


def _messages(text: str, file: str = "t.yaml", variables=None) -> list[str]:
    return [str(d) for d in load_spec_text(text, file, variables).diagnostics]


@pytest.fixture
def valid_text() -> str:
    """A valid spec (no errors, no warnings) whose line numbers the tests rely on."""
    return VALID


@pytest.fixture
def edit():
    """`edit(text, (old, new), ...)`: exact, unique replacements (fails loudly if an anchor drifted)."""
    return lambda text, *replacements: _edit(text, replacements)


@pytest.fixture
def messages():
    """`messages(text, file="t.yaml", variables=None)` -> every diagnostic as printed."""
    return _messages


@pytest.fixture
def broken():
    """`broken((old, new), ...)` -> printed diagnostics of the valid spec after the replacements."""
    return lambda *replacements: _messages(_edit(VALID, replacements))

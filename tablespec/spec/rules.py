"""Rules relating fields of a table spec to each other: errors (run by the model) and warnings.

Locations use the YAML (camelCase) names; errors are relative to `spec`, warnings to the document.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import TYPE_CHECKING

from tablespec.spec.base import Problem
from tablespec.types import Array, Map, Struct

if TYPE_CHECKING:
    from tablespec.spec.model import TableBody, TableSpec


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate `word` most likely misspells (case differences first), or None."""
    candidates = list(candidates)
    same_case = [c for c in candidates if c.lower() == word.lower()]
    close = same_case or difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`"; did you mean 'x'?"` for the closest candidate, or `""` when nothing is close."""
    match = closest(word, candidates)
    return f"; did you mean '{match}'?" if match else ""


def _duplicates(loc: tuple, values: list[str], what: str) -> list[Problem]:
    seen: set[str] = set()
    out = []
    for i, value in enumerate(values):
        if value in seen:
            out.append(((*loc, i), f"{what} '{value}' is listed twice"))
        seen.add(value)
    return out


def body_problems(body: TableBody) -> list[Problem]:
    """Every cross-field error of a table body.

    Also runs on a partial body (built by the loader when some fields are invalid, so their
    errors and these come in one report): parts that failed validation are None, and columns
    whose type failed have `type` None.
    """
    from tablespec.spec.model import BucketIndex

    problems: list[Problem] = []
    if body.table_type == "MERGE_ON_READ":
        problems.append((("tableType",), "MERGE_ON_READ is not supported yet; use COPY_ON_WRITE"))
    if body.columns is None:
        return problems

    first_of: dict[str, int] = {}
    for i, column in enumerate(body.columns):
        first = first_of.setdefault(column.name.lower(), i)
        if first != i:
            problems.append((("columns", i, "name"), f"duplicate column '{column.name}' (first declared as spec.columns[{first}])"))
    by_name = {c.name: c for c in reversed(body.columns)}

    def reference(loc: tuple, name: str, what: str, primitive: bool = False) -> bool:
        column = by_name.get(name)
        if column is None:
            problems.append((loc, f"{what} '{name}' is not a column{did_you_mean(name, by_name)}"))
            return False
        if primitive and column.type is not None and isinstance(column.data_type, Array | Map | Struct):
            problems.append((loc, f"{what} '{name}' has the complex type {column.type}; it must be a primitive type"))
        return True

    key = body.record_key
    if key is not None:
        for i, name in enumerate(key.fields):
            reference(("recordKey", "fields", i), name, "record key field", primitive=True)
        problems += _duplicates(("recordKey", "fields"), key.fields, "record key field")

    if body.partitioning is not None:
        for i, name in enumerate(body.partitioning.fields):
            reference(("partitioning", "fields", i), name, "partition field", primitive=True)
        problems += _duplicates(("partitioning", "fields"), body.partitioning.fields, "partition field")
        problems += _timestamp_problems(body, by_name)

    if body.ordering_field is not None:
        reference(("orderingField",), body.ordering_field, "ordering field", primitive=True)

    index = body.index
    if isinstance(index, BucketIndex):
        if key is not None and key.auto_generate:
            problems.append((("index", "type"), "a BUCKET index hashes record key fields, so it cannot be used "
                                                "with recordKey.autoGenerate"))
        if index.hash_fields is not None:
            if not index.hash_fields:
                problems.append((("index", "hashFields"), "hashFields must not be empty; omit it to hash the record key fields"))
            for i, name in enumerate(index.hash_fields):
                loc = ("index", "hashFields", i)
                if reference(loc, name, "hash field") and key is not None and key.fields and name not in key.fields:
                    problems.append((loc, f"hash field '{name}' is not a record key field; Hudi hashes a subset of "
                                          f"the record key ({', '.join(key.fields)})"))
            problems += _duplicates(("index", "hashFields"), index.hash_fields, "hash field")

    if body.clustering is not None:
        for i, name in enumerate(body.clustering.sort_columns):
            reference(("clustering", "sortColumns", i), name, "sort column", primitive=True)
        problems += _duplicates(("clustering", "sortColumns"), body.clustering.sort_columns, "sort column")
    return problems


def _timestamp_problems(body: TableBody, by_name: dict) -> list[Problem]:
    from tablespec.hudi.keygen import INPUTS

    ts = body.partitioning.timestamp
    if ts is None:
        return []
    loc = ("partitioning", "timestamp", "field")
    if ts.field not in body.partitioning.fields:
        return [(loc, f"timestamp field '{ts.field}' is not one of the partition fields "
                      f"({', '.join(body.partitioning.fields) or 'none'})")]
    column = by_name.get(ts.field)
    accepted = INPUTS[ts.input][2]
    if column is not None and column.type is not None and column.type not in accepted:
        return [(("partitioning", "timestamp", "input"),
                 f"input {ts.input} reads {' or '.join(accepted)} columns, but '{ts.field}' is {column.type}")]
    return []


def spec_warnings(spec: TableSpec) -> list[Problem]:
    """Settings that are legal but probably not what the author wants."""
    body = spec.spec
    warnings: list[Problem] = []
    for i, column in enumerate(body.columns):
        if column.name in body.record_key.fields and column.nullable:
            warnings.append((("spec", "columns", i, "nullable"),
                             f"record key column '{column.name}' is nullable; Hudi refuses null keys at write time "
                             "(declare it nullable: false)"))
    ts = body.partitioning.timestamp
    if ts is not None and len(body.partitioning.fields) > 1 and "/" in ts.output_format:
        warnings.append((("spec", "partitioning", "timestamp", "outputFormat"),
                         f"outputFormat {ts.output_format!r} makes several directory levels for one of several "
                         "partition fields; Apache Hudi 0.15's Spark reader fails on such a table (tablespec and "
                         "hudi-rs read it): prefer a format without '/'"))
    clustering = body.clustering
    if clustering.strategy == "NONE" and clustering.sort_columns:
        warnings.append((("spec", "clustering", "sortColumns"), "sortColumns is ignored when strategy is NONE"))
    if clustering.strategy in ("ZORDER", "HILBERT") and len(clustering.sort_columns) == 1:
        warnings.append((("spec", "clustering", "sortColumns"),
                         f"{clustering.strategy} on a single column orders like SORT; give at least two sortColumns"))
    return warnings

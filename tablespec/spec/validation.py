"""Validate one YAML document against a model and turn pydantic's errors into located diagnostics.

Pydantic knows what is wrong; this module says it in the user's words: YAML key names,
"did you mean", which index type a misplaced setting belongs to, and where in the file.
"""
from __future__ import annotations

import re
import types
import typing
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from tablespec.spec.base import CROSS_FIELD
from tablespec.spec.diagnostics import Diagnostic, format_path, locate
from tablespec.spec.model import INDEX_TYPES, Column, TableBody, TableSpec
from tablespec.spec.rules import body_problems, closest, did_you_mean, spec_warnings
from tablespec.spec.source import Document

_NAME_HELP = "use letters, digits and underscores, not starting with a digit"
_EXPECTED = {
    "string_type": "a string", "int_type": "an integer", "int_parsing": "an integer", "bool_type": "true or false",
    "float_type": "a number", "list_type": "a list", "dict_type": "a mapping", "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__}"


def _clean_loc(loc: tuple, data: Any) -> tuple:
    """Drop the discriminator tags pydantic inserts for tagged unions (`index.BUCKET.numBuckets`)."""
    out, node = [], data
    for part in loc:
        if isinstance(node, dict) and part not in node and part == node.get("type"):
            continue
        node = _child(node, part)
        out.append(part)
    return tuple(out)


def _child(node: Any, part: str | int) -> Any:
    if isinstance(node, dict):
        return node.get(part)
    if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
        return node[part]
    return None


def _model_at(root: type[BaseModel], loc: tuple, data: Any) -> type[BaseModel] | None:
    """The model class validating the mapping at `loc` (used to list the keys it accepts)."""
    tp: Any = root
    node = data
    for part in loc:
        model = _as_model(tp, node)
        if model is not None:
            field = next((f for n, f in model.model_fields.items() if (f.alias or n) == part), None)
            if field is None:
                return None
            tp = field.annotation
        else:  # a list or dict: continue with its item type
            args = [a for a in typing.get_args(_strip(tp)) if a is not type(None)]
            tp = args[-1] if args else None
        node = _child(node, part)
    return _as_model(tp, node)


def _strip(tp: Any) -> Any:
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(members) == 1:
            return _strip(members[0])
    return tp


def _as_model(tp: Any, node: Any) -> type[BaseModel] | None:
    tp = _strip(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return tp
    if typing.get_origin(tp) in (typing.Union, types.UnionType) and isinstance(node, dict):
        for member in typing.get_args(_strip(tp)):
            member = _strip(member)
            if isinstance(member, type) and issubclass(member, BaseModel) and "type" in member.model_fields:
                if node.get("type") == member.model_fields["type"].default:
                    return member
    return None


def _unknown_key(root: type[BaseModel], loc: tuple, data: Any) -> str:
    key = str(loc[-1])
    spelled = to_camel(key) if "_" in key else key  # snake_case is the Python spelling, YAML uses camelCase
    model = _model_at(root, loc[:-1], data)
    if model is None:
        return f"unknown key '{key}'"
    allowed = [f.alias or n for n, f in model.model_fields.items()]
    match = closest(spelled, allowed)
    if match is None and model in INDEX_TYPES:
        owners = {f.alias: m for m in INDEX_TYPES for f in m.model_fields.values() if f.alias not in allowed}
        other = closest(spelled, owners)
        if other is not None:
            only = f"{other} is only valid when type is {owners[other].model_fields['type'].default}"
            return only if other == key else f"unknown key '{key}'; did you mean '{other}'? ({only})"
    if match is not None:
        return f"unknown key '{key}'; did you mean '{match}'?"
    return f"unknown key '{key}'; expected one of: {', '.join(allowed)}"


def _message(root: type[BaseModel], error: dict, loc: tuple, data: Any) -> tuple[tuple, str]:
    """The location to report and the message for one pydantic error."""
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    if loc and loc[-1] == "[key]":
        return loc[:-1], f"keys must be strings, got {_describe(value)}"
    if kind == "extra_forbidden":
        return loc, _unknown_key(root, loc, data)
    if kind == "missing":
        return loc, f"missing required key '{loc[-1]}'"
    if kind == "union_tag_not_found":
        return (*loc, "type"), "missing required key 'type'"
    if kind == "union_tag_invalid":
        tags = re.findall(r"'([^']*)'", ctx.get("expected_tags", ""))
        return (*loc, "type"), f"unknown type {ctx.get('tag')!r}; expected one of {', '.join(tags)}{did_you_mean(str(ctx.get('tag')), tags)}"
    if kind == "literal_error":
        options = re.findall(r"'([^']*)'", ctx.get("expected", ""))
        shown = ", ".join(options)
        hint = did_you_mean(value, options) if isinstance(value, str) and len(options) > 1 else ""
        return loc, f"expected {'one of ' if len(options) > 1 else ''}{shown}, got {_describe(value)}{hint}"
    if kind in _EXPECTED:
        return loc, f"expected {_EXPECTED[kind]}, got {_describe(value)}"
    if kind == "string_pattern_mismatch":
        return loc, f"invalid name {value!r}: {_NAME_HELP}"
    if kind in ("greater_than_equal", "greater_than"):
        op = ">=" if kind == "greater_than_equal" else ">"
        return loc, f"must be {op} {ctx.get('ge', ctx.get('gt'))}, got {value}"
    if kind == "too_short":
        return loc, "must not be empty"
    return loc, re.sub(r"^(Value|Assertion) error, ", "", error["msg"])


def diagnose(root: type[BaseModel], error: ValidationError, doc: Document, file: str) -> list[Diagnostic]:
    """One diagnostic per pydantic error, at the most precise known position."""
    problems = [_message(root, err, _clean_loc(tuple(err["loc"]), doc.data), doc.data)
                for err in error.errors(include_url=False)]
    return _located(problems, doc, file, "error")


_ADAPTERS: dict[str, TypeAdapter] = {}


def _valid_part(name: str, value: Any) -> Any:
    """`value` validated as the TableBody field `name`, or None when invalid."""
    if name not in _ADAPTERS:
        field = TableBody.model_fields[name]
        _ADAPTERS[name] = TypeAdapter(typing.Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation)
    try:
        return _ADAPTERS[name].validate_python(value, strict=True, by_alias=True, by_name=False)
    except ValidationError:
        return None


def _salvaged_columns(raw: Any) -> list[Column] | None:
    """Valid columns, plus name-only stand-ins for invalid ones (so references to them are not reported)."""
    if not isinstance(raw, list):
        return None
    out = []
    for item in raw:
        column = _valid_part("columns", [item])
        if column:
            out += column
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            out.append(Column.model_construct(name=item["name"], type=None, nullable=True, comment=None))
    return out


def _cross_field_of_partial(raw: Any) -> list[tuple[tuple, str]]:
    """The body's cross-field errors, from the fields that are valid on their own.

    Pydantic runs TableBody's cross-field rules only when every field is valid; without this,
    a typo in a size would hide an unknown key column until the size is fixed.
    """
    if not isinstance(raw, dict):
        return []
    parts = {}
    for name, field in TableBody.model_fields.items():
        key = field.alias or name
        if key not in raw:
            parts[name] = None if field.is_required() else field.get_default(call_default_factory=True)
        elif name == "columns":
            parts[name] = _salvaged_columns(raw[key])
        else:
            parts[name] = _valid_part(name, raw[key])
    return [(("spec", *loc), message) for loc, message in body_problems(TableBody.model_construct(**parts))]


def validate_document(doc: Document, file: str) -> tuple[TableSpec | None, list[Diagnostic]]:
    """The spec of one document and its warnings, or None and its errors."""
    if not isinstance(doc.data, dict):
        return None, [Diagnostic(file, doc.line, doc.col, "", f"a spec document must be a mapping, got {_describe(doc.data)}")]
    try:
        spec = TableSpec.model_validate(doc.data, by_alias=True, by_name=False)
    except ValidationError as e:
        diagnostics = diagnose(TableSpec, e, doc, file)
        body_errors = [err for err in e.errors() if err["loc"][:1] == ("spec",)]
        if body_errors and not any(err["type"] == CROSS_FIELD for err in body_errors):
            diagnostics += _located(_cross_field_of_partial(doc.data.get("spec")), doc, file, "error")
        return None, sorted(diagnostics, key=lambda d: (d.line, d.col))
    return spec, _located(spec_warnings(spec), doc, file, "warning")


def _located(problems: list[tuple[tuple, str]], doc: Document, file: str, severity: str) -> list[Diagnostic]:
    out = []
    for loc, message in problems:
        path = format_path(loc)
        line, col = locate(doc.positions, path)
        out.append(Diagnostic(file, line, col, path, message, severity))
    return out

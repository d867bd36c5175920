"""Validate one YAML document against a model and turn pydantic's errors into located diagnostics.

Pydantic knows what is wrong; this module says it in the user's words: YAML key names,
"did you mean", which index type a misplaced setting belongs to, and where in the file.
"""
from __future__ import annotations

import re
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

from pydantic import AfterValidator, BaseModel, Field, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from tablespec.spec.base import SpecModel, Unparsed
from tablespec.spec.diagnostics import Diagnostic, format_path, locate
from tablespec.spec.model import INDEX_TYPES, TableSpec
from tablespec.spec.rules import closest, did_you_mean, spec_warnings
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
        owners = {f.alias: m for m in INDEX_TYPES for f in m.model_fields.values() if f.alias and f.alias not in allowed}
        other = closest(spelled, owners)
        if other is not None:
            only = f"{other} is only valid when type is {owners[other].model_fields['type'].default}"
            return only if other == key else f"unknown key '{key}'; did you mean '{other}'? ({only})"
    if match is not None:
        return f"unknown key '{key}'; did you mean '{match}'?"
    return f"unknown key '{key}'; expected one of: {', '.join(allowed)}"


def _message(root: type[BaseModel], error: Mapping[str, Any], loc: tuple, data: Any) -> tuple[tuple, str]:
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
        hint = did_you_mean(str(ctx.get("tag")), tags)
        return (*loc, "type"), f"unknown type {ctx.get('tag')!r}; expected one of {', '.join(tags)}{hint}"
    if kind == "literal_error":
        options = re.findall(r"'([^']*)'", ctx.get("expected", "")) or re.findall(r"\d+", ctx.get("expected", ""))
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


_UNSET: Any = object()


class _Salvage:
    """The errors that pydantic's validation of one document did not reach: model validators it skipped.

    Pydantic runs a model's `after` validators (the rules relating its fields) only when every
    field is valid. For each model that has an invalid field, this builds a partial instance from
    the fields that validate on their own (nested models recursively; failed fields left unset, see
    `Unparsed`) and runs the skipped validators on it. A field with an error in the document's
    report is never used, so no problem is reported twice.
    """

    def __init__(self, errors: Sequence[Mapping[str, Any]], data: Any):
        self.errors = [_clean_loc(tuple(err["loc"]), data) for err in errors]
        self.found: list[tuple[tuple, Mapping[str, Any]]] = []

    def _has_error(self, loc: tuple) -> bool:
        return any(err[:len(loc)] == loc for err in self.errors)

    def model(self, model: type[SpecModel], raw: Any, loc: tuple) -> SpecModel:
        """A partial `model` from `raw` (every field unset if `raw` is not a mapping), after running on it
        the model validators pydantic skipped."""
        given = raw if isinstance(raw, dict) else {}
        fields = {field.alias or name: name for name, field in model.model_fields.items()}
        # pydantic skips them when `raw` is not a mapping, has an unknown key, lacks a required one or has an invalid one
        skipped = not isinstance(raw, dict) or not given.keys() <= fields.keys()
        values, unset = {}, {}
        for key, name in fields.items():
            if key in given:
                value, valid = self.field(model, name, given[key], (*loc, key))
                skipped |= not valid
            elif isinstance(raw, dict) and not model.model_fields[name].is_required():
                continue  # model_construct fills in the default
            else:
                value, skipped = _UNSET, True
            if value is _UNSET:
                unset[name] = given.get(key)
            else:
                values[name] = value
        partial = model.model_construct(**values)
        for name in unset:
            partial.__dict__.pop(name, None)
            partial.__pydantic_fields_set__.discard(name)
        partial._as_written = unset
        if skipped:
            self._run_validators(partial, loc)
        return partial

    def field(self, model: type[SpecModel], name: str, raw: Any, loc: tuple) -> tuple[Any, bool]:
        """(value, valid): the field validated, else salvaged as a partial model, else _UNSET.

        `valid`: whether the field validates on its own (if not, pydantic skipped the model validators of `model`).
        """
        try:
            value, valid = _field_adapter(model, name).validate_python(raw, strict=True, by_alias=True, by_name=False), True
        except ValidationError:
            value, valid = _UNSET, False
        if not self._has_error(loc):
            return value, valid
        return self.salvage(model.model_fields[name].annotation, raw, loc), valid

    def salvage(self, tp: Any, raw: Any, loc: tuple) -> Any:
        """What is usable of `raw`, which has errors, as a `tp`: a partial model, a list of them, or _UNSET."""
        model = _as_model(tp, raw)
        if model is not None:
            return self.model(cast(type[SpecModel], model), raw, loc)   # spec fields hold spec models
        item = _list_item(tp)
        if item is None or not isinstance(raw, list) or (loc in self.errors):  # not a list of models, or the list itself is wrong
            return _UNSET
        items = []
        for i, value in enumerate(raw):
            if self._has_error((*loc, i)):
                items.append(self.salvage(item, value, (*loc, i)))
            else:
                items.append(_adapter(item).validate_python(value, strict=True, by_alias=True, by_name=False))
        return _UNSET if any(value is _UNSET for value in items) else items

    def _run_validators(self, partial: SpecModel, loc: tuple) -> None:
        for decorator in type(partial).__pydantic_decorators__.model_validators.values():
            if decorator.info.mode != "after":
                continue
            try:
                decorator.func(partial)
            except Unparsed:
                pass  # the rule needs a field that failed; that field's error is reported
            except ValidationError as e:
                self.found += [((*loc, *err["loc"]), err) for err in e.errors(include_url=False)]


_ADAPTERS: dict[Any, TypeAdapter] = {}


def _adapter(tp: Any) -> TypeAdapter:
    if tp not in _ADAPTERS:
        _ADAPTERS[tp] = TypeAdapter(tp)
    return _ADAPTERS[tp]


def _field_adapter(model: type[BaseModel], name: str) -> TypeAdapter:
    """Validates field `name` of `model` on its own: its type, constraints and the model's field validators."""
    key = (model, name)
    if key not in _ADAPTERS:
        field = model.model_fields[name]
        validators = [AfterValidator(d.func) for d in model.__pydantic_decorators__.field_validators.values()
                      if name in d.info.fields and d.info.mode == "after"]
        metadata = [*field.metadata, *([Field(discriminator=field.discriminator)] if field.discriminator else []), *validators]
        _ADAPTERS[key] = TypeAdapter(typing.Annotated[(field.annotation, *metadata)] if metadata else field.annotation)
    return _ADAPTERS[key]


def _list_item(tp: Any) -> Any:
    """The item type of a list type, or None."""
    tp = _strip(tp)
    if typing.get_origin(tp) is list:
        return typing.get_args(tp)[0]
    return None


def _skipped_problems(root: type[SpecModel], error: ValidationError, doc: Document) -> list[tuple[tuple, str]]:
    """The errors of the model validators pydantic skipped because a field failed (see `_Salvage`)."""
    salvage = _Salvage(error.errors(include_url=False), doc.data)
    salvage.model(root, doc.data, ())
    return [_message(root, err, loc, doc.data) for loc, err in salvage.found]


def validate_document(doc: Document, file: str) -> tuple[TableSpec | None, list[Diagnostic]]:
    """The spec of one document and its warnings, or None and its errors."""
    if not isinstance(doc.data, dict):
        return None, [Diagnostic(file, doc.line, doc.col, "", f"a spec document must be a mapping, got {_describe(doc.data)}")]
    try:
        spec = TableSpec.model_validate(doc.data, by_alias=True, by_name=False)
    except ValidationError as e:
        diagnostics = diagnose(TableSpec, e, doc, file) + _located(_skipped_problems(TableSpec, e, doc), doc, file, "error")
        return None, sorted(diagnostics, key=lambda d: (d.line, d.col))
    return spec, _located(spec_warnings(spec), doc, file, "warning")


def _located(problems: list[tuple[tuple, str]], doc: Document, file: str, severity: Literal["error", "warning"]) -> list[Diagnostic]:
    out = []
    for loc, message in problems:
        path = format_path(loc)
        line, col = locate(doc.positions, path)
        out.append(Diagnostic(file, line, col, path, message, severity))
    return out

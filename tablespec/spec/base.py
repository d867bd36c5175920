"""The shared pydantic base of every spec model, and the way validators report several problems at once."""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError
from pydantic.alias_generators import to_camel
from pydantic_core import InitErrorDetails, PydanticCustomError

Problem = tuple[tuple[str | int, ...], str]
"""A location relative to the model being validated, and a message."""


class SpecModel(BaseModel):
    """Frozen, strict (YAML `"16"` is not an int), camelCase on the outside, snake_case in Python.

    Field docstrings become descriptions in the JSON Schema that editors show.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        strict=True,
        alias_generator=to_camel,
        populate_by_name=True,
        use_attribute_docstrings=True,
        field_title_generator=lambda name, info: info.alias or name,
    )

    _as_written: dict[str, Any] | None = PrivateAttr(default=None)
    # Only in a partial model: the input of each field that failed validation (see `Unparsed`).

    if not TYPE_CHECKING:
        def __getattr__(self, name: str) -> Any:
            if name in type(self).model_fields:  # a field is unset only in a partial model
                raise Unparsed(f"{type(self).__name__}.{name} failed validation", name=name, obj=self)
            return super().__getattr__(name)


class Unparsed(AttributeError):
    """A rule read a field that failed validation.

    When a document has field errors, pydantic skips the model validators (the rules relating
    fields); validation.py then runs them on a partial model, built from the parts that did
    validate, whose failed fields are unset. Reading one raises this, and the rule is skipped:
    the field's own error is reported instead.
    """


def parsed(model: BaseModel, name: str) -> bool:
    """Whether field `name` of `model` validated (always true outside partial models)."""
    return name in model.__dict__


def as_written(model: SpecModel, name: str) -> Any:
    """Field `name` of `model`; for a field that failed validation, its input as written (None if absent)."""
    if parsed(model, name):
        return getattr(model, name)
    return (model._as_written or {}).get(name)


CROSS_FIELD = "cross_field"
"""Error type of the rules relating a table body's fields (see rules.py)."""


def problem(message: str, kind: str = "spec") -> PydanticCustomError:
    """A pydantic error whose message is shown as written (braces included)."""
    return PydanticCustomError(kind, "{message}", {"message": message})


def raise_problems(title: str, problems: Sequence[Problem], kind: str = "spec") -> None:
    """Raise all `problems` as one ValidationError; pydantic prefixes each location with the parent's."""
    if problems:
        raise ValidationError.from_exception_data(
            title, [InitErrorDetails(type=problem(msg, kind), loc=loc, input=None) for loc, msg in problems])

"""The shared pydantic base of every spec model, and the way validators report several problems at once."""
from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, ValidationError
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

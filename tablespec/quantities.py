"""Units as types: an estimate's or a result's field says what it measures (`Bytes`, `Count`,
`Seconds`, `Shift`), and plans and apply print each value by its field's type, not its name.

`Measured` is the base of such models: it writes only the fields that hold a value, in the
order they are declared (the plan file's `estimate` and `params` objects, apply's report).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, get_args

from pydantic import BaseModel, ConfigDict, Field, model_serializer

from tablespec.spec.sizes import human_bytes


class Unit:
    """What a number measures, and how people read it."""

    def __init__(self, name: str, show: Callable[[Any], Any] = lambda value: value):
        self.name, self.show = name, show

    def __repr__(self) -> str:
        return f"Unit({self.name})"


BYTES = Unit("bytes", human_bytes)
COUNT = Unit("count")
SECONDS = Unit("seconds")

Bytes = Annotated[int, Field(ge=0), BYTES]
"""Bytes, shown in KiB/MiB/GiB."""
Count = Annotated[int, Field(ge=0), COUNT]
Seconds = Annotated[float, Field(ge=0), SECONDS]
Shift = Annotated[str, Field(pattern=r"^\d+ -> \d+$")]
"""A count before and after an action: `12 -> 4`."""


def unit_of(model: type[BaseModel], name: str) -> Unit | None:
    field = model.model_fields[name]
    found = [m for m in field.metadata if isinstance(m, Unit)]
    for member in get_args(field.annotation):  # `Bytes | None`: the unit is on the union's member
        found += [m for m in getattr(member, "__metadata__", ()) if isinstance(m, Unit)]
    return found[0] if found else None


class Measured(BaseModel):
    """Typed values that are written (JSON, reports) without the fields that hold none."""

    # strict: a plan file's "3" is not the count 3 (a wrongly typed value is refused, not coerced)
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, validate_by_name=True,
                              validate_by_alias=True, serialize_by_alias=True)

    @model_serializer(mode="wrap")
    def _without_none(self, handler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}

    def shown(self) -> dict[str, Any]:
        """The values as people read them, by field type (bytes with units), in declared order."""
        out = {}
        for name, field in type(self).model_fields.items():
            value = getattr(self, name)
            if value is None:
                continue
            unit = unit_of(type(self), name)
            out[field.serialization_alias or name] = unit.show(value) if unit else value
        return out

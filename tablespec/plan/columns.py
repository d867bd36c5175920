"""Column diff between a spec and a table's schema, classified the way Hudi's schema evolution allows.

Adding a nullable column, widening a type and relaxing NOT NULL are evolutions (old files stay,
readers fill / cast); anything else would reinterpret or lose data and is destructive.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tablespec.types import DataType, is_widening, parse_type, stored

ColumnChangeKind = Literal["add", "drop", "widen", "retype", "relax_nullability", "require_not_null"]
DESTRUCTIVE_KINDS = {"drop", "retype", "require_not_null"}


@dataclass(frozen=True)
class ColumnChange:
    kind: ColumnChangeKind
    name: str
    old: str | None
    new: str | None

    @property
    def destructive(self) -> bool:
        return self.kind in DESTRUCTIVE_KINDS or (self.kind == "add" and self.new is not None and self.new.endswith(" not null"))

    def describe(self) -> str:
        return {
            "add": f"add column {self.name} {self.new}",
            "drop": f"drop column {self.name} {self.old}",
            "widen": f"widen column {self.name}: {self.old} -> {self.new}",
            "retype": f"change type of column {self.name}: {self.old} -> {self.new} (not a widening)",
            "relax_nullability": f"column {self.name} becomes nullable",
            "require_not_null": f"column {self.name} becomes NOT NULL",
        }[self.kind]


def _show(dt: DataType, nullable: bool) -> str:
    return str(dt) + ("" if nullable else " not null")


def diff_columns(desired: list[tuple[str, DataType, bool]], observed: list[tuple[str, DataType, bool]]) -> list[ColumnChange]:
    """Changes that turn the observed columns into the desired ones (order is not significant)."""
    old = {n: (stored(t), nl) for n, t, nl in observed}
    new = {n: (stored(t), nl) for n, t, nl in desired}
    changes: list[ColumnChange] = []
    for name, (t, nl) in new.items():
        if name not in old:
            changes.append(ColumnChange("add", name, None, _show(t, nl)))
            continue
        ot, onl = old[name]
        if ot != t:
            kind: ColumnChangeKind = "widen" if is_widening(ot, t) else "retype"
            changes.append(ColumnChange(kind, name, str(ot), str(t)))
        if onl and not nl:
            changes.append(ColumnChange("require_not_null", name, "nullable", "not null"))
        elif nl and not onl:
            changes.append(ColumnChange("relax_nullability", name, "not null", "nullable"))
    for name, (t, nl) in old.items():
        if name not in new:
            changes.append(ColumnChange("drop", name, _show(t, nl), None))
    return changes


def spec_columns(spec) -> list[tuple[str, DataType, bool]]:
    return [(c.name, parse_type(c.type), c.nullable) for c in spec.spec.columns]

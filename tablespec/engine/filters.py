"""A read's filters: a mapping of column to value (each column equals its value), or a list of
`(column, op, value)` conditions that all hold (the form pyarrow and delta-rs take). Ops: `=`
(`==`), `!=`, `<`, `<=`, `>`, `>=`, `in` (a list of values), `between` (a `(low, high)` pair, both
included). Conditions are normalized once here, so bucket pruning, statistics pruning and Spark's
filter read the same thing.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, NamedTuple

from tablespec.errors import TablespecError

OPS = ("=", "==", "!=", "<", "<=", ">", ">=", "in", "between")


class FilterError(TablespecError):
    """A read filter that cannot be applied (unknown column or op, a value of the wrong shape)."""


class Condition(NamedTuple):
    column: str
    op: str          # one of =, !=, <, <=, >, >=, in (value: a tuple)
    value: Any


def conditions(filters: Mapping[str, Any] | Collection[Any] | None, columns: Collection[str]) -> tuple[Condition, ...]:
    """`filters` as conditions that all hold; a FilterError names the one that cannot be applied."""
    if not filters:
        return ()
    items = [(c, "=", v) for c, v in filters.items()] if isinstance(filters, Mapping) else list(filters)
    out: list[Condition] = []
    for item in items:
        if not (isinstance(item, (tuple, list)) and len(item) == 3):
            raise FilterError(f"filter {item!r}: expected (column, op, value)")
        column, op, value = item
        if column not in columns:
            raise FilterError(f"filter {item!r}: the table has no column {column!r}")
        if op not in OPS:
            raise FilterError(f"filter {item!r}: unknown op {op!r}: one of {', '.join(OPS)}")
        if op in ("in", "between") and (isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Collection)):
            raise FilterError(f"filter {item!r}: `{op}` takes a list of values")
        if op == "between":
            if len(value) != 2:
                raise FilterError(f"filter {item!r}: `between` takes a (low, high) pair")
            low, high = value
            out += [Condition(column, ">=", low), Condition(column, "<=", high)]
        else:
            out.append(Condition(column, "=" if op == "==" else op, tuple(value) if op == "in" else value))
    return tuple(out)


def equalities(conds: tuple[Condition, ...]) -> dict[str, Any]:
    """The columns the conditions pin to one value (for bucket pruning)."""
    out: dict[str, Any] = {}
    for c in conds:
        if c.op == "=" and c.column not in out:
            out[c.column] = c.value
    return out


def spark_filter(df, conds: tuple[Condition, ...]):
    """`df` filtered by the conditions, as Spark compares the column with each literal."""
    from pyspark.sql import functions as F

    for column, op, value in conds:
        col = F.col(f"`{column}`")
        if op == "in":
            df = df.filter(col.isin(list(value)))
        else:
            lit = F.lit(value)
            df = df.filter({"=": col == lit, "!=": col != lit, "<": col < lit, "<=": col <= lit,
                            ">": col > lit, ">=": col >= lit}[op])
    return df


__all__ = ["OPS", "Condition", "FilterError", "conditions", "equalities", "spark_filter"]

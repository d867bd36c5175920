"""Hudi 1.x's expression indexes (`CREATE INDEX name ON t USING column_stats(col) OPTIONS(expr='from_unixtime',
format='yyyy-MM-dd')`, or `USING bloom_filters(col) OPTIONS(expr='lower')`), as Apache Hudi 1.2.0 writes them
(measured on a version 9 copy-on-write table): a metadata partition `expr_index_<name>` named in
hoodie.properties, file groups `expr-index-<name, _ as ->-NNNN-0`, and a definition in
`.hoodie/.index_defs/index.json`: `indexType` `column_stats` or `bloom_filters`, `indexFunction` the function,
the column as the one `sourceFields`, `indexOptions` the function (`expr`) and its options, version V2.

Their records hold statistics or filters of a Spark SQL function's values over every row, which no Parquet
footer tablespec writes gives: tablespec does not keep them. `import` declares the ones a table has, so the
spec says what is there; a plan keeping one is refused, one leaving it out drops it (plan/metadata_table.py).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tablespec.hudi.config import TableConfig, named_partitions
from tablespec.hudi.formats import index_defs

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

PREFIX = "expr_index_"


def named(config: TableConfig | None) -> tuple[str, ...]:
    """The expression-index partitions hoodie.properties name ready (one Hudi is still building is dropped)."""
    return tuple(p for p in named_partitions(config) if p.startswith(PREFIX))


def declared(partition: str, definition: Mapping[str, Any] | None) -> dict[str, Any]:
    """The spec's declaration (`dataSkipping.expressionIndexes`) of the index in `partition` as its
    definition describes it (what a definition lacks stays empty)."""
    found = definition or {}
    options = {str(k): str(v) for k, v in (found.get("indexOptions") or {}).items()}
    fields = found.get("sourceFields") or [""]
    return {"name": partition[len(PREFIX):], "type": str(found.get("indexType", "")),
            "column": str(fields[0]), "expression": options.pop("expr", str(found.get("indexFunction", ""))),
            "options": options}


def found(table: HudiTable) -> list[dict[str, Any]]:
    """The declarations of the expression indexes `table` has, from its definitions file (read only when it has one)."""
    partitions = named(table.config)
    if not partitions:
        return []
    defined = index_defs.definitions(table.storage, table.base, table.table_config)
    return [declared(p, defined.get(p)) for p in partitions]


def described(index: Mapping[str, Any]) -> str:
    """One index for a message: `idx_day (column_stats of from_unixtime(ts), format=yyyy-MM-dd)`."""
    options = "".join(f", {k}={v}" for k, v in sorted((index.get("options") or {}).items()))
    return f"{index['name']} ({index['type']} of {index['expression']}({index['column']}){options})"


__all__ = ["PREFIX", "declared", "described", "found", "named"]

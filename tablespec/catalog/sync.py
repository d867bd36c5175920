"""The catalog side of a table: what its registration should be (from the table as observed, or
from the spec for a table not created yet) and how the catalog differs, read one database at a time."""
from __future__ import annotations

from collections import defaultdict

from tablespec.catalog import Catalog
from tablespec.catalog.diff import CatalogDiff, diff
from tablespec.catalog.registration import Column, Registration, registration
from tablespec.hudi.io import join
from tablespec.spec.model import TableSpec
from tablespec.state import TableState
from tablespec.types import stored


def desired(spec: TableSpec, state: TableState, completion: bool = False) -> Registration:
    """The registration Hudi's sync would write for the table as `state` shows it (as the spec
    declares it, while it does not exist). `completion`: also read the head instant's completion
    time (one stat; apply does, plan compares without it)."""
    database, table = spec.catalog_name or ("", spec.name)
    if not state.exists:
        columns = [Column(c.name, stored(c.data_type), c.nullable) for c in spec.spec.columns]
        return registration(database, table, state.location, columns, list(spec.spec.partitioning.fields), [], None)
    completed_ms = None
    if completion and state.table is not None and state.head is not None:
        head = next((i for i in reversed(state.table.timeline.commits()) if i.timestamp == state.head), None)
        info = state.table.storage.info(join(state.location, ".hoodie", head.file_name)) if head else None
        completed_ms = info.mtime_ms if info else None
    return registration(database, table, state.location, [Column(c.name, c.type, c.nullable) for c in state.columns],
                        state.table_config.partition_field_names, list(state.partitions), state.head, completed_ms)


def catalog_diffs(catalog: Catalog, tables: list[tuple[TableSpec, TableState]],
                  completion: bool = False) -> dict[str, CatalogDiff]:
    """How the catalog differs for each registered table, by location: one read per database."""
    by_database: dict[str, list[tuple[TableSpec, TableState]]] = defaultdict(list)
    for spec, state in tables:
        if spec.catalog_name is not None:
            by_database[spec.catalog_name[0].lower()].append((spec, state))
    out = {}
    for database, members in by_database.items():
        registered = catalog.tables(database)
        for spec, state in members:
            want = desired(spec, state, completion)
            out[state.location] = diff(registered.get(want.table), want)
    return out

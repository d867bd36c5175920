"""Building Hudi's record index (the metadata table's `record_index` partition) as Apache Hudi 0.15
and 1.2 bootstrap it; `writer.record` then keeps it in every metadata deltacommit.

`initialize` takes the location of every record of the table and writes the partition's file
groups `record-index-NNNN-0` in one initializing deltacommit (initializer.py: its instant, files,
hoodie.properties and crash safety), then (1.x) the index's definition (index_defs.py). A build
too large for one process gives each file group's sorted entries to `write_file_group` where they
are (Spark executors) and commits with `initialize_written`: the entries never meet in one place.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import pyarrow as pa

from tablespec.hudi.config import named_partitions
from tablespec.hudi.formats import index_defs
from tablespec.hudi.io import Storage
from tablespec.hudi.mdt import initializer
from tablespec.hudi.mdt.layout import Format
from tablespec.hudi.mdt.record_index import (
    RECORD_INDEX,
    Location,
    by_file_group,
    encode_location,
    file_group_count,
    file_group_id,
)

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

Entry = tuple[str, str, str, str]          # record key, data partition, file id, instant that wrote it


ENTRY_COLUMNS = ("key", "partition", "file_id", "instant")


def is_enabled(table: HudiTable) -> bool:
    """Whether the table has Hudi's record index (its writers and readers use it)."""
    return RECORD_INDEX in named_partitions(table.config)


def initialize(table: HudiTable, entries: Iterable[Entry], file_groups: int | None = None) -> str:
    """Build the record index from (key, partition, file id, instant) of every record of the table
    (the instant of the file slice holding it) with `file_groups` file groups (by default as many
    as Hudi would give it) and name it in hoodie.properties. Returns the initializing instant.
    Call under the table lock with no data instant pending, on a table whose metadata table has
    its `files` partition. The handle is refreshed."""
    one_x = table.config is not None and Format.of(table.config).is_1x
    located = [(key, Location(partition, file_id, at)) for key, partition, file_id, at in entries]
    count = file_groups or file_group_count(len(located))
    groups = by_file_group(located, count)
    del located
    return initializer.initialize(table, RECORD_INDEX, groups, file_group_id,
                                  lambda location, name: encode_location(location, name, one_x), _define(table))


def write_file_group(storage: Storage, base: str, instant: str, index: int, one_x: bool,
                     entries: pa.Table) -> initializer.Written:
    """Write file group `index`'s base file at `instant` from its `entries` (`ENTRY_COLUMNS`,
    sorted by key, each key once), each distinct location encoded once."""
    encoded: dict[tuple[str, str, str], bytes] = {}

    def encode(where: tuple[str, str, str], name: str) -> bytes:
        found = encoded.get(where)
        if found is None:
            found = encoded[where] = encode_location(Location(*where), name, one_x)
        return found
    keys, *where = (entries.column(c).to_pylist() for c in ENTRY_COLUMNS)
    name, size = initializer.write_base_file(storage, base, RECORD_INDEX, instant, file_group_id(index),
                                             list(zip(keys, zip(*where))), encode, one_x)
    return index, name, size, len(keys)


def initialize_written(table: HudiTable, count: int,
                       write: Callable[[str, bool], list[initializer.Written]]) -> str:
    """`initialize` with `count` file groups whose base files `write(instant, one_x)` has written
    (`write_file_group` where the entries are), returning what each wrote."""
    return initializer.initialize_written(table, RECORD_INDEX, count, file_group_id, write, _define(table))


def _define(table: HudiTable) -> Callable:
    return lambda config: index_defs.with_index(table.storage, table.base, config, index_defs.RECORD_INDEX_DEFINITION)


__all__ = ["ENTRY_COLUMNS", "Entry", "initialize", "initialize_written", "is_enabled", "write_file_group"]

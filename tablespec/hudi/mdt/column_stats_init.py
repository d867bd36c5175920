"""Initializing the metadata table's `column_stats` (and, on version 9, `partition_stats`) from the
column ranges of the table's latest base files (read from their footers), and `bloom_filters` from
their footers' bloom filters, as Apache Hudi 0.15 and 1.2 initialize them: `column_stats` in 2 file
groups `col-stats-000N-0` (a record per file and indexed column), `partition_stats` in 1
`partition-stats-0000-0` (a record per data partition and column, tight bounds over its latest
files), `bloom_filters` in 4 `bloom-filters-000N-0` (a record per file), each at its own
initializing deltacommit (initializer.py); on version 9 the `column_stats` definition lists the
indexed columns. A build's filter records carry the latest data instant as their timestamp.
"""
from __future__ import annotations

import functools
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tablespec.hudi.formats import index_defs
from tablespec.hudi.mdt import bloom_filters, column_stats, initializer
from tablespec.hudi.mdt.bloom_filters import BLOOM_FILTERS, Footer
from tablespec.hudi.mdt.column_stats import COLUMN_STATS, PARTITION_STATS, ColumnRange
from tablespec.hudi.mdt.record_index import file_group_indices
from tablespec.hudi.mdt.records import encode

if TYPE_CHECKING:
    from tablespec.hudi.config import TableConfig
    from tablespec.hudi.table import HudiTable

# Hudi's defaults (...column.stats.file.group.count, ...bloom.filter.file.group.count)
FILE_GROUPS = {COLUMN_STATS: 2, PARTITION_STATS: 1, BLOOM_FILTERS: bloom_filters.FILE_GROUPS}
FILE_ID_PREFIXES = {COLUMN_STATS: "col-stats-", PARTITION_STATS: "partition-stats-",
                    BLOOM_FILTERS: bloom_filters.FILE_ID_PREFIX}

Record = tuple[str, Mapping[str, Any]]


def file_id(partition: str, index: int) -> str:
    return f"{FILE_ID_PREFIXES[partition]}{index:04d}-0"


def records(partition: str, ranges: Mapping[tuple[str, str], Sequence[ColumnRange]], one_x: bool) -> list[Record]:
    """The records of metadata partition `partition` for the ranges of each latest base file, by
    (data partition, file name)."""
    if partition == COLUMN_STATS:
        return [column_stats.column_stats_record(p, r, one_x) for (p, _), found in ranges.items() for r in found]
    by_partition: dict[str, list[ColumnRange]] = {}
    for (p, _), found in ranges.items():
        by_partition.setdefault(p, []).extend(found)
    return [column_stats.partition_stats_record(p, r) for p, found in sorted(by_partition.items())
            for r in column_stats.merged(found, column_stats.partition_name(p))]


def by_file_group(found: Sequence[Record], count: int) -> list[list[Record]]:
    """Each file group's records sorted by key (a key's group as the record index places keys)."""
    groups: list[list[Record]] = [[] for _ in range(count)]
    for record, index in zip(found, file_group_indices([k for k, _ in found], count).tolist()):
        groups[index].append(record)
    return [sorted(g, key=lambda kv: kv[0].encode()) for g in groups]


def filter_records(footers: Mapping[tuple[str, str], Footer], instant: str) -> list[Record]:
    """The `bloom_filters` records of each latest base file's filter, by (data partition, file name)."""
    return [bloom_filters.bloom_filter_record(p, name, instant, footer) for (p, name), footer in footers.items()]


def initialize(table: HudiTable, ranges: Mapping[tuple[str, str], Sequence[ColumnRange]],
               partitions: Collection[str], columns: Sequence[str] | None,
               footers: Mapping[tuple[str, str], Footer] | None = None) -> list[str]:
    """Build `partitions` (column_stats first) from `ranges` and (bloom_filters) the files' `footers`;
    `columns`: those indexed (version 9, its definition), None on version 6. Returns the
    initializing instants. Call as `initializer.initialize` says."""
    one_x = table.config is not None and table.config.version >= 8

    def define(config: TableConfig) -> TableConfig:
        return index_defs.with_index(table.storage, table.base, config,
                                     index_defs.column_stats_definition(list(columns or ())))
    instants = []
    head = table.timeline.head
    for partition in (p for p in (COLUMN_STATS, PARTITION_STATS, BLOOM_FILTERS) if p in partitions):
        found = filter_records(footers or {}, head.timestamp if head else "") if partition == BLOOM_FILTERS \
            else records(partition, ranges, one_x)
        groups = by_file_group(found, FILE_GROUPS[partition])
        instants.append(initializer.initialize(
            table, partition, groups, functools.partial(file_id, partition),
            lambda record, name: encode(record, name, one_x),
            define if partition == COLUMN_STATS and columns is not None else None))
    return instants


__all__ = ["FILE_GROUPS", "file_id", "initialize", "records"]

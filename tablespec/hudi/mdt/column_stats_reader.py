"""Reading the metadata table's `column_stats` to skip base files, as Hudi's readers do: a file whose
range of a column rules out a filter's condition (=, !=, <, <=, >, >=, in) holds no matching row.

On version 9 the `partition_stats` partition rules out whole data partitions the same way, each
slice of them confirmed by its files' `column_stats` (a lost log file leaves its bounds stale, too
narrow), in the same lookup as the file skipping.
Only the keys a read needs are looked up (a compared column's key for each candidate file or
partition: Hudi's keys are hashes, so a column's entries lie scattered through the HFiles), each in
the data blocks the HFiles' block indexes point to; the partition's latest slices are merged as Hudi
merges them (a key's newest record wins, deleted keys left out; only completed instants the data
table counts). A file without statistics is
read, never skipped; so is any file when the partition is not ready (named in hoodie.properties,
with a completed file group) or does not decode (`MetadataTableDamaged`). Only columns of the kinds
whose bounds are stored as the values themselves (integers, floats, strings, booleans), and values of
a matching Python type, are compared: others never skip a file.
"""
from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from tablespec.errors import MetadataTableDamaged
from tablespec.hudi.mdt import column_stats, reader
from tablespec.hudi.mdt.column_stats import COLUMN_STATS, PARTITION_STATS
from tablespec.hudi.mdt.column_stats_changes import half_built, kept

if TYPE_CHECKING:
    from tablespec.hudi.fs_view import FileSlice
    from tablespec.hudi.table import HudiTable

Stats = Mapping[str, Mapping[str, Any]]   # column_stats key -> its ColumnStatsMetadata
COMPARED_KINDS = frozenset({"boolean", "int", "long", "float", "double", "string"})
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def stored(table: HudiTable, partition: str, keys: Collection[str]) -> Stats | None:
    """The statistics of `keys` the table's `column_stats` (per file) or `partition_stats` (per data
    partition) holds, looked up through the HFiles' block indexes, not the whole partition read;
    None when it has none ready or it does not decode (reads then skip nothing)."""
    if partition not in kept(table) or partition in half_built(table):
        return None
    slices, valid = reader.latest_slices(table, partition)
    try:
        merged = column_stats.latest(itertools.chain.from_iterable(
            reader.slice_records(table.storage, table.base, s, valid, keys) for s in slices))
    except MetadataTableDamaged:
        return None
    return {k: r["ColumnStatsMetadata"] for k, r in merged.items() if r.get("ColumnStatsMetadata")}


def bound(wrapped: Any) -> Any:
    """A bound's value out of Hudi's wrapper (a record holding `value`), None where there is none."""
    if isinstance(wrapped, tuple):        # a named union branch: (wrapper name, record)
        wrapped = wrapped[1]
    return wrapped.get("value") if isinstance(wrapped, Mapping) else None


def _comparable(value: Any, bound: Any) -> bool:
    if isinstance(value, bool) or isinstance(bound, bool):
        return isinstance(value, bool) and isinstance(bound, bool)
    if isinstance(value, int):            # beyond a long Spark's literal is a decimal: not compared
        return _LONG_MIN <= value <= _LONG_MAX and isinstance(bound, (int, float))
    if isinstance(value, float):
        return isinstance(bound, (int, float))
    return isinstance(value, str) and isinstance(bound, str)


def _as_spark_compares(value: Any, lo: Any, hi: Any, kind: str | None) -> tuple[Any, Any, Any]:
    """The value and bounds as Spark's `column <op> literal` compares them: in floating point when
    either side is, an integer literal cast to float32 against a float column (Spark casts the
    narrower side: int and long to float, float to double; a Python float is a double literal, which
    a float column's values widen to exactly). Casting is monotonic, so the cast bounds still bound
    the cast values."""
    if isinstance(value, bool) or not (kind in ("float", "double") or isinstance(value, float)):
        return value, lo, hi
    if kind == "float":   # an int literal, and int bounds (files written before the column became a float)
        value, lo, hi = (_float32(x) if isinstance(x, int) else x for x in (value, lo, hi))
    return float(value), float(lo), float(hi)


def _float32(value: int) -> float:
    """An integer as a float column holds it: rounded once, as Java's (float) long (a bound beyond a
    long, which no int column writes, through a double)."""
    if not _LONG_MIN <= value <= _LONG_MAX:
        return float(np.float32(float(value)))
    return float(np.int64(value).astype(np.float32))


def excludes(stats: Mapping[str, Any], value: Any, kind: str | None = None, op: str = "=") -> bool:
    """Whether a file with these statistics of a column (of `kind`, `column_stats.kind_of`) holds no
    row for which `column <op> value` holds as Spark compares them (op: =, !=, <, <=, >, >=, or `in`
    with a tuple of values). A float or double column's maximum leaves NaN out (Parquet's statistics
    do) while Spark orders NaN above every value: its maximum never rules out >, >= or !=."""
    if value is None and op != "in":
        return False                      # a comparison with null matches nothing anyway: leave it to the read
    if stats.get("valueCount") is not None and stats.get("valueCount") == stats.get("nullCount"):
        return True                       # every value is null: no comparison holds
    if op == "in":
        return all(excludes(stats, v, kind) for v in value if v is not None)
    lo, hi = bound(stats.get("minValue")), bound(stats.get("maxValue"))
    if lo is None or hi is None or not (_comparable(value, lo) and _comparable(value, hi)):
        return False
    value, lo, hi = _as_spark_compares(value, lo, hi, kind)
    by_max = kind not in ("float", "double")
    if op == "=":
        return bool(value < lo or value > hi)
    if op == "<":
        return bool(lo >= value)
    if op == "<=":
        return bool(lo > value)
    if op == ">":
        return by_max and bool(hi <= value)
    if op == ">=":
        return by_max and bool(hi < value)
    return op == "!=" and by_max and bool(lo == hi == value)


def file_stats(table: HudiTable, files: Iterable[tuple[str, str]], conditions: Iterable[tuple[str, str, Any]],
               kinds: Mapping[str, str | None]) -> Stats | None:
    """`stored` for the compared columns of `conditions` and the base `files` ((partition, file name))
    only: their keys are looked up, not the whole partition read."""
    columns = _compared(conditions, kinds)
    keys = {column_stats.column_stats_key(c, p, f) for p, f in files for c in columns}
    return stored(table, COLUMN_STATS, keys) if keys else None


def _compared(conditions: Iterable[tuple[str, str, Any]], kinds: Mapping[str, str | None]) -> set[str]:
    return {c for c, _, _ in conditions if kinds.get(c) in COMPARED_KINDS}


def skipped(found: Stats, partition: str, file_name: str, conditions: Iterable[tuple[str, str, Any]],
            kinds: Mapping[str, str | None]) -> bool:
    """Whether a base file can be skipped for `conditions` that all hold ((column, op, value), as
    `excludes` takes them); `kinds`: each column's kind (`column_stats.kind_of`), only COMPARED_KINDS
    are compared."""
    return _rules_out(found, lambda c: column_stats.column_stats_key(c, partition, file_name), conditions, kinds)


def _rules_out(found: Stats, key: Callable[[str], str], conditions: Iterable[tuple[str, str, Any]],
               kinds: Mapping[str, str | None]) -> bool:
    return any(kinds.get(c) in COMPARED_KINDS and (s := found.get(key(c))) is not None
               and excludes(s, v, kinds.get(c), op) for c, op, v in conditions)


def partitions_ruled_out(table: HudiTable, partitions: Collection[str], conditions: Collection[tuple[str, str, Any]],
                         kinds: Mapping[str, str | None]) -> set[str]:
    """Of `partitions`, those whose `partition_stats` (tight bounds over each partition's latest files:
    for the latest snapshot only) rule a condition out; candidates only, `slices_left` confirms each
    slice of them with its files' `column_stats` (bounds gone stale with a lost log file are too narrow)."""
    columns = _compared(conditions, kinds)
    if not columns or PARTITION_STATS not in kept(table):
        return set()
    keys = {column_stats.partition_stats_key(c, p) for p in partitions for c in columns}
    if not keys or (found := stored(table, PARTITION_STATS, keys)) is None:
        return set()
    return {p for p in partitions
            if _rules_out(found, functools.partial(column_stats.partition_stats_key, partition=p), conditions, kinds)}


def slices_left(table: HudiTable, slices: list[FileSlice], conditions: Collection[tuple[str, str, Any]],
                kinds: Mapping[str, str | None], latest: bool = True) -> list[FileSlice]:
    """`slices` less those the statistics rule out, in one `column_stats` lookup: a base file without log
    files by its own statistics; with `partition_stats` (`latest`: the slices are the latest snapshot's),
    in a partition they rule out, a slice whose every file (base and log files) the `column_stats` rule
    out too. Only those files' keys are looked up: about what file skipping alone costs."""
    ruled_out = partitions_ruled_out(table, {s.partition for s in slices}, conditions, kinds) if latest else set()

    def compared(s: FileSlice) -> list[str]:
        """The files whose statistics decide whether `s` is skipped (none: it is read)."""
        if s.log_files and s.partition not in ruled_out:
            return []
        base = [s.base_file.name] if s.base_file is not None else []
        return base + [f.file_name.format() for f in s.log_files]

    files = [(s.partition, f) for s in slices for f in compared(s)]
    if (found := file_stats(table, files, conditions, kinds)) is None:
        return slices
    return [s for s in slices
            if not ((names := compared(s)) and all(skipped(found, s.partition, f, conditions, kinds) for f in names))]


__all__ = ["excludes", "file_stats", "partitions_ruled_out", "skipped", "slices_left", "stored"]

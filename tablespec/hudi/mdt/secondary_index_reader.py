"""Reading Hudi 1.x's secondary indexes to prune a read, as Hudi 1.2's reader does for `column = value` and
`column IN (...)`: each value's entries (all in the file group its `<escaped value>$` prefix hashes to) give
the record keys holding it, the record index gives their file groups, and only those file groups are read.

Trusted only when it can be: an index tablespec keeps (version 9 copy-on-write with the record index, its
definition naming one column), completely built, every block decoding, and every key it names found in the
record index (a key missing there is a stale entry: the index is then not used). Anything else answers None:
the read goes on without it, never with fewer files than it needs.
"""
from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from tablespec.errors import HudiFormatError, MetadataTableDamaged
from tablespec.hudi.mdt import layout, reader, record_index_reader, secondary_index
from tablespec.hudi.mdt.column_stats import latest
from tablespec.hudi.mdt.column_stats_changes import half_built

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

# the column kinds (column_stats.kind_of) whose values Hudi keys by their plain text, and the Python type of a
# filter's value compared exactly with them
_KEYED = {"int": int, "long": int, "string": str}


def _text(value: Any, kind: str | None) -> str | None:
    """A filter value as the index keys it, None where it cannot be looked up exactly."""
    wanted = _KEYED.get(kind or "")
    if wanted is None or isinstance(value, bool) or not isinstance(value, wanted):
        return None
    return str(value)


def indexed_columns(table: HudiTable) -> dict[str, str]:
    """Column -> the secondary-index partition on it that a read may use (kept and completely built)."""
    found = [p for p in secondary_index.kept_in(table.config) if p not in half_built(table)]
    try:
        return {column: p for p, column in secondary_index.columns(table, found).items()}
    except HudiFormatError:
        return {}


def record_keys(table: HudiTable, partition: str, values: Collection[str]) -> set[str]:
    """The record keys whose indexed column holds one of `values` (as the index keys them): only the file
    group of each value is read. MetadataTableDamaged where a block of it does not decode."""
    found, valid = reader.latest_slices(table, partition)
    slices = {s.file_id: s for s in found}
    name = partition[len(secondary_index.PREFIX):]
    prefixes = {secondary_index.escape(v) + "$" for v in values}
    keys: set[str] = set()
    for group in {secondary_index.file_group(p, len(slices)) for p in prefixes}:
        current = slices.get(secondary_index.file_id(name, group))
        if current is None:
            raise MetadataTableDamaged(partition, f"{layout.partition_path(table.base, partition)}: no file group "
                                                  f"{secondary_index.file_id(name, group)} of {len(slices)}")
        merged = latest(reader.slice_records(table.storage, table.base, current, valid))
        keys |= {secondary_index.record_key(k) for k in merged for p in prefixes if k.startswith(p)}
    return keys


def file_groups(table: HudiTable, conditions: Iterable[tuple[str, str, Any]],
                kinds: Mapping[str, str | None]) -> set[tuple[str, str]] | None:
    """The (data partition, file id) of the file groups holding every row an equality or IN condition on an
    indexed column admits (the conditions all hold: their file groups intersect); None when no condition can
    use an index, or one it would use cannot be trusted (the read then prunes without it)."""
    indexed = None
    out: set[tuple[str, str]] | None = None
    for column, op, value in conditions:
        if op not in ("=", "in"):
            continue
        indexed = indexed_columns(table) if indexed is None else indexed
        if column not in indexed:
            continue
        texts = [_text(v, kinds.get(column)) for v in (value if op == "in" else (value,)) if v is not None]
        if any(t is None for t in texts):
            continue
        try:
            keys = record_keys(table, indexed[column], {t for t in texts if t is not None})
            located = record_index_reader.lookup(table, keys)
        except (MetadataTableDamaged, HudiFormatError):
            return None
        if len(located) < len(keys):
            return None                    # an entry whose key the record index lacks: stale, not trusted
        groups = {(loc.partition, loc.file_id) for loc in located.values()}
        out = groups if out is None else out & groups
    return out


__all__ = ["file_groups", "indexed_columns", "record_keys"]

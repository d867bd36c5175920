"""Reading base files' bloom filters from the metadata table's `bloom_filters` partition, as Hudi's BLOOM
index does with `hoodie.bloom.index.use.metadata`: a lookup of the files' keys through the HFiles' block
indexes instead of opening each base file's footer.

The driver pins what tasks read (`StoredFilters`: the partition's latest slices and the instants whose
blocks count, plain values); each task looks up the files of the data partition it tags. A file the
partition holds no filter of, or a partition that does not decode, answers nothing for it: the task then
reads that file's footer, never skipping a file on an index it cannot trust.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tablespec.arrow.bloom import parse_bloom_filter
from tablespec.errors import HudiFormatError
from tablespec.hudi.io import Storage
from tablespec.hudi.mdt import layout, reader
from tablespec.hudi.mdt.bloom_filters import BLOOM_FILTERS, FILTER_TYPE, Footer, key
from tablespec.hudi.mdt.column_stats import latest
from tablespec.hudi.mdt.column_stats_changes import half_built, kept

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable


@dataclass(frozen=True)
class StoredFilters:
    """The `bloom_filters` partition as of the driver's timeline: its latest slices and valid instants."""
    base: str
    slices: tuple[layout.Slice, ...]
    valid: frozenset[str]

    @classmethod
    def of(cls, table: HudiTable) -> StoredFilters | None:
        """The table's, or None where it keeps no completely built `bloom_filters` partition."""
        if BLOOM_FILTERS not in kept(table) or BLOOM_FILTERS in half_built(table):
            return None
        slices, valid = reader.latest_slices(table, BLOOM_FILTERS)
        return cls(table.base, tuple(slices), frozenset(valid))

    def filters(self, storage: Storage, files: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Footer]:
        """(partition, file name) -> the filter the partition holds of each of `files` that it has one of;
        empty where the partition does not decode."""
        keys = {key(p, n): (p, n) for p, n in files}
        if not keys:
            return {}
        valid = set(self.valid)
        try:
            merged = latest(itertools.chain.from_iterable(
                reader.slice_records(storage, self.base, s, valid, keys) for s in self.slices))
        except HudiFormatError:                  # MetadataTableDamaged too: the footers are read instead
            return {}
        out = {}
        for k, record in merged.items():
            found = record.get("BloomFilterMetadata") or {}
            if k in keys and found.get("bloomFilter"):
                out[keys[k]] = (found["bloomFilter"], found.get("type") or FILTER_TYPE)
        return out

    def into(self, storage: Storage, files: Mapping[tuple[str, str], str], footers: dict) -> None:
        """Put into `footers` (base file path -> (min key, max key, filter), as `bloom_lookup.may_hold`
        takes them) the filters of `files` ((partition, file name) -> path) held here, with no key range:
        their footers are not opened. A file it holds none of is left to its footer."""
        for where, (encoded, type_code) in self.filters(storage, files).items():
            footers[files[where]] = (None, None, parse_bloom_filter(encoded, type_code))


__all__ = ["StoredFilters"]

"""Where record keys live in a BLOOM table, found as Hudi's BLOOM index finds them (no Spark): each
latest base file's bloom filter (from the metadata table's `bloom_filters` partition where it holds
one, else the file's footer, with its min/max record keys) rules files out; only the candidate files'
key columns are read. A merge-on-read slice with log files is read merged, as a snapshot reads it.
`may_hold` is the check BLOOM tagging's write tasks run too."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tablespec.arrow.basefile import MAX_KEY, MIN_KEY, within_java_range
from tablespec.arrow.bloom import FOOTER_KEY, TYPE_CODE_KEY, BloomFilter, parse_bloom_filter
from tablespec.arrow.merge import merged_keys, slice_keys
from tablespec.hudi.io import LOCAL, Storage
from tablespec.hudi.mdt.bloom_filters_reader import StoredFilters
from tablespec.hudi.table import HudiTable


def lookup(table: HudiTable, keys: list[str]) -> list[tuple[str, str, str]]:
    """(key, partition path, file id) of each of `keys` in each latest file slice holding it (a BLOOM
    index is per partition: a key may live in several partitions)."""
    wanted = pa.array(sorted(set(keys)), pa.string())
    slices = table.view.latest_slices()
    if not len(wanted) or not slices:
        return []
    storage = table.storage
    filtered = {(s.partition, s.base_file.name): s.base_file.path for s in slices if s.base_file is not None
                and not s.log_files}      # a slice with log files is read merged, never ruled out by a filter
    footers: dict[str, FooterKeys] = {}
    if (stored := StoredFilters.of(table)) is not None and filtered:
        stored.into(storage, filtered, footers)
    merged = merged_keys(table.table_config, table.timeline, slices, table.base)
    out = []
    for s in slices:
        path = filtered.get((s.partition, s.base_file.name)) if s.base_file is not None else None
        if path is not None and not may_hold(path, wanted, footers, storage):
            continue
        if (held := slice_keys(storage, merged, s)) is not None:
            out += [(k, s.partition, s.file_id) for k in wanted.filter(pc.is_in(wanted, value_set=held)).to_pylist()]
    return out


FooterKeys = tuple[str | None, str | None, BloomFilter | None]
"""A base file's min and max record keys and bloom filter (None where it has none)."""


def footer_keys(path: str, storage: Storage = LOCAL) -> FooterKeys:
    """A base file's min/max record keys and bloom filter, in one read of its footer."""
    with storage.open_input_file(path) as f:
        meta = pq.read_metadata(f).metadata or {}
    lo, hi = (meta[k].decode() if k in meta else None for k in (MIN_KEY, MAX_KEY))
    code = meta.get(TYPE_CODE_KEY)
    bloom = parse_bloom_filter(meta[FOOTER_KEY], code.decode() if code else None) if FOOTER_KEY in meta else None
    return lo, hi, bloom


def may_hold(path: str, keys: pa.Array, footers: dict[str, FooterKeys], storage: Storage = LOCAL) -> bool:
    """Whether the base file at `path` may hold one of `keys`: one within its footer's key range that
    passes its bloom filter (files without a range or filter may hold any key). `footers` caches each
    file's (a stored filter put there beforehand, `StoredFilters.into`, spares opening the file)."""
    if path not in footers:
        footers[path] = footer_keys(path, storage)
    lo, hi, bloom = footers[path]
    if lo is not None and hi is not None:
        keys = keys.filter(within_java_range(keys, lo, hi))
    return bool(len(keys)) and (bloom is None or bool(np.any(bloom.might_contain(keys))))


__all__ = ["footer_keys", "lookup", "may_hold"]

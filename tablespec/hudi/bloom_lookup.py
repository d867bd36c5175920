"""Where record keys live in a BLOOM table, found as Hudi's BLOOM index finds them (no Spark): each
latest base file's bloom filter (from the metadata table's `bloom_filters` partition where it holds
one, else the file's footer, with its min/max record keys) rules files out; only the candidate files'
key columns are read. A merge-on-read slice with log files is read merged, as a snapshot reads it."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tablespec.arrow.basefile import MAX_KEY, MIN_KEY, within_java_range
from tablespec.arrow.bloom import FOOTER_KEY, TYPE_CODE_KEY, parse_bloom_filter
from tablespec.arrow.merge import merged_keys
from tablespec.hudi.formats.base_keys import base_file_keys
from tablespec.hudi.io import Storage
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
    stored = StoredFilters.of(table)
    based = [(s.partition, s.base_file.name) for s in slices if s.base_file is not None and not s.log_files]
    filters = stored.filters(storage, based) if stored is not None and based else {}
    merged = merged_keys(table.table_config, table.timeline, slices, table.base)
    out = []
    for s in slices:
        if merged is not None and s.log_files:
            held = merged.keys(storage, s.partition, s.file_id)
        elif s.base_file is None:
            continue
        else:
            found = filters.get((s.partition, s.base_file.name))
            admitted = np.any(parse_bloom_filter(*found).might_contain(wanted)) if found is not None \
                else _footer_admits(storage, s.base_file.path, wanted)
            if not admitted:
                continue
            held = base_file_keys(s.base_file.path, storage, s.base_file.size)
        out += [(k, s.partition, s.file_id) for k in wanted.filter(pc.is_in(wanted, value_set=held)).to_pylist()]
    return out


def _footer_admits(storage: Storage, path: str, keys: pa.Array) -> bool:
    """Whether a base file's footer (one read: its min/max record keys and bloom filter) admits one of
    `keys`; a file without them admits any."""
    with storage.open_input_file(path) as f:
        meta = pq.read_metadata(f).metadata or {}
    if MIN_KEY in meta and MAX_KEY in meta:
        keys = keys.filter(within_java_range(keys, meta[MIN_KEY].decode(), meta[MAX_KEY].decode()))
    if not len(keys) or FOOTER_KEY not in meta:
        return bool(len(keys))
    code = meta.get(TYPE_CODE_KEY)
    return bool(np.any(parse_bloom_filter(meta[FOOTER_KEY], code.decode() if code else None).might_contain(keys)))


__all__ = ["lookup"]

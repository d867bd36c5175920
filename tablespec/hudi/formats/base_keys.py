"""The record keys of a data base file, read from its `_hoodie_record_key` column alone (Parquet
column projection): what the record index's changes, its build and `verify` compare."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from tablespec.hudi.io import LocalStorage, Storage

_LOCAL = LocalStorage()
KEY = "_hoodie_record_key"
WHOLE_READ_BYTES = 8 << 20   # object stores: a base file up to this size is read in one GET


def open_for_columns(storage: Storage, path: str, size: int | None) -> pa.NativeFile:
    """The base file at `path`, opened to read some of its columns. `size`, when the caller knows it
    (the file-system view does): no request to learn it, and a small file on an object store is
    fetched in one GET rather than footer, then columns."""
    small = size is not None and size <= WHOLE_READ_BYTES and not isinstance(storage, LocalStorage)
    return storage.open_whole_file(path) if small else storage.open_input_file(path, size)


def base_file_keys(path: str, storage: Storage | None = None, size: int | None = None) -> pa.Array:
    """The record keys of the base file at `path` (`size`: as `open_for_columns` says)."""
    with open_for_columns(storage or _LOCAL, path, size) as f:
        return pq.read_table(f, columns=[KEY]).column(KEY).combine_chunks().cast(pa.string())


__all__ = ["base_file_keys", "open_for_columns"]

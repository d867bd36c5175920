"""The base files one data instant's metadata-table update reads, each read once.

`column_stats` and `bloom_filters` need a written file's footer, the record index its keys, a
secondary index its keys and indexed column; the record index and secondary indexes also read the
base files of the slices the instant replaces. `BaseFileReads` opens each of these files once for
all of them: its footer and every column any kept partition needs (named up front), kept for the
update's duration (the keys were held to the end of it anyway).
"""
from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from tablespec.hudi.formats.base_keys import KEY, open_for_columns
from tablespec.hudi.io import Storage


@dataclass(frozen=True)
class BaseFileRead:
    footer: pq.FileMetaData
    columns: pa.Table           # the wanted columns the file has (one written before a column was added lacks it)


class BaseFileReads:
    """Each base file read once, its footer and `columns` (those it has)."""

    def __init__(self, storage: Storage, columns: Collection[str] = ()):
        self.storage = storage
        self.wanted = sorted(set(columns))
        self._read: dict[str, BaseFileRead] = {}

    def read(self, path: str, size: int | None = None) -> BaseFileRead:
        """The file at `path` (`size`: when known, no request to learn it)."""
        found = self._read.get(path)
        if found is None:
            with (open_for_columns(self.storage, path, size) if self.wanted
                  else self.storage.open_input_file(path, size)) as f:
                parquet = pq.ParquetFile(f)
                present = [c for c in self.wanted if c in parquet.schema_arrow.names]
                found = self._read[path] = BaseFileRead(parquet.metadata, parquet.read(columns=present))
        return found

    def keys(self, path: str, size: int | None = None) -> pa.Array:
        """The record keys of the file at `path` (the key column must be wanted)."""
        if KEY not in self.wanted:
            raise ValueError("the record keys were not asked for")
        return self.read(path, size).columns.column(KEY).combine_chunks().cast(pa.string())


__all__ = ["BaseFileRead", "BaseFileReads"]

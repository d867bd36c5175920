"""Hudi's `bloom_filters` metadata partition: each base file's bloom filter of record keys, which
Hudi's BLOOM index reads instead of the files' footers (`hoodie.bloom.index.use.metadata`), as
Apache Hudi 0.15 (table version 6) and 1.2 (version 9) write it (measured:
docs/hudi-interop.md#data-skipping-indexes). Pure conversions.

A record (type 4) is keyed by the partition's and the file name's hashes, as a `column_stats`
key without its column part, and goes to one of 4 file groups `bloom-filters-000N-0` as record-index
keys do. Its `BloomFilterMetadata` holds the footer's filter as written there (the base64 text's
bytes), the footer's type code (`DYNAMIC_V0`) and the instant that wrote the file. A file a clean
deleted: on 0.15 a record with `isDeleted`, an empty type and filter, and the clean's instant; on
1.x its key in a delete block. Version 9 keeps no index definition of the partition.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow.parquet as pq

from tablespec.arrow.bloom import FOOTER_KEY, TYPE_CODE_KEY
from tablespec.hudi.mdt.column_stats import file_id, name_id, partition_name

BLOOM_FILTERS = "bloom_filters"
BLOOM_FILTER_TYPE = 4
FILE_GROUPS = 4            # hoodie.metadata.index.bloom.filter.file.group.count
FILE_ID_PREFIX = "bloom-filters-"

Footer = tuple[bytes, str]   # a base file's filter as its footer stores it, and its type code
FILTER_TYPE = "DYNAMIC_V0"   # the type of the filters Hudi and tablespec write


def key(partition: str, file_name: str) -> str:
    return name_id(partition_name(partition)) + file_id(file_name)


def footer_filter(metadata: pq.FileMetaData) -> Footer | None:
    """The bloom filter a base file's footer holds (None: the file has none)."""
    found = metadata.metadata or {}
    encoded = found.get(FOOTER_KEY)
    if encoded is None:
        return None
    return encoded, found.get(TYPE_CODE_KEY, b"SIMPLE").decode()


def _record(partition: str, file_name: str, payload: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    return key(partition, file_name), {"key": "", "type": BLOOM_FILTER_TYPE, "filesystemMetadata": None,
                                       "BloomFilterMetadata": dict(payload)}


def bloom_filter_record(partition: str, file_name: str, instant: str, footer: Footer) -> tuple[str, dict[str, Any]]:
    """(key, HoodieMetadataRecord) of a base file's filter, written by `instant`."""
    encoded, type_code = footer
    return _record(partition, file_name, {"type": type_code, "timestamp": instant, "bloomFilter": encoded,
                                          "isDeleted": False})


def deleted_record(partition: str, file_name: str, instant: str) -> tuple[str, dict[str, Any]]:
    """The record saying `instant` (a clean) deleted the file: its filter is gone."""
    return _record(partition, file_name, {"type": "", "timestamp": instant, "bloomFilter": b"", "isDeleted": True})


__all__ = ["BLOOM_FILTERS", "FILE_GROUPS", "bloom_filter_record", "deleted_record", "footer_filter", "key"]

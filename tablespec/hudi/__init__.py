"""The Hudi table format (table versions 6 and 9; 8 read and upgraded), in Python: no Spark, no JVM.

The table handle (`table`), its config (`config`, keys from `keys`), storage (`io`, `s3`) and
file-system view (`fs_view`) sit here; the bytes on storage in `formats/`, the active timeline
in `timeline/`, table services in `services/`, the metadata table in `mdt/` and the archived
timeline in `archive/`. Tables written by Apache
Hudi read correctly here, and tables written here read correctly in Apache Hudi and hudi-rs.
"""
from tablespec.hudi.config import (
    KNOWN_KEYS,
    TableConfig,
    ensure_supported,
    fingerprint,
    init_table,
    read_table_config,
    write_table_config,
)
from tablespec.hudi.formats.avro import Column, decimal_fixed_size, from_avro_schema, to_avro_schema
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat, to_hudi_json
from tablespec.hudi.formats.naming import (
    META_COLUMNS,
    BaseFileName,
    LogFileName,
    bucket_file_id,
    bucket_of,
    new_file_id,
    write_token,
)
from tablespec.hudi.formats.partition import (
    DEFAULT_PARTITION,
    discover_partitions,
    parse_partition_path,
    partition_path,
    read_partition_metadata,
    write_partition_metadata,
)
from tablespec.hudi.formats.properties import format_properties, parse_properties, table_checksum
from tablespec.hudi.fs_view import BaseFile, FileGroup, FileSlice, FileSystemView, LogFile
from tablespec.hudi.io import FileInfo, LocalStorage, Storage, join
from tablespec.hudi.table import HudiTable, Location, StorageOptions
from tablespec.hudi.timeline.active import Timeline, TimelineWriter
from tablespec.hudi.timeline.instant import Instant, new_instant_time

__all__ = [
    "BaseFile", "BaseFileName", "Column", "CommitMetadata", "DEFAULT_PARTITION", "FileGroup", "FileInfo",
    "FileSlice", "FileSystemView", "HudiTable", "Instant", "KNOWN_KEYS", "LocalStorage", "Location", "LogFile",
    "LogFileName", "META_COLUMNS", "Storage", "StorageOptions", "TableConfig", "Timeline", "TimelineWriter", "WriteStat", "bucket_file_id",
    "bucket_of", "decimal_fixed_size", "discover_partitions", "ensure_supported", "fingerprint",
    "format_properties", "from_avro_schema", "init_table", "join", "new_file_id", "new_instant_time",
    "parse_partition_path", "parse_properties", "partition_path", "read_partition_metadata",
    "read_table_config", "table_checksum", "to_avro_schema", "to_hudi_json",
    "write_partition_metadata", "write_table_config", "write_token",
]

"""The Hudi table format (table version 6), implemented in Python: no Spark, no JVM.

Config (hoodie.properties), timeline (instants and their transitions), commit metadata,
file naming, partitions, the file-system view and Avro schemas. Tables written by Apache
Hudi read correctly here, and tables written here read correctly in Apache Hudi and hudi-rs.
"""
from tablespec.hudi.avro import Column, decimal_fixed_size, from_avro_schema, to_avro_schema
from tablespec.hudi.commit import CommitMetadata, WriteStat, to_hudi_json
from tablespec.hudi.config import (
    KNOWN_KEYS,
    TableConfig,
    ensure_supported,
    fingerprint,
    init_table,
    read_table_config,
    write_table_config,
)
from tablespec.hudi.fs_view import BaseFile, FileGroup, FileSlice, FileSystemView, LogFile
from tablespec.hudi.instant import Instant, new_instant_time
from tablespec.hudi.io import FileInfo, LocalStorage, Storage, join
from tablespec.hudi.naming import (
    META_COLUMNS,
    BaseFileName,
    LogFileName,
    bucket_file_id,
    bucket_of,
    new_file_id,
    write_token,
)
from tablespec.hudi.partition import (
    DEFAULT_PARTITION,
    discover_partitions,
    parse_partition_path,
    partition_path,
    read_partition_metadata,
    write_partition_metadata,
)
from tablespec.hudi.properties import format_properties, parse_properties, table_checksum
from tablespec.hudi.table import HudiTable, Location, StorageOptions
from tablespec.hudi.timeline import Timeline, TimelineWriter

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

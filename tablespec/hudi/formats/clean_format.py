"""The Avro formats of a clean instant (plan and metadata), shared by the data table's cleaner
(clean.py) and the metadata table's (mdt/cleaner.py)."""
from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

import fastavro

from tablespec.hudi.io import join_inside, path_inside

POLICY = "KEEP_LATEST_COMMITS"
VERSION = 2  # cleaner plan and clean metadata version of Hudi 0.14/0.15 (full paths per file)

# The Avro schemas of Apache Hudi 0.14/0.15 (org.apache.hudi.avro.model), field for field.
_NAMESPACE = "org.apache.hudi.avro.model"
_STRINGS = {"type": "array", "items": "string"}
_EXTRA = {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}], "default": None}

CLEANER_PLAN_SCHEMA = fastavro.parse_schema({
    "type": "record", "name": "HoodieCleanerPlan", "namespace": _NAMESPACE,
    "fields": [
        {"name": "earliestInstantToRetain", "default": None, "type": ["null", {
            "type": "record", "name": "HoodieActionInstant",
            "fields": [{"name": "timestamp", "type": "string"}, {"name": "action", "type": "string"},
                       {"name": "state", "type": "string"}]}]},
        {"name": "lastCompletedCommitTimestamp", "type": "string", "default": ""},
        {"name": "policy", "type": "string"},
        {"name": "filesToBeDeletedPerPartition", "type": ["null", {"type": "map", "values": _STRINGS}],
         "default": None},
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "filePathsToBeDeletedPerPartition", "default": None, "type": ["null", {
            "type": "map", "values": {"type": "array", "items": {
                "type": "record", "name": "HoodieCleanFileInfo",
                "fields": [{"name": "filePath", "type": ["null", "string"], "default": None},
                           {"name": "isBootstrapBaseFile", "type": ["null", "boolean"], "default": None}]}}}]},
        {"name": "partitionsToBeDeleted", "type": ["null", _STRINGS], "default": None},
        _EXTRA,
    ]})

CLEAN_METADATA_SCHEMA = fastavro.parse_schema({
    "type": "record", "name": "HoodieCleanMetadata", "namespace": _NAMESPACE,
    "fields": [
        {"name": "startCleanTime", "type": "string"},
        {"name": "timeTakenInMillis", "type": "long"},
        {"name": "totalFilesDeleted", "type": "int"},
        {"name": "earliestCommitToRetain", "type": "string"},
        {"name": "lastCompletedCommitTimestamp", "type": "string", "default": ""},
        {"name": "partitionMetadata", "type": {"type": "map", "values": {
            "type": "record", "name": "HoodieCleanPartitionMetadata",
            "fields": [
                {"name": "partitionPath", "type": "string"},
                {"name": "policy", "type": "string"},
                {"name": "deletePathPatterns", "type": _STRINGS},
                {"name": "successDeleteFiles", "type": _STRINGS},
                {"name": "failedDeleteFiles", "type": _STRINGS},
                {"name": "isPartitionDeleted", "type": ["null", "boolean"], "default": None},
            ]}}},
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "bootstrapPartitionMetadata", "default": None,
         "type": ["null", {"type": "map", "values": "HoodieCleanPartitionMetadata"}]},
        _EXTRA,
    ]})


def _storage_path(path: str) -> str:
    """Hudi's plans hold full URIs (file:/...); tablespec's hold storage paths."""
    return urlparse(path).path if path.startswith("file:") else path


def planned_files(base: str, plan: dict[str, Any], origin: str) -> dict[str, list[str]]:
    """Partition -> storage paths to delete; version 1 plans (Hudi < 0.8) list file names. Every
    path must be a file below the table (`origin`: the plan's file, named when one is not)."""
    if plan.get("filePathsToBeDeletedPerPartition"):
        return {_partition(base, p, origin): [path_inside(base, _storage_path(f["filePath"]), origin)
                                              for f in infos if f.get("filePath")]
                for p, infos in plan["filePathsToBeDeletedPerPartition"].items()}
    return {_partition(base, p, origin): [join_inside(base, p, name, origin=origin) for name in names]
            for p, names in (plan.get("filesToBeDeletedPerPartition") or {}).items()}


def _partition(base: str, partition: str, origin: str) -> str:
    """A partition path a plan names, once checked to stay inside the table."""
    join_inside(base, partition, origin=origin)
    return partition

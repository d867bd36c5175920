"""The Avro formats of a clean instant (plan and metadata), shared by the data table's cleaner
(clean.py) and the metadata table's (mdt/cleaner.py)."""
from __future__ import annotations

import fastavro

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

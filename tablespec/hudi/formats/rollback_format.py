"""The Avro formats of a rollback instant (plan and metadata), shared by the data table's
rollbacks (rollback.py) and the metadata table's (mdt/sync.py)."""
from __future__ import annotations

from typing import Any

import fastavro

# The Avro schemas of Apache Hudi 0.14/0.15 (org.apache.hudi.avro.model), field for field, so
# Hudi's tools read the rollbacks tablespec writes and tablespec resumes the ones Hudi left.
_NAMESPACE = "org.apache.hudi.avro.model"
_SIZES = ["null", {"type": "map", "values": "long"}]


def _instant_info() -> dict[str, Any]:
    return {"type": "record", "name": "HoodieInstantInfo", "namespace": _NAMESPACE,
            "fields": [{"name": "commitTime", "type": "string"}, {"name": "action", "type": "string"}]}


ROLLBACK_PLAN_SCHEMA = fastavro.parse_schema({
    "type": "record", "name": "HoodieRollbackPlan", "namespace": _NAMESPACE,
    "fields": [
        {"name": "instantToRollback", "type": ["null", _instant_info()], "default": None},
        {"name": "RollbackRequests", "default": None, "type": ["null", {"type": "array", "items": {
            "type": "record", "name": "HoodieRollbackRequest",
            "fields": [
                {"name": "partitionPath", "type": "string"},
                {"name": "fileId", "type": ["null", "string"], "default": None},
                {"name": "latestBaseInstant", "type": ["null", "string"], "default": None},
                {"name": "filesToBeDeleted", "type": {"type": "array", "items": "string"}, "default": []},
                {"name": "logBlocksToBeDeleted", "type": _SIZES, "default": None},
            ]}}]},
        {"name": "version", "type": ["int", "null"], "default": 1},
    ]})

ROLLBACK_METADATA_SCHEMA = fastavro.parse_schema({
    "type": "record", "name": "HoodieRollbackMetadata", "namespace": _NAMESPACE,
    "fields": [
        {"name": "startRollbackTime", "type": "string"},
        {"name": "timeTakenInMillis", "type": "long"},
        {"name": "totalFilesDeleted", "type": "int"},
        {"name": "commitsRollback", "type": {"type": "array", "items": "string"}},
        {"name": "partitionMetadata", "type": {"type": "map", "values": {
            "type": "record", "name": "HoodieRollbackPartitionMetadata",
            "fields": [
                {"name": "partitionPath", "type": "string"},
                {"name": "successDeleteFiles", "type": {"type": "array", "items": "string"}},
                {"name": "failedDeleteFiles", "type": {"type": "array", "items": "string"}},
                {"name": "rollbackLogFiles", "type": _SIZES, "default": None},
                {"name": "logFilesFromFailedCommit", "type": _SIZES, "default": None},
            ]}}},
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "instantsRollback", "type": {"type": "array", "items": _instant_info()}, "default": []},
    ]})

__all__ = ["ROLLBACK_METADATA_SCHEMA", "ROLLBACK_PLAN_SCHEMA"]

"""The Avro format of a clustering plan (`T.replacecommit.requested` / `T.clustering.requested`):
HoodieRequestedReplaceMetadata wrapping a HoodieClusteringPlan, shared by services/clustering.py,
the upgrade and the archived timeline."""
from __future__ import annotations

import fastavro

# The Avro schemas of Apache Hudi 0.14/0.15 (namespace org.apache.hudi.avro.model), field for field.
_NAMESPACE = "org.apache.hudi.avro.model"
_STRING_MAP = ["null", {"type": "map", "values": "string"}]
_SLICE_INFO = {
    "type": "record", "name": "HoodieSliceInfo", "namespace": _NAMESPACE,
    "fields": [
        {"name": "dataFilePath", "type": ["null", "string"], "default": None},
        {"name": "deltaFilePaths", "type": ["null", {"type": "array", "items": "string"}], "default": None},
        {"name": "fileId", "type": ["null", "string"]},
        {"name": "partitionPath", "type": ["null", "string"], "default": None},
        {"name": "bootstrapFilePath", "type": ["null", "string"], "default": None},
        {"name": "version", "type": ["int", "null"], "default": 1},
    ]}
_CLUSTERING_GROUP = {
    "type": "record", "name": "HoodieClusteringGroup", "namespace": _NAMESPACE,
    "fields": [
        {"name": "slices", "type": ["null", {"type": "array", "items": _SLICE_INFO}], "default": None},
        {"name": "metrics", "type": ["null", {"type": "map", "values": "double"}], "default": None},
        {"name": "numOutputFileGroups", "type": ["int", "null"], "default": 1},
        {"name": "extraMetadata", "type": _STRING_MAP, "default": None},  # set by consistent-hashing plans
        {"name": "version", "type": ["int", "null"], "default": 1},
    ]}
_CLUSTERING_STRATEGY = {
    "type": "record", "name": "HoodieClusteringStrategy", "namespace": _NAMESPACE,
    "fields": [
        {"name": "strategyClassName", "type": ["null", "string"], "default": None},
        {"name": "strategyParams", "type": _STRING_MAP, "default": None},
        {"name": "version", "type": ["int", "null"], "default": 1},
    ]}
_CLUSTERING_PLAN = {
    "type": "record", "name": "HoodieClusteringPlan", "namespace": _NAMESPACE,
    "fields": [
        {"name": "inputGroups", "type": ["null", {"type": "array", "items": _CLUSTERING_GROUP}], "default": None},
        {"name": "strategy", "type": ["null", _CLUSTERING_STRATEGY], "default": None},
        {"name": "extraMetadata", "type": _STRING_MAP, "default": None},
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "preserveHoodieMetadata", "type": ["null", "boolean"], "default": None},
    ]}
REQUESTED_REPLACE_SCHEMA = fastavro.parse_schema({
    "type": "record", "name": "HoodieRequestedReplaceMetadata", "namespace": _NAMESPACE,
    "fields": [
        # Hudi declares these two defaults as written here, although they do not match the
        # first union branch; a default is never written, only used for missing fields.
        {"name": "operationType", "type": ["null", "string"], "default": ""},
        {"name": "clusteringPlan", "type": [_CLUSTERING_PLAN, "null"], "default": None},
        {"name": "extraMetadata", "type": _STRING_MAP, "default": None},
        {"name": "version", "type": ["int", "null"], "default": 1},
    ]}, _ignore_default_error=True)

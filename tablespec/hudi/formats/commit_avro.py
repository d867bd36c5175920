"""Commit metadata as table versions 8 and 9 store it: an Avro container holding one
HoodieCommitMetadata (or, for a replacecommit, HoodieReplaceCommitMetadata) record.

The schemas are Apache Hudi 1.2's (org.apache.hudi.avro.model), field for field and in order,
with the `avro.java.string` hints its files carry, so a file tablespec writes declares the schema
Hudi's own do. Values follow what Hudi 1.2 writes: counters it always sets are 0, what a copy-on-write
writer never sets (log files, the record's `version`) is null. Reading is `CommitMetadata.from_avro`.
"""
from __future__ import annotations

import io
from typing import Any

import fastavro

from tablespec.hudi.formats.commit import CommitMetadata

_NAMESPACE = "org.apache.hudi.avro.model"
_STRING = {"type": "string", "avro.java.string": "String"}
_OPT_STRING = ["null", _STRING]
_LONG, _INT = ["null", "long"], ["null", "int"]


def _field(name: str, kind: Any) -> dict[str, Any]:
    return {"name": name, "type": kind, "default": None}


# HoodieWriteStat's fields in Hudi 1.2's order; the counters Hudi 1.2 writes as 0 when unset.
_STAT_FIELDS = [
    _field("fileId", _OPT_STRING), _field("path", _OPT_STRING), _field("prevCommit", _OPT_STRING),
    _field("numWrites", _LONG), _field("numDeletes", _LONG), _field("numUpdateWrites", _LONG),
    _field("totalWriteBytes", _LONG), _field("totalWriteErrors", _LONG), _field("partitionPath", _OPT_STRING),
    _field("totalLogRecords", _LONG), _field("totalLogFiles", _LONG), _field("totalUpdatedRecordsCompacted", _LONG),
    _field("numInserts", _LONG), _field("totalLogBlocks", _LONG), _field("totalCorruptLogBlock", _LONG),
    _field("totalRollbackBlocks", _LONG), _field("fileSizeInBytes", _LONG), _field("logVersion", _INT),
    _field("logOffset", _LONG), _field("baseFile", _OPT_STRING),
    _field("logFiles", ["null", {"type": "array", "items": _STRING, "default": None}]),
    _field("cdcStats", ["null", {"type": "map", "values": "long", "avro.java.string": "String", "default": None}]),
    _field("prevBaseFile", _OPT_STRING), _field("minEventTime", _LONG), _field("maxEventTime", _LONG),
    _field("runtimeStats", ["null", {"type": "record", "name": "HoodieRuntimeStats", "fields": [
        _field("totalScanTime", _LONG), _field("totalCreateTime", _LONG), _field("totalUpsertTime", _LONG)]}]),
    _field("totalLogFilesCompacted", _LONG), _field("totalLogReadTimeMs", _LONG),
    _field("totalLogSizeCompacted", _LONG), _field("tempPath", _OPT_STRING), _field("numUpdates", _LONG),
]
_ZERO = ("numWrites", "numDeletes", "numUpdateWrites", "totalWriteBytes", "totalWriteErrors", "totalLogRecords",
         "totalUpdatedRecordsCompacted", "numInserts", "totalLogBlocks", "totalCorruptLogBlock",
         "totalRollbackBlocks", "fileSizeInBytes", "totalLogFilesCompacted", "totalLogReadTimeMs",
         "totalLogSizeCompacted", "numUpdates")


def _schema(replace: bool) -> dict[str, Any]:
    stat = {"type": "record", "name": "HoodieWriteStat", "fields": _STAT_FIELDS}
    fields = [
        _field("partitionToWriteStats", ["null", {"type": "map", "values": {"type": "array", "items": stat},
                                                  "avro.java.string": "String"}]),
        _field("compacted", ["null", "boolean"]),
        _field("extraMetadata", ["null", {"type": "map", "values": _STRING, "avro.java.string": "String"}]),
        {"name": "version", "type": ["int", "null"], "default": 1},
        _field("operationType", _OPT_STRING),
    ]
    if replace:
        fields.append(_field("partitionToReplaceFileIds", ["null", {
            "type": "map", "values": {"type": "array", "items": _STRING}, "avro.java.string": "String"}]))
    name = "HoodieReplaceCommitMetadata" if replace else "HoodieCommitMetadata"
    return {"type": "record", "name": name, "namespace": _NAMESPACE, "fields": fields}


COMMIT_METADATA_SCHEMA = fastavro.parse_schema(_schema(replace=False))
REPLACE_COMMIT_METADATA_SCHEMA = fastavro.parse_schema(_schema(replace=True))
_STAT_NAMES = [f["name"] for f in _STAT_FIELDS]


def _stat_record(stat: dict[str, Any]) -> dict[str, Any]:
    record = {name: stat.get(name) for name in _STAT_NAMES}
    for name in _ZERO:
        if record[name] is None:
            record[name] = 0
    return record


def commit_record(metadata: CommitMetadata, replace: bool) -> dict[str, Any]:
    """The Avro record of `metadata` (`replace`: a replacecommit's, with partitionToReplaceFileIds)."""
    record: dict[str, Any] = {
        "partitionToWriteStats": {p: [_stat_record(s.to_dict()) for s in stats]
                                  for p, stats in metadata.partition_to_write_stats.items()},
        "compacted": metadata.compacted,
        "extraMetadata": {k: str(v) for k, v in metadata.extra_metadata.items()},
        "version": None,
        "operationType": metadata.operation_type,
    }
    if replace:
        record["partitionToReplaceFileIds"] = {p: list(ids) for p, ids in
                                               (metadata.partition_to_replace_file_ids or {}).items()}
    return record


def encode_commit_metadata(metadata: CommitMetadata, replace: bool) -> bytes:
    """A completed (or inflight) commit's file content in versions 8 and 9."""
    out = io.BytesIO()
    fastavro.writer(out, REPLACE_COMMIT_METADATA_SCHEMA if replace else COMMIT_METADATA_SCHEMA,
                    [commit_record(metadata, replace)])
    return out.getvalue()

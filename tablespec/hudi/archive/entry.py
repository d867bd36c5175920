"""One archived instant state as Hudi 0.15 stores it: a HoodieArchivedMetaEntry record.

Hudi archives every state file of an instant (requested, inflight, completed) as its own record:
`commitTime`, `actionType`, `actionState` (REQUESTED / INFLIGHT / COMPLETED), the state file's
modification time as `stateTransitionTime`, and the file's content in the field of its kind:

    commit, deltacommit (any state)     hoodieCommitMetadata (Avro form of the commit JSON)
    replacecommit completed             hoodieReplaceCommitMetadata
    replacecommit inflight / requested  HoodieInflightReplaceMetadata / hoodieRequestedReplaceMetadata
                                        (when the file has content)
    clean completed / pending           hoodieCleanMetadata / hoodieCleanerPlan
    compaction requested / inflight     hoodieCompactionPlan (the requested file's plan, in both states;
                                        completed, a compaction is a commit)
    rollback completed                  hoodieRollbackMetadata
    savepoint                           hoodieSavePointMetadata

A commit's Avro form keeps the write stats' Avro fields only (no runtime stats, no `compacted`:
a compaction is operationType COMPACT) and gains an empty `ROLLING_STAT` extra-metadata entry,
which reading drops again. An empty completed file (a crash on HDFS) is archived without content.

Blocks carry their writer schema, so the schema written here names only the fields tablespec
fills (types and names as Hudi's); Hudi reads them through its own schema, whose other fields
default to null.
"""
from __future__ import annotations

import io
import json
from typing import Any, cast

import fastavro

from tablespec.errors import HudiFormatError
from tablespec.hudi.formats.clean_format import CLEAN_METADATA_SCHEMA, CLEANER_PLAN_SCHEMA
from tablespec.hudi.formats.clustering_format import REQUESTED_REPLACE_SCHEMA
from tablespec.hudi.formats.commit import CommitMetadata
from tablespec.hudi.formats.compaction_format import PLAN_SCHEMA
from tablespec.hudi.formats.rollback_format import ROLLBACK_METADATA_SCHEMA
from tablespec.hudi.timeline.instant import (
    CLEAN,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    REPLACE_COMMIT,
    ROLLBACK,
    SAVEPOINT,
    Instant,
)

NAMESPACE = "org.apache.hudi.avro.model"
ROLLING_STAT = "ROLLING_STAT"   # the extra-metadata key Hudi's archiver adds, always empty
COMPACT = "COMPACT"
_AVRO_MAGIC = b"Obj\x01"

# HoodieWriteStat's Avro fields (Hudi's order), a subset of the JSON write stat's.
_STAT_FIELDS = (
    ("fileId", "string"), ("path", "string"), ("prevCommit", "string"), ("numWrites", "long"),
    ("numDeletes", "long"), ("numUpdateWrites", "long"), ("totalWriteBytes", "long"),
    ("totalWriteErrors", "long"), ("partitionPath", "string"), ("totalLogRecords", "long"),
    ("totalLogFiles", "long"), ("totalUpdatedRecordsCompacted", "long"), ("numInserts", "long"),
    ("totalLogBlocks", "long"), ("totalCorruptLogBlock", "long"), ("totalRollbackBlocks", "long"),
    ("fileSizeInBytes", "long"),
)
_WRITE_STAT = f"{NAMESPACE}.HoodieWriteStat"
_STRING_MAP = ["null", {"type": "map", "values": "string"}]
_STRING_LISTS = ["null", {"type": "map", "values": {"type": "array", "items": "string"}}]


def _plain(schema: Any) -> Any:
    """A schema parsed by fastavro as plain Avro JSON for a block header: fastavro's bookkeeping
    and the defaults dropped (a writer's defaults are never used; Hudi reads with its own)."""
    if isinstance(schema, dict):
        return {k: _plain(v) for k, v in schema.items() if not k.startswith("__") and k != "default"}
    if isinstance(schema, list):
        return [_plain(v) for v in schema]
    return schema


def _commit_schema(name: str, stats: Any, replace: bool) -> dict[str, Any]:
    fields = [{"name": "partitionToWriteStats", "type": ["null", {"type": "map", "values": {"type": "array", "items": stats}}]},
              {"name": "extraMetadata", "type": _STRING_MAP},
              {"name": "version", "type": ["int", "null"]},
              {"name": "operationType", "type": ["null", "string"]}]
    if replace:
        fields.append({"name": "partitionToReplaceFileIds", "type": _STRING_LISTS})
    return {"type": "record", "name": f"{NAMESPACE}.{name}", "fields": fields}


def _entry_schema() -> dict[str, Any]:
    stat = {"type": "record", "name": _WRITE_STAT,
            "fields": [{"name": n, "type": ["null", t]} for n, t in _STAT_FIELDS]}
    commit = _commit_schema("HoodieCommitMetadata", stat, replace=False)
    optional = ["null", "string"]
    return {"type": "record", "name": f"{NAMESPACE}.HoodieArchivedMetaEntry", "fields": [
        {"name": "hoodieCommitMetadata", "type": ["null", commit]},
        {"name": "hoodieCleanMetadata", "type": ["null", _plain(CLEAN_METADATA_SCHEMA)]},
        {"name": "hoodieRollbackMetadata", "type": ["null", _plain(ROLLBACK_METADATA_SCHEMA)]},
        {"name": "commitTime", "type": optional},
        {"name": "actionType", "type": optional},
        {"name": "version", "type": ["int", "null"]},
        {"name": "hoodieCompactionPlan", "type": ["null", _plain(PLAN_SCHEMA)]},
        {"name": "hoodieCleanerPlan", "type": ["null", _plain(CLEANER_PLAN_SCHEMA)]},
        {"name": "actionState", "type": optional},
        {"name": "hoodieReplaceCommitMetadata",
         "type": ["null", _commit_schema("HoodieReplaceCommitMetadata", _WRITE_STAT, replace=True)]},
        {"name": "hoodieRequestedReplaceMetadata", "type": ["null", _plain(REQUESTED_REPLACE_SCHEMA)]},
        {"name": "HoodieInflightReplaceMetadata", "type": ["null", f"{NAMESPACE}.HoodieCommitMetadata"]},
        {"name": "stateTransitionTime", "type": optional},
    ]}


ENTRY_SCHEMA: dict[str, Any] = _entry_schema()
# The field holding an archived completed instant's content, by action.
REQUESTED_REPLACE_FIELD = "hoodieRequestedReplaceMetadata"
COMPLETED_FIELD = {COMMIT: "hoodieCommitMetadata", DELTA_COMMIT: "hoodieCommitMetadata",
                   REPLACE_COMMIT: "hoodieReplaceCommitMetadata", CLEAN: "hoodieCleanMetadata",
                   ROLLBACK: "hoodieRollbackMetadata", SAVEPOINT: "hoodieSavePointMetadata"}


def _avro_content(raw: bytes, schema: Any, where: str) -> dict[str, Any]:
    """An Avro container's first record, resolved onto `schema` (defaults for missing fields)."""
    try:
        records = list(fastavro.reader(io.BytesIO(raw), reader_schema=schema))
    except (ValueError, EOFError, KeyError, fastavro.read.SchemaResolutionError) as e:
        raise HudiFormatError(f"{where}: unreadable Avro metadata: {e}") from None
    if not records:
        raise HudiFormatError(f"{where}: Avro metadata without a record")
    return cast(dict[str, Any], records[0])


def _commit_json(raw: bytes, where: str) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError as e:
        raise HudiFormatError(f"{where}: commit metadata is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise HudiFormatError(f"{where}: commit metadata must be a JSON object")
    return data


def avro_commit(data: dict[str, Any], replace: bool = False) -> dict[str, Any]:
    """A commit's JSON metadata in the Avro form Hudi's archiver stores (see the module doc)."""
    meta = CommitMetadata.from_dict(data)
    stats = {p: [{k: s.to_dict().get(k) for k, _ in _STAT_FIELDS} for s in lst]
             for p, lst in meta.partition_to_write_stats.items() if p is not None}
    out: dict[str, Any] = {
        "partitionToWriteStats": stats,
        "extraMetadata": {**meta.extra_metadata, ROLLING_STAT: ""},
        "version": None,
        "operationType": COMPACT if meta.compacted else (meta.operation_type or "UNKNOWN"),
    }
    if replace:
        out["partitionToReplaceFileIds"] = dict(meta.partition_to_replace_file_ids or {})
    return out


def entry_record(instant: Instant, raw: bytes, transition_time: str | None, where: str) -> dict[str, Any]:
    """The HoodieArchivedMetaEntry Hudi 0.15's archiver writes for one state file of `instant`
    whose content is `raw` (a compaction's: its requested plan); `where` names the file in errors."""
    record: dict[str, Any] = {"commitTime": instant.timestamp, "actionType": instant.action,
                              "actionState": instant.state.upper(), "stateTransitionTime": transition_time,
                              "version": None}
    action, state = instant.action, instant.state
    if state == "completed" and not raw.strip():
        return record                       # an empty completed file: archived without content
    if action in (COMMIT, DELTA_COMMIT):
        record["hoodieCommitMetadata"] = avro_commit(_commit_json(raw, where))
    elif action == REPLACE_COMMIT:
        if state == "completed":
            record["hoodieReplaceCommitMetadata"] = avro_commit(_commit_json(raw, where), replace=True)
        elif state == "inflight" and raw.strip():
            record["HoodieInflightReplaceMetadata"] = avro_commit(_commit_json(raw, where))
        elif state == "requested" and raw.startswith(_AVRO_MAGIC):
            record[REQUESTED_REPLACE_FIELD] = _avro_content(raw, REQUESTED_REPLACE_SCHEMA, where)
    elif action == CLEAN:
        if state == "completed":
            record["hoodieCleanMetadata"] = _avro_content(raw, CLEAN_METADATA_SCHEMA, where)
        elif raw.strip():
            record["hoodieCleanerPlan"] = _avro_content(raw, CLEANER_PLAN_SCHEMA, where)
    elif action == ROLLBACK:
        if state == "completed":
            record["hoodieRollbackMetadata"] = _avro_content(raw, ROLLBACK_METADATA_SCHEMA, where)
    elif action == COMPACTION:
        if raw.startswith(_AVRO_MAGIC):
            record["hoodieCompactionPlan"] = _avro_content(raw, PLAN_SCHEMA, where)
    else:
        raise HudiFormatError(f"{where}: tablespec does not archive {action} instants")
    return record


def record_instant(record: dict[str, Any], where: str) -> Instant:
    """The instant (in the archived state) a HoodieArchivedMetaEntry is about."""
    ts, action, state = record.get("commitTime"), record.get("actionType"), record.get("actionState")
    if not isinstance(ts, str) or not isinstance(action, str) or not isinstance(state, str):
        raise HudiFormatError(f"{where}: archived entry without commitTime, actionType or actionState")
    try:
        return Instant(ts, action, state.lower())  # type: ignore[arg-type]
    except HudiFormatError as e:
        raise HudiFormatError(f"{where}: archived entry {ts} {action} {state}: {e}") from None


def commit_metadata(record: dict[str, Any]) -> CommitMetadata:
    """An archived completed commit's metadata in the shape the active timeline gives it."""
    replace = record.get("hoodieReplaceCommitMetadata")
    avro = record.get("hoodieCommitMetadata") or replace or {}
    extra = {k: v for k, v in (avro.get("extraMetadata") or {}).items() if not (k == ROLLING_STAT and v == "")}
    meta = CommitMetadata.from_avro({**avro, "extraMetadata": extra}, replace=replace is not None)
    meta.compacted = avro.get("operationType") == COMPACT
    return meta

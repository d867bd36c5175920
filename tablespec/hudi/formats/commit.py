"""Commit metadata (the JSON of completed commit / deltacommit / replacecommit instants; Avro in
table versions 8 and 9, and in the archive: `CommitMetadata.from_avro` reads that form).

Hudi writes it with Jackson's default pretty printer; `to_hudi_json` reproduces that layout
byte for byte, so metadata tablespec writes looks exactly like Hudi's and Hudi's own files
survive a parse/dump round trip unchanged. Unknown keys are kept, in order, for the same reason.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tablespec.errors import HudiFormatError
from tablespec.hudi.formats.avro import without_meta_fields
from tablespec.hudi.io import outside_reason

# HoodieWriteStat's JSON keys in Jackson's order, with the Python attribute and default of each.
_STAT_FIELDS: tuple[tuple[str, str, Any], ...] = (
    ("fileId", "file_id", ""),
    ("path", "path", None),
    ("cdcStats", "cdc_stats", None),
    ("prevCommit", "prev_commit", "null"),
    ("numWrites", "num_writes", 0),
    ("numDeletes", "num_deletes", 0),
    ("numUpdateWrites", "num_update_writes", 0),
    ("numInserts", "num_inserts", 0),
    ("totalWriteBytes", "total_write_bytes", 0),
    ("totalWriteErrors", "total_write_errors", 0),
    ("tempPath", "temp_path", None),
    ("partitionPath", "partition_path", None),
    ("totalLogRecords", "total_log_records", 0),
    ("totalLogFilesCompacted", "total_log_files_compacted", 0),
    ("totalLogSizeCompacted", "total_log_size_compacted", 0),
    ("totalUpdatedRecordsCompacted", "total_updated_records_compacted", 0),
    ("totalLogBlocks", "total_log_blocks", 0),
    ("totalCorruptLogBlock", "total_corrupt_log_block", 0),
    ("totalRollbackBlocks", "total_rollback_blocks", 0),
    ("fileSizeInBytes", "file_size_in_bytes", 0),
    ("minEventTime", "min_event_time", None),
    ("maxEventTime", "max_event_time", None),
    ("runtimeStats", "runtime_stats", None),
)
_STAT_KEYS = {key for key, _, _ in _STAT_FIELDS}
_STAT_PATHS = {"path", "tempPath", "partitionPath"}
_STAT_DEFAULTS = {attr: default for _, attr, default in _STAT_FIELDS}
_STAT_ATTRS = {key: attr for key, attr, _ in _STAT_FIELDS}
_STAT_PATH_FIELDS = tuple((key, attr) for key, attr, _ in _STAT_FIELDS if key in _STAT_PATHS)
_STAT_INT_FIELDS = tuple((key, attr) for key, attr, default in _STAT_FIELDS
                         if key not in _STAT_PATHS and isinstance(default, int))


def _path(value: Any, what: str, relative: bool = False) -> Any:
    """A path commit metadata records (partition, file), refused when it could lead outside the
    table: a `..` segment, a backslash or NUL (`relative`: also an absolute path or URI; write
    stats of some Hudi versions hold full paths, resolved below the table by their readers)."""
    if value is None:
        return None
    reason = outside_reason(value) if isinstance(value, str) else "not a string"
    if reason is not None and not (reason.startswith("an absolute") and not relative):
        raise HudiFormatError(f"{what} {value!r}: {reason}")
    return value


def _typed(value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise HudiFormatError(f"{what} is {type(value).__name__}, not {getattr(kind, '__name__', kind)}")
    return value


@dataclass
class WriteStat:
    """What one task wrote into one file (HoodieWriteStat). `prev_commit` is the string "null"
    for a new file group, as Hudi writes it. `extra` keeps keys of subclasses (delta stats)."""
    file_id: str = ""
    path: str | None = None
    cdc_stats: Any = None
    prev_commit: str = "null"
    num_writes: int = 0
    num_deletes: int = 0
    num_update_writes: int = 0
    num_inserts: int = 0
    total_write_bytes: int = 0
    total_write_errors: int = 0
    temp_path: str | None = None
    partition_path: str | None = None
    total_log_records: int = 0
    total_log_files_compacted: int = 0
    total_log_size_compacted: int = 0
    total_updated_records_compacted: int = 0
    total_log_blocks: int = 0
    total_corrupt_log_block: int = 0
    total_rollback_blocks: int = 0
    file_size_in_bytes: int = 0
    min_event_time: int | None = None
    max_event_time: int | None = None
    runtime_stats: dict[str, int] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = {key: getattr(self, attr) for key, attr, _ in _STAT_FIELDS}
        out.update(self.extra)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WriteStat:
        if not isinstance(data, dict):
            raise HudiFormatError(f"write stat must be a JSON object, found {type(data).__name__}")
        values = dict(_STAT_DEFAULTS)              # a commit holds thousands of stats: each key looked at once
        extra = {}
        for key, value in data.items():
            if (attr := _STAT_ATTRS.get(key)) is not None:
                values[attr] = value
            else:
                extra[key] = value
        for key, attr in _STAT_PATH_FIELDS:
            _path(values[attr], f"write stat {key}")
        if not all(type(values[attr]) is int for _, attr in _STAT_INT_FIELDS):   # ints (the usual) pass at once
            for key, attr in _STAT_INT_FIELDS:
                if (value := values[attr]) is not None:
                    _typed(value, int, f"write stat {key}")
        if "/" in _typed(values["file_id"], str, "write stat fileId"):
            raise HudiFormatError(f"write stat fileId {values['file_id']!r}: not a file group id")
        _typed(values["prev_commit"], str, "write stat prevCommit")
        return cls(**values, extra=extra)


CLUSTER = "CLUSTER"  # WriteOperationType.CLUSTER: a clustering plan's requested metadata and its completed commit

_TOP_KEYS = ("partitionToWriteStats", "compacted", "extraMetadata", "operationType", "partitionToReplaceFileIds")


@dataclass
class CommitMetadata:
    """HoodieCommitMetadata; with `partition_to_replace_file_ids` set it is a replacecommit's
    HoodieReplaceCommitMetadata (the key is written only then)."""
    partition_to_write_stats: dict[str, list[WriteStat]] = field(default_factory=dict)
    compacted: bool = False
    extra_metadata: dict[str, str] = field(default_factory=dict)
    operation_type: str | None = None
    partition_to_replace_file_ids: dict[str, list[str]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def schema(self) -> str | None:
        """The table schema (Avro JSON) this commit was written with, if recorded: the data columns
        only (some Hudi operations record the meta columns too; see avro.without_meta_fields)."""
        recorded = self.extra_metadata.get("schema")
        return without_meta_fields(recorded) if recorded else None

    def write_stats(self) -> list[WriteStat]:
        return [s for stats in self.partition_to_write_stats.values() for s in stats]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "partitionToWriteStats": {p: [s.to_dict() for s in stats]
                                      for p, stats in self.partition_to_write_stats.items()},
            "compacted": self.compacted,
            "extraMetadata": dict(self.extra_metadata),
            "operationType": self.operation_type,
        }
        if self.partition_to_replace_file_ids is not None:
            out["partitionToReplaceFileIds"] = {p: list(ids) for p, ids in self.partition_to_replace_file_ids.items()}
        out.update(self.extra)
        return out

    def to_json(self) -> bytes:
        return to_hudi_json(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CommitMetadata:
        if not isinstance(data, dict):
            raise HudiFormatError("commit metadata must be a JSON object")
        stats, replaced = _partitions(data, "partitionToWriteStats") or {}, _partitions(data, "partitionToReplaceFileIds")
        return cls(
            partition_to_write_stats={p: [WriteStat.from_dict(s) for s in lst] for p, lst in stats.items()},
            compacted=bool(data.get("compacted", False)),
            extra_metadata=_extra_metadata(data),
            operation_type=_typed(data.get("operationType"), (str, type(None)), "operationType"),
            partition_to_replace_file_ids=(None if replaced is None
                                           else {p: [_typed(i, str, "a replaced file id") for i in ids]
                                                 for p, ids in replaced.items()}),
            extra={k: v for k, v in data.items() if k not in _TOP_KEYS},
        )

    @classmethod
    def from_avro(cls, record: dict[str, Any], replace: bool | None = None) -> CommitMetadata:
        """The Avro form (HoodieCommitMetadata / HoodieReplaceCommitMetadata records) in this shape:
        fields the Avro write stat has and the JSON one lacks, left null, are dropped. `replace`:
        whether it is a replacecommit's (default: whether it holds partitionToReplaceFileIds)."""
        replaced = _partitions(record, "partitionToReplaceFileIds")
        if replace is None:
            replace = replaced is not None
        stats = _partitions(record, "partitionToWriteStats") or {}
        return cls(
            partition_to_write_stats={p: [WriteStat.from_dict({k: v for k, v in _typed(s, dict, "a write stat").items()
                                                               if v is not None})
                                          for s in lst] for p, lst in stats.items()},
            compacted=bool(record.get("compacted") or False),
            extra_metadata=_extra_metadata(record),
            operation_type=_typed(record.get("operationType"), (str, type(None)), "operationType"),
            partition_to_replace_file_ids=({p: list(ids or []) for p, ids in (replaced or {}).items()}
                                           if replace else None),
        )

    @classmethod
    def from_json(cls, data: bytes | str) -> CommitMetadata:
        if isinstance(data, bytes):
            data = data.decode("utf-8")
        if not data.strip():
            return cls()
        try:
            return cls.from_dict(json.loads(data))
        except json.JSONDecodeError as e:
            raise HudiFormatError(f"commit metadata is not valid JSON: {e}") from None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CommitMetadata):
            return NotImplemented
        return self.to_dict() == other.to_dict()


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _partitions(data: dict[str, Any], key: str) -> dict[str, list[Any]] | None:
    """`key`'s map of partition path -> list, checked (partition paths stay inside the table)."""
    found = data.get(key)
    if found is None:
        return None
    for partition, items in _typed(found, dict, key).items():
        _path(partition, f"{key} partition", relative=True)
        _typed(items if items is not None else [], list, f"{key}[{partition!r}]")
    return {p: items or [] for p, items in found.items()}


def _extra_metadata(data: dict[str, Any]) -> dict[str, str]:
    found = _typed(data.get("extraMetadata") or {}, dict, "extraMetadata")
    _typed(found.get("schema", ""), str, "extraMetadata schema")
    return dict(found)


def _string(s: str) -> str:
    return '"' + "".join(_JSON_ESCAPES.get(c) or (f"\\u{ord(c):04X}" if c < " " else c) for c in s) + '"'


def _value(v: Any, level: int) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, dict):
        if not v:
            return "{ }"
        pad = "  " * (level + 1)
        items = ",\n".join(f"{pad}{_string(str(k))} : {_value(x, level + 1)}" for k, x in v.items())
        return "{\n" + items + "\n" + "  " * level + "}"
    if isinstance(v, (list, tuple)):
        if not v:
            return "[ ]"
        return "[ " + ", ".join(_value(x, level) for x in v) + " ]"
    raise TypeError(f"cannot write {type(v).__name__} as Hudi JSON")


def to_hudi_json(data: Any) -> bytes:
    """JSON laid out like Jackson's default pretty printer (Hudi's timeline files)."""
    return _value(data, 0).encode("utf-8")

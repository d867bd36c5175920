"""The Avro format of a compaction plan (`T.compaction.requested`): a HoodieCompactionPlan, one
operation per file slice to compact (its partition, file group, base instant, base file and log
files by name, and Hudi's size metrics). Hudi 1.x's plan has one more field, the partitions it
could not schedule. The file is an Avro container with the writer's schema, like clean and
clustering plans, so Hudi runs plans tablespec schedules and the reverse.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tablespec.errors import HudiFormatError
from tablespec.hudi.formats.naming import BaseFileName, LogFileName
from tablespec.hudi.io import outside_reason

# The schemas of Apache Hudi 0.15 and 1.x (namespace org.apache.hudi.avro.model), field for field.
_STRING = {"type": "string", "avro.java.string": "String"}
_MAP_OF_STRINGS = ["null", {"type": "map", "values": _STRING, "avro.java.string": "String"}]
PLAN_SCHEMA: dict[str, Any] = {
    "type": "record", "name": "HoodieCompactionPlan", "namespace": "org.apache.hudi.avro.model", "fields": [
        {"name": "operations", "default": None, "type": ["null", {"type": "array", "items": {
            "type": "record", "name": "HoodieCompactionOperation", "fields": [
                {"name": "baseInstantTime", "type": ["null", _STRING]},
                {"name": "deltaFilePaths", "default": None, "type": ["null", {"type": "array", "items": _STRING}]},
                {"name": "dataFilePath", "default": None, "type": ["null", _STRING]},
                {"name": "fileId", "type": ["null", _STRING]},
                {"name": "partitionPath", "default": None, "type": ["null", _STRING]},
                {"name": "metrics", "default": None,
                 "type": ["null", {"type": "map", "values": "double", "avro.java.string": "String"}]},
                {"name": "bootstrapFilePath", "default": None, "type": ["null", _STRING]}]}}]},
        {"name": "extraMetadata", "default": None, "type": _MAP_OF_STRINGS},
        {"name": "version", "default": 1, "type": ["int", "null"]},
        {"name": "strategy", "default": None, "type": ["null", {
            "type": "record", "name": "HoodieCompactionStrategy", "fields": [
                {"name": "compactorClassName", "default": None, "type": ["null", _STRING]},
                {"name": "strategyParams", "default": None, "type": _MAP_OF_STRINGS},
                {"name": "version", "default": 1, "type": ["int", "null"]}]}]},
        {"name": "preserveHoodieMetadata", "default": False, "type": ["boolean", "null"]}]}
PLAN_SCHEMA_1X: dict[str, Any] = {**PLAN_SCHEMA, "fields": [*PLAN_SCHEMA["fields"], {
    "name": "missingSchedulePartitions", "default": None, "type": ["null", {"type": "array", "items": _STRING}]}]}
PLAN_VERSION = 2   # CompactionUtils.LATEST_COMPACTION_METADATA_VERSION

# The metrics Hudi's compaction strategies record per operation (CompactionStrategy.captureMetrics).
LOG_FILES, LOG_BYTES = "TOTAL_LOG_FILES", "TOTAL_LOG_FILES_SIZE"
READ_MB, WRITE_MB, IO_MB = "TOTAL_IO_READ_MB", "TOTAL_IO_WRITE_MB", "TOTAL_IO_MB"
_MB = 1024 * 1024


@dataclass(frozen=True)
class CompactionOperation:
    """One file slice to compact: its log files merged with its base file (if any) into a new base file
    of the same file group, written at the compaction's instant."""
    partition: str
    file_id: str
    base_instant: str
    base_file: str | None                 # file name, as Hudi records it
    log_files: tuple[str, ...]            # file names, oldest first
    metrics: dict[str, float] = field(default_factory=dict, compare=False)
    bootstrap_file: str | None = None

    @classmethod
    def of(cls, partition: str, file_id: str, base_instant: str, base: tuple[str, int] | None,
           logs: list[tuple[str, int]]) -> CompactionOperation:
        """The operation of a slice (base file and log files as (name, bytes)), with Hudi's metrics:
        log bytes and count, and the MB it reads (base and logs) and writes (the base file's size)."""
        log_bytes = sum(size for _, size in logs)
        base_bytes = base[1] if base else 0
        read, write = (base_bytes + log_bytes) // _MB, base_bytes // _MB
        metrics = {LOG_FILES: float(len(logs)), LOG_BYTES: float(log_bytes), READ_MB: float(read),
                   WRITE_MB: float(write), IO_MB: float(read + write)}
        return cls(partition, file_id, base_instant, base[0] if base else None, tuple(n for n, _ in logs), metrics)

    @property
    def log_bytes(self) -> int:
        return int(self.metrics.get(LOG_BYTES, 0))

    @property
    def io_mb(self) -> int:
        return int(self.metrics.get(IO_MB, 0))


@dataclass(frozen=True)
class CompactionPlan:
    operations: tuple[CompactionOperation, ...]
    extra_metadata: dict[str, str] = field(default_factory=dict)
    missing_partitions: tuple[str, ...] = ()   # Hudi 1.x: partitions it could not schedule

    def file_ids(self) -> set[tuple[str, str]]:
        return {(op.partition, op.file_id) for op in self.operations}


def plan_record(plan: CompactionPlan, one_x: bool) -> dict[str, Any]:
    """The plan as the record Hudi (0.15, or 1.x: `one_x`) writes into `T.compaction.requested`."""
    record: dict[str, Any] = {
        "operations": [{"baseInstantTime": op.base_instant, "deltaFilePaths": list(op.log_files),
                        "dataFilePath": op.base_file, "fileId": op.file_id, "partitionPath": op.partition,
                        "metrics": dict(op.metrics), "bootstrapFilePath": op.bootstrap_file}
                       for op in plan.operations],
        "extraMetadata": dict(plan.extra_metadata), "version": PLAN_VERSION, "strategy": None,
        "preserveHoodieMetadata": False}
    if one_x:
        record["missingSchedulePartitions"] = list(plan.missing_partitions)
    return record


def _name(value: Any, parse, what: str, where: str, op: int) -> str:
    if not isinstance(value, str) or "/" in value or parse(value) is None:
        raise HudiFormatError(f"{where}: operation {op} names {what} {value!r}, not a file name of the table "
                              "(compaction plans name files, not paths); refused")
    return value


def decode_plan(record: dict[str, Any], where: str) -> CompactionPlan:
    """A compaction plan from the content of `T.compaction.requested` (as avro_content returns it);
    `where` names the file in errors. Every partition stays inside the table and every file is named
    as a base or log file of the operation's file group."""
    ops = []
    for i, op in enumerate(record.get("operations") or ()):
        file_id, partition, instant = op.get("fileId"), op.get("partitionPath") or "", op.get("baseInstantTime")
        if not isinstance(file_id, str) or not file_id or "/" in file_id:
            raise HudiFormatError(f"{where}: operation {i} has no file group id ({file_id!r}); refused")
        if (reason := outside_reason(partition)) is not None:
            raise HudiFormatError(f"{where}: operation {i}: partition {partition!r} leads outside the table "
                                  f"({reason}); refused")
        if not isinstance(instant, str) or not instant.isdigit():
            raise HudiFormatError(f"{where}: operation {i} has no base instant ({instant!r}); refused")
        base = op.get("dataFilePath") or None
        if base is not None:
            _name(base, BaseFileName.parse, "base file", where, i)
        logs = tuple(_name(n, LogFileName.parse, "log file", where, i) for n in op.get("deltaFilePaths") or ())
        ops.append(CompactionOperation(partition, file_id, instant, base, logs, dict(op.get("metrics") or {}),
                                       op.get("bootstrapFilePath") or None))
    return CompactionPlan(tuple(ops), dict(record.get("extraMetadata") or {}),
                          tuple(record.get("missingSchedulePartitions") or ()))

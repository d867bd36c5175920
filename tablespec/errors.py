"""One error family for the whole library; the CLI turns any of these into a message and exit code 1."""
from __future__ import annotations


class TablespecError(Exception):
    """Base of every error tablespec raises on purpose (bad input, refused action, corrupt table)."""


class SpecError(TablespecError):
    """A spec (or project file, or variable) is invalid; carries diagnostics with file/line/field."""

    def __init__(self, diagnostics):
        self.diagnostics = list(diagnostics)
        super().__init__("\n".join(str(d) for d in self.diagnostics))


class HudiFormatError(TablespecError):
    """A table's files do not follow the Hudi v6 format (or use a feature tablespec does not support)."""


class UnsupportedTableError(HudiFormatError):
    """A real Hudi table that tablespec recognises but refuses (e.g. other table versions, virtual keys)."""


class LogFileDamaged(HudiFormatError):
    """A merge-on-read log file holds a block it cannot read inside the bytes a completed deltacommit
    wrote (a corrupt block, or a committed block that does not decode): a read would miss committed
    updates. `path` is the log file."""

    def __init__(self, path: str, message: str):
        self.path = path
        super().__init__(f"{path}: {message}; the log file is damaged; restore it from a copy")


class SparkJobError(TablespecError):
    """A Spark job failed (usually on the data); the action was rolled back, nothing was committed."""


class PlanError(TablespecError):
    """A plan cannot be made or applied (stale plan, refused action, destructive change without consent)."""


class StalePlanError(PlanError):
    """The table or spec changed since the plan was made."""


class MetadataTableDamaged(HudiFormatError):
    """A file of Hudi's metadata table a completed instant wrote is damaged (a corrupt or altered log
    block, an HFile that does not decode): readers would miss entries, so writes are refused and
    `plan` proposes rebuilding the partition. `partition` is the metadata partition (`files`,
    `record_index`)."""

    def __init__(self, partition: str, message: str, *, explained: bool = False):
        self.partition = partition
        super().__init__(message if explained else f"{message}; the metadata table's {partition} partition is "
                                                   "damaged (`tablespec plan` proposes rebuilding it)")

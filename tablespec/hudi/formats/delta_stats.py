"""The write stat of a deltacommit's log file (HoodieDeltaWriteStat): the keys Apache Hudi 0.15
adds after the common ones, in its order (measured): the log file's version, the offset its
blocks start at (0: every deltacommit writes a new log file), the slice's base file name ("" for a
slice without one), the slice's log files up to this one, and an empty records-stats holder."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def delta_stat_fields(log_version: int, base_file: str, log_files: Sequence[str], log_offset: int = 0) -> dict[str, Any]:
    """The HoodieDeltaWriteStat keys of one log file's write stat (`WriteStat.extra`)."""
    return {"logVersion": log_version, "logOffset": log_offset, "baseFile": base_file,
            "logFiles": list(log_files), "recordsStats": {"val": None}}

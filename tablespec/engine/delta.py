"""The driver's part of a deltacommit on a merge-on-read table: where each file group's log file
goes and how its stored rows are read, decided from the timeline and the file-system view."""
from __future__ import annotations

from typing import Any

from tablespec.engine.tasks import LogTarget
from tablespec.hudi.fs_view import FileSystemView
from tablespec.hudi.merge_on_read import MergeRules, counting, slice_reads
from tablespec.hudi.table import HudiTable


def log_targets(table: HudiTable, view: FileSystemView, instant: str) -> dict[str, Any]:
    """The WriteJob fields of deltacommit `instant`: each file group's latest slice as a LogTarget,
    the instants whose log blocks count and the table's merge rule. Version 6 (timeline layout 1):
    the log file is named by the slice's base instant, the next version after every log file of the
    slice on storage (a failed write's included); versions 8/9: named by the deltacommit, version 1,
    and the write stat names no base file and only its own log file (as Hudi 1.2 writes it, measured)."""
    slices = view.latest_slices()
    wanted = counting(view.timeline)
    reads = {r.file_id: r for r in slice_reads(view.timeline, slices, wanted)}
    targets = {}
    for s in slices:
        if view.timeline.layout >= 2:
            targets[s.file_id] = LogTarget(partition=s.partition, log_instant=instant, base_file="", log_files=(),
                                           next_version=1, read=reads[s.file_id])
            continue
        names = [f.file_name for f in s.log_files if f.file_name.base_instant == s.base_instant]
        targets[s.file_id] = LogTarget(
            partition=s.partition, log_instant=s.base_instant,
            base_file=s.base_file.name if s.base_file is not None else "",
            log_files=tuple(n.format() for n in names),
            next_version=max((n.version for n in names), default=0) + 1, read=reads[s.file_id])
    return {"log_targets": targets, "counting": wanted, "merge_rules": MergeRules.of(table.table_config)}

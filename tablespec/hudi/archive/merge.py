"""Merging small archive files, as Apache Hudi 0.15's archiver merges them where storage cannot
append (hoodie.archive.merge.*): without it, every archiving run leaves one more file under
.hoodie/archived/, and every reader of the archive lists and opens them all.

The candidates are the newest archive files up to the first one larger than the small-file
limit (older files stay as they are, so versions still run from older to newer instants, which
Hudi's time-filtered reader relies on); once there are `batch` of them, they are merged into
the log's next version. Crash-safe in Hudi's four steps: the merge plan `mergeArchivePlan`
(candidates and the merged file's name) is written first, then the merged file, then the
candidates are deleted, and the plan last. `finish_merge` settles a plan left behind: all
candidates still there means the merged file may be incomplete, so it goes (undone); some
gone means the merged file was complete, so the rest go (done). Either way no archived
instant is lost, and while both exist readers count an instant once.
"""
from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

import fastavro

from tablespec.faults import crash_point
from tablespec.hudi import keys
from tablespec.hudi.archive.log import ArchiveFile, archive_files, encode, file_name, folder_path, read_records
from tablespec.hudi.io import Storage, join
from tablespec.hudi.timeline.active import avro_record

PLAN_NAME = "mergeArchivePlan"   # HoodieArchivedTimeline.MERGE_ARCHIVE_PLAN_NAME
PLAN_SCHEMA = fastavro.parse_schema({
    "namespace": "org.apache.hudi.avro.model", "type": "record", "name": "HoodieMergeArchiveFilePlan",
    "fields": [{"name": "candidate", "type": ["null", {"type": "array", "items": "string"}], "default": None},
               {"name": "mergedArchiveFileName", "type": ["null", "string"], "default": None}]})


@dataclass(frozen=True)
class MergeSettings:
    """Hudi's defaults: 10 files of at most 20 MiB. tablespec merges whatever Hudi's
    hoodie.archive.merge.enable says (false by default): its storages cannot append."""
    small_file_limit: int = int(keys.ARCHIVE_MERGE_SMALL_FILE_LIMIT.default or 0)
    batch: int = int(keys.ARCHIVE_MERGE_FILES_BATCH_SIZE.default or 0)


def merge_candidates(files: Sequence[ArchiveFile], small_file_limit: int) -> list[ArchiveFile]:
    """The newest files up to the first one larger than `small_file_limit`, oldest first."""
    out: list[ArchiveFile] = []
    for f in reversed(files):
        if f.info.size > small_file_limit:
            break
        out.append(f)
    return out[::-1]


def _plan_path(base: str, folder: str) -> str:
    return join(folder_path(base, folder), PLAN_NAME)


def merge_small_files(storage: Storage, base: str, folder: str, settings: MergeSettings = MergeSettings(),
                      files: Sequence[ArchiveFile] | None = None) -> str | None:
    """Merge the small archive files once there are `settings.batch` of them; returns the merged
    file's path (None: nothing merged). `files`: the archive files as just listed."""
    files = archive_files(storage, base, folder) if files is None else files
    candidates = merge_candidates(files, settings.small_file_limit)
    if len(candidates) < settings.batch:
        return None
    merged = join(folder_path(base, folder), file_name(files[-1].version + 1))
    plan = {"candidate": [c.path for c in candidates], "mergedArchiveFileName": merged.rsplit("/", 1)[-1]}
    storage.create_exclusive(_plan_path(base, folder), avro_record(PLAN_SCHEMA, plan))
    crash_point("archive_merge_planned")
    records = [r for c in candidates for r in read_records(storage, c)]
    storage.create_exclusive(merged, encode(records))
    crash_point("archive_merge_written")
    storage.delete_files([c.path for c in candidates])
    crash_point("archive_merge_candidates_deleted")
    storage.delete(_plan_path(base, folder))
    return merged


def finish_merge(storage: Storage, base: str, folder: str) -> bool:
    """Settle a merge a crash interrupted (its plan is still there): undo it while every candidate
    is there, else complete it. Returns whether a plan was found. Candidates are taken by name
    in the archive folder (Hudi's plans hold full URIs, tablespec's storage paths)."""
    plan_path = _plan_path(base, folder)
    try:
        data = storage.read_bytes(plan_path)
    except FileNotFoundError:
        return False
    try:
        plan = next(fastavro.reader(io.BytesIO(data)))
        if not isinstance(plan, dict):
            raise ValueError("not a merge plan record")
    except Exception:  # a torn plan: the merge had not started (Hudi drops it too)
        storage.delete(plan_path)
        return True
    folder_at = folder_path(base, folder)
    candidates = [join(folder_at, c.rsplit("/", 1)[-1]) for c in plan.get("candidate") or []]
    merged = plan.get("mergedArchiveFileName")
    merged_path = join(folder_at, merged) if merged else None
    if all(storage.exists(c) for c in candidates):
        if merged_path is not None:
            storage.delete(merged_path)          # maybe incomplete: undone
    elif merged_path is not None and storage.exists(merged_path):
        storage.delete_files(candidates)         # complete: the rest of the candidates go
    storage.delete(plan_path)
    return True

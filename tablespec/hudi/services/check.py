"""Checking a table's data files against its timeline (no Spark): what readers would silently get wrong.

Readers (Apache Hudi's listing, hudi-rs, tablespec) build file slices from what storage lists:
a base file a completed commit wrote but storage lacks is skipped without an error, and the
file group's previous slice (or nothing of it) is served instead. A file no commit wrote is
ignored when its instant is pending or unknown, but taken for part of the table when it is named
with a completed instant, or with one older than the active timeline. This module compares the
commits' write stats (path and fileSizeInBytes of every file written) with storage:

- `missing`: a base file a completed commit wrote is absent although a reader needs it: it is
  the latest slice of a file group no completed replacecommit took out, or a slice that time
  travel to a retained instant reads. What the cleaner may have removed is not needed: slices
  older than the newest one before the earliest retained instant (`clean.earliest_readable_instant`),
  and file groups replaced before it, by the cleaner's own rule (`clean.retained_instants`); other
  slices a completed clean records as deleted (cleaning policies that keep no commit window)
  neither, but never a file group's latest slice. Files of rolled-back instants are no
  completed commit's. A partition whose `.hoodie_partition_metadata` is gone is `missing` too:
  no reader lists it.
- `truncated`: the file is there, but its size differs from the commit's fileSizeInBytes, or a
  parquet file does not start and end with its magic `PAR1` (read cheaply: 4 bytes each end).
- `orphan`: a base file in a partition named with an instant that is no completed instant on
  the timeline, or with a completed one whose commit does not list it (a leftover of a failed
  or retried task). Files of pending instants are work in progress: counted, not reported.
  Instants older than the active timeline belong to archived commits when the table has an
  archive (the archived timeline is not read); without one, such a file is an orphan that
  readers serve.

Only base files are checked: merge-on-read log files grow with every deltacommit appending to
them. Tables Apache Hudi wrote check the same way (their write stats have the same fields,
paths relative to the table).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlparse

from tablespec.hudi.config import META_FOLDER
from tablespec.hudi.formats.naming import BaseFileName, bucket_of
from tablespec.hudi.formats.partition import PARTITION_METAFILE, discover_partitions, has_partition_metadata
from tablespec.hudi.fs_view import BaseFile, FileGroup, FileSlice, FileSystemView
from tablespec.hudi.io import Storage, join
from tablespec.hudi.services.clean import earliest_readable_instant, retained_instants, savepoint_times
from tablespec.hudi.services.rollback import rollback_target
from tablespec.hudi.timeline.active import Timeline
from tablespec.hudi.timeline.instant import CLEAN, CLUSTERING, COMPACTION, LOG_COMPACTION, REPLACE_COMMIT, ROLLBACK, WRITE_ACTIONS

MISSING, TRUNCATED, ORPHAN, INDEX, METADATA, LOG = "missing", "truncated", "orphan", "index", "metadata", "log"
KINDS = (MISSING, TRUNCATED, ORPHAN, INDEX, METADATA, LOG)
PARQUET_MAGIC = b"PAR1"
_WRITES = WRITE_ACTIONS | {COMPACTION, LOG_COMPACTION, CLUSTERING}


@dataclass(frozen=True)
class Finding:
    """One problem: `file` is relative to the table's base path ("" for the table as a whole),
    `instant` the one the file is named with (or None)."""
    kind: str
    partition: str
    file: str
    instant: str | None
    message: str

    def __str__(self) -> str:
        return f"{self.kind}\t{self.file or '-'}\t{self.message}"


@dataclass
class FileCheck:
    """What `check_files` found, and how much it looked at."""
    findings: list[Finding]
    commits: int = 0         # completed data commits on the active timeline, whose files were checked
    files: int = 0           # base files those commits wrote that readers still need
    pending_files: int = 0   # base files of pending instants (work in progress), not judged

    def describe(self) -> str:
        pending = f", {self.pending_files} file(s) of pending instants not checked" if self.pending_files else ""
        return f"{self.files} base file(s) of {self.commits} commit(s) checked{pending}"


@dataclass(frozen=True)
class _Written:
    """A base file as a completed commit's write stat records it."""
    partition: str
    path: str       # relative to the base path
    name: BaseFileName
    size: int       # fileSizeInBytes (0: not recorded)
    commit: str     # the commit's instant time


@dataclass(frozen=True)
class _Needed:
    written: _Written
    latest: bool  # the latest slice of a live file group (else an older slice a retained instant reads)


def _relative(base: str, path: str) -> str:
    """A write stat's path relative to the base path (Hudi writes it relative; a full URI or
    absolute path below the base is accepted too)."""
    if "://" in path or path.startswith("file:"):
        path = urlparse(path).path
    prefix = base.rstrip("/") + "/"
    return path[len(prefix):] if path.startswith(prefix) else path.lstrip("/")


def _written_files(base: str, timeline: Timeline) -> list[_Written]:
    out = []
    for instant in timeline.commits():
        for partition, stats in timeline.commit_metadata(instant).partition_to_write_stats.items():
            for s in stats:
                if not s.path:
                    continue
                rel = _relative(base, s.path)
                name = BaseFileName.parse(rel.rsplit("/", 1)[-1])
                if name is not None:  # log files (merge-on-read) are not checked
                    part = s.partition_path if s.partition_path is not None else partition
                    out.append(_Written(part or "", rel, name, s.file_size_in_bytes or 0, instant.timestamp))
    return out


def _replacements(timeline: Timeline) -> dict[tuple[str, str], str]:
    """(partition, file id) -> the first completed replacecommit that took the file group out."""
    out: dict[tuple[str, str], str] = {}
    for instant in timeline.commits():
        if instant.action == REPLACE_COMMIT:
            for partition, ids in (timeline.commit_metadata(instant).partition_to_replace_file_ids or {}).items():
                for fid in ids:
                    out.setdefault((partition, fid), instant.timestamp)
    return out


def _cleaned(timeline: Timeline) -> set[tuple[str, str]]:
    """(partition, file name) of every file a completed clean on the timeline records as deleted."""
    out = set()
    for clean in timeline.completed():
        if clean.action == CLEAN:
            for partition, meta in (timeline.read_metadata(clean).get("partitionMetadata") or {}).items():
                out |= {(partition, f.rsplit("/", 1)[-1]) for f in meta.get("successDeleteFiles") or ()}
    return out


def _needed(base: str, timeline: Timeline, written: list[_Written]) -> list[_Needed]:
    """The written files a reader of the latest or a retained instant reads (see the module doc)."""
    groups: dict[tuple[str, str], dict[str, _Written]] = {}
    for w in written:
        groups.setdefault((w.partition, w.name.file_id), {})[w.name.instant] = w
    replaced = _replacements(timeline)
    earliest = earliest_readable_instant(timeline)
    savepoints = savepoint_times(timeline)
    cleaned: set[tuple[str, str]] | None = None
    out = []
    for (partition, fid), by_instant in sorted(groups.items()):
        instants = sorted(by_instant)
        slices = tuple(FileSlice(fid, partition, t, BaseFile(join(base, by_instant[t].path), by_instant[t].name,
                                                              by_instant[t].size, partition)) for t in instants)
        replaced_at = replaced.get((partition, fid))
        keep = (set(instants) if earliest is None else
                retained_instants(FileGroup(partition, fid, slices), earliest, savepoints, replaced_at))
        latest = instants[-1] if replaced_at is None else None
        for t in instants:
            if t == latest:
                out.append(_Needed(by_instant[t], True))
            elif t in keep:
                if cleaned is None:
                    cleaned = _cleaned(timeline)
                if (partition, by_instant[t].name.format()) not in cleaned:
                    out.append(_Needed(by_instant[t], False))
    return out


def _truncation(storage: Storage, path: str, size: int, w: _Written) -> str | None:
    if w.size and size != w.size:
        return f"{size} bytes, but its commit recorded {w.size} (fileSizeInBytes)"
    if w.name.extension != ".parquet":
        return None
    if size < 2 * len(PARQUET_MAGIC):
        return f"{size} bytes: too short for a parquet file"
    for end, offset in (("start", 0), ("end", -len(PARQUET_MAGIC))):
        if storage.read_range(path, offset, len(PARQUET_MAGIC)) != PARQUET_MAGIC:
            return f"not a complete parquet file: no PAR1 magic at its {end}"
    return None


def _missing(n: _Needed, earliest: str | None) -> str:
    w = n.written
    if n.latest:
        return (f"written by commit {w.commit}, the latest slice of file group {w.name.file_id}, is not in "
                f"storage: readers skip it silently and serve an older slice of the file group, or none")
    since = f" (>= {earliest})" if earliest else ""
    return (f"written by commit {w.commit}, a slice of file group {w.name.file_id} that time travel to retained "
            f"instants{since} reads, is not in storage")


def _rolled_back(timeline: Timeline) -> dict[str, str]:
    """Instant time -> the completed rollback that rolled it back."""
    out = {}
    for done in timeline.completed():
        if done.action == ROLLBACK:
            for t in timeline.read_metadata(done).get("commitsRollback") or ():
                out[t] = done.timestamp
    return out


def _orphans(storage: Storage, base: str, timeline: Timeline, partitions: Iterable[str],
             written: list[_Written], archived: bool) -> tuple[list[Finding], int]:
    listed = {w.path for w in written}
    committed = {i.timestamp for i in timeline.commits()}
    pending = {i.timestamp for i in timeline.pending()}
    pending |= {rollback_target(timeline, i).timestamp for i in timeline.pending() if i.action == ROLLBACK}
    writes = [i.timestamp for i in timeline.instants if i.action in _WRITES]
    first = min(writes) if writes else None
    rolled_back: dict[str, str] | None = None
    findings, pending_files = [], 0
    for partition in partitions:
        for info in storage.list_dir(join(base, partition)):
            name = None if info.is_dir else BaseFileName.parse(info.name)
            if name is None:
                continue
            t, rel = name.instant, join(partition, info.name).lstrip("/")
            if t in committed:
                if rel not in listed:
                    findings.append(Finding(ORPHAN, partition, rel, t, (
                        f"named with completed commit {t}, which does not list it (a leftover of a failed or "
                        f"retried task): readers take it for part of file group {name.file_id}")))
            elif t in pending:
                pending_files += 1
            elif first is not None and t < first:
                if not archived:
                    findings.append(Finding(ORPHAN, partition, rel, t, (
                        f"instant {t} is on no timeline (the table has no archive), but is older than the active "
                        f"timeline: readers take the file for part of the table")))
            else:
                if rolled_back is None:
                    rolled_back = _rolled_back(timeline)
                why = (f"instant {t} was rolled back (rollback {rolled_back[t]}), but the file remains" if t in
                       rolled_back else f"instant {t} is no completed commit on the timeline (a failed write left "
                       f"it, or it was copied in)")
                findings.append(Finding(ORPHAN, partition, rel, t, f"{why}; readers ignore it"))
    return findings, pending_files


def _has_archive(storage: Storage, base: str, archive_folder: str) -> bool:
    return any(not f.is_dir for f in storage.list_dir(join(base, META_FOLDER, archive_folder)))


def check_files(storage: Storage, base: str, timeline: Timeline, archive_folder: str = "archived") -> FileCheck:
    """Missing, truncated and orphan base files of the table at `base` (see the module doc).
    `archive_folder`: the archived timeline's folder relative to .hoodie/ (config.archive_folder)."""
    written = _written_files(base, timeline)
    needed = _needed(base, timeline, written)
    partitions = discover_partitions(storage, base)
    marked = {p: True for p in partitions}
    earliest = earliest_readable_instant(timeline)
    findings: list[Finding] = []
    unlisted: dict[str, int] = {}
    for n in needed:
        w = n.written
        path = join(base, w.path)
        info = storage.info(path)
        if info is None:
            findings.append(Finding(MISSING, w.partition, w.path, w.name.instant, _missing(n, earliest)))
            continue
        if w.partition not in marked:
            marked[w.partition] = has_partition_metadata(storage, base, w.partition)
        if not marked[w.partition]:
            unlisted[w.partition] = unlisted.get(w.partition, 0) + 1
        if (problem := _truncation(storage, path, info.size, w)) is not None:
            findings.append(Finding(TRUNCATED, w.partition, w.path, w.name.instant, f"written by commit {w.commit}: "
                                                                                    f"{problem}"))
    for partition, count in sorted(unlisted.items()):
        findings.append(Finding(MISSING, partition, join(partition, PARTITION_METAFILE).lstrip("/"), None, (
            f"partition {partition!r} has no {PARTITION_METAFILE}: readers do not list it, so its {count} base "
            f"file(s) are invisible")))
    orphans, pending_files = _orphans(storage, base, timeline, partitions, written,
                                      _has_archive(storage, base, archive_folder))
    findings += orphans
    findings.sort(key=lambda f: (f.partition, f.file, KINDS.index(f.kind)))
    return FileCheck(findings, len(timeline.commits()), len(needed), pending_files)


def check_buckets(view: FileSystemView, buckets_for: Callable[[str], int] | None) -> list[Finding]:
    """A bucket index's file groups: each id starts with its bucket number, below the partition's
    bucket count (`buckets_for`, when the table records it), one file group per bucket."""
    findings = []
    seen: dict[tuple[str, int], str] = {}
    for group in view.file_groups():
        slice_ = group.latest_slice
        rel = _relative(view.timeline.base, slice_.base_file.path) if slice_.base_file else group.file_id
        bucket = bucket_of(group.file_id)
        if bucket is None:
            findings.append(Finding(INDEX, group.partition, rel, slice_.base_instant,
                                    f"file group {group.file_id} has no bucket number (its id does not start with "
                                    f"8 digits): bucket index lookups never reach it"))
            continue
        count = buckets_for(group.partition) if buckets_for else None
        if count is not None and bucket >= count:
            findings.append(Finding(INDEX, group.partition, rel, slice_.base_instant,
                                    f"file group {group.file_id} is bucket {bucket}, but partition "
                                    f"{group.partition or '(root)'!r} has {count} bucket(s): lookups never reach it"))
        other = seen.setdefault((group.partition, bucket), group.file_id)
        if other != group.file_id:
            findings.append(Finding(INDEX, group.partition, rel, slice_.base_instant,
                                    f"bucket {bucket} of partition {group.partition or '(root)'!r} has two file "
                                    f"groups, {other} and {group.file_id}: a key can be stored twice"))
    return findings

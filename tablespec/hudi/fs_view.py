"""The file-system view: which data files make up the table, seen through a timeline.

A file is part of the table only if the instant in its name is a completed write instant, or
is older than every write instant on the active timeline (its commit was archived). Files of
pending or unknown instants are leftovers of failed or running writes and are ignored; file
groups replaced by a completed replacecommit are no longer part of the table. This is what
hudi-rs reports as file slices (checked against it).

Merge-on-read log files join a slice as each table version lays them out. Version 6 (timeline
layout 1) names a log file by its slice's base instant; the log files of a compaction still
pending (named by the compaction's instant, whose base file does not exist yet) are read with
the slice before it, as Hudi's readers do. Versions 8/9 (layout 2) name a log file by the
deltacommit that wrote it, visible once that deltacommit completed, and it belongs to the newest
slice whose base instant is before the deltacommit's completion time.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from tablespec.errors import HudiFormatError
from tablespec.hudi.formats.commit import CommitMetadata
from tablespec.hudi.formats.naming import BaseFileName, LogFileName
from tablespec.hudi.formats.partition import discover_partitions
from tablespec.hudi.io import FileInfo, Storage, join
from tablespec.hudi.timeline.active import Timeline
from tablespec.hudi.timeline.instant import COMPACTION, LOG_COMPACTION, WRITE_ACTIONS, Instant

_WRITES = WRITE_ACTIONS | {COMPACTION, LOG_COMPACTION}


@functools.lru_cache(maxsize=1 << 16)
def _file_name(name: str) -> BaseFileName | LogFileName | None:
    """A data file's parsed name. Kept: each write lists every log file of the partitions it
    builds its view of, and a file's name never changes."""
    return BaseFileName.parse(name) or LogFileName.parse(name)


@dataclass(frozen=True)
class BaseFile:
    path: str
    file_name: BaseFileName
    size: int
    partition: str

    @property
    def name(self) -> str:
        return self.file_name.format()


@dataclass(frozen=True)
class LogFile:
    path: str
    file_name: LogFileName
    size: int
    partition: str


@dataclass(frozen=True)
class FileSlice:
    """One version of a file group: a base file written at `base_instant` (plus, for
    merge-on-read tables, the log files appended to it)."""
    file_id: str
    partition: str
    base_instant: str
    base_file: BaseFile | None
    log_files: tuple[LogFile, ...] = ()

    @property
    def size(self) -> int:
        return (self.base_file.size if self.base_file else 0) + sum(f.size for f in self.log_files)


@dataclass(frozen=True)
class FileGroup:
    partition: str
    file_id: str
    slices: tuple[FileSlice, ...]  # oldest first

    @property
    def latest_slice(self) -> FileSlice:
        return self.slices[-1]

    def slice_as_of(self, as_of: str | None) -> FileSlice | None:
        """The newest slice with base instant <= as_of (the newest overall when as_of is None)."""
        eligible = [s for s in self.slices if as_of is None or s.base_instant <= as_of]
        return eligible[-1] if eligible else None


def _pending_compactions(timeline: Timeline) -> frozenset[str]:
    return frozenset(i.timestamp for i in timeline.pending() if i.action == COMPACTION)


def _visibility(timeline: Timeline) -> Callable[[str], bool]:
    committed = {i.timestamp for i in timeline.commits()}
    if not committed:
        return lambda ts: False
    first = min(i.timestamp for i in timeline.instants if i.action in _WRITES)
    return lambda ts: ts in committed or ts < first


@dataclass(frozen=True)
class _Slicing:
    """What file slicing needs from the timeline besides visibility."""
    layout: int = 1
    completions: Mapping[str, str] | None = None   # layout 2: completed instant -> completion time
    pending_compactions: frozenset[str] = frozenset()

    @classmethod
    def of(cls, timeline: Timeline) -> _Slicing:
        if timeline.layout == 1:
            return cls(1, None, _pending_compactions(timeline))
        return cls(2, {i.timestamp: i.completed_at for i in timeline.completed()}, frozenset())


def _partition_groups(storage: Storage, base: str, partition: str,
                      visible: Callable[[str], bool], listed=None, slicing: _Slicing = _Slicing()) -> list[FileGroup]:
    bases: dict[tuple[str, str], BaseFile] = {}
    logs: dict[str, list[LogFile]] = {}
    for info in storage.list_dir(join(base, partition)) if listed is None else listed:
        if info.is_dir:
            continue
        name = _file_name(info.name)
        if isinstance(name, BaseFileName) and visible(name.instant):
            key = (name.file_id, name.instant)
            # A retried task can leave a second file for one slice (Hudi's commit
            # reconciliation normally deletes it): choose one deterministically.
            if key not in bases or bases[key].file_name.write_token < name.write_token:
                bases[key] = BaseFile(info.path, name, info.size, partition)
        elif isinstance(name, LogFileName) and name.extension == "log" and (
                visible(name.base_instant) or name.base_instant in slicing.pending_compactions):
            logs.setdefault(name.file_id, []).append(LogFile(info.path, name, info.size, partition))
    instants: dict[str, set[str]] = {}
    for file_id, instant in bases:
        instants.setdefault(file_id, set()).add(instant)
    slices: dict[str, list[FileSlice]] = {}
    for file_id in sorted(set(instants) | set(logs)):
        own = sorted(instants.get(file_id, ()))
        by_slice = (_slices_1x(own, logs.get(file_id, []), slicing.completions or {}) if slicing.layout == 2
                    else _slices_v6(own, logs.get(file_id, []), slicing.pending_compactions))
        slices[file_id] = [FileSlice(file_id, partition, instant, bases.get((file_id, instant)), tuple(found))
                           for instant, found in sorted(by_slice.items())]
    return [FileGroup(partition, file_id, tuple(group)) for file_id, group in slices.items()]


def _slices_v6(base_instants: list[str], logs: list[LogFile], pending: frozenset[str]) -> dict[str, list[LogFile]]:
    """Version 6: base instant -> its log files (named by it), by version; the log files of a
    pending compaction go to the slice before it (none before: a slice of their own)."""
    out: dict[str, list[LogFile]] = {i: [] for i in base_instants}
    for log in sorted(logs, key=lambda f: (f.file_name.base_instant, f.file_name.version, f.file_name.write_token or "")):
        instant = log.file_name.base_instant
        if instant in pending and instant not in out:
            instant = max((i for i in out if i < instant), default=instant)
        out.setdefault(instant, []).append(log)
    return out


def _slices_1x(base_instants: list[str], logs: list[LogFile], completions: Mapping[str, str]) -> dict[str, list[LogFile]]:
    """Versions 8/9: each log file (named by its deltacommit) goes to the newest slice whose base
    instant is before the deltacommit's completion time, in completion order; log files that
    completed before any base file make a slice of their own, on the first of them."""
    out: dict[str, list[LogFile]] = {i: [] for i in base_instants}
    ordered = sorted(logs, key=lambda f: (completions.get(f.file_name.base_instant, f.file_name.base_instant),
                                          f.file_name.base_instant, f.file_name.version, f.file_name.write_token or ""))
    first_log: str | None = None
    for log in ordered:
        done = completions.get(log.file_name.base_instant, log.file_name.base_instant)
        instant = max((i for i in base_instants if i < done), default=None)
        if instant is None:
            first_log = first_log or log.file_name.base_instant
            instant = first_log
        out.setdefault(instant, []).append(log)
    return out


class FileSystemView:
    """File groups of a table's partitions, filtered through a timeline."""

    def __init__(self, timeline: Timeline, partitions: Iterable[str], groups: Iterable[FileGroup],
                 listed: Timeline | None = None):
        """`listed`: the timeline as the files were listed (`timeline` by default)."""
        self.timeline, self.listed = timeline, listed or timeline
        self.partitions: tuple[str, ...] = tuple(sorted(partitions))
        self._groups = tuple(sorted(groups, key=lambda g: (g.partition, g.file_id)))

    @classmethod
    def build(cls, storage: Storage, base: str, timeline: Timeline,
              partitions: Iterable[str] | None = None) -> FileSystemView:
        """List the partitions (all discovered ones by default) and keep the visible files."""
        listed: dict = {}   # discovery lists every partition: those listings serve the view too
        parts = list(discover_partitions(storage, base, listed) if partitions is None else partitions)
        visible, slicing = _visibility(timeline), _Slicing.of(timeline)
        return cls(timeline, parts, [g for p in parts
                                     for g in _partition_groups(storage, base, p, visible, listed.get(p), slicing)])

    def over(self, timeline: Timeline) -> FileSystemView:
        """This view's files over `timeline`, which differs from this view's only by pending
        instants (they make no file visible or hidden): no listing."""
        return FileSystemView(timeline, self.partitions, self._groups, self.listed)

    def after_commit(self, timeline: Timeline, done: Instant, metadata: CommitMetadata) -> FileSystemView | None:
        """The view over `timeline` once `done` (completed by this process with `metadata`) is part
        of it, without listing: this view's files plus those the write stats name, sliced again.
        None when this view was listed after `done` was requested (it may hold files of failed task
        attempts, deleted since), or when `timeline` differs from the one listed by more than `done`
        (another writer's instant: list again). Every file a writer adds or removes comes with an
        instant of its own, requested before its first file, so with no other instant changed the
        files on storage are these."""
        if done not in timeline.instants or \
                [i for i in timeline.instants if i.timestamp != done.timestamp] != list(self.listed.instants):
            return None
        added: dict[str, list[FileInfo]] = {}
        for partition, stats in metadata.partition_to_write_stats.items():
            for stat in stats:
                if stat.path:
                    name = stat.path.rsplit("/", 1)[-1]
                    added.setdefault(stat.partition_path if stat.partition_path is not None else partition, []).append(
                        FileInfo(name, join(self.timeline.base, stat.path), stat.file_size_in_bytes, 0, False))
        listed: dict[str, list[FileInfo]] = {p: [] for p in added}
        for g in self._groups:
            if g.partition in added:
                listed[g.partition] += [FileInfo(f.path.rsplit("/", 1)[-1], f.path, f.size, 0, False)
                                        for s in g.slices for f in ((s.base_file,) if s.base_file else ()) + s.log_files]
        visible, slicing = _visibility(timeline), _Slicing.of(timeline)
        groups = [g for g in self._groups if g.partition not in added]
        for p, files in listed.items():
            fresh = {f.path: f for f in files}
            fresh.update((f.path, f) for f in added[p])   # a file the commit wrote, at the size it left
            groups += _partition_groups(self.timeline.storage, self.timeline.base, p, visible,
                                        sorted(fresh.values(), key=lambda f: f.name), slicing)
        return FileSystemView(timeline, set(self.partitions) | set(added), groups)

    def file_groups(self, partition: str | None = None, as_of: str | None = None) -> list[FileGroup]:
        """File groups that are part of the table (as of `as_of`), replaced groups excluded."""
        replaced = self.timeline.replaced_file_ids(as_of)
        return [g for g in self._groups
                if (partition is None or g.partition == partition)
                and g.file_id not in replaced.get(g.partition, ())
                and g.slice_as_of(as_of) is not None]

    def latest_slices(self, partition: str | None = None, as_of: str | None = None) -> list[FileSlice]:
        """The slice of each file group a snapshot query (as of `as_of`) reads."""
        return [s for g in self.file_groups(partition, as_of) if (s := g.slice_as_of(as_of)) is not None]

    def total_bytes(self, as_of: str | None = None) -> int:
        """Bytes of the latest slices: the size of the table as a snapshot query sees it."""
        return sum(s.size for s in self.latest_slices(as_of=as_of))


@dataclass(frozen=True)
class MissingBaseFile:
    """The latest base file of a live file group, written by a completed commit, that storage lacks."""
    partition: str
    file_id: str
    file_name: str
    instant: str    # the commit that wrote it

    def __str__(self) -> str:
        return (f"file group {self.file_id} in partition {self.partition or '(non-partitioned)'!r}: its latest base "
                f"file {self.file_name} (written by instant {self.instant}) is missing from storage; restore it or "
                f"roll back {self.instant}")


def missing_latest_base_files(view: FileSystemView) -> list[MissingBaseFile]:
    """Latest base files the view's completed commits wrote that its listing lacks.

    The view is built from a storage listing, so a lost file does not show as missing: the file
    group's older slice (or nothing) takes its place, and a writer would merge into that older
    slice and commit, making the loss permanent. Each completed commit on the active timeline
    records the files it wrote (write stats, by file id): the newest write of every file group no
    completed replacecommit took out must be the view's latest slice. Base files only (log files
    grow with every deltacommit); commits archived off the active timeline are not read."""
    timeline = view.timeline
    written: dict[tuple[str, str], tuple[str, str]] = {}  # (partition, file id) -> (instant, file name)
    for instant in timeline.commits():
        for partition, stats in timeline.commit_metadata(instant).partition_to_write_stats.items():
            for s in stats:
                name = BaseFileName.parse((s.path or "").rsplit("/", 1)[-1])
                if name is None:
                    continue
                key = (s.partition_path if s.partition_path is not None else partition or "", s.file_id or name.file_id)
                if key not in written or written[key][0] < instant.timestamp:
                    written[key] = (instant.timestamp, name.format())
    replaced = timeline.replaced_file_ids()
    listed = {(g.partition, g.file_id): g.latest_slice for g in view._groups}
    missing = []
    for (partition, file_id), (written_at, file_name) in sorted(written.items()):
        if file_id in replaced.get(partition, ()):
            continue
        latest = listed.get((partition, file_id))
        if latest is None or latest.base_instant < written_at or \
                (latest.base_instant == written_at and latest.base_file is None):
            missing.append(MissingBaseFile(partition, file_id, file_name, written_at))
    return missing


def refuse_missing_latest(view: FileSystemView, partitions: Iterable[str] | None = None,
                          doing: str = "the write") -> None:
    """Raise HudiFormatError naming every latest base file missing in `partitions` (None: all):
    work reading the file groups there would read an older slice and make the loss permanent."""
    wanted = None if partitions is None else set(partitions)
    found = [m for m in missing_latest_base_files(view) if wanted is None or m.partition in wanted]
    if found:
        shown = "; ".join(str(m) for m in found[:5]) + (f"; and {len(found) - 5} more" if len(found) > 5 else "")
        raise HudiFormatError(f"{view.timeline.base}: refusing {doing}: {shown}; nothing was committed")

"""What the table's state takes from the archive, kept next to it so that reading it does not
grow with the archive.

Observing a table needs two facts from archived history: the completed clusterings only the
archive holds (with their layouts) and the commits archived after the last of them (or all, on
a table never clustered). Read from the archive itself, that is every archived instant on every
plan, show and write of a table whose last clustering left the active timeline, or that was
never clustered: the archive grows by every commit. So each archiving run records the two facts
in `.hoodie/<archive folder>/.tablespec_history.json` (Hudi reads only `.commits_.archive*`
files there), with the names and sizes of the archive files they describe. A reader uses the
summary only while those are exactly the files listed; otherwise (Hudi archived or merged
since, a run died before writing it, an older table) it reads the archive as before, and the
next tablespec run writes the summary anew. Commits are archived oldest first, so archived
commits all precede the active ones. The summary carries a digest of its content: an edited one
(or one of the wrong shape, types or ranges) is not used either, and the archive is read.
"""
from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from tablespec.errors import HudiFormatError
from tablespec.hudi.archive.log import ArchiveFile, archive_files, archive_files_of, folder_path
from tablespec.hudi.archive.timeline import ArchivedTimeline
from tablespec.hudi.io import Storage, join
from tablespec.hudi.services.clustering import LAYOUTS, Layout, archived_layouts
from tablespec.hudi.timeline.active import Timeline
from tablespec.hudi.timeline.instant import REPLACE_COMMIT, validate_timestamp

SUMMARY_NAME = ".tablespec_history.json"
VERSION = 2               # 2: with the digest of its content
_MAX_COUNT = 10 ** 12     # far beyond any archive; larger counts are no count tablespec wrote


@dataclass(frozen=True)
class ArchivedClusterings:
    """The clusterings only the archive holds (oldest first, with their layouts), and the archived
    commits (not replacecommits) after the last of them, or all archived commits when there is none."""
    clusterings: tuple[tuple[str, Layout], ...] = ()
    commits_since: int = 0

    @classmethod
    def of(cls, archived: ArchivedTimeline, active: Timeline) -> ArchivedClusterings:
        """From archived instants (those `active` also holds are left to it)."""
        clusterings = tuple(archived_layouts(archived, active))
        return cls(clusterings, _commits_after(archived, active, clusterings[-1][0] if clusterings else None))

    def then(self, newer: ArchivedClusterings) -> ArchivedClusterings:
        """These, followed by a later run's."""
        if newer.clusterings:
            return newer if not self.clusterings else ArchivedClusterings(self.clusterings + newer.clusterings,
                                                                          newer.commits_since)
        return ArchivedClusterings(self.clusterings, self.commits_since + newer.commits_since)

    def to_json(self, files: Sequence[ArchiveFile]) -> bytes:
        content = {"version": VERSION, "files": {f.info.name: f.info.size for f in files},
                   "clusterings": [[ts, layout.strategy, list(layout.columns)] for ts, layout in self.clusterings],
                   "commitsSinceClustering": self.commits_since}
        return json.dumps({**content, "digest": _digest(content)}, separators=(",", ":"), allow_nan=False).encode()


def _digest(content: dict) -> str:
    return hashlib.sha256(json.dumps(content, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def _is_time(value: str) -> bool:
    try:
        return bool(validate_timestamp(value))
    except HudiFormatError:
        return False


def _checked(data: object, files: dict[str, int]) -> ArchivedClusterings | None:
    """The summary's facts when it is one tablespec wrote of exactly `files` (names and sizes, as
    just listed) and unedited since: its shape, types, ranges and digest check out; else None."""
    if not isinstance(data, dict) or set(data) != {"version", "files", "clusterings", "commitsSinceClustering",
                                                   "digest"}:
        return None
    digest = data.pop("digest")
    if data["version"] != VERSION or data["files"] != files or digest != _digest(data):
        return None
    count, listed = data["commitsSinceClustering"], data["clusterings"]
    if type(count) is not int or not 0 <= count <= _MAX_COUNT or not isinstance(listed, list):
        return None
    clusterings: list[tuple[str, Layout]] = []
    for entry in listed:
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)
                and _is_time(entry[0]) and entry[1] in LAYOUTS.keys() | {"NONE"}
                and isinstance(entry[2], list) and all(isinstance(c, str) and c for c in entry[2])):
            return None
        if clusterings and entry[0] <= clusterings[-1][0]:   # oldest first, each once
            return None
        clusterings.append((entry[0], Layout(entry[1], tuple(entry[2]))))
    return ArchivedClusterings(tuple(clusterings), count)


def _commits_after(archived: ArchivedTimeline, active: Timeline, after: str | None) -> int:
    on_active = {i.timestamp for i in active.instants}
    return sum(1 for i in archived.commits() if i.action != REPLACE_COMMIT and i.timestamp not in on_active
               and (after is None or i.timestamp > after))


def summary_path(base: str, folder: str) -> str:
    return join(folder_path(base, folder), SUMMARY_NAME)


def read_summary(storage: Storage, base: str, folder: str,
                 files: Sequence[ArchiveFile]) -> ArchivedClusterings | None:
    """The recorded facts, if they describe exactly `files` (the archive as just listed)."""
    try:
        data = json.loads(storage.read_bytes(summary_path(base, folder)), parse_float=_finite,
                          parse_constant=_finite)
    except (FileNotFoundError, ValueError, RecursionError):
        return None
    return _checked(data, {f.info.name: f.info.size for f in files})


def archived_clusterings(storage: Storage, base: str, folder: str, active: Timeline) -> ArchivedClusterings:
    """The facts for a table's state: from the summary when it is current, else from the archive."""
    listed = storage.list_dir(folder_path(base, folder))
    if any(f.name == SUMMARY_NAME for f in listed):
        summary = read_summary(storage, base, folder, archive_files_of(listed))
        if summary is not None and not _overlaps(summary, active):
            return summary
    return ArchivedClusterings.of(ArchivedTimeline.load(storage, base, folder), active)


def _overlaps(summary: ArchivedClusterings, active: Timeline) -> bool:
    """A clustering the summary counts as archived is active too (an archiving run that died
    before deleting it; the summary is written after, so only a Hudi job could leave this)."""
    on_active = {i.timestamp for i in active.instants if i.action == REPLACE_COMMIT}
    return any(ts in on_active for ts, _ in summary.clusterings)


def record_summary(storage: Storage, base: str, folder: str, before: ArchivedClusterings | None,
                   run_file: str | None) -> None:
    """After a run: the summary of the archive as it now is, from `before` (the summary of the
    archive as the run found it, None when there was none current) and the run's own file, or
    from the whole archive."""
    files, none_active = archive_files(storage, base, folder), Timeline(storage, base, ())  # the run deleted them
    run = [f for f in files if f.path == run_file]
    if before is not None and run:
        summary = before.then(ArchivedClusterings.of(ArchivedTimeline.of_files(storage, run), none_active))
    else:
        summary = ArchivedClusterings.of(ArchivedTimeline.of_files(storage, files), none_active)
    storage.write_atomic(summary_path(base, folder), summary.to_json(files))

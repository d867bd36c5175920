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
commits all precede the active ones.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from tablespec.hudi.archive.log import ArchiveFile, archive_files, archive_files_of, folder_path
from tablespec.hudi.archive.timeline import ArchivedTimeline
from tablespec.hudi.clustering import Layout, archived_layouts
from tablespec.hudi.instant import REPLACE_COMMIT
from tablespec.hudi.io import Storage, join
from tablespec.hudi.timeline import Timeline

SUMMARY_NAME = ".tablespec_history.json"
VERSION = 1


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
        return json.dumps({
            "version": VERSION, "files": {f.info.name: f.info.size for f in files},
            "clusterings": [[ts, layout.strategy, list(layout.columns)] for ts, layout in self.clusterings],
            "commitsSinceClustering": self.commits_since}, separators=(",", ":")).encode()


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
        data = json.loads(storage.read_bytes(summary_path(base, folder)))
    except (FileNotFoundError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != VERSION:
        return None
    if data.get("files") != {f.info.name: f.info.size for f in files}:
        return None
    try:
        clusterings = tuple((str(ts), Layout(str(strategy), tuple(columns)))
                            for ts, strategy, columns in data["clusterings"])
        return ArchivedClusterings(clusterings, int(data["commitsSinceClustering"]))
    except (KeyError, TypeError, ValueError):
        return None


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

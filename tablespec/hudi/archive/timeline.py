"""The archived timeline, read; and history: the active and archived timelines as one.

An archiving run writes its instants to the archive first and deletes their active files after,
so for a moment (or, after a crash, until the next run) an instant can be in both. Readers count
it once, as active: `History` takes an instant from the archive only when the active timeline
does not have it.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tablespec.errors import HudiFormatError
from tablespec.hudi.archive.entry import COMPLETED_FIELD, REQUESTED_REPLACE_FIELD, commit_metadata, record_instant
from tablespec.hudi.archive.log import DEFAULT_FOLDER, ArchiveFile, archive_files, folder_of, read_records
from tablespec.hudi.archive.lsm import lsm_rows
from tablespec.hudi.formats.commit import CommitMetadata
from tablespec.hudi.io import Storage
from tablespec.hudi.timeline.active import Timeline, avro_content
from tablespec.hudi.timeline.instant import COMPLETES_AS, REPLACE_COMMIT, STATE_ORDER, WRITE_ACTIONS, Instant

Key = tuple[str, str]


def instant_key(instant: Instant) -> Key:
    """An instant's identity across its states: its time and the action it completes as."""
    return instant.timestamp, COMPLETES_AS.get(instant.action, instant.action)


class ArchivedTimeline:
    """The instants Hudi (or tablespec) archived, each once in its most advanced state, with the
    archived content of each state."""

    def __init__(self, records: Iterable[tuple[dict[str, Any], str]]):
        """`records`: (HoodieArchivedMetaEntry, the file it was read from), in file order."""
        self.records: dict[Instant, dict[str, Any]] = {}
        for record, where in records:
            self.records.setdefault(record_instant(record, where), record)  # a repeated entry counts once
        latest: dict[Key, Instant] = {}
        for instant in self.records:
            key = instant_key(instant)
            if key not in latest or STATE_ORDER[instant.state] > STATE_ORDER[latest[key].state]:
                latest[key] = instant
        self.instants: tuple[Instant, ...] = tuple(sorted(latest.values()))

    @classmethod
    def load(cls, storage: Storage, base: str, folder: str = DEFAULT_FOLDER, completed_only: bool = False) -> ArchivedTimeline:
        """Every archive file of the table at `base` (`folder`: hoodie.archivelog.folder)."""
        return cls.of_files(storage, archive_files(storage, base, folder), completed_only)

    @classmethod
    def of_files(cls, storage: Storage, files: Iterable[ArchiveFile], completed_only: bool = False) -> ArchivedTimeline:
        return cls((r, f.path) for f in files for r in read_records(storage, f, completed_only))

    @classmethod
    def of(cls, table: Any, completed_only: bool = False) -> ArchivedTimeline:
        """The archived timeline of a `HudiTable` handle (its hoodie.archivelog.folder; versions 8
        and 9: their LSM history). `completed_only`: of the archive log's entries, only those of
        completed states are decoded (a reader of what completed needs no other: they are two
        thirds of the entries, as Hudi archives every state of an instant); an instant archived
        without its completed state is then missing (Hudi archives completed instants only). The
        LSM history holds completed instants only."""
        if table.config is not None and table.config.version >= 8:
            return LsmArchivedTimeline(lsm_rows(table))
        return cls.load(table.storage, table.base, folder_of(table.config), completed_only)

    def completed(self) -> tuple[Instant, ...]:
        return tuple(i for i in self.instants if i.is_completed)

    def commits(self) -> tuple[Instant, ...]:
        """Archived completed instants that wrote data: commit, deltacommit, replacecommit."""
        return tuple(i for i in self.instants if i.is_completed and i.action in WRITE_ACTIONS)

    def contains_completed(self, timestamp: str) -> bool:
        return any(i.timestamp == timestamp and i.is_completed for i in self.instants)

    def keys(self) -> set[Key]:
        return {instant_key(i) for i in self.instants}

    def read_metadata(self, instant: Instant) -> dict[str, Any]:
        """A completed instant's archived content as a dict (as `Timeline.read_metadata` gives the
        active one's): Avro records as they are, commits in their archived Avro form. {} when the
        instant was archived without content."""
        record = self.records.get(instant)
        if record is None or not instant.is_completed:
            raise HudiFormatError(f"instant {instant} is not on the archived timeline as completed")
        return dict(record.get(COMPLETED_FIELD.get(instant.action, ""), None) or {})

    def requested_content(self, instant: Instant) -> dict[str, Any]:
        """The archived requested plan of a replacecommit (its clustering or replace plan); {}
        when it was archived without content or not at all."""
        record = self.records.get(instant.to("requested")) or {}
        return dict(record.get(REQUESTED_REPLACE_FIELD) or {})

    def commit_metadata(self, instant: Instant) -> CommitMetadata:
        """An archived completed commit's metadata, shaped as the active timeline's."""
        record = self.records.get(instant)
        if record is None or not instant.is_completed or instant.action not in WRITE_ACTIONS:
            raise HudiFormatError(f"instant {instant} is not an archived completed commit")
        return commit_metadata(record)


class LsmArchivedTimeline(ArchivedTimeline):
    """The archived timeline of a version-8/9 table (archive/lsm.py) as `ArchivedTimeline` offers
    it: each archived instant completed (with its completion time), its content and its plan."""

    def __init__(self, rows: list[tuple[dict[str, Any], str]]):
        """`rows`: (HoodieLSMTimelineInstant, the file it was read from)."""
        self.records, self._where = {}, {}
        for row, where in rows:
            try:
                instant = Instant(row["instantTime"], row["action"], "completed", row.get("completionTime"))
            except (HudiFormatError, KeyError, TypeError) as e:
                raise HudiFormatError(f"{where}: archived instant {row.get('instantTime')} "
                                      f"{row.get('action')}: {e}") from None
            if instant not in self.records:   # a repeated row counts once
                self.records[instant], self._where[instant] = row, where
        self.instants = tuple(sorted(self.records))

    def _content(self, instant: Instant, column: str) -> dict[str, Any]:
        record = self.records.get(instant)
        if record is None or not instant.is_completed:
            raise HudiFormatError(f"instant {instant} is not on the archived timeline as completed")
        raw = record.get(column)
        return avro_content(raw, f"{self._where[instant]} ({instant})") if raw else {}

    def read_metadata(self, instant: Instant) -> dict[str, Any]:
        return self._content(instant, "metadata")

    def requested_content(self, instant: Instant) -> dict[str, Any]:
        completed = instant.to("completed")
        return self._content(completed, "plan") if completed in self.records else {}

    def commit_metadata(self, instant: Instant) -> CommitMetadata:
        if instant not in self.records or not instant.is_completed or instant.action not in WRITE_ACTIONS:
            raise HudiFormatError(f"instant {instant} is not an archived completed commit")
        return CommitMetadata.from_avro(self.read_metadata(instant), replace=instant.action == REPLACE_COMMIT)


class History:
    """The table's whole timeline: archived instants, then the active ones; an instant in both
    (an archiving run not yet finished) counts once, as active."""

    def __init__(self, active: Timeline, archived: ArchivedTimeline):
        self.active, self.archived = active, archived
        on_active = {instant_key(i) for i in active.instants}
        self._archived_only = tuple(i for i in archived.instants if instant_key(i) not in on_active)
        self.instants: tuple[Instant, ...] = tuple(sorted(self._archived_only + active.instants))

    @classmethod
    def of(cls, table: Any) -> History:
        """The history of a `HudiTable` handle: its (cached) active timeline and its archive."""
        return cls(table.timeline, ArchivedTimeline.of(table))

    def is_archived(self, instant: Instant) -> bool:
        """Whether `instant` is known from the archive only."""
        return instant in self._archived_only

    def completed(self) -> tuple[Instant, ...]:
        return tuple(i for i in self.instants if i.is_completed)

    def commits(self) -> tuple[Instant, ...]:
        return tuple(i for i in self.instants if i.is_completed and i.action in WRITE_ACTIONS)

    def commit_metadata(self, instant: Instant) -> CommitMetadata:
        if self.is_archived(instant):
            return self.archived.commit_metadata(instant)
        return self.active.commit_metadata(instant)

    def read_metadata(self, instant: Instant) -> dict[str, Any]:
        if self.is_archived(instant):
            return self.archived.read_metadata(instant)
        return self.active.read_metadata(instant)

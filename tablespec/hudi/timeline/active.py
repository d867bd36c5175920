"""The active timeline (.hoodie/; .hoodie/timeline/ in table versions 8 and 9): an immutable
snapshot for reading, and the write-side transitions.

Readers only trust completed instants. Instants are ordered by their requested time (the time
their files are named by); `completion_order` orders completed ones as a version-8/9 reader
does, by completion time. Writers move an instant requested -> inflight ->
completed; creating the completed file is the commit point, so it is written last and whole.
"""
from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import replace
from typing import Any, cast

import fastavro

from tablespec.errors import HudiFormatError
from tablespec.hudi.config import META_FOLDER
from tablespec.hudi.formats import json_text
from tablespec.hudi.formats.commit import CommitMetadata, to_hudi_json
from tablespec.hudi.formats.commit_avro import encode_commit_metadata
from tablespec.hudi.io import Storage, join
from tablespec.hudi.timeline.instant import COMPLETES_AS, REPLACE_COMMIT, STATE_ORDER, SUFFIXES, WRITE_ACTIONS, Instant, new_instant_time
from tablespec.hudi.timeline.txn_lock import TransactionLock

_AVRO_MAGIC = b"Obj\x01"


def _group_key(instant: Instant) -> tuple[str, str]:
    return instant.timestamp, COMPLETES_AS.get(instant.action, instant.action)


def parse_instants(listed, layout: int = 1) -> list[Instant]:
    """The instants among the entries of a timeline folder's listing (`layout`: see Instant.parse)."""
    return [i for i in (Instant.parse(f.name, layout, f.path) for f in listed if not f.is_dir) if i is not None]


def _list_instants(storage: Storage, meta: str) -> list[Instant]:
    return parse_instants(storage.list_dir(meta))


def avro_record(schema, record: dict) -> bytes:
    """One record as an Avro container file: how Hudi stores plan and metadata instants
    (requested replacecommit, clean, rollback)."""
    out = io.BytesIO()
    fastavro.writer(out, schema, [record])
    return out.getvalue()


def avro_content(raw: bytes, where: str) -> dict[str, Any]:
    """The first record of an Avro container (how Hudi stores plans, and every instant's content
    in versions 8 and 9) as a dict; {} when it holds none."""
    try:
        records = list(fastavro.reader(io.BytesIO(raw)))
    except Exception as e:   # damaged bytes fail anywhere in fastavro (its schema parser, codecs, decoders)
        reason = " ".join(str(e).split())[:200]   # one line, however the library words it
        raise HudiFormatError(f"{where}: unreadable metadata: {type(e).__name__}: {reason}") from None
    return cast(dict[str, Any], records[0]) if records else {}


class Timeline:
    """A snapshot of the active timeline; each instant appears once, in its most advanced state."""

    def __init__(self, storage: Storage, base: str, files: Iterable[Instant], folder: str = META_FOLDER):
        """`folder`: the timeline's folder below `base` (config.timeline_folder)."""
        self.storage, self.base, self.folder, self.meta = storage, base, folder, join(base, folder)
        self.layout = 1 if folder == META_FOLDER else 2   # see instant.py
        latest: dict[tuple[str, str], Instant] = {}
        for instant in files:
            key = _group_key(instant)
            if key not in latest or STATE_ORDER[instant.state] > STATE_ORDER[latest[key].state]:
                latest[key] = instant
        self.instants: tuple[Instant, ...] = tuple(sorted(latest.values()))
        self._cache: dict[Instant, bytes] = {}
        self._parsed: dict[Instant, CommitMetadata] = {}   # completed instants' commit metadata

    def keep_contents(self, older: Timeline) -> None:
        """Take over what `older` (an earlier listing of this table) read of completed instants
        still on this timeline: their files are written once and never change."""
        kept = set(self.instants)
        for cache in (older._cache, older._parsed):
            for instant in [i for i in cache if not (i.is_completed and i in kept)]:
                del cache[instant]
        self._cache, self._parsed = older._cache, older._parsed   # shared: what either reads serves both

    def remember(self, instant: Instant, content: bytes) -> None:
        """`instant`'s content, as its writer (this process) wrote it."""
        self._cache[instant] = bytes(content)

    @classmethod
    def load(cls, storage: Storage, base: str) -> Timeline:
        """Read the instants under <base>/.hoodie (the archived timeline is not read)."""
        return cls(storage, base, _list_instants(storage, join(base, META_FOLDER)))

    def completed(self) -> tuple[Instant, ...]:
        return tuple(i for i in self.instants if i.is_completed)

    def pending(self) -> tuple[Instant, ...]:
        return tuple(i for i in self.instants if not i.is_completed)

    def commits(self) -> tuple[Instant, ...]:
        """Completed instants that wrote data: commit, deltacommit, replacecommit."""
        return tuple(i for i in self.instants if i.is_completed and i.action in WRITE_ACTIONS)

    def completion_order(self) -> tuple[Instant, ...]:
        """Completed instants in the order they completed (layout 1: their requested times)."""
        return tuple(sorted(self.completed(), key=lambda i: (i.completed_at, i.timestamp)))

    @property
    def latest_time(self) -> str | None:
        """The latest time the timeline shows, requested or completion: a new instant's requested
        time, and (layout 2) a completion time, must be after it (Hudi's TimeGenerator)."""
        return max((t for i in self.instants for t in (i.timestamp, i.completion) if t), default=None)

    @property
    def head(self) -> Instant | None:
        """The latest completed instant of any action (the last to complete)."""
        done = self.completion_order()
        return done[-1] if done else None

    def last(self, action: str) -> Instant | None:
        matches = [i for i in self.instants if i.is_completed and i.action == action]
        return matches[-1] if matches else None

    def contains_completed(self, timestamp: str) -> bool:
        return any(i.timestamp == timestamp and i.is_completed for i in self.instants)

    def read_bytes(self, instant: Instant) -> bytes:
        if instant not in self._cache:
            self._cache[instant] = self.storage.read_bytes(join(self.meta, instant.file_name))
        return self._cache[instant]

    def read_metadata(self, instant: Instant) -> dict[str, Any]:
        """An instant's content as a dict: JSON (commits in version 6) or the first record of an Avro
        container (requested replacecommit plans, clean and rollback metadata; every instant in
        versions 8 and 9). Empty files give {}."""
        raw = self.read_bytes(instant)
        if raw.startswith(_AVRO_MAGIC):
            return avro_content(raw, join(self.meta, instant.file_name))
        try:
            return json_text.loads(raw) if raw.strip() else {}
        except ValueError as e:
            raise HudiFormatError(f"{join(self.meta, instant.file_name)}: unreadable metadata: {e}") from None

    def commit_metadata(self, instant: Instant) -> CommitMetadata:
        """An instant's commit metadata. A completed instant's is parsed once and shared by every
        caller (and by later listings, `keep_contents`): its file never changes, and readers
        iterate every deltacommit's write stats on each write. Callers must not change it."""
        if (parsed := self._parsed.get(instant)) is not None:
            return parsed
        data = self.read_metadata(instant)
        try:
            if self.read_bytes(instant).startswith(_AVRO_MAGIC):   # versions 8 and 9
                parsed = CommitMetadata.from_avro(data, replace=instant.action == REPLACE_COMMIT)
            else:
                parsed = CommitMetadata.from_dict(data)
        except HudiFormatError as e:
            raise HudiFormatError(f"{join(self.meta, instant.file_name)}: {e}") from None
        if instant.is_completed:
            self._parsed[instant] = parsed
        return parsed

    def replaced_file_ids(self, as_of: str | None = None) -> dict[str, set[str]]:
        """File groups that completed replacecommits (up to `as_of`) took out of the table."""
        out: dict[str, set[str]] = {}
        for instant in self.commits():
            if instant.action != REPLACE_COMMIT or (as_of is not None and instant.timestamp > as_of):
                continue
            for partition, ids in (self.commit_metadata(instant).partition_to_replace_file_ids or {}).items():
                out.setdefault(partition, set()).update(ids)
        return out

    def latest_schema(self, as_of: str | None = None) -> str | None:
        """The Avro schema recorded by the latest completed commit (at or before `as_of`) that has one."""
        for instant in reversed(self.commits()):
            if as_of is not None and instant.timestamp > as_of:
                continue
            schema = self.commit_metadata(instant).schema
            if schema:
                return schema
        return None


class TimelineWriter:
    """Moves instants through their states. Each step re-checks the files it depends on, so
    a concurrent writer or a stale caller gets an error instead of a corrupt timeline.

    In timeline layout 2 (`folder` below .hoodie/, versions 8 and 9) the completed file is
    `<requested>_<completion>.<action>` holding Avro commit metadata; its completion time is taken
    from a fresh listing under Hudi's transaction lock, strictly after every time on the timeline."""

    def __init__(self, storage: Storage, base: str, folder: str = META_FOLDER):
        """`folder`: the timeline's folder below `base` (Timeline.folder, config.timeline_folder)."""
        self.storage, self.base, self.meta = storage, base, join(base, folder)
        self.layout = 1 if folder == META_FOLDER else 2

    @classmethod
    def of(cls, timeline: Timeline) -> TimelineWriter:
        """The writer of `timeline`'s table, in its folder and layout."""
        return cls(timeline.storage, timeline.base, timeline.folder)

    def _path(self, instant: Instant) -> str:
        return join(self.meta, instant.file_name)

    def _exists(self, instant: Instant) -> bool:
        return self.storage.exists(self._path(instant))

    def _listed(self) -> list[Instant]:
        return parse_instants(self.storage.list_dir(self.meta), self.layout)

    def completed_file(self, instant: Instant) -> Instant | None:
        """`instant` completed, as its completed file names it, or None while it is pending (layout 2
        lists the folder: the completion time in the name is not known beforehand)."""
        done = instant.to("completed")
        if self.layout == 1:
            return done if self._exists(done) else None
        return next((i for i in self._listed() if i.is_completed and i == done), None)

    def is_completed(self, instant: Instant) -> bool:
        return self.completed_file(instant) is not None

    def request(self, action: str, timestamp: str, content: bytes = b"", listed: Timeline | None = None) -> Instant:
        """Create `<timestamp>.<action>.requested`; the timestamp must be newer than every instant
        (layout 2: every time on the timeline, completion times too).
        `listed`: the timeline as the caller read it under Hudi's transaction lock (not listed again)."""
        instant = Instant(timestamp, action, "requested")
        if len(timestamp) != 17:
            raise HudiFormatError(f"new instant time {timestamp!r} must have 17 digits (yyyyMMddHHmmssSSS)")
        newest = (listed if listed is not None else Timeline(self.storage, self.base, self._listed())).latest_time
        if newest is not None and timestamp <= newest:
            raise HudiFormatError(f"instant time {timestamp} is not after the latest instant {newest}")
        try:
            self.storage.create_exclusive(self._path(instant), content)
        except FileExistsError:
            raise HudiFormatError(f"instant {instant} already exists") from None
        return instant

    def start(self, instant: Instant, content: bytes = b"", checked: bool = False) -> Instant:
        """requested -> inflight. `checked`: the caller created the requested instant itself (it
        exists and is not completed; the inflight file is still created exclusively)."""
        if instant.state != "requested":
            raise HudiFormatError(f"cannot start {instant}: only a requested instant can become inflight")
        inflight = instant.to("inflight")
        if not checked and not self._exists(instant):
            raise HudiFormatError(f"cannot start {instant}: {instant.file_name} does not exist")
        if not checked and self.is_completed(instant):
            raise HudiFormatError(f"cannot start {instant}: it is already completed")
        try:
            self.storage.create_exclusive(self._path(inflight), content)
        except FileExistsError:
            raise HudiFormatError(f"cannot start {instant}: it is already inflight") from None
        return inflight

    def complete(self, instant: Instant, metadata: CommitMetadata | dict[str, Any] | bytes,
                 checked: bool = False, locked: bool = False, after: str | None = None) -> Instant:
        """inflight -> completed: the commit point. The completed file appears whole (written
        aside and linked into place) and only if no one completed the instant before.
        `checked`: the caller made the instant inflight itself and still holds the table.
        `locked`: the caller holds Hudi's transaction lock (layout 2 takes it otherwise: the
        completion time is chosen and the file created under it). `after`: a time the completion
        must also follow (layout 2: the metadata table's deltacommit for the instant, completed first)."""
        if instant.state != "inflight":
            raise HudiFormatError(f"cannot complete {instant}: only an inflight instant can complete")
        if not checked and not self._exists(instant):
            raise HudiFormatError(f"cannot complete {instant}: {instant.file_name} does not exist")
        content = self._content(instant, metadata)
        if self.layout == 1:
            return self._create_completed(instant.to("completed"), instant, content)
        if locked:
            return self._complete_now(instant, content, after)
        with TransactionLock(self.storage, self.base, f"complete {instant.action}"):
            return self._complete_now(instant, content, after)

    def _content(self, instant: Instant, metadata: CommitMetadata | dict[str, Any] | bytes) -> bytes:
        """The completed file: `metadata` as is (bytes), or commit metadata as JSON (layout 1) or Avro (layout 2)."""
        if isinstance(metadata, bytes):
            return metadata
        if self.layout == 1:
            return metadata.to_json() if isinstance(metadata, CommitMetadata) else to_hudi_json(metadata)
        if isinstance(metadata, dict):
            metadata = CommitMetadata.from_dict(metadata)
        return encode_commit_metadata(metadata, replace=instant.to("completed").action == REPLACE_COMMIT)

    def _complete_now(self, instant: Instant, content: bytes, after: str | None = None) -> Instant:
        """Layout 2, under the transaction lock: a completion time after every time listed now (and `after`)."""
        timeline = Timeline(self.storage, self.base, self._listed())
        if any(i.is_completed and i == instant.to("completed") for i in timeline.instants):
            raise HudiFormatError(f"cannot complete {instant}: it is already completed")
        completion = new_instant_time(after=max(filter(None, (timeline.latest_time, after)), default=None))
        return self._create_completed(replace(instant.to("completed"), completion=completion), instant, content)

    def _create_completed(self, completed: Instant, instant: Instant, content: bytes) -> Instant:
        try:
            self.storage.create_exclusive(self._path(completed), content)
        except FileExistsError:
            raise HudiFormatError(f"cannot complete {instant}: it is already completed") from None
        return completed

    def revert_inflight(self, instant: Instant) -> Instant:
        """inflight -> requested (a failed attempt that may be retried)."""
        if self.is_completed(instant):
            raise HudiFormatError(f"cannot revert {instant}: it is completed")
        requested = instant.to("requested")
        self.storage.delete(self._path(instant.to("inflight")))
        if not self._exists(requested):
            self.storage.create_exclusive(self._path(requested))
        return requested

    def delete_instant(self, instant: Instant) -> None:
        """Remove a pending instant (its inflight, then its requested file). Completed
        instants are history and are never deleted here."""
        if self.is_completed(instant):
            raise HudiFormatError(f"cannot delete {instant}: it is completed")
        for state in ("inflight", "requested"):
            if (instant.action, state) in SUFFIXES:  # a savepoint has no requested file
                self.storage.delete(self._path(instant.to(state)))

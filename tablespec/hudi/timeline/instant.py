"""Timeline instants: (timestamp, action, state), and their file names.

An instant's state is encoded in its file name only; the one irregular name is an inflight
commit, `T.inflight`. Compaction and log compaction have no completed name: they complete as
`T.commit` and `T.deltacommit`. Timeline layout 2 (table versions 8 and 9, in
`.hoodie/timeline/`) names a completed instant `T_C.action`: its requested time T (its identity,
the time in its files' names) and its completion time C; pending clustering there has an action
of its own, `clustering`, completing as a replacecommit.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import total_ordering
from typing import Literal

from tablespec.errors import HudiFormatError

State = Literal["requested", "inflight", "completed"]
STATE_ORDER = {"requested": 0, "inflight": 1, "completed": 2}
INSTANT_FORMAT = "%Y%m%d%H%M%S"

COMMIT, DELTA_COMMIT, REPLACE_COMMIT = "commit", "deltacommit", "replacecommit"
CLEAN, ROLLBACK, SAVEPOINT, RESTORE = "clean", "rollback", "savepoint", "restore"
COMPACTION, LOG_COMPACTION, INDEXING, SCHEMA_COMMIT = "compaction", "logcompaction", "indexing", "schemacommit"
CLUSTERING = "clustering"   # pending clustering in timeline layout 2
WRITE_ACTIONS = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT})
# The action a pending instant completes as (Hudi's "comparable action").
COMPLETES_AS = {COMPACTION: COMMIT, LOG_COMPACTION: DELTA_COMMIT, CLUSTERING: REPLACE_COMMIT}


def _suffixes() -> dict[tuple[str, str], str]:
    table: dict[tuple[str, str], str] = {}
    for action in (COMMIT, DELTA_COMMIT, REPLACE_COMMIT, CLEAN, ROLLBACK, RESTORE, INDEXING, SCHEMA_COMMIT):
        table[(action, "requested")] = f".{action}.requested"
        table[(action, "inflight")] = f".{action}.inflight"
        table[(action, "completed")] = f".{action}"
    table[(COMMIT, "inflight")] = ".inflight"
    for action in (COMPACTION, LOG_COMPACTION, CLUSTERING):
        table[(action, "requested")] = f".{action}.requested"
        table[(action, "inflight")] = f".{action}.inflight"
    table[(SAVEPOINT, "inflight")] = ".savepoint.inflight"
    table[(SAVEPOINT, "completed")] = ".savepoint"
    return table


SUFFIXES = _suffixes()
_BY_SUFFIX = {suffix: key for key, suffix in SUFFIXES.items()}
_TIMESTAMP = re.compile(r"\d{17}|\d{14}")


def validate_timestamp(timestamp: str) -> str:
    """Accept yyyyMMddHHmmssSSS, and the 14-digit second-precision form of old tables."""
    if not isinstance(timestamp, str) or not _TIMESTAMP.fullmatch(timestamp):
        raise HudiFormatError(f"invalid instant time {timestamp!r}: expected 17 digits (yyyyMMddHHmmssSSS)")
    return timestamp


@total_ordering
@dataclass(frozen=True, eq=True)
class Instant:
    """`completion`: the completion time a layout-2 file name carries (None in layout 1). It is no
    part of the identity: the same instant compares equal in either layout."""
    timestamp: str
    action: str
    state: State = "completed"
    completion: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        validate_timestamp(self.timestamp)
        if (self.action, self.state) not in SUFFIXES:
            raise HudiFormatError(f"instant action {self.action!r} has no {self.state} state")
        if self.completion is not None:
            validate_timestamp(self.completion)
            if self.state != "completed":
                raise HudiFormatError(f"a {self.state} instant has no completion time")

    @property
    def completed_at(self) -> str:
        """When the instant completed as far as its file name tells (layout 1: its requested time)."""
        return self.completion or self.timestamp

    @property
    def sort_key(self) -> tuple[str, int, str]:
        return self.timestamp, STATE_ORDER[self.state], self.action

    def __lt__(self, other: Instant) -> bool:
        if not isinstance(other, Instant):
            return NotImplemented
        return self.sort_key < other.sort_key

    @property
    def file_name(self) -> str:
        stem = f"{self.timestamp}_{self.completion}" if self.completion else self.timestamp
        return stem + SUFFIXES[(self.action, self.state)]

    @property
    def is_completed(self) -> bool:
        return self.state == "completed"

    def to(self, state: State) -> Instant:
        """This instant in another state; a completed compaction is a commit."""
        action = COMPLETES_AS.get(self.action, self.action) if state == "completed" else self.action
        return Instant(self.timestamp, action, state)

    @classmethod
    def parse(cls, file_name: str, layout: int = 1, where: str | None = None) -> Instant | None:
        """The instant a file name of a timeline in `layout` (1: .hoodie/ of version 6; 2:
        .hoodie/timeline/ of versions 8 and 9) denotes, or None for a name that is no instant's
        (hoodie.properties, dot files: temp files, checksums). A name starting with a digit that
        does not parse is refused (`where`: its path, for the message): skipped, a completed
        instant with a damaged name would read as pending and be rolled back."""
        stem, dot, rest = file_name.partition(".")
        ts, _, completion = stem.partition("_") if layout >= 2 else (stem, "", "")
        key = _BY_SUFFIX.get("." + rest) if dot else None
        if (key is None or not _TIMESTAMP.fullmatch(ts) or (completion and not _TIMESTAMP.fullmatch(completion))
                or (completion and key[1] != "completed")):
            if file_name[:1].isdigit() and not _is_arriving(file_name, layout):
                raise HudiFormatError(f"{where or file_name}: not a timeline file name (<requested time>"
                                      f"{'[_<completion time>]' if layout >= 2 else ''}.<action>[.<state>], "
                                      "times of 17 digits); restore its name or move it out of the timeline")
            return None
        return cls(ts, key[0], key[1], completion or None)  # type: ignore[arg-type]

    def __str__(self) -> str:
        return f"{self.timestamp}.{self.action}[{self.state}]"


_ARRIVING = re.compile(r"(.+)\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _is_arriving(file_name: str, layout: int) -> bool:
    """A timeline file on its way in: Apache Hudi 1.x writes one as `<its name>.<random UUID>` and
    renames it into place (seen beside a running Hudi 1.2 job), so a listing can catch the temporary
    name. No instant's yet; ignored as Hudi's own listings ignore it."""
    arriving = _ARRIVING.fullmatch(file_name)
    try:
        return arriving is not None and Instant.parse(arriving.group(1), layout) is not None
    except HudiFormatError:
        return False


def plan_action(layout: int) -> str:
    """The action a clustering plan is requested under in timeline `layout`."""
    return CLUSTERING if layout >= 2 else REPLACE_COMMIT


def format_instant_time(moment: datetime) -> str:
    return moment.strftime(INSTANT_FORMAT) + f"{moment.microsecond // 1000:03d}"


def parse_instant_time(timestamp: str) -> datetime:
    validate_timestamp(timestamp)
    try:
        moment = datetime.strptime(timestamp[:14], INSTANT_FORMAT)
    except ValueError:
        raise HudiFormatError(f"instant time {timestamp!r} is not a date") from None
    return moment.replace(microsecond=int(timestamp[14:] or 0) * 1000, tzinfo=UTC)


def new_instant_time(after: str | None = None) -> str:
    """A new instant time from the UTC clock, strictly greater than `after`.

    Hudi defaults to the writer's local time zone; tablespec always uses UTC so instants from
    machines in different zones stay ordered (Hudi's hoodie.table.timeline.timezone=UTC).
    If the clock has not moved past `after` (fast successive commits, clock skew), the result
    is `after` plus one millisecond.
    """
    now = format_instant_time(datetime.now(UTC))
    if after is None or now > after:
        return now
    return format_instant_time(parse_instant_time(after) + timedelta(milliseconds=1))

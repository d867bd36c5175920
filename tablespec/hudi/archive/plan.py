"""Which instants an archiving run moves off the active timeline: Apache Hudi 0.15's rules
(HoodieTimelineArchiver, ArchivalUtils, ClusteringUtils), as a pure function of the timeline.

Commits (commit, deltacommit, replacecommit) are archived only once more than `max_commits` are
completed, oldest first, down to `min_commits`; never the oldest pending write nor any commit
after the last completed commit before it; never a commit at or after the first savepoint;
never a replacecommit readers still need: the first one at or after what the last clean
retains (its plan's earliestInstantToRetain), nor the commit before the first inflight one.
Cleans and rollbacks are archived per action by the same counts, independently of commits.
When Hudi's metadata table is in use, nothing at or after its latest compaction is archived
(nothing at all before its first). The limits follow the cleaner as Hudi adjusts them: at least
two more than the commits after the cleaner's earliest commit to retain.

On merge-on-read tables deltacommits count as commits, a completed compaction is a commit, and
(ArchiveSettings.compaction_delta_commits, when the compaction trigger counts deltacommits) the
deltacommits the trigger counts stay: nothing from the latest compaction on while fewer of them
followed it, else nothing from the `compaction_delta_commits`-th latest of them on.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tablespec.errors import HudiFormatError, TablespecError
from tablespec.hudi import keys
from tablespec.hudi.config import named_partitions
from tablespec.hudi.mdt import layout as mdt_layout
from tablespec.hudi.services.clean import earliest_commit_to_retain
from tablespec.hudi.timeline.active import Timeline
from tablespec.hudi.timeline.instant import (
    CLEAN,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    ROLLBACK,
    SAVEPOINT,
    WRITE_ACTIONS,
    Instant,
)

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

MIN_COMMITS_KEY, MAX_COMMITS_KEY = keys.KEEP_MIN_COMMITS.name, keys.KEEP_MAX_COMMITS.name
CLEANER_COMMITS_KEY = keys.KEEP_COMMITS.name
DEFAULT_MIN_COMMITS, DEFAULT_MAX_COMMITS, DEFAULT_CLEANER_COMMITS = 20, 30, 10
_PENDING_WRITES = WRITE_ACTIONS | {COMPACTION, LOG_COMPACTION}


class ArchiveSettingsError(TablespecError):
    """Archiving settings that contradict each other or the cleaner's retention."""


@dataclass(frozen=True)
class ArchiveSettings:
    """How much history stays active. Checked as Hudi checks them, and stricter on one point:
    Hudi only warns when `min_commits` does not exceed the cleaner's retained commits (and keeps
    more than configured); tablespec refuses, so the declared numbers are the ones applied."""
    min_commits: int = DEFAULT_MIN_COMMITS
    max_commits: int = DEFAULT_MAX_COMMITS
    cleaner_commits_retained: int = DEFAULT_CLEANER_COMMITS
    compaction_delta_commits: int | None = None   # merge-on-read: the deltacommits compaction's trigger counts

    def __post_init__(self) -> None:
        for key, value in ((MIN_COMMITS_KEY, self.min_commits), (MAX_COMMITS_KEY, self.max_commits),
                           (CLEANER_COMMITS_KEY, self.cleaner_commits_retained)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ArchiveSettingsError(f"{key} must be a whole number of at least 1, found {value!r}")
        if self.max_commits <= self.min_commits:
            raise ArchiveSettingsError(
                f"{MAX_COMMITS_KEY}={self.max_commits} must be greater than {MIN_COMMITS_KEY}={self.min_commits}")
        if self.min_commits <= self.cleaner_commits_retained:
            raise ArchiveSettingsError(
                f"{MIN_COMMITS_KEY}={self.min_commits} must be greater than {CLEANER_COMMITS_KEY}="
                f"{self.cleaner_commits_retained}: archiving would otherwise take commits the cleaner still retains")

    @classmethod
    def following(cls, cleaner_commits_retained: int, min_commits: int | None = None,
                  max_commits: int | None = None, compaction_delta_commits: int | None = None) -> ArchiveSettings:
        """The settings with undeclared limits at Hudi's defaults, raised as Hudi's archiver raises
        them when the cleaner retains as many commits or more (min: one above the cleaner's; max:
        the default gap above min), so leaving them out is never an error."""
        low = min_commits if min_commits is not None else max(DEFAULT_MIN_COMMITS, cleaner_commits_retained + 1)
        gap = DEFAULT_MAX_COMMITS - DEFAULT_MIN_COMMITS
        high = max_commits if max_commits is not None else max(DEFAULT_MAX_COMMITS, low + gap)
        return cls(low, high, cleaner_commits_retained, compaction_delta_commits)

    @classmethod
    def from_properties(cls, props: Mapping[str, str], origin: str = "Hudi options") -> ArchiveSettings:
        """The settings in Hudi's keys (absent keys: see `following`); errors name `origin`."""
        values: list[int | None] = []
        for key in (MIN_COMMITS_KEY, MAX_COMMITS_KEY, CLEANER_COMMITS_KEY):
            raw = props.get(key)
            try:
                values.append(None if raw is None else int(str(raw).strip()))
            except ValueError:
                raise ArchiveSettingsError(f"{origin}: {key} must be a whole number, found {raw!r}") from None
        low, high, cleaner = values
        try:
            return cls.following(DEFAULT_CLEANER_COMMITS if cleaner is None else cleaner, low, high)
        except ArchiveSettingsError as e:
            raise ArchiveSettingsError(f"{origin}: {e}") from None


@dataclass(frozen=True)
class Bounds:
    """Facts beyond the active timeline's instants that limit archiving (see `read_bounds`)."""
    clean_retains: str | None = None       # what the last completed clean retains; None: no completed clean
    metadata_table: bool = False           # Hudi's metadata table is in use
    metadata_compacted: str | None = None  # the metadata table's latest compaction


@dataclass(frozen=True)
class ArchivePlan:
    """The completed instants to archive, in the order Hudi writes them (cleans and rollbacks,
    then commits), and the limits applied (after following the cleaner)."""
    instants: tuple[Instant, ...]
    min_commits: int
    max_commits: int

    @property
    def empty(self) -> bool:
        return not self.instants


def keep_limits(timeline: Timeline, settings: ArchiveSettings) -> tuple[int, int]:
    """(min, max) completed commits to keep: the settings, raised as Hudi raises them when the
    cleaner retains from further back (min: the commits after its earliest commit to retain + 2)."""
    earliest = earliest_commit_to_retain(timeline, settings.cleaner_commits_retained)
    if earliest is not None:
        needed = sum(1 for c in timeline.commits() if c.timestamp > earliest.timestamp) + 2
        if settings.min_commits < needed:
            return needed, needed + settings.max_commits - settings.min_commits
    return settings.min_commits, settings.max_commits


def _clustering_bound(timeline: Timeline, commits: tuple[Instant, ...], clean_retains: str | None) -> str | None:
    """The oldest instant kept for replacecommits (ClusteringUtils.getOldestInstantToRetainForClustering):
    the first replacecommit (any state) the last clean still retains, or the commit before the
    first inflight replacecommit if that is older."""
    replaces = [i for i in timeline.instants if i.action == REPLACE_COMMIT]
    if not replaces:
        return None
    if clean_retains is None:
        bound: str | None = replaces[0].timestamp
    else:
        bound = next((r.timestamp for r in replaces if r.timestamp >= clean_retains), None)
    inflight = [r for r in replaces if r.state == "inflight"]
    if inflight:
        before = [c for c in commits if c.timestamp < inflight[0].timestamp]
        if before and (bound is None or bound > before[-1].timestamp):
            bound = before[-1].timestamp
    return bound


def _compaction_bound(timeline: Timeline, delta_commits: int) -> str | None:
    """The oldest instant kept for merge-on-read compaction scheduling
    (CompactionUtils.getEarliestInstantToRetainForCompaction): the latest completed commit or
    replacecommit (else the first deltacommit) while fewer than `delta_commits` deltacommits (any
    state) followed it, else the `delta_commits`-th latest of those: the trigger counts them."""
    last = max((i.timestamp for i in timeline.completed() if i.action in (COMMIT, REPLACE_COMMIT)), default=None)
    deltas = [i.timestamp for i in timeline.instants if i.action == DELTA_COMMIT and (last is None or i.timestamp > last)]
    if last is None and not deltas:
        return None
    if len(deltas) < delta_commits:
        return last or deltas[0]
    return deltas[len(deltas) - delta_commits]


def _commits_to_archive(timeline: Timeline, min_keep: int, max_keep: int, bounds: Bounds,
                        delta_commits: int | None = None) -> list[Instant]:
    commits = timeline.commits()
    if len(commits) <= max_keep:
        return []
    limits = []
    pending = [i for i in timeline.pending() if i.action in _PENDING_WRITES]
    if pending:
        before = [c for c in commits if c.timestamp < pending[0].timestamp]
        limits.append(before[-1].timestamp if before else pending[0].timestamp)
    savepoints = [i for i in timeline.completed() if i.action == SAVEPOINT]
    if savepoints:
        limits.append(savepoints[0].timestamp)
    clustering = _clustering_bound(timeline, commits, bounds.clean_retains)
    if clustering is not None:
        limits.append(clustering)
    compaction = _compaction_bound(timeline, delta_commits) if delta_commits is not None else None
    if compaction is not None:
        limits.append(compaction)
    eligible = [c for c in commits if all(c.timestamp < limit for limit in limits)]
    return eligible[:len(commits) - min_keep]


def _cleans_to_archive(timeline: Timeline, min_keep: int, max_keep: int) -> list[Instant]:
    out: list[Instant] = []
    for action in (CLEAN, ROLLBACK):
        done = [i for i in timeline.completed() if i.action == action]
        if len(done) > max_keep:
            out += done[:len(done) - min_keep]
    return out


def archive_due(timeline: Timeline, settings: ArchiveSettings, added: int = 0) -> bool:
    """Whether a run may archive anything (a cheap necessary condition on a timeline already read,
    checked after every action and write): more completed commits, cleans or rollbacks than
    `max_commits` (Hudi raises the limits, never lowers them), counting `added` more instants of
    each kind (what the caller completed since it read `timeline`)."""
    completed = timeline.completed()
    limit = settings.max_commits - added
    return (len(timeline.commits()) > limit
            or any(sum(1 for i in completed if i.action == a) > limit for a in (CLEAN, ROLLBACK)))


def plan_archive(timeline: Timeline, settings: ArchiveSettings, bounds: Bounds = Bounds()) -> ArchivePlan:
    """What Hudi's archiver would move off `timeline` (only its instants are used: no I/O): Hudi
    0.15's for a version-6 timeline, Hudi 1.2's (`plan_lsm_archive`) for a layout-2 one."""
    min_keep, max_keep = keep_limits(timeline, settings)
    if timeline.layout == 2:
        return plan_lsm_archive(timeline, min_keep, max_keep, bounds, settings.compaction_delta_commits)
    candidates = _cleans_to_archive(timeline, min_keep, max_keep) + _commits_to_archive(
        timeline, min_keep, max_keep, bounds, settings.compaction_delta_commits)
    if bounds.metadata_table:
        compacted = bounds.metadata_compacted
        candidates = [] if compacted is None else [i for i in candidates if i.timestamp < compacted]
    return ArchivePlan(tuple(candidates), min_keep, max_keep)


def plan_lsm_archive(timeline: Timeline, min_keep: int, max_keep: int, bounds: Bounds,
                     delta_commits: int | None = None) -> ArchivePlan:
    """Hudi 1.2's rules (TimelineArchiverV2) on a layout-2 timeline, after the limits: commits as
    in 0.15 (pending, savepoint and clustering bounds), but the metadata table's bound is the
    first commit that *completed* after its latest compaction (completion times order what its
    log blocks hold), and cleans and rollbacks go only with commits: every completed one
    requested before the newest commit archived, whatever their count. All in requested-time order."""
    if bounds.metadata_table and bounds.metadata_compacted is None:
        return ArchivePlan((), min_keep, max_keep)   # before its first compaction, nothing
    commits = _commits_to_archive(timeline, min_keep, max_keep, bounds, delta_commits)
    if bounds.metadata_table and bounds.metadata_compacted is not None:
        compacted = bounds.metadata_compacted
        after = [c.timestamp for c in timeline.commits() if c.completed_at > compacted][:1]
        commits = [c for c in commits if not after or c.timestamp < after[0]]
    if not commits:
        return ArchivePlan((), min_keep, max_keep)
    last = commits[-1].timestamp
    cleans = [i for i in timeline.completed() if i.action in (CLEAN, ROLLBACK) and i.timestamp < last]
    return ArchivePlan(tuple(sorted(cleans + commits)), min_keep, max_keep)


def read_bounds(table: HudiTable) -> Bounds:
    """The facts `plan_archive` needs from files: the last completed clean's retained instant (its
    requested plan's earliestInstantToRetain; the clean's own time when the plan names none, as
    for Hudi's file-versions policy) and, when hoodie.properties names metadata-table
    partitions, that table's latest compaction (a completed commit on its timeline)."""
    base, timeline = table.base, table.timeline
    retains = None
    clean = timeline.last(CLEAN)
    if clean is not None:
        try:
            plan = timeline.read_metadata(clean.to("requested"))
        except FileNotFoundError:
            raise HudiFormatError(f"{base}: clean {clean.timestamp} has no requested plan") from None
        retains = (plan.get("earliestInstantToRetain") or {}).get("timestamp") or clean.timestamp
    in_use = bool(named_partitions(table.config))
    compacted = None
    if in_use:   # the metadata table's timeline (its compactions have 20-digit times)
        done = [i.timestamp for i in mdt_layout.timeline(table.storage, base, mdt_layout.Format.of(table.config))
                if i.action == mdt_layout.COMPACTION and i.completed]
        compacted = max(done, default=None)
    return Bounds(retains, in_use, compacted)

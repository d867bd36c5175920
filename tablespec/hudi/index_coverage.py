"""Which data commits the record-level index has seen (no Spark, timeline metadata only).

Apache Hudi writers, older tablespec versions and tablespec writers of a table whose index was
not RECORD_LEVEL at the time write data without an index delta. A lookup or a tagging write
against an index that missed such a commit would be silently wrong, so tablespec marks what
its index covers, in each commit's extraMetadata (`MARK`):

- `build`: the commit wrote the whole index (an index build, `replace_table`): it covers every
  data commit completed before it. Write instants still pending then are listed (`PENDING`):
  they may complete later, unseen.
- `delta`: the commit wrote its own index delta (a tablespec write, clustering, rewrite).
- `catch_up`: the commit indexed the data commits it lists (`INSTANTS`).

Unseen: every completed data commit (with write stats or replaced file groups) after the latest
build, or pending at it, that carries no mark and no catch-up lists. Without a build on the
active timeline (a table created RECORD_LEVEL), every unmarked data commit is unseen.

Archiving needs no look into the archived timeline: it moves the oldest instants, so an archived
build or catch-up only covered (and listed) commits that are archived too, and every active
commit is later than any archived one: unseen exactly when no active mark covers it.
"""
from __future__ import annotations

from dataclasses import dataclass

from tablespec.errors import TablespecError
from tablespec.hudi.instant import WRITE_ACTIONS, Instant

MARK = "tablespec.record.index"
PENDING = "tablespec.record.index.pending"
INSTANTS = "tablespec.record.index.instants"
BUILD, DELTA, CATCH_UP = "build", "delta", "catch_up"


class IndexBehind(TablespecError):
    """The record-level index has not seen some data commits; index-based work must wait."""


def build_marks(timeline) -> dict[str, str]:
    """extraMetadata of a commit that writes the whole index, planned against `timeline`."""
    pending = sorted(i.timestamp for i in timeline.pending() if i.action in WRITE_ACTIONS)
    return {MARK: BUILD, **({PENDING: ",".join(pending)} if pending else {})}


def delta_marks() -> dict[str, str]:
    return {MARK: DELTA}


def catch_up_marks(instants) -> dict[str, str]:
    return {MARK: CATCH_UP, INSTANTS: ",".join(i.timestamp for i in instants)}


def _listed(value: str | None) -> set[str]:
    return {v for v in (value or "").split(",") if v}


def _has_data(metadata) -> bool:
    return bool(metadata.write_stats() or any((metadata.partition_to_replace_file_ids or {}).values()))


def unseen_commits(timeline) -> tuple[Instant, ...]:
    """Completed data commits the index has not seen, oldest first (see the module doc). Reads
    commit metadata newest first, down to the latest build only."""
    candidates, caught_up, stragglers = [], set(), set()
    for instant in reversed(timeline.commits()):
        extra = timeline.commit_metadata(instant).extra_metadata
        if extra.get(MARK) == BUILD:
            stragglers = _listed(extra.get(PENDING))
            break
        if extra.get(MARK) == CATCH_UP:
            caught_up |= _listed(extra.get(INSTANTS))
        elif MARK not in extra:
            candidates.append(instant)
    candidates += [i for i in timeline.commits() if i.timestamp in stragglers
                   and MARK not in timeline.commit_metadata(i).extra_metadata]
    return tuple(sorted(i for i in candidates
                        if i.timestamp not in caught_up and _has_data(timeline.commit_metadata(i))))


def commit_file_groups(timeline, instants) -> dict[tuple[str, str], int]:
    """(partition, file id) -> rows its latest write left (0 once replaced), for the file groups
    `instants` (oldest first) wrote or replaced."""
    out: dict[tuple[str, str], int] = {}
    for instant in instants:
        metadata = timeline.commit_metadata(instant)
        for s in metadata.write_stats():
            if s.file_id:
                out[(s.partition_path or "", s.file_id)] = s.num_writes
        for partition, ids in (metadata.partition_to_replace_file_ids or {}).items():
            for fid in ids:
                out[(partition, fid)] = 0
    return out


@dataclass(frozen=True)
class CatchUp:
    """What a record-index catch-up has to index: the unseen commits and the file groups they touched."""
    instants: tuple[Instant, ...]
    file_groups: int
    rows: int

    def estimate(self) -> dict:
        return {"commits": len(self.instants), "file_groups": self.file_groups, "rows": self.rows}


def catch_up(timeline) -> CatchUp | None:
    """The catch-up the index needs on `timeline`, or None when it has seen every data commit."""
    unseen = unseen_commits(timeline)
    if not unseen:
        return None
    touched = commit_file_groups(timeline, unseen)
    return CatchUp(unseen, len(touched), sum(touched.values()))


def describe(instants) -> str:
    return ", ".join(f"{i.timestamp}.{i.action}" for i in instants)


def refuse_unseen(timeline, base: str, what: str) -> None:
    """Raise IndexBehind when the index missed data commits (named), telling how to catch up."""
    unseen = unseen_commits(timeline)
    if unseen:
        raise IndexBehind(
            f"{base}: {what} needs the record-level index, which has not seen {len(unseen)} data commit(s): "
            f"{describe(unseen)} (written without tablespec's index, e.g. by Apache Hudi); run `tablespec plan` "
            "and `tablespec apply` to catch the index up (record_index_catch_up)")

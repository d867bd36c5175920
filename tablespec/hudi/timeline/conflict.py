"""Optimistic conflict checks between writers, as Apache Hudi's default resolution strategy does them.

A writer that commits must not undo another writer's commit it did not see. Hudi's
SimpleConcurrentFileWritesConflictResolutionStrategy (the default under
`hoodie.write.concurrency.mode=OPTIMISTIC_CONCURRENCY_CONTROL`) compares file groups: a commit that
completed after this writer's transaction started and wrote or replaced a file group this one
writes or replaces is a conflict, and the later committer aborts. tablespec checks the same,
with three refinements:

- the candidates are the write instants completed since the *timeline the action read* (its
  basis), not since the last completed instant at its start: a slow writer that started earlier
  and finished later is still a candidate;
- a rewrite that re-lays out whole partitions (bucket bootstrap and rescale, a table overwrite)
  also conflicts with a commit that only added new file groups there: those rows would
  otherwise stay outside the new layout;
- on a bucketed table, file groups are compared by bucket (as Hudi's
  BucketIndexConcurrentFileWritesConflictResolutionStrategy does): two writers that each create
  bucket 3 of a new partition create two file groups for one bucket.

Pure functions over timelines: the caller holds Hudi's transaction lock (`txn_lock.py`) so the
timeline cannot change between the check and its own commit.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tablespec.errors import TablespecError
from tablespec.hudi.formats.commit import CommitMetadata
from tablespec.hudi.formats.naming import bucket_of
from tablespec.hudi.timeline.active import Timeline

ALL_PARTITIONS = "*"


@dataclass(frozen=True)
class Footprint:
    """What a transaction writes, replaces or re-lays out: (partition, file id) pairs and whole partitions
    (`ALL_PARTITIONS` for the whole table)."""
    file_groups: frozenset[tuple[str, str]]
    partitions: frozenset[str] = frozenset()

    @classmethod
    def of(cls, metadata: CommitMetadata, partitions: Iterable[str] = ()) -> Footprint:
        return cls(frozenset(touched(metadata)), frozenset(partitions))


@dataclass(frozen=True)
class Conflict:
    instant: str
    action: str
    file_groups: tuple[str, ...]   # "partition/file id", or "partition (new file groups)"

    def describe(self) -> str:
        shown = ", ".join(self.file_groups[:5]) + (f" and {len(self.file_groups) - 5} more"
                                                   if len(self.file_groups) > 5 else "")
        return f"{self.action} {self.instant} ({shown})"


class WriteConflictError(TablespecError):
    """Another writer committed to file groups this action writes, replaces or reads."""

    def __init__(self, base: str, instant: str, conflicts: list[Conflict]):
        self.base, self.instant, self.conflicts = base, instant, conflicts
        super().__init__(
            f"write conflict on table {base}: while instant {instant} ran, another writer completed "
            + "; ".join(c.describe() for c in conflicts)
            + f". Instant {instant} was rolled back and the table is as that writer left it; "
            "run `tablespec plan` again to see what is still to do")


def touched(metadata: CommitMetadata) -> set[tuple[str, str]]:
    """The (partition, file id) pairs a commit wrote or replaced (what Hudi's strategy compares)."""
    out = {(partition, stat.file_id) for partition, stats in metadata.partition_to_write_stats.items()
           for stat in stats if stat.file_id}
    out |= {(partition, fid) for partition, ids in (metadata.partition_to_replace_file_ids or {}).items()
            for fid in ids}
    return out


def _key(partition: str, file_id: str, bucketed: bool) -> tuple[str, str]:
    bucket = bucket_of(file_id) if bucketed else None
    return (partition, f"bucket {bucket}") if bucket is not None else (partition, file_id)


def candidates(basis: Timeline, now: Timeline, own: str) -> list:
    """Write instants completed in `now` that were not completed in `basis` (other than `own`)."""
    seen = {i.timestamp for i in basis.commits()}
    return [i for i in now.commits() if i.timestamp not in seen and i.timestamp != own]


def find_conflicts(basis: Timeline, now: Timeline, own: str, footprint: Footprint,
                   bucketed: bool = False) -> list[Conflict]:
    """The commits in `now` this transaction (instant `own`, which read `basis`) conflicts with."""
    ours = {_key(p, f, bucketed) for p, f in footprint.file_groups}
    whole = footprint.partitions
    out = []
    for instant in candidates(basis, now, own):
        theirs = touched(now.commit_metadata(instant))
        hit = sorted(f"{p}/{f}" if p else f for p, f in {_key(p, f, bucketed) for p, f in theirs} & ours)
        hit += sorted({f"{p or '(table)'} (new file groups)" for p, f in theirs
                       if (ALL_PARTITIONS in whole or p in whole) and _key(p, f, bucketed) not in ours})
        if hit:
            out.append(Conflict(instant.timestamp, instant.action, tuple(hit)))
    return out

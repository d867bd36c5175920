"""Apache Hudi's restore (a rollback to a savepoint) left pending: tablespec does not restore, it notices.

Hudi's `rollback_to_savepoint` writes `R.restore.requested` (a HoodieRestorePlan: the savepoint and
the instants after it to roll back), `R.restore.inflight`, rolls those instants back one by one and
completes `R.restore` last. A restore that stopped half-way leaves the table between the two: some
of the instants rolled back, the restore pending. Apache Hudi 0.15's and 1.2's writers refuse such a
table ("Found pending restore in active timeline. Please complete the restore fully before proceeding"),
and running the same restore again finishes it (Hudi resumes the pending plan): a commit on top of
it would be rolled back by that retry, so tablespec refuses too, and says how to finish it.
"""
from __future__ import annotations

from dataclasses import dataclass

from tablespec.hudi.timeline.active import Timeline
from tablespec.hudi.timeline.instant import RESTORE, Instant


@dataclass(frozen=True)
class PendingRestore:
    instant: Instant                 # the restore, requested or inflight
    savepoint: str | None            # the savepoint it restores to (None: its plan does not say)
    to_roll_back: tuple[str, ...]    # instants of its plan still on the timeline: finishing it rolls them back

    def refusal(self, base: str) -> str:
        """One line: the pending restore, what finishing it means, and how."""
        r = self.instant
        left = (f"finishing it rolls back {len(self.to_roll_back)} more instant(s) after the savepoint "
                f"({', '.join(self.to_roll_back)})" if self.to_roll_back else
                "the instants after the savepoint are rolled back already; finishing it records the restore")
        rerun = (f"run `CALL rollback_to_savepoint(path => '{base}', instant_time => '{self.savepoint}')` again"
                 if self.savepoint else "run the same restore again")
        return (f"{base}: Apache Hudi's restore {r.timestamp} to savepoint {self.savepoint or '(unknown)'} is pending "
                f"({r.file_name}): {left}. Finish it with Apache Hudi ({rerun}: Hudi resumes the pending restore); "
                "until then Hudi's writers refuse the table, and so does tablespec")


def pending_restore(timeline: Timeline) -> PendingRestore | None:
    """The table's pending restore (the latest, if several), or None."""
    pending = [i for i in timeline.pending() if i.action == RESTORE]
    if not pending:
        return None
    restore = pending[-1]
    try:
        plan = timeline.read_metadata(restore.to("requested"))
    except FileNotFoundError:   # an inflight restore whose plan is gone: what it restores to is unknown
        plan = {}
    listed = {i.timestamp for i in timeline.instants}
    planned = [str(i.get("commitTime")) for i in plan.get("instantsToRollback") or [] if isinstance(i, dict)]
    savepoint = plan.get("savepointToRestoreTimestamp")
    return PendingRestore(restore, str(savepoint) if savepoint else None,
                          tuple(sorted(t for t in planned if t in listed)))

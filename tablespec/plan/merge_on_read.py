"""Index changes on a merge-on-read table (versions 6 and 9): which tablespec runs and why it refuses the others.

A bucket bootstrap or rescale reads every slice merged with its log files (engine/rebucket.py)
and replaces whole file groups, logs included; it cannot take a file group a pending compaction
will rewrite, so it waits for that compaction. SIMPLE and BLOOM find a key in base files only:
Apache Hudi's writers with them (and with the record index) put inserts into base files, so a
switch between them is configuration only, but a switch from BUCKET (whose writers put inserts into
log files) would miss the keys only log files hold until every slice is compacted. The record
index is built from each slice's keys merged with its log files (engine/record_index.py).
"""
from __future__ import annotations

from tablespec.errors import UnsupportedTableError
from tablespec.hudi.keys import METADATA_ENABLE, TABLE_TYPE
from tablespec.plan.actions import Action, IndexBuildEstimate
from tablespec.plan.clustering import compacting
from tablespec.state import TableState
from tablespec.wording import counted

MERGE_ON_READ = "MERGE_ON_READ"
# Table versions a COPY_ON_WRITE table is converted in place at (checked with Apache Hudi 0.15)
CONVERTED_ON = (6,)
REWRITES = frozenset({"bucket_bootstrap", "bucket_rescale", "index_migration", "record_index_build"})
BASE_FILE_INDEXES = ("SIMPLE", "BLOOM")


def merged_rewrite(action: Action, state: TableState) -> Action:
    """The action as it runs on the merge-on-read table (a rewrite says which slices it reads merged
    with their log files); UnsupportedTableError, one line, for one tablespec does not run there."""
    if (why := refusal(action, state)) is not None:
        raise UnsupportedTableError(f"{state.location}: {why}")
    if action.kind in ("bucket_bootstrap", "bucket_rescale"):
        rewritten = set(action.params.partitions)
        logged = [fg for fg in state.file_groups if fg.partition in rewritten and fg.log_files]
        what = "read merged; the replacecommit replaces whole file groups, log files included"
    elif _builds_index(action):
        logged = [fg for fg in state.file_groups if fg.log_files]
        what = "read merged for their keys (a key only the logs hold is indexed, one they delete is not)"
    else:
        return action
    if not logged:
        return action
    note = (f"merge-on-read: {counted(len(logged), 'file slice')} with log files "
            f"({counted(sum(fg.log_files for fg in logged), 'log file')}: their updates and deletes applied) {what}")
    return action.model_copy(update={"reasons": [*action.reasons, note]})


def _builds_index(action: Action) -> bool:
    """A record index build (the action's estimate counts the keys it reads)."""
    return action.kind in ("record_index_build", "index_migration") and isinstance(action.estimate, IndexBuildEstimate)


def refusal(action: Action, state: TableState) -> str | None:
    """Why tablespec does not run this index change on the merge-on-read table as observed, or None."""
    if action.kind in ("bucket_bootstrap", "bucket_rescale"):
        rewritten = set(action.params.partitions)
        waiting = sorted(f"{p}/{f}" if p else f for p, f in compacting(state) if p in rewritten)
        if waiting:
            listed = ", ".join(i.timestamp for i, _ in state.compaction.pending) if state.compaction else ""
            return (f"{action.kind} rewrites file groups under pending compaction {listed} ({', '.join(waiting[:3])}"
                    f"{', ...' if len(waiting) > 3 else ''}): it runs first (Apache Hudi's `run_compaction`, or "
                    "compaction.runBy: tablespec with the spec's index unchanged), then plan again")
        return None
    if _builds_index(action) and "files" not in state.metadata_table.partitions:
        return ("Hudi's record index is built into the metadata table, which this MERGE_ON_READ table has not "
                "got (tablespec leaves building it to Apache Hudi's writers here): write the table with "
                f"{METADATA_ENABLE.name}=true first")
    if action.kind != "index_migration":
        return None
    old, new = action.params.from_, action.params.to
    logged = [fg for fg in state.file_groups if fg.log_files]
    if old == "BUCKET" and new in BASE_FILE_INDEXES and logged:
        return (f"index BUCKET -> {new} on a MERGE_ON_READ table with log files ({len(logged)} file slice(s)): "
                f"{new} finds keys in base files only, and BUCKET writers put inserts into log files; every "
                "slice must be compacted first")
    log_only = [fg for fg in logged if not fg.base_file]
    if new == "RECORD_LEVEL" and log_only:
        return (f"index {old} -> RECORD_LEVEL on a MERGE_ON_READ table with {len(log_only)} file group(s) of log "
                "files only: tablespec's writes tag keys to file groups with a base file; compact them first")
    return None


def converts_in_place(change, version: int) -> bool:
    """Whether a setting change (plan/settings.py) is COPY_ON_WRITE -> MERGE_ON_READ, done in place on
    a table at `version` once the plan's upgrade, if any, has run."""
    return change.prop == TABLE_TYPE.name and change.new == MERGE_ON_READ and version in CONVERTED_ON


def upgrade_refusal(current: int, wanted: int) -> str:
    """The one line refusing COPY_ON_WRITE -> MERGE_ON_READ on a plan that upgrades the table: measured
    with Apache Hudi at version 6 only, and tablespec upgrades no merge-on-read table."""
    return (f"COPY_ON_WRITE -> MERGE_ON_READ in place runs on table version {' and '.join(map(str, CONVERTED_ON))} "
            f"(this plan upgrades the table {current} -> {wanted}); change one at a time: spec.tableType at version "
            f"{current} (Apache Hudi upgrades the merge-on-read table), or spec.tableVersion first (the table type "
            "then changes by replacing the table)")


CONVERSION_REASON = (f"COPY_ON_WRITE -> MERGE_ON_READ in place: {TABLE_TYPE.name} switches, no file is rewritten "
                     "(Apache Hudi's merge-on-read readers and compaction take the commits' base files as they are); "
                     "Hudi's writers of the table write deltacommits from then on (`tablespec hudi-options`)")


def back_to_copy_on_write(location: str, name: str) -> str:
    """The one line refusing MERGE_ON_READ -> COPY_ON_WRITE."""
    return (f"{location}: table {name} is a MERGE_ON_READ table and its spec says COPY_ON_WRITE: tablespec does not "
            "convert it back (Apache Hudi's copy-on-write readers take neither log files nor the base files "
            "deltacommits wrote); set spec.tableType: MERGE_ON_READ")

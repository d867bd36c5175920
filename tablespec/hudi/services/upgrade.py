"""Table version 6 -> 8 or 9, as Apache Hudi 1.x's upgrade handlers (SixToSeven, SevenToEight,
EightToNine) do it, and the hoodie.properties of a new table at version 8 or 9.

What changes on disk (checked against what Hudi 1.2.0 leaves when it upgrades a version-6 table):
- the active timeline moves from `.hoodie/` to `.hoodie/timeline/` (layout 2); a completed instant is
  renamed `<requested>_<completion>.<action>`, its completion time the completed file's
  modification time; commit and deltacommit files (every state) and completed replacecommits
  become Avro, everything else keeps its bytes; a pending replacecommit becomes `clustering`;
- the archived timeline (`hoodie.archivelog.folder`) is copied into the LSM history
  (`.hoodie/timeline/history/`: one Parquet file, a manifest); the old archive files stay, as Hudi
  leaves them;
- hoodie.properties gains the 1.x keys (`properties_at`);
- the metadata table: Hudi upgrades it with the table, or deletes it when it lags the table, to be
  rebuilt by its next writer. tablespec deletes it (`retire_metadata_table`) and the next plan
  builds one in Hudi 1.x's layout (`build_metadata_table`).

Crash safety: nothing a version-6 reader uses changes until hoodie.properties switches to the new
version (one atomic rewrite); the new timeline and history are built beside the old ones first,
and a crashed run's partial copy is rebuilt by the next. After the switch the old instant files are
deleted (`HudiTable.upgrade_leftovers`: a crash there leaves files no version-9 reader lists, which the next apply
deletes). Readers see the table before or after.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tablespec.errors import HudiFormatError, UnsupportedTableError
from tablespec.faults import crash_point
from tablespec.hudi import keygen, keys
from tablespec.hudi.archive.lsm_write import write_batch
from tablespec.hudi.archive.timeline import ArchivedTimeline
from tablespec.hudi.config import (
    META_FOLDER,
    PROPERTIES_FILE,
    TableConfig,
    archive_folder,
    timeline_folder,
    write_table_config,
)
from tablespec.hudi.formats.clean_format import CLEAN_METADATA_SCHEMA
from tablespec.hudi.formats.commit import CommitMetadata
from tablespec.hudi.formats.commit_avro import encode_commit_metadata
from tablespec.hudi.formats.properties import parse_properties
from tablespec.hudi.formats.rollback_format import ROLLBACK_METADATA_SCHEMA
from tablespec.hudi.io import join
from tablespec.hudi.timeline.active import avro_record, parse_instants
from tablespec.hudi.timeline.instant import (
    CLEAN,
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    REPLACE_COMMIT,
    ROLLBACK,
    Instant,
    format_instant_time,
)

UPGRADABLE = {6: (8, 9), 8: (9,)}   # from -> the versions tablespec upgrades it to
TIMELINE_PATH, HISTORY_PATH = str(keys.TIMELINE_PATH.default), str(keys.TIMELINE_HISTORY_PATH.default)
INITIAL_VERSION, MERGE_MODE = keys.INITIAL_VERSION.name, keys.RECORD_MERGE_MODE.name
EVENT_TIME, COMMIT_TIME = "EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"
# Version 9 retires payload classes for merge modes: Hudi 1.2 keeps a table's class under the legacy
# key and its merge strategy under the compaction key (as it leaves a table it upgraded).
PAYLOAD_MOVES = {keys.COMPACTION_PAYLOAD_CLASS.name: keys.LEGACY_PAYLOAD_CLASS.name,
                 keys.RECORD_MERGE_STRATEGY_ID.name: keys.COMPACTION_MERGER_STRATEGY.name}
# Keys Hudi 1.2 writes into a table it creates at version 9 (not into one it upgrades).
NEW_TABLE_KEYS = {keys.TABLE_FORMAT.name: "native", keys.CDC_ENABLED.name: "false",
                  keys.PARTITION_METAFILE_BASE_FORMAT.name: "false", keys.MULTIPLE_BASE_FILE_FORMATS.name: "false"}
CREATED = (6, 9)   # the versions tablespec creates tables at (and writes)


def refusal(current: int, wanted: int) -> str | None:
    """Why tablespec will not take a table from version `current` to `wanted` (None: it will, or
    nothing to do)."""
    if wanted == current:
        return None
    if wanted < current:
        return (f"the table is at Hudi table version {current}; a downgrade to {wanted} is not supported "
                f"(Apache Hudi downgrades only with its own tools, and tablespec keeps the version: leave "
                f"spec.tableVersion at {current} or remove it)")
    if wanted not in UPGRADABLE.get(current, ()):
        return f"tablespec does not upgrade Hudi table version {current} to {wanted}"
    return None


def properties_at(props: Mapping[str, str], version: int, initial: int | None = None) -> dict[str, str]:
    """hoodie.properties of a version-6 table (`props`) at `version` (8 or 9), as Hudi 1.x's upgrade
    rewrites them; `initial`: the version the table was created at (default: `props`' version)."""
    out = dict(props)
    out.pop(keys.METADATA_PARTITIONS.name, None)        # retire_metadata_table removed the metadata table
    out.pop(keys.METADATA_PARTITIONS_INFLIGHT.name, None)
    out.setdefault(INITIAL_VERSION, str(initial or props.get(keys.TABLE_VERSION.name, "6")))
    out[keys.TABLE_VERSION.name] = str(version)
    out[keys.TIMELINE_LAYOUT_VERSION.name] = "2"
    out.setdefault(keys.TIMELINE_PATH.name, TIMELINE_PATH)
    out.setdefault(keys.TIMELINE_HISTORY_PATH.name, HISTORY_PATH)
    if (cls := out.get(keys.KEY_GENERATOR_CLASS.name)) and keys.KEY_GENERATOR_TYPE.name not in out:
        out[keys.KEY_GENERATOR_TYPE.name] = keygen.type_of_class(cls)
    ordering = out.get(keys.ORDERING_FIELDS.name) or out.get(keys.PRECOMBINE_FIELD.name)
    out.setdefault(MERGE_MODE, EVENT_TIME if ordering else COMMIT_TIME)
    if version >= 9:
        if keys.PRECOMBINE_FIELD.name in out:   # version 9 names it ordering fields
            out[keys.ORDERING_FIELDS.name] = out.pop(keys.PRECOMBINE_FIELD.name)
        for old, new in PAYLOAD_MOVES.items():
            if old in out:
                out.setdefault(new, out.pop(old))
    return out


def nine_from_eight(props: Mapping[str, str]) -> dict[str, str]:
    """hoodie.properties of a version-8 table at version 9, as Hudi 1.2's EightToNine handler leaves a
    table Hudi 1.0.2 wrote: the ordering field under its version-9 key, the payload class under the
    legacy key, the built-in merge strategy id dropped (the merge mode says it)."""
    out = dict(props)
    out[keys.TABLE_VERSION.name] = "9"
    if keys.PRECOMBINE_FIELD.name in out:
        out[keys.ORDERING_FIELDS.name] = out.pop(keys.PRECOMBINE_FIELD.name)
    if keys.COMPACTION_PAYLOAD_CLASS.name in out:
        out.setdefault(keys.LEGACY_PAYLOAD_CLASS.name, out.pop(keys.COMPACTION_PAYLOAD_CLASS.name))
    if out.get(MERGE_MODE) in (EVENT_TIME, COMMIT_TIME):
        out.pop(keys.RECORD_MERGE_STRATEGY_ID.name, None)
    return out


def new_table_properties(props: Mapping[str, str], version: int) -> dict[str, str]:
    """hoodie.properties of a table created at `version` (8 or 9) from tablespec's version-6 ones:
    as Hudi 1.2 writes them for a new table (key generator by type, archive in the LSM history)."""
    out = properties_at(props, version, initial=version)
    out.update(NEW_TABLE_KEYS)
    out[keys.ARCHIVELOG_FOLDER.name] = HISTORY_PATH
    if keys.KEY_GENERATOR_TYPE.name in out:   # the type says it all (Hudi 1.2 writes no class then)
        out.pop(keys.KEY_GENERATOR_CLASS.name, None)
    return out


# -- the timeline ----------------------------------------------------------------------------

def _completion(requested: str, mtime_ms: int) -> str:
    """A completed instant's completion time: its file's modification time (UTC, as tablespec's
    instant times), never before it was requested."""
    return max(requested, format_instant_time(datetime.fromtimestamp(mtime_ms / 1000, UTC)))


def _avro_commit(raw: bytes, replace: bool, where: str) -> bytes:
    """A version-6 commit file's JSON (empty for a requested commit) as versions 8 and 9 store it."""
    meta = CommitMetadata.from_json(raw) if raw.strip() else CommitMetadata()
    if meta.operation_type is None:
        meta.operation_type = "UNKNOWN"
    try:
        return encode_commit_metadata(meta, replace)
    except (ValueError, TypeError) as e:
        raise HudiFormatError(f"{where}: commit metadata tablespec cannot convert: {e}") from None


def converted_instant(instant: Instant, mtime_ms: int, raw: bytes, where: str) -> tuple[Instant, bytes]:
    """A layout-1 instant file as layout 2 names and fills it."""
    completed = instant.is_completed
    if instant.action in (COMMIT, DELTA_COMMIT) or (instant.action == REPLACE_COMMIT and completed):
        raw = _avro_commit(raw, instant.action == REPLACE_COMMIT, where)
    if completed:
        return Instant(instant.timestamp, instant.action, "completed", _completion(instant.timestamp, mtime_ms)), raw
    if instant.action == REPLACE_COMMIT:   # pending replacecommits are clustering in layout 2
        return Instant(instant.timestamp, CLUSTERING, instant.state), raw
    return instant, raw


# -- the archived timeline -------------------------------------------------------------------

_CONTENT_SCHEMAS = {CLEAN: CLEAN_METADATA_SCHEMA, ROLLBACK: ROLLBACK_METADATA_SCHEMA}


def _lsm_row(archived: ArchivedTimeline, instant: Instant) -> dict[str, Any] | None:
    """The LSM history row of an instant archived by version 6, or None for one tablespec does not
    carry over (savepoints and other actions it never reads)."""
    record = archived.records[instant]
    if instant.action in (COMMIT, DELTA_COMMIT, REPLACE_COMMIT):
        replace = instant.action == REPLACE_COMMIT
        metadata: bytes | None = encode_commit_metadata(archived.commit_metadata(instant), replace)
    elif instant.action in _CONTENT_SCHEMAS:
        content = archived.read_metadata(instant)
        metadata = avro_record(_CONTENT_SCHEMAS[instant.action], content) if content else None
    else:
        return None
    plan = None
    if instant.action == REPLACE_COMMIT and (requested := archived.requested_content(instant)):
        from tablespec.hudi.formats.clustering_format import REQUESTED_REPLACE_SCHEMA
        plan = avro_record(REQUESTED_REPLACE_SCHEMA, requested)
    completion = record.get("stateTransitionTime") or instant.timestamp
    return {"instantTime": instant.timestamp, "completionTime": max(completion, instant.timestamp),
            "action": instant.action, "metadata": metadata, "plan": plan, "version": 1}


# -- the upgrade -----------------------------------------------------------------------------

@dataclass(frozen=True)
class UpgradeWork:
    """What an upgrade moves: instant files of the active timeline, archive files converted."""
    instants: int
    archive_files: int


def work(table) -> UpgradeWork:
    """What upgrading a version-6 `HudiTable` moves (from its cached listing and one archive listing)."""
    from tablespec.hudi.archive.log import archive_files, folder_of
    files = archive_files(table.storage, table.base, folder_of(table.config))
    return UpgradeWork(len(table.timeline.instants), len(files))


def retire_metadata_table(table) -> bool:
    """Delete Hudi's metadata table before the upgrade, as Hudi does with one that cannot follow the
    table (its next writer with the metadata table on builds a version-9 one): hoodie.properties
    stops naming it first, so no reader uses a half-deleted one. Returns whether there was one.
    The next plan builds a version-9 one (`build_metadata_table`)."""
    from tablespec.hudi.metadata_table import folder
    config = table.fresh_config()
    props = config.to_properties()
    named = [k for k in (keys.METADATA_PARTITIONS.name, keys.METADATA_PARTITIONS_INFLIGHT.name) if k in props]
    present = table.storage.is_dir(folder(table.base))
    if named:
        kept = {k: v for k, v in props.items() if k not in named}
        table.wrote_config(write_table_config(table.storage, table.base, TableConfig.from_properties(kept)))
    crash_point("upgrade.metadata_table.unnamed")
    if present:
        table.storage.delete_tree(folder(table.base))
    return bool(named) or present


@dataclass(frozen=True)
class Upgraded:
    files: int             # instant files moved to the layout-2 timeline
    archived: int          # archived instants carried into the LSM history
    metadata_table_deleted: bool
    leftovers_deleted: int


def upgrade(table, version: int) -> Upgraded:
    """Take the version-6 table to `version` (8 or 9); or, at that version already, delete what a
    stopped upgrade left. The caller holds tablespec's table lock and Hudi's transaction lock, and
    recovery left no write pending (requested clustering plans may be; from version 8 requested
    compaction plans too, which Hudi 1.2 upgrades beside and runs after: both versions lay them out alike)."""
    config = table.fresh_config()
    if config.version >= version:
        stale = table.refresh(config=False).upgrade_leftovers
        table.storage.delete_files(list(stale))
        table.refresh(config=False)
        return Upgraded(0, 0, False, len(stale))
    if (why := refusal(config.version, version)) is not None:
        raise UnsupportedTableError(f"{table.base}: {why}")
    storage, base = table.storage, table.base
    timeline = table.fresh_timeline()
    scheduled = (REPLACE_COMMIT, CLUSTERING, COMPACTION) if config.version == 8 else (REPLACE_COMMIT, CLUSTERING)
    if pending := [i for i in timeline.pending() if not (i.action in scheduled and i.state == "requested")]:
        raise UnsupportedTableError(f"{base}: cannot upgrade while instants are pending "
                                    f"({', '.join(map(str, pending))}); run `tablespec apply` again once they complete")
    if config.version == 8:
        return _eight_to_nine(table)
    dropped = retire_metadata_table(table)
    crash_point("upgrade.metadata_table")
    spelled = properties_at(table.table_config.to_properties(), version)
    target = TableConfig.from_properties(spelled)
    new_folder = join(base, timeline_folder(target))
    storage.delete_tree(new_folder)   # a stopped run's partial copy: rebuilt from the table as it is
    history = join(base, META_FOLDER, archive_folder(target))
    storage.mkdirs(history)
    meta = join(base, META_FOLDER)
    listed = {f.name: f for f in storage.list_dir(meta) if not f.is_dir}
    moved = 0
    for instant in parse_instants(listed.values()):
        info = listed[instant.file_name]
        new, raw = converted_instant(instant, info.mtime_ms, storage.read_bytes(info.path), info.path)
        storage.write_bytes(join(new_folder, new.file_name), raw)
        moved += 1
    crash_point("upgrade.timeline")
    archived = ArchivedTimeline.of(table)
    rows = [r for i in archived.completed() if (r := _lsm_row(archived, i)) is not None]
    if rows:
        write_batch(storage, history, rows)   # manifest_1, as Hudi's upgrade writes it
    crash_point("upgrade.history")
    if {i.file_name for i in parse_instants(storage.list_dir(meta))} != {i.file_name for i in parse_instants(listed.values())}:
        raise UnsupportedTableError(f"{base}: another writer changed the timeline during the upgrade (stop Hudi "
                                    "jobs writing the table first); the table stays at version 6: run `tablespec "
                                    "apply` again")
    table.wrote_config(write_table_config(storage, base, target, spelled))   # the switch: readers see version `version`
    table.refresh()
    crash_point("upgrade.switched")
    stale = table.upgrade_leftovers
    storage.delete_files(list(stale))
    table.refresh(config=False)
    return Upgraded(moved, len(rows), dropped, len(stale))


def _eight_to_nine(table) -> Upgraded:
    """Version 8 -> 9, copy-on-write and merge-on-read: the timeline, log files, pending compaction
    plans and the metadata table's layout stay (Hudi 1.2's upgrade of a merge-on-read table with no
    compaction pending also compacts every slice with log files; tablespec leaves that to the spec's
    compaction trigger: the slices read the same at version 9); the metadata table's
    hoodie.properties says 9 first, then the table's (the switch). A crash between the two leaves a
    version-8 table that the next apply takes to 9."""
    storage, base = table.storage, table.base
    metadata = type(table)(table.location.child(join(META_FOLDER, "metadata")))   # its own handle
    if (mdt := metadata.config) is not None and mdt.version == 8:
        props = {**mdt.to_properties(), keys.TABLE_VERSION.name: "9"}
        metadata.wrote_config(write_table_config(storage, metadata.base, TableConfig.from_properties(props), props))
    crash_point("upgrade.metadata_table")
    as_written = parse_properties(storage.read_bytes(join(base, META_FOLDER, PROPERTIES_FILE)).decode("latin-1"))
    config = TableConfig.from_properties(nine_from_eight(table.table_config.to_properties()))
    table.wrote_config(write_table_config(storage, base, config, nine_from_eight(as_written)))   # keys spelled as Hudi 1.0.2 did
    table.refresh()
    return Upgraded(0, 0, False, 0)

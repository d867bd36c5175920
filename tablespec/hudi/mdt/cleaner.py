"""The metadata table's own cleaner, as Apache Hudi 0.15's metadata writer runs it after its
deltacommit and compaction (HoodieBackedTableMetadataWriter.cleanIfNecessary, settings from
HoodieMetadataWriteUtils).

Once three instants follow the latest compaction: KEEP_LATEST_COMMITS retaining
`CLEANER_COMMITS_RETAINED` commits of the metadata timeline; of each file group of every
partition the metadata table keeps (`files`, and `record_index`'s `record-index-NNNN-0` groups
that compaction rewrote) the latest slice and the newest slice older than the earliest commit to
retain stay, older slices (base HFile and its log files) go. The clean instant is the latest deltacommit's time with `002` appended,
written requested -> inflight -> completed in the data clean's Avro formats (clean_format.py);
one that died is finished by the next deltacommit. A plan with nothing to delete writes nothing.

Hudi 1.x (`layout.Format`; HoodieBackedTableMetadataWriter.cleanIfNecessary, HoodieMetadataConfig
1.1+) retains `CLEANER_COMMITS_RETAINED_1X` commits and plans a clean after every deltacommit once
three instants were requested after the latest compaction; the clean takes a new instant time
(after every time on both timelines), its inflight file is empty and its completed file
`<requested>_<completion>.clean`. A log file belongs to the slice of the newest base file requested
before the log's deltacommit completed (1.x names a log file by its own deltacommit).
"""
from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tablespec.faults import crash_point
from tablespec.hudi.config import named_partitions
from tablespec.hudi.formats.clean_format import CLEAN_METADATA_SCHEMA, CLEANER_PLAN_SCHEMA, POLICY, VERSION, planned_files
from tablespec.hudi.formats.naming import LogFileName
from tablespec.hudi.io import Storage, join
from tablespec.hudi.mdt import instants, layout
from tablespec.hudi.mdt.layout import COMMIT, COMPACTION, DELTA_COMMIT, FILES, V1, Format, MetaInstant
from tablespec.hudi.timeline.active import avro_content, avro_record
from tablespec.hudi.timeline.instant import CLEAN, new_instant_time

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

CLEANER_COMMITS_RETAINED = 3     # HoodieMetadataWriteUtils' DEFAULT_METADATA_CLEANER_COMMITS_RETAINED
CLEANER_COMMITS_RETAINED_1X = 20  # ... in Hudi 1.1+ (HoodieMetadataConfig)
INSTANTS_AFTER_COMPACTION = 3     # Hudi 1.x cleans once this many instants follow the latest compaction
CLEAN_SUFFIX = "002"             # HoodieTableMetadataUtil.createCleanTimestamp
COMMIT_ACTIONS = (DELTA_COMMIT, COMPACTION)


def earliest_to_retain(metadata: Sequence[MetaInstant], retained: int = CLEANER_COMMITS_RETAINED) -> MetaInstant | None:
    """The cleaner's earliest commit to retain: the `retained`-th latest completed commit."""
    commits = [i for i in metadata if i.completed and i.action in COMMIT_ACTIONS]
    return commits[-retained] if len(commits) > retained else None


def slices_to_clean(names: Sequence[str], completed: Mapping[str, str] | set[str], earliest: str, start: str = "",
                    fmt: Format = V1) -> list[str]:
    """The files of one metadata partition's slices KEEP_LATEST_COMMITS removes (pure), file group
    by file group: slices (a base file and its log files, or log files alone where the group had
    no base file yet) whose base instant is completed (on the active timeline, or archived: older
    than its first commit `start`, Hudi's "before the timeline starts") and older than `earliest`,
    except the latest slice and the newest one older than `earliest` (readers as of `earliest`
    need it). `completed`: instant -> completion time (`layout.completions`; a set on 0.15)."""
    groups = _slices_1x(names, completed, start) if fmt.is_1x else _slices(names)
    doomed = []
    for group in groups.values():
        slices = sorted(b for b in group if b in completed or b < start)
        if not slices:
            continue
        keep = {slices[-1]} | set([b for b in slices if b < earliest][-1:])
        doomed += [f for b in slices if b < earliest and b not in keep for f in group[b]]
    return sorted(doomed)


def _slices(names: Sequence[str]) -> dict[str, dict[str, list[str]]]:
    """File id -> base instant -> the slice's files (its base file first), Hudi 0.15's way: a log
    file names its slice's base instant."""
    groups: dict[str, dict[str, list[str]]] = {}
    for name in names:
        parsed = layout.parse_base_file(name)
        log = None if parsed is not None else LogFileName.parse(name)
        if parsed is not None:
            groups.setdefault(parsed[0], {}).setdefault(parsed[1], []).insert(0, name)
        elif log is not None:
            groups.setdefault(log.file_id, {}).setdefault(log.base_instant, []).append(name)
    return groups


def _slices_1x(names: Sequence[str], completed: Mapping[str, str] | set[str],
               start: str) -> dict[str, dict[str, list[str]]]:
    """Hudi 1.x's: a log file (named by its deltacommit) joins the slice of the newest base file
    requested before that deltacommit completed (an archived one: before its own time); logs of
    deltacommits neither completed nor archived belong to no slice and stay."""
    when = completed if isinstance(completed, Mapping) else {}
    groups: dict[str, dict[str, list[str]]] = {}
    logs = []
    for name in names:
        parsed = layout.parse_base_file(name)
        if parsed is not None:
            groups.setdefault(parsed[0], {}).setdefault(parsed[1], []).insert(0, name)
        elif (log := LogFileName.parse(name)) is not None:
            logs.append((log, name))
    for log, name in logs:
        done = when.get(log.base_instant) or (log.base_instant if log.base_instant < start else None)
        group = groups.get(log.file_id, {})
        base = max((b for b in group if b < done), default=None) if done else None
        if base is not None:
            group[base].append(name)
    return groups


def partitions(table: HudiTable) -> list[str]:
    """The metadata partitions to clean: those hoodie.properties names (the handle's), `files` at least."""
    return sorted({FILES, *named_partitions(table.config)})


def clean_due(metadata: Sequence[MetaInstant], fmt: Format = V1) -> bool:
    """Cheap check on the listed timeline. 0.15: a compaction completed since the last clean, and
    the earliest commit to retain is past it (so a slice before it may be superseded). 1.x: Hudi's
    guard (enough instants requested after the latest compaction) and a compaction older than the
    earliest commit to retain (so a slice before it may be superseded)."""
    compactions = [i.timestamp for i in metadata if i.action == COMPACTION and i.completed]
    if fmt.is_1x:
        earliest = earliest_to_retain(metadata, CLEANER_COMMITS_RETAINED_1X)
        after = sum(1 for i in metadata if i.completed and i.timestamp > compactions[-1]) if compactions else 0
        return (earliest is not None and after >= INSTANTS_AFTER_COMPACTION
                and any(c < earliest.timestamp for c in compactions))
    earliest = earliest_to_retain(metadata)
    last_clean = max((i.timestamp for i in metadata if i.action == CLEAN), default="")
    return bool(compactions) and earliest is not None and earliest.timestamp > compactions[-1] > last_clean[:17]


def clean(table: HudiTable) -> str | None:
    """Finish a clean that died, else plan and run one when old slices exist; returns its instant."""
    storage, base = table.storage, table.base
    fmt = Format.of(table.config)
    meta = layout.timeline_path(base, fmt)
    metadata = layout.timeline(storage, base, fmt)
    pending = next((i for i in metadata if i.action == CLEAN and not i.completed), None)
    if pending is not None:
        plan = avro_content(storage.read_bytes(join(meta, layout.instant_file(pending.timestamp, CLEAN, "requested"))), meta)
        return _run_clean(storage, base, pending.timestamp, plan, fmt)
    if not clean_due(metadata, fmt):
        return None
    earliest = earliest_to_retain(metadata, CLEANER_COMMITS_RETAINED_1X if fmt.is_1x else CLEANER_COMMITS_RETAINED)
    assert earliest is not None
    completed = layout.completions(metadata)
    start = next(i.timestamp for i in metadata if i.action in COMMIT_ACTIONS)
    doomed = {}
    for partition in partitions(table):
        part = layout.partition_path(base, partition)
        names = slices_to_clean([i.name for i in storage.list_dir(part) if not i.is_dir], completed,
                                earliest.timestamp, start, fmt)
        if names:
            doomed[partition] = [{"filePath": join(part, n), "isBootstrapBaseFile": False} for n in names]
    if fmt.is_1x:   # a new instant time, after every time on both timelines (one generator in Hudi)
        times = [t for i in metadata for t in (i.timestamp, i.completion) if t] + [table.timeline.latest_time or ""]
        ts = new_instant_time(after=max(times))
    else:
        latest = [i.timestamp for i in metadata if i.action == DELTA_COMMIT and i.completed][-1]
        ts = latest[:17] + CLEAN_SUFFIX
    if not doomed or any(i.timestamp == ts for i in metadata):
        return None
    action = COMMIT if earliest.action == COMPACTION else earliest.action
    plan = {"earliestInstantToRetain": {"timestamp": earliest.timestamp, "action": action, "state": "COMPLETED"},
            "lastCompletedCommitTimestamp": [i.timestamp for i in metadata if i.completed and i.action in COMMIT_ACTIONS][-1],
            "policy": POLICY, "filesToBeDeletedPerPartition": {}, "version": VERSION,
            "filePathsToBeDeletedPerPartition": doomed,
            "partitionsToBeDeleted": [], "extraMetadata": {}}
    storage.create_exclusive(join(meta, layout.instant_file(ts, CLEAN, "requested")), avro_record(CLEANER_PLAN_SCHEMA, plan))
    crash_point("mdt_clean_requested")
    return _run_clean(storage, base, ts, plan, fmt)


def _run_clean(storage: Storage, base: str, ts: str, plan: dict[str, Any], fmt: Format = V1) -> str:
    started = time.monotonic()
    meta = layout.timeline_path(base, fmt)
    inflight = join(meta, layout.instant_file(ts, CLEAN, "inflight"))
    if not storage.exists(inflight):   # 0.15 repeats the plan in it, 1.x leaves it empty
        storage.write_bytes(inflight, b"" if fmt.is_1x else
                            storage.read_bytes(join(meta, layout.instant_file(ts, CLEAN, "requested"))))
    planned = planned_files(layout.table_path(base), plan,   # Hudi's plans too (full URIs)
                            join(meta, layout.instant_file(ts, CLEAN, "requested")))
    paths = [p for ps in planned.values() for p in ps]
    storage.delete_files(paths)            # idempotent: a resumed clean deletes what is left
    crash_point("mdt_clean_deleted")
    retain = (plan.get("earliestInstantToRetain") or {}).get("timestamp", "")
    partitions = {}
    for partition, ps in planned.items():
        names = [p.rsplit("/", 1)[-1] for p in ps]
        partitions[partition] = {"partitionPath": partition, "policy": POLICY, "deletePathPatterns": names,
                                 "successDeleteFiles": names, "failedDeleteFiles": [], "isPartitionDeleted": False}
    metadata = {"startCleanTime": ts, "timeTakenInMillis": int((time.monotonic() - started) * 1000),
                "totalFilesDeleted": len(paths), "earliestCommitToRetain": retain,
                "lastCompletedCommitTimestamp": plan.get("lastCompletedCommitTimestamp") or "",
                "partitionMetadata": partitions,
                "version": VERSION, "bootstrapPartitionMetadata": {}, "extraMetadata": {}}
    content = avro_record(CLEAN_METADATA_SCHEMA, metadata)
    if fmt.is_1x:
        instants.complete_instant(storage, base, ts, CLEAN, content, fmt)
    else:
        storage.write_bytes(join(meta, layout.instant_file(ts, CLEAN)), content)
    return ts


def clean_if_due(table: HudiTable, metadata: Sequence[MetaInstant] | None) -> str | None:
    """After a data instant was recorded in the metadata table and any compaction ran (`metadata`:
    the metadata timeline the caller listed; None: nothing recorded): clean when the listing makes
    it due or a clean is pending, under Hudi's transaction lock. Nothing else is read otherwise."""
    fmt = Format.of(table.config)
    if metadata is None or not (clean_due(metadata, fmt) or any(i.action == CLEAN and not i.completed for i in metadata)):
        return None
    with table.transaction_lock("metadata clean"):
        return clean(table)

"""Clustering plans: `T.replacecommit.requested` as Apache Hudi writes it, and read back.

A clustering is a replacecommit whose requested file holds a HoodieRequestedReplaceMetadata
(operationType CLUSTER) wrapping a HoodieClusteringPlan: groups of file slices, each group
rewritten into `numOutputFileGroups` new file groups, plus the strategy that lays the rows out.
The file is an Avro container with the writer's schema embedded (like clean and rollback
plans), so Hudi's tools read the plans tablespec schedules and tablespec runs the plans Hudi
scheduled. The inflight file is empty; the completed replacecommit is JSON commit metadata with
operationType CLUSTER and the replaced file groups (see engine/clustering.py).

The layout (strategy and sort columns) is recorded in the strategy params under Hudi's keys
(`hoodie.clustering.plan.strategy.sort.columns`, `hoodie.layout.optimize.strategy`), so the
planner can tell whether the declared layout changed since the last clustering, and which file
groups a clustering with the declared layout wrote (laid out as declared).
"""
from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tablespec.errors import HudiFormatError, TablespecError
from tablespec.hudi import keys
from tablespec.hudi.formats.clustering_format import REQUESTED_REPLACE_SCHEMA
from tablespec.hudi.formats.commit import CLUSTER
from tablespec.hudi.formats.naming import bucket_of
from tablespec.hudi.io import join, outside_reason
from tablespec.hudi.services.rollback import is_clustering_plan
from tablespec.hudi.timeline.active import Timeline, avro_record
from tablespec.hudi.timeline.instant import CLUSTERING, REPLACE_COMMIT, Instant
from tablespec.types import Array, DataType, Map, Struct

if TYPE_CHECKING:
    from tablespec.hudi.archive.timeline import ArchivedTimeline


class ClusteringPending(TablespecError):
    """A write or rewrite refused because it touches file groups under a pending clustering plan."""


# Hudi's Spark executor of sorted (linear / z-order / hilbert) and unsorted clusterings.
EXECUTION_STRATEGY = "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"
SORT_COLUMNS_PARAM = keys.SORT_COLUMNS.name
LAYOUT_PARAM = keys.LAYOUT_OPTIMIZE_STRATEGY.name
# tablespec strategy <-> Hudi's layout optimisation strategy (NONE: no sort columns, linear).
LAYOUTS = {"SORT": "linear", "ZORDER": "z-order", "HILBERT": "hilbert"}
# HoodieClusteringGroup metrics Hudi's plan strategies fill in.
METRIC_READ_MB, METRIC_WRITE_MB, METRIC_IO_MB = "TOTAL_IO_READ_MB", "TOTAL_IO_WRITE_MB", "TOTAL_IO_MB"
METRIC_LOG_SIZE, METRIC_LOG_FILES = "TOTAL_LOG_FILE_SIZE", "TOTAL_LOG_FILES"



@dataclass(frozen=True)
class SliceInfo:
    """One input file slice: its file group, base file and (merge-on-read) log files, which a
    clustering reads merged into the rows it writes (RFC-19)."""
    partition: str
    file_id: str
    data_file: str | None    # the base file's path as the plan records it
    size: int = 0            # bytes, base file and log files (for estimates; not part of Hudi's slice info)
    delta_files: tuple[str, ...] = ()   # the log files' paths as the plan records them (Hudi: deltaFilePaths)
    log_size: int = 0        # bytes of the log files (the group's metrics)

    @property
    def file_name(self) -> str | None:
        return posixpath.basename(self.data_file) if self.data_file else None

    @property
    def log_names(self) -> tuple[str, ...]:
        return tuple(posixpath.basename(p) for p in self.delta_files)


@dataclass(frozen=True)
class ClusteringGroup:
    """Slices rewritten together into `num_output_file_groups` new file groups (one partition)."""
    slices: tuple[SliceInfo, ...]
    num_output_file_groups: int = 1

    @property
    def partition(self) -> str:
        return self.slices[0].partition if self.slices else ""

    @property
    def input_bytes(self) -> int:
        return sum(s.size for s in self.slices)


@dataclass(frozen=True)
class Layout:
    """How a clustering orders rows: NONE (no order), SORT, ZORDER or HILBERT on `columns`."""
    strategy: str = "NONE"
    columns: tuple[str, ...] = ()

    def params(self) -> dict[str, str]:
        if self.strategy == "NONE" or not self.columns:
            return {}
        return {SORT_COLUMNS_PARAM: ",".join(self.columns), LAYOUT_PARAM: LAYOUTS[self.strategy]}

    @classmethod
    def from_params(cls, settings: dict[str, str] | None) -> Layout:
        """The layout of a plan's strategy params; Hudi's default optimiser is linear (SORT)."""
        settings = settings or {}
        columns = tuple(c.strip() for c in (settings.get(SORT_COLUMNS_PARAM) or "").split(",") if c.strip())
        if not columns:
            return cls()
        by_layout = {v: k for k, v in LAYOUTS.items()}
        layout = (settings.get(LAYOUT_PARAM) or "linear").lower().replace("_", "-")
        if layout not in by_layout:
            raise HudiFormatError(f"clustering plan: unknown layout optimisation strategy {layout!r}")
        return cls(by_layout[layout], columns)

    def __str__(self) -> str:
        return self.strategy if not self.columns else f"{self.strategy}({', '.join(self.columns)})"


@dataclass(frozen=True)
class ClusteringPlan:
    groups: tuple[ClusteringGroup, ...]
    layout: Layout = Layout()
    strategy_class: str = EXECUTION_STRATEGY
    params: dict[str, str] = field(default_factory=dict)      # strategy params beyond the layout
    extra_metadata: dict[str, str] = field(default_factory=dict)
    preserve_hoodie_metadata: bool = True

    def file_ids(self) -> set[tuple[str, str]]:
        return {(s.partition, s.file_id) for g in self.groups for s in g.slices}

    def replaced(self) -> dict[str, list[str]]:
        """partitionToReplaceFileIds of the completed clustering."""
        out: dict[str, list[str]] = {}
        for g in self.groups:
            for s in g.slices:
                out.setdefault(s.partition, []).append(s.file_id)
        return out


def _metrics(group: ClusteringGroup) -> dict[str, float]:
    mb = group.input_bytes / (1024 * 1024)
    return {METRIC_READ_MB: mb, METRIC_WRITE_MB: mb, METRIC_IO_MB: 2 * mb,
            METRIC_LOG_SIZE: float(sum(s.log_size for s in group.slices)),
            METRIC_LOG_FILES: float(sum(len(s.delta_files) for s in group.slices))}


def encode_plan(plan: ClusteringPlan) -> bytes:
    """The plan as the content of `T.replacecommit.requested`."""
    # a slice of log files only: an empty dataFilePath, as Apache Hudi 1.2 records one
    groups: list[dict[str, Any]] = [{"slices": [{"dataFilePath": s.data_file or "",
                                                 "deltaFilePaths": list(s.delta_files), "fileId": s.file_id,
                           "partitionPath": s.partition, "bootstrapFilePath": "", "version": 1} for s in g.slices],
               "metrics": _metrics(g), "numOutputFileGroups": g.num_output_file_groups, "extraMetadata": None,
               "version": 1}
              for g in plan.groups]
    record = {
        "operationType": CLUSTER,
        "clusteringPlan": {
            "inputGroups": groups,
            "strategy": {"strategyClassName": plan.strategy_class,
                         "strategyParams": {**plan.params, **plan.layout.params()}, "version": 1},
            "extraMetadata": dict(plan.extra_metadata),
            "version": 1,
            "preserveHoodieMetadata": plan.preserve_hoodie_metadata,
        },
        "extraMetadata": {},
        "version": 1,
    }
    return avro_record(REQUESTED_REPLACE_SCHEMA, record)


def _inside(slice_info: dict[str, Any], where: str) -> None:
    """A slice's partition and files stay inside the table (clustering rewrites what they name):
    the partition a relative path, the files (full paths in Hudi's plans) without a `..`."""
    partition, path, file_id = (slice_info.get(k) for k in ("partitionPath", "dataFilePath", "fileId"))
    logs = slice_info.get("deltaFilePaths") or []
    reasons = [outside_reason(partition or ""), None if isinstance(path, str) else "not a path",
               None if isinstance(file_id, str) and "/" not in file_id else "not a file group id"]
    for file in [path, *logs]:
        if not isinstance(file, str):
            reasons.append("not a path")
        elif (reason := outside_reason(file)) is not None and not reason.startswith("an absolute"):
            reasons.append(reason)
    if any(reasons):
        raise HudiFormatError(f"{where}: slice {file_id!r} ({partition!r}, {path!r}) leads outside the table "
                              f"({next(r for r in reasons if r)}); refused")


def decode_plan(requested: dict[str, Any], where: str) -> ClusteringPlan:
    """A clustering plan from a requested replacecommit's content (as Timeline.read_metadata
    returns it); `where` names the file in errors."""
    plan = requested.get("clusteringPlan")
    if not isinstance(plan, dict):
        raise HudiFormatError(f"{where}: not a clustering plan (no clusteringPlan)")
    groups = []
    for i, group in enumerate(plan.get("inputGroups") or ()):
        slices = []
        for s in group.get("slices") or ():
            if not s.get("fileId") or not (s.get("dataFilePath") or s.get("deltaFilePaths")):
                raise HudiFormatError(f"{where}: group {i} has a slice without fileId, or with neither a "
                                      "dataFilePath nor deltaFilePaths")
            _inside(s, where)
            # an empty dataFilePath: a slice of log files only (Apache Hudi 1.x plans them)
            slices.append(SliceInfo(s.get("partitionPath") or "", s["fileId"], s.get("dataFilePath") or None,
                                    delta_files=tuple(s.get("deltaFilePaths") or ())))
        groups.append(ClusteringGroup(tuple(slices), int(group.get("numOutputFileGroups") or 1)))
    strategy = plan.get("strategy") or {}
    params = dict(strategy.get("strategyParams") or {})
    layout = Layout.from_params(params)
    for key in layout.params():
        params.pop(key, None)
    preserve = plan.get("preserveHoodieMetadata")
    return ClusteringPlan(tuple(groups), layout, strategy.get("strategyClassName") or EXECUTION_STRATEGY, params,
                          dict(plan.get("extraMetadata") or {}), True if preserve is None else bool(preserve))


def pending_plans(timeline: Timeline) -> dict[Instant, ClusteringPlan]:
    """Pending clusterings on a timeline: instant (in its latest state) -> ClusteringPlan."""
    out = {}
    for instant in timeline.pending():   # versions 8 and 9: pending clustering has its own action
        if instant.action == CLUSTERING or is_clustering_plan(timeline, instant):
            requested = instant.to("requested")
            out[instant] = decode_plan(timeline.read_metadata(requested), join(timeline.meta, requested.file_name))
    return out


def cannot_run(plan: ClusteringPlan, latest: Mapping[tuple[str, str], tuple[str | None, tuple[str, ...]]],
               columns: Mapping[str, DataType], bucketed: bool) -> str | None:
    """Why a pending plan (tablespec's or Hudi's) cannot run on the table as it is, or None: the
    one check `plan` (which then offers to discard it) and a run (which refuses it) both make.
    `latest`: (partition, file id) -> (base file name, log file names) of each latest slice;
    `columns`: the table's columns and types; `bucketed`: a BUCKET-index table, whose buckets a
    clustering sorts within and never merges or splits (Hudi 1.2 plans every log-only bucket of a
    partition into one group)."""
    for s in (s for g in plan.groups for s in g.slices):
        current = latest.get((s.partition, s.file_id))
        if current is None:
            return f"file group {s.file_id} in partition '{s.partition}' is no longer in the table"
        base, logs = current
        if (s.file_name or None) != (base or None):
            return f"file group {s.file_id} has a newer base file than the plan's {s.file_name or 'log files'}"
        if sorted(s.log_names) != sorted(logs):   # merging fewer would lose their records
            return f"file group {s.file_id} has other log files than the plan's ({len(logs)}, not {len(s.log_names)})"
    missing = [c for c in plan.layout.columns if c not in columns]
    if missing:
        return f"sort column(s) {', '.join(missing)} not in the table"
    nested = [c for c in plan.layout.columns if isinstance(columns[c], Array | Map | Struct)]
    if nested:
        return f"it sorts by {', '.join(nested)}, not primitive columns"
    merged = [g for g in plan.groups if g.num_output_file_groups != 1 or len({bucket_of(s.file_id) for s in g.slices}) != 1]
    if bucketed and merged:
        buckets = sorted({b for s in merged[0].slices if (b := bucket_of(s.file_id)) is not None})
        return (f"it would merge or split buckets of a BUCKET table (a group of bucket(s) "
                f"{', '.join(map(str, buckets))} in partition '{merged[0].partition}' into "
                f"{merged[0].num_output_file_groups} file group(s); each group must be one bucket's file group, "
                "written into one)")
    return None


def planned_file_groups(timeline: Timeline) -> set[tuple[str, str]]:
    """(partition, file id) of every file group under a pending clustering plan."""
    return {fg for plan in pending_plans(timeline).values() for fg in plan.file_ids()}


def refuse_replacing_planned(timeline: Timeline, replaced: dict[str, list[str]], base: str) -> None:
    """A replacecommit must not take file groups out from under a pending clustering plan: the
    plan could never run again, and would keep the table's writers waiting for it."""
    planned = planned_file_groups(timeline)
    hit = sorted(f"{p}/{f}" if p else f for p, ids in replaced.items() for f in ids if (p, f) in planned)
    if hit:
        raise ClusteringPending(f"{base}: the rewrite would replace file groups under a pending clustering plan "
                                f"({', '.join(hit[:5])}{', ...' if len(hit) > 5 else ''}); run the clustering first "
                                "(`tablespec apply` runs pending plans before rewrites)")


def archived_layouts(archived: ArchivedTimeline, active: Timeline) -> list[tuple[str, Layout]]:
    """The completed clusterings only the archived timeline holds, oldest first, each with the
    layout of its archived plan (NONE when the plan was archived without content)."""
    on_active = {i.timestamp for i in active.instants if i.action == REPLACE_COMMIT}
    out = []
    for instant in archived.commits():
        if (instant.action != REPLACE_COMMIT or instant.timestamp in on_active
                or archived.read_metadata(instant).get("operationType") != CLUSTER):
            continue
        plan = archived.requested_content(instant)
        out.append((instant.timestamp, decode_plan(plan, f"archived {instant}").layout if plan else Layout()))
    return out


def layout_history(timeline: Timeline, archived: ArchivedTimeline | None = None) -> list[tuple[str, Layout]]:
    """The completed clusterings on the active timeline (and, given `archived`, those archived
    before it), oldest first, each with the layout its plan used (NONE when its plan is gone)."""
    out = archived_layouts(archived, timeline) if archived is not None else []
    for instant in timeline.commits():
        if instant.action != REPLACE_COMMIT or timeline.read_metadata(instant).get("operationType") != CLUSTER:
            continue
        requested = instant.to("requested")
        if timeline.layout >= 2:   # a clustering's plan: T.clustering.requested
            requested = Instant(instant.timestamp, CLUSTERING, "requested")
        if not timeline.storage.exists(join(timeline.meta, requested.file_name)):
            out.append((instant.timestamp, Layout()))
        else:
            out.append((instant.timestamp, decode_plan(timeline.read_metadata(requested), requested.file_name).layout))
    return out

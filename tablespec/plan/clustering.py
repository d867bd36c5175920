"""Scheduling clustering (RFC-19), pure: is it due, which file slices, in which groups and
steps; and how much of the table is laid out as the spec declares.

Laid out as declared: a file group whose latest base file a completed clustering wrote with the
declared layout (strategy and sort columns, as its plan on the timeline records them). Nothing
else is: a write that rewrites a clustered file group (upsert, delete) may move its rows out of
order, and planning reads no data, so the file group counts as not laid out until a clustering
rewrites it. NONE promises no row order: only SORT / ZORDER / HILBERT report coverage.

Due when
- the spec declares a sorted layout that neither a clustering nor the table's settings have seen
  (the spec gains it: the table is laid out at once, not after `everyNCommits`);
- the declared layout differs from the one the last clustering used;
- file groups remain that the last clustering with the declared layout could have taken and
  did not (`maxGroups`, an apply stopped between steps, a plan Hudi made over part of the table):
  not laid out, older than it;
- `everyNCommits` commits landed since the last clustering (re-clustering after new writes);
- more than `maxSmallFiles` small files (not laid out) exist.

Eligible slices, in file groups under no pending clustering and in partitions passing
`partitionFilter` and `latestPartitions`: for a sorted layout every file not laid out as
declared, whatever its size; for NONE (stitching) base files below `smallFileLimit` (Hudi's
size-based plan strategy: a file at or above it is big enough). Laid-out files below
`smallFileLimit` (small only because their partition is) are rewritten only together with files
written since the last clustering in their partition, never on their own, so plan -> apply ->
plan settles.

Groups never span partitions. Unsorted stitching (NONE) packs slices into groups of at most
`maxBytesPerGroup` and drops groups of a single file (nothing to stitch); SORT / ZORDER / HILBERT
keep them (the file gets sorted). Each group writes ceil(bytes / targetFileSize) file groups.
Bucket-index tables get one group per bucket file group, rewritten into one file group of the
same bucket: clustering sorts within a bucket and never merges buckets. Partitions the last
clustering left unfinished first, then the largest partitions; largest slices first. Every group
is planned, in steps of at most `maxGroups` groups: each step is one
clustering (one replacecommit), so a step bounds the work of one commit and the time its file
groups are closed to writers, and a failed step leaves the steps before it done.
"""
from __future__ import annotations

import math
import re

from tablespec.hudi.config import table_index_type
from tablespec.hudi.io import join
from tablespec.hudi.services.clustering import ClusteringGroup, ClusteringPlan, Layout, SliceInfo, cannot_run
from tablespec.plan.actions import Clustering as ClusteringAction
from tablespec.plan.actions import ClusteringEstimate, ClusteringParams, DiscardPlans, GroupSummary, Rollback, Step
from tablespec.plan.settings import REGISTRY, effective
from tablespec.spec.sizes import human_bytes
from tablespec.wording import counted

REASONS_KEY = "tablespec.clustering.reasons"


def declared_layout(spec) -> Layout:
    c = spec.spec.clustering
    return _layout(c.strategy, c.sort_columns)


def _layout(strategy: str, columns) -> Layout:
    return Layout() if strategy == "NONE" or not columns else Layout(strategy, tuple(columns))


def recorded_settings(state) -> dict:
    """The clustering settings the table's hoodie.properties record (as the last apply declared
    them), by spec path without the `spec.clustering.` prefix."""
    props = state.config.to_properties()
    return {s.path.removeprefix("spec.clustering."): effective(props, s.prop)
            for s in REGISTRY if s.path.startswith("spec.clustering.")}


def recorded_layout(state) -> Layout:
    rec = recorded_settings(state)
    return _layout(rec["strategy"] or "NONE", [c for c in (rec["sortColumns"] or "").split(",") if c])


def _partitions(state, partition_filter: str | None, latest: int | None) -> set[str]:
    parts = sorted({fg.partition for fg in state.file_groups})
    if partition_filter is not None:
        parts = [p for p in parts if re.fullmatch(partition_filter, p)]
    if latest is not None:
        parts = parts[-latest:]
    return set(parts)


def _scope(spec, state) -> set[str]:
    c = spec.spec.clustering
    return _partitions(state, c.partition_filter, c.latest_partitions)


def _written_with(state, layout: Layout) -> set[str]:
    """The completed clusterings that used `layout`: the files they wrote are laid out as it says."""
    return {ts for ts, used in state.clusterings if used == layout}


def coverage(state, layout: Layout, partitions: set[str]) -> dict | None:
    """How much of the file groups in `partitions` is laid out as `layout` (None: NONE, or no data)."""
    if not layout.columns:
        return None
    groups = [fg for fg in state.file_groups if fg.base_file and fg.partition in partitions]
    if not groups:
        return None
    done = _written_with(state, layout)
    laid = [fg for fg in groups if fg.base_instant in done]
    return {"layout": str(layout), "file_groups": len(groups), "laid_out": len(laid),
            "percent": 100 * len(laid) // len(groups), "bytes": sum(fg.size for fg in groups),
            "laid_out_bytes": sum(fg.size for fg in laid),
            "partitions": len(partitions), "table_partitions": len({fg.partition for fg in state.file_groups})}


def spec_coverage(spec, state) -> dict | None:
    """Coverage of the spec's declared layout, over the partitions it clusters."""
    return coverage(state, declared_layout(spec), _scope(spec, state)) if state.exists else None


def recorded_coverage(state) -> dict | None:
    """Coverage of the layout the table's settings record (what `show` reports: it has no spec)."""
    rec = recorded_settings(state)
    latest = rec["latestPartitions"]
    return coverage(state, recorded_layout(state),
                    _partitions(state, rec["partitionFilter"], int(latest) if latest else None))


def describe_coverage(cov: dict) -> str:
    """One line: "clustered as declared (SORT(a)): 30/80 file groups (37%), 1.0 MiB of 2.7 MiB"."""
    scope = (f" in the {cov['partitions']} of {cov['table_partitions']} partitions it clusters"
             if cov["partitions"] != cov["table_partitions"] else "")
    return (f"clustered as declared ({cov['layout']}): {cov['laid_out']}/{cov['file_groups']} file groups "
            f"({cov['percent']}%){scope}, {human_bytes(cov['laid_out_bytes'])} of {human_bytes(cov['bytes'])}")


def compacting(state) -> set[tuple[str, str]]:
    """(partition, file id) of the file groups under a pending compaction (merge-on-read): a
    clustering does not take them until it completes (RFC-19), as Hudi's plan strategies skip them."""
    pending = state.compaction.pending if state.compaction is not None else ()
    return set().union(*(plan.file_ids() for _, plan in pending))


def _open(spec, state) -> list:
    """File groups a clustering may take: in a clustered partition, under no pending clustering or
    compaction plan. Merge-on-read file groups of log files only (Hudi 1.x writes them, e.g. BUCKET
    with non-blocking concurrency) are taken too: their rows are read merged like any slice's."""
    locked = set().union(*(plan.file_ids() for plan in state.pending_clustering.values())) | compacting(state)
    parts = _scope(spec, state)
    return [fg for fg in state.file_groups
            if (fg.base_file or fg.log_names) and fg.partition in parts and (fg.partition, fg.file_id) not in locked]


def _file_bytes(fg) -> int:
    """What the small-file checks weigh: the base file (as Hudi's size-based strategy does), or a
    log-only slice's log files (Hudi counts them as nothing, which makes every one small)."""
    return fg.size if fg.base_file else fg.log_bytes


def _to_lay_out(spec, state) -> list:
    """The open file groups not laid out as declared that a clustering takes (NONE: the small ones)."""
    c, layout = spec.spec.clustering, declared_layout(spec)
    done = _written_with(state, layout)
    return [fg for fg in _open(spec, state)
            if fg.base_instant not in done and (layout.columns or _file_bytes(fg) < c.small_file_limit)]


def due_reasons(spec, state) -> list[str]:
    """Why clustering is due now ([] when it is not)."""
    c = spec.spec.clustering
    layout, last = declared_layout(spec), state.last_clustering_layout
    reasons = []
    if last is None and layout.columns and recorded_layout(state) != layout:
        reasons.append(f"the spec declares layout {layout} (the table's settings: {recorded_layout(state)}) "
                       "and no clustering has laid the table out yet: it is laid out now")
    elif last is not None and last != layout:
        reasons.append(f"declared layout {layout} differs from the last clustering's ({last}, {state.last_clustering})")
    elif last is not None:
        older = [fg for fg in _to_lay_out(spec, state) if fg.base_instant < state.last_clustering]
        left = sum(len(g.slices) for g in _pack_groups(spec, state, older, []))
        if left:
            reasons.append(f"{left} file(s) still predate the last clustering with {layout} ({state.last_clustering}) "
                           "without being laid out by it (left by maxGroups, an apply stopped between steps, "
                           "or a plan over part of the table)")
    if state.commits_since_clustering >= c.every_n_commits:
        since = f"since the last clustering ({state.last_clustering})" if state.last_clustering else "and no clustering yet"
        reasons.append(f"{counted(state.commits_since_clustering, 'commit')} {since}; everyNCommits is {c.every_n_commits}")
    if c.max_small_files is not None:
        small = sum(1 for fg in _to_lay_out(spec, state) if _file_bytes(fg) < c.small_file_limit)
        if small > c.max_small_files:
            reasons.append(f"{counted(small, 'small file')} (below smallFileLimit) exceed maxSmallFiles {c.max_small_files}")
    return reasons


def _joining(spec, state, todo: list) -> list:
    """Laid-out small files rewritten with `todo`: those in partitions with files written since the
    last clustering (stitched together, they make fewer, fuller files)."""
    c, layout = spec.spec.clustering, declared_layout(spec)
    done = _written_with(state, layout)
    fresh = {fg.partition for fg in todo if state.last_clustering is None or fg.base_instant > state.last_clustering}
    return [fg for fg in _open(spec, state)
            if fg.base_instant in done and _file_bytes(fg) < c.small_file_limit and fg.partition in fresh]


def _pack_groups(spec, state, todo: list, joining: list) -> list[ClusteringGroup]:
    """Every clustering group over `todo` and `joining` (a group of joining files only is dropped):
    first the partitions the last clustering left unfinished, then the largest. So the step after
    a step continues where it stopped, and apply's steps are the ones the plan showed."""
    c, layout = spec.spec.clustering, declared_layout(spec)
    last = state.last_clustering
    started = ({fg.partition for fg in todo if fg.base_instant < last}
               & {fg.partition for fg in state.file_groups if fg.base_instant == last}) if last else set()
    joiners = {(fg.partition, fg.file_id) for fg in joining}
    by_partition: dict[str, list[SliceInfo]] = {}
    for fg in todo + joining:
        path = join(state.location, fg.partition, fg.base_file) if fg.base_file else None
        logs = tuple(join(state.location, fg.partition, name) for name in fg.log_names)
        by_partition.setdefault(fg.partition, []).append(
            SliceInfo(fg.partition, fg.file_id, path, fg.size + fg.log_bytes, logs, fg.log_bytes))
    bucketed = spec.spec.index.type == "BUCKET"
    groups: list[ClusteringGroup] = []
    for partition in sorted(by_partition, key=lambda p: (p not in started, -sum(s.size for s in by_partition[p]), p)):
        slices = sorted(by_partition[partition], key=lambda s: (-s.size, s.file_id))
        if bucketed:
            packed = [[s] for s in sorted(slices, key=lambda s: s.file_id)] if layout.columns else []
        else:
            packed = _pack(slices, c.max_bytes_per_group)
            if not layout.columns:
                packed = [p for p in packed if len(p) > 1]
        for members in packed:
            if all((s.partition, s.file_id) in joiners for s in members):
                continue  # already laid out, nothing new to lay out with it
            size = sum(s.size for s in members)
            outputs = 1 if bucketed else max(1, math.ceil(size / c.target_file_size))
            groups.append(ClusteringGroup(tuple(members), outputs))
    return groups


def clustering_steps(spec, state, reasons: list[str]) -> list[ClusteringPlan]:
    """Every group to cluster now, in steps of at most `maxGroups` groups, first step first."""
    todo = _to_lay_out(spec, state)
    groups = _pack_groups(spec, state, todo, _joining(spec, state, todo))
    size, layout = spec.spec.clustering.max_groups, declared_layout(spec)
    return [ClusteringPlan(tuple(groups[i:i + size]), layout, extra_metadata={REASONS_KEY: "; ".join(reasons)})
            for i in range(0, len(groups), size)]


def clustering_plan(spec, state, reasons: list[str] | None = None) -> ClusteringPlan | None:
    """The plan to schedule now (the first step), or None when clustering is not due or has
    nothing to do. `reasons`: why it was planned (apply runs a planned step whether or not it is
    still due; applying the settings, for one, makes a newly declared layout the recorded one)."""
    reasons = reasons or due_reasons(spec, state)
    steps = clustering_steps(spec, state, reasons) if reasons else []
    return steps[0] if steps else None


def _pack(slices: list[SliceInfo], max_bytes: int) -> list[list[SliceInfo]]:
    """Slices (largest first) into consecutive groups of at most `max_bytes` (a bigger slice alone)."""
    groups: list[list[SliceInfo]] = []
    size = 0
    for s in slices:
        if groups and size + s.size <= max_bytes:
            groups[-1].append(s)
            size += s.size
        else:
            groups.append([s])
            size = s.size
    return groups


def group_summary(plan: ClusteringPlan) -> list[GroupSummary]:
    return [GroupSummary(partition=g.partition, input_files=len(g.slices), input_bytes=g.input_bytes,
                         output_files=g.num_output_file_groups) for g in plan.groups]


def pending_runs(state) -> list[ClusteringAction | Rollback]:
    """Run the pending plans (scheduled, or left by a crashed run). They go before any rewrite
    of the table: a rewrite may not replace file groups under a pending plan."""
    pending = [(i, p) for i, p in sorted(state.pending_clustering.items())
               if i.state == "requested" or i in state.expired]
    sizes = {(fg.partition, fg.file_id): fg.size for fg in state.file_groups}
    actions: list[ClusteringAction | Rollback] = []
    for instant, plan in pending:
        stale = unrunnable(plan, state)
        if stale:
            actions.append(Rollback(params=DiscardPlans(discard_plans=[instant.timestamp]), reasons=[
                f"clustering plan {instant.timestamp} can no longer run ({stale}): it is rolled back and "
                "discarded; the next plan schedules a new one if clustering is due"]))
            continue
        why = ("scheduled and not yet run" if instant.state == "requested"
               else "its run died (heartbeat expired); it is rolled back to its plan and run again")
        summary = [g.model_copy(update={"input_bytes": sum(sizes.get((s.partition, s.file_id), 0) for s in grp.slices)})
                   for g, grp in zip(group_summary(plan), plan.groups)]
        actions.append(_action(plan, summary, [f"clustering plan {instant.timestamp} is {why}"],
                               instant=instant.timestamp))
    return actions


def unrunnable(plan: ClusteringPlan, state) -> str | None:
    """Why a pending plan cannot run any more (changed outside tablespec: an input file group was
    rewritten or replaced, a sort column dropped; or never could: it merges buckets), or None."""
    latest = {(fg.partition, fg.file_id): (fg.base_file or None, fg.log_names) for fg in state.file_groups}
    return cannot_run(plan, latest, {c.name: c.type for c in state.columns},
                      bucketed=table_index_type(state.table_config) == "BUCKET")


def clustering_actions(spec, state) -> list[ClusteringAction | Rollback]:
    """Run pending plans, else, if clustering is due, one action per step."""
    runs = pending_runs(state)
    if runs:
        return runs
    reasons = due_reasons(spec, state)
    steps = clustering_steps(spec, state, reasons) if reasons else []
    total = sum(len(g.slices) for plan in steps for g in plan.groups)
    actions: list[ClusteringAction | Rollback] = []
    for number, plan in enumerate(steps, 1):
        if len(steps) == 1:
            actions.append(_action(plan, group_summary(plan), reasons))
            continue
        step = Step(number=number, of=len(steps), file_groups=sum(len(g.slices) for g in plan.groups),
                    of_file_groups=total)
        why = reasons if number == 1 else [f"step {number} of {len(steps)}: the groups beyond maxGroups "
                                           f"({spec.spec.clustering.max_groups}) of step {number - 1}"]
        actions.append(_action(plan, group_summary(plan), why, step=step))
    return actions


def merged_logs_note(plan: ClusteringPlan) -> list[str]:
    """What a clustering of merge-on-read slices with log files does beyond copy-on-write's ([]: none)."""
    logs = [s for g in plan.groups for s in g.slices if s.delta_files]
    if not logs:
        return []
    files, size = sum(len(s.delta_files) for s in logs), sum(s.log_size for s in logs)
    return [f"merge-on-read: reads {counted(len(logs), 'file slice')} merged with {counted(files, 'log file')} "
            f"({human_bytes(size)}) into new base files; until it completes, the file groups it takes get no updates "
            "(a deltacommit into them is refused, as Apache Hudi 0.15's default update strategy rejects it) and no "
            "compaction"]


def _action(plan: ClusteringPlan, groups: list[GroupSummary], reasons: list[str], instant: str | None = None,
            step: Step | None = None) -> ClusteringAction:
    reasons = reasons + merged_logs_note(plan)
    read = sum(g.input_bytes for g in groups)
    estimate = ClusteringEstimate(
        strategy=str(plan.layout),
        groups=len(groups),
        partitions=len({g.partition for g in groups}),
        files=f"{sum(g.input_files for g in groups)} -> {sum(g.output_files for g in groups)}",
        bytes_to_read=read,
        bytes_to_write=read,
    )
    return ClusteringAction(reasons=reasons, params=ClusteringParams(instant=instant, step=step, groups=groups),
                            estimate=estimate)

"""Scheduling clustering (RFC-19), pure: is it due, which file slices, in which groups.

Due when `everyNCommits` commits landed since the last clustering, when the declared layout
(strategy, sort columns) differs from the one the last clustering used, or when there are more
than `maxSmallFiles` small files. Eligible slices: base files below `smallFileLimit` (Hudi's
size-based plan strategy: a file at or above it is big enough to be left alone), in file groups
under no pending clustering, in partitions passing `partitionFilter` and `latestPartitions`.
When the layout changed, every file is eligible: re-laying out only the small ones would leave
most data in the old order; when `maxGroups` leaves some of them out, the next clusterings take
them (due until no file predates the switch). Otherwise files the last clustering wrote are as laid out as they get
(small only because their partition is): they do not count as small files, and are rewritten only
together with newer files, so plan -> apply -> plan settles.

Groups never span partitions. Unsorted stitching (NONE) packs slices into groups of at most
`maxBytesPerGroup` and drops groups of a single file (nothing to stitch); SORT / ZORDER / HILBERT
keep them (the file gets sorted). Each group writes ceil(bytes / targetFileSize) file groups.
Bucket-index tables get one group per bucket file group, rewritten into one file group of the
same bucket: clustering sorts within a bucket and never merges buckets. At most `maxGroups`
groups, largest partitions' slices first.
"""
from __future__ import annotations

import math
import re

from tablespec.hudi.io import join
from tablespec.hudi.clustering import ClusteringGroup, ClusteringPlan, Layout, SliceInfo
from tablespec.plan.actions import Action
from tablespec.wording import counted


def declared_layout(spec) -> Layout:
    c = spec.spec.clustering
    return Layout() if c.strategy == "NONE" else Layout(c.strategy, tuple(c.sort_columns))


def due_reasons(spec, state) -> list[str]:
    """Why clustering is due now ([] when it is not)."""
    c = spec.spec.clustering
    layout, last = declared_layout(spec), state.last_clustering_layout
    reasons = []
    if last is not None and last != layout:
        reasons.append(f"declared layout {layout} differs from the last clustering's ({last}, {state.last_clustering})")
    elif last is not None and state.relayout_since is not None and layout.columns:
        old = _old_layout(state, layout)
        left = sum(1 for fg in _candidates(spec, state, old) if old(fg))
        if left:
            reasons.append(f"{left} file(s) still predate the switch to {layout} ({state.relayout_since}), "
                           "left by maxGroups for a later clustering")
    if state.commits_since_clustering >= c.every_n_commits:
        since = f"since the last clustering ({state.last_clustering})" if state.last_clustering else "and no clustering yet"
        reasons.append(f"{counted(state.commits_since_clustering, 'commit')} {since}; everyNCommits is {c.every_n_commits}")
    if c.max_small_files is not None:
        small = sum(1 for fg in _candidates(spec, state, lambda fg: False) if not _laid_out(state, fg))
        if small > c.max_small_files:
            reasons.append(f"{counted(small, 'small file')} (below smallFileLimit) exceed maxSmallFiles {c.max_small_files}")
    return reasons


def _partitions(spec, state) -> set[str]:
    c = spec.spec.clustering
    parts = sorted({fg.partition for fg in state.file_groups})
    if c.partition_filter is not None:
        parts = [p for p in parts if re.fullmatch(c.partition_filter, p)]
    if c.latest_partitions is not None:
        parts = parts[-c.latest_partitions:]
    return set(parts)


def _laid_out(state, fg) -> bool:
    """Written by the last clustering (whose layout is still the declared one when this is asked)."""
    return state.last_clustering is not None and fg.base_instant == state.last_clustering


def _old_layout(state, layout: Layout):
    """Which files are still to be re-laid out for `layout`: every file when it differs from the
    last clustering's; after a switch to it, the files older than the switch."""
    last, since = state.last_clustering_layout, state.relayout_since
    if last is not None and last != layout:
        return lambda fg: True
    if last is not None and since is not None and layout.columns:
        return lambda fg: fg.base_instant < since
    return lambda fg: False


def _candidates(spec, state, old_layout):
    c = spec.spec.clustering
    locked = set().union(*(plan.file_ids() for plan in state.pending_clustering.values()))
    parts = _partitions(spec, state)
    for fg in state.file_groups:
        if (fg.base_file and fg.partition in parts and (fg.partition, fg.file_id) not in locked
                and (old_layout(fg) or fg.size < c.small_file_limit)):
            yield fg


def clustering_plan(spec, state) -> ClusteringPlan | None:
    """The plan to schedule now, or None when clustering is not due or has nothing to do."""
    reasons = due_reasons(spec, state)
    if not reasons:
        return None
    c, layout = spec.spec.clustering, declared_layout(spec)
    old = _old_layout(state, layout)
    by_partition: dict[str, list[SliceInfo]] = {}
    laid_out = set()
    for fg in _candidates(spec, state, old):
        if not old(fg) and _laid_out(state, fg):
            laid_out.add((fg.partition, fg.file_id))
        path = join(state.location, fg.partition, fg.base_file)
        by_partition.setdefault(fg.partition, []).append(SliceInfo(fg.partition, fg.file_id, path, fg.size))
    bucketed = spec.spec.index.type == "BUCKET"
    groups: list[ClusteringGroup] = []
    for partition in sorted(by_partition, key=lambda p: (-sum(s.size for s in by_partition[p]), p)):
        slices = sorted(by_partition[partition], key=lambda s: (-s.size, s.file_id))
        if bucketed:
            packed = [[s] for s in sorted(slices, key=lambda s: s.file_id)] if layout.columns else []
        else:
            packed = _pack(slices, c.max_bytes_per_group)
            if not layout.columns:
                packed = [p for p in packed if len(p) > 1]
        for members in packed:
            if len(members) == 1 and (members[0].partition, members[0].file_id) in laid_out:
                continue  # already laid out, nothing new to lay out with it
            size = sum(s.size for s in members)
            outputs = 1 if bucketed else max(1, math.ceil(size / c.target_file_size))
            groups.append(ClusteringGroup(tuple(members), outputs))
    groups = groups[:c.max_groups]
    if not groups:
        return None
    return ClusteringPlan(tuple(groups), layout, extra_metadata={"tablespec.clustering.reasons": "; ".join(reasons)})


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


def group_summary(plan: ClusteringPlan) -> list[dict]:
    return [{"partition": g.partition, "input_files": len(g.slices), "input_bytes": g.input_bytes,
             "output_files": g.num_output_file_groups} for g in plan.groups]


def pending_runs(state) -> list[Action]:
    """Run the pending plans (scheduled, or left by a crashed run). They go before any rewrite
    of the table: a rewrite may not replace file groups under a pending plan."""
    pending = [(i, p) for i, p in sorted(state.pending_clustering.items())
               if i.state == "requested" or i in state.expired]
    sizes = {(fg.partition, fg.file_id): fg.size for fg in state.file_groups}
    actions = []
    for instant, plan in pending:
        stale = unrunnable(plan, state)
        if stale:
            actions.append(Action(kind="rollback", params={"discard_plans": [instant.timestamp]}, reasons=[
                f"clustering plan {instant.timestamp} can no longer run ({stale}): it is rolled back and "
                "discarded; the next plan schedules a new one if clustering is due"]))
            continue
        why = ("scheduled and not yet run" if instant.state == "requested"
               else "its run died (heartbeat expired); it is rolled back to its plan and run again")
        summary = [{**g, "input_bytes": sum(sizes.get((s.partition, s.file_id), 0) for s in grp.slices)}
                   for g, grp in zip(group_summary(plan), plan.groups)]
        actions.append(_action(plan, summary, [f"clustering plan {instant.timestamp} is {why}"],
                               {"instant": instant.timestamp}))
    return actions


def unrunnable(plan: ClusteringPlan, state) -> str | None:
    """Why a pending plan cannot run any more (changed outside tablespec: an input file group was
    rewritten or replaced, a sort column dropped), or None."""
    latest = {(fg.partition, fg.file_id): fg.base_file for fg in state.file_groups}
    for s in (s for g in plan.groups for s in g.slices):
        name = latest.get((s.partition, s.file_id))
        if name is None:
            return f"file group {s.file_id} in partition '{s.partition}' is no longer in the table"
        if s.file_name and s.file_name != name:
            return f"file group {s.file_id} has a newer base file than the plan's {s.file_name}"
    columns = {c.name for c in state.columns}
    missing = [c for c in plan.layout.columns if c not in columns]
    return f"sort column(s) {', '.join(missing)} not in the table" if missing else None


def clustering_actions(spec, state) -> list[Action]:
    """Run pending plans, else schedule a new one if due."""
    runs = pending_runs(state)
    if runs:
        return runs
    plan = clustering_plan(spec, state)
    if plan is None:
        return []
    return [_action(plan, group_summary(plan), due_reasons(spec, state), {})]


def _action(plan: ClusteringPlan, groups: list[dict], reasons: list[str], params: dict) -> Action:
    read = sum(g["input_bytes"] for g in groups)
    estimate = {
        "strategy": str(plan.layout),
        "groups": len(groups),
        "partitions": len({g["partition"] for g in groups}),
        "files": f"{sum(g['input_files'] for g in groups)} -> {sum(g['output_files'] for g in groups)}",
        "bytes_to_read": read,
        "bytes_to_write": read,
    }
    return Action(kind="clustering", reasons=reasons, params={**params, "groups": groups}, estimate=estimate)

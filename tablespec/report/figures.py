"""One table's figures, from what `observe`, `show` and `plan` already work out (metadata only):
file sizes against the table's small-file limit and target size, partition and bucket skew, the
services due and Hudi's metadata table, and the plan's drift in its own wording."""
from __future__ import annotations

from collections import defaultdict

from tablespec.hudi.metadata_table import folder as metadata_folder
from tablespec.plan.actions import Plan, TablePlan
from tablespec.plan.buckets import BucketLayout, sizing_warning
from tablespec.plan.clustering import recorded_coverage, recorded_settings
from tablespec.plan.render import render
from tablespec.report.history import SliceKey, nearest_rank
from tablespec.show import coverage_dict, state_dict
from tablespec.spec.sizes import parse_size
from tablespec.state import FileGroupState, TableState

PERCENTILES = (0, 10, 25, 50, 75, 90, 100)
# histogram edges: powers of 4 from 1 KiB to 4 GiB (the first bin starts at 0, the last is open)
EDGES = [0] + [1024 * 4**k for k in range(12)]
# plan actions that keep a table as it is (cleaning, archiving, clustering, rollbacks, the
# metadata table's upkeep): the report lists them as services due, the rest as drift
SERVICE_KINDS = ("rollback", "clean", "archive", "clustering", "compaction", "build_metadata_table",
                 "drop_metadata_partitions", "build_data_skipping")


def summary(state: TableState) -> dict:
    """Who the table is, as `show --format json` names it."""
    d = state_dict(state)
    return {"name": d["name"], "database": d["database"], "tableType": d["tableType"],
            "tableVersion": d["tableVersion"], "indexType": d["index"]["type"],
            "numBuckets": d["index"]["numBuckets"], "partitionFields": d["partitionFields"],
            "headInstant": d["headInstant"], "columns": len(d["columns"])}


def sizes_limits(state: TableState, spec=None) -> tuple[int, int]:
    """(small-file limit, target file size): the spec's, else as the table's settings record them."""
    if spec is not None:
        c = spec.spec.clustering
        return c.small_file_limit, c.target_file_size
    rec = recorded_settings(state)
    return parse_size(rec["smallFileLimit"]), parse_size(rec["targetFileSize"])


def _percentiles(sizes: list[int]) -> dict:
    ordered = sorted(sizes)
    return {f"p{p}": nearest_rank(ordered, p) for p in PERCENTILES} if ordered else {}


def histogram(sizes: list[int]) -> list[dict]:
    """Files per size bin (powers of 4), from the first bin holding a file to the last."""
    counts = [0] * len(EDGES)
    for size in sizes:
        counts[max(i for i, edge in enumerate(EDGES) if size >= edge)] += 1
    used = [i for i, n in enumerate(counts) if n]
    if not used:
        return []
    return [{"from": EDGES[i], "to": EDGES[i + 1] if i + 1 < len(EDGES) else None, "files": counts[i]}
            for i in range(used[0], used[-1] + 1)]


def _based(state: TableState) -> list[FileGroupState]:
    return [g for g in state.file_groups if g.base_file]


def file_figures(state: TableState, small_limit: int, target: int) -> dict:
    groups = _based(state)
    sizes = [g.size for g in groups]
    by_partition: dict[str, list[int]] = defaultdict(list)
    for g in groups:
        by_partition[g.partition].append(g.size)
    small = sum(1 for s in sizes if s < small_limit)
    return {
        "count": len(sizes), "bytes": sum(sizes), "smallFileLimit": small_limit, "targetFileSize": target,
        "smallFiles": small, "smallShare": round(small / len(sizes), 4) if sizes else 0.0,
        "percentiles": _percentiles(sizes), "histogram": histogram(sizes),
        "byPartition": [{"partition": p, "files": len(s), "bytes": sum(s), "smallFiles": sum(1 for x in s if x < small_limit),
                         "percentiles": _percentiles(s)} for p, s in sorted(by_partition.items())],
    }


def _skew(values: list[int]) -> float | None:
    """Largest over mean (1.0: even; None: fewer than two partitions or nothing in them)."""
    if len(values) < 2 or not sum(values):
        return None
    return round(max(values) / (sum(values) / len(values)), 2)


def partition_figures(state: TableState, slice_rows: dict[SliceKey, int], target: int) -> dict:
    groups = _based(state)
    rows_known = all((g.partition, g.file_id, g.base_instant) in slice_rows for g in groups)
    parts: dict[str, dict] = {}
    for g in groups:
        p = parts.setdefault(g.partition, {"partition": g.partition, "files": 0, "bytes": 0, "rows": 0})
        p["files"] += 1
        p["bytes"] += g.size
        p["rows"] += slice_rows.get((g.partition, g.file_id, g.base_instant), 0)
    listed = [parts[p] for p in sorted(parts)]
    if not rows_known:
        for p in listed:
            p["rows"] = None
    return {
        "count": len(state.partitions), "withData": len(listed), "rowsKnown": rows_known,
        "rows": sum(p["rows"] for p in listed) if rows_known else None,
        "bytesSkew": _skew([p["bytes"] for p in listed]),
        "rowsSkew": _skew([p["rows"] for p in listed]) if rows_known else None,
        "largest": max(listed, key=lambda p: p["bytes"])["partition"] if listed else None,
        "byPartition": listed,
        "buckets": _bucket_figures(state, groups, slice_rows if rows_known else None, target),
    }


def _bucket_figures(state: TableState, groups: list[FileGroupState], slice_rows: dict | None, target: int) -> dict | None:
    """Bucket fill per partition of a BUCKET table: buckets the layout gives the partition, those
    holding data, rows per bucket; and the plan's sizing advice (buckets against the target size)."""
    layout = BucketLayout.from_properties(state.table_config.to_properties())
    if layout is None:
        return None
    per: dict[str, dict[int, int]] = defaultdict(dict)
    part_bytes: dict[str, int] = defaultdict(int)
    for g in groups:
        if g.bucket is not None:
            rows = slice_rows.get((g.partition, g.file_id, g.base_instant), 0) if slice_rows is not None else 0
            per[g.partition][g.bucket] = per[g.partition].get(g.bucket, 0) + rows
        part_bytes[g.partition] += g.size
    listed = []
    for p in sorted(per):
        rows = list(per[p].values())
        listed.append({"partition": p, "buckets": layout.buckets_for(p), "filled": len(rows),
                       "rowsMin": min(rows) if slice_rows is not None else None,
                       "rowsMax": max(rows) if slice_rows is not None else None,
                       "rowsMean": round(sum(rows) / len(rows), 1) if slice_rows is not None else None})
    return {"numBuckets": layout.num_buckets, "byPartition": listed,
            "advice": sizing_warning(dict(part_bytes), layout, target)}


def metadata_table_figures(state: TableState) -> dict:
    """Hudi's metadata table: what `show` says of it, its size per partition folder, damage found."""
    out = dict(state.metadata_table.to_dict())
    per: dict[str, dict] = {}
    if out["present"]:
        table = state.handle
        root = metadata_folder(table.base)
        for f in table.storage.walk_files(root):
            name = f.path[len(root) + 1:].split("/", 1)[0] if "/" in f.path[len(root) + 1:] else "(top level)"
            entry = per.setdefault(name, {"partition": name, "files": 0, "bytes": 0})
            entry["files"] += 1
            entry["bytes"] += f.size
    out["byPartition"] = [per[k] for k in sorted(per)]
    out["damage"] = [str(d) for d in state.metadata_damage]
    return out


def service_figures(state: TableState, table_plan: TablePlan | None) -> dict:
    cov = table_plan.clustering_coverage if table_plan is not None else recorded_coverage(state)
    due = None if table_plan is None else [
        {"kind": a.kind, "reasons": list(a.reasons), "estimate": a.estimate.shown()}
        for a in table_plan.actions if a.kind in SERVICE_KINDS]
    clean = next(iter(state.cleanable.values()), None)
    return {
        "clustering": {"last": state.last_clustering, "commitsSince": state.commits_since_clustering,
                       "pendingPlans": sorted(i.timestamp for i in state.pending_clustering),
                       "coverage": coverage_dict(cov)},
        "cleanable": {"files": clean["files"], "bytes": clean["bytes_to_free"],
                      "earliestRetained": clean["earliest_instant_to_retain"]} if clean else None,
        "compaction": compaction_figures(state),
        "due": due,
        "metadataTable": metadata_table_figures(state),
    }


def compaction_figures(state: TableState) -> dict | None:
    """A merge-on-read table's compaction backlog (None on copy-on-write): the latest compaction, the
    deltacommits since, pending plans, and the latest slices with log files (their files and bytes)."""
    backlog = state.compaction
    if backlog is None:
        return None
    with_logs = [fg for fg in state.file_groups if fg.log_files]
    return {"last": backlog.last_compaction, "deltaCommitsSince": len(backlog.delta_commits),
            "pendingPlans": sorted(i.timestamp for i, _ in backlog.pending),
            "slicesWithLogs": len(with_logs), "logFiles": sum(fg.log_files for fg in with_logs),
            "logBytes": sum(fg.log_bytes for fg in with_logs)}


def drift_figures(plan: Plan) -> dict:
    """What `plan` (of one table) would change in the table, as the plan words it (its text)."""
    table_plan = plan.tables[0]
    changes = [a for a in table_plan.actions if a.kind not in SERVICE_KINDS]
    return {
        "spec": f"{table_plan.spec_file}:{table_plan.spec_line}", "error": None,
        "inSync": not changes,
        "actions": [{"kind": a.kind, "symbol": a.symbol, "destructive": a.destructive, "reasons": list(a.reasons),
                     "changes": [{"path": c.path, "old": c.old, "new": c.new} for c in a.changes],
                     "advice": list(a.advice)} for a in changes],
        "warnings": list(table_plan.warnings),
        "planText": render(plan, "text"),
    }

"""The report's figures for a set of tables and the warehouse overview over them.

Each table is read on its own: a table that cannot be read (no table there, a damaged
hoodie.properties, a corrupt commit file) gets an entry saying why and a score of 0, and the
others are reported as usual. A table a spec declares is also planned against that spec (drift,
services due); a table given by its path is reported from its own settings."""
from __future__ import annotations

import functools
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tablespec.errors import TablespecError
from tablespec.hudi.config import META_FOLDER, PROPERTIES_FILE
from tablespec.hudi.io import is_object_store, map_locations
from tablespec.hudi.table import HudiTable, Location
from tablespec.plan.actions import Plan
from tablespec.plan.builder import plan_table
from tablespec.report.figures import (
    drift_figures,
    file_figures,
    partition_figures,
    service_figures,
    sizes_limits,
    summary,
)
from tablespec.report.history import timeline_figures
from tablespec.report.score import GRADES, grade, score
from tablespec.spec.loader import LoadedSpec
from tablespec.state import TableState, observe
from tablespec.version import __version__

REPORT_VERSION = 1   # the JSON's shape (docs/report.md); raised when a key changes meaning or goes


@dataclass(frozen=True)
class Target:
    """A table to report on, and the spec declaring it (None: given by its path)."""
    table: HudiTable
    loaded: LoadedSpec | None = None

    @property
    def name(self) -> str:
        if self.loaded is not None:
            return self.loaded.spec.qualified_name
        return self.table.base.rstrip("/").rsplit("/", 1)[-1]


def tables_under(root: Location) -> list[HudiTable]:
    """Every table below `root` (a folder holding .hoodie/hoodie.properties), not the metadata
    tables inside them, in path order."""
    marker = f"/{META_FOLDER}/{PROPERTIES_FILE}"
    bases = {f.path[:-len(marker)] for f in root.storage.walk_files(root.uri) if f.path.endswith(marker)}
    return [HudiTable(root.child(base[len(root.uri.rstrip("/")) + 1:]) if base != root.uri.rstrip("/") else root)
            for base in sorted(bases) if f"/{META_FOLDER}/" not in base + "/"]


def _plan(target: Target, state: TableState, warehouse: str, now: str) -> Plan | str:
    """The plan of the table against its spec, or why it cannot be planned."""
    assert target.loaded is not None
    try:
        table_plan = plan_table(target.loaded, state)
    except TablespecError as e:
        return str(e)
    return Plan(tablespec_version=__version__, created_at=now, warehouse=warehouse, tables=[table_plan])


def _figures(target: Target, warehouse: str, now: str) -> dict:
    table, loaded = target.table, target.loaded
    spec = loaded.spec if loaded is not None else None
    state = (observe(table, keep_commits=loaded.spec.spec.retention.keep_commits, archive=loaded.spec.archive_settings)
             if loaded is not None else observe(table))
    if not state.exists:
        raise TablespecError(f"{table.base}: no Hudi table there (no {META_FOLDER}/{PROPERTIES_FILE})"
                             + ("; `tablespec apply` creates it" if loaded is not None else ""))
    plan = _plan(target, state, warehouse, now) if loaded is not None else None
    timeline, slice_rows = timeline_figures(table, state)
    small, target_size = sizes_limits(state, spec)
    return {
        "summary": summary(state),
        "files": file_figures(state, small, target_size),
        "partitions": partition_figures(state, slice_rows, target_size),
        "timeline": timeline,
        "services": service_figures(state, plan.tables[0] if isinstance(plan, Plan) else None),
        "drift": None if plan is None else drift_figures(plan) if isinstance(plan, Plan) else {
            "spec": loaded.where() if loaded is not None else None, "error": plan, "inSync": None, "actions": [],
            "warnings": [], "planText": None},
    }


def table_entry(target: Target, warehouse: str, now: str) -> dict:
    """One table's entry of the report: its figures and score, or the error that kept it unread."""
    entry: dict = {"name": target.name, "location": target.table.base,
                   "spec": target.loaded.where() if target.loaded is not None else None, "error": None}
    try:
        with target.table.listing_snapshot():
            entry.update(_figures(target, warehouse, now))
    except (TablespecError, OSError) as e:
        entry["error"] = str(e) if isinstance(e, TablespecError) else f"{e.filename or target.table.base}: {e.strerror or e}"
    entry["score"], entry["reasons"] = score(entry)
    entry["grade"] = grade(entry["score"])
    return entry


def overview(entries: list[dict]) -> dict:
    """The warehouse in a few numbers: sizes, commits, what is wrong where."""
    ok = [e for e in entries if not e["error"]]
    by_day: dict[str, int] = {}
    for e in ok:
        for day in e["timeline"]["byDay"]:
            by_day[day["day"]] = by_day.get(day["day"], 0) + sum(v for k, v in day.items() if k != "day")
    scores = [e["score"] for e in entries]
    return {
        "tables": len(entries), "readable": len(ok), "unreadable": [e["name"] for e in entries if e["error"]],
        "bytes": sum(e["files"]["bytes"] for e in ok), "files": sum(e["files"]["count"] for e in ok),
        "smallFiles": sum(e["files"]["smallFiles"] for e in ok),
        "commits": sum(e["timeline"]["commits"] for e in ok),
        "rowsWritten": sum(e["timeline"]["rowsWritten"] for e in ok),
        "pendingInstants": sum(len(e["timeline"]["pending"]) for e in ok),
        "failedWrites": sum(1 for e in ok for p in e["timeline"]["pending"] if p["failed"]),
        "drifted": [e["name"] for e in ok if e["drift"] and not e["drift"].get("inSync", False)],
        "servicesDue": [e["name"] for e in ok if e["services"]["due"]],
        "score": {"min": min(scores), "mean": round(sum(scores) / len(scores), 1)} if scores else None,
        "grades": {name: sum(1 for e in entries if e["grade"] == name) for _, name in GRADES},
        "instantsByDay": [{"day": d, "instants": n} for d, n in sorted(by_day.items())],
    }


TABLES_PER_WORKER = 4   # fewer tables than this per core: one process does them all (a worker costs a fork)


def map_tables(fn: Callable, items: list, location: str) -> list:
    """`[fn(item) for item in items]` (order kept), spread over the machine's cores in worker
    processes when the tables are on local disk: reading timelines and drawing charts is CPU work
    threads would not share. On an object store, threads (map_locations: each call waits on requests).
    `fn` must pickle (a module-level function, or a partial of one)."""
    workers = min(os.cpu_count() or 1, len(items) // TABLES_PER_WORKER)
    if is_object_store(location) or workers < 2:
        return map_locations(fn, items, location)
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(fn, items))


def _entry_drawn(target: Target, warehouse: str, now: str, draw: Callable[[dict], Any]) -> tuple[dict, Any]:
    entry = table_entry(target, warehouse, now)
    return entry, draw(entry)


def build_report(targets: list[Target], warehouse: str | None, now: datetime | None = None) -> dict:
    """The report of `targets` (the JSON `--format json` prints; the HTML shows the same);
    `warehouse`: the root the specs' tables are under (None: tables given by path only)."""
    return drawn_report(targets, warehouse, now)[0]


def drawn_report(targets: list[Target], warehouse: str | None, now: datetime | None = None,
                 draw: Callable[[dict], Any] | None = None) -> tuple[dict, list]:
    """The report, and `draw(entry)` of each table's entry (in the report's order) made in the
    worker that read the table (the HTML's charts: no second pass shipping every entry to workers)."""
    created = (now or datetime.now(UTC)).isoformat(timespec="seconds")
    where = warehouse or (targets[0].table.base if targets else "")
    if draw is None:
        pairs = [(e, None) for e in map_tables(functools.partial(table_entry, warehouse=warehouse or "", now=created),
                                               targets, where)]
    else:
        pairs = map_tables(functools.partial(_entry_drawn, warehouse=warehouse or "", now=created, draw=draw),
                           targets, where)
    entries = [e for e, _ in pairs]
    report = {"reportVersion": REPORT_VERSION, "tablespecVersion": __version__, "createdAt": created,
              "warehouse": warehouse, "overview": overview(entries), "tables": entries}
    return report, [d for _, d in pairs]

"""Apply: check a plan against the live tables, then run its actions in order.

Nothing is touched until every table's requirements hold and every action is allowed, so a
refused or stale plan leaves all tables as they were. Dispatch is by action kind
(`visit_<kind>`); an action without a visitor is refused by name before anything runs.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from tablespec.actions import metadata
from tablespec.errors import PlanError, StalePlanError
from tablespec.plan.actions import Action, Plan, TablePlan, check_requirements
from tablespec.spec.loader import load_specs
from tablespec.spec.model import TableSpec
from tablespec.state import observe

LATER = {
    "bucket_bootstrap": "the bucket-index migration work",
    "bucket_rescale": "the bucket-index migration work",
    "schema_evolution": "the schema-evolution work",
    "replace_table": "the table-replacement work",
    "index_migration": "the record-level index work",
}


@dataclass
class ActionResult:
    table: str
    kind: str
    seconds: float


@dataclass
class ApplyResult:
    actions: list[ActionResult] = field(default_factory=list)

    def summary(self) -> str:
        kinds = [a.kind for a in self.actions]
        created = kinds.count("create_table")
        return (f"Apply complete: {created} created, {len(kinds) - created} other action"
                f"{'s' if len(kinds) - created != 1 else ''} applied.")


def check_spec_digests(plan: Plan) -> None:
    """A saved plan is stale when a spec it was made from no longer renders to the same spec."""
    by_file: dict[str, list[TablePlan]] = {}
    for t in plan.tables:
        by_file.setdefault(t.spec_file, []).append(t)
    for file, tables in by_file.items():
        result = load_specs([file], plan.variables)
        current = {ls.document: ls.digest for ls in result.specs if ls.file == file}
        for t in tables:
            if current.get(t.spec_document) != t.spec_digest:
                raise StalePlanError(f"plan is stale for {t.name}: its spec {file} changed since the plan was made. "
                                     "Run `tablespec plan` again.")


def preflight(plan: Plan, allow_destructive: bool = False) -> None:
    """Raise before any table is touched if the plan is stale or any action is not allowed."""
    for t in plan.tables:
        if not t.actions:
            continue
        check_requirements(t.requirements, observe(t.location), t.name)
        spec = TableSpec.model_validate(t.spec)
        for a in t.actions:
            if a.destructive and (spec.spec.protection.prevent_destroy or _protected(t.location)):
                raise PlanError(f"{t.name}: {a.kind} is destructive ({'; '.join(a.reasons)}) and the table has "
                                "protection.preventDestroy set; nothing was changed")
            if a.destructive and not allow_destructive:
                raise PlanError(f"{t.name}: {a.kind} is destructive ({'; '.join(a.reasons)}); "
                                "re-run with --allow-destructive to allow it; nothing was changed")
            if not a.supported:
                raise PlanError(f"{t.name}: apply cannot run {a.kind} yet (it comes with {LATER.get(a.kind, 'later work')}); "
                                "nothing was changed")


def _protected(location: str) -> bool:
    state = observe(location)
    return bool(state.exists and state.config.to_properties().get("tablespec.protection.prevent.destroy") == "true")


class Applier:
    """Runs a checked plan action by action; `on_action` reports progress to the caller."""

    def __init__(self, on_action: Callable[[TablePlan, Action, float], None] | None = None):
        self.on_action = on_action or (lambda t, a, s: None)

    def apply(self, plan: Plan, allow_destructive: bool = False) -> ApplyResult:
        preflight(plan, allow_destructive)
        result = ApplyResult()
        for t, a in plan.actions:
            visit = getattr(self, f"visit_{a.kind}", None)
            if visit is None:
                raise PlanError(f"{t.name}: no executor for action {a.kind}")
            started = time.monotonic()
            visit(t, a, TableSpec.model_validate(t.spec))
            elapsed = time.monotonic() - started
            result.actions.append(ActionResult(t.name, a.kind, elapsed))
            self.on_action(t, a, elapsed)
        return result

    def visit_create_table(self, t: TablePlan, a: Action, spec: TableSpec) -> None:
        metadata.create_table(t.location, spec)

    def visit_update_settings(self, t: TablePlan, a: Action, spec: TableSpec) -> None:
        metadata.update_settings(t.location, spec)

    def visit_index_migration(self, t: TablePlan, a: Action, spec: TableSpec) -> None:
        # Only configuration-only migrations reach here (preflight refuses RECORD_LEVEL builds).
        metadata.update_settings(t.location, spec)

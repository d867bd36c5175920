"""A saved plan is input, not authority: what `apply PLAN.json` checks before it trusts any of it.

A plan file can be edited between `plan --out` and `apply`, so nothing in it that apply can work
out itself is taken as written:

- every embedded spec is validated as a spec file is, and must be the spec its `spec_digest`
  names (apply checks that digest against the spec files, `check_spec_digests`);
- every table's `location` must be where its spec puts it under the plan's warehouse, and that
  warehouse the one apply is given (`--warehouse`), if any (`check_plan`);
- right before a table is changed, under its lock, its actions are derived again from its spec
  and the live table, and the plan is refused unless they are the saved ones (`mismatch`): the
  derived actions are what runs, and their destructiveness is what apply allows or refuses.
"""
from __future__ import annotations

from tablespec.errors import PlanError
from tablespec.hudi.io import check_location, table_location, within
from tablespec.hudi.table import Location
from tablespec.plan.actions import Action, NewTable, Plan, TablePlan
from tablespec.plan.builder import display_name
from tablespec.spec.loader import LoadedSpec, clashes, spec_digest
from tablespec.spec.source import Document
from tablespec.spec.validation import validate_document

NOTHING_CHANGED = "run `tablespec plan` again; nothing was changed"


def embedded_spec(t: TablePlan, source: str = "plan") -> LoadedSpec:
    """The spec `t` embeds, validated as a spec file is; PlanError naming `source`, the table and
    the fields when it is not a valid spec."""
    spec, diagnostics = validate_document(Document(t.spec_document, t.spec_line, 1, t.spec), source)
    if spec is None:
        problems = "; ".join(f"{d.path}: {d.message}" if d.path else d.message
                             for d in diagnostics if d.severity == "error")
        raise PlanError(f"{source}: table {t.name}: invalid embedded spec: {' '.join(problems.split())}")
    # a new table's version, when the project chose it, is the plan's (as its template variables are)
    version = next((a.params.table_version for a in t.actions if isinstance(a.params, NewTable)
                    and a.params.table_version), 6)
    return LoadedSpec(spec, t.spec_file, t.spec_document, t.spec_line, spec_digest(spec),
                      positions={"": (t.spec_line, 1)}, default_table_version=version)


def _base(path: str) -> str:
    """A location as the planner writes it (absolute, normalized)."""
    return check_location(path)


def check_plan(plan: Plan, source: str, warehouse: Location | None = None) -> None:
    """Refuse (PlanError naming `source`) a plan whose tables are not what their embedded specs
    say: an invalid spec, a spec that is not the one its digest names, a table location other than
    the spec's location under the plan's warehouse, two tables in one place, or a warehouse other
    than `warehouse` (the one apply was given)."""
    root = _base(plan.warehouse)
    if warehouse is not None and warehouse.uri != root:
        raise PlanError(f"{source}: the plan was made for warehouse {plan.warehouse}, not {warehouse} "
                        f"(--warehouse); {NOTHING_CHANGED}")
    loaded = []
    for t in plan.tables:
        ls = embedded_spec(t, source)
        name = display_name(ls.spec)
        if name != t.name:
            raise PlanError(f"{source}: table {t.name}: its embedded spec is for table {name}; {NOTHING_CHANGED}")
        expected = _base(table_location(plan.warehouse, ls.spec.spec.location))
        if not within(expected, root):
            raise PlanError(f"{source}: table {t.name}: location {expected} is outside the warehouse {root}; "
                            f"{NOTHING_CHANGED}")
        if t.location != expected:
            raise PlanError(f"{source}: table {t.name}: location {t.location} is not where its spec puts it: "
                            f"{expected} (spec.location {ls.spec.spec.location!r} under the warehouse {root}); "
                            f"{NOTHING_CHANGED}")
        if ls.digest != t.spec_digest:
            raise PlanError(f"{source}: table {t.name}: its embedded spec is not the spec the plan was made from "
                            f"(its digest is not spec_digest): the plan file was edited; {NOTHING_CHANGED}")
        loaded.append(ls)
    for problem in clashes(loaded):
        raise PlanError(f"{source}: {problem.message}; {NOTHING_CHANGED}")


def _compared(a: Action) -> dict:
    """What an action does: its kind, destructiveness, changes and parameters (not its wording or estimate)."""
    return a.model_dump(mode="json", include={"kind", "destructive", "changes", "params"})


def _kinds(actions: list[Action]) -> str:
    return ", ".join(a.kind + (" (destructive)" if a.destructive else "") for a in actions)


def _change(c) -> str:
    return f"{c.path}: {c.old if c.old is not None else '(none)'} -> {c.new if c.new is not None else '(none)'}"


def _detail(saved: Action, now: Action) -> str:
    """How two actions of the same kind differ."""
    gone = [_change(c) for c in saved.changes if c not in now.changes]
    new = [_change(c) for c in now.changes if c not in saved.changes]
    if gone or new:
        return (f"; {saved.kind} changes saved [{'; '.join(gone)}], now [{'; '.join(new)}]")
    before, after = saved.params.model_dump(mode="json"), now.params.model_dump(mode="json")
    keys = sorted(k for k in {*before, *after} if before.get(k) != after.get(k))
    return f"; {saved.kind} parameters differ ({', '.join(keys) or 'order of changes'})"


def mismatch(saved: TablePlan, now: TablePlan) -> str | None:
    """Why `now` (the table planned again from its spec, against the live table) is not the saved
    table plan, or None when it does the same."""
    if now.name != saved.name or now.location != saved.location:
        return f"it is table {now.name} at {now.location}, not {saved.name} at {saved.location}"
    if now.requirements != saved.requirements or now.observed != saved.observed:
        return "its requirements are not those of the table as it is (was the plan file edited?)"
    if [_compared(a) for a in saved.actions] == [_compared(a) for a in now.actions]:
        return None
    why = f"saved [{_kinds(saved.actions)}], now [{_kinds(now.actions)}]"
    if [(a.kind, a.destructive) for a in saved.actions] == [(a.kind, a.destructive) for a in now.actions]:
        why += next(_detail(s, n) for s, n in zip(saved.actions, now.actions) if _compared(s) != _compared(n))
    return why

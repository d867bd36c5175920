"""Plan rendering: text (Terraform-like), markdown (pull-request comment) and JSON (plan file).

Text and markdown go through Jinja2 templates shipped as package data (`tablespec/templates`, a
link to the top-level `templates/`); JSON is the plan model itself plus a few derived fields for
readers (they are dropped again when a plan file is loaded).
"""
from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

from jinja2 import BaseLoader, Environment, FileSystemLoader, PackageLoader, StrictUndefined
from pydantic import ValidationError

from tablespec.errors import PlanError
from tablespec.hudi.table import Location
from tablespec.plan.actions import Plan
from tablespec.plan.clustering import describe_coverage
from tablespec.plan.saved import check_plan
from tablespec.plan.settings import display

FORMATS = ("text", "json", "markdown")
_SIZE = re.compile(r"\d+(KiB|MiB|GiB|TiB)")
_DERIVED_PLAN_KEYS = ("summary", "has_changes")
_DERIVED_ACTION_KEYS = ("symbol", "supported")  # "supported": written by plans before every kind ran


def template_loader() -> BaseLoader:
    """The templates (plans, the report): package data of `tablespec` (so a wheel install finds them), unless
    $TABLESPEC_TEMPLATES names a directory to load them from instead."""
    override = os.environ.get("TABLESPEC_TEMPLATES")
    return FileSystemLoader(override) if override else PackageLoader("tablespec", "templates")


@lru_cache(maxsize=1)
def _env() -> Environment:
    env = Environment(loader=template_loader(), undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
    env.filters["show"] = show_value
    return env


def show_value(value) -> str:
    """A setting value as plans print it: quoted strings, bare numbers and booleans, `(none)`."""
    if value is None:
        return "(none)"
    if isinstance(value, str) and (value.isdigit() or value in ("true", "false") or _SIZE.fullmatch(value)):
        return value
    return json.dumps(value, ensure_ascii=False)


def relative(path: str) -> str:
    if "://" in path:   # an object-store URI is shown as it is
        return path
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("../..") else rel


def _shown(change) -> SimpleNamespace:
    """A change with its values as the spec states them (sizes with units, key generator class names)
    and its symbol: `+` something added (no old value), `-` removed (no new value), `~` changed."""
    symbol = "+" if change.old is None else "-" if change.new is None else "~"
    return SimpleNamespace(path=change.path, property=change.property, symbol=symbol,
                           old=display(change.property, change.old), new=display(change.property, change.new))


def _view(plan: Plan) -> dict:
    tables = []
    for t in plan.tables:
        tables.append({
            "name": t.name, "location": relative(t.location), "source": f"{relative(t.spec_file)}:{t.spec_line}",
            "warnings": t.warnings,
            "coverage": describe_coverage(t.clustering_coverage) if t.clustering_coverage else None,
            "actions": [{"kind": a.kind, "symbol": a.symbol, "destructive": a.destructive,
                         "reasons": a.reasons, "changes": [_shown(c) for c in a.changes], "advice": a.advice,
                         **a.shown()} for a in t.actions],
        })
    catalog = (f"Catalog: the embedded metastore {relative(plan.default_catalog)} (the default: the project names "
               "no catalog)." if plan.default_catalog else None)
    return {"plan": plan, "tables": tables, "changed": [t for t in tables if t["actions"]],
            "summary": SimpleNamespace(**plan.summary()), "warehouse": relative(plan.warehouse), "catalog": catalog}


def render(plan: Plan, fmt: str) -> str:
    if fmt == "json":
        return render_json(plan)
    if fmt not in FORMATS:
        raise PlanError(f"unknown plan format {fmt!r}; choose one of {', '.join(FORMATS)}")
    name = {"text": "plan.txt.j2", "markdown": "plan.md.j2"}[fmt]
    return _env().get_template(name).render(**_view(plan))


def render_json(plan: Plan) -> str:
    data = plan.model_dump(mode="json")
    data["has_changes"] = plan.has_changes
    data["summary"] = plan.summary()
    if plan.default_catalog is None:   # present only where the default catalog registers tables
        del data["default_catalog"]
    for table, (t_model) in zip(data["tables"], plan.tables):
        if table["clustering_coverage"] is None:  # present only where a sorted layout is declared over data
            del table["clustering_coverage"]
        for action, a_model in zip(table["actions"], t_model.actions):
            action["symbol"] = a_model.symbol
    return json.dumps(data, indent=2, sort_keys=False) + "\n"


def load_plan(path: str, warehouse: Location | None = None) -> Plan:
    """Read a plan file written by `plan --out`; a malformed one is a PlanError naming the file, and
    so is one whose tables are not what their embedded specs say (`saved.check_plan`: invalid or
    edited specs, locations, a warehouse other than `warehouse` when given)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PlanError(f"{path}: plan file not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PlanError(f"{path}: not a readable plan file: {e}") from None
    if not isinstance(data, dict) or data.get("format_version") != Plan.model_fields["format_version"].default:
        raise PlanError(f"{path}: unsupported plan format version {data.get('format_version') if isinstance(data, dict) else '?'}")
    for key in _DERIVED_PLAN_KEYS:
        data.pop(key, None)
    tables = data.get("tables")
    for table in tables if isinstance(tables, list) else []:  # malformed shapes: pydantic reports them
        actions = table.get("actions") if isinstance(table, dict) else None
        for action in actions if isinstance(actions, list) else []:
            for key in _DERIVED_ACTION_KEYS if isinstance(action, dict) else ():
                action.pop(key, None)
    try:
        plan = Plan.model_validate(data)
    except ValidationError as e:  # the first problem on one line, not a traceback
        raise PlanError(f"{path}: invalid plan file: {_problem(data, e)}") from None
    check_plan(plan, path, warehouse)
    return plan


def _problem(data: dict, e: ValidationError) -> str:
    """A plan file's first invalid value, named by table, action (number and kind) and field:
    `table sales.orders: action 2 (bucket_rescale): params.partitions: Input should be a valid list (got "x")`."""
    err = e.errors()[0]
    loc, where = list(err["loc"]), []
    if loc[:1] == ["tables"] and len(loc) > 1 and isinstance(loc[1], int):
        table = data["tables"][loc[1]]
        where.append(f"table {table.get('name', loc[1] + 1) if isinstance(table, dict) else loc[1] + 1}")
        loc = loc[2:]
        if loc[:1] == ["actions"] and len(loc) > 1 and isinstance(loc[1], int):
            action = table["actions"][loc[1]]
            kind = action.get("kind") if isinstance(action, dict) else None
            where.append(f"action {loc[1] + 1}" + (f" ({kind})" if isinstance(kind, str) else ""))
            loc = loc[3:] if len(loc) > 2 and loc[2] == kind else loc[2:]  # the union's tag: the kind again
    field = ".".join(str(p) for p in loc)
    shown = json.dumps(err["input"], default=str)
    got = "" if err["type"] in ("missing", "extra_forbidden") else \
        f" (got {shown if len(shown) <= 60 else shown[:57] + '...'})"
    more = f" (and {e.error_count() - 1} more)" if e.error_count() > 1 else ""
    return ": ".join([*where, *([field] if field else []), err["msg"] + got]) + more


"""Plans as data: typed actions, each carrying the requirements it was planned against.

Apply re-observes every table and re-validates these requirements before touching anything;
that is the stale-plan check. The JSON form of these models is the plan file format.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tablespec.errors import StalePlanError

PLAN_FORMAT_VERSION = 1

ActionKind = Literal[
    "create_table", "update_settings", "index_migration", "bucket_bootstrap", "bucket_rescale",
    "schema_evolution", "replace_table", "rollback", "clean", "record_index_compaction", "clustering",
    "record_index_catch_up",
]
SYMBOLS = {"create_table": "+", "replace_table": "-/+"}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TableExists(_Frozen):
    type: Literal["table_exists"] = "table_exists"
    exists: bool

    def check(self, state) -> str | None:
        if state.exists != self.exists:
            return "the table was created since the plan was made" if state.exists else "the table no longer exists"
        return None


class HeadInstant(_Frozen):
    type: Literal["head_instant"] = "head_instant"
    head: str | None

    def check(self, state) -> str | None:
        if state.head != self.head:
            return f"its head instant moved from {self.head or 'none'} to {state.head or 'none'}"
        return None


class PropertiesFingerprint(_Frozen):
    type: Literal["properties_fingerprint"] = "properties_fingerprint"
    fingerprint: str | None

    def check(self, state) -> str | None:
        if state.properties_fingerprint != self.fingerprint:
            return "its hoodie.properties changed"
        return None


Requirement = Annotated[TableExists | HeadInstant | PropertiesFingerprint, Field(discriminator="type")]


def requirements_for(state) -> list:
    """What an action on this table assumes: the table as observed when planning."""
    reqs: list = [TableExists(exists=state.exists)]
    if state.exists:
        reqs += [HeadInstant(head=state.head), PropertiesFingerprint(fingerprint=state.properties_fingerprint)]
    return reqs


def check_requirements(requirements, state, table: str) -> None:
    problems = [p for r in requirements if (p := r.check(state))]
    if problems:
        raise StalePlanError(f"plan is stale for {table}: " + "; ".join(problems) + ". Run `tablespec plan` again.")


class Change(_Frozen):
    """One line of a plan: a setting or column going from old to new."""

    path: str
    old: Any = None
    new: Any = None
    property: str | None = None


class Action(_Frozen):
    kind: ActionKind
    destructive: bool = False
    reasons: list[str] = []
    changes: list[Change] = []
    params: dict[str, Any] = {}      # what the executor needs beyond the spec (e.g. index from/to)
    estimate: dict[str, Any] = {}    # from metadata only: partitions, file groups, bytes
    advice: list[str] = []           # doubtful but legal (e.g. bucket files far from the target size)

    @property
    def symbol(self) -> str:
        return SYMBOLS.get(self.kind, "~")


class TablePlan(_Frozen):
    name: str                      # database.name or name
    location: str                  # absolute table base path
    spec_file: str
    spec_document: int = 0
    spec_line: int = 1
    spec_digest: str
    spec: dict[str, Any]           # the desired spec (by alias), so a saved plan is self-contained
    observed: dict[str, Any]       # the state fingerprint: exists, properties, head
    requirements: list[Requirement] = []
    actions: list[Action] = []
    warnings: list[str] = []
    clustering_coverage: dict[str, Any] | None = None   # how much is laid out as declared (sorted layouts, data)

    @property
    def has_changes(self) -> bool:
        return bool(self.actions)


class Plan(_Frozen):
    format_version: int = PLAN_FORMAT_VERSION
    tablespec_version: str
    created_at: str
    warehouse: str
    variables: dict[str, Any] = {}   # template variables the specs were rendered with
    tables: list[TablePlan] = []

    @property
    def has_changes(self) -> bool:
        return any(t.has_changes for t in self.tables)

    @property
    def actions(self) -> list[tuple[TablePlan, Action]]:
        return [(t, a) for t in self.tables for a in t.actions]

    def summary(self) -> dict[str, int]:
        counts = {"create": 0, "update": 0, "replace": 0, "unchanged": 0}
        for t in self.tables:
            kinds = {a.kind for a in t.actions}
            if not kinds:
                counts["unchanged"] += 1
            elif "create_table" in kinds:
                counts["create"] += 1
            elif "replace_table" in kinds:
                counts["replace"] += 1
            else:
                counts["update"] += 1
        return counts

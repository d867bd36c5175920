"""The planner: a pure function from desired specs and observed states to a Plan."""
from __future__ import annotations

from datetime import UTC, datetime

from tablespec.errors import PlanError, SpecError, UnsupportedTableError
from tablespec.hudi.config import WRITTEN_1X_VERSION, table_index_type, unmanaged_layout, unwritable_version
from tablespec.hudi.keys import METADATA_RECORD_INDEX_ENABLE, TABLE_VERSION
from tablespec.hudi.mdt.record_index import RECORD_INDEX
from tablespec.hudi.private_index import FOLDER as PRIVATE_INDEX
from tablespec.hudi.services.upgrade import CREATED
from tablespec.hudi.services.upgrade import refusal as version_refusal
from tablespec.hudi.table import Location
from tablespec.plan.actions import (
    Action,
    Archive,
    ArchiveEstimate,
    BucketBootstrap,
    BucketEstimate,
    BucketRescale,
    BucketSwitch,
    CatalogName,
    CatalogSync,
    Change,
    Clean,
    CleanEstimate,
    CreateTable,
    DropMetadataPartitions,
    IndexBuildEstimate,
    IndexMigration,
    IndexSwitch,
    Instants,
    MetadataPartitions,
    NewTable,
    NoEstimate,
    Plan,
    RecordIndexBuild,
    ReplaceTable,
    RewriteEstimate,
    Rollback,
    SchemaEvolution,
    TablePlan,
    UpdateSettings,
    UpgradeEstimate,
    UpgradeTable,
    VersionChange,
    requirements_for,
)
from tablespec.plan.buckets import BucketLayout, sizing_warning, suggested_buckets
from tablespec.plan.clustering import clustering_actions, compacting, pending_runs, spec_coverage
from tablespec.plan.columns import ColumnChange, diff_columns, spec_columns
from tablespec.plan.compaction import compaction_actions, pending_notes, run_by_tablespec
from tablespec.plan.locations import occupied_message
from tablespec.plan.merge_on_read import (
    CONVERSION_REASON,
    back_to_copy_on_write,
    converts_in_place,
    merged_rewrite,
    upgrade_refusal,
)
from tablespec.plan.merge_on_read import REWRITES as MERGED_REWRITES
from tablespec.plan.metadata_table import (
    data_skipping_actions,
    expression_index_refusal,
    indexes_to_build,
    metadata_table_actions,
    rebuilt,
    secondary_index_refusal,
)
from tablespec.plan.settings import (
    HASH_FIELDS,
    LABEL_PREFIX,
    RECORD_LEVEL_BUCKETS,
    REGISTRY,
    SettingChange,
    desired_properties,
    diff_settings,
    display,
    effective,
    shapes_rows,
)
from tablespec.spec.diagnostics import Diagnostic
from tablespec.spec.loader import LoadedSpec
from tablespec.state import TableState
from tablespec.version import __version__
from tablespec.wording import counted


def display_name(spec) -> str:
    return f"{spec.metadata.database}.{spec.metadata.name}" if spec.metadata.database else spec.metadata.name


def plan_specs(specs: list[LoadedSpec], warehouse: Location, variables: dict | None = None,
               now: datetime | None = None, catalog=None) -> Plan:
    """Check where the specs put their tables, observe the tables and plan (what `plan` and `apply`
    run). Every refused location, takeover, non-empty directory, unmanaged table and timestamp
    partitioning its stored rows contradict is reported at once (SpecError)."""
    return plan_observed(specs, warehouse, variables, now, catalog)[0]


def plan_observed(specs: list[LoadedSpec], warehouse: Location, variables: dict | None = None,
                  now: datetime | None = None, catalog=None) -> tuple[Plan, dict[str, TableState]]:
    """`plan_specs`, and the states the plan was made from (by location): the `apply` that runs
    the plan right away reads through their handles instead of opening the tables again.
    `catalog` (a catalog.Catalog): where specs with a `catalog:` section are registered; it is
    read once per database they name."""
    from tablespec.plan.locations import location_problems, refusal
    from tablespec.state import observe_specs
    seen: dict = {}
    refusals: dict[str, str] = {}

    def check(location: Location) -> str | None:
        if why := refusal(warehouse, location, seen):
            refusals[location.uri] = why
        return why
    states = observe_specs(specs, warehouse, check)
    refused = location_problems(specs, warehouse, refusals)
    placed = [ls for ls in specs if all(ls is not bad for bad, _ in refused)]
    located = [(ls, states[warehouse.child(ls.spec.spec.location).uri]) for ls in placed]
    problems = [d for _, d in refused] + [d for ls, state in located
                                          for d in state_problems(ls, state) or stored_rows_problems(ls, state)]
    problems += catalog_problems(placed, catalog)
    if problems:
        raise SpecError(sorted(problems, key=lambda d: (d.file, d.line, d.col)))
    if catalog is not None:
        from dataclasses import replace

        from tablespec.catalog.sync import catalog_diffs
        diffs = catalog_diffs(catalog, [(ls.spec, state) for ls, state in located])
        states.update({location: replace(states[location], catalog=d) for location, d in diffs.items()})
    return build_plan(specs, states, warehouse, variables, now), states


def catalog_problems(specs: list[LoadedSpec], catalog) -> list[Diagnostic]:
    """A spec that asks to be registered in a project that names no catalog."""
    if catalog is not None:
        return []
    out = []
    for ls in specs:
        if ls.spec.spec.catalog is not None:
            line, col = ls.position("spec.catalog")
            out.append(Diagnostic(ls.file, line, col, "spec.catalog", "the project names no catalog to register the "
                                  "table in: set `catalog:` in tablespec.project.yaml or $TABLESPEC_CATALOG"))
    return out


def state_problems(loaded: LoadedSpec, state: TableState) -> list[Diagnostic]:
    """What the spec may not do to what is at its location: manage a table whose layout tablespec
    cannot write (virtual keys), take over a table of another name (a rename must say
    `metadata.renamedFrom`), or create a table over files already there."""
    spec = loaded.spec

    def at(path: str, message: str) -> Diagnostic:
        line, col = loaded.position(path)
        return Diagnostic(loaded.file, line, col, path, message)

    if not state.exists:
        if state.contents:
            return [at("spec.location", occupied_message(state.location, state.contents))]
        if spec.spec.table_type == MERGE_ON_READ and loaded.new_table_version != 6:
            return [at("spec.tableType", "tablespec creates the MERGE_ON_READ tables it writes: at table version 6 "
                                         f"(this spec: {loaded.new_table_version}); use "
                                         "COPY_ON_WRITE, or create the table with Apache Hudi and import it")]
        if loaded.new_table_version not in CREATED:
            path = "spec.tableVersion" if spec.spec.table_version else "spec"
            return [at(path, f"tablespec creates tables at Hudi table version {' or '.join(map(str, CREATED))}, not "
                             f"{loaded.new_table_version} (it reads and upgrades to version 8, and writes 6 and 9)")]
        return []
    if (why := unmanaged_layout(state.table_config)) is not None:
        return [at("spec.location", f"the table at {spec.spec.location!r} ({state.location}): {why}")]
    wanted = spec.spec.table_version
    if wanted is not None and (why := version_refusal(state.table_config.version, wanted)) is not None:
        return [at("spec.tableVersion", f"the table at {spec.spec.location!r} ({state.location}): {why}")]
    current = state.table_config.version
    if wanted not in (None, current) and state.table_config.table_type != spec.spec.table_type == MERGE_ON_READ:
        return [at("spec.tableType", f"the table at {spec.spec.location!r} ({state.location}): "
                                     f"{upgrade_refusal(current, wanted)}")]
    old, new, said = state.table_config.name, spec.metadata.name, spec.metadata.renamed_from
    if old == new or said == old:
        return []
    where = f"the table at {spec.spec.location!r} ({state.location})"
    if said is not None:
        return [at("metadata.renamedFrom", f"{where} is named {old!r}, not {said!r}; to rename it say "
                                           f"metadata.renamedFrom: {old}")]
    return [at("metadata.name", f"{where} is named {old!r}, the spec names {new!r}; to rename it say "
                                f"metadata.renamedFrom: {old}; to manage another table pick another location")]


def stored_rows_problems(loaded: LoadedSpec, state: TableState) -> list[Diagnostic]:
    """A spec's timestamp partitioning that the table's stored rows contradict, where hoodie.properties
    does not record it (reads a few base files: here, not in the pure planner)."""
    from tablespec.stored_paths import unconfirmed
    if (why := unconfirmed(loaded.spec, state)) is None:
        return []
    line, col = loaded.position("spec.partitioning.timestamp")
    return [Diagnostic(loaded.file, line, col, "spec.partitioning.timestamp", why)]


def build_plan(specs: list[LoadedSpec], states: dict[str, TableState], warehouse: Location,
               variables: dict | None = None, now: datetime | None = None) -> Plan:
    """Diff every spec against its table's observed state (`states` keyed by table location)."""
    located = [(ls, states[warehouse.child(ls.spec.spec.location).uri]) for ls in specs]
    problems = [d for ls, state in located for d in state_problems(ls, state)]
    if problems:
        raise SpecError(problems)
    tables = [plan_table(ls, state) for ls, state in located]
    return Plan(
        tablespec_version=__version__,
        created_at=(now or datetime.now(UTC)).isoformat(timespec="seconds"),
        warehouse=warehouse.uri,
        variables=dict(variables or {}),
        tables=tables,
    )


def _beat(state: TableState, instant) -> str:
    if instant.timestamp not in state.heartbeat_ages:
        return ""
    age = state.heartbeat_ages[instant.timestamp]
    return ", no heartbeat" if age is None else f", heartbeat {age:.0f}s ago"


MERGE_ON_READ = "MERGE_ON_READ"
# What plan and apply do on a merge-on-read table (versions 6 and 9): its settings, its catalog entry,
# compaction (scheduled and run by tablespec, or left to Hudi's writers / `run_compaction`), clean
# (file slices with their log files), archiving (deltacommits and compactions), clustering (slices
# read merged with their log files, RFC-19), rollback (of dead writes, which every apply's lock
# recovers anyway, and of clustering plans that can no longer run), and index changes: bucket
# bootstrap / rescale (slices read merged), SIMPLE <-> BLOOM and the record index build
# (plan/merge_on_read.py).
MERGE_ON_READ_ACTIONS = frozenset({"update_settings", "catalog_sync", "compaction", "clean", "archive",
                                   "clustering", "rollback"}) | MERGED_REWRITES
# The upgrades tablespec runs on merge-on-read tables, by version: 8 -> 9 changes hoodie.properties only
# (log files, their blocks and pending compaction plans are the same on both versions).
MERGE_ON_READ_UPGRADES = {8: {"upgrade_table"}}


def unmanaged(spec, state: TableState) -> str | None:
    """Why tablespec does not manage the existing table at the spec's location (its type, virtual
    keys), or None: the one line plan, apply and writes refuse it with."""
    config = state.table_config
    if config.table_type not in ("COPY_ON_WRITE", MERGE_ON_READ):
        return (f"{state.location}: table {display_name(spec)} is a {config.table_type} table; "
                "tablespec manages COPY_ON_WRITE and MERGE_ON_READ tables")
    if config.table_type == MERGE_ON_READ and spec.spec.table_type != MERGE_ON_READ:
        return back_to_copy_on_write(state.location, display_name(spec))
    if (why := unmanaged_layout(config)) is not None:
        return f"{state.location}: table {display_name(spec)}: {why}"
    return None


def write_refusal(spec, state: TableState) -> str | None:
    """Why a write (`tablespec ingest`, `Table.write`) must not commit into the table as observed,
    or None. A function of the spec and the observed state only: writers ask it before they change
    anything (recovery, dropping metadata partitions), and again where the table changed since.
    Drift in a setting that does not change where or how rows are written (names, labels,
    housekeeping: settings.shapes_rows) does not stop a write."""
    if not state.exists:
        return (f"table {display_name(spec)} does not exist at {state.location}; "
                "run `tablespec plan` and `tablespec apply` first")
    if (why := unmanaged(spec, state)) is not None:
        return why
    if state.table_config.table_type == MERGE_ON_READ and (why := _unwritable_merge_on_read(spec, state)):
        return f"table {display_name(spec)} at {state.location} is a MERGE_ON_READ table: {why}"
    if (why := unwritable_version(state.table_config)) is not None:
        return f"table {display_name(spec)} at {state.location}: {why}"
    if state.pending_restore is not None:
        return state.pending_restore.refusal(state.location)
    if (why := expression_index_refusal(spec, state) or secondary_index_refusal(spec, state)) is not None:
        return why
    pending = [a for a in table_actions(spec, state)
               if not (isinstance(a, UpdateSettings) and not any(shapes_rows(c.property) for c in a.changes))]
    if pending:
        return (f"table {display_name(spec)} does not match its spec ({', '.join(a.kind for a in pending)} pending); "
                "run `tablespec plan` and `tablespec apply` first")
    return None


# table versions tablespec writes deltacommits into, with every index type (BUCKET, SIMPLE, BLOOM, RECORD_LEVEL)
MERGE_ON_READ_WRITES = (6, 9)


def unwritable_merge_on_read(version: int) -> str | None:
    """Why tablespec does not write deltacommits into a merge-on-read table of this version, or None:
    it writes them on MERGE_ON_READ_WRITES (a bucket's changes to a log file of its file group; SIMPLE,
    BLOOM and RECORD_LEVEL: updates and deletes to a log file of the key's file group, inserts to base
    files)."""
    if version in MERGE_ON_READ_WRITES:
        return None
    return (f"tablespec writes deltacommits on table versions {' and '.join(map(str, MERGE_ON_READ_WRITES))} "
            f"(this one: version {version})")


def _unwritable_merge_on_read(spec, state: TableState) -> str | None:
    """Why tablespec does not write deltacommits into this merge-on-read table, or None: not at a
    version it does not write them on, and not while a compaction is pending (version 6 names new
    log files by its instant), unless the spec gives compaction to tablespec: then the writer runs
    the pending plan first (one its own housekeeping left when killed, too)."""
    if (why := unwritable_merge_on_read(state.table_config.version)) is not None:
        return f"{why}; write it with Apache Hudi"
    pending = [i.timestamp for i in state.pending if i.action == "compaction"]
    if pending and not run_by_tablespec(spec):
        return (f"compaction {', '.join(pending)} is pending; tablespec writes deltacommits once it has run "
                "(Apache Hudi's `run_compaction`, or `tablespec apply` with the spec's compaction runBy: tablespec)")
    return None


def plan_table(loaded: LoadedSpec, state: TableState) -> TablePlan:
    spec = loaded.spec
    if state.exists and (why := unmanaged(spec, state)) is not None:  # a saved plan's table, too
        raise UnsupportedTableError(why)
    if state.exists and state.pending_restore is not None:
        raise PlanError(state.pending_restore.refusal(state.location))
    if (upgrade := _upgrade(spec, state)) is not None:   # the table at its new version first
        actions = [upgrade, *table_actions(spec, state)]
    else:
        actions = table_actions(spec, state, loaded.new_table_version)
    if state.expired:
        listed = ", ".join(f"{i.timestamp}.{i.action}" for i in state.expired)
        actions.insert(0, Rollback(reasons=[f"writes whose writer died (heartbeat expired): {listed}"],
                                   params=Instants(instants=[i.timestamp for i in state.expired])))
    at = 1 if state.expired else 0   # after the rollback of dead writes (a build needs no pending instant)
    if upgrade is not None:   # housekeeping waits for the table at its new version (the next plan)
        return _table_plan(loaded, state, actions, [])
    switching = any(a.kind in ("index_migration", "replace_table", "bucket_bootstrap") for a in actions)
    drops = metadata_table_actions(state, indexes_to_build(spec, state)) + data_skipping_actions(spec, state)
    actions[at:at] = _merged_drops(drops + ([] if switching else _record_index_dropped(spec, state)))
    cleanable = state.cleanable.get(spec.spec.retention.keep_commits) if state.exists else None
    if cleanable and not any(a.destructive for a in actions):
        clean = CleanEstimate.model_validate(cleanable)
        actions.append(Clean(estimate=clean, reasons=[
            f"{clean.files} file version(s) older than the {spec.spec.retention.keep_commits} retained commits "
            f"(earliest retained {clean.earliest_instant_to_retain})"]))
    archivable = state.archivable.get(spec.archive_settings) if state.exists else None
    if archivable and not any(a.destructive for a in actions):
        estimate = ArchiveEstimate.model_validate(archivable)
        actions.append(Archive(estimate=estimate, reasons=[
            f"{estimate.active_commits} completed commits on the active timeline, more than "
            f"retention.archive.maxCommits ({spec.archive_settings.max_commits}); no action or write archived them"]))
    warnings = []
    if all(a.housekeeping for a in actions):
        actions += clustering_actions(spec, state)  # housekeeping: only on a table that matches its spec
        compactions, waiting = compaction_actions(spec, state)
        actions += compactions
        warnings += waiting
    elif state.exists and (runs := pending_runs(state)):  # a pending plan runs before the table is rewritten
        at = next(i for i, a in enumerate(actions) if not a.housekeeping)
        actions[at:at] = runs
    if spec.catalog_name is not None and state.catalog is not None and (actions or not state.catalog.in_sync):
        actions.append(catalog_action(state.catalog, bool(actions)))
    if state.exists and unwritable_version(state.table_config) is not None:
        actions, waiting = _after_upgrade(actions, state)
        warnings += waiting
    live = [i for i in state.pending if i not in state.expired and i.action != "compaction"  # noted below
            and not (i.state == "requested" and i in state.pending_clustering)]  # scheduled plans are actions
    if live:
        listed = ", ".join(f"{i.timestamp}.{i.action} ({i.state}{_beat(state, i)})" for i in live)
        warnings.append(f"other writers' pending instants: {listed}; a writer is running, or crashed less than "
                        "the heartbeat tolerance ago. Their commits are checked against ours at commit time")
    warnings += pending_notes(state, spec) if state.exists else []
    warnings += [f"locked: {holder}" for holder in state.lock_holders]
    return _table_plan(loaded, state, actions, warnings)


# Actions the table's state makes due (not a change its spec asks for).
MAINTENANCE = frozenset({"rollback", "clean", "archive", "clustering", "compaction", "build_metadata_table",
                         "drop_metadata_partitions", "build_data_skipping"})


def _after_upgrade(actions: list[Action], state: TableState) -> tuple[list[Action], list[str]]:
    """On a table at a version tablespec reads only (8), apply runs the upgrade alone: the
    maintenance that is due waits for it, in a warning (a change the spec asks for stays in the
    plan, and apply refuses it in one line naming the version)."""
    waiting = [a.kind for a in actions if a.kind in MAINTENANCE]
    if not waiting:
        return actions, []
    version = state.table_config.version
    return [a for a in actions if a.kind not in MAINTENANCE], [
        f"table version {version}: {', '.join(dict.fromkeys(waiting))} wait(s) for the upgrade to version "
        f"{WRITTEN_1X_VERSION}, which comes first (set spec.tableVersion: {WRITTEN_1X_VERSION}); tablespec runs "
        f"nothing else on version {version} tables"]


def _merge_on_read_actions(actions: list[Action], state: TableState) -> tuple[list[Action], list[str]]:
    """The actions tablespec runs on a merge-on-read table (MERGE_ON_READ_ACTIONS), and a warning
    for the housekeeping it leaves to Hudi's writers; UnsupportedTableError, one line, for a change
    of the table's data or layout, which would need its log files merged."""
    runs = MERGE_ON_READ_ACTIONS | MERGE_ON_READ_UPGRADES.get(state.table_config.version, set())
    actions = [merged_rewrite(a, state) if a.kind in MERGED_REWRITES else a for a in actions]
    changing = [a.kind for a in actions if a.kind not in runs and not a.housekeeping]
    if changing:
        raise UnsupportedTableError(
            f"{state.location}: the spec asks for {', '.join(dict.fromkeys(changing))} on a MERGE_ON_READ table; "
            "tablespec does not rewrite merge-on-read tables yet (it reads, imports and plans them): change the "
            "table with Apache Hudi, or the spec to match it")
    left = [a.kind for a in actions if a.kind not in runs]
    warnings = [f"MERGE_ON_READ table: {', '.join(dict.fromkeys(left))} left to Apache Hudi's writers "
                "(on merge-on-read tables tablespec runs compaction, clustering, clean, archiving and rollback)"] if left else []
    if skipped := compacting(state) & {(fg.partition, fg.file_id) for fg in state.file_groups}:
        if any(a.kind == "clustering" for a in actions):
            warnings.append(f"{counted(len(skipped), 'file group')} under a pending compaction are not clustered "
                            "until it completes (RFC-19)")
    return [a for a in actions if a.kind in runs], warnings


def _table_plan(loaded: LoadedSpec, state: TableState, actions: list[Action], warnings: list[str]) -> TablePlan:
    spec = loaded.spec
    if state.exists and state.table_config.table_type == MERGE_ON_READ:
        actions, left = _merge_on_read_actions(actions, state)
        warnings = warnings + left
    return TablePlan(
        name=display_name(spec),
        location=state.location,
        spec_file=loaded.file,
        spec_document=loaded.document,
        spec_line=loaded.line,
        spec_digest=loaded.digest,
        spec=spec.model_dump(mode="json", by_alias=True, exclude_none=True),
        observed=state.fingerprint(),
        requirements=requirements_for(state),
        actions=actions,
        warnings=warnings,
        clustering_coverage=spec_coverage(spec, state),
    )


def catalog_action(d, after_actions: bool) -> CatalogSync:
    """The catalog sync of a registered table (`d`: a catalog.diff.CatalogDiff), last of its actions."""
    name = d.desired.name
    if d.replace:
        reasons = [f"the catalog's {name} has other partition keys: it is dropped and registered again"]
    elif d.register:
        reasons = [f"{name} is not in the catalog: it is registered as Hudi's sync would"]
    elif not d.in_sync:
        reasons = [f"the catalog's {name} differs from the table"]
    else:
        reasons = []
    if after_actions:
        reasons.append(f"after the actions above, {name} is synced with the table as they leave it")
    changes = [Change(path=path, old=old, new=new) for path, old, new in d.lines()]
    return CatalogSync(params=CatalogName(database=d.desired.database, table=d.desired.table),
                       destructive=d.destructive, reasons=reasons, changes=changes)


def _upgrade(spec, state: TableState) -> UpgradeTable | None:
    """The table to the spec's Hudi table version (state_problems refused what tablespec does not
    do), or the end of an upgrade that stopped after its switch."""
    if not state.exists:
        return None
    current, wanted = state.table_config.version, spec.spec.table_version or state.table_config.version
    if wanted == current:
        if not state.upgrade_leftovers:
            return None
        return UpgradeTable(params=VersionChange(from_=current, to=current), reasons=[
            f"an upgrade to table version {current} stopped after switching hoodie.properties: "
            f"{state.upgrade_leftovers} version-6 instant file(s) left in .hoodie/ are deleted"])
    change = [Change(path="spec.tableVersion", property=TABLE_VERSION.name, old=str(current), new=str(wanted))]
    if current == 8:
        return UpgradeTable(params=VersionChange(from_=current, to=wanted), estimate=UpgradeEstimate(instants=0, archive_files=0),
                            changes=change, reasons=[
            "table version 8 -> 9 (Apache Hudi 1.1+), as Hudi's upgrade does it: hoodie.properties names the "
            "ordering field and the legacy payload class with their version-9 keys; the timeline, its history, "
            "log files, pending compaction plans and the metadata table stay as they are. No data file is rewritten"])
    work = state.upgrade_work
    return UpgradeTable(
        params=VersionChange(from_=current, to=wanted),
        estimate=UpgradeEstimate(instants=work.instants, archive_files=work.archive_files),
        changes=change,
        reasons=[f"table version {current} -> {wanted} (Apache Hudi {'1.0' if wanted == 8 else '1.1+'}), as Hudi's "
                 f"upgrade does it: the timeline moves to .hoodie/timeline/ (completion times, Avro commit "
                 f"metadata), the archived timeline is copied into the LSM history, hoodie.properties gains the "
                 f"{wanted}-only keys; Hudi's metadata table, if any, is deleted (a Hudi 1.x writer with it on "
                 f"builds a version-{wanted} one). No data file is rewritten"])


def table_actions(spec, state: TableState, version: int = 6) -> list[Action]:
    if not state.exists:
        return [_create(spec, version)]
    settings = diff_settings(spec, state.table_config.to_properties())
    columns = diff_columns(spec_columns(spec), [(c.name, c.type, c.nullable) for c in state.columns]) if state.columns else []
    converting = [s for s in settings if converts_in_place(s, spec.spec.table_version or state.table_config.version)]
    destructive = [s for s in settings if s.category == "key" and s not in converting] + [c for c in columns if c.destructive]
    renames = [s for s in settings if s.path == "metadata.name"]
    if destructive:
        return [_replace(destructive, columns, settings, renames, state)]
    actions: list[Action] = []
    index = [s for s in settings if s.category == "index"]
    if index:
        actions.append(_index_action(index, state, spec))
    else:
        actions += _record_index_build(spec, state)
    evolutions = [c for c in columns if not c.destructive]
    if evolutions:
        actions.append(SchemaEvolution(reasons=[c.describe() for c in evolutions],
                                       changes=[_change(c) for c in evolutions]))
    rest = converting + [s for s in settings if s.category == "settings"]
    if index:  # an index action writes every managed property: the index's own tuning goes with it
        tuning = [s for s in rest if s.path.startswith("spec.index.")]
        actions[0].changes.extend(_change(s) for s in tuning)
        rest = [s for s in rest if s not in tuning]
    if rest:
        actions.append(UpdateSettings(reasons=[CONVERSION_REASON] * bool(converting) + [_rename(s) for s in rest if s in renames],
                                      changes=[_change(s) for s in rest]))
    return actions


def _replace(destructive: list, columns: list[ColumnChange], settings: list[SettingChange],
             renames: list[SettingChange], state: TableState) -> ReplaceTable:
    """One rewrite under the whole spec: it carries every other change too (added or widened
    columns, index and settings, a rename), so the plan shows them all, the destructive ones first."""
    evolutions = [c for c in columns if not c.destructive]
    carried = evolutions + [s for s in settings if s.category != "key"]
    return ReplaceTable(reasons=[_reason(d) for d in destructive] + [c.describe() for c in evolutions]
                        + [_rename(s) for s in renames],
                        changes=[_change(d) for d in destructive + carried],
                        estimate=_rewrite_estimate(state))


def _create(spec, version: int = 6) -> CreateTable:
    props = desired_properties(spec)
    changes = [Change(path=s.path, property=s.prop, new=props[s.prop]) for s in REGISTRY
               if s.prop in props and not s.derived]
    changes += [Change(path="metadata.labels." + k[len(LABEL_PREFIX):], property=k, new=v)
                for k, v in props.items() if k.startswith(LABEL_PREFIX)]
    changes += [Change(path=f"spec.columns.{c.name}", new=c.type + ("" if c.nullable else " not null"))
                for c in spec.spec.columns]
    if version == 6:
        return CreateTable(changes=changes)
    changes.insert(0, Change(path="spec.tableVersion", property=TABLE_VERSION.name, new=str(version)))
    return CreateTable(changes=changes, params=NewTable(table_version=version))


def _index_action(index: list[SettingChange], state: TableState, spec) -> Action:
    by_prop = {s.prop: s for s in index}
    props = state.table_config.to_properties()
    old_type, new_type = table_index_type(props), spec.spec.index.type
    changes = [_change(s) for s in index]
    params = IndexSwitch(from_=old_type, to=new_type)
    if new_type == "BUCKET":
        return _bucket_action(old_type, by_prop, state, spec, changes, params)
    built = RECORD_INDEX in state.metadata_table.partitions
    if new_type == "RECORD_LEVEL" and old_type != "RECORD_LEVEL" and built and RECORD_LEVEL_BUCKETS not in by_prop:
        return IndexMigration(reasons=[f"index {old_type} -> RECORD_LEVEL: the metadata table has Hudi's record index "
                                       "already (Hudi's writers built it); hoodie.properties records it, no build"]
                              + _private_index_reason(state), changes=changes, params=params)
    if new_type == "RECORD_LEVEL" and (old_type != "RECORD_LEVEL" or RECORD_LEVEL_BUCKETS in by_prop):
        why = (f"index {old_type} -> RECORD_LEVEL builds Apache Hudi's record index (the metadata table's "
               "record_index partition) from the table's keys" if old_type != "RECORD_LEVEL" else
               "the record index's file-group count (numBuckets) changes: Hudi's record index is rebuilt")
        return IndexMigration(reasons=[why] + _private_index_reason(state), changes=changes, params=params,
                              estimate=_index_build_estimate(state))
    if old_type == "RECORD_LEVEL":
        return IndexMigration(reasons=[f"index RECORD_LEVEL -> {new_type}: configuration only; the metadata "
                                       "table's record_index partition is dropped, as Apache Hudi 0.15's writers "
                                       "drop it when the record index is off"],
                              changes=changes, params=params)
    return IndexMigration(reasons=[f"index {old_type} -> {new_type}: configuration only, no data rewrite"],
                          changes=changes, params=params)


def _index_build_estimate(state: TableState) -> IndexBuildEstimate:
    """A record index build reads every key (the key column of every latest base file)."""
    read = _rewrite_estimate(state)
    return IndexBuildEstimate(rows="unknown" if state.rows is None else state.rows, partitions=read.partitions,
                              file_groups=read.file_groups, bytes_to_read=read.bytes_to_read)


def _private_index_reason(state: TableState) -> list[str]:
    return [f"tablespec's private index ({PRIVATE_INDEX}), which no Hudi reader or writer uses, is removed once "
            "Hudi's record index serves"] if state.private_index else []


def _record_index_build(spec, state: TableState) -> list[Action]:
    """RECORD_LEVEL: build Hudi's record index where the metadata table lacks it (Hudi wrote with
    it off, a table whose metadata table was just built), migrate a table with tablespec's
    private index. Version 8 tables (read only) keep what their Hudi writers keep."""
    if spec.spec.index.type != "RECORD_LEVEL" or state.table_config.version == 8:
        return []
    built = RECORD_INDEX in state.metadata_table.partitions and RECORD_INDEX not in rebuilt(state)
    if built and not state.private_index:
        return []
    reasons = [] if built else [
        "migrates tablespec's private record-level index to Apache Hudi's record index (the metadata table's "
        "record_index partition), built from the table's keys" if state.private_index else
        "rebuilds Hudi's record index from the table's keys: the metadata table's record_index partition is "
        "dropped as damaged" if RECORD_INDEX in rebuilt(state) else
        "the metadata table has no record_index partition (Hudi wrote the table without "
        f"{METADATA_RECORD_INDEX_ENABLE.name}): Hudi's record index is built from the table's keys"]
    return [RecordIndexBuild(reasons=reasons + _private_index_reason(state),
                             estimate=NoEstimate() if built else _index_build_estimate(state))]


def _merged_drops(actions: list) -> list:
    """One drop_metadata_partitions action for all the partitions dropped (each once: a damaged one may be
    undeclared too), first."""
    drops = [a for a in actions if isinstance(a, DropMetadataPartitions)]
    if len(drops) < 2:
        return actions
    partitions = list(dict.fromkeys(p for d in drops for p in d.params.partitions))
    merged = DropMetadataPartitions(params=MetadataPartitions(partitions=partitions),
                                    reasons=[r for d in drops for r in d.reasons])
    return [merged] + [a for a in actions if not isinstance(a, DropMetadataPartitions)]


def _record_index_dropped(spec, state: TableState) -> list[Action]:
    """Not RECORD_LEVEL, but the metadata table has a record index (Hudi wrote it, or an apply
    stopped after switching away): dropped, as Hudi 0.15's writers with the record index off do."""
    if (not state.exists or spec.spec.index.type == "RECORD_LEVEL" or state.table_config.version == 8
            or RECORD_INDEX not in state.metadata_table.partitions):
        return []
    return [DropMetadataPartitions(params=MetadataPartitions(partitions=[RECORD_INDEX]), reasons=[
        f"the table's index is {spec.spec.index.type}, and its metadata table has a record index: Apache Hudi "
        f"0.15's writers with {METADATA_RECORD_INDEX_ENABLE.name}=false drop it too; a switch to RECORD_LEVEL "
        "builds it again"])]


def rebucket_partitions(spec, state: TableState) -> list[str]:
    """Partitions whose data must be rewritten to reach the spec's bucket layout."""
    props = state.table_config.to_properties()
    old = BucketLayout.from_properties(props)
    new = BucketLayout.of_bucket_spec(spec)
    with_data = sorted({fg.partition for fg in state.file_groups})
    if old is None or effective(props, HASH_FIELDS) != ",".join(spec.effective_hash_fields):
        return with_data
    return [p for p in with_data if old.buckets_for(p) != new.buckets_for(p)]


def _bucket_action(old_type: str, by_prop: dict, state: TableState, spec, changes: list[Change],
                   index: IndexSwitch) -> BucketBootstrap | BucketRescale:
    partitions = rebucket_partitions(spec, state)
    layout = BucketLayout.of_bucket_spec(spec)
    target = spec.spec.clustering.target_file_size
    part_bytes = {p: 0 for p in partitions}
    for fg in state.file_groups:
        if fg.partition in part_bytes:
            part_bytes[fg.partition] += fg.size + fg.log_bytes   # merge-on-read: slices are read merged
    sizes = [part_bytes[p] // layout.buckets_for(p) for p in partitions]
    estimate = BucketEstimate(
        partitions=len(partitions),
        file_groups=f"{sum(1 for fg in state.file_groups if fg.partition in part_bytes)} -> "
                    f"{sum(layout.buckets_for(p) for p in partitions)}",
        bytes_to_read=sum(part_bytes.values()),
        bytes_to_write=sum(part_bytes.values()),
        bucket_file_bytes=sum(sizes) // len(sizes) if partitions else None,
        suggested_num_buckets=suggested_buckets(max(part_bytes.values()), target) if partitions else None,
    )
    advice = [w] if (w := sizing_warning(part_bytes, layout, target)) else []
    params = BucketSwitch(from_=index.from_, to=index.to, partitions=partitions)
    if old_type != "BUCKET":
        reason = f"index {old_type} -> BUCKET rewrites {len(partitions)} partition(s) into bucket file groups"
        return BucketBootstrap(reasons=[reason], changes=changes, params=params, estimate=estimate, advice=advice)
    reason = (f"bucket layout changes: {len(partitions)} partition(s) rewritten" if partitions else
              "bucket layout changes for no existing partition: configuration only")
    return BucketRescale(reasons=[reason], changes=changes, params=params, estimate=estimate, advice=advice)


def _rewrite_estimate(state: TableState) -> RewriteEstimate:
    return RewriteEstimate(partitions=len({fg.partition for fg in state.file_groups}),
                           file_groups=len(state.file_groups), bytes_to_read=state.total_bytes,
                           bytes_to_write=state.total_bytes)


def _rename(s: SettingChange) -> str:
    return f"rename {s.old} -> {s.new} (metadata.renamedFrom)"


def _reason(d: SettingChange | ColumnChange) -> str:
    if isinstance(d, ColumnChange):
        return d.describe()
    what = {"spec.tableType": "table type", "spec.recordKey.fields": "record key",
            "keyGenerator": "key generator", "spec.partitioning.fields": "partition fields",
            "spec.partitioning.hiveStyle": "partition path style",
            "spec.partitioning.urlEncode": "partition path encoding"}.get(d.path, d.path)
    return f"{what} changes from {display(d.prop, d.old) or 'none'} to {display(d.prop, d.new) or 'none'}"


def _change(d: SettingChange | ColumnChange) -> Change:
    if isinstance(d, ColumnChange):
        return Change(path=f"spec.columns.{d.name}", old=d.old, new=d.new)
    return Change(path=d.path, property=d.prop, old=d.old, new=d.new)

"""Apply: check a plan against the live tables, then run its actions in order.

A plan, saved or not, is checked, not trusted: each table's actions are derived again from its
(embedded) spec against the live table, and the plan is refused unless they are the ones it
holds (`saved.mismatch`); the derived actions are the ones that run, and destructiveness and
protection (the spec's and the table's own `preventDestroy`) are decided from them. Nothing is
touched until every table passes (`preflight`), and each table is checked once more under its
lock right before its actions run. Dispatch is by action kind (`EXECUTORS`: every kind has one,
each returning its typed result).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tablespec.actions import metadata, schema
from tablespec.engine.commit import locked, table_lock
from tablespec.errors import PlanError, StalePlanError
from tablespec.hudi.archive import housekeep
from tablespec.hudi.config import RECORD_LEVEL, WRITTEN_1X_VERSION, table_index_type, unwritable_version
from tablespec.hudi.layout_switch import SWITCHED_KEY
from tablespec.hudi.mdt.layout import FILES
from tablespec.hudi.services.rollback import rollback
from tablespec.hudi.table import HudiTable, Location, StorageOptions
from tablespec.hudi.timeline.active import Timeline
from tablespec.hudi.timeline.instant import COMPACTION, Instant, plan_action
from tablespec.hudi.timeline.lock import TableLock
from tablespec.plan.actions import (
    KINDS,
    Action,
    ActionKind,
    Archive,
    BucketBootstrap,
    BucketRescale,
    BuildDataSkipping,
    BuildMetadataTable,
    CatalogSync,
    Clean,
    Clustering,
    Compaction,
    CreateTable,
    DiscardPlans,
    DropMetadataPartitions,
    IndexMigration,
    Plan,
    RecordIndexBuild,
    ReplaceTable,
    Rollback,
    SchemaEvolution,
    TablePlan,
    UpdateSettings,
    UpgradeTable,
    check_requirements,
)
from tablespec.plan.builder import plan_table
from tablespec.plan.compaction import compaction_actions
from tablespec.plan.locations import refusal
from tablespec.plan.saved import NOTHING_CHANGED, embedded_spec, mismatch
from tablespec.plan.settings import PREVENT_DESTROY, effective
from tablespec.results import (
    ActionOutcome,
    Archived,
    CatalogSynced,
    Cleaned,
    Clustered,
    Compacted,
    DataSkippingBuilt,
    IndexDropped,
    IndexResult,
    MetadataBuilt,
    MetadataDropped,
    NoResult,
    Rebucketed,
    Replaced,
    RolledBack,
    Upgraded,
)
from tablespec.spec.loader import LoadedSpec, load_specs
from tablespec.spec.model import TableSpec
from tablespec.state import TableState, observe

# What apply runs on a version 9 table (its metadata table's `files` partition kept, the partitions
# tablespec does not keep dropped): each checked end to end against Apache Hudi 1.2
# (tests/interop/test_hudi_1x_writes.py, test_hudi_1x_metadata_table.py, test_hudi_1x_partition_buckets.py,
# test_hudi_1x_actions.py, test_hudi_1x_metadata_table_housekeeping.py, test_hudi_1x_archive.py;
# catalog_sync: tests/catalog/test_catalog_v9.py; compaction: test_hudi_1x_compaction_plans.py);
# RECORD_LEVEL's record index as Hudi 1.2 keeps it
# (test_hudi_1x_record_index.py).
VERSION_9_ACTIONS = frozenset({"update_settings", "clean", "clustering", "rollback", "bucket_rescale",
                               "drop_metadata_partitions", "schema_evolution", "bucket_bootstrap",
                               "index_migration", "replace_table", "build_metadata_table", "archive", "catalog_sync",
                               "record_index_build", "compaction", "build_data_skipping"})
# Actions that build a RECORD_LEVEL table's record index (which needs the metadata table's files partition).
RECORD_INDEX_BUILDS = frozenset({"index_migration", "bucket_bootstrap", "replace_table", "record_index_build"})


@dataclass
class ActionResult:
    table: str
    kind: ActionKind
    seconds: float
    actual: ActionOutcome = field(default_factory=NoResult)   # what happened, next to the action's estimate


@dataclass
class ApplyResult:
    actions: list[ActionResult] = field(default_factory=list)
    done_meanwhile: list[str] = field(default_factory=list)  # tables another writer brought to their spec first
    archived: dict[str, int] = field(default_factory=dict)   # table -> instants housekeeping archived

    def summary(self) -> str:
        kinds = [a.kind for a in self.actions]
        created = kinds.count("create_table")
        text = (f"Apply complete: {created} created, {len(kinds) - created} other action"
                f"{'s' if len(kinds) - created != 1 else ''} applied.")
        if self.done_meanwhile:
            text += (f" Already as specified when their lock was free (another apply made the change): "
                     f"{', '.join(self.done_meanwhile)}.")
        if self.archived:
            text += " Archived " + ", ".join(f"{n} instant(s) of {t}" for t, n in self.archived.items()) + "."
        return text


def sync_table(catalog, spec: TableSpec, state: TableState, allow_drop: bool = False) -> CatalogSynced:
    """Bring `spec`'s catalog entry to the table as `state` shows it (read once more, as it is now)."""
    from tablespec.catalog.sync import catalog_diffs
    change = catalog_diffs(catalog, [(spec, state)], completion=True)[state.location]
    if change.destructive and not allow_drop:
        raise PlanError(f"{change.desired.name}: the catalog table must be dropped and registered again (its "
                        "partition keys differ), which the plan did not allow; run `tablespec plan` again")
    catalog.sync(change)
    return CatalogSynced(registered=int(change.register or change.replace), properties=len(change.properties),
                         columns_changed=int(bool(change.columns)), partitions_added=len(change.add_partitions),
                         partitions_dropped=len(change.drop_partitions))


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


def current(t: TablePlan, table: HudiTable, seen: TableState | None = None) -> tuple[LoadedSpec, TableState]:
    """A table plan's embedded spec, and its table (the handle's state; observed as the planner does).

    `seen` (under the table's lock, taken since): the table's state as observed through `table` at
    the handle's current generation. It is the state again when one listing of .hoodie/ and one
    read of hoodie.properties show nothing changed since (the generation stays: same instants,
    folders and properties, so the same head, fingerprint and files) and no write was pending
    then (its heartbeat may have expired since); otherwise the table is observed anew."""
    loaded = embedded_spec(t)
    if seen is not None:
        if seen.exists and not seen.pending and seen.table is table:
            generation = table.generation
            table.fresh_timeline()
            table.fresh_config()
            if table.generation == generation:
                return loaded, seen
        else:
            table.refresh()
    return loaded, observe(table, keep_commits=loaded.spec.spec.retention.keep_commits,
                           archive=loaded.spec.archive_settings)


def check_table(t: TablePlan, loaded: LoadedSpec, state: TableState, allow_destructive: bool = False,
                done_meanwhile: bool = False) -> TablePlan:
    """`t` as it runs now: planned again from its spec against `state`, the live table. Raises
    (nothing changed) if the table changed since the plan was made, if the result is not the plan's,
    or if one of its actions is destructive and not allowed. With `done_meanwhile` (checked after
    waiting for the table's lock), a table that needs nothing any more because another apply made the
    same change comes back without actions instead."""
    now = plan_table(loaded, state)
    if not any(a.kind == "catalog_sync" for a in now.actions):  # the state read here knows no catalog: the plan's
        carried = [a for a in t.actions if a.kind == "catalog_sync"]   # sync runs from the table and catalog as they are then
        now = now.model_copy(update={"actions": [*now.actions, *carried]}) if carried else now
    if done_meanwhile and not now.actions:
        return now
    check_requirements(t.requirements, state, t.name)
    why = mismatch(t, now)
    if why:
        raise StalePlanError(f"the plan no longer matches table {t.name}: {why}; {NOTHING_CHANGED}")
    protected = loaded.spec.spec.protection.prevent_destroy or _protected(state)
    for a in now.actions:
        if a.destructive and protected:
            raise PlanError(f"{t.name}: {a.kind} is destructive ({'; '.join(a.reasons)}) and the table has "
                            "protection.preventDestroy set; nothing was changed")
        if a.destructive and not allow_destructive:
            raise PlanError(f"{t.name}: {a.kind} is destructive ({'; '.join(a.reasons)}); "
                            "re-run with --allow-destructive to allow it; nothing was changed")
    return now


def preflight(plan: Plan, allow_destructive: bool = False, runnable: Callable[[str], bool] = lambda kind: True,
              table_of: Callable[[TablePlan], HudiTable] | None = None, options: StorageOptions | None = None,
              observed: Mapping[str, TableState] | None = None) -> dict[str, tuple[int, TableState]]:
    """Raise before any table is touched if the plan is stale, is not what its specs give for the
    tables as they are, or has an action that is not allowed or that this applier cannot run.
    `table_of`: each table plan's handle (default: opened with `options`). `observed`: states the
    plan was made from moments ago, through those handles, by location (a plan made and applied
    by one command with no prompt in between): they are the tables as they are, and the location
    of a table that exists was checked with them; the check under each table's lock re-reads what
    may have changed since (`current`). Returns each checked table's state, by location, with the
    handle's generation it belongs to."""
    table_of = table_of or (lambda t: HudiTable.open(t.location, options))
    warehouse = Location.parse(plan.warehouse, options)
    checked: dict[str, tuple[int, TableState]] = {}
    for t in plan.tables:
        if not t.actions:
            continue
        table = table_of(t)
        seen = (observed or {}).get(t.location)
        if seen is not None and seen.exists and seen.table is table:
            loaded, state = embedded_spec(t), seen
        else:
            with table.listing_snapshot():   # object stores: one LIST serves the location check and the observation
                if why := refusal(warehouse, table.location):  # links or tables may have appeared since the plan
                    raise PlanError(f"{t.name}: {why}; nothing was changed")
                loaded, state = current(t, table)
        now = check_table(t, loaded, state, allow_destructive)
        kinds = {a.kind for a in t.actions + now.actions}
        if state.exists and (why := unwritable_version(state.table_config)) is not None and kinds != {"upgrade_table"}:
            raise PlanError(f"{t.name}: {why}; nothing was changed")
        version = next((a.params.to for a in now.actions if isinstance(a, UpgradeTable)),
                       state.table_config.version if state.exists else 6)
        runs_on = VERSION_9_ACTIONS if version == WRITTEN_1X_VERSION else frozenset({"rollback"})
        if version >= 8 and (not_yet := sorted(kinds - runs_on - {"upgrade_table"})):
            raise PlanError(f"{t.name}: table version {version}: apply runs {', '.join(sorted(runs_on))} "
                            f"on it so far, not {', '.join(not_yet)}; nothing was changed")
        if version >= 8 and state.exists and loaded.spec.spec.index.type == RECORD_LEVEL \
                and FILES not in state.metadata_table.partitions and kinds & RECORD_INDEX_BUILDS \
                and "build_metadata_table" not in kinds:
            raise PlanError(f"{t.name}: table version {version}: index RECORD_LEVEL is Hudi's record index, kept in "
                            "the metadata table, which this table does not have and this plan does not build (make "
                            "a new plan: it builds the metadata table first); nothing was changed")
        if cannot := sorted({a.kind for a in t.actions + now.actions if not runnable(a.kind)}):
            raise PlanError(f"{t.name}: apply cannot run action kind(s) {', '.join(cannot)} (is this tablespec older "
                            "than the one that made the plan?); nothing was changed")
        checked[t.location] = (table.generation, state)
    return checked


def _protected(state: TableState) -> bool:
    """The table's own hoodie.properties say preventDestroy (whatever the spec says now)."""
    return bool(state.exists and effective(state.table_config.to_properties(), PREVENT_DESTROY) == "true")


class Applier:
    """Runs a checked plan action by action; `on_action` reports each finished action and
    `on_progress` the progress of long ones (partitions and bytes done, elapsed seconds)."""

    def __init__(self, on_action: Callable[[TablePlan, Action, ActionResult], None] | None = None,
                 on_progress: Callable[..., None] | None = None, spark=None, schedule_only: bool = False,
                 options: StorageOptions | None = None, observed: Mapping[str, TableState] | None = None,
                 catalog=None):
        """`spark`: a SparkSession, or a function making one (called only if an action needs Spark).
        `schedule_only`: clustering and compaction plans are written to the timeline but not run
        (Apache Hudi's `run_clustering` / `run_compaction`, or a later apply, runs them). `options`: how to reach object stores.
        `observed`: the states the plan was made from moments ago, by location (`plan_observed`,
        no prompt in between): their handles serve apply, which re-reads under each table's lock
        only what may have changed since."""
        self.catalog = catalog   # where `catalog_sync` actions register tables (catalog.Catalog)
        self.on_action = on_action or (lambda t, a, r: None)
        self.on_progress = on_progress
        self._spark = spark
        self.schedule_only = schedule_only
        self.options = options
        self._lock: TableLock | None = None   # the lock of the table being applied
        self._observed_by_plan = dict(observed or {})
        self._tables: dict[str, HudiTable] = {s.location: s.table for s in self._observed_by_plan.values()
                                              if s.table is not None}
        self._observed: tuple[HudiTable, int, TableState] | None = None   # the state last observed, and when

    def table(self, t: TablePlan) -> HudiTable:
        """The plan table's handle, opened once per apply."""
        if t.location not in self._tables:
            self._tables[t.location] = HudiTable.open(t.location, self.options)
        return self._tables[t.location]

    @property
    def spark(self):
        if self._spark is None:
            from tablespec.engine.session import get_spark
            self._spark = get_spark
        if callable(self._spark) and not hasattr(self._spark, "sparkContext"):
            self._spark = self._spark()
        return self._spark

    def _observe(self, t: TablePlan) -> TableState:
        """The table as last observed under its lock, observed again only if the handle changed
        (forgot or learned something) since: actions after one another do not re-read a table
        nothing changed."""
        table = self.table(t)
        if self._observed is None or self._observed[:2] != (table, table.generation):
            self._observed = (table, table.generation, observe(table))
        return self._observed[2]

    def runs(self, kind: str) -> bool:
        """Whether this applier has a step for actions of `kind` (a subclass may replace or drop one)."""
        return kind in EXECUTORS and callable(getattr(self, EXECUTORS[kind].__name__, None))

    def apply(self, plan: Plan, allow_destructive: bool = False) -> ApplyResult:
        checked = preflight(plan, allow_destructive, self.runs, self.table, self.options, self._observed_by_plan)
        result = ApplyResult()
        for t in plan.tables:
            if not t.actions:
                continue
            with self._table_lock(t):
                # the lock is ours: the table as the previous holder left it (preflight's state,
                # unless .hoodie/ or hoodie.properties say it changed since)
                generation, seen = checked[t.location]
                table = self.table(t)
                if table.generation != generation:  # the handle read the table since preflight: as it is now
                    loaded, state = current(t, table.refresh())
                else:
                    loaded, state = current(t, table, seen)
                self._observed = (table, table.generation, state)
                now = check_table(t, loaded, state, allow_destructive, done_meanwhile=True)  # under the lock
                if not now.actions:
                    result.done_meanwhile.append(t.name)
                # as read under the lock (a table to create has none): housekeeping counts the actions' instants on it
                read = table.timeline if self._lock is not None else None
                for done_count, a in enumerate(now.actions, 1):
                    started = time.monotonic()
                    actual = getattr(self, EXECUTORS[a.kind].__name__)(now, a, loaded.spec)  # this applier's step
                    done = ActionResult(now.name, a.kind, time.monotonic() - started, actual)
                    result.actions.append(done)
                    self.on_action(now, a, done)
                    if not any(isinstance(b, Archive) for b in now.actions):  # else archiving is an action
                        self._housekeep(t, loaded.spec, result, read, done_count)
        return result

    @contextmanager
    def _table_lock(self, t: TablePlan):
        """Hold the table's lock while its actions are checked and run; the actions take it from
        here (`_locked`). A table not created yet is not locked: creating it refuses a table
        that appeared meanwhile."""
        table = self.table(t)
        if table.config is None and table.refresh().config is None:  # absent at preflight, and still
            yield
            return
        self._lock = table_lock(table)
        try:
            yield   # (`apply` reads the table again, as far as it may have changed)
        finally:
            lock, self._lock = self._lock, None
            lock.release()

    def _housekeep(self, t: TablePlan, spec: TableSpec, result: ApplyResult, read: Timeline | None,
                   actions: int) -> None:
        """After each action, under the table lock: archive as the spec says, when there may be
        something to archive: `read`, the timeline read under the lock, with one more instant of
        each kind per action run since (an action rolling back several writes leaves the extra
        rollbacks to a later run; None: a table this apply created, with nothing to archive)."""
        if read is None:
            return
        done = housekeep(self.table(t), spec.archive_settings, read, added=actions)
        if done is not None and done.archived:
            result.archived[t.name] = result.archived.get(t.name, 0) + len(done.archived)

    def _locked(self, t: TablePlan, changes_files: bool = True):
        """For one action: recovery (and unmaintained metadata-table partitions dropped) under the lock apply holds."""
        return locked(self.table(t), changes_files=changes_files, held=self._lock)

    def visit_create_table(self, t: TablePlan, a: CreateTable, spec: TableSpec) -> NoResult:
        metadata.create_table(self.table(t), spec, a.params.table_version or 6)
        return NoResult()

    def visit_upgrade_table(self, t: TablePlan, a: UpgradeTable, spec: TableSpec) -> Upgraded:
        """The table to the spec's version as Hudi 1.x upgrades it (hudi/upgrade.py), under Hudi's
        transaction lock (no Hudi writer starts a commit meanwhile), once recovery rolled back dead writes."""
        from tablespec.hudi.services.upgrade import upgrade
        table = self.table(t)
        with self._locked(t, changes_files=False), table.transaction_lock("upgrade"):
            done = upgrade(table, a.params.to)
        return Upgraded(files_moved=done.files, archived_instants=done.archived,
                        metadata_table_deleted=done.metadata_table_deleted or None,
                        leftovers_deleted=done.leftovers_deleted or None)

    def visit_update_settings(self, t: TablePlan, a: UpdateSettings, spec: TableSpec) -> NoResult:
        with self._locked(t, changes_files=False):  # Hudi's metadata table stays true: kept
            metadata.update_settings(self.table(t), spec)
        return NoResult()

    def visit_index_migration(self, t: TablePlan, a: IndexMigration,
                              spec: TableSpec) -> IndexResult | IndexDropped | NoResult:
        """To RECORD_LEVEL (or another record-index file-group count): build Hudi's record index (one
        metadata-table deltacommit, no data change), then switch hoodie.properties; a crash between
        the two is finished by the next apply (the index is kept when it has the count asked for).
        Away from RECORD_LEVEL: switch first (writers stop tagging with it), then drop the metadata
        table's record_index partition, as an Apache Hudi 0.15 writer with the record index off does
        (HoodieTable.deleteMetadataIndexIfNecessary)."""
        table = self.table(t)
        with self._locked(t):
            if a.params.to == RECORD_LEVEL:
                return self._record_index(table, spec)
            metadata.update_settings(table, spec)
            if a.params.from_ == RECORD_LEVEL:
                from tablespec.engine.record_index import drop_index
                return drop_index(table)
        return NoResult()

    def _record_index(self, table: HudiTable, spec: TableSpec) -> IndexResult:
        """Hudi's record index built as the spec sizes it, hoodie.properties switched, a private
        index folder removed (the caller holds the table lock)."""
        from tablespec.engine.record_index import ensure_index
        from tablespec.plan.settings import RECORD_LEVEL_BUCKETS
        settings = getattr(spec.spec.index, "record_level", None)
        result = ensure_index(self.spark, table, settings.num_buckets if settings else None)
        metadata.update_settings(table, spec, {RECORD_LEVEL_BUCKETS: str(result.file_groups)})
        return result

    def visit_record_index_build(self, t: TablePlan, a: RecordIndexBuild, spec: TableSpec) -> IndexResult:
        """Build Hudi's record index of a RECORD_LEVEL table that lacks it; remove a private index folder."""
        with self._locked(t):
            return self._record_index(self.table(t), spec)

    def visit_bucket_bootstrap(self, t: TablePlan, a: BucketBootstrap | BucketRescale, spec: TableSpec) -> Rebucketed:
        """Rewrite the data into bucket file groups (one replacecommit), then switch the index.

        Data first: until hoodie.properties says BUCKET, writers keep using the old index, which
        works on any layout (a record-level index follows the rewrite in the same replacecommit);
        a crash between the two steps is finished by the next apply. Leaving RECORD_LEVEL drops
        Hudi's record index after the switch, as index_migration does."""
        from tablespec.engine.rebucket import rebucket
        from tablespec.engine.record_index import drop_index
        from tablespec.engine.writer import table_avro_schema
        from tablespec.plan.builder import rebucket_partitions
        table = self.table(t)
        with self._locked(t) as lock:
            state = self._observe(t)
            partitions = rebucket_partitions(spec, state)
            actual = Rebucketed(partitions=0)
            if partitions:
                done = rebucket(self.spark, spec, table, partitions, table_avro_schema(spec),
                                progress=self._progress(t, a), lock=lock)
                actual = done.actual()
            metadata.update_settings(table, spec, {SWITCHED_KEY: done.instant} if partitions else None)
            if table_index_type(state.table_config) == RECORD_LEVEL:
                actual = actual.model_copy(update={"record_index_dropped": drop_index(table).partitions_dropped})
        return actual

    visit_bucket_rescale = visit_bucket_bootstrap

    def visit_replace_table(self, t: TablePlan, a: ReplaceTable, spec: TableSpec) -> Replaced:
        """Destructive: rewrite every row under the new keys / partitioning / columns in one
        replacecommit, then switch hoodie.properties. Rows keep their data; keys are recomputed."""
        from pyspark.sql import functions as F

        from tablespec.engine.evolution import read_files
        from tablespec.engine.reader import snapshot_files
        from tablespec.engine.schema import table_ddl
        from tablespec.engine.writer import TableWriter
        from tablespec.importer import observed_spec
        table = self.table(t)
        with self._locked(t) as lock:
            state = self._observe(t)
            old = {c.name: c for c in state.columns}
            missing = [c.name for c in spec.spec.columns if c.name not in old and not c.nullable]
            if missing:
                raise PlanError(f"{t.name}: cannot replace the table: new NOT NULL column(s) {', '.join(missing)} "
                                "have no values for existing rows; nothing was changed")
            files = snapshot_files(table)
            observed = observed_spec(state)
            ddl = table_ddl(observed)
            current = read_files(self.spark, table, files, observed, ddl) if files else \
                self.spark.createDataFrame([], ddl)
            df = current.select(*[(F.col(f"`{c.name}`") if c.name in old else F.lit(None))
                                  .cast(c.type).alias(c.name) for c in spec.spec.columns])
            result = TableWriter(self.spark, spec, table).overwrite(df, lock)
            chosen = {}
            if result.instant is not None:   # the rewrite's instant (none when there was nothing to write)
                chosen[SWITCHED_KEY] = result.instant
            metadata.update_settings(table, spec, chosen)
            # the rewrite kept Hudi's record index (if any) in step; the spec's index decides whether it stays
            from tablespec.engine.record_index import drop_index
            from tablespec.hudi.mdt import record_index_writer as rli_writer
            if spec.spec.index.type == RECORD_LEVEL:
                self._record_index(table, spec)
            elif rli_writer.is_enabled(table):
                drop_index(table)
        return Replaced(rows=result.inserted, files_written=len(result.files), replaced_file_groups=len(state.file_groups))

    def visit_catalog_sync(self, t: TablePlan, a: CatalogSync, spec: TableSpec) -> CatalogSynced:
        """Sync the catalog with the table as the actions before left it (data instants completed);
        a crash before this step leaves a catalog the next plan shows out of date, and apply repairs."""
        if self.catalog is None:
            raise PlanError(f"{t.name}: the plan registers it in a catalog, and this apply was given none "
                            "(set `catalog:` in tablespec.project.yaml or $TABLESPEC_CATALOG); nothing was changed")
        return sync_table(self.catalog, spec, self._observe(t), allow_drop=a.destructive)

    def visit_clean(self, t: TablePlan, a: Clean, spec: TableSpec) -> Cleaned:
        """Delete file versions out of retention as a `clean` instant, re-planned under the lock."""
        from tablespec.hudi.services.clean import finish_clean, plan_clean, schedule_clean
        table = self.table(t)
        with self._locked(t):  # recovery finishes an interrupted clean first
            with table.transaction_lock("clean"):  # planned and scheduled as Hudi does: under its lock
                timeline = table.fresh_timeline()  # under Hudi's lock: every instant another writer made
                plan = plan_clean(table.base, timeline, table.view, spec.spec.retention.keep_commits)
                if plan is None:
                    return Cleaned(files=0, bytes_freed=0)
                requested = schedule_clean(table, plan)
            result = finish_clean(table, requested)  # refreshes the handle: the clean changed the timeline
        return Cleaned(clean_instant=result.clean_instant, files=len(result.deleted_files),
                       bytes_freed=result.bytes_freed)

    def visit_archive(self, t: TablePlan, a: Archive, spec: TableSpec) -> Archived:
        """Archive as the spec says (re-planned under the lock; housekeeping after an earlier
        action may have done it already). Data files stay: Hudi's metadata table stays true."""
        with self._locked(t, changes_files=False):  # recovery finishes an interrupted run first
            done = housekeep(self.table(t), spec.archive_settings)
        return Archived(instants=len(done.archived) if done is not None else 0)

    def visit_build_metadata_table(self, t: TablePlan, a: BuildMetadataTable, spec: TableSpec) -> MetadataBuilt:
        """Build Hudi's metadata table (`files`) from the table's files, under Hudi's transaction
        lock (a Hudi writer initializes it under it too), once recovery left no instant pending."""
        from tablespec.hudi.mdt import writer as mdt_writer
        table = self.table(t)
        with self._locked(t), table.transaction_lock("metadata table"):
            table.refresh()  # under Hudi's lock: a Hudi writer may have built it, or started a write
            if mdt_writer.is_enabled(table):
                return MetadataBuilt()
            if pending := table.timeline.pending():
                raise StalePlanError(f"{table.base}: cannot build Hudi's metadata table while instants are pending "
                                     f"({', '.join(str(i) for i in pending)}); run `tablespec apply` again once "
                                     "they complete")
            listing = mdt_writer.list_data_files(table.storage, table.base, table.timeline.head.timestamp
                                                 if table.timeline.head else None)
            instant = mdt_writer.initialize(table, listing)
        return MetadataBuilt(instant=instant, files=sum(len(f) for f in listing.values()))

    def visit_build_data_skipping(self, t: TablePlan, a: BuildDataSkipping, spec: TableSpec) -> DataSkippingBuilt:
        """Build the declared data-skipping partitions from the latest base files' footers, once
        `locked` dropped a half-built one or a build that died (named inflight); one a Hudi writer
        built meanwhile is kept."""
        from tablespec.engine.data_skipping import build, build_secondary_indexes
        from tablespec.hudi.mdt import secondary_index
        from tablespec.hudi.mdt.column_stats_changes import kept
        table = self.table(t)
        with self._locked(t):
            secondary = {i.name: i.column for i in a.params.secondary_indexes or ()
                         if secondary_index.partition(i.name) not in secondary_index.kept_in(table.config)}
            wanted = [p for p in a.params.partitions if p not in kept(table) and not p.startswith(secondary_index.PREFIX)]
            built = build(self.spark, table, wanted, a.params.columns) if wanted else DataSkippingBuilt()
            return build_secondary_indexes(self.spark, table, secondary, built) if secondary else built

    def visit_drop_metadata_partitions(self, t: TablePlan, a: DropMetadataPartitions,
                                       spec: TableSpec) -> MetadataDropped:
        """Drop the metadata-table partitions tablespec does not maintain (as named under Hudi's lock)."""
        from tablespec.hudi.mdt.column_stats_changes import half_built
        from tablespec.hudi.mdt.record_index import RECORD_INDEX
        from tablespec.hudi.mdt.sync import maintained_partitions
        from tablespec.hudi.metadata_table import drop_partitions, unmaintained
        from tablespec.plan.metadata_table import rebuilt, undeclared_indexes
        table = self.table(t)
        with self._locked(t, changes_files=False), table.transaction_lock("metadata table"):
            dropped = unmaintained(config := table.fresh_config(), maintained_partitions(config))
            if RECORD_INDEX in a.params.partitions and spec.spec.index.type != RECORD_LEVEL:  # Hudi's writers drop it
                dropped += (RECORD_INDEX,)
            dropped += tuple(p for p in rebuilt(self._observe(t)) if p in a.params.partitions)   # damaged, as now
            dropped += tuple(p for p in undeclared_indexes(spec, config) if p in a.params.partitions)
            dropped += tuple(p for p in half_built(table) if p in a.params.partitions and p not in dropped)
            return MetadataDropped(partitions=list(drop_partitions(table, dropped)))

    def visit_clustering(self, t: TablePlan, a: Clustering, spec: TableSpec) -> Clustered:
        """Run a pending clustering plan (`instant`), or schedule the next step and run it. Planned
        again under the lock, from the table as it is (the plan's requirements held, and the steps
        before this one ran): the first step of what is left is this step."""
        from tablespec.engine import clustering
        from tablespec.engine.writer import table_avro_schema
        from tablespec.plan.clustering import clustering_plan
        with self._locked(t) as lock:  # recovery reverts a dead run to its requested plan
            if a.params.instant is not None:
                instant = Instant(a.params.instant, plan_action(self.table(t).timeline.layout), "requested")
                if self.schedule_only:
                    return Clustered(pending=instant.timestamp)
            else:
                plan = clustering_plan(spec, self._observe(t), a.reasons)
                if plan is None:
                    return Clustered(groups=0)
                instant = clustering.schedule(self.table(t), plan)
                if self.schedule_only:
                    return Clustered(scheduled=instant.timestamp, groups=len(plan.groups))
            return clustering.run(self.spark, spec, self.table(t), instant, table_avro_schema(spec), lock,
                                  scheduled=a.params.instant is None).actual()

    def visit_compaction(self, t: TablePlan, a: Compaction, spec: TableSpec) -> Compacted:
        """Run the pending compaction plan the plan showed (`instant`), or schedule one from the table as
        it is under Hudi's lock (a deltacommit completed since adds its log files) and run it on Spark
        (`--schedule-only`: leave it pending). Not due any more (a Hudi writer compacted meanwhile):
        nothing is scheduled."""
        from tablespec.engine import compaction
        from tablespec.engine.writer import table_avro_schema
        from tablespec.hudi.services.compaction import schedule
        from tablespec.plan.compaction import policy
        table = self.table(t)
        with self._locked(t) as lock:   # an inflight run that died is rolled back by the run below
            pending = a.params.instant
            if pending is None:   # planned again under the lock: a Hudi writer may have compacted or scheduled
                now = compaction_actions(spec, self._observe(t))[0]
                if not now:
                    return Compacted()
                pending = now[0].params.instant
            if pending is None:
                wanted = policy(spec)
                assert wanted is not None   # planned: a MERGE_ON_READ spec
                instant, plan = schedule(table, wanted, a.reasons)
                scheduled, slices = instant.timestamp, len(plan.operations)
            else:   # a plan scheduled already (by a Hudi writer or an earlier run) runs as it is
                instant, scheduled, slices = Instant(pending, COMPACTION, "requested"), None, 0
            if self.schedule_only:   # left pending: reports only what this run scheduled
                return Compacted(scheduled=scheduled, file_slices=slices)
            done = compaction.run(self.spark, spec, table, instant, table_avro_schema(spec), lock,
                                  scheduled=scheduled is not None)
        return done.model_copy(update={"scheduled": scheduled})

    def visit_rollback(self, t: TablePlan, a: Rollback, spec: TableSpec) -> RolledBack:
        """Roll back writes whose writer died (taking the lock runs the recovery)."""
        table = self.table(t)
        with self._locked(t) as lock:
            discarded = [rollback(table, Instant(ts, plan_action(table.timeline.layout), "requested"), discard_plan=True)
                         for ts in (a.params.discard_plans if isinstance(a.params, DiscardPlans) else [])]
            return RolledBack(rolled_back=len(lock.recovered), plans_discarded=len(discarded) or None)

    def _progress(self, t: TablePlan, a: BucketBootstrap | BucketRescale):
        if self.on_progress is None:
            return None
        return lambda **kw: self.on_progress(t, a, **kw)

    def visit_schema_evolution(self, t: TablePlan, a: SchemaEvolution, spec: TableSpec) -> NoResult:
        # Metadata only: a commit recording the wider schema; no data file is rewritten.
        schema.evolve_schema(self.table(t), spec, held=self._lock)
        return NoResult()


EXECUTORS: dict[str, Callable[[Applier, TablePlan, Any, TableSpec], ActionOutcome]] = {
    "create_table": Applier.visit_create_table,
    "update_settings": Applier.visit_update_settings,
    "index_migration": Applier.visit_index_migration,
    "bucket_bootstrap": Applier.visit_bucket_bootstrap,
    "bucket_rescale": Applier.visit_bucket_bootstrap,
    "schema_evolution": Applier.visit_schema_evolution,
    "replace_table": Applier.visit_replace_table,
    "archive": Applier.visit_archive,
    "rollback": Applier.visit_rollback,
    "clean": Applier.visit_clean,
    "record_index_build": Applier.visit_record_index_build,
    "clustering": Applier.visit_clustering,
    "build_metadata_table": Applier.visit_build_metadata_table,
    "drop_metadata_partitions": Applier.visit_drop_metadata_partitions,
    "catalog_sync": Applier.visit_catalog_sync,
    "upgrade_table": Applier.visit_upgrade_table,
    "compaction": Applier.visit_compaction,
    "build_data_skipping": Applier.visit_build_data_skipping,
}
"""The executor of each action kind: the Applier step that runs it and returns its typed result."""
if set(EXECUTORS) != set(KINDS):  # every kind has an executor: a plan never holds a kind apply cannot run
    raise TypeError(f"action kinds without an executor, or executors of no kind: {set(EXECUTORS) ^ set(KINDS)}")

"""Observed state of one table, read from its Hudi metadata only (no data files, no JVM).

`observe` is the single place that turns a table handle into a `TableState`; the planner, `show`
and `import` all read tables through it, and `apply` re-observes to check a plan's requirements.
It reads through the handle's cached config, timeline and view, inside one listing snapshot.
"""
from __future__ import annotations

import functools
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tablespec.errors import HudiFormatError, TablespecError
from tablespec.hudi import keys, metadata_table, private_index
from tablespec.hudi.archive import ArchivedTimeline, ArchiveSettings, History, plan_archive
from tablespec.hudi.archive.log import folder_of
from tablespec.hudi.archive.plan import archive_due, read_bounds
from tablespec.hudi.archive.summary import ArchivedClusterings, archived_clusterings
from tablespec.hudi.config import TableConfig, fingerprint
from tablespec.hudi.formats.avro import from_avro_schema
from tablespec.hudi.formats.naming import bucket_of
from tablespec.hudi.fs_view import FileSystemView
from tablespec.hudi.io import map_locations
from tablespec.hudi.mdt import damage
from tablespec.hudi.mdt.damage import Damage
from tablespec.hudi.metadata_table import MetadataTable
from tablespec.hudi.restore import PendingRestore, pending_restore
from tablespec.hudi.services.clean import plan_clean
from tablespec.hudi.services.clustering import Layout, layout_history, pending_plans
from tablespec.hudi.services.compaction import Backlog
from tablespec.hudi.services.compaction import backlog as compaction_backlog
from tablespec.hudi.services.rollback import pending_to_roll_back
from tablespec.hudi.services.upgrade import UpgradeWork
from tablespec.hudi.services.upgrade import work as upgrade_work
from tablespec.hudi.table import HudiTable, Location
from tablespec.hudi.timeline.active import Timeline
from tablespec.hudi.timeline.heartbeat import last_heartbeat, tolerance_seconds
from tablespec.hudi.timeline.instant import WRITE_ACTIONS, Instant
from tablespec.hudi.timeline.lock import read_lock
from tablespec.hudi.timeline.txn_lock import lock_path, read_holder
from tablespec.types import DataType


@dataclass(frozen=True)
class ObservedColumn:
    name: str
    type: DataType
    nullable: bool


@dataclass(frozen=True)
class FileGroupState:
    """The latest completed slice of one file group, as a snapshot query would read it."""

    partition: str
    file_id: str
    base_instant: str
    size: int
    base_file: str = ""   # the base file's name (empty for a slice without one)
    log_files: int = 0    # merge-on-read: the slice's log files, and their bytes
    log_bytes: int = 0
    log_names: tuple[str, ...] = ()   # merge-on-read: the log files' names, in the slice's order

    @property
    def bucket(self) -> int | None:
        return bucket_of(self.file_id)


@dataclass(frozen=True)
class TableState:
    location: str
    exists: bool
    config: TableConfig | None = None
    properties_fingerprint: str | None = None
    columns: tuple[ObservedColumn, ...] = ()
    file_groups: tuple[FileGroupState, ...] = ()
    pending: tuple[Instant, ...] = ()
    expired: tuple[Instant, ...] = ()  # pending writes whose writer died (heartbeat expired)
    pending_restore: PendingRestore | None = None   # Apache Hudi's restore to a savepoint, stopped half-way
    heartbeat_ages: dict = field(default_factory=dict)  # pending instant time -> seconds since its last beat (None: no heartbeat)
    lock_holders: tuple[str, ...] = ()   # who holds tablespec's table lock and Hudi's transaction lock now
    cleanable: dict = field(default_factory=dict)   # keep_commits -> CleanPlan.to_dict() (see observe)
    archivable: dict = field(default_factory=dict)  # ArchiveSettings -> {instants, active_commits} (see observe)
    head: str | None = None           # latest completed write (rollbacks and cleans do not move it)
    commits: int = 0
    # completed clusterings on the active timeline, oldest first, each with its plan's layout
    clusterings: tuple[tuple[str, Layout], ...] = ()
    commits_since_clustering: int = 0
    pending_clustering: dict = field(default_factory=dict)  # pending clustering instant -> ClusteringPlan
    compaction: Backlog | None = None   # merge-on-read: the compaction backlog (hudi/services/compaction.py)
    partitions: tuple[str, ...] = field(default=())
    private_index: bool = False   # tablespec's earlier private record-level index folder is there (hudi/private_index)
    metadata_table: MetadataTable = metadata_table.NONE   # Hudi's, as hoodie.properties and .hoodie/metadata show it
    metadata_damage: tuple[Damage, ...] = ()   # its damaged partitions (hudi/mdt/damage.py): plan rebuilds them
    data_files: tuple[int, int] = (0, 0)   # base files of every slice in the file-system view: (files, bytes)
    contents: tuple[str, ...] = ()   # no table: the first files already in the directory (relative paths)
    upgrade_leftovers: int = 0   # version 8/9: version-6 instant files an upgrade that stopped left in .hoodie/
    count_rows: Callable[[], int | None] | None = field(default=None, repr=False, compare=False)
    table: HudiTable | None = field(default=None, repr=False, compare=False)   # the handle observed
    catalog: Any = field(default=None, compare=False)   # a registered table: how the catalog differs (catalog.diff.CatalogDiff)

    @functools.cached_property
    def rows(self) -> int | None:
        """Rows in the latest slices, from commit metadata (None: unknown). Read on first use:
        only an index build's estimate needs it, and it reads one commit per base instant."""
        return self.count_rows() if self.count_rows else None

    @functools.cached_property
    def upgrade_work(self) -> UpgradeWork:
        """What upgrading the table moves (lists its archive folder on first use: only an upgrade's estimate needs it)."""
        return upgrade_work(self.table) if self.table is not None else UpgradeWork(0, 0)

    @property
    def last_clustering(self) -> str | None:
        return self.clusterings[-1][0] if self.clusterings else None

    @property
    def last_clustering_layout(self) -> Layout | None:
        """The layout the last clustering's plan used."""
        return self.clusterings[-1][1] if self.clusterings else None

    @property
    def table_config(self) -> TableConfig:
        """hoodie.properties of a table that exists (callers ask `exists` first)."""
        if self.config is None:
            raise HudiFormatError(f"{self.location}: holds no Hudi table")
        return self.config

    @property
    def handle(self) -> HudiTable:
        """The handle this state was observed through."""
        if self.table is None:
            raise TablespecError(f"{self.location}: observed without a table handle")
        return self.table

    @property
    def total_bytes(self) -> int:
        return sum(fg.size for fg in self.file_groups)

    def fingerprint(self) -> dict:
        """What a plan was made against: existence, hoodie.properties and the head instant."""
        return {"exists": self.exists, "properties": self.properties_fingerprint, "head": self.head}


def observe(table: HudiTable, keep_commits: int | None = None, archive: ArchiveSettings | None = None,
            check_metadata: bool = True) -> TableState:
    """Read a table's state from hoodie.properties, the timeline and file listings (the handle's
    cached reads: a caller that changed the table since refreshes the handle first).

    `keep_commits` (a spec's retention) also works out what a clean would delete; without it
    the table's own `hoodie.cleaner.commits.retained` (default 10) is used. `archive` (a spec's
    archiving) also works out what an archiving run would move, when the active timeline holds
    more than its maxCommits.

    `check_metadata` looks for damage in Hudi's metadata table (hudi/mdt/damage.py: its files read,
    its listing compared with the storage, a data-skipping index's content only while it is small) for
    `plan` to rebuild; writes leave it to the readers,
    which refuse a damaged block as they meet it, and read nothing more."""
    with table.listing_snapshot():   # object stores: one LIST of the table, not one per folder
        return _observe(table, keep_commits, archive, check_metadata)


def _archivable(table: HudiTable, settings: ArchiveSettings | None) -> dict:
    """What an archiving run under `settings` would move (nothing read unless it is due)."""
    timeline = table.timeline
    if settings is None or not archive_due(timeline, settings):
        return {}
    moved = plan_archive(timeline, settings, read_bounds(table)).instants
    return {settings: {"instants": len(moved), "active_commits": len(timeline.commits())}} if moved else {}


def _archived_if_needed(table: HudiTable, timeline: Timeline, groups, clustered: bool) -> ArchivedClusterings | None:
    """What the clustering history takes from the archive, read only when it may reach into it:
    the table has an archive, and no clustering is active (`clustered`: the last one may be
    archived) or a file group's base file predates the active timeline (its writer, maybe a
    clustering, was archived). From the summary archiving runs keep (archive/summary.py)."""
    folder = folder_of(table.config)
    if not table.lists_folder(folder):
        return None
    commits = timeline.commits()
    first = commits[0].timestamp if commits else None
    if clustered and not any(first is not None and g.base_instant < first for g in groups):
        return None
    if table.config is not None and table.config.version >= 8:  # Hudi's LSM history (no summary: Hudi archives it)
        return ArchivedClusterings.of(ArchivedTimeline.of(table), timeline)
    return archived_clusterings(table.storage, table.base, folder, timeline)


def _observe(table: HudiTable, keep_commits: int | None, archive: ArchiveSettings | None = None,
             check_metadata: bool = True) -> TableState:
    storage, location, config = table.storage, table.base, table.config
    if config is None:
        if storage.exists(location) and not storage.is_dir(location):
            raise HudiFormatError(f"{location}: exists and is not a directory")
        return TableState(location=location, exists=False, contents=directory_contents(table),
                          table=table)
    timeline, view = table.timeline, table.view
    groups = tuple(
        FileGroupState(fg.partition, fg.file_id, fg.latest_slice.base_instant,
                       fg.latest_slice.base_file.size if fg.latest_slice.base_file else 0,
                       fg.latest_slice.base_file.name if fg.latest_slice.base_file else "",
                       len(fg.latest_slice.log_files), sum(f.size for f in fg.latest_slice.log_files),
                       tuple(f.file_name.format() for f in fg.latest_slice.log_files))
        for fg in view.file_groups() if fg.latest_slice is not None
    )
    schema = timeline.latest_schema() or config.create_schema
    columns = tuple(ObservedColumn(n, t, nl) for n, t, nl in from_avro_schema(json.loads(schema))) if schema else ()
    commits = [i for i in timeline.commits()]
    history = layout_history(timeline)
    archived = _archived_if_needed(table, timeline, groups, bool(history))
    # archived commits all precede the active ones: they count only when no clustering is active
    since_archived = archived.commits_since if archived is not None and not history else 0
    if archived is not None:
        history = list(archived.clusterings) + history
    last_clustering = history[-1][0] if history else None
    since = [i for i in commits if i.action != "replacecommit" and (last_clustering is None or i.timestamp > last_clustering)]
    props = config.to_properties()
    retained = keep_commits or keys.KEEP_COMMITS.number(props)
    clean = plan_clean(location, timeline, view, retained)
    return TableState(
        location=location,
        exists=True,
        cleanable={retained: clean.to_dict()} if clean else {},
        archivable=_archivable(table, archive),
        config=config,
        properties_fingerprint=fingerprint(props),
        columns=columns,
        file_groups=groups,
        pending=tuple(timeline.pending()),
        expired=tuple(pending_to_roll_back(table, tolerance_seconds())),
        pending_restore=pending_restore(timeline),
        heartbeat_ages=_heartbeat_ages(table),
        lock_holders=lock_holders(table),
        head=commits[-1].timestamp if commits else None,
        commits=len(commits),
        clusterings=tuple(history),
        pending_clustering=(clustering := pending_plans(timeline)),
        compaction=(compaction_backlog(timeline, view, {fg for plan in clustering.values() for fg in plan.file_ids()})
                    if config.table_type == "MERGE_ON_READ" else None),
        commits_since_clustering=len(since) + since_archived,
        partitions=tuple(view.partitions),
        count_rows=functools.partial(_rows, timeline, view, table),
        private_index=table.lists_folder(private_index.PARENT) and private_index.present(table.storage, table.base),
        metadata_table=metadata_table.describe(table),
        metadata_damage=tuple(damage.find(table)) if check_metadata else (),
        data_files=_data_files(view),
        upgrade_leftovers=len(table.upgrade_leftovers),
        table=table,
    )


CONTENTS_SHOWN = 6


def _data_files(view) -> tuple[int, int]:
    """What building the metadata table lists: every slice's base file (files, bytes)."""
    files = [s.base_file for fg in view.file_groups() for s in fg.slices if s.base_file is not None]
    return len(files), sum(f.size for f in files)


def _heartbeat_ages(table: HudiTable) -> dict[str, float | None]:
    now = time.time()
    return {i.timestamp: None if (beat := last_heartbeat(table.storage, table.base, i.timestamp)) is None
            else max(0.0, now - beat) for i in table.timeline.pending() if i.action in WRITE_ACTIONS}


def lock_holders(table: HudiTable) -> tuple[str, ...]:
    """Who holds the table's locks: tablespec's table lock (a whole action) and Hudi's transaction
    lock (a writer's commit steps)."""
    storage, base = table.storage, table.base
    out = []
    try:
        holder = read_lock(storage, base)
    except TablespecError as e:
        out.append(f"tablespec table lock: {e}")
    else:
        if holder is not None:
            out.append(f"tablespec table lock: {holder.describe()}" + (" (lease expired)" if holder.expired() else ""))
    if (hudi := read_holder(storage, base)) is not None:
        out.append(f"Hudi transaction lock ({lock_path(base)}): {hudi.describe()}")
    return tuple(out)


def directory_contents(table: HudiTable) -> tuple[str, ...]:
    """The first files below a directory that holds no table (relative paths, depth first in name
    order). Empty directories do not count: the folders an interrupted create left are no obstacle."""
    prefix = table.base.rstrip("/") + "/"
    return tuple(f.path[len(prefix):] for f in itertools.islice(table.storage.walk_files(table.base), CONTENTS_SHOWN))


def _rows(timeline: Timeline, view: FileSystemView, table: HudiTable | None = None) -> int | None:
    """Rows of the latest slices, from the numWrites their commits recorded, archived ones too
    (the archive is read only when a slice's commit left the active timeline; None: a commit is
    on neither timeline)."""
    completed = {i.timestamp: i for i in timeline.commits()}
    wanted = {(s.partition, s.file_id, s.base_instant) for s in view.latest_slices() if s.base_file is not None}
    history: Timeline | History = timeline
    if table is not None and not {w[2] for w in wanted} <= completed.keys() and table.lists_folder(folder_of(table.config)):
        history = History(timeline, ArchivedTimeline.of(table))
        completed = {i.timestamp: i for i in history.commits()}
    total = 0
    for ts in {w[2] for w in wanted}:
        if ts not in completed:
            return None
        for stats in history.commit_metadata(completed[ts]).partition_to_write_stats.values():
            total += sum(st.num_writes for st in stats if (st.partition_path, st.file_id, ts) in wanted)
    return total


def observe_specs(specs, warehouse: Location, check: Callable[[Location], str | None] | None = None
                  ) -> dict[str, TableState]:
    """The state of every table `specs` (loaded specs) declare under `warehouse`, keyed by location;
    what a clean would delete is worked out under each spec's retention, as the plan needs it.
    `check` (where a table may be: a reason it may not, or None) runs first, in the same listing
    snapshot (object stores: one LIST of the table serves both); a refused location is left out."""
    def look(loaded) -> TableState | None:
        table = HudiTable(warehouse.child(loaded.spec.spec.location))
        with table.listing_snapshot():
            if check is not None and check(table.location):
                return None
            return observe(table, keep_commits=loaded.spec.spec.retention.keep_commits,
                           archive=loaded.spec.archive_settings)
    observed = map_locations(look, specs, warehouse.uri)
    return {state.location: state for state in observed if state is not None}

"""Plans as data: typed actions, each carrying the requirements it was planned against.

Apply re-observes every table and re-validates these requirements before touching anything;
that is the stale-plan check. The JSON form of these models is the plan file format.

One model per action kind, with typed `params` (what the executor needs beyond the spec) and
`estimate` (from metadata only); its class says what the kind is: its symbol, whether it needs
Spark, whether it is housekeeping, how it counts in the plan's summary and what the templates
show of it (`shown`). Which executor runs it is apply's `EXECUTORS`.
"""
from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from tablespec.errors import StalePlanError
from tablespec.quantities import Bytes, Count, Measured, Shift

PLAN_FORMAT_VERSION = 1

ActionKind = Literal[
    "create_table", "update_settings", "index_migration", "bucket_bootstrap", "bucket_rescale",
    "schema_evolution", "replace_table", "rollback", "clean", "record_index_build", "clustering",
    "archive", "build_metadata_table", "drop_metadata_partitions", "catalog_sync", "upgrade_table",
    "compaction", "build_data_skipping",
]
IndexType = Literal["SIMPLE", "BLOOM", "BUCKET", "RECORD_LEVEL"]


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


# Parameters: what an executor needs beyond the spec.

class NoParams(Measured):
    pass


class NewTable(Measured):
    """The Hudi table version a new table is created at, when not 6 (the spec's, else the project's)."""

    table_version: int | None = None


class VersionChange(Measured):
    """A table's Hudi table version now and the spec's (equal: finishing an upgrade that stopped)."""

    from_: int = Field(validation_alias=AliasChoices("from", "from_"), serialization_alias="from")
    to: int


class IndexSwitch(Measured):
    """The table's index now (as Hudi names it: a table Apache Hudi wrote may use another type) and the spec's."""

    from_: str = Field(validation_alias=AliasChoices("from", "from_"), serialization_alias="from")
    to: IndexType


class BucketSwitch(IndexSwitch):
    partitions: list[str]   # rewritten (their bucket count changes, or the index becomes BUCKET)


class Instants(Measured):
    instants: list[str]     # rolled back (dead writers), or indexed (a catch-up)


class CompactionParams(Measured):
    instant: str | None = None   # a pending plan to run (else one is scheduled, then run)


class DiscardPlans(Measured):
    discard_plans: list[str]  # clustering plans that can no longer run: rolled back and dropped


class Step(Measured):
    """Which step of a clustering in several (`maxGroups` groups each) an action is."""

    number: Count
    of: Count
    file_groups: Count
    of_file_groups: Count


class GroupSummary(Measured):
    """One clustering group: its partition, input files and the file groups it writes."""

    partition: str
    input_files: Count
    input_bytes: Bytes
    output_files: Count


class CatalogName(Measured):
    """The catalog table a sync makes match the table."""

    database: str
    table: str


class MetadataPartitions(Measured):
    partitions: list[str]   # Hudi metadata-table partitions dropped


class SecondaryIndexBuild(Measured):
    """A secondary index a build writes: its name and indexed column."""

    name: str
    column: str


class DataSkippingIndexes(Measured):
    """The data-skipping partitions a build writes, (version 9) the columns the column stats' definition
    lists, and the secondary indexes among the partitions."""

    partitions: list[str]             # column_stats, bloom_filters, partition_stats and secondary indexes (version 9)
    columns: list[str] | None = None  # None: every column Hudi 0.15 indexes (version 6)
    secondary_indexes: list[SecondaryIndexBuild] | None = None   # None: no secondary index to build


class ClusteringParams(Measured):
    instant: str | None = None   # a pending plan to run (else the next step is scheduled)
    step: Step | None = None
    groups: list[GroupSummary] = []


# Estimates: from metadata only, never from reading data.

class NoEstimate(Measured):
    pass


class RewriteEstimate(Measured):
    partitions: Count
    file_groups: Count
    bytes_to_read: Bytes
    bytes_to_write: Bytes


class IndexBuildEstimate(Measured):
    rows: Count | Literal["unknown"]
    partitions: Count
    file_groups: Count
    bytes_to_read: Bytes


class BucketEstimate(Measured):
    partitions: Count
    file_groups: Shift
    bytes_to_read: Bytes
    bytes_to_write: Bytes
    bucket_file_bytes: Bytes | None = None     # with partitions to rewrite
    suggested_num_buckets: Count | None = None


class CleanEstimate(Measured):
    earliest_instant_to_retain: str
    partitions: Count
    files: Count
    bytes_to_free: Bytes


class ArchiveEstimate(Measured):
    instants: Count            # completed instants an archiving run moves to the archived timeline
    active_commits: Count      # completed commits on the active timeline now


class UpgradeEstimate(Measured):
    instants: Count            # active timeline instants moved to .hoodie/timeline/
    archive_files: Count       # archive files whose instants go into the LSM history


class MetadataBuildEstimate(Measured):
    partitions: Count
    files: Count            # data files the `files` partition lists
    bytes: Bytes


class FooterEstimate(Measured):
    partitions: Count       # data partitions
    files: Count            # latest base files whose Parquet footers are read (not their rows)
    bytes: Bytes            # those files' size, which the statistics describe


class ClusteringEstimate(Measured):
    strategy: str
    groups: Count
    partitions: Count
    files: Shift
    bytes_to_read: Bytes
    bytes_to_write: Bytes


class CompactionEstimate(Measured):
    strategy: str
    file_slices: Count
    partitions: Count
    log_files: Count
    log_bytes: Bytes
    base_bytes: Bytes
    log_records: Count | Literal["unknown"]   # records the deltacommits since the last compaction wrote there


class BaseAction(_Frozen):
    """What every action has; a kind's class narrows `params` and `estimate` and says what it is."""

    model_config = ConfigDict(strict=True)

    kind: ActionKind
    destructive: bool = False
    reasons: list[str] = []
    changes: list[Change] = []
    params: Measured = NoParams()
    estimate: Measured = NoEstimate()
    advice: list[str] = []           # doubtful but legal (e.g. bucket files far from the target size)

    symbol: ClassVar[str] = "~"
    needs_spark: ClassVar[bool] = False       # the others are metadata only: apply starts no JVM for them
    housekeeping: ClassVar[bool] = False      # keeps a table as it is: clustering may be planned next to it
    counts_as: ClassVar[Literal["create", "update", "replace"]] = "update"   # in the plan's summary

    def shown(self) -> dict[str, Any]:
        """What the plan templates print beyond kind, reasons and changes: the estimate in units
        people read, and (clustering) the step and the groups."""
        return {"estimate": self.estimate.shown(), "step": None, "groups": []}


class CreateTable(BaseAction):
    kind: Literal["create_table"] = "create_table"
    params: NewTable = NewTable()
    estimate: NoEstimate = NoEstimate()
    symbol: ClassVar[str] = "+"
    counts_as: ClassVar[Literal["create", "update", "replace"]] = "create"


class UpdateSettings(BaseAction):
    kind: Literal["update_settings"] = "update_settings"
    params: NoParams = NoParams()
    estimate: NoEstimate = NoEstimate()
    housekeeping: ClassVar[bool] = True


class IndexMigration(BaseAction):
    kind: Literal["index_migration"] = "index_migration"
    params: IndexSwitch
    estimate: IndexBuildEstimate | NoEstimate = NoEstimate()   # an index build reads every key
    needs_spark: ClassVar[bool] = True


class BucketBootstrap(BaseAction):
    kind: Literal["bucket_bootstrap"] = "bucket_bootstrap"
    params: BucketSwitch
    estimate: BucketEstimate
    needs_spark: ClassVar[bool] = True


class BucketRescale(BaseAction):
    kind: Literal["bucket_rescale"] = "bucket_rescale"
    params: BucketSwitch
    estimate: BucketEstimate
    needs_spark: ClassVar[bool] = True


class SchemaEvolution(BaseAction):
    kind: Literal["schema_evolution"] = "schema_evolution"
    params: NoParams = NoParams()
    estimate: NoEstimate = NoEstimate()
    housekeeping: ClassVar[bool] = True


class ReplaceTable(BaseAction):
    kind: Literal["replace_table"] = "replace_table"
    destructive: bool = True
    params: NoParams = NoParams()
    estimate: RewriteEstimate
    symbol: ClassVar[str] = "-/+"
    needs_spark: ClassVar[bool] = True
    counts_as: ClassVar[Literal["create", "update", "replace"]] = "replace"


class Rollback(BaseAction):
    kind: Literal["rollback"] = "rollback"
    params: Instants | DiscardPlans
    estimate: NoEstimate = NoEstimate()
    housekeeping: ClassVar[bool] = True


class Clean(BaseAction):
    kind: Literal["clean"] = "clean"
    params: NoParams = NoParams()
    estimate: CleanEstimate
    housekeeping: ClassVar[bool] = True


class Archive(BaseAction):
    """Archiving a table whose active timeline grew past `retention.archive.maxCommits` without a
    tablespec action or write to archive after (e.g. written by a Hudi job with archiving off)."""
    kind: Literal["archive"] = "archive"
    params: NoParams = NoParams()
    estimate: ArchiveEstimate
    housekeeping: ClassVar[bool] = True


class BuildMetadataTable(BaseAction):
    """Building Hudi's metadata table (its `files` partition) from the table's files: a table
    tablespec retired it from earlier, or Hudi wrote with it off."""
    kind: Literal["build_metadata_table"] = "build_metadata_table"
    params: NoParams = NoParams()
    estimate: MetadataBuildEstimate
    housekeeping: ClassVar[bool] = True


class DropMetadataPartitions(BaseAction):
    """Dropping metadata-table partitions tablespec does not maintain (they would go stale)."""
    kind: Literal["drop_metadata_partitions"] = "drop_metadata_partitions"
    params: MetadataPartitions
    estimate: NoEstimate = NoEstimate()
    housekeeping: ClassVar[bool] = True


class BuildDataSkipping(BaseAction):
    """Building the data-skipping indexes a spec declares that the table lacks or has half-built
    (Hudi's `column_stats`, and `partition_stats` on version 9): from the footers of the latest base
    files, read on Spark, each partition initialized in the metadata table as Hudi initializes it."""
    kind: Literal["build_data_skipping"] = "build_data_skipping"
    params: DataSkippingIndexes
    estimate: FooterEstimate
    needs_spark: ClassVar[bool] = True


class RecordIndexBuild(BaseAction):
    """Building Hudi's record index (the metadata table's `record_index` partition) of a RECORD_LEVEL
    table that lacks it (Hudi wrote without it), and removing tablespec's earlier private index
    folder (a migration)."""
    kind: Literal["record_index_build"] = "record_index_build"
    params: NoParams = NoParams()
    estimate: IndexBuildEstimate | NoEstimate = NoEstimate()   # NoEstimate: only the private folder goes
    needs_spark: ClassVar[bool] = True


class Clustering(BaseAction):
    kind: Literal["clustering"] = "clustering"
    params: ClusteringParams
    estimate: ClusteringEstimate
    needs_spark: ClassVar[bool] = True

    def shown(self) -> dict[str, Any]:
        return {**super().shown(), "step": self.params.step, "groups": [g.shown() for g in self.params.groups]}


class CatalogSync(BaseAction):
    """Registering the table in the project's catalog, or bringing its registration up to date
    (columns, properties, location, partitions), as Hudi's sync tools would; it runs after the
    table's other actions, from the table as they left it. Destructive when the catalog table must
    be dropped and registered again (its partition keys differ)."""
    kind: Literal["catalog_sync"] = "catalog_sync"
    params: CatalogName
    estimate: NoEstimate = NoEstimate()


class UpgradeTable(BaseAction):
    """Upgrading the table's Hudi table version (6 -> 8 or 9) as Apache Hudi 1.x's upgrade does:
    metadata only, no data file is rewritten."""
    kind: Literal["upgrade_table"] = "upgrade_table"
    params: VersionChange
    estimate: UpgradeEstimate | NoEstimate = NoEstimate()


class Compaction(BaseAction):
    """A merge-on-read table's compaction (spec.compaction.runBy: tablespec): once its trigger is due,
    a `T.compaction.requested` plan over the file slices the strategy takes, scheduled and run on
    Spark (each slice's base file and log files merged into a new base file, completed as a commit);
    or a pending plan (`params.instant`: a Hudi writer's, or one a crashed run left) run."""
    kind: Literal["compaction"] = "compaction"
    params: CompactionParams = CompactionParams()
    estimate: CompactionEstimate
    housekeeping: ClassVar[bool] = True
    needs_spark: ClassVar[bool] = True


Action = Annotated[CreateTable | UpdateSettings | IndexMigration | BucketBootstrap | BucketRescale | SchemaEvolution
                   | ReplaceTable | Rollback | Clean | Archive | RecordIndexBuild
                   | Clustering | BuildMetadataTable | DropMetadataPartitions | CatalogSync | UpgradeTable
                   | Compaction | BuildDataSkipping,
                   Field(discriminator="kind")]
KINDS: dict[str, type[BaseAction]] = {
    cls.model_fields["kind"].default: cls for cls in get_args(get_args(Action)[0])}
if set(KINDS) != set(get_args(ActionKind)):  # one model per kind, no more, no less
    raise TypeError(f"action kinds without a model or models of no kind: {set(KINDS) ^ set(get_args(ActionKind))}")


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
    default_catalog: str | None = None
    """The embedded metastore's file, where the project names no catalog and specs ask to be registered."""

    @property
    def has_changes(self) -> bool:
        return any(t.has_changes for t in self.tables)

    @property
    def actions(self) -> list[tuple[TablePlan, Action]]:
        return [(t, a) for t in self.tables for a in t.actions]

    def summary(self) -> dict[str, int]:
        counts = {"create": 0, "update": 0, "replace": 0, "unchanged": 0}
        for t in self.tables:
            effects = {a.counts_as for a in t.actions}
            counts[next((e for e in ("create", "replace") if e in effects), "update") if effects else "unchanged"] += 1
        return counts

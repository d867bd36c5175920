"""`hudi-options`: the Apache Hudi writer configuration that makes a user's own Hudi job obey a spec.

A Hudi job writing into a tablespec table must key, partition, index and order records exactly as
tablespec does, keep the table at its version (`--hudi-version`: that Hudi line's settings), and leave
the timeline work tablespec owns (clustering, cleaning) to tablespec; it keeps Hudi's metadata table
(`files`; on RECORD_LEVEL tables `record_index`, used as the RECORD_INDEX index) on as tablespec does at
version 6 (off at 9 but on RECORD_LEVEL tables), and archives with the spec's limits. Values come
from the settings registry, so they are the ones tablespec writes into hoodie.properties.

Every option is a table-level setting Hudi checks against hoodie.properties and the stored layout,
so the options describe the table as it is: between a merged spec change and the end of its apply,
a job restarted with the spec's values would fail (`Config conflict`) or break the layout.
"""
from __future__ import annotations

from dataclasses import dataclass

from tablespec.actions.metadata import TABLE_DEFAULTS
from tablespec.errors import HudiFormatError, SpecError, TablespecError
from tablespec.hudi import keygen, keys, partition_buckets
from tablespec.hudi.config import KEYS_BY_ATTR, ORDERED_PAYLOAD, RECORD_LEVEL, SUPPORTED_VERSION, unmanaged_layout
from tablespec.hudi.layout_switch import unswitched_rewrite
from tablespec.hudi.table import HudiTable, Location
from tablespec.hudi.timeline.txn_lock import PROVIDER, expire_minutes, lock_folder
from tablespec.plan.locations import refusal
from tablespec.plan.settings import REGISTRY
from tablespec.spec.diagnostics import Diagnostic
from tablespec.spec.loader import LoadedSpec
from tablespec.spec.model import TableSpec

# Settings Hudi writers read under the name hoodie.properties uses (spec paths of the registry).
SAME_NAME = ("metadata.name", "metadata.database", "spec.partitioning.hiveStyle", "spec.partitioning.urlEncode",
             "spec.index.type", "spec.index.numBuckets", "spec.index.hashFields")
# Writer options whose table property has another name: writer key -> the registry's spec path.
RENAMED = {writer: str(key.spec) for writer, key in keys.writer_spellings().items()}
# Fixed layout of every tablespec table that writers also decide (hoodie.properties attributes).
FIXED_LAYOUT = ("drop_partition_columns", "populate_meta_fields")
WRITER = {
    # Hudi 1.x writers: stay at table version 6 (tablespec's) instead of upgrading the table
    # (VERSION_PINS).
    keys.WRITE_TABLE_VERSION.name: "6",
    keys.WRITE_AUTO_UPGRADE.name: "false",
    # Hudi's metadata table: tablespec keeps its `files` partition in every change, as Hudi's
    # writers do (Hudi 0.15 enables no other partition by default).
    keys.METADATA_ENABLE.name: "true",
    # Clustering and cleaning are tablespec's (`plan` schedules them from the spec).
    keys.CLUSTERING_INLINE.name: "false",
    keys.CLUSTERING_SCHEDULE_INLINE.name: "false",
    keys.CLUSTERING_ASYNC.name: "false",
    keys.CLEAN_AUTOMATIC.name: "false",
    # Archiving runs in the writer, with the spec's limits (`archiving`): tablespec reads the
    # archived timeline where history reaches into it, and archives the same way.
    keys.ARCHIVE_AUTOMATIC.name: "true",
    # ... merging small archive files as tablespec does (each run writes a new file where storage
    # cannot append; Hudi's default leaves them all).
    keys.ARCHIVE_MERGE_ENABLE.name: "true",
    # The table's schema is the spec's: an incoming batch may not drop columns or relax NOT NULL.
    keys.RECONCILE_SCHEMA.name: "true",
}
# Optimistic concurrency control on the lock tablespec takes too (hudi/txn_lock.py): a Hudi job and
# tablespec create instants and commit one at a time, and check each other's commits for conflicts.
# LAZY: a failed write is rolled back once its heartbeat expires, not by the next writer at start
# (which would roll back a live writer's instant).
CONCURRENCY = {
    keys.CONCURRENCY_MODE.name: "optimistic_concurrency_control",
    keys.FAILED_WRITES_POLICY.name: "LAZY",
    keys.LOCK_PROVIDER.name: PROVIDER,
    # Hudi's default sleeps 5 s between attempts; tablespec holds the lock for milliseconds.
    keys.LOCK_RETRY_WAIT_MS.name: "1000",
    keys.LOCK_NUM_RETRIES.name: "300",
}
# Hudi compares bucket ids, not file ids, on a bucketed table (two writers creating one bucket conflict).
BUCKET_CONFLICTS = {keys.CONFLICT_RESOLUTION_STRATEGY.name:
                    "org.apache.hudi.client.transaction.BucketIndexConcurrentFileWritesConflictResolutionStrategy"}
# Who compacts a merge-on-read table (spec.compaction.runBy): Hudi's jobs (inline after a batch
# deltacommit; a streaming job by Hudi's asynchronous compaction switch), or tablespec, which schedules
# the plans (the jobs neither schedule nor run compactions then).
COMPACTION_BY = {
    "hudi": {keys.COMPACT_INLINE.name: "true", keys.COMPACT_SCHEDULE_INLINE.name: "false",
             keys.COMPACT_ASYNC.name: "true"},
    "tablespec": {keys.COMPACT_INLINE.name: "false", keys.COMPACT_SCHEDULE_INLINE.name: "false",
                  keys.COMPACT_ASYNC.name: "false"},
}
# Hudi 1.x pins, unknown to Hudi 0.15 (which ignores keys it does not define).
VERSION_PINS = (keys.WRITE_TABLE_VERSION.name, keys.WRITE_AUTO_UPGRADE.name)
# The Apache Hudi lines `--hudi-version` names, the table versions each writes, and the line a table's
# version defaults to.
HUDI_LINES = {"0.15": (6,), "1.0": (6, 8), "1.2": (6, 8, 9)}
DEFAULT_LINE = {6: "0.15", 8: "1.0", 9: "1.2"}
# Hudi 1.x writing a version 8/9 table: records merge by mode (payload classes are 0.x's), and ...
MERGE_MODES = {True: "EVENT_TIME_ORDERING", False: "COMMIT_TIME_ORDERING"}   # by whether an ordering field orders
# ... Hudi's metadata table on, as tablespec keeps it on version 9 (its `files` partition); the
# data-skipping partitions Hudi 1.x enables by default off, unless the table has them (`data_skipping`).
METADATA_1X = {keys.METADATA_ENABLE.name: "true", keys.METADATA_COLUMN_STATS_ENABLE.name: "false",
               keys.METADATA_PARTITION_STATS_ENABLE.name: "false"}
# Auto-generated keys (no record key field, so Hudi 0.14+ generates them): Hudi refuses to combine
# records before an insert then.
AUTO_KEYS = {keys.COMBINE_BEFORE_INSERT.name: "false"}
# A RECORD_LEVEL table's index is Hudi's record index (hoodie.index.type RECORD_INDEX): Hudi jobs tag
# with it and keep it in the metadata table, as tablespec does; it is global (a key lives in one
# partition), so a key whose partition value changed moves (Hudi 0.15's name for that option).
RECORD_INDEX = {keys.METADATA_ENABLE.name: "true", keys.METADATA_RECORD_INDEX_ENABLE.name: "true",
                keys.RECORD_INDEX_UPDATE_PARTITION_PATH.name: "true"}
# On a version 9 table (its metadata table kept as on 6: METADATA_1X) the record index is enabled
# under Hudi 1.1+'s name (the global record index: keys unique across the table, as
# RECORD_LEVEL's; 1.1's partitioned one is hoodie.metadata.record.level.index.enable). The index type
# stays RECORD_INDEX, deprecated in 1.1+ for GLOBAL_RECORD_LEVEL_INDEX but the same index: Hudi checks
# the option against hoodie.properties, which name it as Hudi 0.15 does.
RECORD_INDEX_1_1 = {keys.METADATA_RECORD_INDEX_ENABLE.name: None, keys.GLOBAL_RECORD_INDEX_ENABLE.name: "true"}


class NoHudiEquivalent(TablespecError):
    """A spec setting Apache Hudi writers cannot obey."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path, self.message = path, message


def archiving(spec: TableSpec) -> dict[str, str]:
    """The spec's archiving limits, and the cleaner retention Hudi's archiver checks them against
    and follows (Hudi's default is 10, whatever the spec says; its automatic cleaning stays off)."""
    settings = spec.archive_settings
    return {keys.KEEP_MIN_COMMITS.name: str(settings.min_commits), keys.KEEP_MAX_COMMITS.name: str(settings.max_commits),
            keys.KEEP_COMMITS.name: str(settings.cleaner_commits_retained)}


def compaction_options(spec: TableSpec) -> dict[str, str]:
    """A MERGE_ON_READ spec's compaction policy (trigger, strategy, target IO) and who runs it; {} on
    COPY_ON_WRITE. The policy is the one tablespec records in hoodie.properties, so a job whose
    options lack it schedules by the same rules."""
    compaction = spec.compaction_settings
    if compaction is None:
        return {}
    policy = {s.prop: v for s in REGISTRY if s.path.startswith("spec.compaction.")
              and s.prop.startswith(keys.HUDI_PREFIX) and (v := s.desired(spec)) is not None}
    return {**policy, **COMPACTION_BY[compaction.run_by]}


def partition_bucket_options(spec: TableSpec, table_version: int) -> dict[str, str]:
    """Hudi 1.1+'s partition-level bucket index (RFC-89) for `index.partitionBuckets` on a table of
    `table_version` (8/9: its writers load the table's hashing config, which tablespec keeps; these
    options say the same); refused for version 6, whose Hudi 0.15 writers have one count per table."""
    index = spec.spec.index
    if index.type != "BUCKET" or not index.partition_buckets:
        return {}
    path = "spec.index.partitionBuckets"
    if table_version < partition_buckets.FIRST_VERSION:
        raise NoHudiEquivalent(path, f"per-partition bucket counts have no equivalent for table version {table_version} "
                               "(Apache Hudi 0.15's bucket index has one count for every partition); a Hudi writer "
                               "would route keys to the wrong buckets. Write this table with tablespec, or use "
                               "table version 9 (Hudi 1.1+'s partition-level bucket index)")
    rules = tuple((r.pattern, r.num_buckets) for r in index.partition_buckets)
    try:
        expressions = partition_buckets.expressions_of(rules, index.num_buckets)
    except HudiFormatError as e:
        raise NoHudiEquivalent(path, str(e)) from None
    return {partition_buckets.EXPRESSIONS_KEY: expressions, partition_buckets.RULE_KEY: partition_buckets.RULE}


def hudi_line(version: int, line: str | None) -> str:
    """The Hudi line options are for: `line` (refused when it cannot write table `version`), else the
    line that writes `version`."""
    if line is None:
        return DEFAULT_LINE[version]
    if version not in HUDI_LINES[line]:
        raise NoHudiEquivalent("spec.tableVersion", f"Apache Hudi {line} does not write table version {version} (it "
                               f"writes {' and '.join(map(str, HUDI_LINES[line]))}); use --hudi-version "
                               f"{DEFAULT_LINE[version]}")
    return line


def hudi_write_options(spec: TableSpec, table: HudiTable, version: int | None = None,
                       line: str | None = None) -> dict[str, str]:
    """The Apache Hudi writer options (all strings) for writing into `spec`'s table (`table`) at
    table `version` (default: the table's, else 6), for the Hudi `line` (0.15, 1.0, 1.2; default:
    the one that writes `version`)."""
    if version is None:
        config = table.config
        version = config.version if config is not None else SUPPORTED_VERSION
    line = hudi_line(version, line)
    index = spec.spec.index
    options = partition_bucket_options(spec, version)
    options.update({s.prop: v for s in REGISTRY
                    if s.path in SAME_NAME and s.prop.startswith(keys.HUDI_PREFIX) and (v := s.desired(spec)) is not None})
    by_path = {s.path: s for s in REGISTRY if s.path in RENAMED.values()}
    options.update({key: v for key, path in RENAMED.items() if (v := by_path[path].desired(spec)) is not None})
    # Timestamp partitioning: the timebased settings, and CustomKeyGenerator's typed field list.
    options.update({s.prop: v for s in REGISTRY
                    if (s.prop.startswith(keygen.PREFIX) or s.prop == keygen.CUSTOM_FIELDS_KEY)
                    and (v := s.desired(spec)) is not None})
    options.update({KEYS_BY_ATTR[a].key: TABLE_DEFAULTS[KEYS_BY_ATTR[a].key] for a in FIXED_LAYOUT})
    options.update(WRITER)
    options.update(compaction_options(spec))
    options.update(archiving(spec))
    if spec.spec.record_key.auto_generate:
        options.update(AUTO_KEYS)
    if spec.spec.ordering_field:
        options.update({keys.PAYLOAD_CLASS.name: ORDERED_PAYLOAD,
                        keys.PAYLOAD_ORDERING_FIELD.name: spec.spec.ordering_field})
    if index.type == RECORD_LEVEL:
        options.update(RECORD_INDEX)
    options.update(CONCURRENCY)
    options.update({keys.LOCK_FILESYSTEM_PATH.name: lock_folder(table.base),
                    # the expiry tablespec assumes too: a killed Hudi job's lock frees up after it
                    keys.LOCK_FILESYSTEM_EXPIRE.name: str(expire_minutes())})
    if index.type == "BUCKET":
        options.update(BUCKET_CONFLICTS)
    if version >= 8:
        for key, value in _version_1x(spec, version, line).items():
            if value is None:
                options.pop(key, None)
            else:
                options[key] = value
    options.update(data_skipping(table))
    options["path"] = table.base
    return dict(sorted(options.items()))


def data_skipping(table: HudiTable) -> dict[str, str]:
    """The data-skipping partitions the table's metadata table has, which tablespec keeps, enabled for
    Hudi's writers too: a writer with one off stops updating it (0.15) or deletes it (1.x,
    `hoodie.metadata.auto.delete.partitions`), and one that turns it on where the table lacks it
    builds it from every file. The column list is left to Hudi's default (what a table Hudi created
    with its defaults was indexed with; Hudi 1.x keeps its definition's list)."""
    from tablespec.hudi.mdt.bloom_filters import BLOOM_FILTERS
    from tablespec.hudi.mdt.column_stats import COLUMN_STATS, PARTITION_STATS
    from tablespec.hudi.mdt.column_stats_changes import kept
    try:
        found = kept(table) if table.config is not None else ()
    except HudiFormatError:
        return {}
    out = {}
    if COLUMN_STATS in found:
        out[keys.METADATA_COLUMN_STATS_ENABLE.name] = "true"
    if PARTITION_STATS in found:
        out[keys.METADATA_PARTITION_STATS_ENABLE.name] = "true"
    if BLOOM_FILTERS in found:
        out[keys.METADATA_BLOOM_FILTER_ENABLE.name] = "true"
    return out


def _version_1x(spec: TableSpec, version: int, line: str) -> dict[str, str | None]:
    """What a Hudi 1.x job writing a version 8/9 table sets instead (None: unset): the table's version,
    the merge mode for the payload, the ordering field under 1.1+'s key, the metadata table's `files` only."""
    ordering = spec.spec.ordering_field
    out: dict[str, str | None] = {keys.WRITE_TABLE_VERSION.name: str(version), keys.PAYLOAD_CLASS.name: None,
                                  keys.PAYLOAD_ORDERING_FIELD.name: None,
                                  keys.RECORD_MERGE_MODE.name: MERGE_MODES[bool(ordering)], **METADATA_1X}
    if ordering and line != "1.0":   # Hudi 1.1+ names the ordering field as the table does
        out.update({keys.WRITE_PRECOMBINE_FIELD.name: None, keys.ORDERING_FIELDS.name: ordering})
    if spec.spec.index.type == RECORD_LEVEL and line != "1.0":
        out.update(RECORD_INDEX_1_1)
    return out


@dataclass(frozen=True)
class Rendered:
    """The options to print, and what to say about them on stderr."""
    options: dict[str, str]
    notes: tuple[str, ...] = ()


def options_for(loaded: LoadedSpec, warehouse: Location, hudi: str | None = None) -> Rendered:
    """The writer options for a loaded spec's table under `warehouse`: the spec's for a table that does
    not exist yet, else the table's as it is now (`table_options`). A setting Hudi cannot obey is
    reported at its place in the spec file. `hudi`: the Hudi line of the job (`hudi_line`)."""
    from tablespec.state import observe

    table = HudiTable(warehouse.child(loaded.spec.spec.location))
    location = table.base
    if why := refusal(warehouse, table.location):  # a Hudi job would write there: outside the warehouse, in a table
        line, col = loaded.position("spec.location")
        raise SpecError([Diagnostic(loaded.file, line, col, "spec.location", why)])
    try:
        config = table.config
    except HudiFormatError:  # not a table tablespec reads: what `plan` says of it is the place to look
        config = None
    if config is not None and (why := unmanaged_layout(config)) is not None:  # a Hudi job would fail on it
        line, col = loaded.position("spec.location")
        raise SpecError([Diagnostic(loaded.file, line, col, "spec.location", f"the table at {location}: {why}")])
    version = config.version if config is not None else loaded.new_table_version
    try:
        wanted = hudi_write_options(loaded.spec, table, version, hudi)
    except NoHudiEquivalent as e:
        line, col = loaded.position(e.path)
        raise SpecError([Diagnostic(loaded.file, line, col, e.path, e.message)]) from None
    state = observe(table)
    if not state.exists:
        return Rendered(wanted)
    return table_options(state, wanted, _unrecorded_timestamp(loaded.spec, state), hudi)


def _unrecorded_timestamp(spec, state) -> dict[str, str] | None:
    """The spec's timestamp partitioning settings hoodie.properties does not record (Hudi records none
    for CustomKeyGenerator), where the spec keys the table as it is and its stored rows confirm them:
    what `import --timestamp` was told, which describing the table needs again."""
    from tablespec.importer import RECORDED
    from tablespec.plan.settings import diff_settings
    from tablespec.stored_paths import unconfirmed, unrecorded
    if not state.exists or spec.spec.partitioning.timestamp is None:
        return None
    props = state.config.to_properties()
    if not unrecorded(spec, props) or any(c.category == "key" for c in diff_settings(spec, props)):
        return None
    if unconfirmed(spec, state) is not None:
        return None
    recorded = {name: key for name, key in RECORDED.items() if key is not None}
    told = spec.spec.partitioning.timestamp.model_dump(by_alias=True, exclude_none=True)
    return {k: str(v) for k, v in told.items() if k in recorded and recorded[k] not in props}


def table_options(state, wanted: dict[str, str], timestamp: dict[str, str] | None = None,
                  line: str | None = None) -> Rendered:
    """The options of the table as it is (what Hudi checks a writer against), with notes on where
    the spec's `wanted` options differ and on a layout rewrite in flight.

    A completed rewrite whose hoodie.properties switch has not happened yet (an apply stopped in
    between) is refused: the properties no longer describe the files, and the spec's values do not
    either until the switch, so every writer configuration would be wrong."""
    from tablespec.importer import observed_spec

    location, table = state.location, state.table
    props = state.config.to_properties()
    timeline = table.timeline
    if (rewrite := unswitched_rewrite(timeline, props)) is not None:
        raise TablespecError(
            f"{location}: replacecommit {rewrite.timestamp} rewrote the data into a new layout, but "
            f"{keys.PROPERTIES_FILE} does not describe it yet (the apply stopped before switching it); no writer "
            "configuration matches the table now. Run `tablespec apply` to finish, then hudi-options again")
    current = hudi_write_options(observed_spec(state, timestamp), table, state.config.version, line)
    notes = []
    lagging = {k: (current.get(k), wanted.get(k)) for k in sorted(current.keys() | wanted.keys())
               if current.get(k) != wanted.get(k)}
    if lagging:
        shown = ", ".join(f"{k}={now or '(unset)'} (spec: {then or '(unset)'})" for k, (now, then) in lagging.items())
        notes.append(f"{location}: the table lags its spec until `tablespec apply` changes it; these options are "
                     f"the table's as it is now: {shown}. Run hudi-options again after the apply and restart "
                     "the Hudi jobs")
    clusterings = {i.timestamp for i in state.pending_clustering}  # they keep the layout
    rewriting = [i.timestamp for i in state.pending if i.action == "replacecommit" and i.timestamp not in clusterings]
    if rewriting:
        notes.append(f"{location}: replacecommit {', '.join(rewriting)} is in flight (a bucket rescale or table "
                     "rewrite by tablespec, or a Hudi overwrite): these options describe the table before it; a "
                     "Hudi commit into the partitions it rewrites makes one of the two fail on a conflict")
    return Rendered(current, tuple(notes))


def render_properties(options: dict[str, str]) -> str:
    """Java properties text (HoodieStreamer --props, spark-submit --properties-file)."""
    from tablespec.hudi.formats.properties import format_properties
    return format_properties(options, ("Apache Hudi writer options from tablespec hudi-options",), dated=False)

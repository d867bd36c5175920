"""The one registry of the keys tablespec reads and writes: Hudi's `hoodie.*` keys and its own `tablespec.*` ones.

Every other module names a key through a constant here (`keys.RECORD_KEY_FIELDS.name`), so a key's
spelling, its Hudi default, the values Hudi accepts, its other spellings and the spec field it maps
to are stated once. How a spec field converts into a value is planning code (plan/settings.py);
how a value is parsed into the table config is hudi/config.py; both name keys through this module.

Scopes: `table` keys are Hudi table properties (hoodie.properties); `writer` keys are Hudi write
options only (`hudi-options` prints them); `both` are write options that tablespec also records in
hoodie.properties, where Hudi has no table property (its Spark writers load them from there too);
`tablespec` keys are tablespec's own, in hoodie.properties, which Hudi ignores; `catalog` keys are
parameters Hudi's sync tools write in a catalog's registration of the table.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from tablespec.errors import HudiFormatError

Scope = Literal["table", "writer", "both", "tablespec", "catalog"]

HUDI_PREFIX = "hoodie."
PROPERTIES_FILE = HUDI_PREFIX + "properties"
BACKUP_FILE = PROPERTIES_FILE + ".backup"
AVRO_NAMESPACE = "hoodie"             # Hudi's Avro record namespace: hoodie.<table name>
TIMEBASED_PREFIX = HUDI_PREFIX + "keygen.timebased."
LABEL_PREFIX = "tablespec.label."     # a spec label <k> is stored as tablespec.label.<k>
HUDI_0 = (6,)                         # table versions Hudi 0.14/0.15 writers write (tablespec: only 6)
HUDI_ALL = (6, 8, 9)                  # ... and Hudi 1.0 (8), 1.1 (9)


@dataclass(frozen=True)
class Alias:
    """Another spelling of a key, and the writers that use it (Hudi 1.x writes these into version-6
    tables too). hudi/config.py reads either spelling and keeps the one a file has."""
    name: str
    writers: str
    versions: tuple[int, ...]


@dataclass(frozen=True)
class HudiKey:
    """One key: its spelling, what it means, where it lives, Hudi's default and accepted values,
    its other spellings, and the spec field that sets it (None: not from the spec)."""
    name: str
    doc: str
    scope: Scope = "table"
    default: str | None = None            # Hudi's default when absent (None: none, or tablespec does not rely on one)
    allowed: tuple[str, ...] = ()         # the values Hudi accepts (its enum; compared case-insensitively)
    minimum: int | None = None            # an integer, at least this
    aliases: tuple[Alias, ...] = ()
    sets: str | None = None               # a writer spelling: the table key it sets
    spec: str | None = None               # the spec path it maps to
    versions: tuple[int, ...] = HUDI_ALL  # table versions whose writers use it

    def check(self, raw: str) -> str:
        """`raw` as Hudi reads it (enum values upper-case, text stripped); refuses what Hudi refuses."""
        value = raw.strip()
        if self.allowed:
            upper = {a.upper(): a for a in self.allowed}
            if value.upper() not in upper:
                raise HudiFormatError(f"{self.name}={raw}: Apache Hudi accepts one of {', '.join(self.allowed)}")
            return upper[value.upper()]
        if self.minimum is not None:
            try:
                number = int(value)
            except ValueError:
                raise HudiFormatError(f"{self.name}: expected an integer, found {raw!r}") from None
            if number < self.minimum:
                raise HudiFormatError(f"{self.name}={raw}: expected an integer of at least {self.minimum}")
        return value

    def value(self, props: Mapping[str, str]) -> str | None:
        """The key's value in `props`, or Hudi's default when absent."""
        return props.get(self.name, self.default)

    def number(self, props: Mapping[str, str]) -> int:
        """The key's integer value in `props` (Hudi's default when absent); refuses what is no integer."""
        raw = self.value(props)
        try:
            return int((raw or "").strip())
        except ValueError:
            raise HudiFormatError(f"{self.name}: expected an integer, found {raw!r}") from None


_BOOL = ("true", "false")
# hoodie.properties: the table's own properties (HoodieTableConfig).
TABLE_NAME = HudiKey("hoodie.table.name", "The table's name.", spec="metadata.name")
DATABASE_NAME = HudiKey("hoodie.database.name", "The table's database; empty for none.", spec="metadata.database")
TABLE_TYPE = HudiKey("hoodie.table.type", "Copy-on-write or merge-on-read.", default="COPY_ON_WRITE",
                      allowed=("COPY_ON_WRITE", "MERGE_ON_READ"), spec="spec.tableType")
TABLE_VERSION = HudiKey("hoodie.table.version", "The table format version (tablespec writes 6; reads 6, 8 and 9).",
                        minimum=0)
TIMELINE_LAYOUT_VERSION = HudiKey("hoodie.timeline.layout.version",
                                   "How timeline files are named (1 in version 6, 2 in versions 8 and 9).", minimum=0)
TIMELINE_PATH = HudiKey("hoodie.timeline.path", "The active timeline's folder under .hoodie/ (versions 8 and 9).",
                        default="timeline", versions=(8, 9))
TIMELINE_HISTORY_PATH = HudiKey("hoodie.timeline.history.path",
                                "The archived (LSM) timeline's folder under the active timeline's (versions 8 and 9).",
                                default="history", versions=(8, 9))
RECORD_KEY_FIELDS = HudiKey("hoodie.table.recordkey.fields", "The fields forming the record key; none: generated keys.",
                             spec="spec.recordKey.fields")
PARTITION_FIELDS = HudiKey("hoodie.table.partition.fields",
                            "The partition fields (CustomKeyGenerator may add `:TYPE` to each).",
                            spec="spec.partitioning.fields")
ORDERING_FIELDS = Alias("hoodie.table.ordering.fields", "Hudi 1.1+", (6, 9))
KEY_GENERATOR_TYPE = Alias("hoodie.table.keygenerator.type", "Hudi 1.0+", (6, 8, 9))
PRECOMBINE_FIELD = HudiKey("hoodie.table.precombine.field", "The field whose greater value wins when a key repeats.",
                            aliases=(ORDERING_FIELDS,),
                            spec="spec.orderingField")
KEY_GENERATOR_CLASS = HudiKey("hoodie.table.keygenerator.class",
                               "The key generator: how a row's record key and partition path are built.",
                               aliases=(KEY_GENERATOR_TYPE,),
                               spec="keyGenerator")
BASE_FILE_FORMAT = HudiKey("hoodie.table.base.file.format", "The base files' format (tablespec: PARQUET).",
                            default="PARQUET", allowed=("PARQUET", "HFILE", "ORC"))
ARCHIVELOG_FOLDER = HudiKey("hoodie.archivelog.folder", "Where archived instants go, under .hoodie/.",
                             default="archived")
CREATE_SCHEMA = HudiKey("hoodie.table.create.schema", "The Avro schema the table was created with.")
CHECKSUM = HudiKey("hoodie.table.checksum", "CRC32 of <database>.<table>: a complete file (since Hudi 0.11).")
METADATA_PARTITIONS = HudiKey("hoodie.table.metadata.partitions", "The metadata table's partitions readers may use.")
METADATA_PARTITIONS_INFLIGHT = HudiKey("hoodie.table.metadata.partitions.inflight",
                                        "The metadata table's partitions being built.")
INDEX_DEFS_PATH = HudiKey("hoodie.table.index.defs.path", "Hudi 1.x: the file of the table's index definitions "
                          "(one per metadata-table index it built).", default=".hoodie/.index_defs/index.json",
                          versions=(8, 9))
# Write options tablespec records in hoodie.properties too (Hudi writers load them from there).
HIVE_STYLE_PARTITIONING = HudiKey("hoodie.datasource.write.hive_style_partitioning",
                                   "Partition folders as `field=value`.", scope="both", default="false",
                                   allowed=_BOOL, spec="spec.partitioning.hiveStyle")
URL_ENCODE_PARTITIONING = HudiKey("hoodie.datasource.write.partitionpath.urlencode",
                                   "Partition values URL-encoded in folder names.", scope="both", default="false",
                                   allowed=_BOOL, spec="spec.partitioning.urlEncode")
DROP_PARTITION_COLUMNS = HudiKey("hoodie.datasource.write.drop.partition.columns",
                                  "Partition columns left out of the data files (tablespec: false).", scope="both",
                                  default="false", allowed=_BOOL)
POPULATE_META_FIELDS = HudiKey("hoodie.populate.meta.fields",
                                "Whether files store the _hoodie_* meta columns (false: virtual keys).", scope="both",
                                default="true", allowed=_BOOL)
WRITE_PARTITION_FIELDS = HudiKey("hoodie.datasource.write.partitionpath.field",
                                  "The writers' partition fields; tablespec records CustomKeyGenerator's typed list "
                                  "(`region:SIMPLE,ts:TIMESTAMP`) here, which Hudi 0.15 does not.", scope="both",
                                  sets=PARTITION_FIELDS.name, spec="spec.partitioning.timestamp.field")
INDEX_TYPE = HudiKey("hoodie.index.type", "The index Hudi writers tag records with (RECORD_LEVEL tables: RECORD_INDEX).",
                      scope="both", default="SIMPLE", spec="spec.index.type",
                      allowed=("SIMPLE", "GLOBAL_SIMPLE", "BLOOM", "GLOBAL_BLOOM", "BUCKET", "RECORD_INDEX", "HBASE",
                               "INMEMORY", "FLINK_STATE", "GLOBAL_RECORD_LEVEL_INDEX", "RECORD_LEVEL_INDEX"))
BUCKET_ENGINE = HudiKey("hoodie.index.bucket.engine", "How buckets are assigned (tablespec: SIMPLE).", scope="both",
                         default="SIMPLE", allowed=("SIMPLE", "CONSISTENT_HASHING"), spec="spec.index.type")
BUCKET_NUM = HudiKey("hoodie.bucket.index.num.buckets", "Buckets (file groups) per partition.", scope="both",
                      default="256", minimum=1, spec="spec.index.numBuckets")
BUCKET_HASH_FIELDS = HudiKey("hoodie.bucket.index.hash.field", "The fields hashed to a bucket; none: the record key.",
                              scope="both", spec="spec.index.hashFields")
BUCKET_PARTITION_EXPRESSIONS = HudiKey("hoodie.bucket.index.partition.expressions",
                                       "Per-partition bucket counts of Hudi 1.1+'s partition-level bucket index "
                                       "(`regex,count;...`, first regex found in the path wins); its writers load "
                                       "them from the table's hashing config.", scope="writer",
                                       spec="spec.index.partitionBuckets", versions=(8, 9))
BUCKET_PARTITION_RULE = HudiKey("hoodie.bucket.index.partition.rule.type", "How partition bucket expressions read.",
                                scope="writer", default="regex", allowed=("regex",), versions=(8, 9))
TIMESTAMP_TYPE = HudiKey(TIMEBASED_PREFIX + "timestamp.type", "What a time-formatted partition field holds.",
                          scope="both", spec="spec.partitioning.timestamp.input",
                          allowed=("UNIX_TIMESTAMP", "DATE_STRING", "MIXED", "EPOCHMILLISECONDS", "EPOCHMICROSECONDS",
                                   "SCALAR"))
TIMESTAMP_UNIT = HudiKey(TIMEBASED_PREFIX + "timestamp.scalar.time.unit", "The unit of a SCALAR timestamp.",
                          scope="both", spec="spec.partitioning.timestamp.unit",
                          allowed=("NANOSECONDS", "MICROSECONDS", "MILLISECONDS", "SECONDS", "MINUTES", "HOURS", "DAYS"))
TIMESTAMP_INPUT_FORMAT = HudiKey(TIMEBASED_PREFIX + "input.dateformat", "Joda-Time pattern of a DATE_STRING value.",
                                  scope="both", spec="spec.partitioning.timestamp.inputFormat")
TIMESTAMP_OUTPUT_FORMAT = HudiKey(TIMEBASED_PREFIX + "output.dateformat", "Joda-Time pattern of the partition folder.",
                                   scope="both", spec="spec.partitioning.timestamp.outputFormat")
TIMESTAMP_TIMEZONE = HudiKey(TIMEBASED_PREFIX + "timezone", "The zone times are read and formatted in.", scope="both",
                              default="UTC", spec="spec.partitioning.timestamp.timeZone")
TIMESTAMP_INPUT_DELIMITER = HudiKey(TIMEBASED_PREFIX + "input.dateformat.list.delimiter.regex",
                                    "The regex between several input patterns (empty: a comma).", scope="both",
                                    spec="spec.partitioning.timestamp.inputFormatDelimiter")
TIMESTAMP_INPUT_TIMEZONE = HudiKey(TIMEBASED_PREFIX + "input.timezone",
                                   "The zone strings naming none are read in, unless timezone is set.", scope="both",
                                   spec="spec.partitioning.timestamp.inputTimeZone")
TIMESTAMP_OUTPUT_TIMEZONE = HudiKey(TIMEBASED_PREFIX + "output.timezone",
                                    "The zone partition folders are printed in, unless timezone is set.", scope="both",
                                    spec="spec.partitioning.timestamp.outputTimeZone")
SORT_COLUMNS = HudiKey("hoodie.clustering.plan.strategy.sort.columns", "The columns clustering orders rows by.",
                        scope="both", spec="spec.clustering.sortColumns")
TARGET_FILE_MAX_BYTES = HudiKey("hoodie.clustering.plan.strategy.target.file.max.bytes",
                                 "The size of the files clustering writes.", scope="both", default="1073741824",
                                 minimum=1, spec="spec.clustering.targetFileSize")
SMALL_FILE_LIMIT = HudiKey("hoodie.clustering.plan.strategy.small.file.limit",
                            "Files below this size are clustering candidates.", scope="both", default="314572800",
                            minimum=0, spec="spec.clustering.smallFileLimit")
MAX_BYTES_PER_GROUP = HudiKey("hoodie.clustering.plan.strategy.max.bytes.per.group",
                               "The most bytes one clustering group rewrites.", scope="both", default="2147483648",
                               minimum=1, spec="spec.clustering.maxBytesPerGroup")
MAX_NUM_GROUPS = HudiKey("hoodie.clustering.plan.strategy.max.num.groups", "The most groups in one clustering plan.",
                          scope="both", default="30", minimum=1, spec="spec.clustering.maxGroups")
INLINE_MAX_COMMITS = HudiKey("hoodie.clustering.inline.max.commits", "Commits between two clusterings.",
                              scope="both", default="4", minimum=1, spec="spec.clustering.everyNCommits")
PARTITION_REGEX = HudiKey("hoodie.clustering.plan.strategy.partition.regex.pattern",
                           "Only partitions matching this expression are clustered.", scope="both",
                           spec="spec.clustering.partitionFilter")
LOOKBACK_PARTITIONS = HudiKey("hoodie.clustering.plan.strategy.daybased.lookback.partitions",
                               "Only the latest N partitions are clustered.", scope="both", minimum=1,
                               spec="spec.clustering.latestPartitions")
KEEP_COMMITS = HudiKey("hoodie.cleaner.commits.retained", "Commits whose file versions cleaning keeps.", scope="both",
                        default="10", minimum=1, spec="spec.retention.keepCommits")
LAYOUT_OPTIMIZE_STRATEGY = HudiKey("hoodie.layout.optimize.strategy",
                                    "The curve a clustering plan's sort follows (a plan's strategy parameter).",
                                    scope="writer", default="linear", allowed=("linear", "z-order", "hilbert"))
# Writer spellings of table properties (`hudi-options` prints these).
WRITE_TABLE_TYPE = HudiKey("hoodie.datasource.write.table.type", "The writers' table type.", scope="writer",
                            sets=TABLE_TYPE.name, default="COPY_ON_WRITE", allowed=TABLE_TYPE.allowed)
WRITE_RECORD_KEY_FIELDS = HudiKey("hoodie.datasource.write.recordkey.field", "The writers' record key fields.",
                                   scope="writer", sets=RECORD_KEY_FIELDS.name)
WRITE_KEY_GENERATOR = HudiKey("hoodie.datasource.write.keygenerator.class", "The writers' key generator.",
                               scope="writer", sets=KEY_GENERATOR_CLASS.name)
WRITE_PRECOMBINE_FIELD = HudiKey("hoodie.datasource.write.precombine.field", "The writers' ordering field.",
                                  scope="writer", sets=PRECOMBINE_FIELD.name)
# Write options only: what `hudi-options` sets so a Hudi job obeys the table.
WRITE_TABLE_VERSION = HudiKey("hoodie.write.table.version", "The table version a Hudi 1.x writer writes.",
                               scope="writer", versions=(8, 9))
WRITE_AUTO_UPGRADE = HudiKey("hoodie.write.auto.upgrade", "Whether a Hudi 1.x writer upgrades an older table.",
                              scope="writer", default="true", allowed=_BOOL, versions=(8, 9))
RECORD_MERGE_MODE = HudiKey("hoodie.record.merge.mode", "How two records of a key merge (Hudi 1.x): the greater "
                            "ordering value wins, or the later commit.", scope="both",
                            allowed=("EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING", "CUSTOM"), versions=(8, 9))
INITIAL_VERSION = HudiKey("hoodie.table.initial.version", "The table version the table was created at (Hudi 1.x).",
                          versions=(8, 9))
METADATA_ENABLE = HudiKey("hoodie.metadata.enable", "Whether writers maintain Hudi's metadata table.", scope="writer",
                           default="true", allowed=_BOOL)
METADATA_COLUMN_STATS_ENABLE = HudiKey("hoodie.metadata.index.column.stats.enable",
                                       "Whether writers build and maintain the metadata table's column statistics.",
                                       scope="writer", allowed=_BOOL)
METADATA_PARTITION_STATS_ENABLE = HudiKey("hoodie.metadata.index.partition.stats.enable",
                                          "Whether Hudi 1.x writers maintain the metadata table's partition statistics.",
                                          scope="writer", allowed=_BOOL, versions=(8, 9))
METADATA_BLOOM_FILTER_ENABLE = HudiKey("hoodie.metadata.index.bloom.filter.enable",
                                       "Whether writers build and maintain the metadata table's bloom filters "
                                       "(each base file's, which the BLOOM index reads with "
                                       "hoodie.bloom.index.use.metadata).", scope="writer", allowed=_BOOL)
METADATA_RECORD_INDEX_ENABLE = HudiKey("hoodie.metadata.record.index.enable",
                                       "Whether writers build and maintain the metadata table's record index.",
                                       scope="writer", default="false", allowed=_BOOL)
GLOBAL_RECORD_INDEX_ENABLE = HudiKey("hoodie.metadata.global.record.level.index.enable",
                                     "Hudi 1.1+'s name of hoodie.metadata.record.index.enable (the global record index).",
                                     scope="writer", default="false", allowed=_BOOL, versions=(8, 9))
RECORD_INDEX_MIN_FILE_GROUPS = HudiKey("hoodie.metadata.record.index.min.filegroup.count",
                                       "The fewest file groups a new record index gets.", scope="writer",
                                       default="10", minimum=1)
RECORD_INDEX_MAX_FILE_GROUPS = HudiKey("hoodie.metadata.record.index.max.filegroup.count",
                                       "The most file groups a new record index gets.", scope="writer",
                                       default="10000", minimum=1)
RECORD_INDEX_GROWTH_FACTOR = HudiKey("hoodie.metadata.record.index.growth.factor",
                                     "The growth of the key count a new record index is sized for.", scope="writer",
                                     default="2.0")
RECORD_INDEX_MAX_FILE_GROUP_BYTES = HudiKey("hoodie.metadata.record.index.max.filegroup.size",
                                            "The bytes of one record index file group a new index is sized for.",
                                            scope="writer", default="1073741824", minimum=1)
RECORD_INDEX_UPDATE_PARTITION_PATH = HudiKey("hoodie.record.index.update.partition.path",
                                             "The record index moves a key whose partition value changed.",
                                             scope="writer", default="false", allowed=_BOOL)
CLUSTERING_INLINE = HudiKey("hoodie.clustering.inline", "Clustering after commits, in the writer.", scope="writer",
                             default="false", allowed=_BOOL)
CLUSTERING_SCHEDULE_INLINE = HudiKey("hoodie.clustering.schedule.inline", "Clustering scheduled by the writer.",
                                      scope="writer", default="false", allowed=_BOOL)
CLUSTERING_ASYNC = HudiKey("hoodie.clustering.async.enabled", "Clustering run asynchronously by the writer.",
                            scope="writer", default="false", allowed=_BOOL)
CLEAN_AUTOMATIC = HudiKey("hoodie.clean.automatic", "Cleaning after commits, in the writer.", scope="writer",
                           default="true", allowed=_BOOL)
ARCHIVE_AUTOMATIC = HudiKey("hoodie.archive.automatic", "Archiving after commits, in the writer.", scope="writer",
                             default="true", allowed=_BOOL)
RECONCILE_SCHEMA = HudiKey("hoodie.datasource.write.reconcile.schema",
                            "Incoming batches are reconciled with the table's schema.", scope="writer",
                            default="false", allowed=_BOOL)
CONCURRENCY_MODE = HudiKey("hoodie.write.concurrency.mode", "How concurrent writers coordinate.", scope="writer",
                            default="SINGLE_WRITER", allowed=("SINGLE_WRITER", "OPTIMISTIC_CONCURRENCY_CONTROL",
                                                              "NON_BLOCKING_CONCURRENCY_CONTROL"))
FAILED_WRITES_POLICY = HudiKey("hoodie.cleaner.policy.failed.writes", "When failed writes are rolled back.",
                                scope="writer", default="EAGER", allowed=("EAGER", "LAZY", "NEVER"))
LOCK_PROVIDER = HudiKey("hoodie.write.lock.provider", "The lock provider class of concurrent writers.", scope="writer")
LOCK_RETRY_WAIT_MS = HudiKey("hoodie.write.lock.client.wait_time_ms_between_retry",
                              "Milliseconds between two attempts to take the lock.", scope="writer", minimum=0)
LOCK_NUM_RETRIES = HudiKey("hoodie.write.lock.client.num_retries", "Attempts to take the lock.", scope="writer",
                            minimum=0)
LOCK_FILESYSTEM_PATH = HudiKey("hoodie.write.lock.filesystem.path",
                                "The folder of the file-system lock (default: <base>/.hoodie).", scope="writer")
LOCK_FILESYSTEM_EXPIRE = HudiKey("hoodie.write.lock.filesystem.expire",
                                  "Minutes after which a file-system lock is stale (0: never).", scope="writer",
                                  default="0", minimum=0)
CONFLICT_RESOLUTION_STRATEGY = HudiKey("hoodie.write.lock.conflict.resolution.strategy",
                                        "How concurrent commits are checked for conflicts.", scope="writer")
COMBINE_BEFORE_INSERT = HudiKey("hoodie.combine.before.insert", "Records of one key combined before an insert.",
                                 scope="writer", default="false", allowed=_BOOL)
PAYLOAD_CLASS = HudiKey("hoodie.datasource.write.payload.class", "How an incoming record merges with the stored one.",
                         scope="writer")
PAYLOAD_ORDERING_FIELD = HudiKey("hoodie.payload.ordering.field", "The field the payload orders records by.",
                                  scope="writer")
KEEP_MIN_COMMITS = HudiKey("hoodie.keep.min.commits", "Completed commits archiving leaves on the active timeline.",
                           scope="both", default="20", minimum=1, spec="spec.retention.archive.minCommits")
KEEP_MAX_COMMITS = HudiKey("hoodie.keep.max.commits", "Completed commits on the active timeline before archiving runs.",
                           scope="both", default="30", minimum=1, spec="spec.retention.archive.maxCommits")
ARCHIVE_MERGE_ENABLE = HudiKey("hoodie.archive.merge.enable",
                                "Small archive files are merged into one (where the storage cannot append).",
                                scope="writer", default="false", allowed=_BOOL)
ARCHIVE_MERGE_SMALL_FILE_LIMIT = HudiKey("hoodie.archive.merge.small.file.limit.bytes",
                                          "Archive files up to this size are merged.", scope="writer",
                                          default="20971520", minimum=1)
ARCHIVE_MERGE_FILES_BATCH_SIZE = HudiKey("hoodie.archive.merge.files.batch.size",
                                          "Small archive files it takes to merge them.", scope="writer",
                                          default="10", minimum=1)
COMPACTION_PAYLOAD_CLASS = HudiKey("hoodie.compaction.payload.class",
                                   "How a merge-on-read table's compaction merges records (the metadata table's payload).")
LEGACY_PAYLOAD_CLASS = HudiKey("hoodie.table.legacy.payload.class",
                               "Version 9: the payload class a table had before merge modes replaced it.", versions=(9,))
RECORD_MERGE_STRATEGY_ID = HudiKey("hoodie.record.merge.strategy.id", "The record merger's strategy id (Hudi 1.x).",
                                   versions=(6, 8))
TABLE_FORMAT = HudiKey("hoodie.table.format", "The table's format plugin (Hudi 1.1+: native).", versions=(9,))
CDC_ENABLED = HudiKey("hoodie.table.cdc.enabled", "Whether writers log change data (tablespec: false).",
                      default="false", allowed=_BOOL)
PARTITION_METAFILE_BASE_FORMAT = HudiKey("hoodie.partition.metafile.use.base.format",
                                         "Partition metafiles in the base file format (tablespec: false).",
                                         default="false", allowed=_BOOL)
MULTIPLE_BASE_FILE_FORMATS = HudiKey("hoodie.table.multiple.base.file.formats.enable",
                                     "Base files of several formats in one table (tablespec: false).",
                                     default="false", allowed=_BOOL, versions=(8, 9))
COMPACTION_MERGER_STRATEGY = HudiKey("hoodie.compaction.record.merger.strategy",
                                     "The record merger's strategy id (the metadata table's).")


# Merge-on-read compaction (HoodieCompactionConfig of Hudi 0.15 and 1.2, measured: the same keys and values
# in both). Hudi stores none of them in hoodie.properties (a write option only); tablespec records the
# spec's there as it records clustering's (Hudi's Spark writers load them from there too).
COMPACT_INLINE = HudiKey("hoodie.compact.inline", "Compaction scheduled and run by the writer after a deltacommit.",
                         scope="writer", default="false", allowed=_BOOL)
COMPACT_SCHEDULE_INLINE = HudiKey("hoodie.compact.schedule.inline",
                                  "Compaction scheduled (not run) by the writer after a deltacommit.", scope="writer",
                                  default="false", allowed=_BOOL)
COMPACT_ASYNC = HudiKey("hoodie.datasource.compaction.async.enable",
                        "Compaction scheduled and run asynchronously by a streaming writer.", scope="writer",
                        default="true", allowed=_BOOL)
COMPACT_TRIGGER = HudiKey("hoodie.compact.inline.trigger.strategy", "What makes a compaction due.", scope="both",
                          default="NUM_COMMITS", allowed=("NUM_COMMITS", "NUM_COMMITS_AFTER_LAST_REQUEST",
                                                          "TIME_ELAPSED", "NUM_AND_TIME", "NUM_OR_TIME"),
                          spec="spec.compaction.trigger")
COMPACT_MAX_DELTA_COMMITS = HudiKey("hoodie.compact.inline.max.delta.commits",
                                    "Deltacommits since the last compaction that make one due.", scope="both",
                                    default="5", minimum=1, spec="spec.compaction.deltaCommits")
COMPACT_MAX_DELTA_SECONDS = HudiKey("hoodie.compact.inline.max.delta.seconds",
                                    "Seconds since the last compaction that make one due.", scope="both",
                                    default="3600", minimum=1, spec="spec.compaction.elapsedSeconds")
COMPACTION_STRATEGY = HudiKey("hoodie.compaction.strategy", "Which file slices a compaction takes (a class).",
                              scope="both",
                              default="org.apache.hudi.table.action.compact.strategy.LogFileSizeBasedCompactionStrategy",
                              spec="spec.compaction.strategy")
COMPACTION_TARGET_IO = HudiKey("hoodie.compaction.target.io", "The most MB one compaction reads and writes.",
                               scope="both", default="512000", minimum=1, spec="spec.compaction.targetIO")
COMPACTION_DAYBASED_PARTITIONS = HudiKey("hoodie.compaction.daybased.target.partitions",
                                         "The latest partitions a day-based compaction takes.", scope="both",
                                         default="10", minimum=1, spec="spec.compaction.latestPartitions")


QUERY_AS_RO_TABLE = HudiKey("hoodie.query.as.ro.table",
                            "Serde parameter of a catalog registration: whether Spark reads it as the read-optimized "
                            "view (a copy-on-write table: false).", scope="catalog", default="false",
                            allowed=("true", "false"))


def _own(name: str, doc: str, **kw: Any) -> HudiKey:
    """One of tablespec's own keys: in hoodie.properties of the version-6 tables it manages; Hudi ignores it."""
    return HudiKey(name, doc, scope="tablespec", versions=HUDI_0, **kw)


TABLESPEC_INDEX_TYPE = _own("tablespec.index.type", "The index as tablespec names it.",
                            allowed=("SIMPLE", "BLOOM", "BUCKET", "RECORD_LEVEL"), spec="spec.index.type")
PARTITION_BUCKETS = _own("tablespec.bucket.partition.buckets", "Per-partition bucket counts (JSON rules).",
                         spec="spec.index.partitionBuckets")
RECORD_LEVEL_BUCKETS = _own("tablespec.record.level.num.buckets", "The file-group count of the table's record index.",
                            minimum=1, spec="spec.index.recordLevel.numBuckets")
CLUSTERING_STRATEGY = _own("tablespec.clustering.strategy", "The layout clustering writes.",
                           spec="spec.clustering.strategy")
CLUSTERING_MAX_SMALL_FILES = _own("tablespec.clustering.max.small.files", "Small files that make clustering due.",
                                  minimum=1, spec="spec.clustering.maxSmallFiles")
COMPACTION_RUN_BY = _own("tablespec.compaction.run.by", "Who schedules and runs compaction: Hudi's writers (also if absent) or tablespec.",
                         allowed=("hudi", "tablespec"), default="hudi", spec="spec.compaction.runBy")
PREVENT_DESTROY = _own("tablespec.protection.prevent.destroy", "Refuse plans that drop or replace the table.",
                       allowed=_BOOL, spec="spec.protection.preventDestroy")

ALL: tuple[HudiKey, ...] = tuple(v for v in globals().values() if isinstance(v, HudiKey))
BY_NAME: dict[str, HudiKey] = {k.name: k for k in ALL}
_BY_ALIAS: dict[str, HudiKey] = {a.name: k for k in ALL for a in k.aliases}


def get(name: str) -> HudiKey | None:
    """The key `name` spells, by its name or an alias (None: not a key tablespec knows)."""
    return BY_NAME.get(name) or _BY_ALIAS.get(name)


def writer_spellings() -> dict[str, HudiKey]:
    """Writer option -> the table key it sets, where Hudi's writers spell a table property differently."""
    return {k.name: BY_NAME[k.sets] for k in ALL if k.sets is not None}

"""The spec language: one `HudiTable` document per table, validated by pydantic.

Field checks live on the fields; checks that relate fields to each other (a key field must
be a column, ...) live in `rules.py` and run as model validators, so `TableSpec.model_validate`
alone rejects every invalid spec, wherever it comes from (YAML, plan files, import).
"""
from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Annotated, Literal

from pydantic import AfterValidator, ConfigDict, Field, field_validator, model_serializer, model_validator

from tablespec.hudi import joda
from tablespec.hudi.archive.plan import ArchiveSettings
from tablespec.hudi.keygen import DEFAULT_TIME_ZONE, TimestampPartitioning, complex_record_key, input_formats, key_generator_class
from tablespec.spec import rules
from tablespec.spec.base import CROSS_FIELD, SpecModel, problem, raise_problems
from tablespec.spec.sizes import ByteSize, GiB, MiB
from tablespec.types import DataType, TypeParseError, canonical, parse_type

NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
"""Table, database and column names: valid Avro names, since Hudi stores the schema as Avro."""
Name = Annotated[str, Field(pattern=NAME_PATTERN)]


def _regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as e:
        raise problem(f"invalid regular expression {value!r}: {e}") from None
    return value


Regex = Annotated[str, AfterValidator(_regex)]


class Metadata(SpecModel):
    """Identity of the table."""

    name: Name
    """Table name, written to hoodie.table.name."""
    database: Name | None = None
    """Database the table belongs to (hoodie.database.name); optional."""
    labels: dict[str, str] = {}
    """Free-form string labels (team, owner, ...); tablespec does not interpret them."""
    renamed_from: Name | None = None
    """The name of the table now at spec.location, when this spec renames it: plan refuses a table of another name there unless this names it. Not stored in the table."""  # noqa: E501


class Column(SpecModel):
    """One top-level column."""

    name: Name
    """Column name."""
    type: str
    """Spark SQL type: string, int, long, decimal(12,2), array<string>, map<string,int>, struct<a:int,b:string>, ..."""
    nullable: bool = True
    """Whether the column may hold nulls."""
    comment: str | None = None
    """Free-form description of the column."""

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value.startswith("_hoodie_"):
            raise problem(f"column name {value!r} is reserved: names starting with '_hoodie_' are Hudi's metadata columns")
        return value

    @field_validator("type")
    @classmethod
    def _canonical_type(cls, value: str) -> str:
        try:
            return canonical(value)
        except TypeParseError as e:
            raise problem(str(e)) from None

    @property
    def data_type(self) -> DataType:
        """The parsed type tree."""
        return parse_type(self.type)


class RecordKey(SpecModel):
    """How records are identified: by key columns, or by keys Hudi generates (append-only tables)."""

    fields: list[str] = []
    """Columns whose values form the record key (hoodie.table.recordkey.fields)."""
    auto_generate: bool = False
    """Generate unique keys, `<instant>_<sparkPartitionId>_<rowId>` (Hudi RFC-76), for append-only data without
    a natural key; exclusive with `fields`."""

    @model_validator(mode="after")
    def _exactly_one(self) -> RecordKey:
        if self.auto_generate and self.fields:
            raise_problems("RecordKey", [(("autoGenerate",), "autoGenerate: true cannot be combined with fields; use one or the other")])
        if not self.auto_generate and not self.fields:
            raise_problems("RecordKey", [((), "give the record key fields, or autoGenerate: true")])
        return self


def _time_zone(value: str) -> str:
    if value not in ("UTC", "GMT") and value not in _zones():
        raise problem(f"unknown time zone {value!r}; use an IANA name such as UTC or Europe/Berlin")
    return value


def _zones() -> set[str]:
    import zoneinfo
    return zoneinfo.available_timezones()


def _date_format(value: str) -> str:
    try:
        joda.check(value)
    except ValueError as e:
        raise problem(str(e)) from None
    return value


DateFormat = Annotated[str, AfterValidator(_date_format)]


TimeZone = Annotated[str, AfterValidator(_time_zone)]


class PartitionTimestamp(SpecModel):
    """A partition field whose directory is its time value, formatted (Hudi's TimestampBasedKeyGenerator,
    or CustomKeyGenerator's `field:TIMESTAMP` next to other partition fields)."""

    field: str
    """The partition field (one of `fields`) whose value is a point in time."""
    input: Literal["epochSeconds", "epochMillis", "epochMicros", "scalar", "timestamp", "date", "dateString", "mixed"]
    """What the column holds: epoch seconds/milliseconds/microseconds or a number of `unit`s (scalar) in an int,
    long, float, double or string column, a timestamp, a date, or a string in `inputFormat` (dateString;
    mixed: Hudi's MIXED type, which reads strings the same way)."""
    unit: Literal["NANOSECONDS", "MICROSECONDS", "MILLISECONDS", "SECONDS", "MINUTES", "HOURS", "DAYS"] | None = None
    """The unit of a scalar input (hoodie.keygen.timebased.timestamp.scalar.time.unit; Hudi's default SECONDS)."""
    input_format: str | None = None
    """Joda-Time pattern of a dateString column, e.g. `yyyy-MM-dd'T'HH:mm:ss.SSSZ`; several, separated by
    `inputFormatDelimiter` (a comma by default), are tried in order."""
    input_format_delimiter: Regex | None = None
    """Regular expression between several input patterns (hoodie.keygen.timebased.input.dateformat.list.delimiter.regex)."""
    output_format: DateFormat
    """Joda-Time pattern of the directory name, e.g. `yyyy/MM/dd` or `yyyy-MM-dd-HH`
    (Joda-Time letters y, Y, x, w, G, M, d, H, h, K, k, a, m, s, S, E, e, D, Z; other characters and 'quoted text'
    are kept)."""
    time_zone: TimeZone | None = None
    """Zone the time is read and formatted in (hoodie.keygen.timebased.timezone); UTC when no zone is given.
    `null`: no zone set, as Hudi without one: strings naming no zone are read in the writer JVM's zone
    (taken as UTC) and each directory is formatted in the zone its string names."""
    input_time_zone: TimeZone | None = None
    """Without timeZone: the zone of strings that name none (hoodie.keygen.timebased.input.timezone)."""
    output_time_zone: TimeZone | None = None
    """Without timeZone: the zone directories are formatted in (hoodie.keygen.timebased.output.timezone); unset,
    a string's own zone (its offset or zone id), else the input zone."""

    @model_validator(mode="before")
    @classmethod
    def _utc_unless_zoned(cls, data):
        """No zone named is UTC, Hudi's documented default, so specs with and without it compare equal
        (`timeZone: null` says no zone is set)."""
        zones = ("timeZone", "time_zone", "inputTimeZone", "input_time_zone", "outputTimeZone", "output_time_zone")
        if isinstance(data, dict) and not any(k in data for k in zones):
            return {**data, "timeZone": DEFAULT_TIME_ZONE}
        return data

    # One rule per relation: a rule reading a field that failed validation is skipped (spec/base.py).
    @model_validator(mode="after")
    def _format_for_strings(self) -> PartitionTimestamp:
        strings = self.input in ("dateString", "mixed")
        if strings and not self.input_format:
            raise_problems("PartitionTimestamp", [(("inputFormat",), f"input {self.input} needs inputFormat")])
        if not strings and self.input_format:
            raise_problems("PartitionTimestamp", [(("inputFormat",), f"inputFormat is for input dateString or mixed, "
                                                                     f"not {self.input}")])
        return self

    @model_validator(mode="after")
    def _input_patterns(self) -> PartitionTimestamp:
        if not self.input_format:
            return self
        try:
            for pattern in input_formats(self.input_format, self.input_format_delimiter):
                joda.check(pattern)
        except ValueError as e:
            raise_problems("PartitionTimestamp", [(("inputFormat",), str(e))])
        return self

    @model_validator(mode="after")
    def _unit_for_scalars(self) -> PartitionTimestamp:
        if self.unit and self.input != "scalar":
            raise_problems("PartitionTimestamp", [(("unit",), f"unit is for input scalar, not {self.input}")])
        return self

    @model_validator(mode="after")
    def _one_zone_setting(self) -> PartitionTimestamp:
        if self.time_zone and (self.input_time_zone or self.output_time_zone):
            raise_problems("PartitionTimestamp", [(("timeZone",), "timeZone sets both the input and the output zone "
                                                                  "(Hudi then ignores inputTimeZone and outputTimeZone): "
                                                                  "give one or the others")])
        return self

    def to_hudi(self) -> TimestampPartitioning:
        return TimestampPartitioning(self.field, self.input, self.output_format, self.time_zone, self.input_format,
                                     self.unit, self.input_time_zone, self.output_time_zone, self.input_format_delimiter)


class Partitioning(SpecModel):
    """How records are laid out in partition directories."""

    fields: list[str] = []
    """Partition columns, outermost first; empty means not partitioned."""
    hive_style: bool = True
    """Directory names as `column=value` (true) or just `value` (false)."""
    url_encode: bool = False
    """Escape special characters of partition values as `%XX` (Hudi's
    hoodie.datasource.write.partitionpath.urlencode): `eu/west` is directory `eu%2Fwest`, not two levels.
    Paths, `_hoodie_partition_path`, partitionBuckets patterns and clustering.partitionFilter see the encoded
    path; the column keeps the value."""
    timestamp: PartitionTimestamp | None = None
    """One partition field partitioned by its formatted time value (e.g. event time -> yyyy/MM/dd)."""


def _type_required(schema: dict) -> None:
    schema["required"] = ["type", *schema.get("required", [])]


class _IndexModel(SpecModel):
    # Python callers may omit `type` (each class has it as default); YAML authors must write it.
    model_config = ConfigDict(json_schema_extra=_type_required)


class SimpleIndex(_IndexModel):
    """Hudi's SIMPLE index: joins incoming keys against the keys stored in the files."""

    type: Literal["SIMPLE"] = "SIMPLE"
    """Index type."""


class BloomIndex(_IndexModel):
    """Hudi's BLOOM index: bloom filters in the file footers prune the files to look up."""

    type: Literal["BLOOM"] = "BLOOM"
    """Index type."""


class PartitionBuckets(SpecModel):
    """A bucket count for the partitions whose path matches a pattern."""

    pattern: Regex
    """Regular expression matched against the partition path."""
    num_buckets: Annotated[int, Field(ge=1)]
    """Number of buckets in matching partitions."""


class BucketIndex(_IndexModel):
    """Hudi's BUCKET index: the hash of the key picks a fixed file group, no lookup needed."""

    type: Literal["BUCKET"] = "BUCKET"
    """Index type."""
    num_buckets: Annotated[int, Field(ge=1)]
    """Number of buckets (file groups) per partition (hoodie.bucket.index.num.buckets)."""
    hash_fields: list[str] | None = None
    """Fields hashed to pick the bucket; a subset of the record key fields. Default: the record key fields."""
    partition_buckets: list[PartitionBuckets] = []
    """Per-partition bucket counts, first matching pattern wins (RFC-89)."""


class RecordLevelSettings(SpecModel):
    """Tuning of the record-level index (Apache Hudi's record index: the metadata table's record_index partition)."""

    num_buckets: Annotated[int, Field(ge=1)] | None = None
    """File groups of Hudi's record index, fixed when it is built (Hudi's
    hoodie.metadata.record.index.min/max.filegroup.count); changing it rebuilds the index. Default: sized from
    the table's keys as Hudi sizes it (at least 10), kept in hoodie.properties."""
    max_files_per_bucket: Annotated[int, Field(ge=1)] | None = None
    """Deprecated, no effect: the record index's log files are compacted by the metadata table's own compaction."""


class RecordLevelIndex(_IndexModel):
    """A global record-level index: key -> (partition, file group), keys unique across partitions. It is Apache
    Hudi's record index (hoodie.index.type RECORD_INDEX), which Hudi writers use and keep too."""

    type: Literal["RECORD_LEVEL"] = "RECORD_LEVEL"
    """Index type."""
    record_level: RecordLevelSettings | None = None
    """Settings of the record-level index."""


Index = Annotated[SimpleIndex | BloomIndex | BucketIndex | RecordLevelIndex, Field(discriminator="type")]
INDEX_TYPES = (SimpleIndex, BloomIndex, BucketIndex, RecordLevelIndex)


class ColumnStatsIndex(SpecModel):
    """Hudi's column statistics (the metadata table's column_stats partition): per base file and column, min,
    max, null and value counts, which Hudi's readers skip files with (hoodie.enable.data.skipping)."""

    columns: list[str] | None = None
    """Columns with statistics (table columns or Hudi's meta columns), as the table's index definition lists
    them (table version 9: .hoodie/.index_defs/index.json). Default: Hudi's (version 9: `_hoodie_commit_time`,
    `_hoodie_partition_path`, `_hoodie_record_key`, then the first data columns, 32 in all; version 6: every
    column, Hudi 0.15's default). Version 6 keeps every column: a list is refused there."""


class SecondaryIndex(SpecModel):
    """A Hudi 1.x secondary index (`CREATE INDEX name ON t (column)`): the metadata table's
    `secondary_index_<name>` partition maps each value of `column` to the record keys holding it, which Hudi's
    readers look up for equality filters on the column. Table version 9 copy-on-write, with the RECORD_LEVEL
    index (Hudi requires its record index)."""

    name: Name
    """Index name (its metadata partition is `secondary_index_<name>`)."""
    column: str
    """Indexed column (a table column of a primitive type)."""


class ExpressionIndex(SpecModel):
    """A Hudi 1.x expression index (`CREATE INDEX name ON t USING column_stats(column)
    OPTIONS(expr='from_unixtime', format='yyyy-MM-dd')`, or `bloom_filters`): the metadata table's
    `expr_index_<name>` partition holds statistics or bloom filters of a Spark SQL function of `column`.
    `import` declares the ones a table has; tablespec's writes cannot keep them (they would go stale), so a
    plan of a spec declaring one is refused: declare `dataSkipping` without it to drop it."""

    name: Name
    """Index name (its metadata partition is `expr_index_<name>`)."""
    type: Literal["column_stats", "bloom_filters"]
    """What the partition holds of the expression's values."""
    column: str
    """The column the expression reads."""
    expression: str
    """The Spark SQL function (`expr`), e.g. from_unixtime, lower, upper, substring."""
    options: dict[str, str] = {}
    """The function's other options, as Hudi's index definition records them (e.g. format)."""


class DataSkipping(SpecModel):
    """Indexes in Hudi's metadata table that Hudi's readers skip files and partitions with. tablespec keeps the
    declared ones in every change, computed from the Parquet footers it writes, builds a declared one the table
    lacks (`build_data_skipping`) and drops an undeclared one; without this section a table keeps those it has."""

    column_stats: ColumnStatsIndex | None = None
    """Keep column statistics (`{}`: Hudi's default columns)."""
    partition_stats: bool = False
    """Keep partition statistics (the partition_stats partition: table version 9, Hudi 1.1+'s default;
    needs columnStats)."""
    bloom_filters: bool = False
    """Keep each base file's bloom filter of record keys in the metadata table (the bloom_filters partition), which
    Hudi's BLOOM index reads instead of the files' footers (hoodie.bloom.index.use.metadata)."""
    secondary_indexes: list[SecondaryIndex] = []
    """Hudi 1.x's secondary indexes (table version 9, copy-on-write, RECORD_LEVEL index): kept in every change."""
    expression_indexes: list[ExpressionIndex] = []
    """Hudi 1.x's expression indexes, as `import` finds them: not kept by tablespec (a plan declaring one is refused)."""


class Clustering(SpecModel):
    """Periodic rewriting of small files into larger, optionally sorted, ones."""

    strategy: Literal["NONE", "SORT", "ZORDER", "HILBERT"] = "NONE"
    """NONE stitches small files together without sorting; SORT, ZORDER and HILBERT also order the rows."""
    sort_columns: list[str] = []
    """Columns to order by; required for SORT, ZORDER and HILBERT."""
    target_file_size: Annotated[ByteSize, Field(ge=1)] = 128 * MiB
    """Size of the files clustering writes: bytes, or a string such as 256MiB."""
    small_file_limit: ByteSize = 100 * MiB
    """Files smaller than this are clustering candidates; must be below targetFileSize."""
    max_bytes_per_group: Annotated[ByteSize, Field(ge=1)] = 2 * GiB
    """Most input bytes one clustering group rewrites."""
    max_groups: Annotated[int, Field(ge=1)] = 30
    """Most clustering groups in one clustering plan."""
    every_n_commits: Annotated[int, Field(ge=1)] = 4
    """Plan proposes clustering once this many commits landed since the last one (replacecommits do not count)."""
    max_small_files: Annotated[int, Field(ge=1)] | None = None
    """Plan also proposes clustering as soon as more small files than this exist, whatever the commit count."""
    partition_filter: Regex | None = None
    """Only partitions whose path matches this regular expression (in full) are clustered."""
    latest_partitions: Annotated[int, Field(ge=1)] | None = None
    """Only the latest N partitions (in partition path order) are clustered."""

    @model_validator(mode="after")
    def _consistent(self) -> Clustering:
        raise_problems("Clustering", rules.clustering_problems(self))
        return self


class Compaction(SpecModel):
    """Compaction of a MERGE_ON_READ table: merging each file slice's log files into a new base file
    (Apache Hudi's compaction, with its trigger and strategy settings)."""

    run_by: Literal["hudi", "tablespec"] = "hudi"
    """Who compacts: `hudi`, the table's Hudi jobs (inline in batch jobs, asynchronously in streaming
    ones; `hudi-options` renders this policy for them), or `tablespec` (`plan` shows it when due, `apply`
    schedules and runs it, and runs a plan a Hudi writer left pending; `hudi-options` turns the jobs' own
    compaction off)."""
    trigger: Literal["DELTA_COMMITS", "ELAPSED_TIME", "EITHER", "BOTH"] = "DELTA_COMMITS"
    """What makes a compaction due: `deltaCommits` deltacommits since the last compaction, `elapsedSeconds`
    since it, either or both (hoodie.compact.inline.trigger.strategy NUM_COMMITS, TIME_ELAPSED, NUM_OR_TIME,
    NUM_AND_TIME)."""
    delta_commits: Annotated[int, Field(ge=1)] = 5
    """Deltacommits since the last compaction that make one due (hoodie.compact.inline.max.delta.commits)."""
    elapsed_seconds: Annotated[int, Field(ge=1)] = 3600
    """Seconds since the last compaction (or the first deltacommit) that make one due
    (hoodie.compact.inline.max.delta.seconds)."""
    strategy: Literal["LOG_FILE_SIZE", "LOG_FILE_COUNT", "BOUNDED_IO", "DAY_BASED", "UNBOUNDED"] = "LOG_FILE_SIZE"
    """Which file slices a compaction takes (hoodie.compaction.strategy): those with the most log bytes first
    (LogFileSizeBasedCompactionStrategy) or the most log files first (LogFileNumBased...), in partition order
    (BoundedIO...), each up to `targetIO`; the slices of the latest `latestPartitions` partitions (DayBased...);
    or every slice with log files (UnBounded...)."""
    target_io: Annotated[ByteSize, Field(ge=MiB, alias="targetIO")] = 500 * GiB
    """Most bytes one compaction reads and writes (hoodie.compaction.target.io, in whole MiB)."""
    latest_partitions: Annotated[int, Field(ge=1)] | None = None
    """DAY_BASED: how many of the latest partitions (in partition path order) a compaction takes
    (hoodie.compaction.daybased.target.partitions; Hudi's default 10)."""

    @model_validator(mode="after")
    def _consistent(self) -> Compaction:
        raise_problems("Compaction", rules.compaction_problems(self))
        return self


class Archive(SpecModel):
    """How many completed commits stay on the active timeline (Hudi's archiving): once more than
    `maxCommits` are there, the oldest move to the archived timeline until `minCommits` remain."""

    min_commits: Annotated[int, Field(ge=1)] = 20
    """Completed commits archiving leaves active (hoodie.keep.min.commits); more than keepCommits."""
    max_commits: Annotated[int, Field(ge=1)] = 30
    """Completed commits on the active timeline before archiving runs (hoodie.keep.max.commits); more than minCommits."""


class Retention(SpecModel):
    """How much history the cleaner keeps, and how much stays on the active timeline."""

    keep_commits: Annotated[int, Field(ge=1)] = 10
    """File versions kept for time travel before cleaning, counted in commits."""
    archive: Archive | None = None
    """Archiving of old instants; omitted: Hudi's 20/30, raised above keepCommits when it retains more."""

    @model_validator(mode="after")
    def _consistent(self) -> Retention:
        raise_problems("Retention", rules.retention_problems(self))
        return self


class Protection(SpecModel):
    """Guards against accidental changes."""

    prevent_destroy: bool = False
    """Refuse any plan that would drop or replace the table, even with --allow-destructive."""


class CatalogEntry(SpecModel):
    """Where the table is registered in the project's catalog, so SQL users query it by name."""

    database: Name
    """Catalog database (created when missing)."""
    table: Name | None = None
    """Catalog table name; default: metadata.name."""


class TableBody(SpecModel):
    """The desired state of the table."""

    location: str
    """Table directory, relative to the warehouse root (e.g. sales/orders); not absolute, no `..`."""
    table_type: Literal["COPY_ON_WRITE", "MERGE_ON_READ"] = "COPY_ON_WRITE"
    """Hudi table type: COPY_ON_WRITE rewrites base files on every update; MERGE_ON_READ appends updates to log
    files (deltacommits), merged into base files by compaction. tablespec imports, reads, plans and compacts
    MERGE_ON_READ tables, and creates and writes them at table version 6 with the BUCKET, SIMPLE or BLOOM index."""
    table_version: Literal[6, 8, 9] | None = None
    """Hudi table version (6: Hudi 0.14/0.15; 8: Hudi 1.0; 9: Hudi 1.1 and 1.2). New tables are created at it (default: the project's `tableVersion`, else 6); an existing table keeps its version unless this names another: 6 -> 8 or 9 upgrades it as Hudi 1.x does, a downgrade is refused."""  # noqa: E501
    columns: Annotated[list[Column], Field(min_length=1)]
    """The table's columns, in order."""
    record_key: RecordKey
    """Record key: `fields` or `autoGenerate: true`."""
    partitioning: Partitioning = Partitioning()
    """Partition layout; default: not partitioned."""
    ordering_field: str | None = None
    """Precombine field: when two versions of a key meet, the greater value wins."""
    index: Index = SimpleIndex()
    """Index used to find the file group of a key."""
    data_skipping: DataSkipping | None = None
    """Hudi's data-skipping indexes in the metadata table (column and partition statistics); default: those the
    table has are kept."""
    clustering: Clustering = Clustering()
    """Clustering (small-file stitching and sorting)."""
    compaction: Compaction | None = None
    """MERGE_ON_READ only: when compaction runs, which file slices it takes and who schedules it; default:
    Hudi's settings, scheduled by the table's Hudi jobs."""
    retention: Retention = Retention()
    """Cleaning policy."""
    protection: Protection = Protection()
    """Guards against destructive plans."""
    catalog: CatalogEntry | None = None
    """Register the table in the project's catalog (`catalog:` in tablespec.project.yaml); default: not registered."""

    @field_validator("location")
    @classmethod
    def _relative_location(cls, value: str) -> str:
        if not value.strip():
            raise problem("location must not be empty")
        if "://" in value or value.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:", value):
            raise problem(f"location must be relative to the warehouse root, got {value!r}")
        if "\\" in value:
            raise problem(f"location must use '/' between directories, got {value!r}")
        path = PurePosixPath(value)
        if ".." in path.parts:
            raise problem(f"location must stay inside the warehouse root ('..' is not allowed), got {value!r}")
        if path.as_posix() == ".":
            raise problem("location must name a directory below the warehouse root")
        return path.as_posix()

    @model_serializer(mode="wrap")
    def _unregistered_as_before(self, handler) -> dict:
        # a spec without `catalog:` dumps (and so digests) as it did before catalogs existed
        data = handler(self)
        if isinstance(data, dict):   # as do specs that leave the table version to the project (or to the table)
            for name in ("catalog", "table_version", "tableVersion", "compaction", "data_skipping", "dataSkipping"):
                if data.get(name, 0) is None:
                    data.pop(name)
        return data

    @model_validator(mode="after")
    def _cross_field(self) -> TableBody:
        raise_problems("TableBody", rules.body_problems(self), CROSS_FIELD)
        return self


class TableSpec(SpecModel):
    """A Hudi table, as one YAML document."""

    api_version: Literal["tablespec/v1"]
    """Version of the spec language."""
    kind: Literal["HudiTable"]
    """Kind of resource."""
    metadata: Metadata
    """Name, database and labels."""
    spec: TableBody
    """Desired state of the table."""

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def qualified_name(self) -> str:
        """`database.name`, or `name` without a database."""
        return f"{self.metadata.database}.{self.name}" if self.metadata.database else self.name

    @property
    def catalog_name(self) -> tuple[str, str] | None:
        """(database, table) of the table's catalog entry, or None when it is not registered."""
        entry = self.spec.catalog
        return (entry.database, entry.table or self.name) if entry is not None else None

    def column(self, name: str) -> Column | None:
        return next((c for c in self.spec.columns if c.name == name), None)

    @property
    def compaction_settings(self) -> Compaction | None:
        """The compaction a MERGE_ON_READ table's spec declares (Hudi's defaults when it says none); None on
        COPY_ON_WRITE."""
        if self.spec.table_type != "MERGE_ON_READ":
            return None
        return self.spec.compaction or Compaction()

    @property
    def archive_settings(self) -> ArchiveSettings:
        """The archiving limits the spec declares (or Hudi's defaults, following keepCommits); on a
        MERGE_ON_READ table, the deltacommits a compaction trigger counts (Hudi's archiver keeps them)."""
        retention, compaction = self.spec.retention, self.compaction_settings
        counted = compaction.delta_commits if compaction is not None and compaction.trigger in ("DELTA_COMMITS", "BOTH") \
            else None
        if retention.archive is None:
            return ArchiveSettings.following(retention.keep_commits, compaction_delta_commits=counted)
        return ArchiveSettings(retention.archive.min_commits, retention.archive.max_commits, retention.keep_commits,
                               counted)

    @property
    def key_generator(self) -> str:
        """Hudi's key generator class for this record key and partitioning."""
        ts = self.spec.partitioning.timestamp
        return key_generator_class(self.spec.record_key.fields, self.spec.partitioning.fields,
                                   ts.field if ts is not None else None)

    @property
    def complex_record_key(self) -> bool:
        """Whether record keys are `f1:v1,f2:v2` (else the single field's value)."""
        return complex_record_key(self.key_generator, self.spec.record_key.fields, self.spec.partitioning.fields)

    @property
    def timestamp_partitioning(self) -> TimestampPartitioning | None:
        ts = self.spec.partitioning.timestamp
        return ts.to_hudi() if ts is not None else None

    @property
    def effective_hash_fields(self) -> list[str]:
        """Fields a BUCKET index hashes (explicit, else the record key fields); [] for other indexes."""
        index = self.spec.index
        if not isinstance(index, BucketIndex):
            return []
        return list(index.hash_fields) if index.hash_fields is not None else list(self.spec.record_key.fields)

"""The one mapping between spec fields and hoodie.properties keys (named through hudi/keys.py).

Every setting tablespec manages lives in hoodie.properties (Hudi's own key where Hudi has one,
`tablespec.*` otherwise), so the table itself is the state. The same registry drives table
creation, the diff, settings updates and `import`, so they cannot disagree.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from tablespec.hudi import keygen, keys
from tablespec.hudi.config import DEFAULT_INDEX_TYPE, INDEX_TYPE_KEY, TABLESPEC_INDEX_TYPE_KEY, hudi_index_type, table_index_type
from tablespec.hudi.services.compaction import STRATEGIES, TRIGGERS
from tablespec.spec.model import Clustering, Compaction, Protection, Retention, TableSpec
from tablespec.spec.sizes import size_text

Category = Literal["settings", "key", "index"]
LABEL_PREFIX = keys.LABEL_PREFIX


Kind = Literal["text", "int", "size", "bool", "list", "json", "class"]


@dataclass(frozen=True)
class Setting:
    prop: str                         # hoodie.properties key
    path: str                         # spec path shown to users (camelCase); import writes the value there
    category: Category                # what changing it means: settings (metadata), key (destructive), index
    desired: Callable[[TableSpec], str | None]
    default: str | None = None        # effective value when the property is absent from a table
    kind: Kind = "text"               # how the value reads in a spec and in a plan (sizes with units, ...)
    sized_by_table: bool = False      # unset in the spec: tablespec chose the value; keep it, no diff
    derived: bool = False             # follows a setting of the same path: written with it, never diffed or shown alone
    observe: Callable[[dict[str, str]], str | None] | None = None  # the table's value, when not just the key's
    imported: bool = True             # import writes the table's value at `path` (False: import derives it)
    unrecorded: bool = False          # Apache Hudi may not persist it: absent from a table is unknown, not
    #                                   different (tablespec/stored_paths.py checks the spec's value on the rows)
    import_default: bool = True       # import writes it at its default too (False: a rarely set option, only when set)
    table_decides: bool = False       # unset in the spec: the table's value stands (no diff, kept by apply)
    shapes_rows: bool = True          # changes where or how a write lays rows out: a write waits until the table
    #                                   matches (False: names, labels, housekeeping; a write goes on beside the drift)
    to_spec: Callable[[str], object] | None = None   # the spec's word for a stored value, where Hudi's differs


def _csv(values) -> str | None:
    return ",".join(values) if values else None


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _num(value) -> str | None:
    return None if value is None else str(value)


def key_generator(spec: TableSpec) -> str:
    """Hudi's key generator for the spec's record key and partitioning (SimpleKeyGenerator etc.)."""
    return spec.key_generator


def _custom_fields(spec: TableSpec) -> str | None:
    ts = spec.spec.partitioning.timestamp
    if key_generator(spec) != keygen.CUSTOM:
        return None
    return keygen.custom_fields(spec.spec.partitioning.fields, ts.field if ts is not None else None)


def _timebased(key: str):
    return lambda s: s.timestamp_partitioning.properties().get(key) if s.timestamp_partitioning else None


def _partition_names(props: dict[str, str]) -> str | None:
    """Partition fields without CustomKeyGenerator's `:TYPE` suffixes."""
    names = [f.split(":", 1)[0].strip() for f in (props.get(PARTITION_FIELDS) or "").split(",") if f.strip()]
    return _csv(names)


def _hash_fields(props: dict[str, str]) -> str | None:
    """Hudi hashes the record key fields when the table names no hash fields."""
    if table_index_type(props) != "BUCKET":
        return props.get(HASH_FIELDS)
    return props.get(HASH_FIELDS) or props.get(RECORD_KEY_FIELDS)


def _index_attr(name: str, render=_num):
    return lambda s: render(getattr(s.spec.index, name, None)) if s.spec.index.type == "BUCKET" else None


def _partition_buckets(spec: TableSpec) -> str | None:
    rules = getattr(spec.spec.index, "partition_buckets", None) or []
    return json.dumps([{"pattern": r.pattern, "numBuckets": r.num_buckets} for r in rules], separators=(",", ":")) if rules else None


def _record_level_buckets(spec: TableSpec) -> str | None:
    rl = getattr(spec.spec.index, "record_level", None)
    return _num(rl.num_buckets) if spec.spec.index.type == "RECORD_LEVEL" and rl is not None else None


def _compaction(render: Callable[[Compaction], str | None]) -> Callable[[TableSpec], str | None]:
    """A MERGE_ON_READ spec's compaction setting (Hudi's defaults when it declares none); None on COPY_ON_WRITE."""
    return lambda s: render(c) if (c := s.compaction_settings) is not None else None


def _archive(spec: TableSpec, name: str) -> str | None:
    """A declared archiving limit; None when the spec leaves archiving at Hudi's defaults."""
    archive = spec.spec.retention.archive
    return None if archive is None else _num(getattr(archive, name))


_C, _R, _P = Clustering(), Retention(), Protection()
_MIB = 1024 * 1024
_SPEC_STRATEGY = {cls: name for name, cls in STRATEGIES.items()}
_SPEC_TRIGGER = {hudi: name for name, hudi in TRIGGERS.items()}
RECORD_KEY_FIELDS = keys.RECORD_KEY_FIELDS.name
PARTITION_FIELDS = keys.PARTITION_FIELDS.name
KEY_GENERATOR = keys.KEY_GENERATOR_CLASS.name
NUM_BUCKETS = keys.BUCKET_NUM.name
HASH_FIELDS = keys.BUCKET_HASH_FIELDS.name
PARTITION_BUCKETS = keys.PARTITION_BUCKETS.name
RECORD_LEVEL_BUCKETS = keys.RECORD_LEVEL_BUCKETS.name
HIVE_STYLE = keys.HIVE_STYLE_PARTITIONING.name
URL_ENCODE = keys.URL_ENCODE_PARTITIONING.name
KEEP_COMMITS = keys.KEEP_COMMITS.name
PREVENT_DESTROY = keys.PREVENT_DESTROY.name
_TS = "spec.partitioning.timestamp."

REGISTRY: tuple[Setting, ...] = (
    Setting(keys.TABLE_NAME.name, "metadata.name", "settings", lambda s: s.metadata.name, shapes_rows=False),
    # Spark SQL's `CREATE TABLE ... USING hudi LOCATION` writes hoodie.database.name into a table it registers
    Setting(keys.DATABASE_NAME.name, "metadata.database", "settings", lambda s: s.metadata.database,
            observe=lambda p: p.get(keys.DATABASE_NAME.name) or None, table_decides=True, shapes_rows=False),
    Setting(keys.TABLE_TYPE.name, "spec.tableType", "key", lambda s: s.spec.table_type, keys.TABLE_TYPE.default),
    Setting(RECORD_KEY_FIELDS, "spec.recordKey.fields", "key", lambda s: _csv(s.spec.record_key.fields), kind="list"),
    Setting(KEY_GENERATOR, "keyGenerator", "key", key_generator, kind="class", imported=False,
            observe=lambda p: keygen.canonical_class(p.get(KEY_GENERATOR))),
    Setting(PARTITION_FIELDS, "spec.partitioning.fields", "key", lambda s: _csv(s.spec.partitioning.fields),
            kind="list", observe=_partition_names),
    Setting(keygen.CUSTOM_FIELDS_KEY, "spec.partitioning.timestamp.field", "key", _custom_fields,
            imported=False, unrecorded=True),
    Setting(HIVE_STYLE, "spec.partitioning.hiveStyle", "key",
            lambda s: _bool(s.spec.partitioning.hive_style), "false", kind="bool"),
    Setting(URL_ENCODE, "spec.partitioning.urlEncode", "key", lambda s: _bool(s.spec.partitioning.url_encode),
            "false", kind="bool", import_default=False),
    Setting(keygen.TYPE_KEY, _TS + "input", "key", _timebased(keygen.TYPE_KEY), imported=False, unrecorded=True,
            observe=keygen.observed_type),
    Setting(keygen.UNIT_KEY, _TS + "unit", "key", _timebased(keygen.UNIT_KEY), imported=False,
            observe=lambda p: keygen.observed_unit(p) or (keygen.DEFAULT_SCALAR_UNIT
                                                          if keygen.observed_type(p) == "SCALAR" else None)),
    Setting(keygen.INPUT_FORMAT_KEY, _TS + "inputFormat", "key", _timebased(keygen.INPUT_FORMAT_KEY), imported=False,
            unrecorded=True),
    Setting(keygen.INPUT_DELIMITER_KEY, _TS + "inputFormatDelimiter", "key", _timebased(keygen.INPUT_DELIMITER_KEY),
            imported=False, unrecorded=True),
    Setting(keygen.OUTPUT_FORMAT_KEY, _TS + "outputFormat", "key", _timebased(keygen.OUTPUT_FORMAT_KEY),
            imported=False, unrecorded=True),
    Setting(keygen.TIMEZONE_KEY, _TS + "timeZone", "key", _timebased(keygen.TIMEZONE_KEY), imported=False,
            unrecorded=True),
    Setting(keygen.INPUT_TIMEZONE_KEY, _TS + "inputTimeZone", "key", _timebased(keygen.INPUT_TIMEZONE_KEY),
            imported=False, unrecorded=True),
    Setting(keygen.OUTPUT_TIMEZONE_KEY, _TS + "outputTimeZone", "key", _timebased(keygen.OUTPUT_TIMEZONE_KEY),
            imported=False, unrecorded=True),
    Setting(keys.PRECOMBINE_FIELD.name, "spec.orderingField", "settings", lambda s: s.spec.ordering_field),
    Setting(TABLESPEC_INDEX_TYPE_KEY, "spec.index.type", "index", lambda s: s.spec.index.type,
            observe=table_index_type),
    Setting(INDEX_TYPE_KEY, "spec.index.type", "index", lambda s: hudi_index_type(s.spec.index.type),
            DEFAULT_INDEX_TYPE, derived=True),
    Setting(keys.BUCKET_ENGINE.name, "spec.index.type", "index",
            lambda s: "SIMPLE" if s.spec.index.type == "BUCKET" else None, derived=True),
    Setting(NUM_BUCKETS, "spec.index.numBuckets", "index", _index_attr("num_buckets"), kind="int"),
    Setting(HASH_FIELDS, "spec.index.hashFields", "index",
            lambda s: _csv(s.effective_hash_fields) if s.spec.index.type == "BUCKET" else None, kind="list",
            observe=_hash_fields),
    Setting(PARTITION_BUCKETS, "spec.index.partitionBuckets", "index", _partition_buckets, kind="json"),
    Setting(RECORD_LEVEL_BUCKETS, "spec.index.recordLevel.numBuckets", "index", _record_level_buckets,
            kind="int", sized_by_table=True),
    Setting(keys.CLUSTERING_STRATEGY.name, "spec.clustering.strategy", "settings",
            lambda s: s.spec.clustering.strategy, _C.strategy, shapes_rows=False),
    Setting(keys.SORT_COLUMNS.name, "spec.clustering.sortColumns", "settings",
            lambda s: _csv(s.spec.clustering.sort_columns), kind="list", shapes_rows=False),
    Setting(keys.TARGET_FILE_MAX_BYTES.name, "spec.clustering.targetFileSize", "settings",
            lambda s: _num(s.spec.clustering.target_file_size), _num(_C.target_file_size), kind="size"),
    Setting(keys.SMALL_FILE_LIMIT.name, "spec.clustering.smallFileLimit", "settings",
            lambda s: _num(s.spec.clustering.small_file_limit), _num(_C.small_file_limit), kind="size"),
    Setting(keys.MAX_BYTES_PER_GROUP.name, "spec.clustering.maxBytesPerGroup", "settings",
            lambda s: _num(s.spec.clustering.max_bytes_per_group), _num(_C.max_bytes_per_group), kind="size", shapes_rows=False),
    Setting(keys.MAX_NUM_GROUPS.name, "spec.clustering.maxGroups", "settings",
            lambda s: _num(s.spec.clustering.max_groups), _num(_C.max_groups), kind="int", shapes_rows=False),
    Setting(keys.INLINE_MAX_COMMITS.name, "spec.clustering.everyNCommits", "settings",
            lambda s: _num(s.spec.clustering.every_n_commits), _num(_C.every_n_commits), kind="int", shapes_rows=False),
    Setting(keys.PARTITION_REGEX.name, "spec.clustering.partitionFilter", "settings",
            lambda s: s.spec.clustering.partition_filter, shapes_rows=False),
    Setting(keys.LOOKBACK_PARTITIONS.name, "spec.clustering.latestPartitions",
            "settings", lambda s: _num(s.spec.clustering.latest_partitions), kind="int", shapes_rows=False),
    Setting(keys.CLUSTERING_MAX_SMALL_FILES.name, "spec.clustering.maxSmallFiles", "settings",
            lambda s: _num(s.spec.clustering.max_small_files), kind="int", shapes_rows=False),
    # compaction: Hudi's keys (its writers load them from hoodie.properties too), imported where set
    Setting(keys.COMPACTION_RUN_BY.name, "spec.compaction.runBy", "settings", _compaction(lambda c: c.run_by),
            keys.COMPACTION_RUN_BY.default, import_default=False, shapes_rows=False),
    Setting(keys.COMPACT_TRIGGER.name, "spec.compaction.trigger", "settings", _compaction(lambda c: TRIGGERS[c.trigger]),
            keys.COMPACT_TRIGGER.default, import_default=False, shapes_rows=False, to_spec=lambda v: _SPEC_TRIGGER.get(v, v)),
    Setting(keys.COMPACT_MAX_DELTA_COMMITS.name, "spec.compaction.deltaCommits", "settings",
            _compaction(lambda c: _num(c.delta_commits)), keys.COMPACT_MAX_DELTA_COMMITS.default, kind="int",
            import_default=False, shapes_rows=False),
    Setting(keys.COMPACT_MAX_DELTA_SECONDS.name, "spec.compaction.elapsedSeconds", "settings",
            _compaction(lambda c: _num(c.elapsed_seconds)), keys.COMPACT_MAX_DELTA_SECONDS.default, kind="int",
            import_default=False, shapes_rows=False),
    Setting(keys.COMPACTION_STRATEGY.name, "spec.compaction.strategy", "settings",
            _compaction(lambda c: STRATEGIES[c.strategy]), keys.COMPACTION_STRATEGY.default, kind="class",
            import_default=False, shapes_rows=False, to_spec=lambda v: _SPEC_STRATEGY.get(v, v)),
    Setting(keys.COMPACTION_TARGET_IO.name, "spec.compaction.targetIO", "settings",
            _compaction(lambda c: _num(c.target_io // _MIB)), keys.COMPACTION_TARGET_IO.default, kind="int",
            import_default=False, shapes_rows=False, to_spec=lambda v: size_text(int(v) * _MIB) if v.isdigit() else v),
    Setting(keys.COMPACTION_DAYBASED_PARTITIONS.name, "spec.compaction.latestPartitions", "settings",
            _compaction(lambda c: _num(c.latest_partitions)), kind="int", import_default=False, shapes_rows=False),
    Setting(KEEP_COMMITS, "spec.retention.keepCommits", "settings",
            lambda s: _num(s.spec.retention.keep_commits), _num(_R.keep_commits), kind="int", shapes_rows=False),
    Setting(keys.KEEP_MIN_COMMITS.name, "spec.retention.archive.minCommits", "settings",
            lambda s: _archive(s, "min_commits"), keys.KEEP_MIN_COMMITS.default, kind="int", import_default=False, shapes_rows=False),
    Setting(keys.KEEP_MAX_COMMITS.name, "spec.retention.archive.maxCommits", "settings",
            lambda s: _archive(s, "max_commits"), keys.KEEP_MAX_COMMITS.default, kind="int", import_default=False, shapes_rows=False),
    Setting(PREVENT_DESTROY, "spec.protection.preventDestroy", "settings",
            lambda s: _bool(s.spec.protection.prevent_destroy), _bool(_P.prevent_destroy), kind="bool", shapes_rows=False),
)
BY_PROP = {s.prop: s for s in REGISTRY}


def spec_value(setting: Setting, raw: str):
    """A property's value as a spec states it (the inverse of `desired`): what `import` writes."""
    if setting.to_spec is not None:
        return setting.to_spec(raw)
    if setting.kind in ("int", "size"):
        return size_text(int(raw)) if setting.kind == "size" else int(raw)
    if setting.kind == "bool":
        return raw.strip().lower() == "true"
    if setting.kind == "list":
        return [v for v in raw.split(",") if v]
    if setting.kind == "json":
        return json.loads(raw)
    return raw


def display(prop: str | None, value: str | None) -> str | int | None:
    """A property's value as plans show it: sizes with units, key generators by class name."""
    setting = BY_PROP.get(prop) if prop else None
    if value is None or setting is None:
        return value
    if setting.to_spec is not None:   # in the spec's words (Hudi's own where the spec has none)
        return setting.to_spec(value)   # type: ignore[return-value]
    if setting.kind == "size" and value.isdigit():
        return size_text(int(value))
    if setting.kind == "class":
        return value.rsplit(".", 1)[-1]
    return value


@dataclass(frozen=True)
class SettingChange:
    path: str
    prop: str
    category: Category
    old: str | None
    new: str | None


def desired_properties(spec: TableSpec) -> dict[str, str]:
    """Every managed property the spec implies (absent values omitted)."""
    props = {s.prop: v for s in REGISTRY if (v := s.desired(spec)) is not None}
    props.update({LABEL_PREFIX + k: v for k, v in spec.metadata.labels.items()})
    return props


def effective(props: dict[str, str], prop: str) -> str | None:
    """A property's value as Hudi would read it: the stored value or the default when absent."""
    setting = BY_PROP.get(prop)
    if setting is not None and setting.observe is not None:
        return setting.observe(props)
    return props.get(prop, setting.default if setting else None)


def diff_settings(spec: TableSpec, observed: dict[str, str]) -> list[SettingChange]:
    """Managed settings whose desired value differs from the table's effective value."""
    desired = desired_properties(spec)
    changes = []
    for s in REGISTRY:
        new = desired.get(s.prop, s.default)
        old = effective(observed, s.prop)
        if (s.derived or new == old or ((s.sized_by_table or s.table_decides) and new is None)
                or (s.unrecorded and s.prop not in observed)):
            continue
        changes.append(SettingChange(s.path, s.prop, s.category, old, new))
    labels = sorted({k for k in list(desired) + list(observed) if k.startswith(LABEL_PREFIX)})
    for key in labels:
        if desired.get(key) != observed.get(key):
            path = "metadata.labels." + key[len(LABEL_PREFIX):]
            changes.append(SettingChange(path, key, "settings", observed.get(key), desired.get(key)))
    return changes


def managed_properties_update(current: dict[str, str], spec: TableSpec) -> dict[str, str]:
    """`current` with every managed property set to what the spec says (others left as they are)."""
    desired = desired_properties(spec)
    props = {k: v for k, v in current.items() if k not in BY_PROP and not k.startswith(LABEL_PREFIX)}
    if spec.spec.index.type == table_index_type(current):  # same index: keep what tablespec sized
        props.update({s.prop: current[s.prop] for s in REGISTRY if s.sized_by_table and s.prop in current})
    props.update({s.prop: current[s.prop] for s in REGISTRY if s.table_decides and s.prop in current})
    props.update(desired)
    return props


def shapes_rows(prop: str | None) -> bool:
    """Whether a change of `prop` (a managed key, or a label's) changes where or how a write lays
    rows out: then a write waits until `apply` made the table match its spec."""
    setting = BY_PROP.get(prop) if prop else None
    return setting is not None and setting.shapes_rows

"""The one mapping between spec fields and hoodie.properties keys.

Every setting tablespec manages lives in hoodie.properties (Hudi's own key where Hudi has one,
`tablespec.*` otherwise), so the table itself is the state. The same registry drives table
creation, the diff, settings updates and `import`, so they cannot disagree.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Literal

from tablespec.hudi.config import (DEFAULT_INDEX_TYPE, INDEX_TYPE_KEY, TABLESPEC_INDEX_TYPE_KEY, hudi_index_type,
                                   table_index_type)
from tablespec.spec.model import Clustering, Protection, Retention, TableSpec

Category = Literal["settings", "key", "index"]
LABEL_PREFIX = "tablespec.label."
KEYGEN_PACKAGE = "org.apache.hudi.keygen."


@dataclass(frozen=True)
class Setting:
    prop: str                         # hoodie.properties key
    path: str                         # spec path shown to users
    category: Category                # what changing it means: settings (metadata), key (destructive), index
    desired: Callable[[TableSpec], str | None]
    default: str | None = None        # effective value when the property is absent from a table
    sized_by_table: bool = False      # unset in the spec: tablespec chose the value; keep it, no diff
    derived: bool = False             # follows a setting of the same path: written with it, never diffed or shown alone
    observe: Callable[[dict[str, str]], str | None] | None = None  # the table's value, when not just the key's


def _csv(values) -> str | None:
    return ",".join(values) if values else None


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _num(value) -> str | None:
    return None if value is None else str(value)


def key_generator(spec: TableSpec) -> str:
    """Hudi's key generator for the spec's record key and partitioning (SimpleKeyGenerator etc.)."""
    keys, parts = spec.spec.record_key.fields, spec.spec.partitioning.fields
    if len(keys) > 1 or len(parts) > 1:
        name = "ComplexKeyGenerator"
    elif not parts:
        name = "NonpartitionedKeyGenerator"
    else:
        name = "SimpleKeyGenerator"
    return KEYGEN_PACKAGE + name


def _index_attr(name: str, render=_num):
    return lambda s: render(getattr(s.spec.index, name, None)) if s.spec.index.type == "BUCKET" else None


def _partition_buckets(spec: TableSpec) -> str | None:
    rules = getattr(spec.spec.index, "partition_buckets", None) or []
    return json.dumps([{"pattern": r.pattern, "numBuckets": r.num_buckets} for r in rules], separators=(",", ":")) if rules else None


def _record_level_buckets(spec: TableSpec) -> str | None:
    rl = getattr(spec.spec.index, "record_level", None)
    return _num(rl.num_buckets) if spec.spec.index.type == "RECORD_LEVEL" and rl is not None else None


_C, _R, _P = Clustering(), Retention(), Protection()

REGISTRY: tuple[Setting, ...] = (
    Setting("hoodie.table.name", "metadata.name", "settings", lambda s: s.metadata.name),
    Setting("hoodie.database.name", "metadata.database", "settings", lambda s: s.metadata.database),
    Setting("hoodie.table.type", "spec.tableType", "key", lambda s: s.spec.table_type, "COPY_ON_WRITE"),
    Setting("hoodie.table.recordkey.fields", "spec.recordKey.fields", "key", lambda s: _csv(s.spec.record_key.fields)),
    Setting("hoodie.table.keygenerator.class", "spec.recordKey", "key", key_generator),
    Setting("hoodie.table.partition.fields", "spec.partitioning.fields", "key", lambda s: _csv(s.spec.partitioning.fields)),
    Setting("hoodie.datasource.write.hive_style_partitioning", "spec.partitioning.hiveStyle", "key",
            lambda s: _bool(s.spec.partitioning.hive_style), "false"),
    Setting("hoodie.table.precombine.field", "spec.orderingField", "settings", lambda s: s.spec.ordering_field),
    Setting(TABLESPEC_INDEX_TYPE_KEY, "spec.index.type", "index", lambda s: s.spec.index.type,
            observe=table_index_type),
    Setting(INDEX_TYPE_KEY, "spec.index.type", "index", lambda s: hudi_index_type(s.spec.index.type),
            DEFAULT_INDEX_TYPE, derived=True),
    Setting("hoodie.index.bucket.engine", "spec.index.type", "index",
            lambda s: "SIMPLE" if s.spec.index.type == "BUCKET" else None, derived=True),
    Setting("hoodie.bucket.index.num.buckets", "spec.index.numBuckets", "index", _index_attr("num_buckets")),
    Setting("hoodie.bucket.index.hash.field", "spec.index.hashFields", "index",
            lambda s: _csv(s.effective_hash_fields) if s.spec.index.type == "BUCKET" else None),
    Setting("tablespec.bucket.partition.buckets", "spec.index.partitionBuckets", "index", _partition_buckets),
    Setting("tablespec.record.level.num.buckets", "spec.index.recordLevel.numBuckets", "index", _record_level_buckets,
            sized_by_table=True),
    Setting("tablespec.clustering.strategy", "spec.clustering.strategy", "settings",
            lambda s: s.spec.clustering.strategy, _C.strategy),
    Setting("hoodie.clustering.plan.strategy.sort.columns", "spec.clustering.sortColumns", "settings",
            lambda s: _csv(s.spec.clustering.sort_columns)),
    Setting("hoodie.clustering.plan.strategy.target.file.max.bytes", "spec.clustering.targetFileSize", "settings",
            lambda s: _num(s.spec.clustering.target_file_size), _num(_C.target_file_size)),
    Setting("hoodie.clustering.plan.strategy.small.file.limit", "spec.clustering.smallFileLimit", "settings",
            lambda s: _num(s.spec.clustering.small_file_limit), _num(_C.small_file_limit)),
    Setting("hoodie.clustering.plan.strategy.max.bytes.per.group", "spec.clustering.maxBytesPerGroup", "settings",
            lambda s: _num(s.spec.clustering.max_bytes_per_group), _num(_C.max_bytes_per_group)),
    Setting("hoodie.clustering.plan.strategy.max.num.groups", "spec.clustering.maxGroups", "settings",
            lambda s: _num(s.spec.clustering.max_groups), _num(_C.max_groups)),
    Setting("hoodie.clustering.inline.max.commits", "spec.clustering.everyNCommits", "settings",
            lambda s: _num(s.spec.clustering.every_n_commits), _num(_C.every_n_commits)),
    Setting("hoodie.clustering.plan.strategy.partition.regex.pattern", "spec.clustering.partitionFilter", "settings",
            lambda s: s.spec.clustering.partition_filter),
    Setting("hoodie.clustering.plan.strategy.daybased.lookback.partitions", "spec.clustering.latestPartitions",
            "settings", lambda s: _num(s.spec.clustering.latest_partitions)),
    Setting("tablespec.clustering.max.small.files", "spec.clustering.maxSmallFiles", "settings",
            lambda s: _num(s.spec.clustering.max_small_files)),
    Setting("hoodie.cleaner.commits.retained", "spec.retention.keepCommits", "settings",
            lambda s: _num(s.spec.retention.keep_commits), _num(_R.keep_commits)),
    Setting("tablespec.protection.prevent.destroy", "spec.protection.preventDestroy", "settings",
            lambda s: _bool(s.spec.protection.prevent_destroy), _bool(_P.prevent_destroy)),
)
BY_PROP = {s.prop: s for s in REGISTRY}


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
        if s.derived or new == old or (s.sized_by_table and new is None):
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
    props.update(desired)
    return props

"""hoodie.properties as a typed, immutable table config, and its safe rewrite protocol.

Settings that tablespec manages but Hudi keeps no *table* property for (index type, bucket
count, hash fields) are stored under Hudi's own write-config names, so Spark writers that read
hoodie.properties agree with tablespec, and hudi-rs ignores them. Only values Hudi accepts go
under `hoodie.*`: what Hudi has no value for (the RECORD_LEVEL index) lives under `tablespec.*`.
Keys Apache Hudi 1.x spells differently are aliases of the known key (hudi/keys.py declares them,
`ConfigKey.aliases` converts their values): tablespec reads either spelling and rewrites a file in the
spelling it found.
"""
from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tablespec.errors import HudiFormatError, UnsupportedTableError
from tablespec.hudi import keygen, keys
from tablespec.hudi.formats.properties import format_properties, parse_properties, table_checksum
from tablespec.hudi.io import Storage, join, outside_reason

META_FOLDER = ".hoodie"
PROPERTIES_FILE = keys.PROPERTIES_FILE
BACKUP_FILE = keys.BACKUP_FILE
CHECKSUM_KEY = keys.CHECKSUM.name
SUPPORTED_VERSION = 6             # the version tablespec writes
READ_VERSIONS = (6, 8, 9)         # the versions it reads (8: Apache Hudi 1.0; 9: 1.1 and 1.2)
WRITTEN_1X_VERSION = 9            # the 1.x version it writes too (its metadata table kept)
# Folders Apache Hudi creates with a new table; tools that list them expect them to exist.
TABLE_FOLDERS = (".aux/.bootstrap/.partitions", ".aux/.bootstrap/.fileids", ".temp", ".schema", "archived")


INDEX_TYPE_KEY = keys.INDEX_TYPE.name
TABLESPEC_INDEX_TYPE_KEY = keys.TABLESPEC_INDEX_TYPE.name
DEFAULT_INDEX_TYPE = "SIMPLE"   # Hudi's default index for Spark writers (0.13+)
RECORD_LEVEL = "RECORD_LEVEL"
# Payloads: with an ordering field the greater ordering value wins, also against the stored record
# (ties: incoming); without one Hudi 0.15's default, the latest write wins.
ORDERED_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
LATEST_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
# tablespec.index.type names the table's index as tablespec does; hoodie.index.type the index Hudi
# writers use. Hudi has no RECORD_LEVEL type (its Spark SQL writers load table properties into their
# write config and would fail on one): a RECORD_LEVEL table's index is Hudi's own record index (the
# metadata table's record_index partition), which Hudi writers use as RECORD_INDEX. Tables written
# before tablespec.index.type have only hoodie.index.type (RECORD_LEVEL there): table_index_type
# reads both.
RECORD_LEVEL_HUDI_INDEX = "RECORD_INDEX"
RECORD_LEVEL_HUDI_1X_INDEX = "GLOBAL_RECORD_LEVEL_INDEX"   # Hudi 1.1+'s name (RECORD_INDEX is deprecated there)


def hudi_index_type(index_type: str) -> str:
    """The Apache Hudi index type a writer should use for tablespec's `index_type`."""
    return RECORD_LEVEL_HUDI_INDEX if index_type == RECORD_LEVEL else index_type


def table_index_type(props: Mapping[str, str] | TableConfig) -> str:
    """The table's index as tablespec names it (SIMPLE, BLOOM, BUCKET, RECORD_LEVEL; a table Apache
    Hudi wrote may name another Hudi type, or none: RECORD_LEVEL when its metadata table has the
    record index, else Hudi's default): the one place that reads the index keys."""
    if isinstance(props, TableConfig):
        props = props.to_properties()
    named = (props.get(TABLESPEC_INDEX_TYPE_KEY) or props.get(INDEX_TYPE_KEY) or "").strip().upper()
    if not named:  # Hudi keeps the index in its writers' config: a record index they built says which it was
        named = RECORD_LEVEL if "record_index" in named_partitions(props) else DEFAULT_INDEX_TYPE
    # Hudi's (global) record index is RECORD_LEVEL; Hudi 1.1+ renamed RECORD_INDEX GLOBAL_RECORD_LEVEL_INDEX
    return RECORD_LEVEL if named in (RECORD_LEVEL_HUDI_INDEX, RECORD_LEVEL_HUDI_1X_INDEX) else named


def named_partitions(props: Mapping[str, str] | TableConfig | None, inflight: bool = False) -> tuple[str, ...]:
    """The metadata-table partitions hoodie.properties name: ready ones (readers use them), or with
    `inflight` those being built. The one place that reads the two lists."""
    if isinstance(props, TableConfig):
        props = props.extra
    key = keys.METADATA_PARTITIONS_INFLIGHT if inflight else keys.METADATA_PARTITIONS
    return tuple(p.strip() for p in ((props or {}).get(key.name) or "").split(",") if p.strip())


def _parse_bool(key: str, raw: str) -> bool:
    return raw.strip().lower() == "true"  # Java's Boolean.parseBoolean: anything else is false


def _parse_int(key: str, raw: str) -> int:
    try:
        return int(raw.strip())
    except ValueError:
        raise HudiFormatError(f"{key}: expected an integer, found {raw!r}") from None


def _parse_list(key: str, raw: str) -> list[str]:
    return [p.strip() for p in raw.split(",") if p.strip()]


def _parse_str(key: str, raw: str) -> str:
    return raw


def _parse_name(key: str, raw: str) -> str | None:
    return raw.strip() or None  # Hudi writes `hoodie.database.name=` for a table without a database


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(value)
    return str(value)


@dataclass(frozen=True)
class Alias:
    """Another spelling of a known key: Apache Hudi 1.x writes these, also into version-6 tables.
    `read` turns its value into the known key's (None: the known key must say; refuses what it
    cannot read); `write` the other way."""
    key: str
    read: Callable[[str, str], str | None]
    write: Callable[[str], str]


@dataclass(frozen=True)
class ConfigKey:
    """One known hoodie.* key: the TableConfig attribute it fills, its default, its parser and
    the other spellings Hudi versions use for it."""
    attr: str
    key: str
    parse: Callable[[str, str], Any]
    default: Any = None
    required: bool = False
    aliases: tuple[Alias, ...] = ()


def _one_ordering_field(key: str, raw: str) -> str:
    fields = _parse_list(key, raw)
    if len(fields) > 1:
        raise UnsupportedTableError(f"{key}={raw} lists {len(fields)} ordering fields; tablespec orders "
                                    "records by one field (orderingField)")
    return fields[0] if fields else ""


ORDERING_FIELDS_KEY = keys.ORDERING_FIELDS.name
KEY_GENERATOR_TYPE_KEY = keys.KEY_GENERATOR_TYPE.name
# How an alias's value reads as the known key's, and back, where the two differ (keys.py declares
# which aliases exist).
_ALIAS_VALUES: dict[str, tuple[Callable[[str, str], str | None], Callable[[str], str]]] = {
    ORDERING_FIELDS_KEY: (_one_ordering_field, lambda v: v),
    KEY_GENERATOR_TYPE_KEY: (keygen.class_of_type, keygen.type_of_class),
}


def _checked(key: str, raw: str) -> str:
    """A value Hudi accepts for `key` (its enum values), as Hudi spells it."""
    return keys.BY_NAME[key].check(raw)


def _known(attr: str, hudi_key: keys.HudiKey, parse: Callable[[str, str], Any], default: Any = None,
           required: bool = False) -> ConfigKey:
    aliases = tuple(Alias(a.name, *_ALIAS_VALUES.get(a.name, (_parse_str, lambda v: v))) for a in hudi_key.aliases)
    return ConfigKey(attr, hudi_key.name, parse, default, required, aliases)


KNOWN_KEYS: tuple[ConfigKey, ...] = (
    _known("name", keys.TABLE_NAME, _parse_str, required=True),
    _known("database", keys.DATABASE_NAME, _parse_name),
    _known("table_type", keys.TABLE_TYPE, _checked, keys.TABLE_TYPE.default),
    _known("version", keys.TABLE_VERSION, _parse_int, 0),
    _known("timeline_layout_version", keys.TIMELINE_LAYOUT_VERSION, _parse_int),
    _known("record_key_fields", keys.RECORD_KEY_FIELDS, _parse_list, []),
    _known("partition_fields", keys.PARTITION_FIELDS, _parse_list, []),
    _known("precombine_field", keys.PRECOMBINE_FIELD, _parse_str),
    _known("key_generator_class", keys.KEY_GENERATOR_CLASS, _parse_str),
    _known("hive_style_partitioning", keys.HIVE_STYLE_PARTITIONING, _parse_bool, False),
    _known("url_encode_partitioning", keys.URL_ENCODE_PARTITIONING, _parse_bool, False),
    _known("drop_partition_columns", keys.DROP_PARTITION_COLUMNS, _parse_bool, False),
    _known("populate_meta_fields", keys.POPULATE_META_FIELDS, _parse_bool, True),
    _known("base_file_format", keys.BASE_FILE_FORMAT, _checked, keys.BASE_FILE_FORMAT.default),
    _known("archivelog_folder", keys.ARCHIVELOG_FOLDER, _parse_str, keys.ARCHIVELOG_FOLDER.default),
    _known("create_schema", keys.CREATE_SCHEMA, _parse_str),
    _known("index_type", keys.INDEX_TYPE, lambda k, v: v.strip().upper()),  # also tablespec's old RECORD_LEVEL
    _known("bucket_num", keys.BUCKET_NUM, _parse_int),
    _known("bucket_hash_fields", keys.BUCKET_HASH_FIELDS, _parse_list, []),
)
KEYS_BY_ATTR = {k.attr: k for k in KNOWN_KEYS}
KEYS_BY_NAME = {k.key: k for k in KNOWN_KEYS}


# The metadata table partitions Hudi writes: its own, and one per expression or secondary index.
METADATA_PARTITION_NAME = re.compile(r"files|column_stats|bloom_filters|record_index|partition_stats"
                                     r"|(?:expr_index|func_index|secondary_index)_[A-Za-z0-9_\-]+")
# Keys naming a folder or file of the table, joined to its path (each must stay inside the table).
PATH_KEYS = (keys.ARCHIVELOG_FOLDER, keys.TIMELINE_PATH, keys.TIMELINE_HISTORY_PATH, keys.INDEX_DEFS_PATH)


def check_table_paths(props: Mapping[str, str]) -> None:
    """Refuse keys whose values tablespec joins to the table's path (folders, files, metadata
    partitions it deletes) unless they stay inside the table: whoever can edit one table's
    hoodie.properties must not steer an `apply` to another table's files."""
    for key in PATH_KEYS:
        value = props.get(key.name)
        if value is not None and (reason := outside_reason(value.strip())) is not None:
            raise HudiFormatError(f"{key.name}={value} leads outside the table ({reason}); refused")
    for key, inflight in ((keys.METADATA_PARTITIONS, False), (keys.METADATA_PARTITIONS_INFLIGHT, True)):
        for name in named_partitions(props, inflight):
            if not METADATA_PARTITION_NAME.fullmatch(name):
                raise HudiFormatError(f"{key.name} names {name!r}: not a metadata table partition Hudi "
                                      "writes (files, column_stats, bloom_filters, record_index, partition_stats, "
                                      "expr_index_<name>, secondary_index_<name>); refused")


def canonical_spelling(props: Mapping[str, str]) -> dict[str, str]:
    """`props` with every alias read into its known key (the spelling all of tablespec reads);
    refuses a file whose spellings of one setting disagree."""
    out = dict(props)
    for known in KNOWN_KEYS:
        for alias in known.aliases:
            if alias.key not in out:
                continue
            value = alias.read(alias.key, out.pop(alias.key))
            if value is None:
                if known.key not in out:
                    raise UnsupportedTableError(f"{alias.key}={props[alias.key]} needs {known.key}")
                continue
            if known.key in out and out[known.key].strip() != value:
                raise HudiFormatError(f"{known.key}={out[known.key]} and "
                                      f"{alias.key}={props[alias.key]} disagree")
            out[known.key] = value
    return out


def table_spelling(props: Mapping[str, str], like: Mapping[str, str]) -> dict[str, str]:
    """`props` (known keys) spelled as the file `like` spells them: a table Apache Hudi 1.x wrote
    keeps its own keys when tablespec rewrites hoodie.properties (both, where it holds both)."""
    out = dict(props)
    for known in KNOWN_KEYS:
        for alias in known.aliases:
            if alias.key not in like:
                continue
            value = out.get(known.key)
            if value is None:
                continue
            out[alias.key] = alias.write(value)
            if known.key not in like and alias.read(alias.key, out[alias.key]) == value:
                del out[known.key]   # the alias says it all
    return out


@dataclass(frozen=True)
class TableConfig:
    """A table's hoodie.properties. Unknown keys ride along in `extra`, untouched.

    `_present` remembers which known keys the file spelled out, so defaults are not written
    back into a file that relied on them (Hudi's own defaults may differ by version).
    """
    name: str
    database: str | None = None
    table_type: str = "COPY_ON_WRITE"
    version: int = SUPPORTED_VERSION
    timeline_layout_version: int | None = 1
    record_key_fields: list[str] = field(default_factory=list)
    partition_fields: list[str] = field(default_factory=list)
    precombine_field: str | None = None
    key_generator_class: str | None = None
    hive_style_partitioning: bool = False
    url_encode_partitioning: bool = False
    drop_partition_columns: bool = False
    populate_meta_fields: bool = True
    base_file_format: str = "PARQUET"
    archivelog_folder: str = "archived"
    create_schema: str | None = None
    index_type: str | None = None          # hoodie.index.type, Hudi's index; tablespec's: table_index_type()
    bucket_num: int | None = None
    bucket_hash_fields: list[str] = field(default_factory=list)
    extra: dict[str, str] = field(default_factory=dict)
    _present: frozenset[str] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> TableConfig:
        """Build from a parsed hoodie.properties (either spelling of aliased keys); the checksum is
        derived, not stored."""
        props = canonical_spelling(props)
        check_table_paths(props)
        values: dict[str, Any] = {}
        for key, raw in props.items():
            known = KEYS_BY_NAME.get(key)
            if known is not None:
                values[known.attr] = known.parse(key, raw)
        for known in KNOWN_KEYS:
            if known.required and known.attr not in values:
                raise HudiFormatError(f"{PROPERTIES_FILE} has no {known.key}")
            values.setdefault(known.attr, known.default if not isinstance(known.default, list) else [])
        extra = {k: v for k, v in props.items() if k not in KEYS_BY_NAME and k != CHECKSUM_KEY}
        present = frozenset(KEYS_BY_NAME[k].attr for k in props if k in KEYS_BY_NAME)
        return cls(**values, extra=extra, _present=present)

    @property
    def checksum(self) -> int:
        return table_checksum(self.name, self.database)

    @property
    def partition_field_names(self) -> list[str]:
        """Partition fields without CustomKeyGenerator's `:TYPE` suffix."""
        return [f.split(":", 1)[0] for f in self.partition_fields]

    def to_properties(self) -> dict[str, str]:
        """The hoodie.properties content, including hoodie.table.checksum."""
        props: dict[str, str] = {}
        for known in KNOWN_KEYS:
            value = getattr(self, known.attr)
            if value is None or (isinstance(value, list) and not value):
                continue
            if self._present is not None and known.attr not in self._present and value == known.default:
                continue
            props[known.key] = _format(value)
        props.update(self.extra)
        props[CHECKSUM_KEY] = str(self.checksum)
        return props

    def with_updates(self, **changes: Any) -> TableConfig:
        """A copy with the given attributes changed; changed attributes are always written out."""
        unknown = set(changes) - set(KEYS_BY_ATTR) - {"extra"}
        if unknown:
            raise TypeError(f"unknown TableConfig attribute(s): {', '.join(sorted(unknown))}")
        present = None if self._present is None else self._present | set(changes)
        return dataclasses.replace(self, **changes, _present=present)


def index_recorded(props: Mapping[str, str]) -> bool:
    """Whether hoodie.properties names the index (tablespec always does; Apache Hudi keeps the index
    type in its writers' config, so a table it created names none)."""
    return INDEX_TYPE_KEY in props or TABLESPEC_INDEX_TYPE_KEY in props


def bloom_filters_expected(props: Mapping[str, str]) -> bool:
    """Whether new base files must carry Hudi's bloom filter: on BLOOM tables, on tables whose
    index is not recorded (a Hudi BLOOM writer fails on a file without a filter), and where the
    metadata table keeps each file's filter (its `bloom_filters` partition, ready or being built)."""
    named = named_partitions(props) + named_partitions(props, inflight=True)
    return not index_recorded(props) or table_index_type(props) == "BLOOM" or "bloom_filters" in named


def fingerprint(props: Mapping[str, str] | TableConfig) -> str:
    """sha256 of the sorted key=value lines: equal configs give equal fingerprints, whatever the
    comment header or key order of the file (used to detect stale plans)."""
    if isinstance(props, TableConfig):
        props = props.to_properties()
    text = "".join(f"{k}={props[k]}\n" for k in sorted(props))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def timeline_folder(config: TableConfig | None) -> str:
    """The active timeline's folder below the table: .hoodie/ (layout 1, version 6), or
    .hoodie/<hoodie.timeline.path> (layout 2, versions 8 and 9)."""
    if config is None or config.version < 8:
        return META_FOLDER
    return f"{META_FOLDER}/{keys.TIMELINE_PATH.value(config.extra) or keys.TIMELINE_PATH.default}"


def archive_folder(config: TableConfig) -> str:
    """The archived timeline's folder relative to .hoodie/: hoodie.archivelog.folder (version 6), or
    the LSM history's, <hoodie.timeline.path>/<hoodie.timeline.history.path> (versions 8 and 9)."""
    if config.version < 8:
        return config.archivelog_folder
    history = keys.TIMELINE_HISTORY_PATH.value(config.extra) or keys.TIMELINE_HISTORY_PATH.default
    return f"{timeline_folder(config).split('/', 1)[1]}/{history}"


def timeline_layout(config: TableConfig | None) -> int:
    """How the table's timeline files are named (see instant.py)."""
    return 2 if config is not None and config.version >= 8 else 1


def unwritable_version(config: TableConfig) -> str | None:
    """Why tablespec does not write this table yet (a version it reads only), or None. On version 9
    tablespec keeps the metadata table's `files` and `record_index` partitions as Hudi 1.x lays them
    out (mdt/layout.py; partitions it does not maintain are dropped before a write, as on version 6)."""
    if config.version in (SUPPORTED_VERSION, WRITTEN_1X_VERSION):
        return None
    return (f"table version {config.version} (Apache Hudi 1.x): tablespec reads, imports, plans, shows and "
            f"verifies it; writes to version {config.version} tables come later (tablespec writes versions "
            f"{SUPPORTED_VERSION} and {WRITTEN_1X_VERSION}: set spec.tableVersion: {WRITTEN_1X_VERSION} to upgrade it, "
            f"as Hudi 1.1+ does)")


def ensure_supported(config: TableConfig) -> None:
    """Refuse tables tablespec recognises but does not manage (yet)."""
    if config.version not in READ_VERSIONS:
        raise UnsupportedTableError(
            f"table {config.name!r} has table version {config.version}; tablespec supports Hudi table "
            f"versions {', '.join(map(str, READ_VERSIONS))}")
    if config.table_type not in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        raise UnsupportedTableError(f"table {config.name!r} has unknown table type {config.table_type!r}")
    if config.base_file_format != "PARQUET":
        raise UnsupportedTableError(
            f"table {config.name!r} stores {config.base_file_format} base files; tablespec supports PARQUET only")


def unmanaged_layout(config: TableConfig) -> str | None:
    """Why tablespec cannot write or read keys of this table, or None. Virtual keys
    (hoodie.populate.meta.fields=false) leave `_hoodie_record_key` and the other meta columns empty,
    and every tablespec read, tag, merge, clustering and rebucket takes keys from them."""
    if config.populate_meta_fields:
        return None
    meta = keys.POPULATE_META_FIELDS.name
    return (f"{meta}=false (virtual keys) is not supported: tablespec finds, merges and "
            "moves records by the _hoodie_record_key its files store, which this table leaves empty. Apache Hudi "
            f"cannot turn meta fields on for an existing table (a writer with {meta}=true fails "
            "with a config conflict); to manage the data with tablespec, copy its rows into a new table that a "
            "spec creates (tablespec apply, then Table.write or tablespec ingest)")


def _load(storage: Storage, path: str) -> dict[str, str] | None:
    """The properties in `path`, None when it does not exist (one read, no existence check first)."""
    try:
        raw = storage.read_bytes(path)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    # Java's Properties.load(InputStream) reads ISO-8859-1; non-ASCII arrives as \\uXXXX escapes.
    return parse_properties(raw.decode("latin-1"))


def _valid(props: Mapping[str, str]) -> bool:
    """A complete file: it names the table, and its checksum (tables before Hudi 0.11 have none) matches."""
    if keys.TABLE_NAME.name not in props:
        return False
    if CHECKSUM_KEY not in props:
        return True
    try:
        return int(props[CHECKSUM_KEY]) == table_checksum(props[keys.TABLE_NAME.name], props.get(keys.DATABASE_NAME.name))
    except ValueError:
        return False


def read_table_config(storage: Storage, base: str) -> TableConfig | None:
    """The table's config, or None when `base` holds no Hudi table.

    Like Hudi, fall back to hoodie.properties.backup when hoodie.properties is missing or
    fails its checksum (a rewrite was interrupted). Table versions other than 6, 8 and 9 are refused.
    """
    meta = join(base, META_FOLDER)
    main, backup = join(meta, PROPERTIES_FILE), join(meta, BACKUP_FILE)
    props = _load(storage, main)
    if props is None or not _valid(props):
        props = _load(storage, backup) or props
    if props is None:
        return None
    if not _valid(props):
        raise HudiFormatError(f"{main}: incomplete (no {keys.TABLE_NAME.name}, or {CHECKSUM_KEY} does not match it)")
    try:
        config = TableConfig.from_properties(props)
    except HudiFormatError as e:   # a value tablespec cannot read: say which file
        raise type(e)(f"{main}: {e}") from None
    if config.version not in READ_VERSIONS:
        raise UnsupportedTableError(
            f"table {config.name!r} at {base} has table version {config.version}; "
            f"tablespec supports Hudi table versions {', '.join(map(str, READ_VERSIONS))}")
    return config


def _render(config: TableConfig, comment: str, like: Mapping[str, str] | None = None) -> bytes:
    props = table_spelling(config.to_properties(), like or {})
    return format_properties(props, (comment,), datetime.now(UTC)).encode("ascii")


def write_table_config(storage: Storage, base: str, config: TableConfig,
                       spelling: Mapping[str, str] | None = None) -> TableConfig:
    """Rewrite hoodie.properties so a reader always finds a complete config; returns the config
    as written and verified. Aliased keys are spelled as the file spells them, or as `spelling`
    does (an upgrade writes the new version's spelling).

    Hudi's protocol: recover a leftover backup, write the backup of the current file, replace
    the file (atomically here), verify it, then remove the backup.
    """
    meta = join(base, META_FOLDER)
    main, backup = join(meta, PROPERTIES_FILE), join(meta, BACKUP_FILE)
    try:  # read, not asked whether it exists first: one request
        current: bytes | None = storage.read_bytes(main)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        current = None
    if current is None and storage.exists(backup):
        current = storage.read_bytes(backup)
        storage.write_atomic(main, current)
    if current is not None:
        storage.write_atomic(backup, current)
    like = spelling if spelling is not None else parse_properties((current or b"").decode("latin-1"))
    storage.write_atomic(main, _render(config, "Updated by tablespec", like))
    written = _load(storage, main)
    if written is None or not _valid(written):
        raise HudiFormatError(f"{main}: checksum verification failed after rewrite; the backup was kept")
    storage.delete(backup)
    return TableConfig.from_properties(written)


def init_table(storage: Storage, base: str, config: TableConfig, spelling: Mapping[str, str] | None = None) -> None:
    """Create the .hoodie/ layout of a new table (versions 8 and 9: with the timeline's folders, as
    Hudi 1.x does); refuses if hoodie.properties already exists. `spelling`: as write_table_config's."""
    meta = join(base, META_FOLDER)
    # versions 8 and 9: the LSM history (in the timeline's folder) instead of `archived`
    folders = TABLE_FOLDERS if config.version < 8 else (*TABLE_FOLDERS[:-1], archive_folder(config))
    for folder in folders:
        storage.mkdirs(join(meta, folder))
    try:
        storage.create_exclusive(join(meta, PROPERTIES_FILE), _render(config, "Created by tablespec", spelling))
    except FileExistsError:
        raise HudiFormatError(f"{base} already holds a Hudi table") from None

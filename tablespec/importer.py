"""`import`: write a spec for an existing Hudi table, every setting explicit.

The spec is generated from the same registry the planner diffs with (each setting's value
at its spec path), so planning the imported spec against its table reports no changes; a
table whose key generation tablespec cannot reproduce is refused by name.
"""
from __future__ import annotations

import io
import zoneinfo

from ruamel.yaml import YAML

from tablespec import stored_paths
from tablespec.errors import TablespecError, UnsupportedTableError
from tablespec.hudi import joda, keygen, keys
from tablespec.hudi.config import index_recorded, unmanaged_layout
from tablespec.hudi.io import relative_location
from tablespec.hudi.table import Location
from tablespec.plan.settings import HIVE_STYLE, KEY_GENERATOR, LABEL_PREFIX, PARTITION_FIELDS, REGISTRY, URL_ENCODE, effective, spec_value
from tablespec.spec.model import TableSpec
from tablespec.state import TableState

# Editors validate against the schema the package ships: `tablespec schema > tablespec.schema.json`
# next to the spec files makes this relative reference resolve.
SCHEMA_COMMENT = ("# yaml-language-server: $schema=./tablespec.schema.json\n"
                  "# (write the schema next to this file with: tablespec schema > tablespec.schema.json)")


# Above this, a `%08d` file id prefix is read as a random UUID's digits, not a bucket number.
_MOST_BUCKETS = 100_000


def _refuse_unrecorded_buckets(state: TableState, props: dict) -> None:
    """Apache Hudi keeps no index type or bucket count in hoodie.properties. A layout of bucket
    file groups (`%08d` bucket prefix, one per bucket and partition) with no index recorded was
    written with a BUCKET index: importing it as SIMPLE would let a write break the layout, and the
    bucket count cannot be read from files (empty buckets have none), so import stops and says so.
    A random file group id starts with eight decimal digits 2% of the time, as a number in the
    millions; bucket numbers are below the bucket count, so only small ones count as buckets."""
    if index_recorded(props) or not state.file_groups:
        return
    seen: set[tuple[str, int]] = set()
    for fg in state.file_groups:
        if fg.bucket is None or fg.bucket >= _MOST_BUCKETS or (fg.partition, fg.bucket) in seen:
            return
        seen.add((fg.partition, fg.bucket))
    raise UnsupportedTableError(
        f"{state.location}: every file group id carries a bucket number (highest "
        f"{max(b for _, b in seen)}): the table was written with a BUCKET index, but hoodie.properties "
        "records neither the index type nor the bucket count, and the bucket count cannot be determined "
        "from the files. Record the writers' settings in .hoodie/hoodie.properties "
        f"({keys.INDEX_TYPE.name}=BUCKET, {keys.BUCKET_NUM.name}=N, optionally "
        f"{keys.BUCKET_HASH_FIELDS.name}), delete .hoodie/.hoodie.properties.crc if there is one (Hadoop checks "
        "it on read, and Hudi fails on a stale one), and import again")


def _refuse_unexpressed(state: TableState, props: dict) -> None:
    """Key generation and layouts tablespec cannot reproduce end the import, by name."""
    where = state.location
    if (why := unmanaged_layout(state.table_config)) is not None:
        raise UnsupportedTableError(f"{where}: {why}")
    if (why := keygen.refusal(props.get(KEY_GENERATOR))) is not None:
        raise UnsupportedTableError(f"{where}: {why}")
    if state.table_config.drop_partition_columns:
        raise UnsupportedTableError(f"{where}: {keys.DROP_PARTITION_COLUMNS.name}=true is not supported "
                                    "(tablespec keeps partition columns in the base files)")
    cls = keygen.canonical_class(props.get(KEY_GENERATOR))
    field, untyped = keygen.timestamp_field_of(props)
    if cls == keygen.CUSTOM and field is None and not untyped:
        raise UnsupportedTableError(f"{where}: CustomKeyGenerator with SIMPLE partition fields only is not supported; "
                                    "its record keys differ from ComplexKeyGenerator's, which tablespec uses for "
                                    "several partition fields")


# Hudi timestamp types (other than SCALAR) by the spec input they read.
_INPUT_OF = {"UNIX_TIMESTAMP": "epochSeconds", "EPOCHMILLISECONDS": "epochMillis", "DATE_STRING": "dateString",
             "MIXED": "mixed"}
# partitioning.timestamp settings `import --timestamp NAME=VALUE` takes, for what a table does not record,
# with the hoodie.properties key of each that has one.
RECORDED = {"field": None, "input": None, "unit": keygen.UNIT_KEY, "inputFormat": keygen.INPUT_FORMAT_KEY,
            "inputFormatDelimiter": keygen.INPUT_DELIMITER_KEY, "outputFormat": keygen.OUTPUT_FORMAT_KEY,
            "timeZone": keygen.TIMEZONE_KEY, "inputTimeZone": keygen.INPUT_TIMEZONE_KEY,
            "outputTimeZone": keygen.OUTPUT_TIMEZONE_KEY}
GIVEN = tuple(RECORDED)


def _inputs(column: str | None, props: dict, given: dict) -> list[str]:
    """The spec inputs a column may have been read as: given, recorded, else every one its type allows
    (but scalar and mixed, which only a recorded or given type names)."""
    hudi_type, unit = keygen.observed_type(props), keygen.observed_unit(props)
    if "input" in given:
        found = [given["input"]]
    elif hudi_type is not None or unit is not None:
        if (hudi_type or "SCALAR") != "SCALAR":
            found = [_INPUT_OF[hudi_type]] if hudi_type in _INPUT_OF else []
        elif column == "timestamp" and unit == "MICROSECONDS":
            found = ["timestamp"]
        elif column == "date" and unit == "DAYS":
            found = ["date"]
        else:
            found = ["epochMicros" if unit == "MICROSECONDS" else "scalar"]
    else:
        found = [i for i in keygen.INPUTS if i not in ("scalar", "mixed")]
    return [f for f in found if column in keygen.INPUTS[f][2]]


def _check_recorded(where, name: str, value: str | None, check) -> None:
    """A pattern or zone tablespec cannot read ends the import, naming the setting."""
    if value is None:
        return
    try:
        check(value)
    except (ValueError, zoneinfo.ZoneInfoNotFoundError) as e:
        key = RECORDED[name]
        raise UnsupportedTableError(f"{where}: {key}={value} (spec.partitioning.timestamp.{name}): {e}") from None


def _zone(value: str) -> None:
    if value not in ("UTC", "GMT"):
        zoneinfo.ZoneInfo(value)


def observed_timestamp(state: TableState, props: dict, given: dict[str, str] | None = None) -> dict | None:
    """The spec's `partitioning.timestamp` for a timestamp-partitioned table, checked against its files.

    Settings come from hoodie.properties, else from `given` (the user's `--timestamp`), else Hudi's
    default (the time zone); what none of them fixes (the timestamp type, CustomKeyGenerator's time
    field) is whichever reproduces the stored partition paths. Every setting still unknown is
    reported at once, in spec terms."""
    given = dict(given or {})
    where = state.location
    if unknown := sorted(set(given) - set(GIVEN)):
        raise TablespecError(f"--timestamp {unknown[0]}: not a partitioning.timestamp setting; use {', '.join(GIVEN)}")
    if given.get("input") not in (None, *keygen.INPUTS):
        raise TablespecError(f"--timestamp input={given['input']}: use one of {', '.join(keygen.INPUTS)}")
    recorded, untyped = keygen.timestamp_field_of(props)
    if recorded is None and not untyped:
        if given:
            raise UnsupportedTableError(f"{where}: --timestamp is for tables partitioned by a formatted time value "
                                        "(TimestampBasedKeyGenerator, CustomKeyGenerator); this table's key generator "
                                        f"is {props.get(KEY_GENERATOR) or 'not recorded'}")
        return None
    names = (effective(props, PARTITION_FIELDS) or "").split(",")

    def setting(name: str) -> str | None:
        key = RECORDED[name]
        value, told = (props.get(key) if key else None), given.get(name)
        if value and told and value != told:
            raise UnsupportedTableError(f"{where}: --timestamp {name}={told} contradicts hoodie.properties {key}={value}")
        return value or told

    field = setting("field") or recorded
    if field is not None and field not in names or recorded and field != recorded:
        raise UnsupportedTableError(f"{where}: --timestamp field={field}: the time-formatted partition field is "
                                    f"{recorded or 'one of ' + ', '.join(names)}")
    zone, output, input_format = setting("timeZone"), setting("outputFormat"), setting("inputFormat")
    in_zone, out_zone = (None, None) if zone else (setting("inputTimeZone"), setting("outputTimeZone"))
    delimiter = setting("inputFormatDelimiter")
    unit = given.get("unit") or keygen.observed_unit(props)
    zoned = zone or in_zone or out_zone
    columns = {c.name: str(c.type) for c in state.columns}
    fields = [field] if field else names
    candidates = [(f, name) for f in fields for name in _inputs(columns.get(f), props, given)]
    strings_only = bool(candidates) and all(name in keygen.STRING_INPUTS for _, name in candidates)
    ask = {}
    if output is None:
        ask["outputFormat"] = "<Joda pattern, e.g. yyyy/MM/dd>"
    if input_format is None and (strings_only or output is None and any(n in keygen.STRING_INPUTS for _, n in candidates)):
        ask["inputFormat"] = "<Joda pattern the strings have>"
    if ask:
        generator = (props.get(KEY_GENERATOR) or "").rsplit(".", 1)[-1]
        raise UnsupportedTableError(
            f"{where}: hoodie.properties does not record how {generator} formats partition field "
            f"{field or ' or '.join(names)} (Hudi 0.15 records only the settings its writer was given, and none for "
            "CustomKeyGenerator); give the writers' settings: "
            + " ".join(f"--timestamp {k}={v}" for k, v in ask.items())
            + (f" (and --timestamp timeZone=<their zone> unless it was {keygen.DEFAULT_TIME_ZONE}, Hudi's default)"
               if not zoned else ""))
    assert output is not None  # asked for above when missing
    _check_recorded(where, "outputFormat", output, joda.check)
    if input_format is not None:
        _check_recorded(where, "inputFormat", input_format,
                        lambda v: [joda.check(p) for p in keygen.input_formats(v, delimiter)])
    for name, value in (("timeZone", zone), ("inputTimeZone", in_zone), ("outputTimeZone", out_zone)):
        _check_recorded(where, name, value, _zone)
    hive, encode = effective(props, HIVE_STYLE) == "true", effective(props, URL_ENCODE) == "true"
    fits, reasons = [], []
    for f, name in candidates:
        strings = name in keygen.STRING_INPUTS
        if strings and input_format is None:
            continue
        # no zone recorded: UTC, Hudi's documented default; for strings also none at all (each printed in its own)
        for time_zone in [zone] if zoned else [keygen.DEFAULT_TIME_ZONE, None] if strings else [keygen.DEFAULT_TIME_ZONE]:
            ts = keygen.TimestampPartitioning(f, name, output, time_zone, input_format if strings else None,
                                              unit if name == "scalar" else None, in_zone, out_zone,
                                              delimiter if strings else None)
            why = stored_paths.mismatch(state, ts, names, hive, encode)
            if why is None:
                fits.append(ts)
                break
        else:
            reasons.append(f"{f} as {name}: {why}")
    if len(fits) != 1:
        if fits:
            detail = " and ".join(f"{t.field} as {t.input}" for t in fits) + " both reproduce the stored paths"
            hint = "--timestamp field=<the time field> --timestamp input=<its kind>"
        else:
            detail = "; ".join(reasons) or f"no input reads {', '.join(f'{f} ({columns.get(f)})' for f in fields)}"
            hint = " ".join(["--timestamp input=<its kind>"]
                            + (["--timestamp inputFormat=<Joda pattern the strings have>"]
                               if input_format is None and any(c == "string" for c in map(columns.get, fields)) else [])
                            + ([f"--timestamp timeZone=<the writers' zone> (none is recorded; {keygen.DEFAULT_TIME_ZONE}, "
                                "Hudi's documented default, was tried, but Hudi formats in the writer JVM's zone when none "
                                "is set)"] if not zoned else []))
        raise UnsupportedTableError(f"{where}: cannot tell how partition field {field or ' or '.join(names)} is "
                                    f"formatted ({detail}); give the writers' settings: {hint}")
    ts = fits[0]
    out: dict[str, str | None] = {"field": ts.field, "input": ts.input}
    for name, value in (("unit", ts.unit), ("inputFormat", ts.input_format), ("inputFormatDelimiter", ts.input_delimiter),
                        ("outputFormat", ts.output_format), ("timeZone", ts.time_zone),
                        ("inputTimeZone", ts.input_time_zone), ("outputTimeZone", ts.output_time_zone)):
        if value:
            out[name] = value
    if not (ts.time_zone or ts.input_time_zone or ts.output_time_zone):
        out["timeZone"] = None   # none set: strings in their own zones
    return out


def _set(doc: dict, path: str, value) -> None:
    *parents, leaf = path.split(".")
    for name in parents:
        doc = doc.setdefault(name, {})
    doc[leaf] = value


def observed_data_skipping(state: TableState) -> dict | None:
    """The `dataSkipping` section of the data-skipping partitions the table has that tablespec keeps
    (column statistics with the columns its index definition lists, unless they are Hudi's default
    selection; partition statistics; bloom filters; secondary indexes with their columns), and the
    expression indexes it has (which plan refuses to keep), None
    without any; a half-built one is not declared (plan drops it), nor a secondary index on a column of a
    type tablespec cannot key (plan refuses a table keeping one)."""
    from tablespec.hudi.mdt import expression_index, secondary_index
    from tablespec.hudi.mdt.bloom_filters import BLOOM_FILTERS
    from tablespec.hudi.mdt.column_stats import COLUMN_STATS, PARTITION_STATS
    from tablespec.hudi.mdt.column_stats_changes import half_built, hudi_default_columns, indexed_columns, kept_in
    unbuilt = half_built(state.handle)                                  # a half-built one is dropped
    found = [p for p in kept_in(state.config) if p not in unbuilt]
    out: dict = {}
    if COLUMN_STATS in found:
        columns = indexed_columns(state.handle)
        if columns is not None and set(columns) == set(hudi_default_columns((c.name, c.type) for c in state.columns)):
            columns = None   # Hudi's default selection: it follows the schema as it evolves, so the spec says default
        out["columnStats"] = {"columns": list(columns)} if columns is not None else {}
        if PARTITION_STATS in found:
            out["partitionStats"] = True
    if BLOOM_FILTERS in found:
        out["bloomFilters"] = True
    types = {c.name: str(c.type) for c in state.columns}
    indexed = [p for p in secondary_index.kept_in(state.config) if p not in unbuilt]
    if indexed:     # one on a column tablespec cannot key: not declared, plan refuses
        out["secondaryIndexes"] = [{"name": p[len(secondary_index.PREFIX):], "column": column}
                                   for p, column in secondary_index.columns(state.handle, indexed).items()
                                   if types.get(column, "string") in secondary_index.COLUMN_TYPES]
        if not out["secondaryIndexes"]:
            del out["secondaryIndexes"]
    if expressions := expression_index.found(state.handle):   # said, though not kept: plan refuses to keep them
        out["expressionIndexes"] = expressions
    return out or None


def spec_document(state: TableState, warehouse: Location, timestamp: dict[str, str] | None = None) -> dict:
    """The spec (camelCase, as users write it) that describes `state` exactly: every registry setting
    the table holds (or defaults) at its spec path, then what import derives (keys, timestamps)."""
    if not state.exists:
        raise TablespecError(f"{state.location}: no Hudi table there (no .hoodie/hoodie.properties)")
    if state.table_config.table_type not in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        raise UnsupportedTableError(f"{state.location}: is a {state.table_config.table_type} table; "
                                    "tablespec manages COPY_ON_WRITE and MERGE_ON_READ tables")
    props = state.table_config.to_properties()
    _refuse_unrecorded_buckets(state, props)
    _refuse_unexpressed(state, props)
    doc: dict = {"apiVersion": "tablespec/v1", "kind": "HudiTable", "metadata": {},
                 "spec": {"location": relative_location(state.location, warehouse.uri)}}
    for setting in REGISTRY:
        if setting.derived or not setting.imported:
            continue
        raw = effective(props, setting.prop)
        if setting.path.startswith("spec.index.") and setting.path != "spec.index.type" and setting.prop not in props:
            continue  # an index's own settings: only those the table records (the spec's defaults are the same)
        if raw is not None and raw != "" and (setting.import_default or raw != setting.default):
            _set(doc, setting.path, spec_value(setting, raw))
        if setting.path == "spec.tableType":
            doc["spec"]["columns"] = [{"name": c.name, "type": str(c.type), "nullable": c.nullable}
                                      for c in state.columns]
    body = doc["spec"]
    body.setdefault("recordKey", {}).setdefault("fields", [])
    if not body["recordKey"]["fields"]:
        body["recordKey"] = {"autoGenerate": True}
    body.setdefault("partitioning", {}).setdefault("fields", [])
    if (ts := observed_timestamp(state, props, timestamp)) is not None:
        body["partitioning"]["timestamp"] = ts
    if (skipping := observed_data_skipping(state)) is not None:
        body["dataSkipping"] = skipping
    labels = {k[len(LABEL_PREFIX):]: v for k, v in props.items() if k.startswith(LABEL_PREFIX)}
    if labels:
        doc["metadata"]["labels"] = labels
    order = ("location", "tableType", "columns", "recordKey", "partitioning", "orderingField", "index",
             "dataSkipping", "clustering", "compaction", "retention", "protection")
    doc["spec"] = {k: body[k] for k in order if k in body}
    TableSpec.model_validate(doc)  # an import that would not validate is a bug, not a user error
    return doc


def observed_spec(state: TableState, timestamp: dict[str, str] | None = None) -> TableSpec:
    """The table as it is, as a spec object (for actions that read it under its current layout);
    `timestamp`: what hoodie.properties does not record of its timestamp partitioning (import --timestamp)."""
    return TableSpec.model_validate(spec_document(state, state.handle.location.parent(), timestamp))


def import_yaml(state: TableState, warehouse: Location, timestamp: dict[str, str] | None = None,
                catalog_name: tuple[str, str] | None = None) -> str:
    """The spec of the table as YAML; `catalog_name` (database, table): where it is registered."""
    doc = spec_document(state, warehouse, timestamp)
    if catalog_name is not None:
        database, table = catalog_name
        doc["spec"]["catalog"] = {"database": database} if table == doc["metadata"].get("name", "").lower() else \
            {"database": database, "table": table}
        TableSpec.model_validate(doc)
    yaml = YAML()
    yaml.default_flow_style = None
    yaml.width = 4096
    out = io.StringIO()
    out.write(SCHEMA_COMMENT + "\n")
    yaml.dump(doc, out)
    return out.getvalue()

"""`import`: write a spec for an existing Hudi table, every setting explicit.

The spec is generated from the same registry the planner diffs with (each setting's value
at its spec path), so planning the imported spec against its table reports no changes; a
table whose key generation tablespec cannot reproduce is refused by name.
"""
from __future__ import annotations

import io

from ruamel.yaml import YAML

from tablespec.errors import TablespecError, UnsupportedTableError
from tablespec.hudi import keygen
from tablespec.hudi.config import index_recorded
from tablespec.hudi.io import check_location, join, parent_location, relative_location, storage_for
from tablespec.plan.settings import (HIVE_STYLE, KEY_GENERATOR, LABEL_PREFIX, PARTITION_FIELDS, REGISTRY, URL_ENCODE,
                                     effective, spec_value)
from tablespec.spec.model import TableSpec
from tablespec.state import TableState

# Editors validate against the schema the package ships: `tablespec schema > tablespec.schema.json`
# next to the spec files makes this relative reference resolve.
SCHEMA_COMMENT = ("# yaml-language-server: $schema=./tablespec.schema.json\n"
                  "# (write the schema next to this file with: tablespec schema > tablespec.schema.json)")


def _refuse_unrecorded_buckets(state: TableState, props: dict) -> None:
    """Apache Hudi keeps no index type or bucket count in hoodie.properties. A layout of bucket
    file groups (`%08d` bucket prefix, one per bucket and partition) with no index recorded was
    written with a BUCKET index: importing it as SIMPLE would let a write break the layout, and the
    bucket count cannot be read from files (empty buckets have none), so import stops and says so."""
    if index_recorded(props) or not state.file_groups:
        return
    seen: set[tuple[str, int | None]] = set()
    for fg in state.file_groups:
        if fg.bucket is None or (fg.partition, fg.bucket) in seen:
            return
        seen.add((fg.partition, fg.bucket))
    raise UnsupportedTableError(
        f"{state.location}: every file group id carries a bucket number (highest "
        f"{max(b for _, b in seen)}): the table was written with a BUCKET index, but hoodie.properties "
        "records neither the index type nor the bucket count, and the bucket count cannot be determined "
        "from the files. Record the writers' settings in .hoodie/hoodie.properties "
        "(hoodie.index.type=BUCKET, hoodie.bucket.index.num.buckets=N, optionally "
        "hoodie.bucket.index.hash.field) and import again")


def _refuse_unexpressed(state: TableState, props: dict) -> None:
    """Key generation and layouts tablespec cannot reproduce end the import, by name."""
    where = state.location
    if (why := keygen.refusal(props.get(KEY_GENERATOR))) is not None:
        raise UnsupportedTableError(f"{where}: {why}")
    if state.config.drop_partition_columns:
        raise UnsupportedTableError(f"{where}: hoodie.datasource.write.drop.partition.columns=true is not supported "
                                    "(tablespec keeps partition columns in the base files)")
    cls = keygen.canonical_class(props.get(KEY_GENERATOR))
    field, why = keygen.timestamp_field_of(props)
    if why:
        raise UnsupportedTableError(f"{where}: {why}")
    if cls == keygen.CUSTOM and field is None:
        raise UnsupportedTableError(f"{where}: CustomKeyGenerator with SIMPLE partition fields only is not supported; "
                                    "its record keys differ from ComplexKeyGenerator's, which tablespec uses for "
                                    "several partition fields")


# Hudi timestamp types (and scalar units) by the spec input they read, per column type.
_INPUT_OF = {("UNIX_TIMESTAMP", None): "epochSeconds", ("EPOCHMILLISECONDS", None): "epochMillis",
             ("DATE_STRING", None): "dateString", ("SCALAR", "MICROSECONDS"): "epochMicros",
             ("SCALAR", "DAYS"): "date"}
SAMPLE_FILES = 3


def _sample_rows(state: TableState, columns: list[str]):
    """(partition, rows of `columns`) of a few latest base files: what Hudi's writers made of them."""
    import pyarrow.parquet as pq

    storage, base = storage_for(state.location)
    for fg in [fg for fg in state.file_groups if fg.base_file][:SAMPLE_FILES]:
        with storage.open_input_file(join(base, fg.partition, fg.base_file)) as f:
            yield fg.partition, pq.read_table(f, columns=columns)


def _reproduces(state: TableState, ts: keygen.TimestampPartitioning, props: dict) -> str | None:
    """None when `ts` gives every sampled row its file's partition path, else the first mismatch."""
    from tablespec.engine.arrow.keys import partition_paths

    fields = (effective(props, PARTITION_FIELDS) or "").split(",")
    hive, encode = effective(props, HIVE_STYLE) == "true", effective(props, URL_ENCODE) == "true"
    for partition, rows in _sample_rows(state, fields):
        try:
            paths = partition_paths(rows, fields, hive, encode, timestamp=ts).unique().to_pylist()
        except TablespecError as e:
            return str(e)
        wrong = [p for p in paths if p != partition]
        if wrong:
            return f"a row of partition {partition!r} would go to {wrong[0]!r}"
    return None


def observed_timestamp(state: TableState, props: dict) -> dict | None:
    """The spec's `partitioning.timestamp` for a timestamp-partitioned table, checked against its files.

    Apache Hudi records the zone and formats but not the timestamp type: a numeric column's unit
    is then the one that reproduces the partition paths of the table's files."""
    field, _ = keygen.timestamp_field_of(props)
    if field is None:
        return None
    where = state.location
    zone, output = props.get(keygen.TIMEZONE_KEY), props.get(keygen.OUTPUT_FORMAT_KEY)
    for key, value in ((keygen.TIMEZONE_KEY, zone), (keygen.OUTPUT_FORMAT_KEY, output)):
        if not value:
            raise UnsupportedTableError(
                f"{where}: partition field {field!r} is formatted by {props.get(KEY_GENERATOR)}, but "
                f"hoodie.properties records no {key}; the partition paths depend on the writers' setting. Add "
                f"{key}=<the writers' value> to .hoodie/hoodie.properties and import again")
    try:
        keygen.joda_to_strftime(output)
    except ValueError as e:
        raise UnsupportedTableError(f"{where}: {keygen.OUTPUT_FORMAT_KEY}: {e}") from None
    column = next((str(c.type) for c in state.columns if c.name == field), None)
    hudi_type, unit = props.get(keygen.TYPE_KEY), props.get(keygen.UNIT_KEY)
    if hudi_type is not None:
        found = _INPUT_OF.get((hudi_type, unit if hudi_type == "SCALAR" else None))
        candidates = ["timestamp" if found == "epochMicros" and column == "timestamp" else found] if found else []
    elif column == "string":
        candidates = ["dateString"]
    elif unit is not None:
        found = _INPUT_OF.get(("SCALAR", unit))
        candidates = ["timestamp" if found == "epochMicros" and column == "timestamp" else found] if found else []
    else:
        candidates = ["epochMillis", "epochSeconds"]
    candidates = [c for c in candidates if c and column in keygen.INPUTS[c][2]]
    if not candidates:
        raise UnsupportedTableError(
            f"{where}: partition field {field!r} ({column}) with timestamp type {hudi_type or '(not recorded)'}"
            f"{' and unit ' + unit if unit else ''} is not supported; tablespec reads "
            + ", ".join(f"{n} ({'/'.join(v[2])})" for n, v in keygen.INPUTS.items()))
    fits, reasons = [], []
    for name in candidates:
        ts = keygen.TimestampPartitioning(field, name, output, zone,
                                          props.get(keygen.INPUT_FORMAT_KEY) if name == "dateString" else None)
        why = _reproduces(state, ts, props)
        (fits.append(ts) if why is None else reasons.append(f"{name}: {why}"))
    if len(fits) != 1:
        detail = "; ".join(reasons) if not fits else f"both {' and '.join(t.input for t in fits)} fit"
        raise UnsupportedTableError(
            f"{where}: cannot tell how partition field {field!r} is formatted ({detail}); add "
            f"{keygen.TYPE_KEY}=<the writers' value> to .hoodie/hoodie.properties and import again")
    ts = fits[0]
    out = {"field": ts.field, "input": ts.input}
    if ts.input_format:
        out["inputFormat"] = ts.input_format
    out.update({"outputFormat": ts.output_format, "timeZone": ts.time_zone})
    return out


def _set(doc: dict, path: str, value) -> None:
    *parents, leaf = path.split(".")
    for name in parents:
        doc = doc.setdefault(name, {})
    doc[leaf] = value


def spec_document(state: TableState, warehouse: str) -> dict:
    """The spec (camelCase, as users write it) that describes `state` exactly: every registry setting
    the table holds (or defaults) at its spec path, then what import derives (keys, timestamps)."""
    if not state.exists:
        raise TablespecError(f"{state.location}: no Hudi table there (no .hoodie/hoodie.properties)")
    if state.config.table_type != "COPY_ON_WRITE":
        raise UnsupportedTableError(f"{state.location}: is a {state.config.table_type} table; "
                                    "tablespec manages COPY_ON_WRITE tables only for now")
    props = state.config.to_properties()
    _refuse_unrecorded_buckets(state, props)
    _refuse_unexpressed(state, props)
    doc: dict = {"apiVersion": "tablespec/v1", "kind": "HudiTable", "metadata": {},
                 "spec": {"location": relative_location(state.location, check_location(warehouse))}}
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
    if (ts := observed_timestamp(state, props)) is not None:
        body["partitioning"]["timestamp"] = ts
    labels = {k[len(LABEL_PREFIX):]: v for k, v in props.items() if k.startswith(LABEL_PREFIX)}
    if labels:
        doc["metadata"]["labels"] = labels
    order = ("location", "tableType", "columns", "recordKey", "partitioning", "orderingField", "index",
             "clustering", "retention", "protection")
    doc["spec"] = {k: body[k] for k in order if k in body}
    TableSpec.model_validate(doc)  # an import that would not validate is a bug, not a user error
    return doc


def observed_spec(state: TableState) -> TableSpec:
    """The table as it is, as a spec object (for actions that read it under its current layout)."""
    return TableSpec.model_validate(spec_document(state, parent_location(state.location)))


def import_yaml(state: TableState, warehouse: str) -> str:
    yaml = YAML()
    yaml.default_flow_style = None
    yaml.width = 4096
    out = io.StringIO()
    out.write(SCHEMA_COMMENT + "\n")
    yaml.dump(spec_document(state, warehouse), out)
    return out.getvalue()

"""Import round-trips every spec field: create a table from a spec that sets everything, import it,
and the imported spec plans clean and equals the original. The registry is the one source."""
from __future__ import annotations

import typing

import pytest
from pydantic import BaseModel

from tablespec.actions.metadata import create_table
from tablespec.hudi.io import table_location
from tablespec.hudi.table import HudiTable, Location
from tablespec.importer import import_yaml, spec_document
from tablespec.plan.builder import build_plan
from tablespec.plan.settings import REGISTRY
from tablespec.spec.loader import load_spec_text
from tablespec.spec.model import INDEX_TYPES, TableSpec
from tablespec.state import observe, observe_specs

HEAD = """apiVersion: tablespec/v1
kind: HudiTable
metadata:
  name: everything
  database: lake
  labels: {team: data, tier: gold}
spec:
  location: lake/everything
  columns:
    - {name: id, type: string, nullable: false}
    - {name: region, type: string}
    - {name: ts, type: long}
    - {name: v, type: int, nullable: false}
"""
TAIL = """  orderingField: v
  clustering:
    strategy: ZORDER
    sortColumns: [region, v]
    targetFileSize: 256MiB
    smallFileLimit: 64MiB
    maxBytesPerGroup: 1GiB
    maxGroups: 7
    everyNCommits: 3
    maxSmallFiles: 11
    partitionFilter: "^2024/.*"
    latestPartitions: 5
  retention: {keepCommits: 4}
  protection: {preventDestroy: true}
"""
LAYOUTS = {
    "simple-timestamp": """  recordKey: {fields: [id]}
  partitioning:
    fields: [ts]
    hiveStyle: false
    timestamp: {field: ts, input: epochSeconds, outputFormat: yyyy/MM/dd, timeZone: Europe/Berlin}
  index: {type: SIMPLE}
""",
    "bloom-custom": """  recordKey: {fields: [id, region]}
  partitioning:
    fields: [region, ts]
    timestamp: {field: ts, input: epochMillis, outputFormat: yyyy-MM-dd-HH}
  index: {type: BLOOM}
""",
    "bucket": """  recordKey: {fields: [id, region]}
  partitioning: {fields: [region], hiveStyle: true}
  index:
    type: BUCKET
    numBuckets: 8
    hashFields: [id]
    partitionBuckets: [{pattern: "^region=eu$", numBuckets: 16}]
""",
    "record-level": """  recordKey: {fields: [id]}
  index:
    type: RECORD_LEVEL
    recordLevel: {numBuckets: 3}
""",
    "url-encoded": """  recordKey: {fields: [id]}
  partitioning: {fields: [region, ts], hiveStyle: false, urlEncode: true}
  index: {type: BLOOM}
""",
    "scalar-zones": """  recordKey: {fields: [id]}
  partitioning:
    fields: [ts]
    timestamp: {field: ts, input: scalar, unit: MINUTES, outputFormat: "yyyy-MM-dd'T'HH",
                inputTimeZone: America/New_York, outputTimeZone: Asia/Tokyo}
  index: {type: SIMPLE}
""",
    "string-patterns": """  recordKey: {fields: [id]}
  partitioning:
    fields: [region]
    timestamp: {field: region, input: mixed, inputFormat: "yyyy-MM-dd'T'HH:mm:ss.SSSZ; yyyyMMdd",
                inputFormatDelimiter: ";", outputFormat: yyyy/MM/dd, timeZone: Europe/Berlin}
  index: {type: SIMPLE}
""",
    "auto-keys": """  recordKey: {autoGenerate: true}
  partitioning: {fields: [region]}
  index: {type: SIMPLE}
""",
}


def _plan(text: str, warehouse):
    loaded = load_spec_text(text, "everything.yaml")
    assert not loaded.errors, loaded.errors
    root = Location.parse(str(warehouse))
    return build_plan(loaded.specs, observe_specs(loaded.specs, root), root), loaded.specs[0].spec


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_import_of_a_spec_setting_every_field_plans_clean(tmp_path, layout):
    text = HEAD + LAYOUTS[layout] + TAIL
    _, spec = _plan(text, tmp_path)
    location = table_location(str(tmp_path), spec.spec.location)
    create_table(HudiTable.open(location), spec)
    imported = import_yaml(observe(HudiTable.open(location)), Location.parse(str(tmp_path)))
    assert "256MiB" in imported and "latestPartitions: 5" in imported and "maxSmallFiles: 11" in imported
    plan, again = _plan(imported, tmp_path)
    assert not plan.has_changes, [(a.kind, a.changes) for _, a in plan.actions]
    assert again.model_dump() == spec.model_dump()


def _leaves(model: type[BaseModel], prefix: str) -> set[str]:
    """Every spec path a user can set (camelCase), lists of models as one leaf."""
    out: set[str] = set()
    for name, info in model.model_fields.items():
        path = f"{prefix}.{info.alias or name}" if prefix else (info.alias or name)
        args = () if typing.get_origin(info.annotation) is list else typing.get_args(info.annotation)
        nested = [a for a in args or (info.annotation,) if isinstance(a, type) and issubclass(a, BaseModel)]
        if name == "index":
            nested = list(INDEX_TYPES)
        out |= set().union(*(_leaves(m, path) for m in nested)) if nested else {path}
    return out


# Spec paths that are no hoodie.properties setting: the table's own layout, read from the table itself, and
# metadata.renamedFrom, an instruction to the planner (rename the table there) that no table records.
NOT_SETTINGS = {"apiVersion", "kind", "metadata.labels", "metadata.renamedFrom", "spec.location", "spec.columns",
                "spec.recordKey.autoGenerate",
                "spec.catalog.database", "spec.catalog.table",   # kept by the catalog, not in hoodie.properties
                "spec.tableVersion",   # hoodie.table.version: changed by upgrade_table, never by update_settings
                "spec.index.recordLevel.maxFilesPerBucket",      # deprecated: the metadata table compacts itself
                # the metadata table's data-skipping partitions: read from hoodie.properties' partition list and the
                # index definitions by import and plan (plan/metadata_table.py), no setting of their own
                "spec.dataSkipping.columnStats.columns", "spec.dataSkipping.partitionStats",
                "spec.dataSkipping.bloomFilters", "spec.dataSkipping.secondaryIndexes", "spec.dataSkipping.expressionIndexes"}
DERIVED_BY_IMPORT = {"spec.partitioning.timestamp.field", "spec.partitioning.timestamp.input",
                     "spec.partitioning.timestamp.inputFormat", "spec.partitioning.timestamp.outputFormat",
                     "spec.partitioning.timestamp.timeZone", "spec.partitioning.timestamp.unit",
                     "spec.partitioning.timestamp.inputFormatDelimiter", "spec.partitioning.timestamp.inputTimeZone",
                     "spec.partitioning.timestamp.outputTimeZone"}


def test_every_spec_field_is_a_registry_setting():
    registered = {s.path for s in REGISTRY}
    missing = _leaves(TableSpec, "") - registered - NOT_SETTINGS
    assert not missing, f"spec fields without a hoodie.properties setting: {sorted(missing)}"
    assert DERIVED_BY_IMPORT <= registered
    assert {s.path for s in REGISTRY if not s.imported} <= DERIVED_BY_IMPORT | {"keyGenerator"}


def test_spec_document_validates_for_every_layout(tmp_path):
    for layout, body in LAYOUTS.items():
        _, spec = _plan(HEAD.replace("lake/everything", layout) + body + TAIL, tmp_path)
        location = table_location(str(tmp_path), spec.spec.location)
        create_table(HudiTable.open(location), spec)
        assert TableSpec.model_validate(spec_document(observe(HudiTable.open(location)), Location.parse(str(tmp_path)))) == spec


@pytest.mark.parametrize("key, value, message", [
    ("hoodie.keygen.timebased.output.dateformat", "yyyy/MM/dd zzz",
     "hoodie.keygen.timebased.output.dateformat=yyyy/MM/dd zzz (spec.partitioning.timestamp.outputFormat): 'zzz' in "
     "date format 'yyyy/MM/dd zzz' is not supported"),
    ("hoodie.keygen.timebased.input.dateformat", "yyyy-MM-dd;CC",
     "(spec.partitioning.timestamp.inputFormat): 'CC' in date format 'CC' is not supported"),
    ("hoodie.keygen.timebased.output.timezone", "GMT+8", "(spec.partitioning.timestamp.outputTimeZone)"),
])
def test_a_timestamp_setting_tablespec_cannot_read_is_named_at_import(tmp_path, key, value, message):
    """Hudi accepts it; tablespec refuses the import in one line naming the setting, the table untouched."""
    from tablespec.errors import UnsupportedTableError
    from tablespec.hudi.formats.properties import format_properties, parse_properties

    text = HEAD + LAYOUTS["string-patterns"].replace(", timeZone: Europe/Berlin", "") + TAIL
    _, spec = _plan(text, tmp_path)
    location = table_location(str(tmp_path), spec.spec.location)
    create_table(HudiTable.open(location), spec)
    props_file = tmp_path / "lake" / "everything" / ".hoodie" / "hoodie.properties"
    props = parse_properties(props_file.read_text())
    props.pop("hoodie.keygen.timebased.timezone")   # it would override an output.timezone
    props_file.write_text(format_properties({**props, key: value}))
    before = props_file.read_bytes()
    with pytest.raises(UnsupportedTableError) as info:
        import_yaml(observe(HudiTable.open(location)), Location.parse(str(tmp_path)))
    assert message in str(info.value) and "\n" not in str(info.value)
    assert props_file.read_bytes() == before

"""Actions that change only table metadata: create a table, rewrite its managed settings.

Both end in one atomic write of hoodie.properties (Hudi's backup-file protocol), so a crash
leaves the table as it was before or after, and re-running converges.
"""
from __future__ import annotations

import json

from tablespec.errors import HudiFormatError, PlanError, StalePlanError
from tablespec.hudi import keys, partition_buckets
from tablespec.hudi.config import LATEST_PAYLOAD, ORDERED_PAYLOAD, TableConfig, init_table, write_table_config
from tablespec.hudi.formats.avro import to_avro_schema
from tablespec.hudi.mdt import record_index_writer as rli_writer
from tablespec.hudi.mdt import writer as mdt_writer
from tablespec.hudi.mdt.record_index import file_group_count
from tablespec.hudi.services.upgrade import new_table_properties
from tablespec.hudi.table import HudiTable
from tablespec.plan.buckets import BucketLayout
from tablespec.plan.columns import spec_columns
from tablespec.plan.locations import occupied_message
from tablespec.plan.settings import RECORD_LEVEL_BUCKETS, desired_properties, managed_properties_update
from tablespec.state import directory_contents

# Fixed properties of every table tablespec creates (Hudi table version 6, copy-on-write layout).
TABLE_DEFAULTS = {
    keys.TABLE_VERSION.name: "6",
    keys.TIMELINE_LAYOUT_VERSION.name: "1",
    keys.ARCHIVELOG_FOLDER.name: "archived",
    keys.DROP_PARTITION_COLUMNS.name: "false",
    keys.POPULATE_META_FIELDS.name: "true",
}


def creation_properties(spec) -> dict[str, str]:
    props = dict(TABLE_DEFAULTS)
    props.update(desired_properties(spec))
    schema = to_avro_schema(spec_columns(spec), spec.metadata.name)
    if spec.spec.index.type == "RECORD_LEVEL":  # an empty table: Hudi's smallest record index, fixed from now on
        props.setdefault(RECORD_LEVEL_BUCKETS, str(file_group_count(0)))
    props[keys.CREATE_SCHEMA.name] = json.dumps(schema, separators=(",", ":"))
    props.update(_merge_properties(spec))
    return props


def _merge_properties(spec) -> dict[str, str]:
    """A MERGE_ON_READ table's merge of log records: Hudi's compaction merges with it (as writers do)."""
    if spec.spec.table_type != "MERGE_ON_READ":
        return {}
    return {keys.COMPACTION_PAYLOAD_CLASS.name: ORDERED_PAYLOAD if spec.spec.ordering_field else LATEST_PAYLOAD,
            keys.COMPACTION_MERGER_STRATEGY.name: mdt_writer.MERGER_STRATEGY}   # as Hudi 0.15 creates one


def create_table(table: HudiTable, spec, version: int | None = None) -> TableConfig:
    """Lay out `.hoodie/` and write hoodie.properties last: the table exists once that file does;
    then Hudi's metadata table (its `files` partition, empty; a RECORD_LEVEL table's `record_index`
    too), as Hudi creates it with a table's first write. A crash in between leaves a table without
    one, which `plan` proposes to build.
    At `version` 9 (by default the spec's `tableVersion`, else 6): Hudi 1.x's layout and properties,
    its metadata table as Hudi 1.2 creates it, and a BUCKET table's per-partition bucket counts in its
    first hashing config.

    Only in an empty directory (empty folders are fine: an interrupted create left them): files
    there (a `.hoodie/` timeline without hoodie.properties, data of something else) are refused by
    name, since the new table would adopt or hide them; `tablespec import` adopts a Hudi table."""
    storage, base = table.storage, table.base
    version = version or spec.spec.table_version or 6
    props = creation_properties(spec)
    if version != 6:   # hoodie.properties as Apache Hudi 1.x writes them for a new table
        props = new_table_properties(props, version)
    config = TableConfig.from_properties(props)
    if table.fresh_config() is None and (files := directory_contents(table)):  # as it is now
        raise PlanError(f"{occupied_message(base, files)}; nothing was created")
    try:
        init_table(storage, base, config, props)
    except HudiFormatError as e:
        raise StalePlanError(f"{e}; it was created since the plan was made") from None
    finally:
        table.refresh()  # the table exists now (or someone else's does)
    if version != 6 and (layout := BucketLayout.from_spec(spec)) is not None:   # Hudi 1.x writers read
        partition_buckets.record(storage, base, config, config, layout.rules)   # per-partition counts there
    mdt_writer.initialize(table, {})  # refreshes the handle (version 9: in Hudi 1.x's layout)
    if spec.spec.index.type == "RECORD_LEVEL":
        rli_writer.initialize(table, (), int(config.to_properties()[RECORD_LEVEL_BUCKETS]))
    return table.table_config


def update_settings(table: HudiTable, spec, extra: dict[str, str] | None = None) -> TableConfig:
    """Set every managed property to the spec's value (`extra`: values tablespec chose, such as
    a record-level index's bucket count), keeping everything else in the file. The caller holds
    the table lock, under which the handle's config is the file's."""
    current = table.table_config
    props = managed_properties_update(current.to_properties(), spec)
    if current.table_type != spec.spec.table_type:   # COPY_ON_WRITE -> MERGE_ON_READ: a merge, unless Hudi set one
        props = {**_merge_properties(spec), **props}
    config = TableConfig.from_properties({**props, **(extra or {})})
    layout = BucketLayout.from_spec(spec)   # versions 8/9: first where Hudi 1.x writers read the layout
    partition_buckets.record(table.storage, table.base, current, config, layout.rules if layout else ())
    table.wrote_config(write_table_config(table.storage, table.base, config))  # as written and verified
    return config

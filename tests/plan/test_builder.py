"""The planner is pure: build specs and observed states by hand, assert the actions."""
from __future__ import annotations

import dataclasses
from dataclasses import replace

import pytest
from _support import ORDERS_SPEC

from tablespec.actions.metadata import creation_properties
from tablespec.errors import UnsupportedTableError
from tablespec.hudi import metadata_table
from tablespec.hudi.config import TableConfig, named_partitions
from tablespec.hudi.formats.avro import from_avro_schema
from tablespec.hudi.table import Location
from tablespec.hudi.timeline.instant import Instant
from tablespec.plan.builder import build_plan
from tablespec.spec.loader import load_spec_text
from tablespec.state import ObservedColumn, TableState

BASE = ORDERS_SPEC
WAREHOUSE = "/wh"
LOCATION = "/wh/sales/orders"


def load(text: str):
    result = load_spec_text(text, "orders.yaml")
    assert not result.errors, result.errors
    return result.specs


def state_for(text: str, **overrides) -> TableState:
    """The state a table created from `text` has (its metadata table's `files` partition built;
    optionally with hoodie.properties edited)."""
    spec = load(text)[0].spec
    props = {**creation_properties(spec), metadata_table.PARTITIONS_KEY: "files"}
    props.update(overrides)
    import json
    cols = tuple(ObservedColumn(n, t, nl) for n, t, nl in from_avro_schema(json.loads(props["hoodie.table.create.schema"])))
    config = TableConfig.from_properties(props)
    return TableState(location=LOCATION, exists=True, config=config, properties_fingerprint="fp", columns=cols,
                      head="20261121000000000", metadata_table=metadata_table.MetadataTable(
                          True, named_partitions(props), (), 1))


def actions(text: str, state: TableState):
    plan = build_plan(load(text), {LOCATION: state}, Location.parse(WAREHOUSE))
    return plan.tables[0].actions


def test_plan_absent_table_creates_it():
    acts = actions(BASE, TableState(location=LOCATION, exists=False))
    assert [a.kind for a in acts] == ["create_table"]
    changes = {c.path: c.new for c in acts[0].changes}
    assert changes["spec.index.numBuckets"] == "16"
    assert changes["spec.recordKey.fields"] == "order_id"
    assert changes["spec.columns.amount"] == "decimal(12,2)"


def test_plan_matching_table_has_no_changes():
    plan = build_plan(load(BASE), {LOCATION: state_for(BASE)}, Location.parse(WAREHOUSE))
    assert not plan.has_changes
    assert plan.summary() == {"create": 0, "update": 0, "replace": 0, "unchanged": 1}


def test_plan_ordering_field_change_is_settings_update():
    acts = actions(BASE.replace("orderingField: updated_at", "orderingField: customer_id"), state_for(BASE))
    assert [(a.kind, a.destructive) for a in acts] == [("update_settings", False)]
    assert [(c.path, c.old, c.new) for c in acts[0].changes] == [("spec.orderingField", "updated_at", "customer_id")]


def test_plan_bucket_count_change_is_rescale():
    acts = actions(BASE.replace("numBuckets: 16", "numBuckets: 32"), state_for(BASE))
    assert [a.kind for a in acts] == ["bucket_rescale"]
    assert acts[0].changes[0].old == "16" and acts[0].changes[0].new == "32"
    assert acts[0].params.partitions == []  # the table has no data yet


def test_plan_advice_on_tiny_bucket_files_names_a_readable_size():
    """Bucket files of a few hundred bytes read as bytes, not '0.0 MiB' (issue 27)."""
    from tablespec.state import FileGroupState
    groups = tuple(FileGroupState("order_date=2026-11-01", f"{b:08d}-0000-0000-0000-000000000000-0", "1", 1500)
                   for b in range(16))
    state = dataclasses.replace(state_for(BASE), file_groups=groups)
    [rescale] = actions(BASE.replace("numBuckets: 16", "numBuckets: 32"), state)
    assert rescale.kind == "bucket_rescale" and rescale.estimate.bucket_file_bytes == 750
    assert rescale.advice == ["expected bucket files of 750 B on average, far below the target 128MiB "
                              "(clustering.targetFileSize): too many buckets make small files; consider numBuckets: 1"]


def test_plan_simple_to_bucket_is_bootstrap():
    simple = BASE.replace("index: {type: BUCKET, numBuckets: 16}", "index: {type: SIMPLE}")
    acts = actions(BASE, state_for(simple))
    assert [a.kind for a in acts] == ["bucket_bootstrap"]
    assert acts[0].params.model_dump() == {"from": "SIMPLE", "to": "BUCKET", "partitions": []}


def test_plan_bucket_to_bloom_is_config_only_migration():
    bloom = BASE.replace("index: {type: BUCKET, numBuckets: 16}", "index: {type: BLOOM}")
    acts = actions(bloom, state_for(BASE))
    assert [a.kind for a in acts] == ["index_migration"]
    assert not acts[0].destructive
    assert {c.path for c in acts[0].changes} == {"spec.index.type", "spec.index.numBuckets", "spec.index.hashFields"}


def test_plan_migration_to_record_level_builds_with_an_estimate():
    rli = BASE.replace("index: {type: BUCKET, numBuckets: 16}", "index: {type: RECORD_LEVEL}")
    acts = actions(rli, state_for(BASE))
    assert [(a.kind, a.params.to) for a in acts] == [("index_migration", "RECORD_LEVEL")]
    assert {"rows", "file_groups", "bytes_to_read"} <= set(acts[0].estimate.model_dump())


RLI = BASE.replace("index: {type: BUCKET, numBuckets: 16}", "index: {type: RECORD_LEVEL}")
WITH_RECORD_INDEX = {metadata_table.PARTITIONS_KEY: "files,record_index"}


def test_plan_record_level_bucket_count_chosen_by_tablespec_is_no_change():
    state = state_for(RLI, **{"tablespec.record.level.num.buckets": "12", **WITH_RECORD_INDEX})
    assert actions(RLI, state) == []
    explicit = RLI.replace("{type: RECORD_LEVEL}", "{type: RECORD_LEVEL, recordLevel: {numBuckets: 20}}")
    assert [(a.kind, a.reasons[0][:55]) for a in actions(explicit, state)] == [
        ("index_migration", "the record index's file-group count (numBuckets) change")]


def test_plan_builds_hudis_record_index_where_a_record_level_table_lacks_it():
    [build] = actions(RLI, state_for(RLI))
    assert build.kind == "record_index_build" and "no record_index partition" in build.reasons[0]
    assert {"rows", "file_groups", "bytes_to_read"} <= set(build.estimate.model_dump())


def test_plan_migrates_a_private_index_visibly():
    [build] = actions(RLI, dataclasses.replace(state_for(RLI), private_index=True))
    assert build.kind == "record_index_build" and "migrates tablespec's private" in build.reasons[0]
    assert ".hoodie/.tablespec/record_index" in build.reasons[1] and build.estimate.model_dump() != {}
    # Hudi's record index built already (an apply that stopped before removing the folder): the folder only
    [rest] = actions(RLI, dataclasses.replace(state_for(RLI, **WITH_RECORD_INDEX), private_index=True))
    assert rest.kind == "record_index_build" and rest.estimate.model_dump() == {}
    assert [r[:35] for r in rest.reasons] == ["tablespec's private index (.hoodie/"]


def test_plan_records_record_level_on_a_table_whose_record_index_hudi_built():
    """An imported Hudi table (no index recorded) with a record_index partition: configuration only."""
    hudi_built = state_for(BASE, **{"tablespec.index.type": "SIMPLE", **WITH_RECORD_INDEX})
    [switch] = actions(RLI, hudi_built)
    assert (switch.kind, switch.params.to) == ("index_migration", "RECORD_LEVEL")
    assert "no build" in switch.reasons[0] and switch.estimate.model_dump() == {}


def test_plan_drops_the_record_index_of_a_table_that_is_not_record_level():
    """As Apache Hudi 0.15's writers with the record index off do (HoodieTable.deleteMetadataIndexIfNecessary)."""
    simple = BASE.replace("index: {type: BUCKET, numBuckets: 16}", "index: {type: SIMPLE}")
    [drop] = actions(simple, state_for(simple, **WITH_RECORD_INDEX))
    assert drop.kind == "drop_metadata_partitions" and drop.params.partitions == ["record_index"]
    # switching away from RECORD_LEVEL: the index migration drops it, nothing else
    assert [a.kind for a in actions(simple, state_for(RLI, **WITH_RECORD_INDEX))] == ["index_migration"]


@pytest.mark.parametrize("edit, reason", [
    (("recordKey: {fields: [order_id]}", "recordKey: {fields: [order_id, customer_id]}"), "record key changes"),
    (("partitioning: {fields: [order_date]}", "partitioning: {fields: [customer_id]}"), "partition fields changes"),
    (("partitioning: {fields: [order_date]}", "partitioning: {fields: [order_date], hiveStyle: false}"),
     "partition path style changes"),
    (("partitioning: {fields: [order_date]}", "partitioning: {fields: [order_date], urlEncode: true}"),
     "partition path encoding changes from false to true"),
    (("    - {name: amount, type: \"decimal(12,2)\"}\n", ""), "drop column amount"),
    (("type: long}", "type: string}"), "change type of column customer_id"),
])
def test_plan_destructive_changes_replace_table(edit, reason):
    acts = actions(BASE.replace(*edit), state_for(BASE))
    assert [(a.kind, a.destructive, a.symbol) for a in acts] == [("replace_table", True, "-/+")]
    assert any(r.startswith(reason) for r in acts[0].reasons), acts[0].reasons


def test_plan_added_nullable_column_and_widening_are_schema_evolution():
    text = BASE.replace("    - {name: order_date, type: date}\n",
                        "    - {name: order_date, type: date}\n    - {name: note, type: string}\n")
    text = text.replace("decimal(12,2)", "decimal(14,2)")
    acts = actions(text, state_for(BASE))
    assert [a.kind for a in acts] == ["schema_evolution"]
    assert sorted(acts[0].reasons) == ["add column note string", "widen column amount: decimal(12,2) -> decimal(14,2)"]


def test_plan_labels_and_retention_are_settings():
    text = BASE.replace("metadata: {name: orders, database: sales}",
                        "metadata: {name: orders, database: sales, labels: {team: payments}}")
    text += "  retention: {keepCommits: 20}\n"
    acts = actions(text, state_for(BASE))
    assert [a.kind for a in acts] == ["update_settings"]
    assert {(c.path, c.old, c.new) for c in acts[0].changes} == {
        ("metadata.labels.team", None, "payments"), ("spec.retention.keepCommits", "10", "20")}


def test_plan_merge_on_read_table_is_refused():
    with pytest.raises(UnsupportedTableError, match="MERGE_ON_READ"):
        actions(BASE, state_for(BASE, **{"hoodie.table.type": "MERGE_ON_READ"}))


def test_plan_cleans_and_archives_a_merge_on_read_table():
    """On a MERGE_ON_READ table clean and archiving are planned as on copy-on-write (file slices with
    their log files; deltacommits and compactions), with no warning leaving them to Hudi's writers;
    archiving keeps the deltacommits the compaction trigger counts."""
    text = BASE.replace("  index:", "  tableType: MERGE_ON_READ\n  index:")
    spec = load(text)[0].spec
    assert spec.archive_settings.compaction_delta_commits == 5
    state = replace(state_for(text, **{"hoodie.table.type": "MERGE_ON_READ"}),
                    cleanable={10: {"earliest_instant_to_retain": "20261121000000000", "partitions": 1, "files": 3,
                                    "bytes_to_free": 300}},
                    archivable={spec.archive_settings: {"instants": 4, "active_commits": 31}})
    plan = build_plan(load(text), {LOCATION: state}, Location.parse(WAREHOUSE))
    assert [a.kind for a in plan.tables[0].actions] == ["clean", "archive"]
    assert plan.tables[0].actions[0].estimate.files == 3
    assert not [w for w in plan.tables[0].warnings if "left to Apache Hudi" in w]


@pytest.mark.parametrize("version", ["6", "9"])
def test_plan_rolls_back_a_dead_deltacommit_on_merge_on_read(version):
    """A deltacommit whose writer died is rolled back by the plan on table versions 6 and 9 alike (on
    9 by deleting the log files it names), not left to Hudi's writers."""
    text = BASE.replace("  index:", "  tableType: MERGE_ON_READ\n  index:")
    dead = Instant("20261121000000001", "deltacommit", "inflight")
    state = replace(state_for(text, **{"hoodie.table.type": "MERGE_ON_READ", "hoodie.table.version": version}),
                    pending=(dead,), expired=(dead,))
    plan = build_plan(load(text), {LOCATION: state}, Location.parse(WAREHOUSE))
    [rollback] = plan.tables[0].actions
    assert (rollback.kind, rollback.params.instants) == ("rollback", [dead.timestamp])
    assert not plan.tables[0].warnings


def test_plan_records_requirements_of_observed_state():
    plan = build_plan(load(BASE), {LOCATION: state_for(BASE)}, Location.parse(WAREHOUSE))
    reqs = {r.type: r for r in plan.tables[0].requirements}
    assert reqs["table_exists"].exists and reqs["head_instant"].head == "20261121000000000"
    assert reqs["properties_fingerprint"].fingerprint == "fp"


def test_plan_short_and_byte_columns_match_their_stored_int():
    text = BASE.replace("    - {name: order_date, type: date}\n",
                        "    - {name: order_date, type: date}\n    - {name: qty, type: short}\n"
                        "    - {name: flags, type: \"array<byte>\"}\n")
    plan = build_plan(load(text), {LOCATION: state_for(text)}, Location.parse(WAREHOUSE))
    assert not plan.has_changes


def test_apply_has_a_visitor_for_every_action_kind():
    """A kind the planner can emit and apply cannot run would fail mid-plan; every kind has one."""
    from typing import get_args

    from tablespec.apply import Applier
    from tablespec.plan.actions import ActionKind
    assert [k for k in get_args(ActionKind) if not callable(getattr(Applier, f"visit_{k}", None))] == []


def test_plan_rename_needs_renamed_from_and_shows_with_any_action():
    from tablespec.errors import SpecError
    renamed = BASE.replace("metadata: {name: orders, database: sales}",
                           "metadata: {name: invoices, database: sales, renamedFrom: orders}")
    assert renamed != BASE
    with pytest.raises(SpecError, match="is named 'orders', the spec names 'invoices'"):
        actions(renamed.replace(", renamedFrom: orders", ""), state_for(BASE))
    (update,) = actions(renamed, state_for(BASE))
    assert update.kind == "update_settings" and update.reasons == ["rename orders -> invoices (metadata.renamedFrom)"]
    assert [(c.path, c.old, c.new) for c in update.changes] == [("metadata.name", "orders", "invoices")]
    # a rewrite switches every managed property: the rename is one of its shown changes
    (replace,) = actions(renamed.replace("fields: [order_date]", "fields: [customer_id]"), state_for(BASE))
    assert replace.kind == "replace_table" and "rename orders -> invoices (metadata.renamedFrom)" in replace.reasons
    assert ("metadata.name", "orders", "invoices") in [(c.path, c.old, c.new) for c in replace.changes]


def test_plan_builds_a_missing_metadata_table_and_drops_partitions_it_does_not_maintain():
    """A table without Hudi's metadata table (retired earlier, or Hudi wrote with it off): a
    build with the file-system view's estimate; partitions tablespec does not maintain: a drop
    naming them. Both housekeeping: nothing else changes."""
    absent = replace(state_for(BASE, **{metadata_table.PARTITIONS_KEY: ""}), data_files=(3, 3000),
                     partitions=("a", "b"), metadata_table=metadata_table.NONE)
    acts = actions(BASE, absent)
    assert [a.kind for a in acts] == ["build_metadata_table"]
    assert acts[0].estimate.model_dump() == {"partitions": 2, "files": 3, "bytes": 3000}
    assert "hoodie.metadata.enable=false" in acts[0].reasons[0]
    stale = state_for(BASE, **{metadata_table.PARTITIONS_KEY: "files,column_stats,secondary_index_by_id,record_index",
                               metadata_table.INFLIGHT_KEY: "partition_stats"})
    acts = actions(BASE, stale)
    assert [a.kind for a in acts] == ["drop_metadata_partitions"]
    # record_index: maintained on RECORD_LEVEL tables; on this BUCKET table dropped, as Hudi's writers drop it;
    # column_stats: maintained; a partition still being built never is
    assert acts[0].params.partitions == ["secondary_index_by_id", "partition_stats", "record_index"]
    assert "secondary_index_by_id, partition_stats" in acts[0].reasons[0] and "Apache Hudi 0.15's writers" in acts[0].reasons[1]


@pytest.mark.parametrize("version", ["8", "9"])
def test_plan_keeps_hudis_record_index_on_version_9_as_on_6_and_leaves_8_alone(version):
    """Version 9: RECORD_LEVEL builds Hudi 1.x's record index where it lacks one, another index drops
    it; version 8 (read only) keeps what its Hudi writers keep."""
    v1x = {"hoodie.table.version": version, "hoodie.timeline.layout.version": "2"}
    built = [a.kind for a in actions(RLI, state_for(RLI, **v1x, **{metadata_table.PARTITIONS_KEY: "files"}))]
    simple = BASE.replace("index: {type: BUCKET, numBuckets: 16}", "index: {type: SIMPLE}")
    dropped = actions(simple, state_for(simple, **v1x, **WITH_RECORD_INDEX))
    if version == "8":
        assert "record_index_build" not in built and "drop_metadata_partitions" not in [a.kind for a in dropped]
    else:
        assert built == ["record_index_build"]
        [drop] = dropped
        assert drop.kind == "drop_metadata_partitions" and drop.params.partitions == ["record_index"]


def test_an_expression_index_declared_for_a_new_table_is_refused_naming_it():
    """No tablespec write keeps an expression index: declaring one is refused when the table does not exist
    yet too (not a create whose every later write and plan would be refused), naming the index."""
    from tablespec.errors import PlanError
    text = ORDERS_SPEC + ("  tableVersion: 9\n  dataSkipping:\n    expressionIndexes: [{name: idx_day, type: column_stats,"
                          " column: updated_at, expression: from_unixtime, options: {format: yyyy-MM-dd}}]\n")
    with pytest.raises(PlanError, match=r"declares the expression index\(es\) idx_day ") as refused:
        actions(text, TableState(location=LOCATION, exists=False))
    assert "\n" not in str(refused.value)

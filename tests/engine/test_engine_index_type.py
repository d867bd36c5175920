"""The table's index type in hoodie.properties: tablespec's under tablespec.index.type, Hudi's under
hoodie.index.type (RECORD_INDEX for RECORD_LEVEL: Hudi's record index); tables written with RECORD_LEVEL under
hoodie.index.type (before tablespec.index.type) keep working and move to the new keys."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from _support import ORDERS_SPEC
from helpers import assert_hudi_rs_agrees, make_table

from tablespec.actions.metadata import creation_properties, update_settings
from tablespec.hudi.config import TableConfig, read_table_config, table_index_type, write_table_config
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.table import HudiTable
from tablespec.index import verify
from tablespec.plan.builder import table_actions
from tablespec.spec.loader import load_spec_text
from tablespec.state import observe

RECORD_LEVEL_SPEC = ORDERS_SPEC.replace("{type: BUCKET, numBuckets: 16}", "{type: RECORD_LEVEL}")
SCHEMA = "order_id string, customer_id bigint, amount decimal(12,2), updated_at timestamp, order_date date"
T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)


def _orders(spark, rows):
    return spark.createDataFrame([(o, 1, Decimal("1.00"), T0 + dt.timedelta(hours=h), dt.date(2026, 11, d))
                                  for o, h, d in rows], SCHEMA)


def _props(location: str) -> dict[str, str]:
    return read_table_config(LocalStorage(), location).to_properties()


@pytest.mark.parametrize("index", ["SIMPLE", "BLOOM", "BUCKET", "RECORD_LEVEL"])
def test_new_tables_name_their_index_under_both_keys(index):
    block = "{type: BUCKET, numBuckets: 4}" if index == "BUCKET" else f"{{type: {index}}}"
    spec = load_spec_text(ORDERS_SPEC.replace("{type: BUCKET, numBuckets: 16}", block), "t.yaml").specs[0].spec
    props = creation_properties(spec)
    assert props["tablespec.index.type"] == index == table_index_type(props)
    assert props["hoodie.index.type"] == ("RECORD_INDEX" if index == "RECORD_LEVEL" else index)
    assert not [k for k, v in props.items() if k.startswith("hoodie.") and "RECORD_LEVEL" in v]


def test_a_record_level_table_in_the_old_layout_plans_clean_writes_and_moves_to_the_new_keys(spark, tmp_path):
    table = make_table(spark, tmp_path, RECORD_LEVEL_SPEC)
    table.write(_orders(spark, [("o1", 0, 1), ("o2", 0, 2)]), "upsert")
    old = {k: v for k, v in _props(table.location).items() if k != "tablespec.index.type"}
    write_table_config(LocalStorage(), table.location,
                       TableConfig.from_properties({**old, "hoodie.index.type": "RECORD_LEVEL"}))
    assert table_index_type(_props(table.location)) == "RECORD_LEVEL"

    state = observe(HudiTable.open(table.location))
    assert "record_index" in state.metadata_table.partitions and table_actions(table.spec, state) == []
    table.write(_orders(spark, [("o1", 1, 3), ("o3", 0, 1)]), "upsert")  # o1 moves: the index is in use
    assert {r["key"]: r["partition_path"] for r in table.lookup(["o1", "o2", "o3"]).to_pylist()} == {
        "o1": "order_date=2026-11-03", "o2": "order_date=2026-11-02", "o3": "order_date=2026-11-01"}
    assert verify(HudiTable.open(table.location)).ok
    assert _props(table.location)["hoodie.index.type"] == "RECORD_LEVEL"  # a write leaves the settings alone

    longer = load_spec_text(RECORD_LEVEL_SPEC + "  retention: {keepCommits: 20}\n", "t.yaml").specs[0].spec
    assert [a.kind for a in table_actions(longer, observe(HudiTable.open(table.location)))] == ["update_settings"]
    update_settings(table.table, longer)
    props = _props(table.location)
    assert (props["tablespec.index.type"], props["hoodie.index.type"]) == ("RECORD_LEVEL", "RECORD_INDEX")
    assert table_actions(longer, observe(HudiTable.open(table.location))) == []
    assert verify(HudiTable.open(table.location)).ok
    assert_hudi_rs_agrees(table)

"""Apache Hudi upserts and deletes into tablespec tables using the configuration from
`tablespec hudi-options`: afterwards every reader agrees, the plan is clean, the layout and
hoodie.properties are still tablespec's, and tablespec writes on."""
from __future__ import annotations

from collections import Counter

import pytest
from helpers import make_table  # noqa: I001 (interop_support puts tests/engine on the path)
from interop_support import assert_readers_agree, hudi_df, rejected_properties
from test_hudi_metadata_record_index import assert_index_is_the_table
from test_hudi_metadata_table import assert_listing_is_storage

from tablespec.hudi.config import read_table_config
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.table import HudiTable, Location
from tablespec.hudi_options import hudi_write_options
from tablespec.plan.builder import build_plan
from tablespec.spec.loader import load_spec_text
from tablespec.state import observe, observe_specs

SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {{name: {name}, database: interop}}
spec:
  location: interop/{name}
  columns:
    - {{name: id, type: string, nullable: false}}
    - {{name: k2, type: int, nullable: false}}
    - {{name: v, type: long}}
    - {{name: ts, type: long}}
    - {{name: day, type: string, nullable: false}}
  recordKey: {key}
  partitioning: {{fields: {parts}}}
{ordering}  index: {index}
"""
DDL = "id string, k2 int, v bigint, ts bigint, day string"
# name -> (record key, partition fields, orderingField, index)
CASES = {
    "simple_auto_keys": ("{autoGenerate: true}", "[day]", None, "{type: SIMPLE}"),
    "bloom_complex_key": ("{fields: [id, k2]}", "[]", "ts", "{type: BLOOM}"),
    "bucket": ("{fields: [id]}", "[day]", "ts", "{type: BUCKET, numBuckets: 2}"),
    "record_level": ("{fields: [id]}", "[day]", "ts", "{type: RECORD_LEVEL}"),
}
SEED = [("a1", 1, 10, 5, "d1"), ("a2", 1, 20, 5, "d1"), ("a3", 1, 30, 5, "d2")]


def _spec(name: str) -> str:
    key, parts, ordering, index = CASES[name]
    return SPEC.format(name=name, key=key, parts=parts, index=index,
                       ordering=f"  orderingField: {ordering}\n" if ordering else "")


def _hudi_write(df, options: dict[str, str], operation: str) -> None:
    """A user's Hudi job: exactly the options `hudi-options` gives (the table's path among them)."""
    df.write.format("hudi").options(**options).option("hoodie.datasource.write.operation", operation) \
        .mode("append").save()


def apply_plan(table, warehouse):
    loaded = load_spec_text(_spec(table.spec.metadata.name), "interop.yaml").specs
    return build_plan(loaded, observe_specs(loaded, Location.parse(str(warehouse))), Location.parse(str(warehouse)))


def _data(rows: list[tuple]) -> list[tuple]:
    """The data columns of rows as `assert_readers_agree` returns them."""
    return sorted(tuple(dict(r)[c] for c in ("id", "k2", "v", "ts", "day")) for r in rows)


@pytest.mark.parametrize("name", list(CASES))
def test_hudi_writes_with_hudi_options(hudi, tmp_path, name):
    table = make_table(hudi, tmp_path, _spec(name))
    auto = table.spec.spec.record_key.auto_generate
    table.write(hudi.createDataFrame(SEED, DDL), "insert" if auto else "upsert")
    options = hudi_write_options(table.spec, HudiTable.open(table.location))

    if auto:  # Hudi generates keys for new records; deletes go by the stored record keys
        _hudi_write(hudi.createDataFrame([("a4", 1, 40, 5, "d2")], DDL), options, "insert")
        doomed = hudi_df(hudi, table.location).where("id = 'a2'")
        expected = [("a1", 1, 10, 5, "d1"), ("a3", 1, 30, 5, "d2"), ("a4", 1, 40, 5, "d2")]
    else:  # a1 newer: updated (then deleted); a2 older: the stored row wins; a3 moves to d1 (global index); a4 new
        moved = "d1" if table.spec.spec.index.type == "RECORD_LEVEL" else "d2"
        _hudi_write(hudi.createDataFrame([("a1", 1, 11, 6, "d1"), ("a2", 1, 99, 4, "d1"), ("a3", 1, 33, 6, moved),
                                          ("a4", 1, 40, 5, "d2")], DDL), options, "upsert")
        doomed = hudi.createDataFrame([("a1", 1, 0, 9, "d1")], DDL)
        expected = [("a2", 1, 20, 5, "d1"), ("a3", 1, 33, 6, moved), ("a4", 1, 40, 5, "d2")]
    _hudi_write(doomed, options, "delete")

    assert _data(assert_readers_agree(hudi, table)) == expected
    state = observe(HudiTable.open(table.location))
    record_level = table.spec.spec.index.type == "RECORD_LEVEL"
    # Hudi's writers keep the metadata table and (RECORD_INDEX) the record index as tablespec does: nothing to do
    plan = apply_plan(table, tmp_path)
    assert [a.kind for _, a in plan.actions] == []
    if table.spec.spec.index.type == "BUCKET":
        per_bucket = Counter((fg.partition, fg.bucket) for fg in state.file_groups)
        assert set(per_bucket.values()) == {1} and {b for _, b in per_bucket} <= {0, 1}
    assert_listing_is_storage(table.location)  # Hudi's jobs and tablespec keep the metadata table alike
    config = read_table_config(LocalStorage(), table.location)
    assert config.version == 6
    assert rejected_properties(hudi, config.to_properties()) == {}

    if record_level:  # the index Hudi kept is the table, key by key (Hudi's own lookup agrees)
        assert_index_is_the_table(hudi, table.location)
    table.write(hudi.createDataFrame([("a5", 1, 50, 7, "d1")], DDL), "insert" if auto else "upsert")
    assert _data(assert_readers_agree(hudi, table)) == sorted(expected + [("a5", 1, 50, 7, "d1")])

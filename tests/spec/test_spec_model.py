"""The models as Python code uses them: construction by name, defaults, helpers, round trips."""
from __future__ import annotations

import pydantic
import pytest

from tablespec.spec.loader import spec_digest
from tablespec.spec.model import BloomIndex, BucketIndex, Column, RecordKey, RecordLevelIndex, SimpleIndex, TableBody, TableSpec
from tablespec.types import Decimal, Field, Primitive, Struct


def make(**body) -> TableSpec:
    fields = {"location": "t", "columns": [Column(name="id", type="BIGINT", nullable=False), Column(name="k", type="int")],
              "record_key": RecordKey(fields=["id", "k"]), **body}
    return TableSpec(api_version="tablespec/v1", kind="HudiTable", metadata={"name": "t"}, spec=TableBody(**fields))


def test_defaults():
    spec = make()
    body = spec.spec
    assert (body.table_type, body.index, body.partitioning.fields, body.partitioning.hive_style) == (
        "COPY_ON_WRITE", SimpleIndex(), [], True)
    c = body.clustering
    assert (c.strategy, c.target_file_size, c.small_file_limit, c.max_bytes_per_group, c.max_groups, c.every_n_commits) == (
        "NONE", 128 * 1024**2, 100 * 1024**2, 2 * 1024**3, 30, 4)
    assert (body.retention.keep_commits, body.protection.prevent_destroy) == (10, False)


def test_column_type_is_canonical_and_parsed():
    column = Column(name="a", type="DECIMAL(12, 2)")
    assert column.type == "decimal(12,2)" and column.data_type == Decimal(12, 2)
    assert Column(name="s", type="struct<x: BIGINT>").data_type == Struct((Field("x", Primitive("long")),))


def test_helpers():
    spec = make(index=BucketIndex(num_buckets=8))
    assert spec.name == "t" and spec.qualified_name == "t"
    assert spec.column("k").type == "int" and spec.column("nope") is None
    assert spec.effective_hash_fields == ["id", "k"]
    assert make(index=BucketIndex(num_buckets=8, hash_fields=["k"])).effective_hash_fields == ["k"]
    for index in (SimpleIndex(), BloomIndex(), RecordLevelIndex()):
        assert make(index=index).effective_hash_fields == []


def test_models_are_frozen():
    spec = make()
    with pytest.raises(pydantic.ValidationError):
        spec.spec.location = "elsewhere"


def test_cross_field_rules_apply_to_python_construction_too():
    with pytest.raises(pydantic.ValidationError) as info:
        make(ordering_field="ts", index=BucketIndex(num_buckets=2, hash_fields=["nope"]))
    assert [(e["loc"], e["msg"]) for e in info.value.errors()] == [
        (("orderingField",), "ordering field 'ts' is not a column"),
        (("index", "hashFields", 0), "hash field 'nope' is not a column"),
    ]


def test_json_round_trip_keeps_meaning():
    spec = make(index=BucketIndex(num_buckets=8), clustering={"strategy": "SORT", "sort_columns": ["k"], "target_file_size": "1GiB"})
    dumped = spec.model_dump(mode="json", by_alias=True)
    assert dumped["spec"]["clustering"]["targetFileSize"] == 1024**3
    again = TableSpec.model_validate(dumped)
    assert again == spec and spec_digest(again) == spec_digest(spec)


def test_yaml_validation_refuses_python_names():
    dumped = make().model_dump(mode="json", by_alias=False)
    with pytest.raises(pydantic.ValidationError):
        TableSpec.model_validate(dumped, by_alias=True, by_name=False)
    assert TableSpec.model_validate(dumped) == make()


def test_catalog_entry_defaults_to_the_table_name_and_keeps_old_digests():
    plain = make()
    assert plain.catalog_name is None
    assert "catalog" not in plain.model_dump(by_alias=True)["spec"]
    registered = TableSpec.model_validate({**plain.model_dump(by_alias=True),
                                           "spec": {**plain.model_dump(by_alias=True)["spec"], "catalog": {"database": "sales"}}})
    assert registered.catalog_name == ("sales", plain.name)
    assert spec_digest(registered) != spec_digest(plain)
    with pytest.raises(pydantic.ValidationError, match="String should match pattern"):
        TableSpec.model_validate({**plain.model_dump(by_alias=True),
                                  "spec": {**plain.model_dump(by_alias=True)["spec"], "catalog": {"database": "bad-name"}}})

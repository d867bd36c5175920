"""The example specs are the demo's input: they must load with no errors and no warnings."""
from __future__ import annotations

from pathlib import Path

import pytest

from tablespec.spec.loader import load_specs
from tablespec.spec.model import BucketIndex, RecordLevelIndex, SimpleIndex

EXAMPLES = Path(__file__).resolve().parents[2] / "specs" / "examples"


@pytest.fixture(scope="module")
def examples():
    result = load_specs([EXAMPLES])
    assert [str(d) for d in result.diagnostics] == []
    return {loaded.spec.name: loaded.spec for loaded in result.specs}


def test_each_example_starts_with_the_schema_line():
    for path in sorted(EXAMPLES.glob("*.yaml")):
        assert path.read_text().splitlines()[0] == "# yaml-language-server: $schema=../tablespec.schema.json", path.name


def test_orders_uses_a_bucket_index(examples):
    orders = examples["orders"]
    assert orders.qualified_name == "sales.orders"
    assert orders.spec.index == BucketIndex(num_buckets=16, hash_fields=["order_id"])
    assert orders.effective_hash_fields == ["order_id"]
    assert (orders.spec.partitioning.fields, orders.spec.partitioning.hive_style) == (["order_date"], True)
    assert (orders.spec.clustering.strategy, orders.spec.clustering.sort_columns) == ("SORT", ["customer_id"])
    assert orders.spec.clustering.target_file_size == 256 * 1024**2
    assert orders.column("amount").type == "decimal(12,2)"


def test_events_is_append_only_with_small_file_stitching(examples):
    events = examples["events"]
    assert events.spec.record_key.auto_generate and events.spec.record_key.fields == []
    assert events.spec.partitioning.fields == ["event_date"]
    assert events.spec.index == SimpleIndex()
    assert events.spec.clustering.strategy == "NONE"
    assert events.spec.retention.keep_commits == 5
    assert events.metadata.labels["env"] == "dev"  # the one templated value, at its default
    assert events.effective_hash_fields == []


def test_events_template_variable(tmp_path):
    result = load_specs([EXAMPLES / "events.yaml"], {"env": "prod"})
    assert result.specs[0].spec.metadata.labels["env"] == "prod"


def test_customers_uses_a_record_level_index_unpartitioned(examples):
    customers = examples["customers"]
    assert isinstance(customers.spec.index, RecordLevelIndex)
    assert customers.spec.partitioning.fields == []
    assert customers.spec.ordering_field == "updated_at"
    assert customers.column("address").type.startswith("struct<")
    assert customers.column("tags").type == "array<string>"

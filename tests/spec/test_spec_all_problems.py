"""Every problem of a spec at once: field errors do not hide the rules relating fields.

Pydantic skips a model's validators once one of its fields fails; validation then runs them on
the parts that did parse, skipping only the rules that need a failed field. Line numbers refer
to the valid spec of conftest.py.
"""
from __future__ import annotations

import pydantic
import pytest

from tablespec.spec.loader import load_spec_text
from tablespec.spec.model import TableSpec


def test_bucket_count_hash_field_and_misspelt_key_together(broken):
    # The example of the issue: numBuckets used to hide the hashFields error.
    assert broken(
        ("numBuckets: 16", "numBuckets: 0"),
        ("hashFields: [order_id]", "hashFields: [nope]"),
        ("orderingField:", "orderingFeild:"),
    ) == [
        "t.yaml:19:3: spec.orderingFeild: unknown key 'orderingFeild'; did you mean 'orderingField'?",
        "t.yaml:22:5: spec.index.numBuckets: must be >= 1, got 0",
        "t.yaml:23:18: spec.index.hashFields[0]: hash field 'nope' is not a column",
    ]


def test_several_kinds_of_error_together(broken):
    assert broken(
        ('type: "decimal(12,2)"', 'type: "decimal(12,2"'),  # a type that does not parse
        ("  orderingField: updated_at\n", "  orderingField: updated_at\n  retension: {keepCommits: 3}\n"),  # unknown key
        ("fields: [order_id]", "fields: [order_id, customer]"),  # a key field that is not a column
        ("sortColumns: [customer_id]", "sortColumns: [customer_id, region]"),  # a sort column that is not a column
        ("    smallFileLimit: 100MiB\n", "    smallFileLimit: 100MiB\n    partitionFilter: '(2024'\n"),  # a bad regex
    ) == [
        "t.yaml:11:22: spec.columns[2].type: expected ')', found end in type 'decimal(12,2' at offset 12",
        "t.yaml:16:24: spec.recordKey.fields[1]: record key field 'customer' is not a column; did you mean 'customer_id'?",
        "t.yaml:20:3: spec.retension: unknown key 'retension'; did you mean 'retention'?",
        "t.yaml:27:32: spec.clustering.sortColumns[1]: sort column 'region' is not a column",
        "t.yaml:30:5: spec.clustering.partitionFilter: invalid regular expression '(2024': "
        "missing ), unterminated subpattern at position 0",
    ]


def test_errors_in_every_part_of_the_body(broken):
    out = broken(
        ("{name: customer_id, type: long}", "{name: customer_id, type: lng}"),
        ("fields: [order_date]", "fields: [order_date, customer]"),
        ("orderingField: updated_at", "orderingField: updated"),
        ("numBuckets: 16", "numBuckets: sixteen"),
        ("hashFields: [order_id]", "hashFields: [order_id, amount]"),
        ("strategy: SORT", "strategy: ZORDR"),
        ("sortColumns: [customer_id]", "sortColumns: [address]"),
        ("targetFileSize: 256MiB", "targetFileSize: 100MiB"),
    )
    assert out == [
        "t.yaml:10:27: spec.columns[1].type: unknown type 'lng' in type 'lng' at offset 0",
        "t.yaml:18:26: spec.partitioning.fields[1]: partition field 'customer' is not a column; did you mean 'customer_id'?",
        "t.yaml:19:3: spec.orderingField: ordering field 'updated' is not a column; did you mean 'updated_at'?",
        "t.yaml:22:5: spec.index.numBuckets: expected an integer, got the string 'sixteen'",
        "t.yaml:23:28: spec.index.hashFields[1]: hash field 'amount' is not a record key field; "
        "Hudi hashes a subset of the record key (order_id)",
        "t.yaml:25:5: spec.clustering.strategy: expected one of NONE, SORT, ZORDER, HILBERT, got the string 'ZORDR'; "
        "did you mean 'ZORDER'?",
        "t.yaml:26:19: spec.clustering.sortColumns[0]: sort column 'address' has the complex type struct<city:string>; "
        "it must be a primitive type",
        "t.yaml:28:5: spec.clustering.smallFileLimit: smallFileLimit (104857600 bytes) must be smaller than "
        "targetFileSize (104857600 bytes)",
    ]


def test_a_bad_size_does_not_hide_the_other_clustering_rule(broken):
    assert broken(("targetFileSize: 256MiB", "targetFileSize: lots"), ("    sortColumns: [customer_id]\n", "")) == [
        "t.yaml:24:3: spec.clustering.sortColumns: strategy SORT needs sortColumns",
        "t.yaml:26:5: spec.clustering.targetFileSize: invalid size 'lots': write bytes as an integer or a number "
        "with a unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), e.g. 256MiB",
    ]


def test_only_the_rules_needing_a_failed_field_are_skipped(broken):
    # recordKey.fields is not a list: "hash fields must be record key fields" cannot be checked,
    # "hash fields must be columns" and the other rules still are.
    assert broken(
        ("fields: [order_id]", "fields: order_id"),
        ("hashFields: [order_id]", "hashFields: [order_id, nope]"),
        ("sortColumns: [customer_id]", "sortColumns: [customer]"),
    ) == [
        "t.yaml:16:5: spec.recordKey.fields: expected a list, got the string 'order_id'",
        "t.yaml:23:28: spec.index.hashFields[1]: hash field 'nope' is not a column",
        "t.yaml:26:19: spec.clustering.sortColumns[0]: sort column 'customer' is not a column; did you mean 'customer_id'?",
    ]


@pytest.mark.parametrize("replacements, expected", [
    pytest.param(
        [("{name: customer_id,", "{name: customer-id,"), ("sortColumns: [customer_id]", "sortColumns: [customer-id]")],
        ["t.yaml:10:8: spec.columns[1].name: invalid name 'customer-id': use letters, digits and underscores, "
         "not starting with a digit"],
        id="reference-to-a-badly-named-column"),
    pytest.param(
        [("{name: customer_id, type: long}", "{name: customer_id, type: [long]}"),
         ("sortColumns: [customer_id]", "sortColumns: [customer_id, address]")],
        ["t.yaml:10:27: spec.columns[1].type: expected a string, got a list",
         "t.yaml:26:32: spec.clustering.sortColumns[1]: sort column 'address' has the complex type struct<city:string>; "
         "it must be a primitive type"],
        id="reference-to-a-column-with-a-bad-type"),
    pytest.param(
        [("fields: [order_id]", "fields: [order_id]\n    autoGenerate: true")],
        ["t.yaml:17:5: spec.recordKey.autoGenerate: autoGenerate: true cannot be combined with fields; use one or the other"],
        id="bucket-rule-on-a-conflicting-record-key"),
])
def test_each_problem_is_reported_once(broken, replacements, expected):
    assert broken(*replacements) == expected


def test_list_items_that_are_not_mappings_keep_the_other_items_in_place(broken):
    assert broken(
        ("{name: customer_id, type: long}", "just_a_name"),
        ("{name: address,", "{name: Order_Id,"),
        ("sortColumns: [customer_id]", "sortColumns: [amount]"),
        ("orderingField: updated_at", "orderingField: amount"),
    ) == [
        "t.yaml:10:7: spec.columns[1]: expected a mapping, got the string 'just_a_name'",
        "t.yaml:14:8: spec.columns[5].name: duplicate column 'Order_Id' (first declared as spec.columns[0])",
    ]


def test_structural_errors_of_the_whole_document_come_with_the_rest(broken):
    assert broken(
        ("kind: HudiTable", "kind: HudiTabel"),
        ("  name: orders\n", "  name: 1orders\n"),
        ("  columns:\n", "  colums:\n"),
        ("fields: [order_id]", "fields: [order_id, order_id]"),
    ) == [
        "t.yaml:2:1: kind: expected HudiTable, got the string 'HudiTabel'",
        "t.yaml:4:3: metadata.name: invalid name '1orders': use letters, digits and underscores, not starting with a digit",
        "t.yaml:6:1: spec.columns: missing required key 'columns'",
        "t.yaml:8:3: spec.colums: unknown key 'colums'; did you mean 'columns'?",
        "t.yaml:16:24: spec.recordKey.fields[1]: record key field 'order_id' is listed twice",
    ]


def test_a_valid_spec_is_untouched_by_the_partial_models(valid_text):
    result = load_spec_text(valid_text, "t.yaml")
    spec = result.specs[0].spec
    assert result.diagnostics == [] and spec == TableSpec.model_validate(spec.model_dump())
    assert spec.spec.clustering.sort_columns == ["customer_id"]
    with pytest.raises(AttributeError):
        spec.spec.no_such_field


def test_python_construction_reports_both_clustering_rules():
    from tablespec.spec.model import Clustering

    with pytest.raises(pydantic.ValidationError) as info:
        Clustering(strategy="SORT", small_file_limit="1GiB", target_file_size="1GiB")
    assert [(e["loc"], e["msg"]) for e in info.value.errors()] == [
        (("sortColumns",), "strategy SORT needs sortColumns"),
        (("smallFileLimit",), "smallFileLimit (1073741824 bytes) must be smaller than targetFileSize (1073741824 bytes)"),
    ]


def test_rules_of_a_nested_model_run_when_a_sibling_field_fails(broken):
    # PartitionTimestamp's own rule (dateString needs inputFormat) and the body's rules run
    # although timeZone is wrong: the machinery is generic, not a list of known models.
    assert broken(
        ("fields: [order_date]\n", "fields: [order_date]\n"
         "    timestamp: {field: updated_at, input: dateString, outputFormat: yyyy, timeZone: Mars/Base}\n"),
        ("hashFields: [order_id]", "hashFields: [nope]"),
    ) == [
        "t.yaml:19:5: spec.partitioning.timestamp.inputFormat: input dateString needs inputFormat",
        "t.yaml:19:17: spec.partitioning.timestamp.field: timestamp field 'updated_at' is not one of the partition "
        "fields (order_date)",
        "t.yaml:19:75: spec.partitioning.timestamp.timeZone: unknown time zone 'Mars/Base'; use an IANA name such as "
        "UTC or Europe/Berlin",
        "t.yaml:24:18: spec.index.hashFields[0]: hash field 'nope' is not a column",
    ]

"""Every validation rule, asserted as printed: FILE:LINE:COL: path: message."""
from __future__ import annotations

import pytest


def test_valid_spec_has_no_diagnostics(messages, valid_text):
    assert messages(valid_text) == []


ERRORS = [
    pytest.param(
        ("kind: HudiTable\n", "kind: HudiTable\nlabels: {}\n"),
        "t.yaml:3:1: labels: unknown key 'labels'; expected one of: apiVersion, kind, metadata, spec",
        id="unknown-key-without-close-match"),
    pytest.param(
        ("  orderingField: updated_at", "  orderField: updated_at"),
        "t.yaml:19:3: spec.orderField: unknown key 'orderField'; did you mean 'orderingField'?",
        id="unknown-key-did-you-mean"),
    pytest.param(
        ("nullable: false}", "nullable: false, coment: id}"),
        "t.yaml:9:55: spec.columns[0].coment: unknown key 'coment'; did you mean 'comment'?",
        id="unknown-key-in-column"),
    pytest.param(
        ("    targetFileSize", "    target_file_size"),
        "t.yaml:27:5: spec.clustering.target_file_size: unknown key 'target_file_size'; did you mean 'targetFileSize'?",
        id="snake-case-key-did-you-mean"),
    pytest.param(
        ("numBuckets: 16", 'numBuckets: "16"'),
        "t.yaml:22:5: spec.index.numBuckets: expected an integer, got the string '16'",
        id="wrong-type-int"),
    pytest.param(
        ("nullable: false}", "nullable: no}"),
        "t.yaml:9:38: spec.columns[0].nullable: expected true or false, got the string 'no'",
        id="wrong-type-bool"),
    pytest.param(
        ("  database: sales", "  database: [sales]"),
        "t.yaml:5:3: metadata.database: expected a string, got a list",
        id="wrong-type-string"),
    pytest.param(
        ("{name: address,", "{name: Order_ID,"),
        "t.yaml:14:8: spec.columns[5].name: duplicate column 'Order_ID' (first declared as spec.columns[0])",
        id="duplicate-column"),
    pytest.param(
        ("fields: [order_date]", "fields: [order_day]"),
        "t.yaml:18:14: spec.partitioning.fields[0]: partition field 'order_day' is not a column; did you mean 'order_date'?",
        id="partition-field-not-a-column"),
    pytest.param(
        ("fields: [order_date]", "fields: [address]"),
        "t.yaml:18:14: spec.partitioning.fields[0]: partition field 'address' has the complex type struct<city:string>; "
        "it must be a primitive type",
        id="partition-field-complex-type"),
    pytest.param(
        ("orderingField: updated_at", "orderingField: updated"),
        "t.yaml:19:3: spec.orderingField: ordering field 'updated' is not a column; did you mean 'updated_at'?",
        id="ordering-field-not-a-column"),
    pytest.param(
        ("hashFields: [order_id]", "hashFields: [order]"),
        "t.yaml:23:18: spec.index.hashFields[0]: hash field 'order' is not a column; did you mean 'order_id'?",
        id="hash-field-not-a-column"),
    pytest.param(
        ("hashFields: [order_id]", "hashFields: [customer_id]"),
        "t.yaml:23:18: spec.index.hashFields[0]: hash field 'customer_id' is not a record key field; "
        "Hudi hashes a subset of the record key (order_id)",
        id="hash-fields-not-subset-of-record-key"),
    pytest.param(
        ("hashFields: [order_id]", "hashFields: []"),
        "t.yaml:23:5: spec.index.hashFields: hashFields must not be empty; omit it to hash the record key fields",
        id="hash-fields-empty"),
    pytest.param(
        ("sortColumns: [customer_id]", "sortColumns: [customer]"),
        "t.yaml:26:19: spec.clustering.sortColumns[0]: sort column 'customer' is not a column; did you mean 'customer_id'?",
        id="sort-column-not-a-column"),
    pytest.param(
        ("sortColumns: [customer_id]", "sortColumns: [address]"),
        "t.yaml:26:19: spec.clustering.sortColumns[0]: sort column 'address' has the complex type struct<city:string>; "
        "it must be a primitive type",
        id="sort-column-complex-type"),
    pytest.param(
        ("fields: [order_id]", "fields: [order_id, order_id]"),
        "t.yaml:16:24: spec.recordKey.fields[1]: record key field 'order_id' is listed twice",
        id="record-key-field-twice"),
    pytest.param(
        ("fields: [order_id]", "fields: [address]"),
        "t.yaml:16:14: spec.recordKey.fields[0]: record key field 'address' has the complex type struct<city:string>; "
        "it must be a primitive type",
        id="record-key-complex-type"),
    pytest.param(
        ("numBuckets: 16", "numBuckets: 0"),
        "t.yaml:22:5: spec.index.numBuckets: must be >= 1, got 0",
        id="num-buckets-below-one"),
    pytest.param(
        ("    hashFields: [order_id]\n", "    hashFields: [order_id]\n    partitionBuckets: [{pattern: '2024-(', numBuckets: 4}]\n"),
        "t.yaml:24:25: spec.index.partitionBuckets[0].pattern: invalid regular expression '2024-(': "
        "missing ), unterminated subpattern at position 5",
        id="partition-buckets-bad-regex"),
    pytest.param(
        ("type: BUCKET", "type: bucket"),
        "t.yaml:21:5: spec.index.type: unknown type 'bucket'; expected one of SIMPLE, BLOOM, BUCKET, RECORD_LEVEL; "
        "did you mean 'BUCKET'?",
        id="unknown-index-type"),
    pytest.param(
        ("    type: BUCKET\n", ""),
        "t.yaml:20:3: spec.index.type: missing required key 'type'",
        id="index-type-missing"),
    pytest.param(
        ("fields: [order_id]", "fields: [order_id]\n    autoGenerate: true"),
        "t.yaml:17:5: spec.recordKey.autoGenerate: autoGenerate: true cannot be combined with fields; use one or the other",
        id="auto-generate-with-fields"),
    pytest.param(
        ("  recordKey:\n    fields: [order_id]\n", "  recordKey: {}\n"),
        "t.yaml:15:3: spec.recordKey: give the record key fields, or autoGenerate: true",
        id="record-key-neither"),
    pytest.param(
        ("  recordKey:\n    fields: [order_id]\n", ""),
        "t.yaml:6:1: spec.recordKey: missing required key 'recordKey'",
        id="record-key-missing"),
    pytest.param(
        ("targetFileSize: 256MiB", "targetFileSize: 256 mebibytes"),
        "t.yaml:27:5: spec.clustering.targetFileSize: invalid size '256 mebibytes': unknown unit 'mebibytes'; write bytes "
        "as an integer or a number with a unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), e.g. 256MiB",
        id="size-does-not-parse"),
    pytest.param(
        ("targetFileSize: 256MiB", "targetFileSize: 256mib"),
        "t.yaml:27:5: spec.clustering.targetFileSize: invalid size '256mib': unknown unit 'mib'; units are "
        "case-sensitive; did you mean 'MiB'?",
        id="size-unit-case"),
    pytest.param(
        ("smallFileLimit: 100MiB", "smallFileLimit: 1GiB"),
        "t.yaml:28:5: spec.clustering.smallFileLimit: smallFileLimit (1073741824 bytes) must be smaller than "
        "targetFileSize (268435456 bytes)",
        id="small-file-limit-not-below-target"),
    pytest.param(
        ("    sortColumns: [customer_id]\n", ""),
        "t.yaml:24:3: spec.clustering.sortColumns: strategy SORT needs sortColumns",
        id="sort-without-columns"),
    pytest.param(
        ('type: "decimal(12,2)"', 'type: "decimal(40,2)"'),
        "t.yaml:11:22: spec.columns[2].type: decimal precision must be 1..38 in type 'decimal(40,2)' at offset 0",
        id="bad-column-type"),
    pytest.param(
        ("{name: updated_at, type: timestamp}", "{name: updated_at, type: timestmp}"),
        "t.yaml:12:26: spec.columns[3].type: unknown type 'timestmp' in type 'timestmp' at offset 0",
        id="unknown-column-type"),
    pytest.param(
        ("{name: address,", "{name: _hoodie_record_key,"),
        "t.yaml:14:8: spec.columns[5].name: column name '_hoodie_record_key' is reserved: names starting with "
        "'_hoodie_' are Hudi's metadata columns",
        id="reserved-column-name"),
    pytest.param(
        ("{name: address,", "{name: 'home address',"),
        "t.yaml:14:8: spec.columns[5].name: invalid name 'home address': use letters, digits and underscores, "
        "not starting with a digit",
        id="column-name-not-an-identifier"),
    pytest.param(
        ("  name: orders", "  name: 2orders"),
        "t.yaml:4:3: metadata.name: invalid name '2orders': use letters, digits and underscores, not starting with a digit",
        id="table-name-not-an-identifier"),
    pytest.param(
        ("location: sales/orders", "location: ../orders"),
        "t.yaml:7:3: spec.location: location must stay inside the warehouse root ('..' is not allowed), got '../orders'",
        id="location-dotdot"),
    pytest.param(
        ("location: sales/orders", "location: /data/sales/orders"),
        "t.yaml:7:3: spec.location: location must be relative to the warehouse root, got '/data/sales/orders'",
        id="location-absolute"),
    pytest.param(
        ("location: sales/orders", "location: s3://bucket/orders"),
        "t.yaml:7:3: spec.location: location must be relative to the warehouse root, got 's3://bucket/orders'",
        id="location-uri"),
    pytest.param(
        ("location: sales/orders", 'location: ""'),
        "t.yaml:7:3: spec.location: location must not be empty",
        id="location-empty"),
    pytest.param(
        ("  location: sales/orders\n", "  location: sales/orders\n  tableType: COPY_ON_WRTE\n"),
        "t.yaml:8:3: spec.tableType: expected one of COPY_ON_WRITE, MERGE_ON_READ, got the string 'COPY_ON_WRTE'; "
        "did you mean 'COPY_ON_WRITE'?",
        id="table-type-misspelt"),
    pytest.param(
        ("tablespec/v1", "tablespec/v2"),
        "t.yaml:1:1: apiVersion: expected tablespec/v1, got the string 'tablespec/v2'",
        id="api-version"),
    pytest.param(
        ("kind: HudiTable", "kind: IcebergTable"),
        "t.yaml:2:1: kind: expected HudiTable, got the string 'IcebergTable'",
        id="kind"),
    pytest.param(
        ("  columns:\n", "  columns: []\n  unused:\n"),
        "t.yaml:8:3: spec.columns: must not be empty",
        id="columns-empty"),
    pytest.param(
        ("  database: sales\n", "  database: sales\n  labels: {team: 7}\n"),
        "t.yaml:6:12: metadata.labels.team: expected a string, got the number 7",
        id="label-not-a-string"),
    pytest.param(
        ("  database: sales\n", "  database: sales\n  labels: {1: one}\n"),
        "t.yaml:6:12: metadata.labels[1]: keys must be strings, got the number 1",
        id="label-key-not-a-string"),
]


@pytest.mark.parametrize("replacement, expected", ERRORS)
def test_validation_rule_reports_line_and_path(broken, replacement, expected):
    assert expected in broken(replacement)


def test_bucket_settings_on_other_index_types_name_their_index(broken):
    assert broken(("type: BUCKET", "type: SIMPLE")) == [
        "t.yaml:22:5: spec.index.numBuckets: numBuckets is only valid when type is BUCKET",
        "t.yaml:23:5: spec.index.hashFields: hashFields is only valid when type is BUCKET",
    ]


def test_misspelt_bucket_setting_on_other_index_type(broken):
    assert broken(("type: BUCKET", "type: BLOOM"), ("numBuckets: 16", "num_buckets: 16"), ("hashFields", "hashfields")) == [
        "t.yaml:22:5: spec.index.num_buckets: unknown key 'num_buckets'; did you mean 'numBuckets'? "
        "(numBuckets is only valid when type is BUCKET)",
        "t.yaml:23:5: spec.index.hashfields: unknown key 'hashfields'; did you mean 'hashFields'? "
        "(hashFields is only valid when type is BUCKET)",
    ]


def test_record_level_settings_only_on_record_level_index(broken):
    out = broken(("    hashFields: [order_id]\n", "    recordLevel: {maxFilesPerBucket: 4}\n"))
    assert out == ["t.yaml:23:5: spec.index.recordLevel: recordLevel is only valid when type is RECORD_LEVEL"]


def test_bucket_index_refuses_auto_generated_keys(broken):
    out = broken(("fields: [order_id]", "autoGenerate: true"), ("    hashFields: [order_id]\n", ""))
    assert out == ["t.yaml:21:5: spec.index.type: a BUCKET index hashes record key fields, so it cannot be used "
                   "with recordKey.autoGenerate"]


def test_unknown_key_column_gets_hash_subset_error_too(broken):
    # A wrong record key field breaks two rules; both are reported.
    assert broken(("fields: [order_id]", "fields: [orderid]")) == [
        "t.yaml:16:14: spec.recordKey.fields[0]: record key field 'orderid' is not a column; did you mean 'order_id'?",
        "t.yaml:23:18: spec.index.hashFields[0]: hash field 'order_id' is not a record key field; "
        "Hudi hashes a subset of the record key (orderid)",
    ]


def test_field_errors_do_not_hide_cross_field_errors(broken):
    out = broken(
        ("targetFileSize: 256MiB", "targetFileSize: lots"),
        ("{name: address,", "{name: ORDER_ID,"),
        ("orderingField: updated_at", "orderingField: updated"),
        ('type: "decimal(12,2)"', 'type: "decimal(12,2"'),
    )
    assert [m.split(": ")[0] + ": " + m.split(": ")[1] for m in out] == [
        "t.yaml:11:22: spec.columns[2].type",
        "t.yaml:14:8: spec.columns[5].name",
        "t.yaml:19:3: spec.orderingField",
        "t.yaml:27:5: spec.clustering.targetFileSize",
    ]


def test_references_to_a_column_with_a_bad_type_are_not_reported(broken):
    # The column exists; only its type is wrong, so the partition field must not be called "not a column".
    assert broken(("{name: order_date, type: date}", "{name: order_date, type: dat}")) == [
        "t.yaml:13:26: spec.columns[4].type: unknown type 'dat' in type 'dat' at offset 0",
    ]


def test_missing_and_misspelt_top_level_keys(broken):
    assert broken(("metadata:", "metdata:")) == [
        "t.yaml:1:1: metadata: missing required key 'metadata'",
        "t.yaml:3:1: metdata: unknown key 'metdata'; did you mean 'metadata'?",
    ]


def test_document_that_is_not_a_mapping(messages):
    assert messages("- just\n- a list\n") == ["t.yaml:1:1: a spec document must be a mapping, got a list"]
    assert messages("---\njust a string\n") == [
        "t.yaml:1:1: a spec document must be a mapping, got the string 'just a string'"]


def test_body_that_is_not_a_mapping(messages):
    text = "apiVersion: tablespec/v1\nkind: HudiTable\nmetadata: {name: t}\nspec: 5\n"
    assert messages(text) == ["t.yaml:4:1: spec: expected a mapping, got the number 5"]


def test_yaml_syntax_error_is_located(messages):
    assert messages("apiVersion: tablespec/v1\nkind: [HudiTable\nmetadata: {}\n") == [
        "t.yaml:3:9: invalid YAML: expected ',' or ']', but got ':' (while parsing a flow sequence)"]


def test_duplicate_yaml_key_is_an_error(messages, valid_text, edit):
    text = edit(valid_text, ("  orderingField: updated_at\n", "  orderingField: updated_at\n  orderingField: order_id\n"))
    assert messages(text) == ['t.yaml:20:3: invalid YAML: found duplicate key "orderingField"']


WARNINGS = [
    pytest.param(
        ("nullable: false}", "nullable: true}"),
        "t.yaml:9:38: warning: spec.columns[0].nullable: record key column 'order_id' is nullable; "
        "Hudi refuses null keys at write time (declare it nullable: false)",
        id="record-key-explicitly-nullable"),
    pytest.param(
        (", nullable: false}", "}"),
        "t.yaml:9:7: warning: spec.columns[0].nullable: record key column 'order_id' is nullable; "
        "Hudi refuses null keys at write time (declare it nullable: false)",
        id="record-key-nullable-by-default"),
    pytest.param(
        ("strategy: SORT", "strategy: NONE"),
        "t.yaml:26:5: warning: spec.clustering.sortColumns: sortColumns is ignored when strategy is NONE",
        id="sort-columns-ignored"),
    pytest.param(
        ("strategy: SORT", "strategy: ZORDER"),
        "t.yaml:26:5: warning: spec.clustering.sortColumns: ZORDER on a single column orders like SORT; "
        "give at least two sortColumns",
        id="zorder-single-column"),
]


RECORD_LEVEL = ("    type: BUCKET\n    numBuckets: 16\n    hashFields: [order_id]\n", "    type: RECORD_LEVEL\n")


def test_secondary_indexes_are_version_9_copy_on_write_with_the_record_index(broken):
    """Secondary indexes (Hudi 1.x's CREATE INDEX) are accepted on a version 9 copy-on-write RECORD_LEVEL table,
    on a string or integer table column, each name once; refused at their line on version 6, on merge-on-read,
    on a missing or complex column, and on a primitive type whose keys tablespec cannot write (a date)."""
    section = ("  clustering:\n", "  tableVersion: 9\n  dataSkipping:\n    secondaryIndexes: [{name: by_customer, "
                                  "column: customer_id}, {name: by_id, column: order_id}]\n  clustering:\n")
    assert broken(section, RECORD_LEVEL) == []
    assert broken((section[0], section[1].replace("order_id}", "order_date}")), RECORD_LEVEL) == [
        "t.yaml:24:66: spec.dataSkipping.secondaryIndexes[1]: secondary index column 'order_date' has the type date: "
        "tablespec keeps secondary indexes on string and integer columns only (string, byte, short, int, long)"]
    assert broken((section[0], section[1].replace("9", "6")), RECORD_LEVEL) == [
        "t.yaml:24:5: spec.dataSkipping.secondaryIndexes: secondary indexes are Hudi 1.x's (CREATE INDEX): they need "
        "tableVersion: 9 (the spec says 6)"]
    assert broken(section, RECORD_LEVEL, ("  location: sales/orders\n", "  location: sales/orders\n  tableType: "
                                          "MERGE_ON_READ\n")) == [
        "t.yaml:25:5: spec.dataSkipping.secondaryIndexes: tablespec keeps secondary indexes on COPY_ON_WRITE tables "
        "only: not yet on MERGE_ON_READ (remove secondaryIndexes)"]
    out = broken((section[0], section[1].replace("order_id}", "nope}, {name: by_customer, column: address}")),
                 RECORD_LEVEL)
    assert [m.split(": ", 2)[1:] for m in out] == [
        ["spec.dataSkipping.secondaryIndexes[1]", "secondary index column 'nope' is not a column"],
        ["spec.dataSkipping.secondaryIndexes[2]", "secondary index column 'address' has the complex type "
                                                  "struct<city:string>; it must be a primitive type"],
        ["spec.dataSkipping.secondaryIndexes[2]", "secondary index name 'by_customer' is listed twice"]], out


@pytest.mark.parametrize("replacement, expected", WARNINGS)
def test_doubtful_settings_are_warnings(broken, replacement, expected):
    assert broken(replacement) == [expected]


def test_warnings_are_not_errors(valid_text, edit):
    from tablespec.spec.loader import load_spec_text

    result = load_spec_text(edit(valid_text, ("nullable: false}", "nullable: true}")), "t.yaml")
    assert result.errors == [] and len(result.warnings) == 1 and len(result.specs) == 1


def test_hilbert_with_two_columns_is_fine(broken):
    assert broken(("strategy: SORT", "strategy: HILBERT"), ("sortColumns: [customer_id]", "sortColumns: [customer_id, amount]")) == []


def test_data_skipping_section_refusals_name_their_line(broken):
    """What cannot hold (a secondary index without the record index, partition
    statistics without column statistics or on version 6, a column list on version 6 or naming no
    column) are refused at their place."""
    section = ("  clustering:\n", "  dataSkipping:\n    columnStats: {columns: [_hoodie_record_key, amount, nope]}\n"
               "    partitionStats: true\n    bloomFilters: true\n    secondaryIndexes: [{name: by_customer, column: customer_id}]\n"
               "  clustering:\n")
    out = broken(section)
    assert not any("bloomFilters" in m for m in out), out                 # bloom filters are kept
    assert any(m.startswith("t.yaml:28:5: spec.dataSkipping.secondaryIndexes: a secondary index needs Hudi's "
                            "record index: set index.type: RECORD_LEVEL (it is BUCKET)") for m in out), out
    assert broken(section, ("    bloomFilters: true\n", ""),
                  ("    secondaryIndexes: [{name: by_customer, column: customer_id}]\n", "")) == [
        "t.yaml:25:57: spec.dataSkipping.columnStats.columns[2]: column with statistics 'nope' is not a column"]
    out = broken(("  clustering:\n", "  tableVersion: 6\n  dataSkipping:\n    columnStats: {columns: [amount]}\n"
                  "    partitionStats: true\n  clustering:\n"))
    assert [m.split(": ", 2)[1] for m in out] == ["spec.dataSkipping.columnStats.columns", "spec.dataSkipping.partitionStats"]
    assert broken(("  clustering:\n", "  dataSkipping: {partitionStats: true}\n  clustering:\n")) == [
        "t.yaml:24:18: spec.dataSkipping.partitionStats: partition statistics are computed from column statistics: "
        "declare columnStats too"]

"""Timestamp partitioning in the spec language: valid forms, and every mistake located."""
from __future__ import annotations

import pytest

from tablespec.hudi import keygen
from tablespec.plan.settings import desired_properties
from tablespec.spec.loader import load_spec_text

PARTITIONING = "  partitioning:\n    fields: [order_date]\n"


def _timestamp(text: str, block: str) -> str:
    return text.replace(PARTITIONING, block)


def test_epoch_millis_on_a_long_column_maps_to_timestamp_based_generator(valid_text, messages):
    text = _timestamp(valid_text, "  partitioning:\n    fields: [customer_id]\n    hiveStyle: false\n"
                                  "    timestamp: {field: customer_id, input: epochMillis, outputFormat: yyyy/MM/dd}\n")
    assert messages(text) == []
    spec = load_spec_text(text, "t.yaml").specs[0].spec
    props = desired_properties(spec)
    assert props["hoodie.table.keygenerator.class"] == keygen.TIMESTAMP_BASED
    assert props[keygen.TYPE_KEY] == "EPOCHMILLISECONDS" and props[keygen.OUTPUT_FORMAT_KEY] == "yyyy/MM/dd"
    assert props[keygen.TIMEZONE_KEY] == "UTC" and keygen.CUSTOM_FIELDS_KEY not in props


def test_a_second_partition_field_maps_to_custom_generator(valid_text, messages):
    text = _timestamp(valid_text, "  partitioning:\n    fields: [customer_id, updated_at]\n"
                                  "    timestamp: {field: updated_at, input: timestamp, outputFormat: yyyy-MM-dd-HH,"
                                  " timeZone: Europe/Berlin}\n")
    assert messages(text) == []
    props = desired_properties(load_spec_text(text, "t.yaml").specs[0].spec)
    assert props["hoodie.table.keygenerator.class"] == keygen.CUSTOM
    assert props[keygen.CUSTOM_FIELDS_KEY] == "customer_id:SIMPLE,updated_at:TIMESTAMP"
    assert props[keygen.TYPE_KEY] == "SCALAR" and props[keygen.UNIT_KEY] == "MICROSECONDS"
    assert props["hoodie.table.partition.fields"] == "customer_id,updated_at"


@pytest.mark.parametrize("block, expected", [
    ("    timestamp: {field: order_id, input: dateString, inputFormat: yyyy-MM-dd, outputFormat: yyyy}\n",
     "t.yaml:19:17: spec.partitioning.timestamp.field: timestamp field 'order_id' is not one of the partition "
     "fields (order_date)"),
    ("    timestamp: {field: order_date, input: epochMillis, outputFormat: yyyy/MM}\n",
     "t.yaml:19:36: spec.partitioning.timestamp.input: input epochMillis reads int, long, float, double or string columns, "
     "but 'order_date' is date"),
    ("    timestamp: {field: order_date, input: date, outputFormat: yyyy/zzz}\n",
     "t.yaml:19:49: spec.partitioning.timestamp.outputFormat: 'zzz' in date format 'yyyy/zzz' is not supported; "
     "use Joda-Time letters y, Y, x, w, G, M, d, H, h, K, k, a, m, s, S, E, e, D, Z, separators and 'quoted text'"),
    ("    timestamp: {field: order_date, input: date, outputFormat: yyyy, timeZone: Mars/Base}\n",
     "t.yaml:19:69: spec.partitioning.timestamp.timeZone: unknown time zone 'Mars/Base'; use an IANA name such "
     "as UTC or Europe/Berlin"),
    ("    timestamp: {field: order_date, input: dateString, outputFormat: yyyy}\n",
     "t.yaml:19:5: spec.partitioning.timestamp.inputFormat: input dateString needs inputFormat"),
    ("    timestamp: {field: order_date, input: date, inputFormat: yyyy, outputFormat: yyyy}\n",
     "t.yaml:19:49: spec.partitioning.timestamp.inputFormat: inputFormat is for input dateString or mixed, not date"),
    ("    timestamp: {field: order_date, input: date, unit: DAYS, outputFormat: yyyy}\n",
     "t.yaml:19:49: spec.partitioning.timestamp.unit: unit is for input scalar, not date"),
    ("    timestamp: {field: order_date, input: date, outputFormat: yyyy, timeZone: UTC, outputTimeZone: UTC}\n",
     "t.yaml:19:69: spec.partitioning.timestamp.timeZone: timeZone sets both the input and the output zone (Hudi then "
     "ignores inputTimeZone and outputTimeZone): give one or the others"),
])
def test_mistakes_are_located(valid_text, messages, block, expected):
    msgs = messages(_timestamp(valid_text, PARTITIONING + block))
    assert expected in msgs, msgs


def test_slashes_in_a_custom_generator_segment_warn(valid_text, messages):
    text = _timestamp(valid_text, "  partitioning:\n    fields: [customer_id, updated_at]\n"
                                  "    timestamp: {field: updated_at, input: timestamp, outputFormat: yyyy/MM/dd}\n")
    (warning,) = messages(text)
    assert "warning" in warning.lower() and "Apache Hudi 0.15's Spark reader fails" in warning

"""Every hoodie.* key tablespec writes into hoodie.properties is one Apache Hudi 0.15 defines, with a
value Hudi accepts (its writers load table properties into their write config)."""
from __future__ import annotations

import pytest
from _support import ORDERS_SPEC
from interop_support import rejected_properties

from tablespec.actions.metadata import create_table
from tablespec.hudi.config import read_table_config
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.table import HudiTable
from tablespec.hudi_options import VERSION_PINS, hudi_write_options
from tablespec.spec.loader import load_spec_text

INDEXES = {"SIMPLE": "{type: SIMPLE}", "BLOOM": "{type: BLOOM}", "RECORD_LEVEL": "{type: RECORD_LEVEL}",
           "BUCKET": "{type: BUCKET, numBuckets: 4, partitionBuckets: [{pattern: '2026-.*', numBuckets: 8}]}"}
# every other hoodie.* setting of the registry spelled out, labels too
EVERYTHING = """  retention: {keepCommits: 3}
  clustering: {strategy: SORT, sortColumns: [customer_id], partitionFilter: '2026-.*', latestPartitions: 2}
"""


@pytest.mark.parametrize("index", list(INDEXES))
def test_hudi_accepts_every_hoodie_property_tablespec_writes(hudi, tmp_path, index):
    text = ORDERS_SPEC.replace("{type: BUCKET, numBuckets: 16}", INDEXES[index]) + EVERYTHING
    spec = load_spec_text(text, "t.yaml").specs[0].spec
    create_table(HudiTable.open(str(tmp_path / "t")), spec)
    props = read_table_config(LocalStorage(), str(tmp_path / "t")).to_properties()
    assert len([k for k in props if k.startswith("hoodie.")]) >= 20
    assert rejected_properties(hudi, props) == {}


def test_the_old_record_level_layout_is_what_hudi_rejects(hudi):
    """The check above can fail: RECORD_LEVEL under hoodie.index.type, as tablespec once wrote it."""
    rejected = rejected_properties(hudi, {"hoodie.table.name": "t", "hoodie.index.type": "RECORD_LEVEL"})
    assert list(rejected) == ["hoodie.index.type"] and "RECORD_LEVEL" in rejected["hoodie.index.type"]


WRITERS = {"SIMPLE": "{type: SIMPLE}", "RECORD_LEVEL": "{type: RECORD_LEVEL}",
           "BUCKET": "{type: BUCKET, numBuckets: 4}"}


@pytest.mark.parametrize("index, auto_keys", [("SIMPLE", False), ("RECORD_LEVEL", False), ("BUCKET", False),
                                              ("SIMPLE", True)])
def test_hudi_defines_every_writer_option(hudi, tmp_path, index, auto_keys):
    """A misspelt key would be ignored by Hudi without a word: every `hudi-options` key but the
    Hudi 1.x version pins is one Hudi 0.15 defines, with a value it accepts."""
    text = ORDERS_SPEC.replace("{type: BUCKET, numBuckets: 16}", WRITERS[index])
    if auto_keys:
        text = text.replace("{fields: [order_id]}", "{autoGenerate: true}")
    options = hudi_write_options(load_spec_text(text, "t.yaml").specs[0].spec, HudiTable.open(str(tmp_path / "t")))
    assert rejected_properties(hudi, {k: v for k, v in options.items() if k not in VERSION_PINS}) == {}

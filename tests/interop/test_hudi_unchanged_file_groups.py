"""Apache Hudi beside writes that leave file groups as they are: it reads what tablespec and
hudi-rs read, and its own merge of the same rows (DefaultHoodieRecordPayload, as `hudi-options`
configures it) gives the same content while rewriting every file group the rows reach."""
from __future__ import annotations

import shutil

import pytest
from interop_support import assert_readers_agree, hudi_write
from test_engine_unchanged_file_groups import STORED, orders, slices_per_group, write_stored

from tablespec.hudi.table import HudiTable
from tablespec.hudi_options import hudi_write_options
from tablespec.table import Table


def content(table, first: str) -> list[tuple]:
    """Each row's data and commit, with any commit after `first` shown as "later"."""
    return sorted((r.order_id, str(r.amount), r.updated_at, r.order_date,
                   r._hoodie_commit_time if r._hoodie_commit_time == first else "later",
                   r._hoodie_commit_seqno if r._hoodie_commit_time == first else "later")
                  for r in table.read().collect())


@pytest.mark.parametrize("index", ["SIMPLE", "BLOOM", "BUCKET"])
def test_apache_hudi_agrees_with_a_write_that_rewrites_only_changed_file_groups(hudi, tmp_path, index):
    ours = write_stored(hudi, tmp_path / "ours", index)
    first = ours.read().first()._hoodie_commit_time
    theirs = Table(ours.spec, str(tmp_path / "theirs"), hudi)
    shutil.copytree(ours.location, theirs.location)
    groups = slices_per_group(ours)

    stale = [(k, 1, d) for k, _, d in STORED]
    assert ours.write(orders(hudi, stale), "upsert").unchanged
    batch = [("o02", 6, 1)] + [r for r in stale if r[0] != "o02"]
    result = ours.write(orders(hudi, batch), "upsert")
    assert (result.updated, result.ignored, len(result.files)) == (1, 11, 1)
    assert sum(slices_per_group(ours).values()) == sum(groups.values()) + 1
    assert_readers_agree(hudi, ours)

    options = {**hudi_write_options(theirs.spec, HudiTable.open(theirs.location)), "hoodie.datasource.write.operation": "upsert"}
    hudi_write(orders(hudi, stale), theirs.location, options)
    hudi_write(orders(hudi, batch), theirs.location, options)
    assert sum(slices_per_group(theirs).values()) > sum(groups.values()) + 1   # Hudi rewrote untouched groups
    assert content(theirs, first) == content(ours, first)

"""After the commit point a write stands: when compacting Hudi's metadata table fails after the
data instant completed, the write still reports its commit, nothing is rolled back, and the next
write or apply compacts (here: the metadata table's base file is damaged, so compaction cannot read it)."""
from __future__ import annotations

import glob
import os

import pytest
from _support import ORDERS_SPEC
from helpers import make_table
from test_engine_archive import batch

from tablespec.errors import HudiFormatError
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.timeline.active import Timeline

pytestmark = pytest.mark.spark
PLAIN = ORDERS_SPEC.replace("index: {type: BUCKET, numBuckets: 16}", "index: {type: SIMPLE}")


def test_a_failed_metadata_compaction_after_completion_leaves_the_write_committed(spark, tmp_path, capfd):
    table = make_table(spark, tmp_path, PLAIN)
    (base_file,) = glob.glob(os.path.join(table.location, ".hoodie", "metadata", "files", "*.hfile"))
    with open(base_file, "r+b") as f:                     # damage the data block: compaction reads it
        f.seek(40)
        f.write(b"\xff" * 64)
    written, err = [], ""
    for n in range(12):                                   # until compaction becomes due (10 deltacommits)
        written.append(table.write(batch(spark, n), "upsert").instant)
        err = capfd.readouterr().err
        if err:
            break
    assert "compacting Hudi's metadata table after " + written[-1] in err and "the next write or apply" in err
    assert "rolling back" not in err
    completed = [i.timestamp for i in Timeline.load(LocalStorage(), table.location).commits()]
    assert None not in written and set(written) <= set(completed)
    assert table.read().count() == len(written)          # o000 .. o00n (o000 also updated by each): every write kept
    with pytest.raises(HudiFormatError, match=r"metadata/files/.*\.hfile: .*corrupt"):
        table.write(batch(spark, 99), "upsert")           # the next lock holder finishes the compaction: it cannot
    assert [i.timestamp for i in Timeline.load(LocalStorage(), table.location).commits()] == completed

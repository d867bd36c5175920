"""What the record index build's executors report is checked before the driver commits it (no JVM: the
check is the driver's, on the (file group, base file, bytes, entries) rows the tasks return)."""
from __future__ import annotations

import re

import pytest

from tablespec.engine.record_index import checked_written
from tablespec.errors import TablespecError

WRITTEN = [(0, "record-index-0000-0_0-0-0_20260101000000000.hfile", 900, 3),
           (2, "record-index-0002-0_0-0-0_20260101000000000.hfile", 800, 2)]


def test_file_groups_holding_every_counted_key_once_are_committed():
    assert checked_written("/t", WRITTEN, 5) == WRITTEN     # a file group without keys is not written


@pytest.mark.parametrize("written, rows, said", [
    (WRITTEN[:1], 5, "wrote 3 entries in 1 file group(s), but the table has 5 keys"),             # a lost task
    (WRITTEN + WRITTEN[1:], 7, "file group(s) 2 more than once, but the table has 7 keys"),       # a repeated one
    (WRITTEN, 6, "wrote 5 entries in 2 file group(s), but the table has 6 keys")])
def test_a_lost_or_repeated_file_group_is_refused_before_the_commit(written, rows, said):
    with pytest.raises(TablespecError, match=re.escape(said)) as refused:
        checked_written("/t", written, rows)
    assert str(refused.value).startswith("/t: ") and "\n" not in str(refused.value)

"""The secondary index's keys and file groups as Hudi 1.2.0 lays them out (measured on a table it wrote
with `CREATE INDEX idx_v ON t (v)` over v = 1, 2, 3, 3 and then 5: keys `1$a`, `2$b`, `3$c`, `3$d`, `5$a` in
file groups 5, 6, 7, 7, 9 of 10), and the escaping of its key parts."""
from __future__ import annotations

import pytest

from tablespec.hudi.mdt import secondary_index


@pytest.mark.parametrize("key, group", [("1$a", 5), ("2$b", 6), ("3$c", 7), ("3$d", 7), ("5$a", 9)])
def test_a_key_lives_in_the_file_group_of_its_value(key, group):
    assert secondary_index.file_group(key, 10) == group
    assert secondary_index.file_id("idx_v", group) == f"secondary-index-idx-v-{group:04d}-0"


def test_key_parts_are_escaped_and_a_null_value_is_nul():
    assert secondary_index.index_key("part\\one", "key$two") == "part\\\\one$key\\$two"
    assert secondary_index.index_key(None, "k") == "\0$k"
    assert secondary_index.index_key("a\0", "k") == "a\\\0$k"
    # the value part (up to the first unescaped `$`) picks the file group, whatever the record key
    assert secondary_index.file_group("x\\$y$k1", 10) == secondary_index.file_group("x\\$y$other", 10)

"""Housekeeping after tablespec's deltacommits (version 6, BUCKET index, a table Apache Hudi 0.15
created): with `compaction.runBy: tablespec` and a trigger of 2 deltacommits, the write that makes
the second deltacommit since the last compaction compacts right after it (as clean and archiving
run after actions), and says so in its WriteResult; the next write does not; Hudi reads the same
rows after each, validates its metadata table, and writes on. With `runBy: hudi` no write compacts."""
from __future__ import annotations

from helpers import tablespec_rows
from interop_support import hudi_rows, hudi_write
from test_hudi_merge_on_read import HISTORY, _options, _record_index, _values
from test_hudi_merge_on_read_writes import _agree
from test_hudi_metadata_table import hudi_validates
from test_hudi_tables import SCHEMA, _import, _table

from tablespec.hudi.table import HudiTable

P1, P2 = "2024-01-01", "2024-01-02"


def _housekept(hudi, tmp_path, capsys, run_by: str, delta_commits: int = 2, name: str = ""):
    location = tmp_path / (name or f"mor_{run_by}")
    hudi_write(hudi.createDataFrame(HISTORY[0][1], SCHEMA), str(location), _options(location.name, "bucket", "upsert"))
    _record_index(location, "bucket")
    doc, _ = _import(tmp_path, location, capsys)
    doc["spec"]["compaction"] = {"runBy": run_by, "deltaCommits": delta_commits, "strategy": "UNBOUNDED"}
    return location, _table(hudi, doc, location)


def test_a_write_compacts_when_the_specs_trigger_is_due(hudi, tmp_path, capsys):
    location, table = _housekept(hudi, tmp_path, capsys, "tablespec")
    df = lambda data: hudi.createDataFrame(data, SCHEMA)   # noqa: E731

    first = table.write(df([("a", 10, P1, 5), ("c", 30, P2, 5)]))   # Hudi's deltacommit and this one: 2
    assert first.compaction is not None and first.compaction.instant > first.instant, str(first)
    assert first.compaction.scheduled == first.compaction.instant and first.compaction.file_slices >= 1
    assert f"compacted {first.compaction.file_slices} file slice" in str(first)
    timeline = HudiTable.open(str(location)).timeline
    assert (timeline.head.action, timeline.head.timestamp) == ("commit", first.compaction.instant)
    assert timeline.commit_metadata(timeline.head).operation_type == "COMPACT"
    assert not [s for s in HudiTable.open(str(location)).view.latest_slices() if s.log_files]
    _agree(hudi, table, location)

    second = table.write(df([("b", 20, P1, 6)]))   # 1 deltacommit since the compaction: not due
    assert second.compaction is None and "compacted" not in str(second)
    assert [s for s in HudiTable.open(str(location)).view.latest_slices() if s.log_files]
    _agree(hudi, table, location)

    third = table.write(df([("a", 11, P1, 7)]))
    assert third.compaction is not None and third.compaction.instant > third.instant, str(third)
    assert _values(_agree(hudi, table, location)) == {"a": 11, "b": 20, "c": 30, "d": 4}
    hudi_validates(hudi, str(location))   # the metadata table lists the compactions' base files
    hudi_write(df([("d", 44, P2, 8)]), str(location), _options(location.name, "bucket", "upsert"))
    assert tablespec_rows(table) == hudi_rows(hudi, str(location))
    assert _values(tablespec_rows(table)) == {"a": 11, "b": 20, "c": 30, "d": 44}


def test_a_write_leaves_compaction_to_hudi_when_the_spec_says_so(hudi, tmp_path, capsys):
    location, table = _housekept(hudi, tmp_path, capsys, "hudi")
    for n in range(2):
        result = table.write(hudi.createDataFrame([("a", 10 + n, P1, 5 + n)], SCHEMA))
        assert result.compaction is None, str(result)
    assert [i.action for i in HudiTable.open(str(location)).timeline.instants] == ["deltacommit"] * 3


def test_a_compaction_that_fails_after_a_write_leaves_the_write_committed(hudi, tmp_path, capsys):
    """The deltacommit completes before its housekeeping compacts: a compaction that fails (here a
    base file of another partition's slice that no longer decodes) is reported in the WriteResult,
    not raised (a caller retrying an insert would write its rows twice), and stays pending."""
    location, table = _housekept(hudi, tmp_path, capsys, "tablespec", delta_commits=3, name="mor_failing")
    df = lambda data: hudi.createDataFrame(data, SCHEMA)   # noqa: E731
    assert table.write(df([("c", 30, P2, 5)])).compaction is None      # 2 deltacommits: not due yet
    [broken] = [s.base_file.path for s in HudiTable.open(str(location)).view.latest_slices()
                if s.partition.endswith(P2) and s.log_files]
    stored = open(broken, "rb").read()
    open(broken, "wb").write(b"\0" * len(stored))    # same size: nothing but the decoding notices

    result = table.write(df([("a", 11, P1, 6)]))     # the 3rd: compaction due, and it fails on P2's slice
    assert result.compaction is None and result.compaction_failed, str(result)
    assert "the compaction after it did not complete" in str(result) and "`tablespec apply` runs it" in str(result)
    timeline = HudiTable.open(str(location)).timeline
    assert result.instant in {i.timestamp for i in timeline.completed() if i.action == "deltacommit"}
    assert [i.action for i in timeline.pending()] == ["compaction"]
    open(broken, "wb").write(stored)
    assert _values(tablespec_rows(table))["a"] == 11 and tablespec_rows(table) == hudi_rows(hudi, str(location))

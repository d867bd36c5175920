"""Incremental reads of version 8/9 tables: Apache Hudi 1.x (`hoodie.datasource.query.type=incremental`),
hudi-rs and tablespec's `Table.read_incremental` return the same records for the same range.

Hudi 1.x reads a version 8/9 timeline by completion time: `begin.instanttime` and `end.instanttime`
are completion times, begin excluded and end included (version 6: requested times). Each range below
starts at a commit's requested time (before its completion: the commit is in) or at its completion
time (the commit is out), so a reader that took version 6's rules would return other rows. hudi-rs
(0.5) reads version 8/9 ranges by completion time too, and agrees."""
from __future__ import annotations

import pyarrow as pa
from helpers import hudi_rs_table, rows
from hudi_process import read_step
from test_hudi_1x_versions import _planned, hudi_1x_table  # noqa: F401 (a fixture)
from test_hudi_1x_writes import V9_NO_MDT
from test_hudi_tables import SCHEMA, _import, _table

from tablespec.engine.reader import incremental_commits, to_arrow
from tablespec.hudi.clean import earliest_readable_instant
from tablespec.hudi.table import HudiTable

BEGIN, END = "hoodie.datasource.read.begin.instanttime", "hoodie.datasource.read.end.instanttime"


def _ranges(location) -> list[tuple[str, str | None]]:
    """(begin, end) ranges over the readable commits: from each commit's requested time to the
    next one's completion, from each completion time on, and one from the requested time of the
    last commit before a range (none of a later commit's rows)."""
    timeline = HudiTable.open(str(location)).timeline
    earliest = earliest_readable_instant(timeline)
    commits = [i for i in timeline.commits() if earliest is None or i.timestamp >= earliest]
    assert len(commits) >= 3, commits
    out: list[tuple[str, str | None]] = []
    for a, b in zip(commits, commits[1:]):
        out += [(a.timestamp, b.completed_at), (a.completed_at, None)]
    out.append((commits[-1].completed_at, commits[-1].completed_at))
    return out


def _incremental(begin: str, end: str | None) -> dict:
    return {"hoodie.datasource.query.type": "incremental", BEGIN: begin, **({END: end} if end else {})}


def _hudi_rs_incremental(location, begin: str, end: str | None) -> list[tuple]:
    import hudi
    options = hudi.HudiReadOptions().with_query_type(hudi.HudiQueryType.Incremental).with_start_timestamp(begin)
    if end:
        options = options.with_end_timestamp(end)
    batches = hudi_rs_table(str(location)).read(options)
    return rows(pa.Table.from_batches(batches)) if batches else []


def _brief(read) -> list:
    return sorted((dict(r)["id"], dict(r)["_hoodie_commit_time"]) for r in read or [])


def _assert_agree(table, location, process, ranges) -> None:
    theirs = process.run([read_step(location, **_incremental(b, e)) for b, e in ranges])
    timeline = HudiTable.open(str(location)).timeline
    read_any = False
    for (begin, end), read in zip(ranges, theirs):
        ours = rows(to_arrow(table.read_incremental(begin, end)))
        assert ours == (rows(pa.Table.from_pylist(read)) if read else []), (begin, end, _brief(ours), _brief(read))
        assert ours == _hudi_rs_incremental(location, begin, end), (begin, end, "hudi-rs")
        commits = incremental_commits(timeline, begin, end)
        assert {dict(r)["_hoodie_commit_time"] for r in ours} <= {i.timestamp for i in commits}
        read_any = read_any or bool(ours)
    assert read_any and not incremental_commits(timeline, *ranges[-1])   # (c, c]: nothing


def test_incremental_reads_of_a_version_9_table_tablespec_wrote(hudi, hudi1, tmp_path, capsys):
    location, _ = hudi1.copy(V9_NO_MDT, tmp_path / "w9")
    doc, _ = _import(tmp_path, location, capsys)
    table = _table(hudi, doc, location)
    table.write(hudi.createDataFrame([("a", 11, "2024-01-01", 3), ("e", 5, "2024-01-02", 3)], SCHEMA))
    table.write(hudi.createDataFrame([("c", 3, "2024-01-02", 4)], SCHEMA), "delete")
    table.write(hudi.createDataFrame([("f", 6, "2024-01-03", 5), ("e", 50, "2024-01-02", 5)], SCHEMA), "upsert")
    ranges = _ranges(location)
    _assert_agree(table, location, hudi1.process, ranges)


def test_incremental_reads_of_tables_hudi_1x_wrote(hudi, hudi_1x_table, tmp_path, capsys):  # noqa: F811
    """Hudi 1.0.2 (version 8) and 1.2.0 (version 9) tables with upserts, a delete, clustering and
    cleans: every range over the commits the cleaner kept reads as that Hudi reads it."""
    location, _, version, process = hudi_1x_table
    doc, _ = _import(tmp_path, location, capsys, _planned(version))
    table = _table(hudi, doc, location)
    _assert_agree(table, location, process, _ranges(location))

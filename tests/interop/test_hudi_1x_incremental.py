"""Incremental reads of version 8/9 tables: Apache Hudi 1.x (`hoodie.datasource.query.type=incremental`),
hudi-rs and tablespec's `Table.read_incremental` return the same records for the same range.

Hudi 1.x reads a version 8/9 timeline by completion time: `begin.instanttime` and `end.instanttime`
are completion times, begin excluded and end included (version 6: requested times; Hudi 1.0.x
included begin, 1.1+ does not). Each range below
starts at a commit's requested time (before its completion: the commit is in) or at its completion
time (the commit is out), so a reader that took version 6's rules would return other rows. hudi-rs
(0.5) reads version 8/9 ranges by completion time too, and agrees."""
from __future__ import annotations

import pyarrow as pa
import pytest
from helpers import hudi_rs_table, rows
from hudi_process import read_step, write_step
from interop_support import cli, hudi_rows, hudi_write
from test_hudi_1x_versions import SMALL_HISTORY, hudi_1x_table  # noqa: F401 (a fixture)
from test_hudi_1x_writes import V9_NO_MDT
from test_hudi_tables import KEYED, SCHEMA, _import, _table

from tablespec.engine.reader import incremental_commits, to_arrow
from tablespec.hudi.services.clean import earliest_readable_instant
from tablespec.hudi.table import HudiTable, Location
from tablespec.importer import spec_document
from tablespec.state import observe

# More upserts into a table Hudi 1.x wrote, every one kept by the cleaner and the archiver.
LONGER_HISTORY = {"hoodie.keep.min.commits": "20", "hoodie.keep.max.commits": "30", "hoodie.clean.commits.retained": "10",
                  "hoodie.cleaner.commits.retained": "10"}
MORE = [[("a", 1000, "2024-01-01", 9), ("i", 9, "2024-01-03", 9)], [("c", 300, "2024-01-02", 9)],
        [("j", 10, "2024-01-01", 10), ("e", 50, "2024-01-03", 10)]]
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


def _just_before(instant_time: str) -> str:
    return str(int(instant_time) - 1).zfill(len(instant_time))


def _assert_agree(table, location, process, ranges, begin_included: bool = False) -> None:
    """`process`'s Hudi, hudi-rs and tablespec read each range alike. `begin_included`: that Hudi
    (1.0.x) reads from `begin` on, as tablespec does from just before it."""
    theirs = process.run([read_step(location, **_incremental(b, e)) for b, e in ranges])
    timeline = HudiTable.open(str(location)).timeline
    read_any = False
    for (begin, end), read in zip(ranges, theirs):
        ours = rows(to_arrow(table.read_incremental(begin, end)))
        assert ours == _hudi_rs_incremental(location, begin, end), (begin, end, "hudi-rs")
        if begin_included:
            begin = _just_before(begin)
            ours = rows(to_arrow(table.read_incremental(begin, end)))
        assert ours == (rows(pa.Table.from_pylist(read)) if read else []), (begin, end, _brief(ours), _brief(read))
        commits = incremental_commits(timeline, begin, end)
        assert {dict(r)["_hoodie_commit_time"] for r in ours} <= {i.timestamp for i in commits}
        read_any = read_any or bool(ours)
    assert read_any and not incremental_commits(timeline, *ranges[-1])   # (c, c]: nothing


def test_incremental_reads_of_a_version_9_table_tablespec_wrote(hudi, hudi1, tmp_path, capsys):
    location, _ = hudi1.copy(V9_NO_MDT, tmp_path / "w9")
    doc, _ = _import(tmp_path, location, capsys, ("build_metadata_table",))   # Hudi wrote it without one
    table = _table(hudi, doc, location)
    table.write(hudi.createDataFrame([("a", 11, "2024-01-01", 3), ("e", 5, "2024-01-02", 3)], SCHEMA))
    table.write(hudi.createDataFrame([("c", 3, "2024-01-02", 4)], SCHEMA), "delete")
    table.write(hudi.createDataFrame([("f", 6, "2024-01-03", 5), ("e", 50, "2024-01-02", 5)], SCHEMA), "upsert")
    ranges = _ranges(location)
    _assert_agree(table, location, hudi1.process, ranges)


def test_incremental_reads_of_tables_hudi_1x_wrote(hudi, hudi_1x_table, tmp_path, capsys, request):  # noqa: F811
    """Hudi 1.0.2 (version 8) and 1.2.0 (version 9) tables with upserts, a delete, clustering and
    cleans, and then three more upserts (inline clustering on) the cleaner keeps: every range over
    the readable commits reads as that Hudi reads it. Hudi 1.0.2 reads `begin` itself in (a commit
    that completed at `begin` is in; measured), Hudi 1.1+ does not: tablespec follows 1.2, which
    reads version 8 tables that way too."""
    location, _, version, process = hudi_1x_table
    # (metadata table off: Hudi 1.2.0 fails updating its column_stats partition on these upserts, an
    # ArrayIndexOutOfBoundsException in HoodieMetadataPayload; off, its writer drops the metadata table)
    options = {"hoodie.table.name": f"orders_v{version}", **KEYED, **SMALL_HISTORY, **LONGER_HISTORY,
               "hoodie.datasource.write.operation": "upsert", "hoodie.metadata.enable": "false"}
    process.run([write_step(location, options, SCHEMA, batch) for batch in MORE])
    doc, _ = _import(tmp_path, location, capsys, ("build_metadata_table",) if version == 9 else ())
    table = _table(hudi, doc, location)
    ranges = _ranges(location)
    _assert_agree(table, location, process, ranges, begin_included=version == 8)
    if version == 8:   # Hudi 1.2.0 reads the version 8 table by tablespec's rule
        _assert_agree(table, location, request.getfixturevalue("hudi1").process, ranges)


# A merge-on-read history with every replacecommit Hudi writes and a compaction pending across
# deltacommits: d0 inserts; d1 updates (log files); d2 and inline clustering (a replacecommit
# rewriting the slices, commit times kept); d3 an update on the clustered file group; an
# insert_overwrite of one partition (a replacecommit with new rows); d4 with a compaction scheduled;
# d5 while it is pending; d6 and the compaction run; d7 on the compacted slices.
MOR_SIMPLE = {**KEYED, "hoodie.datasource.write.table.type": "MERGE_ON_READ", "hoodie.index.type": "SIMPLE",
              "hoodie.compact.inline": "false", "hoodie.upsert.shuffle.parallelism": "1",
              "hoodie.insert.shuffle.parallelism": "1", "hoodie.metadata.enable": "false"}
CLUSTER = {"hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "1"}
SCHEDULE = {"hoodie.compact.schedule.inline": "true", "hoodie.compact.inline.max.delta.commits": "1"}
COMPACT = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "1"}
REPLACED = [
    ("upsert", {}, [("a", 1, "2024-01-01", 1), ("b", 2, "2024-01-01", 1), ("c", 3, "2024-01-02", 1)]),
    ("upsert", {}, [("a", 10, "2024-01-01", 2), ("c", 30, "2024-01-02", 2), ("d", 4, "2024-01-02", 2)]),
    ("upsert", CLUSTER, [("b", 20, "2024-01-01", 3)]),
    ("upsert", {}, [("a", 100, "2024-01-01", 4)]),
    ("insert_overwrite", {}, [("e", 5, "2024-01-02", 5)]),
    ("upsert", SCHEDULE, [("e", 50, "2024-01-02", 6), ("a", 1000, "2024-01-01", 6)]),
    ("upsert", {}, [("b", 200, "2024-01-01", 7), ("f", 6, "2024-01-02", 7)]),
    ("upsert", COMPACT, [("f", 60, "2024-01-02", 8)]),
    ("upsert", {}, [("a", 7, "2024-01-01", 9)]),
]


def _replaced_options(name: str, operation: str, extra: dict) -> dict[str, str]:
    return {"hoodie.table.name": name, **MOR_SIMPLE, **extra, "hoodie.datasource.write.operation": operation}


def _spanning_ranges(location) -> list[tuple[str, str | None]]:
    """Ranges over the requested and completion times of the completed instants, each spanning three
    of those times (so every time begins one range, ends another and lies inside two: every
    replacecommit and compaction is inside some ranges and at either end of others), and the whole
    timeline."""
    timeline = HudiTable.open(str(location)).timeline
    points = sorted({"0", *(i.timestamp for i in timeline.completed()), *(i.completed_at for i in timeline.completed())})
    return [(b, e) for n, b in enumerate(points) for e in points[n + 3:n + 4]] + [("0", None)]


def _write_replaced(hudi, location, version: int, process) -> None:
    """REPLACED written by Hudi 0.15 (6, in the session) or `process`'s Hudi 1.0.2 / 1.2 (8 / 9)."""
    if version == 6:
        for operation, extra, data in REPLACED:
            hudi_write(hudi.createDataFrame(data, SCHEMA), str(location), _replaced_options(location.name, operation, extra))
    else:
        process.run([write_step(location, _replaced_options(location.name, operation, extra), SCHEMA, data)
                     for operation, extra, data in REPLACED])


@pytest.mark.parametrize("version", [6, 8, 9])
def test_incremental_reads_of_merge_on_read_tables_across_replacecommits_and_compactions(hudi, tmp_path, capsys,
                                                                                         request, version):
    """REPLACED on each version: every range read as that Hudi reads it (version 8: Hudi 1.0.2, which
    reads `begin` itself in). Clustering's rewritten rows keep their commit times, so a range with
    the clustering but not their commit returns none of them; an insert_overwrite's rows are returned,
    the partition it replaced is not. Versions 8/9: a range with the deltacommits either side of a
    compaction requested inside it but completed after it returns both deltacommits' rows (the
    compaction's base file is not the range's, the log files before it are)."""
    location = tmp_path / f"mor_replaced_{version}"
    process = None if version == 6 else request.getfixturevalue("hudi1" if version == 9 else "hudi10").process
    _write_replaced(hudi, location, version, process)
    timeline = HudiTable.open(str(location)).timeline
    assert [i.action for i in timeline.completed()].count("replacecommit") == 2
    code, _, err = cli(capsys, "import", str(location), "--warehouse", str(tmp_path))
    assert code == 0, err
    table = _table(hudi, spec_document(observe(HudiTable.open(str(location))), Location.parse(str(tmp_path))), location)
    ranges = _spanning_ranges(location)
    if version == 6:
        theirs = [hudi_rows(hudi, str(location), **_incremental(b, e)) for b, e in ranges]
    else:
        reads = process.run([read_step(location, **_incremental(b, e)) for b, e in ranges])
        theirs = [rows(pa.Table.from_pylist(read)) if read else [] for read in reads]
    for (begin, end), read in zip(ranges, theirs):
        ours = rows(to_arrow(table.read_incremental(_just_before(begin) if version == 8 and begin != "0" else begin, end)))
        assert ours == read, (begin, end, _brief(ours), _brief(read))
    if version != 6:   # d4, then compaction c requested; d5 completed while it was pending, c after d5
        d4, c, d5 = [i for i in timeline.completed() if i.action != "replacecommit"][4:7]
        assert c.action == "commit" and d4.completed_at < c.timestamp < d5.completed_at < c.completed_at, (d4, c, d5)
        both = rows(to_arrow(table.read_incremental(d4.timestamp, d5.completed_at)))
        assert _brief(both) == [("a", d4.timestamp), ("b", d5.timestamp), ("e", d4.timestamp), ("f", d5.timestamp)]

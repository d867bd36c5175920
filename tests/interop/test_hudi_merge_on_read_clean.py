"""tablespec cleans merge-on-read tables as Apache Hudi 0.15 does (KEEP_LATEST_COMMITS, table
version 6): one table Hudi wrote (BUCKET index: deltacommits into log files, two compactions, a
third compaction scheduled and deltacommits named by it while it is pending), copied, cleaned by
Hudi's `run_clean` on one copy and by `tablespec apply` with the same keepCommits on the other:
both delete exactly the same base and log files, deltacommits counting as commits, the slice under
the pending compaction kept. After tablespec's clean Hudi reads the same rows, validates its
metadata table, and compacts and writes on. The same with Apache Hudi 1.2 on table version 9."""
from __future__ import annotations

import shutil

from helpers import tablespec_rows
from hudi_process import sql_step, write_step
from interop_support import hudi_rows, hudi_write
from test_hudi_clean_agrees import _cleans, _files, _hudi_clean, same_clean
from test_hudi_merge_on_read import COMPACT, SCHEDULE, _options, _record_index, _table, _values
from test_hudi_metadata_table import hudi_validates
from test_hudi_tables import SCHEMA

from tablespec.hudi.table import HudiTable, Location
from tablespec.importer import spec_document
from tablespec.state import observe

P1, P2 = "2024-01-01", "2024-01-02"
NO_CLEAN = {"hoodie.clean.automatic": "false"}
# (extra options, rows): deltacommits, a compaction after the 3rd and the 6th, one scheduled after the
# 8th, which the 9th's log files are named by (version 6)
HISTORY = [({}, [("a", 1, P1, 1), ("b", 2, P1, 1), ("c", 3, P2, 1), ("d", 4, P2, 1)]),
           ({}, [("a", 10, P1, 2), ("c", 30, P2, 2)]),
           (COMPACT, [("b", 20, P1, 3)]),
           ({}, [("a", 11, P1, 4)]),
           ({}, [("c", 31, P2, 5), ("d", 41, P2, 5)]),
           (COMPACT, [("e", 5, P1, 6)]),
           ({}, [("a", 12, P1, 7)]),
           (SCHEDULE, [("b", 21, P1, 8)]),
           ({}, [("a", 13, P1, 9), ("c", 32, P2, 9)])]


def _written(hudi, location) -> list[str]:
    for extra, data in HISTORY:
        hudi_write(hudi.createDataFrame(data, SCHEMA), str(location),
                   {**_options(location.name, "bucket", "upsert"), **NO_CLEAN, **extra})
    _record_index(location, "bucket")
    timeline = HudiTable.open(str(location)).timeline
    assert [i.action for i in timeline.commits()] == ["deltacommit"] * 3 + ["commit"] + ["deltacommit"] * 3 + \
        ["commit"] + ["deltacommit"] * 3
    [pending] = timeline.pending()
    assert pending.action == "compaction"
    return [i.timestamp for i in timeline.commits()]


def test_tablespec_and_hudi_clean_the_same_merge_on_read_files(hudi, tmp_path, capsys):
    source = tmp_path / "source" / "mor_cleaned"
    commits = _written(hudi, source)
    written = _files(source)
    assert any(".log." in f for f in written)
    # the pending compaction holds the earliest commit to retain at the 10th commit (keep 1, 2); then
    # at a deltacommit, at a compaction, before it; and where nothing is older than the newest slice
    for keep in (1, 3, 4, 5, 8):
        theirs, ours = tmp_path / f"hudi-{keep}" / "mor_cleaned", tmp_path / f"ours-{keep}" / "mor_cleaned"
        shutil.copytree(source, theirs)
        shutil.copytree(source, ours)
        _hudi_clean(hudi, theirs, keep)
        kinds, deleted = same_clean(capsys, written, theirs, ours, keep)
        if keep == 8:
            assert kinds == ["update_settings"] and not deleted
            continue
        assert kinds == ["update_settings", "clean"], (keep, kinds)
        assert {f for f in deleted if ".log." in f} and {f for f in deleted if f.endswith(".parquet")}, (keep, deleted)
        assert _cleans(ours) == [commits[min(len(commits) - keep, len(commits) - 2)]]

    ours = tmp_path / "ours-1" / "mor_cleaned"
    doc = spec_document(observe(HudiTable.open(str(ours))), Location.parse(str(ours.parent)))
    table = _table(hudi, doc, ours)
    assert tablespec_rows(table) == hudi_rows(hudi, str(ours))
    hudi_validates(hudi, str(ours))   # the metadata table no longer lists the deleted files
    hudi_write(hudi.createDataFrame([("a", 14, P1, 10), ("f", 6, P2, 10)], SCHEMA), str(ours),
               {**_options(ours.name, "bucket", "upsert"), **NO_CLEAN, **COMPACT})   # runs the pending compaction
    assert tablespec_rows(table) == hudi_rows(hudi, str(ours))
    assert _values(tablespec_rows(table)) == {"a": 14, "b": 21, "c": 32, "d": 41, "e": 5, "f": 6}


def test_tablespec_and_hudi_1_2_clean_the_same_version_9_files(hudi1, tmp_path, capsys):
    """The same history written by Apache Hudi 1.2 (table version 9: log files named by deltacommit,
    sliced by completion time), cleaned by Hudi 1.2's `run_clean` and by `tablespec apply`."""
    source = tmp_path / "source" / "mor9_cleaned"
    hudi1.process.run([write_step(source, {**_options(source.name, "bucket", "upsert"), **NO_CLEAN, **extra}, SCHEMA, data)
                       for extra, data in HISTORY])
    _record_index(source, "bucket")
    timeline = HudiTable.open(str(source)).timeline
    assert [i.action for i in timeline.pending()] == ["compaction"]
    written = _files(source)
    keeps = (1, 3, 4, 5, 8)
    steps = []
    for keep in keeps:
        theirs, ours = tmp_path / f"hudi-{keep}" / source.name, tmp_path / f"ours-{keep}" / source.name
        shutil.copytree(source, theirs)
        shutil.copytree(source, ours)
        steps += [sql_step(f"create table mor9_clean_{keep} using hudi location '{theirs}'"),
                  sql_step(f"call run_clean(table => 'mor9_clean_{keep}', retain_commits => {keep})"),
                  sql_step(f"drop table mor9_clean_{keep}")]
    hudi1.process.run(steps)
    for keep in keeps:
        theirs, ours = tmp_path / f"hudi-{keep}" / source.name, tmp_path / f"ours-{keep}" / source.name
        kinds, deleted = same_clean(capsys, written, theirs, ours, keep)
        if keep == 8:
            assert kinds == ["update_settings"] and not deleted
            continue
        assert kinds == ["update_settings", "clean"] and {f for f in deleted if ".log." in f}, (keep, kinds)

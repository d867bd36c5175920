"""Archiving merge-on-read tables as Apache Hudi 0.15 archives them (table version 6): deltacommits
count as commits, and Hudi's archiver keeps the deltacommits its compaction trigger counts (with
hoodie.compact.inline.max.delta.commits N: nothing from the latest compaction on while fewer than N
deltacommits followed it, else the last N deltacommits). A MOR table Hudi wrote (deltacommits, an
inline compaction) is copied and archived by Hudi's `archive_commits` on one copy and by tablespec
on the other, with fewer and with more than N deltacommits after the compaction: the same instants
move; Hudi reads the table tablespec archived and writes on. The same on table version 9 against
Hudi 1.2's archiver (its LSM history)."""
from __future__ import annotations

import shutil

from hudi_process import sql_step, write_step
from interop_support import hudi_rows, hudi_write
from test_hudi_archived_timeline import _instant_files, _ours
from test_hudi_merge_on_read import COMPACT, _options
from test_hudi_tables import SCHEMA

from tablespec.hudi.archive import ArchivedTimeline, ArchiveSettings, archive
from tablespec.hudi.table import HudiTable

P1 = "2024-01-01"
OFF = {"hoodie.archive.automatic": "false", "hoodie.clean.automatic": "false", "hoodie.metadata.enable": "false"}
DELTA_COMMITS = 5   # Hudi's default max.delta.commits, which `archive_commits` runs with


def _write(hudi, location, n: int, **extra: str) -> None:
    hudi_write(hudi.createDataFrame([("a", n, P1, n), (f"k{n}", n, P1, n)], SCHEMA), str(location),
               {**_options(location.name, "bucket", "upsert"), **OFF, **extra})


def _archived_both_ways(hudi, tmp_path, location, name: str) -> set:
    by_hudi, by_tablespec = tmp_path / f"{name}-hudi" / location.name, tmp_path / f"{name}-ours" / location.name
    shutil.copytree(location, by_hudi)
    shutil.copytree(location, by_tablespec)
    hudi.sql(f"call archive_commits(path => '{by_hudi}', min_commits => 2, max_commits => 3, "
             f"retain_commits => 1, enable_metadata => false)").collect()
    settings = ArchiveSettings(2, 3, 1, compaction_delta_commits=DELTA_COMMITS)
    result = archive(HudiTable.open(str(by_tablespec)), settings)
    assert result.archived and _instant_files(by_tablespec) == _instant_files(by_hudi), name
    ours = _ours(str(by_tablespec))[0]
    assert ours == _ours(str(by_hudi))[0], name
    assert hudi_rows(hudi, str(by_tablespec)) == hudi_rows(hudi, str(by_hudi))
    return {ts for ts, _, _ in ours}


def test_tablespec_archives_merge_on_read_instants_as_hudi_does(hudi, tmp_path):
    location = tmp_path / "mor_archived"
    for n in range(3):
        _write(hudi, location, n, **(COMPACT if n == 2 else {}))   # the third deltacommit, then a compaction
    for n in range(3, 7):
        _write(hudi, location, n)
    commits = HudiTable.open(str(location)).timeline.commits()
    assert [i.action for i in commits] == ["deltacommit"] * 3 + ["commit"] + ["deltacommit"] * 4
    compaction = commits[3].timestamp
    # 4 deltacommits after the compaction, fewer than 5: nothing from the compaction on is archived
    fewer = _archived_both_ways(hudi, tmp_path, location, "fewer")
    assert max(fewer) < compaction

    for n in range(7, 10):
        _write(hudi, location, n)
    commits = HudiTable.open(str(location)).timeline.commits()
    # 7 after it: the last 5 deltacommits stay, the compaction and the 2 deltacommits after it may go
    more = _archived_both_ways(hudi, tmp_path, location, "more")
    assert compaction in more and max(more) < commits[-DELTA_COMMITS].timestamp

    by_tablespec = tmp_path / "more-ours" / location.name
    _write(hudi, by_tablespec, 10, **{"hoodie.archive.automatic": "true", "hoodie.keep.min.commits": "2",
                                      "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1"})
    assert {"a", "k10"} <= {dict(r)["id"] for r in hudi_rows(hudi, str(by_tablespec))}


def _archived_9(location) -> set[tuple[str, str]]:
    return {(i.timestamp, i.action) for i in ArchivedTimeline.of(HudiTable.open(str(location))).completed()}


def _active_9(location) -> list[str]:
    return sorted(p.name for p in (location / ".hoodie" / "timeline").iterdir() if p.is_file() and p.name[:1].isdigit())


def test_tablespec_archives_version_9_merge_on_read_instants_as_hudi_1_2_does(hudi1, tmp_path):
    """The same on table version 9 (Hudi 1.2's LSM history), with more deltacommits than the trigger
    after the compaction."""
    location = tmp_path / "mor9_archived"
    hudi1.process.run([write_step(location, {**_options(location.name, "bucket", "upsert"), **OFF,
                                             **(COMPACT if n == 2 else {})}, SCHEMA, [("a", n, P1, n), (f"k{n}", n, P1, n)])
                       for n in range(10)])
    commits = HudiTable.open(str(location)).timeline.commits()
    assert [i.action for i in commits] == ["deltacommit"] * 3 + ["commit"] + ["deltacommit"] * 7
    by_hudi, by_tablespec = tmp_path / "hudi" / location.name, tmp_path / "ours" / location.name
    shutil.copytree(location, by_hudi)
    shutil.copytree(location, by_tablespec)
    hudi1.process.run([sql_step(f"call archive_commits(path => '{by_hudi}', min_commits => 2, max_commits => 3, "
                                "retain_commits => 1, enable_metadata => false)")])
    archive(HudiTable.open(str(by_tablespec)), ArchiveSettings(2, 3, 1, compaction_delta_commits=DELTA_COMMITS))
    ours = _archived_9(by_tablespec)
    assert ours == _archived_9(by_hudi) and ours
    assert _active_9(by_tablespec) == _active_9(by_hudi)
    assert max(ts for ts, _ in ours) < commits[-DELTA_COMMITS].timestamp

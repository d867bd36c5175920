"""tablespec's cleaner keeps what Apache Hudi's keeps (KEEP_LATEST_COMMITS): one table state Hudi
0.15 wrote (updates, an inline clustering, updates of the clustered file groups), copied, cleaned
by Hudi's `run_clean` on one copy and by `tablespec apply` with the same keepCommits on the
other: both delete exactly the same files, for earliest commits to retain before, at and after
the replacecommit."""
from __future__ import annotations

import os
import shutil

from interop_support import apply_until_done, cli, hudi_write, save_spec

from tablespec.hudi.io import LocalStorage
from tablespec.hudi.table import HudiTable, Location
from tablespec.hudi.timeline.active import Timeline
from tablespec.importer import spec_document
from tablespec.state import observe

SCHEMA = "id string, v int, dt string, ts long"
OPTIONS = {"hoodie.table.name": "cleaned", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.partitionpath.field": "dt", "hoodie.datasource.write.precombine.field": "ts",
           "hoodie.datasource.write.operation": "upsert", "hoodie.clean.automatic": "false"}
CLUSTER = {"hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "1",
           "hoodie.clustering.plan.strategy.partition.selected": "2024-01-01"}   # P2's file group is updated only
P1, P2 = "2024-01-01", "2024-01-02"


def _files(location) -> set[str]:
    """Every file of the table outside `.hoodie` (data files, checksum sidecars, partition metadata)."""
    out = set()
    for root, dirs, names in os.walk(location):
        dirs[:] = [d for d in dirs if d != ".hoodie"]
        out |= {os.path.relpath(os.path.join(root, n), location) for n in names}
    return out


def _hudi_state(spark, location) -> tuple[list[str], set[str]]:
    """The commits Hudi wrote (updates, an inline clustering of P1, updates after it), and the file
    ids the clustering replaced."""
    rows = [[("a", 1, P1, 1), ("b", 2, P1, 1), ("c", 3, P2, 1)], [("a", 11, P1, 2)],
            [("b", 12, P1, 3), ("c", 13, P2, 3)], [("a", 21, P1, 4), ("c", 23, P2, 4)],
            [("a", 31, P1, 5)], [("a", 41, P1, 6), ("c", 43, P2, 6)]]
    for n, data in enumerate(rows):
        hudi_write(spark.createDataFrame(data, SCHEMA), location, {**OPTIONS, **(CLUSTER if n == 3 else {})})
    timeline = Timeline.load(LocalStorage(), str(location))
    commits = timeline.commits()
    assert [i.action for i in commits] == ["commit"] * 4 + ["replacecommit"] + ["commit"] * 2
    replaced = timeline.commit_metadata(commits[4]).partition_to_replace_file_ids or {}
    assert list(replaced) == [P1]
    return [i.timestamp for i in commits], {f for ids in replaced.values() for f in ids}


def _hudi_clean(spark, location, keep: int) -> None:
    name = f"hudi_clean_{keep}"
    spark.sql(f"create table {name} using hudi location '{location}'")
    try:
        spark.sql(f"call run_clean(table => '{name}', retain_commits => {keep})").collect()
    finally:
        spark.sql(f"drop table {name}")  # the catalog entry only; the files stay


def _tablespec_clean(capsys, warehouse, location, keep: int) -> list[str]:
    code, out, err = cli(capsys, "import", str(location), "--warehouse", str(warehouse))
    assert code == 0, err
    doc = spec_document(observe(HudiTable.open(str(location))), Location.parse(str(warehouse)))
    doc["spec"]["retention"]["keepCommits"] = keep
    spec_file = warehouse / "cleaned.yaml"
    save_spec(doc, spec_file)
    return apply_until_done(capsys, spec_file, warehouse)


def _cleans(location) -> list[str]:
    """The earliest commit to retain of each completed clean on the table's timeline."""
    timeline = Timeline.load(LocalStorage(), str(location))
    return [timeline.read_metadata(i)["earliestCommitToRetain"] for i in timeline.completed() if i.action == "clean"]


def same_clean(capsys, written: set[str], theirs, ours, keep: int) -> tuple[list[str], set[str]]:
    """tablespec's clean (`apply` with keepCommits `keep`) of `ours` against Hudi's of `theirs`, two
    copies of a table whose files were `written`: the same files deleted and the same earliest
    commit to retain. Returns the kinds of the actions applied and the files deleted."""
    kinds = _tablespec_clean(capsys, ours.parent, ours, keep)
    deleted = written - _files(ours)
    assert deleted == written - _files(theirs), f"keepCommits {keep}"
    assert _cleans(ours) == _cleans(theirs), f"keepCommits {keep}"
    return kinds, deleted


def test_tablespec_and_hudi_clean_the_same_files(hudi, tmp_path, capsys):
    source = tmp_path / "source" / "cleaned"
    commits, replaced = _hudi_state(hudi, source)
    written = _files(source)
    # retaining from after, just after, at and before the replacecommit, and from where the
    # newest slice before the earliest commit to retain is the only older one (nothing to clean)
    for keep in (1, 2, 3, 4, 5):
        theirs, ours = tmp_path / f"hudi-{keep}" / "cleaned", tmp_path / f"ours-{keep}" / "cleaned"
        shutil.copytree(source, theirs)
        shutil.copytree(source, ours)
        _hudi_clean(hudi, theirs, keep)
        kinds, deleted = same_clean(capsys, written, theirs, ours, keep)
        parquet = {f for f in deleted if f.endswith(".parquet")}
        if keep == 5:
            assert kinds == ["update_settings"] and not deleted
            assert _cleans(ours) == _cleans(theirs) == []
            continue
        assert kinds == ["update_settings", "clean"] and parquet, (keep, kinds)
        assert _cleans(ours) == _cleans(theirs) == [commits[-keep]]
        # the groups the clustering replaced go whole once it is older than the earliest commit to
        # retain, and stay whole while it is retained
        gone = {f.split("/")[-1].split("_")[0] for f in parquet}
        assert (replaced <= gone) == (keep < 3) and (replaced & gone == set()) == (keep >= 3), (keep, gone)

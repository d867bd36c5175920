"""`plan` of clustering on a merge-on-read table (version 6) Apache Hudi wrote (the hudi-rs fixture
`mor_parquet_v6_simplekeygen_nonhivestyle`: one file group of three with a log file), no JVM: the
action says which slices are read merged with their log files and that their file groups take no
updates and no compaction until it completes; a file group under a pending compaction is not taken."""
from __future__ import annotations

import re

import pytest
from _support import cli, table_files

from tablespec.engine import clustering
from tablespec.errors import TablespecError
from tablespec.hudi.services.clustering import ClusteringGroup, ClusteringPlan, SliceInfo
from tablespec.hudi.services.compaction import schedule
from tablespec.hudi.table import HudiTable
from tablespec.plan.compaction import policy
from tablespec.spec.loader import load_spec_text

SORTED = "clustering: {strategy: SORT, sortColumns: [id], everyNCommits: 4}"


def _plan(capsys, spec_file, warehouse) -> str:
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(warehouse))
    assert code == 0, out + err
    return out


def test_clustering_plan_of_merged_slices_and_a_pending_compaction(real_table, tmp_path, capsys):
    base = real_table("mor_parquet_v6_simplekeygen_nonhivestyle")
    warehouse = base.parent.parent
    code, text, err = cli(capsys, "import", str(base), "--warehouse", str(warehouse))
    assert code == 0, err
    text = re.sub(r"clustering: \{.*\}", SORTED, text)
    spec_file = tmp_path / "t.yaml"
    spec_file.write_text(text)
    [logs] = [s for s in HudiTable.open(str(base)).view.latest_slices() if s.log_files]

    out = _plan(capsys, spec_file, warehouse)
    assert "~ clustering" in out, out
    assert ("merge-on-read: reads 1 file slice merged with 1 log file (11.6 KiB) into new base files; until it "
            "completes, the file groups it takes get no updates (a deltacommit into them is refused, as Apache Hudi "
            "0.15's default update strategy rejects it) and no compaction") in out, out
    assert "files=3 -> 3" in out, out

    # a compaction pending on the slice with a log file: clustering leaves its file group alone
    table = HudiTable.open(str(base))
    spec = load_spec_text(text + "  compaction: {runBy: tablespec, deltaCommits: 1}\n", "t.yaml").specs[0].spec
    schedule(table, policy(spec), ["due"])
    out = _plan(capsys, spec_file, warehouse)
    assert "merge-on-read:" not in out and "files=2 -> 2" in out, out
    assert "1 file group under a pending compaction are not clustered until it completes (RFC-19)" in out, out
    assert logs.file_id not in out


def test_a_plan_missing_a_slices_log_file_is_discarded_not_run(real_table, tmp_path, capsys):
    """A plan (Hudi's, say) naming a slice's base file but not its log file would drop the log's
    records: `plan` offers to discard it, and running it is refused before anything changes."""
    base = real_table("mor_parquet_v6_simplekeygen_nonhivestyle")
    warehouse = base.parent.parent
    code, text, err = cli(capsys, "import", str(base), "--warehouse", str(warehouse))
    assert code == 0, err
    spec_file = tmp_path / "t.yaml"
    spec_file.write_text(re.sub(r"clustering: \{.*\}", SORTED, text))
    table = HudiTable.open(str(base))
    [logs] = [s for s in table.view.latest_slices() if s.log_files]
    instant = clustering.schedule(table, ClusteringPlan((ClusteringGroup((SliceInfo(
        logs.partition, logs.file_id, logs.base_file.path),)),)))
    out = _plan(capsys, spec_file, warehouse)
    assert (f"clustering plan {instant.timestamp} can no longer run (file group {logs.file_id} has other log files "
            "than the plan's (1, not 0)): it is rolled back and discarded") in " ".join(out.split()), out
    files = table_files(base)
    spec = load_spec_text(spec_file.read_text(), "t.yaml").specs[0].spec
    with pytest.raises(TablespecError, match=f"clustering plan {instant.timestamp} cannot run \\(file group "
                                             f"{logs.file_id} has other log files than the plan's \\(1, not 0\\)\\)"):
        clustering.run(None, spec, table.refresh(), instant, "")
    assert table_files(base) == files

"""`plan` of index changes on a merge-on-read table (version 6), no JVM: a bucket bootstrap says
which slices it reads merged with their log files and waits for a pending compaction (refused in
one line, nothing changed, the engine refusing too); SIMPLE <-> BLOOM is configuration only; a
switch that would lose keys only log files hold is refused, and a record index build without a
metadata table. COPY_ON_WRITE -> MERGE_ON_READ converts in place, the way back is refused. The
real table is the hudi-rs fixture `mor_parquet_v6_simplekeygen_nonhivestyle` (one file group of
three with a log file)."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest
from _support import cli, table_files
from test_builder import BASE, LOCATION, actions, state_for

from tablespec.engine.rebucket import rebucket
from tablespec.errors import SpecError, TablespecError, UnsupportedTableError
from tablespec.hudi.services.compaction import schedule
from tablespec.hudi.table import HudiTable
from tablespec.plan.compaction import policy
from tablespec.spec.loader import load_spec_text
from tablespec.state import FileGroupState


def _imported(real_table, tmp_path, capsys, index: str):
    base = real_table("mor_parquet_v6_simplekeygen_nonhivestyle")
    warehouse = base.parent.parent
    code, text, err = cli(capsys, "import", str(base), "--warehouse", str(warehouse))
    assert code == 0 and "index: {type: SIMPLE}" in text, err
    spec_file = tmp_path / "t.yaml"
    spec_file.write_text(text.replace("index: {type: SIMPLE}", f"index: {index}"))
    return base, warehouse, spec_file


def _plan(capsys, spec_file, warehouse) -> tuple[int, str, str]:
    return cli(capsys, "plan", str(spec_file), "--warehouse", str(warehouse), "--format", "json")


def _error(err: str) -> str:
    """The one error line (the import's spec warns about its nullable key column too)."""
    [line] = [line for line in err.splitlines() if line.startswith("error:")]
    return line


def test_bucket_bootstrap_reads_merged_slices_and_waits_for_a_pending_compaction(real_table, tmp_path, capsys):
    base, warehouse, spec_file = _imported(real_table, tmp_path, capsys, "{type: BUCKET, numBuckets: 2}")
    table = HudiTable.open(str(base))
    [logs] = [s for s in table.view.latest_slices() if s.log_files]
    code, out, err = _plan(capsys, spec_file, warehouse)
    assert code == 0, err
    [action] = json.loads(out)["tables"][0]["actions"]
    assert action["kind"] == "bucket_bootstrap"
    assert ("merge-on-read: 1 file slice with log files (1 log file: their updates and deletes applied) read merged; "
            "the replacecommit replaces whole file groups, log files included") in action["reasons"]
    total = sum(s.size for s in table.view.latest_slices())
    assert action["estimate"]["bytes_to_read"] == total > sum(s.base_file.size for s in table.view.latest_slices())

    # a compaction pending on the slice with a log file: the rewrite waits for it, nothing changes
    text = spec_file.read_text()
    spec = load_spec_text(text + "  compaction: {runBy: tablespec, deltaCommits: 1}\n", "t.yaml").specs[0].spec
    [(instant, _)] = [schedule(table, policy(spec), ["due"])]
    files = table_files(base)
    code, out, err = _plan(capsys, spec_file, warehouse)
    assert code != 0, out + err
    assert (f"bucket_bootstrap rewrites file groups under pending compaction {instant.timestamp} "
            f"({logs.partition}/{logs.file_id})") in _error(err)
    # the engine refuses too (a saved plan, a compaction scheduled since), before it writes anything
    spec = load_spec_text(spec_file.read_text(), "t.yaml").specs[0].spec
    with pytest.raises(TablespecError, match="under a pending compaction"):
        rebucket(None, spec, table.refresh(), None, "")
    assert table_files(base) == files


@pytest.mark.parametrize(("index", "planned"), [
    ("{type: BLOOM}", "index SIMPLE -> BLOOM: configuration only, no data rewrite"),
    ("{type: RECORD_LEVEL}", "Hudi's record index is built into the metadata table, which this MERGE_ON_READ "
                             "table has not got"),   # (the fixture was written without one)
])
def test_index_switches_on_merge_on_read(real_table, tmp_path, capsys, index, planned):
    base, warehouse, spec_file = _imported(real_table, tmp_path, capsys, index)
    code, out, err = _plan(capsys, spec_file, warehouse)
    if code == 0:
        [action] = json.loads(out)["tables"][0]["actions"]
        assert (action["kind"], action["reasons"]) == ("index_migration", [planned])
    else:
        assert planned in _error(err)


def _merge_on_read(version: int):
    """A MERGE_ON_READ spec at table `version` and the state of its table."""
    mor = BASE.replace("  index:", f"  tableType: MERGE_ON_READ\n  tableVersion: {version}\n  index:")
    return mor, state_for(mor, **{"hoodie.table.type": "MERGE_ON_READ", "hoodie.table.version": str(version)})


@pytest.mark.parametrize("version", [6, 9])
def test_bucket_to_simple_waits_for_every_slice_compacted(version):
    """BUCKET writers put inserts into log files, SIMPLE finds keys in base files only (version 9 as 6)."""
    mor, bucketed = _merge_on_read(version)
    simple = mor.replace("index: {type: BUCKET, numBuckets: 16}", "index: {type: SIMPLE}")
    group = FileGroupState("2026-01-01", "00000000-0000-0000-0000-000000000000-0", "20261121000000000", 10)
    assert [a.kind for a in actions(simple, replace(bucketed, file_groups=(group,)))] == ["index_migration"]
    with pytest.raises(UnsupportedTableError, match=f"{LOCATION}: index BUCKET -> SIMPLE on a MERGE_ON_READ table "
                                                    r"with log files \(1 file slice\(s\)\)"):
        actions(simple, replace(bucketed, file_groups=(replace(group, log_files=1, log_bytes=5),)))


def test_copy_on_write_converts_in_place_and_not_back():
    mor = BASE.replace("  index:", "  tableType: MERGE_ON_READ\n  index:")
    [action] = actions(mor, state_for(BASE))
    assert action.kind == "update_settings" and action.reasons[0].startswith(
        "COPY_ON_WRITE -> MERGE_ON_READ in place: hoodie.table.type switches, no file is rewritten")
    assert [(c.path, c.old, c.new) for c in action.changes] == [("spec.tableType", "COPY_ON_WRITE", "MERGE_ON_READ")]
    with pytest.raises(UnsupportedTableError, match="does not convert it back .Apache Hudi's copy-on-write readers "
                                                    "take neither log files nor the base files deltacommits wrote"):
        actions(BASE, state_for(mor, **{"hoodie.table.type": "MERGE_ON_READ"}))


def test_copy_on_write_is_not_converted_on_a_plan_that_upgrades_it():
    """The in-place conversion is measured with Apache Hudi on version 6 only: a spec that upgrades the table
    and converts it is refused (spec file and field named), as is the conversion at version 9."""
    mor = BASE.replace("  index:", "  tableType: MERGE_ON_READ\n  tableVersion: 9\n  index:")
    with pytest.raises(SpecError, match=r"orders.yaml:\d+:\d+: spec.tableType: .*COPY_ON_WRITE -> MERGE_ON_READ in "
                                        r"place runs on table version 6 \(this plan upgrades the table 6 -> 9\)"):
        actions(mor, state_for(BASE))
    [action] = actions(mor, state_for(BASE, **{"hoodie.table.version": "9"}))
    assert action.kind == "replace_table"


@pytest.mark.parametrize("version", [6, 9])
def test_record_level_waits_for_log_only_file_groups_compacted(version):
    mor, bucketed = _merge_on_read(version)
    record_level = mor.replace("index: {type: BUCKET, numBuckets: 16}", "index: {type: RECORD_LEVEL}")
    group = FileGroupState("2026-01-01", "00000000-0000-0000-0000-000000000000-0", "20261121000000000", 0,
                           log_files=1, log_bytes=5)
    with pytest.raises(UnsupportedTableError, match=r"index BUCKET -> RECORD_LEVEL on a MERGE_ON_READ table with 1 "
                                                    r"file group\(s\) of log files only"):
        actions(record_level, replace(bucketed, file_groups=(group,)))
    [action] = actions(record_level, replace(bucketed, file_groups=(replace(group, base_file="f.parquet"),)))
    assert action.kind == "index_migration" and action.reasons[-1].startswith(
        "merge-on-read: 1 file slice with log files (1 log file: their updates and deletes applied) read merged "
        "for their keys")

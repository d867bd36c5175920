"""The 6 -> 9 upgrade in the format layer (hudi/upgrade.py), on real version-6 tables: what Apache Hudi
1.2.0's upgrade leaves (measured on tables it upgraded itself: the same properties, file names,
completion times and commit records), crash safety at each step, and the plan around it (the
spec's and the project's table version, downgrades refused at the spec field). Hudi 1.2.0 and
Spark read upgraded tables in tests/interop/test_hudi_1x_upgrade.py."""
from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import fastavro
import pytest
from _support import ROOT

from tablespec.cli import main
from tablespec.faults import CRASH_ENV
from tablespec.hudi.archive import ArchivedTimeline
from tablespec.hudi.archive.archiver import execute
from tablespec.hudi.archive.lsm_write import lsm_file
from tablespec.hudi.archive.plan import ArchivePlan
from tablespec.hudi.formats.properties import parse_properties
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.services.upgrade import converted_instant, properties_at, refusal, upgrade
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import parse_instants
from tablespec.hudi.timeline.instant import Instant

FIXTURE = "cow_v6_complexkeygen_hivestyle"
POINTS = ["upgrade.metadata_table.unnamed", "upgrade.metadata_table", "upgrade.timeline", "upgrade.history",
          "upgrade.switched"]
V6 = {"hoodie.table.name": "t", "hoodie.table.version": "6", "hoodie.timeline.layout.version": "1",
      "hoodie.table.precombine.field": "ts", "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
      "hoodie.compaction.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
      "hoodie.record.merge.strategy.id": "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5",
      "hoodie.table.metadata.partitions": "files", "hoodie.archivelog.folder": "archived"}


def _props(base) -> dict[str, str]:
    return parse_properties(Path(base, ".hoodie", "hoodie.properties").read_text())


def hudi_rs_rows(base: str) -> list:
    """The table as hudi-rs reads it (meta columns included), rows sorted."""
    import hudi
    import pyarrow as pa
    batches = hudi.HudiTableBuilder.from_base_uri(base).build().read()
    return sorted((repr(sorted(r.items())) for r in pa.Table.from_batches(batches).to_pylist()) if batches else [])


def _essence(meta) -> tuple:
    """What readers take from commit metadata (the Avro form keeps HoodieWriteStat's fields only, as Hudi's does)."""
    stats = {p: sorted((s.file_id, s.path, s.prev_commit, s.num_writes, s.num_inserts, s.num_deletes, s.file_size_in_bytes)
                       for s in lst) for p, lst in meta.partition_to_write_stats.items()}
    return stats, meta.extra_metadata, meta.operation_type


def _layout1_files(base) -> list[str]:
    return sorted(i.file_name for i in parse_instants(LocalStorage().list_dir(str(Path(base, ".hoodie")))))


def test_properties_as_hudi_1_2_rewrites_them():
    """The keys Hudi 1.2.0's upgrade of a version-6 table changed (diffed on one it upgraded)."""
    nine = properties_at(V6, 9)
    assert {k: v for k, v in nine.items() if V6.get(k) != v} == {
        "hoodie.table.version": "9", "hoodie.timeline.layout.version": "2", "hoodie.table.initial.version": "6",
        "hoodie.timeline.path": "timeline", "hoodie.timeline.history.path": "history",
        "hoodie.table.keygenerator.type": "SIMPLE", "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
        "hoodie.table.ordering.fields": "ts",
        "hoodie.table.legacy.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
        "hoodie.compaction.record.merger.strategy": "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"}
    assert {"hoodie.table.precombine.field", "hoodie.compaction.payload.class", "hoodie.record.merge.strategy.id",
            "hoodie.table.metadata.partitions"}.isdisjoint(nine)
    eight = properties_at(V6, 8)   # version 8 keeps the precombine key and the payload class (EightToNine moves them)
    assert eight["hoodie.table.precombine.field"] == "ts" and eight["hoodie.table.version"] == "8"
    assert "hoodie.compaction.payload.class" in eight
    unordered = {k: v for k, v in V6.items() if k != "hoodie.table.precombine.field"}
    assert properties_at(unordered, 9)["hoodie.record.merge.mode"] == "COMMIT_TIME_ORDERING"


def test_version_changes_tablespec_refuses():
    assert refusal(6, 6) is None and refusal(6, 9) is None and refusal(6, 8) is None
    assert "a downgrade to 6 is not supported" in (refusal(9, 6) or "")
    assert refusal(8, 9) is None   # as Hudi 1.2's EightToNine handler (tests/interop/test_hudi_1x_upgrade_8.py)
    assert "does not upgrade Hudi table version 9 to 10" in (refusal(9, 10) or "")


def test_instant_files_as_layout_2_names_and_fills_them():
    """Completed: `T_C.action`, C the file's modification time (UTC); commits (every state) and
    completed replacecommits in Avro; a pending replacecommit becomes `clustering`; a clean keeps its bytes."""
    mtime = 1_700_000_000_123   # 2023-11-14 22:13:20.123 UTC
    done, raw = converted_instant(Instant("20231114221300000", "commit"), mtime, b'{"operationType": "UPSERT"}', "f")
    assert done.file_name == "20231114221300000_20231114221320123.commit"
    assert list(fastavro.reader(io.BytesIO(raw)))[0]["operationType"] == "UPSERT"
    requested, raw = converted_instant(Instant("20231114221300000", "commit", "requested"), mtime, b"", "f")
    assert requested.file_name == "20231114221300000.commit.requested"
    assert list(fastavro.reader(io.BytesIO(raw))) == [   # as Hudi 1.2.0 converted an empty requested commit
        {"partitionToWriteStats": {}, "compacted": False, "extraMetadata": {}, "version": None, "operationType": "UNKNOWN"}]
    clustering, _ = converted_instant(Instant("20231114221300000", "replacecommit", "requested"), mtime, b"plan", "f")
    assert clustering.file_name == "20231114221300000.clustering.requested"
    clean, raw = converted_instant(Instant("20231114221300000", "clean"), mtime, b"avro bytes", "f")
    assert clean.file_name == "20231114221300000_20231114221320123.clean" and raw == b"avro bytes"
    late, _ = converted_instant(Instant("20991231000000000", "commit"), mtime, b"", "f")   # never before requested
    assert late.completion == "20991231000000000"


def test_a_real_version_6_table_upgrades_to_9(real_table):
    """Every instant moves with its content (commit metadata equal, now Avro), the archived commits go
    into the LSM history, hoodie.properties switch last, no version-6 instant file is left; hudi-rs
    reads the same rows."""
    base = real_table(FIXTURE)
    storage = LocalStorage()
    before = hudi_rs_rows(str(base))
    table = HudiTable.open(str(base))
    commits = {i.timestamp: table.timeline.commit_metadata(i) for i in table.timeline.commits()}
    mtimes = {i.timestamp: Path(base, ".hoodie", i.file_name).stat().st_mtime for i in table.timeline.commits()}
    oldest = table.timeline.commits()[0]   # to the version-6 archive first, as Hudi 0.15's archiver writes it
    assert execute(storage, str(base), ArchivePlan((oldest,), 1, 2))
    files = len(_layout1_files(base))

    done = upgrade(HudiTable.open(str(base)), 9)
    assert done.files == files and done.archived == 1 and not done.metadata_table_deleted
    props = _props(base)
    assert props["hoodie.table.version"] == "9" and props["hoodie.table.ordering.fields"] == "longField"
    assert props["hoodie.table.keygenerator.type"] == "COMPLEX" and props["hoodie.table.initial.version"] == "6"
    assert _layout1_files(base) == [] and not Path(base, ".hoodie", "hoodie.properties.backup").exists()
    upgraded = HudiTable.open(str(base))
    lsm = ArchivedTimeline.of(upgraded)
    active = upgraded.timeline.commits()
    assert sorted([i.timestamp for i in lsm.commits()] + [i.timestamp for i in active]) == sorted(commits)
    for instant in active:
        assert _essence(upgraded.timeline.commit_metadata(instant)) == _essence(commits[instant.timestamp])
        assert upgraded.timeline.read_bytes(instant).startswith(b"Obj\x01")
        assert instant.completion >= instant.timestamp and mtimes[instant.timestamp]
    for instant in lsm.commits():
        assert _essence(lsm.commit_metadata(instant)) == _essence(commits[instant.timestamp])
    assert hudi_rs_rows(str(base)) == before
    assert storage.exists(str(Path(base, ".hoodie", "archived")))   # Hudi leaves the old archive too


def test_upgrading_a_version_9_table_deletes_what_a_stopped_upgrade_left(real_table):
    base = real_table(FIXTURE)
    stale = Path(base, ".hoodie", "20240418173213674.commit")
    kept = stale.read_bytes()
    upgrade(HudiTable.open(str(base)), 9)
    stale.write_bytes(kept)   # as a kill -9 after the switch leaves it
    table = HudiTable.open(str(base))
    assert table.upgrade_leftovers == (str(stale),)
    assert upgrade(table, 9).leftovers_deleted == 1 and not stale.exists()
    assert HudiTable.open(str(base)).upgrade_leftovers == ()


@pytest.mark.parametrize("point", POINTS)
def test_an_upgrade_killed_at_each_step_leaves_the_table_before_or_after(real_table, point):
    """kill -9 at every step: the table reads as version 6 (untouched instants) until the switch, as
    version 9 after it; running the upgrade again finishes it, whatever the step."""
    base = real_table(FIXTURE)
    before, files = hudi_rs_rows(str(base)), _layout1_files(base)
    script = ("from tablespec.hudi.table import HudiTable\nfrom tablespec.hudi.services.upgrade import upgrade\n"
              f"upgrade(HudiTable.open({str(base)!r}), 9)\n")
    died = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT), CRASH_ENV: point})
    assert died.returncode == -9, died.stderr[-2000:]
    switched = point == "upgrade.switched"
    assert _props(base)["hoodie.table.version"] == ("9" if switched else "6")
    assert _layout1_files(base) == files   # deleted only after the switch, and not yet
    assert hudi_rs_rows(str(base)) == before
    upgrade(HudiTable.open(str(base)), 9)
    assert _props(base)["hoodie.table.version"] == "9" and _layout1_files(base) == []
    assert hudi_rs_rows(str(base)) == before


def test_the_lsm_file_is_named_by_its_instants_and_declares_hudis_schema():
    import pyarrow.parquet as pq
    rows = [{"instantTime": t, "completionTime": t, "action": "commit", "metadata": b"m", "plan": None, "version": 1}
            for t in ("20240102000000000", "20240101000000000")]
    name, data = lsm_file(rows)
    assert name == "20240101000000000_20240102000000000_0.parquet"
    parquet = pq.ParquetFile(io.BytesIO(data))
    assert b"HoodieLSMTimelineInstant" in parquet.metadata.metadata[b"parquet.avro.schema"]
    assert parquet.read().column("instantTime").to_pylist() == sorted(r["instantTime"] for r in rows)


# -- the plan: spec.tableVersion, the project's tableVersion ------------------------------------

SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: t}
spec:
  location: t
  columns:
    - {name: id, type: string, nullable: false}
    - {name: ts, type: long}
  recordKey: {fields: [id]}
  orderingField: ts
"""


def _cli(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_spec_and_project_table_versions_plan_create_upgrade_and_refuse(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tablespec.project.yaml").write_text("warehouse: wh\ntableVersion: 9\n")
    spec = tmp_path / "t.yaml"
    spec.write_text(SPEC)
    code, out, err = _cli(capsys, "plan", str(spec))
    assert code == 0 and "+ spec.tableVersion = 9" in out, out + err   # the project's default for new tables
    (tmp_path / "tablespec.project.yaml").write_text("warehouse: wh\n")
    assert _cli(capsys, "apply", str(spec), "--auto-approve")[0] == 0
    assert _props(tmp_path / "wh" / "t")["hoodie.table.version"] == "6"
    (tmp_path / "tablespec.project.yaml").write_text("warehouse: wh\ntableVersion: 9\n")
    code, out, err = _cli(capsys, "plan", str(spec), "--detailed-exitcode")   # an existing table keeps its version
    assert code == 0 and out.startswith("No changes."), out + err

    spec.write_text(SPEC.replace("  location: t\n", "  location: t\n  tableVersion: 9\n"))
    code, out, err = _cli(capsys, "plan", str(spec))
    assert code == 0 and "~ upgrade_table" in out and "table version 6 -> 9" in out, out + err
    code, out, err = _cli(capsys, "apply", str(spec), "--auto-approve")
    assert code == 0 and "upgrade_table done" in out, out + err
    props = _props(tmp_path / "wh" / "t")
    assert props["hoodie.table.version"] == "9" and "hoodie.table.metadata.partitions" not in props
    assert not (tmp_path / "wh" / "t" / ".hoodie" / "metadata").exists()   # retired, as Hudi does with one it cannot keep
    code, out, err = _cli(capsys, "plan", str(spec))          # the next plan builds one in Hudi 1.x's layout
    assert code == 0 and "~ build_metadata_table" in out and "upgrade_table" not in out, out + err
    code, out, err = _cli(capsys, "apply", str(spec), "--auto-approve")
    assert code == 0 and "build_metadata_table done" in out, out + err
    assert _props(tmp_path / "wh" / "t")["hoodie.table.metadata.partitions"] == "files"
    assert (tmp_path / "wh" / "t" / ".hoodie" / "metadata" / ".hoodie" / "timeline").is_dir()
    code, out, err = _cli(capsys, "plan", str(spec), "--detailed-exitcode")
    assert code == 0 and out.startswith("No changes."), out + err

    spec.write_text(SPEC.replace("  location: t\n", "  location: t\n  tableVersion: 6\n"))
    code, out, err = _cli(capsys, "plan", str(spec))
    assert code == 1 and "Traceback" not in err
    assert f"{spec}:6:3: spec.tableVersion:" in err and "a downgrade to 6 is not supported" in err


@pytest.mark.parametrize("where, text, message", [
    ("spec", SPEC.replace("  location: t\n", "  location: t\n  tableVersion: 7\n"),
     "t.yaml:6:3: spec.tableVersion: expected one of 6, 8, 9, got the number 7"),
    ("project", "warehouse: wh\ntableVersion: 10\n", "tableVersion: expected one of 6, 8, 9, got the number 10"),
    ("create8", SPEC.replace("  location: t\n", "  location: t\n  tableVersion: 8\n"),
     "t.yaml:6:3: spec.tableVersion: tablespec creates tables at Hudi table version 6 or 9, not 8"),
])
def test_bad_table_versions_are_one_line_errors(tmp_path, capsys, monkeypatch, where, text, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tablespec.project.yaml").write_text(text if where == "project" else "warehouse: wh\n")
    (tmp_path / "t.yaml").write_text(SPEC if where == "project" else text)
    code, out, err = _cli(capsys, "plan", "t.yaml")
    assert code == 1 and message in err and "Traceback" not in err, err
    assert not (tmp_path / "wh").exists()


def test_version_9_index_changes_run(tmp_path, capsys, monkeypatch):
    """On a version 9 table an index migration between non-RECORD_LEVEL types runs (hoodie.properties
    only), and one to RECORD_LEVEL builds Hudi 1.x's record index in the metadata table the table was
    created with (the empty table: no keys to read)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tablespec.project.yaml").write_text("warehouse: wh\n")
    spec = tmp_path / "t.yaml"
    versioned = SPEC.replace("  location: t\n", "  location: t\n  tableVersion: 9\n")
    spec.write_text(versioned)
    assert _cli(capsys, "apply", str(spec), "--auto-approve")[0] == 0
    spec.write_text(versioned + "  index: {type: BLOOM}\n")
    code, out, err = _cli(capsys, "apply", str(spec), "--auto-approve")
    assert code == 0 and "index_migration done" in out, out + err
    assert _props(tmp_path / "wh" / "t")["hoodie.index.type"] == "BLOOM"

    spec.write_text(versioned + "  index: {type: RECORD_LEVEL}\n")
    code, out, err = _cli(capsys, "apply", str(spec), "--auto-approve")
    assert code == 0 and "index_migration done" in out, out + err
    assert _props(tmp_path / "wh" / "t")["hoodie.table.metadata.partitions"] == "files,record_index"


def test_a_new_version_9_record_level_table_is_created_with_its_record_index(tmp_path):
    """At version 9 too a RECORD_LEVEL table starts with Hudi's metadata table and an empty record
    index (Hudi 1.x's layout: both initialized on the metadata table's 1.x timeline)."""
    from tablespec.actions.metadata import create_table
    from tablespec.hudi.config import named_partitions
    from tablespec.hudi.mdt import record_index_writer
    from tablespec.hudi.table import HudiTable
    from tablespec.spec.loader import load_spec_text
    spec = load_spec_text(SPEC.replace("  location: t\n", "  location: t\n  tableVersion: 9\n")
                          + "  index: {type: RECORD_LEVEL}\n", "t.yaml").specs[0].spec
    table = HudiTable.open(str(tmp_path / "t"))
    config = create_table(table, spec)
    assert config.version == 9 and named_partitions(table.config) == ("files", "record_index")
    assert (tmp_path / "t" / ".hoodie" / "metadata" / ".hoodie" / "timeline").is_dir()
    assert record_index_writer.is_enabled(HudiTable.open(str(tmp_path / "t")))

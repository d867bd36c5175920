"""`tablespec report` of a table Apache Hudi 0.15 wrote: upserts with Hudi's own cleaning and
archiving, an insert_overwrite (a replacecommit), and a write that failed in its Spark job (left
pending). Its numbers are what `show`, Hudi's read of the table and the file system say."""
from __future__ import annotations

import json

import pytest
from interop_support import cli, hudi_rows, hudi_write
from pyspark.sql import functions as F
from report.chromium import assert_page_renders

from tablespec.hudi.archive import ArchivedTimeline
from tablespec.hudi.archive.log import _state_is_text, archive_files
from tablespec.hudi.formats.logfile import Header, read_blocks
from tablespec.hudi.table import HudiTable
from tablespec.report.html import render_html

HUDI_TABLE = {"hoodie.table.name": "clicks", "hoodie.datasource.write.recordkey.field": "id",
              "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
              "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1",
              "hoodie.upsert.shuffle.parallelism": "1", "hoodie.insert.shuffle.parallelism": "1"}
UPSERTS = 6


def test_the_report_of_a_table_apache_hudi_wrote(hudi, tmp_path, capsys, monkeypatch):
    base = tmp_path / "clicks"
    for i in range(UPSERTS):
        df = hudi.createDataFrame([(j, i, f"p{j % 2}") for j in range(i, i + 3)], "id int, ts int, p string")
        hudi_write(df, base, HUDI_TABLE)
    overwrite = hudi.createDataFrame([(100, 9, "p0"), (101, 9, "p0")], "id int, ts int, p string")
    hudi_write(overwrite, base, {**HUDI_TABLE, "hoodie.datasource.write.operation": "insert_overwrite"})
    failing = hudi.createDataFrame([(200, 10, "p1")], "id int, ts int, p string") \
        .withColumn("ts", F.expr("assert_true(id < 0, 'this write fails in its job')").cast("int") + F.col("ts"))
    with pytest.raises(Exception, match="this write fails"):
        hudi_write(failing, base, HUDI_TABLE)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, "report", str(base), "--format", "json")
    assert code == 0, err
    (t,) = json.loads(out)["tables"]
    assert t["error"] is None
    _, shown, _ = cli(capsys, "show", str(base), "--format", "json")
    shown = json.loads(shown)
    assert (t["files"]["count"], t["files"]["bytes"]) == (shown["fileGroups"], shown["totalBytes"])
    assert t["summary"]["headInstant"] == shown["headInstant"] == t["timeline"]["lastCommit"]
    assert t["services"]["metadataTable"]["bytes"] == shown["metadataTable"]["bytes"] > 0
    # every write Hudi completed, archived or active, and the rows Hudi reads in the latest slices
    timeline = t["timeline"]
    assert timeline["commits"] == UPSERTS + 1 and timeline["archivedInstants"] > 0
    assert timeline["byAction"]["replacecommit"] == 1 and timeline["byOperation"]["INSERT_OVERWRITE"] == 1
    assert timeline["byOperation"]["UPSERT"] == UPSERTS
    assert t["partitions"]["rows"] == len(hudi_rows(hudi, base))
    active_cleans = len(list((base / ".hoodie").glob("*.clean")))
    assert timeline["cleans"]["count"] >= active_cleans > 0
    # Hudi's archive entries type actionState as a string: the report decodes its completed entries only
    table = HudiTable.open(str(base))
    full, done = ArchivedTimeline.of(table), ArchivedTimeline.of(table, completed_only=True)
    assert done.records == {i: r for i, r in full.records.items() if i.is_completed} and len(done.records) < len(full.records)
    assert all(_state_is_text(b.header[Header.SCHEMA]) for f in archive_files(table.storage, table.base)
               for b in read_blocks(table.storage.read_bytes(f.path)))
    (failed,) = timeline["pending"]   # the failed write, until a writer rolls it back
    assert failed["action"] == "commit" and failed["state"] in ("requested", "inflight")
    assert all(c["seconds"] is None or c["seconds"] >= 0 for c in timeline["recent"])
    page = tmp_path / "report.html"
    page.write_text(render_html(json.loads(out)))
    assert page.read_text().count('data-chart="') >= 4 and "<script" not in page.read_text()
    assert_page_renders(page, tables=1)

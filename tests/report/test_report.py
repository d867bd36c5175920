"""`tablespec report` on a demo-like warehouse tablespec wrote (no JVM): its JSON numbers are the
ones `show` prints and the file system holds, the HTML is one self-contained page, and a table that
cannot be read is reported as such while the others still are."""
from __future__ import annotations

import json
import os
import re
import shutil
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _support import cli, table_files
from report_support import write_warehouse

from tablespec.hudi.formats.naming import BaseFileName

TABLES = ("sales/orders", "web/events", "ops/logs")


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, Path]:
    return write_warehouse(tmp_path_factory.mktemp("report"))


@pytest.fixture
def warehouse(written, tmp_path, monkeypatch) -> tuple[Path, Path]:
    """A copy of the written warehouse (a test may damage it), with the cwd in a folder of no project."""
    specs, wh = written
    root = tmp_path / "copy"
    shutil.copytree(specs, root / "specs")
    shutil.copytree(wh, root / "warehouse")
    monkeypatch.chdir(root)
    monkeypatch.delenv("TABLESPEC_WAREHOUSE", raising=False)
    monkeypatch.delenv("TABLESPEC_CATALOG", raising=False)
    return root / "specs", root / "warehouse"


def _report_json(capsys, *argv: str) -> tuple[int, dict, str]:
    code, out, err = cli(capsys, "report", *argv, "--format", "json")
    return code, json.loads(out), err


def _by_name(report: dict) -> dict[str, dict]:
    return {t["location"].split("/warehouse/")[1]: t for t in report["tables"]}


def _on_disk(base: Path) -> dict[str, dict[str, tuple[str, int, int]]]:
    """What the file system holds: partition -> file id -> (instant, bytes, rows) of its newest base
    file written by a completed instant (one whose completed file is in .hoodie/, or that left
    .hoodie/ for the archive), less the file groups a completed replacecommit replaced."""
    meta = base / ".hoodie"
    replaced = set()
    for done in meta.glob("*.replacecommit"):
        replaced |= {i for ids in json.loads(done.read_text())["partitionToReplaceFileIds"].values() for i in ids}
    out: dict[str, dict] = defaultdict(dict)
    for path in base.rglob("*.parquet"):
        name = BaseFileName.parse(path.name)
        if ".hoodie" in path.parts or name is None or name.file_id in replaced:
            continue
        on_timeline = {f.name for f in meta.glob(f"{name.instant}.*")}
        if on_timeline and not on_timeline & {f"{name.instant}.commit", f"{name.instant}.replacecommit"}:
            continue   # a pending write's file
        partition = path.parent.relative_to(base).as_posix()
        if name.file_id not in out[partition] or out[partition][name.file_id][0] < name.instant:
            out[partition][name.file_id] = (name.instant, path.stat().st_size, pq.ParquetFile(path).metadata.num_rows)
    return out


def test_json_numbers_equal_what_show_and_the_file_system_say(warehouse, capsys):
    specs, wh = warehouse
    code, report, err = _report_json(capsys, str(specs), str(wh / "ops/logs"), "--warehouse", str(wh))
    assert code == 0, err
    tables = _by_name(report)
    assert sorted(tables) == sorted(TABLES)
    for rel, t in tables.items():
        base = wh / rel
        assert t["error"] is None
        code, out, err = cli(capsys, "show", str(base), "--format", "json")
        shown = json.loads(out)
        # what show says
        assert t["files"]["count"] == shown["fileGroups"]
        assert t["files"]["bytes"] == shown["totalBytes"]
        assert {p["partition"]: p["files"] for p in t["files"]["byPartition"]} == shown["fileGroupsPerPartition"]
        assert t["summary"]["headInstant"] == shown["headInstant"] == t["timeline"]["lastCommit"]
        assert t["services"]["metadataTable"]["bytes"] == shown["metadataTable"]["bytes"]
        assert t["partitions"]["count"] == shown["partitions"]
        # what the file system holds
        disk = _on_disk(base)
        sizes = sorted(s for files in disk.values() for _, s, _ in files.values())
        assert t["files"]["bytes"] == sum(sizes) and t["files"]["count"] == len(sizes)
        assert t["files"]["percentiles"]["p0"] == sizes[0] and t["files"]["percentiles"]["p100"] == sizes[-1]
        assert sum(b["files"] for b in t["files"]["histogram"]) == len(sizes)
        assert t["files"]["smallFiles"] == sum(1 for s in sizes if s < t["files"]["smallFileLimit"])
        assert {p["partition"]: (p["bytes"], p["rows"]) for p in t["partitions"]["byPartition"]} == {
            p: (sum(s for _, s, _ in files.values()), sum(r for _, _, r in files.values())) for p, files in disk.items()}
        mdt = base / ".hoodie" / "metadata"
        assert t["services"]["metadataTable"]["bytes"] == sum(f.stat().st_size for f in mdt.rglob("*") if f.is_file())
        assert sum(p["bytes"] for p in t["services"]["metadataTable"]["byPartition"]) == shown["metadataTable"]["bytes"]
        # the timeline: commit files on disk and in the archive, every duration measured
        active = [f for f in (base / ".hoodie").iterdir() if re.fullmatch(r"\d{17}\.(commit|replacecommit)", f.name)]
        assert t["timeline"]["commits"] - sum(c["archived"] for c in t["timeline"]["recent"]) == len(active)
        assert all(c["seconds"] is not None and c["seconds"] >= 0 for c in t["timeline"]["recent"])
        written_rows = sum(sum(s["numWrites"] for stats in json.loads(f.read_text())["partitionToWriteStats"].values()
                               for s in stats) for f in active)
        assert sum(c["rows"] for c in t["timeline"]["recent"] if not c["archived"]) == written_rows
    orders, events, logs = tables["sales/orders"], tables["web/events"], tables["ops/logs"]
    # orders: four buckets filled in each partition, the clean deleted what the commits wrote and the disk lacks
    assert [(b["buckets"], b["filled"]) for b in orders["partitions"]["buckets"]["byPartition"]] == [(4, 4), (4, 4)]
    commit_files = {s["path"] for f in (wh / "sales/orders/.hoodie").glob("*commit")
                    for stats in json.loads(f.read_text())["partitionToWriteStats"].values() for s in stats}
    missing = sum(1 for p in commit_files if not (wh / "sales/orders" / p).exists())
    assert orders["timeline"]["cleans"] == {"count": 1, "filesDeleted": missing, "last": orders["timeline"]["cleans"]["last"]}
    assert missing > 0
    assert orders["timeline"]["byAction"] == {"clean": 1, "commit": 4, "replacecommit": 1}
    assert orders["timeline"]["byOperation"] == {"INSERT": 1, "INSERT_OVERWRITE": 1, "UPSERT": 3}
    per_day: dict[str, int] = defaultdict(int)   # writes per day by action and operation, other instants by action
    for day in orders["timeline"]["byDay"]:
        for kind, n in day.items():
            per_day[kind] += 0 if kind == "day" else n
    assert dict(per_day) == {"day": 0, "clean": 1, "commit INSERT": 1, "commit UPSERT": 3,
                             "replacecommit INSERT_OVERWRITE": 1}
    # logs: 8 commits written, 2 left active, the rest read back from the archive
    assert logs["timeline"]["commits"] == 8 and logs["timeline"]["archivedInstants"] == 6
    assert logs["timeline"]["archive"]["files"] == len(list((wh / "ops/logs/.hoodie/archived").iterdir()))
    assert [c["rows"] for c in logs["timeline"]["recent"]] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert logs["drift"] is None and logs["services"]["due"] is None
    # events: the write whose writer died is pending, failed, and costs the score
    assert [(p["state"], p["failed"]) for p in events["timeline"]["pending"]] == [("inflight", True)]
    assert any(r["points"] == -15 and "failed write" in r["reason"] for r in events["reasons"])
    assert events["services"]["due"][0]["kind"] == "rollback"
    overview = report["overview"]
    assert overview["tables"] == 3 and overview["readable"] == 3 and overview["failedWrites"] == 1
    assert overview["bytes"] == sum(t["files"]["bytes"] for t in tables.values())


def test_the_plan_s_wording_and_advice_are_the_report_s(warehouse, capsys):
    """Drift and bucket advice are what `plan` says: a spec changed since apply shows up in the plan's words."""
    specs, wh = warehouse
    orders = specs / "orders.yaml"
    orders.write_text(orders.read_text().replace("metadata: {name: orders, database: sales}",
                                                 "metadata: {name: orders, database: sales, labels: {team: payments}}"))
    code, report, _ = _report_json(capsys, str(orders), "--warehouse", str(wh))
    assert code == 0
    (t,) = report["tables"]
    _, plan_text, _ = cli(capsys, "plan", str(orders), "--warehouse", str(wh))
    assert not t["drift"]["inSync"] and t["drift"]["actions"][0]["kind"] == "update_settings"
    assert t["drift"]["planText"] == plan_text
    assert "consider numBuckets: 1" in t["partitions"]["buckets"]["advice"]
    assert t["partitions"]["buckets"]["advice"] in plan_text or "bucket" not in plan_text
    assert any("differs from its spec" in r["reason"] for r in t["reasons"])


def test_the_html_is_one_self_contained_page(warehouse, capsys):
    specs, wh = warehouse
    out = wh.parent / "report.html"
    code, _, err = cli(capsys, "report", str(specs), str(wh / "ops/logs"), "--warehouse", str(wh), "--out", str(out))
    assert code == 0 and f"to {out}" in err
    page = out.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page), "nothing is fetched"
    assert "<script" not in page and "@import" not in page and "url(" not in page
    sections = re.findall(r'<section class="table".*?</section>', page, re.S)
    assert len(sections) == 3
    for section in sections:
        charts = dict(re.findall(r'data-chart="(\w+)">(<svg.*?</svg>)</figure>', section, re.S))
        assert {"files", "partitions", "instants", "commits"} <= set(charts)
        assert all("<rect" in svg or "<path" in svg for svg in charts.values())
    assert 'data-chart="buckets"' in page and 'data-chart="scores"' in page


def test_commits_whose_durations_are_all_unknown_still_chart():
    """An object store's mtimes are whole seconds, so a commit can seem to finish before it began:
    its seconds are unknown (None). A chart of only such commits draws the rows alone (it raised)."""
    from tablespec.report.html import commits_chart
    recent = [{"instant": f"2026112912000{i}000", "rows": 10 * i, "seconds": None} for i in range(3)]
    svg = commits_chart({"recent": recent})
    assert "<path" in svg and "rows (left axis)" in svg and "seconds (right axis)" not in svg


def test_no_specs_here_reports_every_table_under_the_warehouse(warehouse, capsys):
    specs, wh = warehouse
    shutil.rmtree(specs)
    code, report, _ = _report_json(capsys, "--warehouse", str(wh))
    assert code == 0 and sorted(_by_name(report)) == sorted(TABLES)
    assert all(t["drift"] is None for t in report["tables"])   # no spec: nothing to compare with


def test_unreadable_tables_are_reported_and_the_others_still_are(warehouse, capsys):
    """A corrupt commit file, a damaged hoodie.properties, a commit whose instant time is no date and a
    path holding no table: each is reported for its table in one line (exit 1, no traceback), the
    other tables in full, and nothing is changed."""
    specs, wh = warehouse
    misdated = shutil.copytree(wh / "ops/logs", wh / "ops/misdated")   # its last commit: month 13
    last = sorted((misdated / ".hoodie").glob("*.commit"))[-1].name.split(".")[0]
    for f in (misdated / ".hoodie").glob(last + ".*"):
        f.rename(f.with_name(last[:4] + "13" + f.name[6:]))
    commit = sorted((wh / "web/events/.hoodie").glob("*.commit"))[0]
    commit.write_text('{"partitionToWriteStats": {"day=2026-11-01": [{"fileId": 7}]}')
    (wh / "ops/logs/.hoodie/hoodie.properties").write_bytes(b"hoodie.table.version=six\n\x00\xff")
    (wh / "empty").mkdir()
    before = table_files(wh)
    code, report, err = _report_json(capsys, str(specs), str(wh / "ops/logs"), str(wh / "empty"), str(misdated),
                                     "--warehouse", str(wh))
    assert code == 1
    assert table_files(wh) == before
    tables = {t["name"]: t for t in report["tables"]}
    assert tables["sales.orders"]["error"] is None and tables["sales.orders"]["files"]["count"] == 8
    events = tables["web.events"]
    assert str(commit) in events["error"] and events["score"] == 0 and events["grade"] == "poor"
    assert "files" not in events
    assert tables["logs"]["error"] and "hoodie.properties" in tables["logs"]["error"]
    assert "no Hudi table there" in tables["empty"]["error"]
    renamed = sorted((misdated / ".hoodie").glob("*.commit"))[-1]
    assert tables["misdated"]["error"] == f"{renamed}: its time is not a date and time (yyyyMMddHHmmss[SSS])"
    assert report["overview"]["unreadable"] == sorted(report["overview"]["unreadable"], key=list(tables).index)
    assert set(report["overview"]["unreadable"]) == {"web.events", "logs", "empty", "misdated"}
    lines = err.strip().splitlines()
    assert "Traceback" not in err and len([x for x in lines if x.startswith("error: ")]) == 4
    assert all(len(x) < 600 for x in lines)
    out = wh.parent / "bad.html"
    code, _, err = cli(capsys, "report", str(specs), str(wh / "ops/logs"), "--warehouse", str(wh), "--out", str(out))
    assert code == 1 and "2 could not be read" in err
    assert str(commit) in out.read_text() and out.read_text().count('<section class="table"') == 3


def test_bad_arguments_are_one_line_errors(warehouse, capsys):
    specs, wh = warehouse
    code, _, err = cli(capsys, "report", str(wh / "nowhere.txt"), "--warehouse", str(wh))
    assert code == 1 and err.startswith("error: ") and "no Hudi table there" in err
    code, _, err = cli(capsys, "report", str(specs), "--warehouse", str(wh), "--out", str(wh / "no/such/dir/r.html"))
    assert code == 1 and "its directory does not exist" in err
    shutil.rmtree(specs)   # no specs here, and a warehouse holding no table
    os.makedirs(wh.parent / "nothing")
    code, _, err = cli(capsys, "report", "--warehouse", str(wh.parent / "nothing"), "--out", "r.html")
    assert code == 1 and "no tables to report on" in err


def test_tables_read_in_worker_processes_report_what_one_process_does(warehouse, capsys, monkeypatch):
    """Many tables on local disk are read (and charted) by one worker process per core: the same report."""
    from tablespec.report import warehouse as report_warehouse
    specs, wh = warehouse
    for n in range(8):
        shutil.copytree(wh / "ops/logs", wh / f"many/logs{n}")
    shutil.rmtree(specs)
    argv = ("--warehouse", str(wh))
    assert (os.cpu_count() or 1) < 2 or 11 // report_warehouse.TABLES_PER_WORKER >= 2   # two workers, here
    _, spread, _ = _report_json(capsys, *argv)
    monkeypatch.setattr(report_warehouse, "TABLES_PER_WORKER", 10**6)
    _, alone, _ = _report_json(capsys, *argv)
    for r in (spread, alone):
        del r["createdAt"]
    assert spread == alone and spread["overview"]["tables"] == 11


def test_on_s3_the_report_reads_what_plan_reads_plus_the_instants_it_sums(written, s3_bucket, s3_server, capsys,
                                                                         tmp_path, monkeypatch):
    """On the loopback S3 server the report makes the requests `plan` makes (its listings served
    from one listing of each table) and one GET more at most per completed instant it sums
    (counted at the server); it writes nothing."""
    import boto3
    specs, local = written
    bucket = s3_bucket.removeprefix("s3://")
    client = boto3.client("s3", endpoint_url=s3_server.endpoint, region_name="us-east-1")
    for path in local.rglob("*"):
        if path.is_file():
            client.upload_file(str(path), bucket, f"wh/{path.relative_to(local).as_posix()}")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TABLESPEC_WAREHOUSE", raising=False)
    warehouse = f"{s3_bucket}/wh"
    s3_server.requests(reset=True)
    code, _, err = cli(capsys, "plan", str(specs), "--warehouse", warehouse)
    assert code == 0, err
    planned = s3_server.requests()
    s3_server.requests(reset=True)
    code, out, err = cli(capsys, "report", str(specs), "--warehouse", warehouse, "--format", "json")
    assert code == 0, err
    reported = s3_server.requests()
    tables = {t["name"]: t for t in json.loads(out)["tables"]}
    assert all(t["error"] is None for t in tables.values()) and tables["sales.orders"]["files"]["count"] == 8
    read = [p for rel in ("sales/orders", "web/events") for p in (local / rel / ".hoodie").iterdir()
            if re.fullmatch(r"\d{17}\.(commit|replacecommit|clean)", p.name)]
    assert not reported.get("PUT") and not reported.get("DELETE") and not reported.get("POST")
    assert reported["total"] <= planned["total"] + len(read), (planned, reported, len(read))


def test_a_version_9_table_times_its_commits_by_the_completion_times_in_their_names(tmp_path, capsys, monkeypatch):
    from report_support import EVENTS, commit

    from tablespec.actions.metadata import create_table
    from tablespec.hudi.formats.naming import new_file_id
    from tablespec.hudi.table import HudiTable
    from tablespec.hudi.timeline.instant import parse_instant_time
    from tablespec.spec.loader import load_spec_text
    spec = load_spec_text(EVENTS.replace("location: web/events", "location: web/events\n  tableVersion: 9"), "e.yaml").specs[0]
    table = HudiTable.open(str(tmp_path / "events9"))
    create_table(table, spec.spec)
    for n in range(3):
        commit(table, {("day=2026-11-01", new_file_id()): 3 + n}, operation="INSERT")
    monkeypatch.chdir(tmp_path)
    code, report, err = _report_json(capsys, str(tmp_path / "events9"))
    assert code == 0, err
    (t,) = report["tables"]
    assert t["summary"]["tableVersion"] == 9 and t["partitions"]["rows"] == 3 + 4 + 5
    names = sorted(f.name for f in (tmp_path / "events9/.hoodie/timeline").iterdir() if f.name.endswith(".commit"))
    took = [round((parse_instant_time(n[18:35]) - parse_instant_time(n[:17])).total_seconds(), 3) for n in names]
    assert [c["seconds"] for c in t["timeline"]["recent"]] == took


def test_a_table_plan_refuses_is_reported_with_the_refusal_as_its_drift(warehouse, capsys):
    specs, wh = warehouse
    props = wh / "sales/orders/.hoodie/hoodie.properties"
    props.write_text(props.read_text().replace("hoodie.table.type=COPY_ON_WRITE", "hoodie.table.type=MERGE_ON_READ"))
    code, report, _ = _report_json(capsys, str(specs / "orders.yaml"), "--warehouse", str(wh))
    assert code == 0
    (t,) = report["tables"]
    assert t["files"]["count"] == 8 and t["services"]["due"] is None
    assert "does not convert it back" in t["drift"]["error"] and t["drift"]["inSync"] is None
    assert any(r["reason"].startswith("not planned: ") for r in t["reasons"])
    assert report["overview"]["drifted"] == ["sales.orders"]


def test_a_merge_on_read_table_shows_its_compaction_backlog_and_due_compaction_as_a_service(real_table, tmp_path,
                                                                                          capsys, monkeypatch):
    """A merge-on-read table Apache Hudi wrote (two deltacommits, one log file): its compaction backlog is
    in the services section, and the compaction its spec makes due is a service due, not drift."""
    base = real_table("mor_parquet_v6_simplekeygen_nonhivestyle")
    monkeypatch.chdir(tmp_path)
    code, spec, err = cli(capsys, "import", str(base))
    assert code == 0, err
    spec_file = tmp_path / "t.yaml"
    spec_file.write_text(spec + "  compaction: {runBy: tablespec, deltaCommits: 1}\n")
    code, report, err = _report_json(capsys, str(spec_file), "--warehouse", str(base.parent))
    assert code == 0, err
    (t,) = report["tables"]
    logs = [f for f in base.rglob(".*.log.*") if f.is_file()]
    assert t["services"]["compaction"] == {"last": None, "deltaCommitsSince": 2, "pendingPlans": [], "slicesWithLogs": 1,
                                           "logFiles": len(logs), "logBytes": sum(f.stat().st_size for f in logs)}
    assert [d["kind"] for d in t["services"]["due"]] == ["compaction"]
    assert [a["kind"] for a in t["drift"]["actions"]] == ["update_settings"]   # the spec's new compaction settings

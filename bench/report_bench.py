"""Report cost at scale: `tablespec report` of 100 tables with 1,000 commits each, on local disk.

Creates the tables from generated specs (hoodie.properties as `apply` writes them, without Hudi's
metadata table: as a Hudi job with it off leaves a table, so the plan proposes building it), gives
each 1,000 commits over 60 days with Hudi's commit metadata (one bucket file group of four
partitions rewritten per commit; the newest base file of each file group on disk), and archives
every other table as Hudi's archiver would by default (30 commits kept active), so both timelines
are read. Then times the report (the CLI, in process) as JSON and as HTML, best of `--repeat`,
against the goal (at most 10 s for the HTML report of 100 tables), and prints where the time went.

Prints a table and writes JSON (default bench/results/report_bench.json). No Spark, no JVM.

    python bench/report_bench.py [--tables 100] [--commits 1000] [--repeat 3] [--profile 25]
    python bench/report_bench.py --quick      # development: 10 tables of 200 commits
    python bench/report_bench.py --keep /tmp/rb100   # builds the tables there once, reuses them after
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import _common  # noqa: F401  (puts this checkout first on sys.path, as the other benches do)
import pyarrow as pa
import pyarrow.parquet as pq
from plan_bench import SPEC, profile_top

from tablespec.actions.metadata import creation_properties
from tablespec.cli import main as cli
from tablespec.hudi.archive import ArchiveSettings, archive
from tablespec.hudi.config import TableConfig, init_table, read_table_config
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.formats.naming import BaseFileName, bucket_file_id
from tablespec.hudi.formats.partition import write_partition_metadata
from tablespec.hudi.io import LocalStorage, table_location
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.instant import format_instant_time
from tablespec.report import warehouse as report_warehouse
from tablespec.spec.loader import load_specs

GOAL_S = 10.0
"""The HTML report of 100 tables with 1,000 commits each, on local disk: at most this many seconds."""
PARTITIONS, BUCKETS = 4, 16
START = datetime(2026, 9, 1, tzinfo=UTC)


def write_commits(location: str, commits: int, parquet: bytes) -> None:
    """`commits` completed commits, each rewriting one bucket file group of one partition (its
    previous base file gone, as a clean leaves it) and recording the table schema, as writers'
    commits do; the files written as Hudi's writer names them."""
    storage, meta = LocalStorage(), Path(location, ".hoodie")
    schema = read_table_config(storage, location).create_schema
    step = timedelta(days=60) / commits
    newest: dict[tuple[str, str], str] = {}
    for n in range(commits):
        when = START + n * step
        ts = format_instant_time(when)
        part, bucket = f"day=2026-11-{n % PARTITIONS + 1:02d}", n % BUCKETS
        fid = bucket_file_id(bucket, f"00000000-0000-0000-0000-{bucket:012d}")
        name = BaseFileName(fid, "0-1-1", ts).format()
        if n < PARTITIONS:
            os.makedirs(f"{location}/{part}", exist_ok=True)
            write_partition_metadata(storage, location, part, ts)
        previous = newest.get((part, fid))
        stat = WriteStat(file_id=fid, path=f"{part}/{name}", prev_commit=previous or "null", num_writes=100 + n % 7,
                         num_inserts=10, num_update_writes=90 + n % 7, total_write_bytes=len(parquet),
                         file_size_in_bytes=len(parquet), partition_path=part)
        newest[(part, fid)] = ts
        metadata = CommitMetadata({part: [stat]}, operation_type="UPSERT", extra_metadata={"schema": schema})
        (meta / f"{ts}.commit.requested").write_bytes(b"")
        (meta / f"{ts}.inflight").write_bytes(b"")
        (meta / f"{ts}.commit").write_bytes(metadata.to_json())
        done = (when + timedelta(seconds=5 + n % 20)).timestamp()
        os.utime(meta / f"{ts}.commit", (done, done))
    for (part, fid), ts in newest.items():
        Path(location, part, BaseFileName(fid, "0-1-1", ts).format()).write_bytes(parquet)


def _cpu() -> float:
    """CPU seconds of this process and its finished children (worker processes, if any)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def report_cli(specs: Path, warehouse: Path, out: Path, fmt: str) -> None:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = cli(["report", str(specs), "--warehouse", str(warehouse), "--format", fmt, "--out", str(out)])
    assert code == 0, err.getvalue()[-2000:]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=100)
    ap.add_argument("--commits", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3, help="timed reports (the best counts)")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="print the N costliest functions of one more HTML report, made in one process")
    ap.add_argument("--quick", action="store_true", help="development size: 10 tables of 200 commits")
    ap.add_argument("--keep", metavar="DIR", help="build the specs and tables in DIR and keep them; "
                    "a later run with the same DIR, --tables and --commits reuses them (setup takes minutes)")
    ap.add_argument("--out", default="bench/results/report_bench.json")
    args = ap.parse_args()
    if args.quick:
        args.tables, args.commits = 10, 200
    sink = io.BytesIO()
    pq.write_table(pa.table({"_hoodie_commit_time": ["x"], "id": ["a"]}), sink)
    parquet = sink.getvalue()
    with contextlib.ExitStack() as stack:
        tmp = (Path(args.keep, f"{args.tables}x{args.commits}") if args.keep
               else Path(stack.enter_context(tempfile.TemporaryDirectory())))
        specs, warehouse, out = tmp / "specs", tmp / "warehouse", tmp / "report"
        built = tmp / "built"   # written last: the tables in DIR are complete
        t0 = time.perf_counter()
        archived = args.tables // 2
        if not built.exists():
            shutil.rmtree(tmp, ignore_errors=True)
            specs.mkdir(parents=True)
            for i in range(args.tables):
                (specs / f"t{i:04d}.yaml").write_text(SPEC.format(i=i, buckets=BUCKETS, keep=10))
            for i, ls in enumerate(load_specs([str(specs)]).specs):
                loc = table_location(str(warehouse), ls.spec.spec.location)
                props = creation_properties(ls.spec)
                init_table(LocalStorage(), loc, TableConfig.from_properties(props), props)
                write_commits(loc, args.commits, parquet)
                if i % 2:   # as Hudi's archiver keeps it by default: 20 to 30 commits active
                    archive(HudiTable.open(loc), ArchiveSettings(min_commits=20, max_commits=30, cleaner_commits_retained=10))
            built.write_text("")
        setup = time.perf_counter() - t0
        timings: dict[str, list[float]] = {"json": [], "html": []}
        cpu: dict[str, list[float]] = {"json": [], "html": []}
        for _ in range(args.repeat):
            for fmt in timings:
                t, c = time.perf_counter(), _cpu()
                report_cli(specs, warehouse, out.with_suffix("." + fmt), fmt)
                timings[fmt].append(time.perf_counter() - t)
                cpu[fmt].append(_cpu() - c)
        report = json.loads(out.with_suffix(".json").read_text())
        html_bytes = out.with_suffix(".html").stat().st_size
        if args.profile:   # in this process: cProfile sees no worker's work
            report_warehouse.TABLES_PER_WORKER = 10**9
        profile = profile_top(lambda: report_cli(specs, warehouse, out.with_suffix(".html"), "html"),
                              args.profile) if args.profile else []
    n = args.tables
    best = {fmt: min(runs) for fmt, runs in timings.items()}
    commits = sum(t["timeline"]["commits"] for t in report["tables"])
    assert commits == n * args.commits, f"the report counted {commits} commits, {n * args.commits} were written"
    print(f"{n} tables x {args.commits} commits ({archived} tables archived past 30 commits); setup {setup:.1f}s; "
          f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{'report':<10}{'best s':>10}{'per table ms':>15}{'CPU s':>10}  runs (wall s)")
    for fmt, runs in timings.items():
        print(f"{fmt:<10}{best[fmt]:>10.2f}{best[fmt] / n * 1000:>15.1f}{min(cpu[fmt]):>10.2f}  "
              f"{', '.join(f'{s:.2f}' for s in runs)}")
    met = best["html"] <= GOAL_S
    print(f"HTML report of {n} tables: {best['html']:.2f}s ({html_bytes / 2**20:.1f} MiB); goal <= {GOAL_S:g}s "
          f"(100 tables): {'met' if met else 'NOT met'}")
    if profile:
        print(f"\ncostliest functions of one more HTML report, in one process (cProfile, by own time; {n} tables)")
        print(f"{'own s':>8}{'cum s':>8}{'calls':>9}  function")
        for row in profile:
            print(f"{row['own_s']:>8.3f}{row['cumulative_s']:>8.3f}{row['calls']:>9}  {row['function']}")
    result = {"tables": n, "commits_per_table": args.commits, "archived_tables": archived, "setup_s": setup,
              "load_average": os.getloadavg(), "runs_s": timings, "cpu_s": cpu, "best_s": best, "html_bytes": html_bytes,
              "goal_s": GOAL_S, "met": met, "commits_counted": commits, "profile_top": profile}
    _common.write_report(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

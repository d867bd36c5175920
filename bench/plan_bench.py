"""Plan cost at scale: 500 generated specs against 500 existing tables, metadata only.

Creates the tables through `apply` (metadata), gives each a few commits of small parquet files
written with the Hudi timeline API (each commit records the table schema, as writers' do), then:

1. times `tablespec plan` (the CLI, in process, output discarded) of every table unchanged, best
   of `--repeat`, in ms per unchanged table against the goal (at most 7 ms per table on local
   disk, no JVM); `--profile N` also prints the N costliest functions of one more such plan
   (cProfile, by own time) and keeps them in the JSON;
2. changes a fifth of the specs and times `plan` phase by phase (load+validate, observe, diff,
   render).

Prints tables and writes JSON (default bench/results/plan_bench.json).

No Apache Hudi peer: planning is tablespec's own (Hudi has no desired-state diff; the closest Hudi
work, reading each table's timeline and hoodie.properties, is what `observe` times here), and no
Spark is started.

    python bench/plan_bench.py [--tables 500] [--commits 3] [--partitions 4] [--repeat 3] [--profile 25]
    python bench/plan_bench.py --tables 200 --profile 25      # the unchanged-plan goal's measurement
    python bench/plan_bench.py --quick      # development: 50 tables
"""
from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import random
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (puts this checkout first on sys.path, as the other benches do)
import pyarrow as pa
import pyarrow.parquet as pq

from tablespec.actions.metadata import create_table
from tablespec.cli import main as cli
from tablespec.hudi.config import read_table_config
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.formats.naming import BaseFileName, new_file_id
from tablespec.hudi.formats.partition import write_partition_metadata
from tablespec.hudi.io import LocalStorage, table_location
from tablespec.hudi.mdt import sync as mdt_sync
from tablespec.hudi.table import HudiTable, Location  # noqa: E402
from tablespec.hudi.timeline.active import TimelineWriter
from tablespec.hudi.timeline.instant import new_instant_time
from tablespec.plan.builder import build_plan
from tablespec.plan.render import render
from tablespec.spec.loader import load_specs
from tablespec.state import observe

SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata:
  name: t{i:04d}
  database: bench
spec:
  location: bench/t{i:04d}
  columns:
    - {{name: id, type: string, nullable: false}}
    - {{name: amount, type: "decimal(12,2)"}}
    - {{name: ts, type: timestamp}}
    - {{name: day, type: string}}
  recordKey: {{fields: [id]}}
  partitioning: {{fields: [day]}}
  orderingField: ts
  index: {{type: BUCKET, numBuckets: {buckets}}}
  retention: {{keepCommits: {keep}}}
"""


def typed(spec: str, table_type: str) -> str:
    """`spec` (SPEC formatted) as a table of `table_type`."""
    return spec if table_type == "COPY_ON_WRITE" else spec.replace("  recordKey:", f"  tableType: {table_type}\n  recordKey:", 1)


GOAL_MS = 7.0
"""`plan` of an unchanged table on local disk, no JVM: at most this many ms per table."""


def write_commits(location: str, commits: int, partitions: int, action: str = "commit") -> None:
    """A few completed commits (`action`: deltacommits on merge-on-read tables) of tiny parquet files,
    so observe has real listings to read; each records the table schema, as writers' commits do
    (readers take the latest)."""
    storage = LocalStorage()
    schema = read_table_config(storage, location).create_schema
    writer = TimelineWriter(storage, location)
    last = None
    table = pa.table({"_hoodie_commit_time": ["x"], "id": ["a"]})
    for _ in range(commits):
        ts = new_instant_time(after=last)
        last = ts
        instant = writer.start(writer.request(action, ts))
        stats = {}
        for p in range(partitions):
            part = f"day=2026-11-{p + 1:02d}"
            os.makedirs(f"{location}/{part}", exist_ok=True)
            write_partition_metadata(storage, location, part, ts)
            fid = new_file_id()
            name = BaseFileName(fid, "0-1-1", ts).format()
            pq.write_table(table, f"{location}/{part}/{name}")
            size = os.path.getsize(f"{location}/{part}/{name}")
            stats[part] = [WriteStat(file_id=fid, path=f"{part}/{name}", num_writes=1, num_inserts=1,
                                     total_write_bytes=size, file_size_in_bytes=size, partition_path=part)]
        metadata = CommitMetadata(partition_to_write_stats=stats, operation_type="UPSERT", extra_metadata={"schema": schema})
        recorded = mdt_sync.record_commit(HudiTable.open(location), ts, metadata)   # Hudi's metadata table first, as writers do
        writer.complete(instant, metadata.to_json(), after=mdt_sync.completed_by(recorded))


def plan_cli(specs_dir: Path, warehouse: Path) -> None:
    """`tablespec plan` as users run it (in process, output discarded); every table unchanged."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli(["plan", str(specs_dir), "--warehouse", str(warehouse), "--detailed-exitcode"])
    assert code == 0, out.getvalue()[-2000:]


def profile_top(run, top: int) -> list[dict]:
    """The `top` functions of one `run()` by own time (cProfile), with their cumulative time."""
    profiler = cProfile.Profile()
    profiler.runcall(run)
    stats = pstats.Stats(profiler)
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]  # type: ignore[attr-defined]
    return [{"function": f"{Path(file).name}:{line}({name})", "calls": calls, "own_s": round(own, 4), "cumulative_s": round(cum, 4)}
            for (file, line, name), (_, calls, own, cum, _) in rows]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=500)
    ap.add_argument("--commits", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3, help="timed plans of the unchanged tables (the best counts)")
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="print the N costliest functions of an unchanged plan")
    ap.add_argument("--quick", action="store_true", help="development size: 50 tables")
    ap.add_argument("--table-type", choices=("COPY_ON_WRITE", "MERGE_ON_READ"), default="COPY_ON_WRITE",
                    help="the tables' type (merge-on-read: their commits are deltacommits)")
    ap.add_argument("--out", default="bench/results/plan_bench.json")
    args = ap.parse_args()
    if args.quick:
        args.tables = 50
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        specs_dir, warehouse = Path(tmp, "specs"), Path(tmp, "warehouse")
        specs_dir.mkdir()
        for i in range(args.tables):
            (specs_dir / f"t{i:04d}.yaml").write_text(typed(SPEC.format(i=i, buckets=16, keep=10), args.table_type))
        t0 = time.perf_counter()
        for ls in load_specs([str(specs_dir)]).specs:
            loc = table_location(str(warehouse), ls.spec.spec.location)
            create_table(HudiTable.open(loc), ls.spec)
            write_commits(loc, args.commits, args.partitions,
                          "deltacommit" if args.table_type == "MERGE_ON_READ" else "commit")
        setup = time.perf_counter() - t0
        unchanged = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            plan_cli(specs_dir, warehouse)
            unchanged.append(time.perf_counter() - t)
        profile = profile_top(lambda: plan_cli(specs_dir, warehouse), args.profile) if args.profile else []
        for i in rng.sample(range(args.tables), args.tables // 5):  # a fifth of the specs change
            (specs_dir / f"t{i:04d}.yaml").write_text(typed(SPEC.format(i=i, buckets=16, keep=20), args.table_type))

        timings = {}
        t = time.perf_counter()
        loaded = load_specs([str(specs_dir)])
        timings["load+validate"] = time.perf_counter() - t
        t = time.perf_counter()
        states = {}
        for ls in loaded.specs:
            loc = table_location(str(warehouse), ls.spec.spec.location)
            states[loc] = observe(HudiTable.open(loc))
        timings["observe"] = time.perf_counter() - t
        t = time.perf_counter()
        plan = build_plan(loaded.specs, states, Location.parse(str(warehouse)))
        timings["diff"] = time.perf_counter() - t
        t = time.perf_counter()
        text = render(plan, "text")
        render(plan, "json")
        timings["render"] = time.perf_counter() - t
    total = sum(timings.values())
    n = args.tables
    unchanged_ms = min(unchanged) / n * 1000
    print(f"{n} {args.table_type} tables ({args.commits} commits x {args.partitions} partitions each); setup {setup:.1f}s; "
          f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"plan (CLI) of {n} unchanged tables: {unchanged_ms:.2f} ms per table, best of {args.repeat} "
          f"({', '.join(f'{s / n * 1000:.2f}' for s in unchanged)}); goal <= {GOAL_MS:g} ms: "
          f"{'met' if unchanged_ms <= GOAL_MS else 'NOT met'}")
    if profile:
        print(f"\ncostliest functions of one more unchanged plan (cProfile, by own time; {n} tables)")
        print(f"{'own s':>8}{'cum s':>8}{'calls':>9}  function")
        for row in profile:
            print(f"{row['own_s']:>8.3f}{row['cumulative_s']:>8.3f}{row['calls']:>9}  {row['function']}")
    print(f"\nplan of {n} specs against {n} tables, a fifth of the specs changed")
    print(f"{'phase':<16}{'total s':>10}{'per table ms':>15}")
    for phase, secs in timings.items():
        print(f"{phase:<16}{secs:>10.3f}{secs / n * 1000:>15.3f}")
    print(f"{'total':<16}{total:>10.3f}{total / n * 1000:>15.3f}")
    print(text.strip().splitlines()[-1])
    result = {"tables": n, "table_type": args.table_type, "commits_per_table": args.commits, "partitions_per_table": args.partitions,
              "load_average": os.getloadavg(),
              "unchanged_plan": {"runs_ms_per_table": [s / n * 1000 for s in unchanged], "ms_per_table": unchanged_ms,
                                 "goal_ms_per_table": GOAL_MS, "met": unchanged_ms <= GOAL_MS, "profile_top": profile},
              "phases_s": timings, "total_s": total, "per_table_ms": total / n * 1000,
              "changed_tables": plan.summary()["update"]}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

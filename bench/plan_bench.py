"""Plan cost at scale: 500 generated specs against 500 existing tables, metadata only.

Creates the tables through `apply` (metadata), gives each a few commits of small parquet files
written with the Hudi timeline API, changes some specs, then times `plan` phase by phase.
Prints a table and writes JSON (default bench/results/plan_bench.json).

No Apache Hudi peer: planning is tablespec's own (Hudi has no desired-state diff; the closest Hudi
work, reading each table's timeline and hoodie.properties, is what `observe` times here), and no
Spark is started.

    python bench/plan_bench.py [--tables 500] [--commits 3] [--partitions 4]
    python bench/plan_bench.py --quick      # development: 50 tables
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (puts this checkout first on sys.path, as the other benches do)
import pyarrow as pa
import pyarrow.parquet as pq

from tablespec.actions.metadata import create_table
from tablespec.hudi.commit import CommitMetadata, WriteStat
from tablespec.hudi.instant import new_instant_time
from tablespec.hudi.io import LocalStorage, table_location
from tablespec.hudi.naming import BaseFileName, new_file_id
from tablespec.hudi.partition import write_partition_metadata
from tablespec.hudi.table import HudiTable, Location  # noqa: E402
from tablespec.hudi.timeline import TimelineWriter
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


def write_commits(location: str, commits: int, partitions: int) -> None:
    """A few completed commits of tiny parquet files, so observe has real listings to read."""
    storage = LocalStorage()
    writer = TimelineWriter(storage, location)
    last = None
    table = pa.table({"_hoodie_commit_time": ["x"], "id": ["a"]})
    for _ in range(commits):
        ts = new_instant_time(after=last)
        last = ts
        instant = writer.start(writer.request("commit", ts))
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
        writer.complete(instant, CommitMetadata(partition_to_write_stats=stats, operation_type="UPSERT").to_json())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=500)
    ap.add_argument("--commits", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--quick", action="store_true", help="development size: 50 tables")
    ap.add_argument("--out", default="bench/results/plan_bench.json")
    args = ap.parse_args()
    if args.quick:
        args.tables = 50
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        specs_dir, warehouse = Path(tmp, "specs"), Path(tmp, "warehouse")
        specs_dir.mkdir()
        for i in range(args.tables):
            (specs_dir / f"t{i:04d}.yaml").write_text(SPEC.format(i=i, buckets=16, keep=10))
        t0 = time.perf_counter()
        for ls in load_specs([str(specs_dir)]).specs:
            loc = table_location(str(warehouse), ls.spec.spec.location)
            create_table(HudiTable.open(loc), ls.spec)
            write_commits(loc, args.commits, args.partitions)
        setup = time.perf_counter() - t0
        for i in rng.sample(range(args.tables), args.tables // 5):  # a fifth of the specs change
            (specs_dir / f"t{i:04d}.yaml").write_text(SPEC.format(i=i, buckets=16, keep=20))

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
    print(f"plan of {n} specs against {n} tables ({args.commits} commits x {args.partitions} partitions each); "
          f"setup {setup:.1f}s")
    print(f"{'phase':<16}{'total s':>10}{'per table ms':>15}")
    for phase, secs in timings.items():
        print(f"{phase:<16}{secs:>10.3f}{secs / n * 1000:>15.3f}")
    print(f"{'total':<16}{total:>10.3f}{total / n * 1000:>15.3f}")
    print(text.strip().splitlines()[-1])
    result = {"tables": n, "commits_per_table": args.commits, "partitions_per_table": args.partitions,
              "phases_s": timings, "total_s": total, "per_table_ms": total / n * 1000,
              "changed_tables": plan.summary()["update"]}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

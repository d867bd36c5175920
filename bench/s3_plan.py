"""`plan` on object storage: 500 tables on a loopback S3 API server against the same on local disk.

Creates the tables (metadata through `apply`'s create, then a few commits of small parquet files
through the timeline API, as bench/plan_bench.py does) in a local warehouse and in an `s3://`
one on moto's S3 server (tests/s3server.py, HTTP on 127.0.0.1; requests and bytes are counted
by the server, whatever the client sends). Then runs `tablespec plan` (the CLI, in process) on
both, the specs unchanged, and prints per table: S3 requests (by method), ms, and local ms.
A data action (an upsert through Spark, `--data`) is then run on both warehouses and the bytes
the server received and sent are set against the bytes of the files the commit wrote and read.
Writes JSON (default bench/results/s3_plan.json).

    python bench/s3_plan.py [--tables 500] [--commits 3] [--partitions 4] [--no-data]
    python bench/s3_plan.py --quick      # 50 tables
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)

from plan_bench import typed  # noqa: E402
from s3server import S3Server  # noqa: E402

from tablespec.actions.metadata import create_table  # noqa: E402
from tablespec.cli import main as cli  # noqa: E402
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat  # noqa: E402
from tablespec.hudi.formats.naming import BaseFileName, new_file_id  # noqa: E402
from tablespec.hudi.formats.partition import write_partition_metadata  # noqa: E402
from tablespec.hudi.io import (  # noqa: E402
    join,
    table_location,  # noqa: E402
)
from tablespec.hudi.mdt import sync as mdt_sync  # noqa: E402
from tablespec.hudi.table import HudiTable, Location  # noqa: E402
from tablespec.hudi.timeline.active import TimelineWriter  # noqa: E402
from tablespec.hudi.timeline.instant import new_instant_time  # noqa: E402
from tablespec.spec.loader import load_specs  # noqa: E402

SPEC = (Path(__file__).parent / "plan_bench.py").read_text().split('SPEC = """', 1)[1].split('"""', 1)[0]


def write_commits(location: str, commits: int, partitions: int, action: str = "commit") -> None:
    """Commits as writers make them (`action`: deltacommits on merge-on-read tables), recorded in the
    metadata table first; each records the table schema (readers take the latest)."""
    from tablespec.hudi.config import read_table_config
    at = Location.parse(location)   # stopgap until this layer takes handles (i28-engine)
    storage, base = at.storage, at.uri
    schema = read_table_config(storage, base).create_schema
    writer = TimelineWriter(storage, base)
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"_hoodie_commit_time": ["x"], "id": ["a"]}), sink)
    data = sink.getvalue().to_pybytes()
    last = None
    for _ in range(commits):
        ts = last = new_instant_time(after=last)
        instant = writer.start(writer.request(action, ts))
        stats = {}
        for p in range(partitions):
            part = f"day=2026-11-{p + 1:02d}"
            write_partition_metadata(storage, base, part, ts)
            fid = new_file_id()
            name = BaseFileName(fid, "0-1-1", ts).format()
            storage.write_bytes(join(base, part, name), data)
            stats[part] = [WriteStat(file_id=fid, path=f"{part}/{name}", num_writes=1, num_inserts=1,
                                     total_write_bytes=len(data), file_size_in_bytes=len(data), partition_path=part)]
        metadata = CommitMetadata(partition_to_write_stats=stats, operation_type="UPSERT", extra_metadata={"schema": schema})
        recorded = mdt_sync.record_commit(HudiTable.open(location), ts, metadata)   # Hudi's metadata table first, as writers do
        writer.complete(instant, metadata.to_json(), after=mdt_sync.completed_by(recorded))


def setup(specs_dir: Path, warehouse: str, commits: int, partitions: int, action: str) -> None:
    def one(ls):
        loc = table_location(warehouse, ls.spec.spec.location)
        create_table(HudiTable.open(loc), ls.spec)
        write_commits(loc, commits, partitions, action)
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, load_specs([str(specs_dir)]).specs))


def timed_plan(specs_dir: Path, warehouse: str) -> tuple[float, str]:
    out = io.StringIO()
    t = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = cli(["plan", str(specs_dir), "--warehouse", warehouse, "--detailed-exitcode"])
    elapsed = time.perf_counter() - t
    assert code == 0, out.getvalue()[-2000:]
    return elapsed, out.getvalue().strip().splitlines()[-1]


def data_action(server: S3Server, warehouse: str, tmp: str) -> dict:
    """An upsert of 20k rows into a 100k-row table (BUCKET 4, 2 partitions): bytes at the server
    against the bytes of the files the commit wrote and the base files it rewrote."""
    from tablespec.engine.session import get_spark
    from tablespec.hudi.fs_view import FileSystemView
    from tablespec.hudi.timeline.active import Timeline
    from tablespec.table import Table
    spec_text = SPEC.format(i=9999, buckets=4, keep=10)
    spec_file = Path(tmp, "data.yaml")
    spec_file.write_text(spec_text)
    spark = get_spark("local[2]", {"spark.sql.shuffle.partitions": "4"})
    def rows(ids, shift):
        return ids.selectExpr("concat('k', id) as id", f"cast(id + {shift} as decimal(12,2)) as amount",
                              "timestamp'2026-11-01 00:00:00' as ts", "concat('d', id % 2) as day")
    out = {}
    for name, wh in (("local", str(Path(tmp, "data-local"))), ("s3", warehouse + "-data")):
        spec = load_specs([str(spec_file)]).specs[0].spec
        loc = table_location(wh, spec.spec.location)
        create_table(HudiTable.open(loc), spec)
        table = Table(spec, loc, spark)
        table.write(rows(spark.range(0, 100_000), 0), "insert")
        at = Location.parse(loc)   # stopgap until this layer takes handles (i28-engine)
        storage, base = at.storage, at.uri
        before = {s.file_id: s.base_file.size
                  for s in FileSystemView.build(storage, base, Timeline.load(storage, base)).latest_slices()}
        server.requests(reset=True)
        t = time.perf_counter()
        result = table.write(rows(spark.range(0, 100_000).filter("id % 5 = 0"), 1), "upsert")
        assert result.updated == 20_000, result
        seconds = time.perf_counter() - t
        counted = server.requests()
        timeline = Timeline.load(storage, base)
        meta = timeline.commit_metadata(timeline.commits()[-1])
        written = sum(st.file_size_in_bytes for sts in meta.partition_to_write_stats.values() for st in sts)
        rewritten = sum(before.get(st.file_id, 0) for sts in meta.partition_to_write_stats.values() for st in sts)
        out[name] = {"seconds": seconds, "base_file_bytes_written": written, "base_file_bytes_read": rewritten}
        if name == "s3":
            out[name].update(server_bytes_received=counted["bytes_received"], server_bytes_sent=counted["bytes_sent"],
                             requests=counted["total"])
    spark.stop()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=500)
    ap.add_argument("--commits", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--quick", action="store_true", help="50 tables")
    ap.add_argument("--no-data", action="store_true", help="skip the data action (no Spark)")
    ap.add_argument("--table-type", choices=("COPY_ON_WRITE", "MERGE_ON_READ"), default="COPY_ON_WRITE",
                    help="the planned tables' type (merge-on-read: their commits are deltacommits)")
    ap.add_argument("--out", default=str(ROOT / "bench/results/s3_plan.json"))
    args = ap.parse_args()
    if args.quick:
        args.tables = 50
    n = args.tables
    with tempfile.TemporaryDirectory() as tmp, S3Server() as server:
        import boto3
        os.environ.update(AWS_ENDPOINT_URL=server.endpoint, AWS_REGION="us-east-1",
                          AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench")
        boto3.client("s3", endpoint_url=server.endpoint).create_bucket(Bucket="bench")
        specs_dir = Path(tmp, "specs")
        specs_dir.mkdir()
        for i in range(n):
            (specs_dir / f"t{i:04d}.yaml").write_text(typed(SPEC.format(i=i, buckets=16, keep=10), args.table_type))
        local, remote = str(Path(tmp, "warehouse")), "s3://bench/warehouse"
        t = time.perf_counter()
        action = "deltacommit" if args.table_type == "MERGE_ON_READ" else "commit"
        setup(specs_dir, local, args.commits, args.partitions, action)
        setup(specs_dir, remote, args.commits, args.partitions, action)
        print(f"setup: {n} {args.table_type} tables x {args.commits} commits x {args.partitions} partitions on each storage, "
              f"{time.perf_counter() - t:.1f}s")
        local_s, _ = timed_plan(specs_dir, local)
        server.requests(reset=True)
        s3_s, summary = timed_plan(specs_dir, remote)
        counted = server.requests()
        methods = {k: v for k, v in counted.items() if k.isupper()}
        per_table = counted["total"] / n
        print(f"\nplan of {n} unchanged tables ({summary})")
        print(f"{'storage':<10}{'ms/table':>10}{'requests/table':>16}  by method")
        print(f"{'local':<10}{local_s / n * 1000:>10.2f}{'-':>16}")
        print(f"{'s3':<10}{s3_s / n * 1000:>10.2f}{per_table:>16.2f}  "
              + ", ".join(f"{m} {c / n:.2f}" for m, c in sorted(methods.items())))
        print(f"target: <= 8 requests per unchanged table: {'met' if per_table <= 8 else 'NOT met'}", flush=True)
        data = None if args.no_data else data_action(server, remote, tmp)
    if data:
        print("\nupsert of 20k rows into a 100k-row table (bytes of base files vs bytes at the S3 server)")
        for name, d in data.items():
            extra = (f", server received {d['server_bytes_received']:,} B, sent {d['server_bytes_sent']:,} B, "
                     f"{d['requests']} requests") if name == "s3" else ""
            print(f"  {name:<6} {d['seconds']:.2f}s, base files written {d['base_file_bytes_written']:,} B, "
                  f"rewritten from {d['base_file_bytes_read']:,} B{extra}")
    result = {"tables": n, "table_type": args.table_type, "commits_per_table": args.commits, "partitions_per_table": args.partitions,
              "local_ms_per_table": local_s / n * 1000, "s3_ms_per_table": s3_s / n * 1000,
              "s3_requests_per_table": per_table, "s3_requests_by_method": methods,
              "s3_bytes_sent_per_table": counted["bytes_sent"] / n, "data_action": data}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

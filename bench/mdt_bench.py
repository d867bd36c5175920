"""The metadata table: what keeping Hudi's metadata table costs and buys, measured in one run.

a. Record-index lookups (no Spark). An index of N keys ("ord-%010d", 0 <= id < N; partitions
   `order_date=2026-01-DD` over 30 days) is built through the format layer
   (`record_index_writer.initialize` with synthetic entries, Hudi's file-group count for N; key i
   in data file group i mod 997, which lies in partition day (i mod 997) mod 30) in the
   metadata table of a one-commit table. Each repetition looks up 100k keys, half present (ids
   below N) and half absent (N..2N), in random order, with `record_index_reader.lookup` (what
   `Table.lookup` and tagging call). Warm: the process has looked up before (its parsed HFile
   indexes and decoded blocks are kept, as in a reused executor worker or driver); cold: that
   cache cleared before each lookup (files still in the OS page cache); wall and this process's
   CPU time (the machine may be shared: CPU time is the work apart from waiting for a core).
   The baseline is the
   same lookup of the same keys in a Parquet file of the same entries sorted by key (pyarrow:
   read it, `is_in`, filter), and on the same entries already in memory (an Arrow table).
   Goal: warm p95 <= 60 ms at 2M keys, <= 100 ms at 10M.
b. What keeping the metadata table adds to an upsert (Spark, tablespec's `Table.write`): the
   orders table (bench/_common.py, SIMPLE index, 30 partitions) bulk-inserted with `--rows`
   rows, copied, and the copy's metadata table removed (`.hoodie/metadata` deleted, the metadata
   partitions cleared in hoodie.properties: tablespec writes such a table without building one);
   then the same upsert of `--upsert-rows` rows (half updates spread over the table, half new
   keys) into fresh copies of both, `--repeat` times. The seconds tablespec spends in the
   metadata table inside the write (the deltacommit, compaction and clean when due) are timed
   too. Goal: the difference <= 10% of the write's time. Peer: Apache Hudi 0.15 doing the same
   bulk insert and upsert with its metadata table on (its default).
c. RECORD_LEVEL upsert vs Apache Hudi 0.15's RECORD_INDEX upsert: the same rows bulk-inserted
   into a tablespec RECORD_LEVEL table (public API: whatever RECORD_LEVEL is on the checkout) and
   into a Hudi table with hoodie.index.type=RECORD_INDEX and the record index on; then the same
   upsert into each. Goal: tablespec <= 0.5x Hudi.
d. Listing a 30-partition table on S3 (the loopback server of tests/s3server.py, requests counted
   at the server): a small orders table (three commits) uploaded, then its files listed through
   the metadata table (`mdt.reader.listing`) and by LIST (`mdt.writer.list_data_files`, as Hudi
   lists a table without one); best time of three, requests of the first; both listings equal.

Prints a table per part and writes JSON (default bench/results/mdt_bench.json).

    PYTHONPATH=$PWD python bench/mdt_bench.py                 # 2M and 10M keys; 2M rows, 200k upserted
    PYTHONPATH=$PWD python bench/mdt_bench.py --quick         # 200k / 500k keys, 100k rows, 10k upserted
    PYTHONPATH=$PWD python bench/mdt_bench.py --parts a,d     # a subset; --no-hudi without Apache Hudi
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import _common
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from _common import add_hudi_arguments, hudi_options, hudi_write, make_table, orders, set_hudi_overrides, start_spark
from handle_bench import RequestLog, git_commit  # also puts tests/ on sys.path
from s3server import S3Server

from tablespec.hudi.config import TableConfig, init_table, read_table_config, write_table_config
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.formats.naming import BaseFileName
from tablespec.hudi.formats.partition import write_partition_metadata
from tablespec.hudi.io import LOCAL, join
from tablespec.hudi.mdt import reader as mdt_reader
from tablespec.hudi.mdt import record_index_reader as rli_reader
from tablespec.hudi.mdt import record_index_writer as rli_writer
from tablespec.hudi.mdt import sync as mdt_sync
from tablespec.hudi.mdt import writer as mdt_writer
from tablespec.hudi.metadata_table import INFLIGHT_KEY, PARTITIONS_KEY
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import TimelineWriter
from tablespec.spec.loader import load_spec_text
from tablespec.table import Table

ROOT = Path(_common.ROOT)
BUCKET = "bench"
DAYS, FILE_GROUPS = 30, 997
INSTANT = "20260101000000000"
GOALS = {"lookup_p95_ms": {2_000_000: 60, 10_000_000: 100}, "metadata_overhead": 0.10, "record_level_vs_hudi": 0.5}


# --- a. lookups --------------------------------------------------------------------------------

def key_of(i: int) -> str:
    return f"ord-{i:010d}"


def build_index(work: str, n: int) -> tuple[str, float]:
    """A one-commit table whose metadata table holds a record index of n synthetic keys (reused
    when `work` has it from an earlier run); returns its path and the build's seconds (0: reused)."""
    base = os.path.join(work, f"index_{n}")
    if rli_writer.is_enabled(HudiTable.open(base)) if os.path.isdir(join(base, ".hoodie")) else False:
        return base, 0.0
    shutil.rmtree(base, ignore_errors=True)
    init_table(LOCAL, base, TableConfig(name="orders", database="bench", record_key_fields=["order_id"],
                                        partition_fields=["order_date"],
                                        key_generator_class="org.apache.hudi.keygen.SimpleKeyGenerator"))
    tw = TimelineWriter(LOCAL, base)
    inflight = tw.start(tw.request("commit", INSTANT))
    file_ids = [f"{uuid.UUID(int=(i + 1) * 0x9E3779B97F4A7C15 % (1 << 128))}-0" for i in range(FILE_GROUPS)]
    write_partition_metadata(LOCAL, base, "order_date=2026-01-01", INSTANT)
    rel = join("order_date=2026-01-01", BaseFileName(file_ids[0], "0-1-0", INSTANT).format())
    LOCAL.write_bytes(join(base, rel), b"x")
    tw.complete(inflight, CommitMetadata({"order_date=2026-01-01": [WriteStat(
        file_id=file_ids[0], path=rel, prev_commit="null", partition_path="order_date=2026-01-01",
        file_size_in_bytes=1)]}, operation_type="BULK_INSERT"))
    mdt_writer.initialize(HudiTable.open(base))
    days = [f"order_date=2026-01-{d + 1:02d}" for d in range(DAYS)]
    t = time.perf_counter()
    rli_writer.initialize(HudiTable.open(base), ((key_of(i), days[i % FILE_GROUPS % DAYS], file_ids[i % FILE_GROUPS],
                                                  INSTANT) for i in range(n)))
    return base, time.perf_counter() - t


def parquet_baseline(work: str, n: int) -> str:
    """The same entries in one Parquet file sorted by key (written once per size)."""
    path = os.path.join(work, f"entries_{n}.parquet")
    if not os.path.exists(path):
        ids = np.arange(n)
        keys = pc.binary_join_element_wise("ord-", pc.utf8_lpad(pc.cast(pa.array(ids), pa.string()), 10, "0"), "")
        days = pc.binary_join_element_wise("order_date=2026-01-", pc.utf8_lpad(
            pc.cast(pa.array(ids % FILE_GROUPS % DAYS + 1), pa.string()), 2, "0"), "")
        pq.write_table(pa.table({"key": keys, "partition": days, "file_group": pa.array(ids % FILE_GROUPS),
                                 "instant": pa.array(np.full(n, int(INSTANT[:14])))}), path)
    return path


def percentiles(runs: list[tuple[float, float]]) -> dict:
    """p50 / p95 of (wall, CPU) seconds: wall is what the goal counts; this process's CPU
    seconds show the work apart from waiting for a core (the machine is shared)."""
    wall, cpu = (np.array([r[i] for r in runs]) * 1000 for i in (0, 1))
    return dict(p50_ms=round(float(np.percentile(wall, 50)), 1), p95_ms=round(float(np.percentile(wall, 95)), 1),
                max_ms=round(float(wall.max()), 1), cpu_p50_ms=round(float(np.percentile(cpu, 50)), 1),
                cpu_p95_ms=round(float(np.percentile(cpu, 95)), 1), runs=len(runs))


class Clock:
    """Wall and process CPU seconds of a block."""

    def __enter__(self) -> Clock:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        self.seconds = (time.perf_counter() - self.wall, time.process_time() - self.cpu)


def lookups(args, work: str) -> list[dict]:
    out = []
    for n in args.sizes:
        base, build_s = build_index(work, n)
        table = HudiTable.open(base)
        index_bytes = sum(f.size for f in LOCAL.walk_files(join(base, ".hoodie/metadata/record_index")))
        rng = np.random.default_rng(42)

        def batch() -> list[str]:
            half = args.lookups // 2
            ids = np.concatenate([rng.choice(n, half, replace=False), n + rng.choice(n, args.lookups - half,
                                                                                      replace=False)])
            return [key_of(i) for i in rng.permutation(ids).tolist()]

        rli_reader.clear_cache()
        rli_reader.lookup(table, batch())                 # warm-up: fills the cache, as earlier lookups would
        warm, cold, found = [], [], set()
        for _ in range(args.repeat):
            keys = batch()
            with Clock() as clock:
                found.add(len(rli_reader.lookup(table, keys)))
            warm.append(clock.seconds)
        for _ in range(args.cold_repeat):
            keys = batch()
            rli_reader.clear_cache()
            with Clock() as clock:
                found.add(len(rli_reader.lookup(table, keys)))
            cold.append(clock.seconds)
        path = parquet_baseline(work, n)
        from_file, in_memory = [], []
        held = pq.read_table(path)
        for _ in range(args.repeat):
            keys = pa.array(batch())
            with Clock() as clock:
                entries = pq.read_table(path)
                hit = entries.filter(pc.is_in(entries["key"], value_set=keys))
            from_file.append(clock.seconds)
            with Clock() as clock:
                hit2 = held.filter(pc.is_in(held["key"], value_set=keys))
            in_memory.append(clock.seconds)
            found.add(hit.num_rows)
            found.add(hit2.num_rows)
        row = dict(keys=n, lookups=args.lookups, file_groups=len(rli_reader.slices(table)[0]), index_bytes=index_bytes,
                   build_s=round(build_s, 1), warm=percentiles(warm), cold=percentiles(cold),
                   parquet_file=percentiles(from_file), arrow_in_memory=percentiles(in_memory),
                   correct=found == {args.lookups // 2}, goal_p95_ms=GOALS["lookup_p95_ms"].get(n))
        out.append(row)
        print(f"  {n:>11,} {row['file_groups']:>4} {index_bytes / 2**20:>7.1f}  "
              + "  ".join(f"{row[k]['p50_ms']:>7.1f}/{row[k]['p95_ms']:<7.1f}({row[k]['cpu_p95_ms']:>6.1f})"
                          for k in ("warm", "cold", "parquet_file", "arrow_in_memory"))
              + f"  {row['goal_p95_ms'] or '-':>5}  {'ok' if row['correct'] else 'WRONG'}", flush=True)
    return out


# --- b, c. upserts (Spark) ---------------------------------------------------------------------

def upsert_input(spark, rows: int, n: int, partitions: int):
    """n rows: half updates spread over the table's keys, half new keys."""
    from pyspark.sql import functions as F
    step = max(1, rows // max(n // 2, 1))
    updates = orders(spark.range(0, n // 2).select((F.col("id") * step).alias("id")), partitions, version=1)
    return updates.unionByName(orders(spark.range(rows, rows + n - n // 2), partitions, version=1))


def drop_metadata_table(location: str) -> None:
    """The table without a metadata table: its folder gone, hoodie.properties naming no partition."""
    shutil.rmtree(os.path.join(location, ".hoodie", "metadata"))
    config = read_table_config(LOCAL, location)
    write_table_config(LOCAL, location, config.with_updates(
        extra={k: v for k, v in config.extra.items() if k not in (PARTITIONS_KEY, INFLIGHT_KEY)}))


class MetadataTimer:
    """Seconds tablespec's writes spend keeping the metadata table (sync's deltacommit, compaction and
    clean), by wrapping the module functions the commit calls."""

    NAMES = ("record_commit", "compact_if_due")

    def __init__(self):
        self.seconds = 0.0
        self._orig = {n: getattr(mdt_sync, n) for n in self.NAMES}
        for name, fn in self._orig.items():
            setattr(mdt_sync, name, self._timed(fn))

    def _timed(self, fn):
        def run(*a, **kw):
            t = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                self.seconds += time.perf_counter() - t
        return run

    def close(self) -> None:
        for name, fn in self._orig.items():
            setattr(mdt_sync, name, fn)


def table_at(spark, name: str, index: str, location: str) -> Table:
    text = _common.spec_text(name, index)
    return Table(load_spec_text(text, f"{name}.yaml").specs[0].spec, location, spark)


def timed_upsert(spark, args, table: Table) -> dict:
    timer = MetadataTimer()
    try:
        t = time.perf_counter()
        result = table.write(upsert_input(spark, args.rows, args.upsert_rows, DAYS), "upsert")
        seconds = time.perf_counter() - t
    finally:
        timer.close()
    return dict(seconds=round(seconds, 2), metadata_s=round(timer.seconds, 2), inserted=result.inserted,
                updated=result.updated)


def hudi_upsert(spark, args, location: str, options: dict) -> dict:
    t = time.perf_counter()
    stats = hudi_write(upsert_input(spark, args.rows, args.upsert_rows, DAYS), location, options, "upsert")
    return dict(seconds=round(time.perf_counter() - t, 2), inserted=stats["inserted"], updated=stats["updated"])


def metadata_overhead(spark, args, work: str) -> dict:
    kept = make_table(spark, os.path.join(work, "b"), "orders", "{type: SIMPLE}")
    t = time.perf_counter()
    kept.write(orders(spark.range(0, args.rows), DAYS, 0), "bulk_insert")
    out: dict = dict(load_s=round(time.perf_counter() - t, 1), runs=[])
    bare = kept.location + "_no_mdt"
    shutil.copytree(kept.location, bare)
    drop_metadata_table(bare)
    for r in range(args.repeat_upsert):
        run = {}
        for variant, source in (("without", bare), ("with", kept.location)) if r % 2 == 0 else \
                               (("with", kept.location), ("without", bare)):
            copy = f"{source}_run{r}"
            shutil.copytree(source, copy)
            run[variant] = timed_upsert(spark, args, table_at(spark, "orders", "{type: SIMPLE}", copy))
            shutil.rmtree(copy)
        out["runs"].append(run)
        print(f"  upsert {args.upsert_rows:,} into {args.rows:,}: with the metadata table {run['with']['seconds']:.1f}s "
              f"(of it in the metadata table {run['with']['metadata_s']:.1f}s), without {run['without']['seconds']:.1f}s",
              flush=True)
    best = {v: min(r[v]["seconds"] for r in out["runs"]) for v in ("with", "without")}
    out["best_s"] = best
    out["overhead"] = round(best["with"] / best["without"] - 1, 3)
    out["metadata_share"] = round(min(r["with"]["metadata_s"] / r["with"]["seconds"] for r in out["runs"]), 3)
    out["goal"] = GOALS["metadata_overhead"]
    if args.hudi:
        location = os.path.join(work, "b_hudi", "orders")
        options = hudi_options("orders", "SIMPLE")
        t = time.perf_counter()
        hudi_write(orders(spark.range(0, args.rows), DAYS, 0), location, options, "bulk_insert")
        out["hudi"] = dict(load_s=round(time.perf_counter() - t, 1), upsert=hudi_upsert(spark, args, location, options))
        print(f"  Apache Hudi 0.15, metadata table on: {out['hudi']['upsert']['seconds']:.1f}s", flush=True)
    return out


def record_level_vs_hudi(spark, args, work: str) -> dict:
    ours = make_table(spark, os.path.join(work, "c"), "orders", "{type: RECORD_LEVEL}")
    t = time.perf_counter()
    ours.write(orders(spark.range(0, args.rows), DAYS, 0), "bulk_insert")
    out: dict = dict(load_s=round(time.perf_counter() - t, 1), tablespec=timed_upsert(spark, args, ours))
    print(f"  tablespec RECORD_LEVEL upsert: {out['tablespec']['seconds']:.1f}s "
          f"(metadata table {out['tablespec']['metadata_s']:.1f}s)", flush=True)
    if args.hudi:
        location = os.path.join(work, "c_hudi", "orders")
        options = hudi_options("orders", "RECORD_LEVEL")
        t = time.perf_counter()
        hudi_write(orders(spark.range(0, args.rows), DAYS, 0), location, options, "bulk_insert")
        out["hudi_load_s"] = round(time.perf_counter() - t, 1)
        out["hudi"] = hudi_upsert(spark, args, location, options)
        out["ratio"] = round(out["tablespec"]["seconds"] / out["hudi"]["seconds"], 2)
        out["goal"] = GOALS["record_level_vs_hudi"]
        print(f"  Apache Hudi 0.15 RECORD_INDEX upsert: {out['hudi']['seconds']:.1f}s  ratio {out['ratio']}x "
              f"(goal <= {out['goal']}x)", flush=True)
    return out


# --- d. listing on S3 --------------------------------------------------------------------------

def upload(s3, local: str, prefix: str) -> None:
    files = [os.path.join(d, f) for d, _, fs in os.walk(local) for f in fs]
    for path in files:
        s3.upload_file(path, BUCKET, f"{prefix}/{os.path.relpath(path, local)}")


def s3_listing(spark, args, work: str) -> dict:
    table = make_table(spark, os.path.join(work, "d"), "orders", "{type: SIMPLE}")
    table.write(orders(spark.range(0, 3000), DAYS, 0), "bulk_insert")
    for v in (1, 2):
        table.write(orders(spark.range(v * 500, v * 500 + 600), DAYS, v), "upsert")
    out: dict = {}
    with S3Server() as server:
        import boto3
        os.environ.update(AWS_ENDPOINT_URL=server.endpoint, AWS_REGION="us-east-1",
                          AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench")
        s3 = boto3.client("s3", endpoint_url=server.endpoint)
        s3.create_bucket(Bucket=BUCKET)
        upload(s3, table.location, "d/orders")
        log = RequestLog(server)
        handle = HudiTable.open(f"s3://{BUCKET}/d/orders")
        ways = {"metadata_table": lambda: mdt_reader.listing(handle).files,
                "list": lambda: mdt_writer.list_data_files(handle.storage, handle.base)}
        listed = {}
        for way, fn in ways.items():
            times, counted = [], None
            for _ in range(3):
                log.reset()
                t = time.perf_counter()
                listed[way] = fn()
                times.append(time.perf_counter() - t)
                counted = counted or log.counted()
            out[way] = dict(ms=round(min(times) * 1000, 1), **counted)
            print(f"  {way:<15} {out[way]['ms']:>8.1f} ms  {out[way]['requests']['total']:>4} requests "
                  f"({', '.join(f'{k} {v}' for k, v in out[way]['requests'].items() if k != 'total' and v)})",
                  flush=True)
        out["partitions"] = len(listed["list"])
        out["files"] = sum(len(f) for f in listed["list"].values())
        out["same"] = listed["metadata_table"] == listed["list"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="2000000,10000000", help="record-index sizes for the lookups (keys)")
    ap.add_argument("--lookups", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=20, help="warm lookups per size")
    ap.add_argument("--cold-repeat", type=int, default=5, help="lookups after clearing the cache, per size")
    ap.add_argument("--rows", type=int, default=2_000_000, help="rows of the upserted tables")
    ap.add_argument("--upsert-rows", type=int, default=200_000)
    ap.add_argument("--repeat-upsert", type=int, default=2, help="upserts with and without the metadata table")
    ap.add_argument("--parts", default="a,b,c,d")
    ap.add_argument("--quick", action="store_true", help="a few minutes: 200k and 500k keys, 100k rows, 10k upserted")
    ap.add_argument("--work", help="folder kept between runs (indexes are reused); default: a temporary one")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--out", help="JSON written (default bench/results/mdt_bench.json; --quick: mdt_bench.quick.json)")
    add_hudi_arguments(ap)
    args = ap.parse_args()
    if args.quick:
        args.sizes, args.repeat, args.cold_repeat = "200000,500000", 10, 3
        args.rows, args.upsert_rows, args.repeat_upsert = 100_000, 10_000, 1
    args.sizes = [int(s) for s in args.sizes.split(",")]
    parts = set(args.parts.split(","))
    overrides = set_hudi_overrides(args.hudi_option)
    args.out = args.out or str(ROOT / "bench/results" / f"mdt_bench{'.quick' if args.quick else ''}.json")
    started, load = datetime.now(UTC), os.getloadavg()
    report: dict = {"bench": "mdt_bench", "quick": args.quick, **git_commit(),
                    "date": started.isoformat(timespec="seconds"), "cpu_cores": os.cpu_count(),
                    "load_average_at_start": [round(x, 2) for x in load], "hudi_overrides": overrides,
                    "sizes": args.sizes, "rows": args.rows, "upsert_rows": args.upsert_rows, "goals": {
                        "lookup_p95_ms": {str(k): v for k, v in GOALS["lookup_p95_ms"].items()},
                        "metadata_overhead": GOALS["metadata_overhead"],
                        "record_level_vs_hudi": GOALS["record_level_vs_hudi"]}}
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or tmp
        os.makedirs(work, exist_ok=True)
        if "a" in parts:
            print(f"a. lookup of {args.lookups:,} keys (half present), wall ms p50/p95 (CPU ms p95)\n"
                  f"  {'keys':>11} {'fgs':>4} {'MiB':>7}  {'warm':<23}  {'cold':<23}  {'parquet file':<23}  "
                  f"{'arrow in mem':<23}  {'goal':>5}", flush=True)
            report["lookup"] = lookups(args, work)
        if parts & {"b", "c", "d"}:
            spark = start_spark(args.master, args.driver_memory, os.path.join(work, "events"), "mdt_bench",
                                hudi=args.hudi)
            try:
                warm = make_table(spark, os.path.join(work, "warm"), "warm", "{type: SIMPLE}")
                warm.write(orders(spark.range(0, 2000), 3, 0), "bulk_insert")   # the first Spark write, not measured
                warm.write(orders(spark.range(1000, 3000), 3, 1), "upsert")
                if "b" in parts:
                    print("b. what keeping the metadata table adds to an upsert", flush=True)
                    report["metadata_overhead"] = metadata_overhead(spark, args, work)
                    b = report["metadata_overhead"]
                    print(f"  overhead {b['overhead']:+.1%} of the write without it (goal <= {b['goal']:.0%}); "
                          f"metadata table's share of the write {b['metadata_share']:.1%}", flush=True)
                if "c" in parts:
                    print("c. RECORD_LEVEL upsert vs Apache Hudi's RECORD_INDEX upsert", flush=True)
                    report["record_level"] = record_level_vs_hudi(spark, args, work)
                if "d" in parts:
                    print(f"d. listing a {DAYS}-partition table on S3", flush=True)
                    report["s3_listing"] = s3_listing(spark, args, work)
            finally:
                spark.stop()
    report["seconds"] = round((datetime.now(UTC) - started).total_seconds())
    _common.write_report(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Bucket bootstrap and rescale against plain Spark rewriting the same rows by the same hash.

Creates a SIMPLE-index orders table (the upsert bench's schema: key order_id, partitioned by
order_date), bulk-inserts `--rows` rows (setup), then times what `tablespec apply` runs for two
spec changes: index SIMPLE -> BUCKET(--buckets) (bucket_bootstrap), then BUCKET(--buckets) ->
BUCKET(--rescale-to) (bucket_rescale): observe, build_plan, Applier.apply.

The baseline for each, in the same run: plain Spark reading the same base files, giving every
row its bucket with the same Java-compatible hash over `_hoodie_record_key` (a mapInArrow, as
tablespec does), `repartition(order_date, bucket)` and `write.partitionBy(order_date)`. It is the
fastest plain way to the same layout: the same rows from the same well-sized input files (the
table's own base files), the same partitioning, rows grouped by the same hash; it writes one file
per partition and task instead of one per bucket, which only makes it faster (goal: tablespec
<= 1.2x, bench/_common.py GOALS). Spark's session start is in no timing (reported apart). A
reference variant, run once (by default above 1M rows), writes `partitionBy(order_date,
bucket)`: one file per bucket as the Hudi layout has, but Spark's local-file-system writes pay
a large cost per file (Hadoop without its native library forks `chmod` for every file and
folder). After every phase the rows are checked unchanged (count, distinct keys, sum of
amounts, a checksum over keys, meta and data columns) and in the right bucket; repeated runs
do the same work on copies, so the first run's result is checked. Prints a table and writes
JSON (default bench/results/migrate_bench.json); stage timings per phase come from Spark's
event log, and each timed phase records the CPU cores other processes kept busy.

The peer, in the same session, is Apache Hudi 0.15.0 (bench/_common.py hudi_options: same key,
partition field, precombine field, bucket hash field, snappy, meta fields populated, Hudi's
metadata table as Hudi defaults it: enabled, `files` partition). Hudi 0.15 has no procedure that
changes a table's bucket layout in place (no partition_bucket_index_manager; the consistent-hashing
engine resizes only through clustering, and an insert_overwrite_table into the same table would
tag rows against the old buckets' file groups), so its equivalent is a full rewrite into a new
table: the fastest honest one, `bulk_insert` (row writer, no tagging, Hudi's default sort mode
NONE; bucketing by the same Java hash of order_id) into a fresh table with the new bucket count.
- setup (untimed): the same `--rows` rows bulk-inserted into a Hudi SIMPLE table;
- Hudi bootstrap -> N: the SIMPLE table read through Hudi's datasource (snapshot, meta columns
  dropped) and bulk-inserted into a new BUCKET(N) table (files metadata table written too);
- Hudi rescale N -> M: that BUCKET(N) table read the same way and bulk-inserted into a new
  BUCKET(M) table.
Unlike tablespec's rewrite, Hudi's stamps a new `_hoodie_commit_time` / seqno on every row (and a
new table has no history); its result is checked for rows, keys, sum of amounts and buckets (file
group id prefix), not the meta-column checksum. Hudi's base files each carry its footer bloom filter
(about 420 KiB, whatever the index), hence its larger bytes written. x Hudi = tablespec seconds / Hudi seconds.

    python bench/migrate_bench.py [--rows 5000000] [--partitions 30] [--buckets 64] [--rescale-to 128]
    python bench/migrate_bench.py --rows 500000      # quick run (no per-bucket reference)
    python bench/migrate_bench.py --quick            # development: 100k rows, 10 partitions, 8 -> 16 buckets
    python bench/migrate_bench.py --no-hudi          # tablespec and plain Spark only
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from _common import (
    SPARK_START,
    EventLog,
    Phases,
    add_hudi_arguments,
    dir_bytes,
    goal,
    hudi_options,
    hudi_read,
    hudi_write,
    latest_base_files,
    make_table,
    orders,
    parquet_files,
    rss_cell,
    set_hudi_overrides,
    set_phase,
    spec_text,
    stage_line,
    start_spark,
    write_report,
)

from tablespec.apply import Applier
from tablespec.hudi.hashing import bucket_ids_for_record_keys
from tablespec.hudi.io import table_location
from tablespec.hudi.table import HudiTable, Location
from tablespec.plan.builder import build_plan
from tablespec.spec.loader import load_spec_text
from tablespec.state import observe
from tablespec.table import Table

NAME = "orders"
KEY, BUCKET, HASH_FIELDS = "_hoodie_record_key", "_bucket", ["order_id"]
CHECKED = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
           "order_id", "customer_id", "amount", "updated_at", "order_date")


def bucket_index(n: int) -> str:
    return f"{{type: BUCKET, numBuckets: {n}}}"


def apply_index(spark, warehouse: str, index: str) -> dict:
    """What `tablespec apply` runs when the orders spec's index becomes `index`: observe, plan, apply."""
    loaded = load_spec_text(spec_text(NAME, index), f"{NAME}.yaml")
    location = table_location(warehouse, loaded.specs[0].spec.spec.location)
    t = time.perf_counter()
    plan = build_plan(loaded.specs, {location: observe(HudiTable.open(location))}, Location.parse(warehouse))
    plan_s = time.perf_counter() - t
    progress = []
    result = Applier(spark=spark, on_progress=lambda table, action, **kw: progress.append(kw)).apply(plan)
    (_, action), = plan.actions
    done, = result.actions
    return dict(action=action.kind, estimate=action.estimate.model_dump(), actual=done.actual.model_dump(), plan_s=plan_s,
                apply_s=done.seconds, progress=progress)


def with_bucket(num_buckets: int, batches):
    """Executor: each row's bucket, as a Hudi writer (and tablespec) computes it from the record key."""
    for batch in batches:
        if len(batch):
            ids = bucket_ids_for_record_keys(batch.column(KEY), HASH_FIELDS, num_buckets)
            yield batch.append_column(BUCKET, pa.array(ids, pa.int32()))


def baseline_write(spark, files: list[str], num_buckets: int, out: str, file_per_bucket: bool = False) -> None:
    """Plain Spark: read the base files, add each row's bucket, repartition by (partition, bucket) and write
    one parquet file per partition and task, or with `file_per_bucket` one per bucket (the Hudi layout)."""
    from pyspark.sql.types import IntegerType, StructField, StructType

    df = spark.read.parquet(*files)
    tagged = df.mapInArrow(functools.partial(with_bucket, num_buckets),
                           StructType(df.schema.fields + [StructField(BUCKET, IntegerType())]))
    folders = ("order_date", BUCKET) if file_per_bucket else ("order_date",)
    tagged.repartition("order_date", BUCKET).write.mode("overwrite").partitionBy(*folders).parquet(out)


def flag_misplaced(num_buckets: int, batches):
    """Executor: 1 for a row whose bucket (column `_bucket`) is not the one its record key hashes to."""
    for batch in batches:
        if len(batch):
            want = bucket_ids_for_record_keys(batch.column(KEY), HASH_FIELDS, num_buckets)
            bad = np.asarray(pc.fill_null(batch.column(BUCKET), -1)) != want
            yield batch.append_column("misplaced", pa.array(bad.astype(np.int64)))


def fingerprint(df, bucket=None, num_buckets: int = 1) -> dict:
    """One pass over the rows: count, distinct keys, sum of amounts, a checksum over the columns a
    migration must keep and, given `bucket` (a column expression), rows in the wrong bucket."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    rows = df.select(KEY, "amount", F.xxhash64(*[F.col(c).cast("string") for c in CHECKED]).alias("h"),
                     (bucket if bucket is not None else F.lit(0)).cast("int").alias(BUCKET))
    rows = rows.mapInArrow(functools.partial(flag_misplaced, num_buckets if bucket is not None else 1),
                           StructType(rows.schema.fields + [StructField("misplaced", LongType())]))
    r = rows.agg(F.count(F.lit(1)), F.count_distinct(KEY), F.sum("amount"), F.sum(F.col("h").cast("decimal(38,0)")),
                 F.sum("misplaced")).first()
    return dict(rows=r[0], keys=r[1], amount_sum=str(r[2]), checksum=str(r[3]), misplaced=r[4] or 0)


META = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
        "_hoodie_file_name")


def hudi_rewrite(spark, source: str, target: str, num_buckets: int) -> dict:
    """Apache Hudi's bucket (re)layout: the source table's snapshot bulk-inserted into a new BUCKET table."""
    rows = hudi_read(spark, source).drop(*META)
    return hudi_write(rows, target, hudi_options(NAME, "BUCKET", num_buckets), "bulk_insert")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=5_000_000, help="rows in the table (setup)")
    ap.add_argument("--partitions", type=int, default=30, help="distinct order_date values")
    ap.add_argument("--buckets", type=int, default=64, help="numBuckets of the bootstrap (SIMPLE -> BUCKET)")
    ap.add_argument("--rescale-to", type=int, default=128, help="numBuckets of the rescale that follows")
    ap.add_argument("--quick", action="store_true",
                    help="development sizes: 100k rows, 10 partitions, 8 -> 16 buckets, one run each")
    add_hudi_arguments(ap)
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--driver-memory", default="8g")
    ap.add_argument("--repeat", type=int, default=None,
                    help="timed runs per phase, best taken (default 2 up to 1M rows, else 1)")
    ap.add_argument("--per-bucket", action=argparse.BooleanOptionalAction, default=None,
                    help="also run the reference baseline writing one file per bucket, once "
                         "(slow on a local file system; default: above 1M rows)")
    ap.add_argument("--workdir", default=None, help="scratch directory, kept (default: a temporary one, removed)")
    ap.add_argument("--out", default="bench/results/migrate_bench.json")
    args = ap.parse_args()
    hudi_overrides = set_hudi_overrides(args.hudi_option)
    if args.quick:
        args.rows, args.partitions, args.buckets, args.rescale_to = 100_000, 10, 8, 16
        args.repeat = args.repeat or 1
    repeat = args.repeat or (2 if args.rows <= 1_000_000 else 1)
    per_bucket = args.per_bucket if args.per_bucket is not None else args.rows > 1_000_000
    b0, b1 = args.buckets, args.rescale_to
    boot, rescale, base0, base1 = f"bootstrap -> {b0}", f"rescale {b0} -> {b1}", f"baseline {b0}", f"baseline {b1}"
    ref0, ref1 = f"{base0} per bucket", f"{base1} per bucket"
    hboot, hrescale = f"Hudi {boot}", f"Hudi {rescale}"
    baseline_of = {boot: base0, base0: base0, ref0: base0, rescale: base1, base1: base1, ref1: base1,
                   hboot: base0, hrescale: base1}
    hudi_of = {boot: hboot, rescale: hrescale}
    reference_of = {p: (ref0 if b == base0 else ref1) for p, b in baseline_of.items()}

    work = args.workdir or tempfile.mkdtemp(prefix="migrate_bench_")
    events = os.path.join(work, "events")
    spark = start_spark(args.master, args.driver_memory, events, app_name="migrate_bench", hudi=args.hudi)
    sc = spark.sparkContext
    phases = Phases(spark, repeat)
    setup: dict[str, float] = {}
    migrations: dict[str, dict] = {}
    io: dict[str, dict] = {}
    checks: dict[str, dict] = {}
    warehouses = [os.path.join(work, f"run{i}") for i in range(repeat)]  # one table per timed run
    hudi: dict[str, dict] = {}

    def verify(name: str, df, bucket, num_buckets: int, files: int, expected_files: int | None) -> None:
        set_phase(sc, "verify")
        t = time.perf_counter()
        got = fingerprint(df, bucket, num_buckets)
        same = {k: got[k] for k in expected} == expected
        checks[name] = dict(**got, files=files, expected_files=expected_files,
                            ok=same and got["misplaced"] == 0 and expected_files in (None, files),
                            **({} if same else {"expected": expected}))
        setup["verify"] = setup.get("verify", 0.0) + time.perf_counter() - t

    def timed_migration(phase: str, num_buckets: int) -> None:
        from pyspark.sql import functions as F

        index = bucket_index(num_buckets)
        best = phases.measure(phase, lambda w: apply_index(spark, w, index), lambda i: warehouses[i])
        migrations[phase] = best
        before, after = (int(n) for n in best["actual"]["file_groups"].split(" -> "))
        io[phase] = dict(files_read=before, files_written=after, bytes_read=best["actual"]["bytes_read"],
                         bytes_written=best["actual"]["bytes_written"])
        spec = load_spec_text(spec_text(NAME, index), f"{NAME}.yaml").specs[0].spec
        table = Table(spec, table_location(warehouses[0], spec.spec.location), spark)  # runs do the same work
        verify(f"{phase} (run 0)", table.read(), F.substring("_hoodie_file_name", 1, 8), num_buckets,
               len(latest_base_files(table.location)), args.partitions * num_buckets)

    def timed_baseline(phase: str, files: dict, num_buckets: int, file_per_bucket: bool = False) -> None:
        from pyspark.sql import functions as F

        paths = [p for p, _ in files.values()]
        runs = 1 if file_per_bucket else repeat
        outs = [os.path.join(work, f"{phase.replace(' ', '_')}_run{i}") for i in range(runs)]
        phases.measure(phase, lambda out: baseline_write(spark, paths, num_buckets, out, file_per_bucket),
                       lambda i: outs[i], repeat=runs)
        io[phase] = dict(files_read=len(paths), files_written=len(parquet_files(outs[0])),
                         bytes_read=sum(size for _, size in files.values()), bytes_written=dir_bytes(outs[0]))
        verify(f"{phase} (run 0)", spark.read.parquet(outs[0]), F.col(BUCKET), num_buckets,
               len(parquet_files(outs[0])), args.partitions * num_buckets if file_per_bucket else None)

    def timed_hudi(phase: str, source: str, num_buckets: int) -> str:
        """Hudi's rewrite of `source` into a new BUCKET(num_buckets) table, one per run; returns run 0's."""
        from pyspark.sql import functions as F

        targets = [os.path.join(work, f"hudi_{num_buckets}_run{i}") for i in range(repeat)]
        before = latest_base_files(source)
        stats = phases.measure(phase, lambda target: hudi_rewrite(spark, source, target, num_buckets),
                               lambda i: targets[i])
        hudi[phase] = stats
        io[phase] = dict(files_read=len(before), files_written=stats["files_written"],
                         bytes_read=sum(size for _, size in before.values()), bytes_written=stats["bytes_written"])
        set_phase(sc, "verify")
        t = time.perf_counter()
        got = fingerprint(hudi_read(spark, targets[0]), F.substring("_hoodie_file_name", 1, 8), num_buckets)
        want = {k: expected[k] for k in ("rows", "keys", "amount_sum")}
        files = len(latest_base_files(targets[0]))
        same = {k: got[k] for k in want} == want
        checks[f"{phase} (run 0)"] = dict(**got, files=files, expected_files=args.partitions * num_buckets,
                                          ok=same and got["misplaced"] == 0 and files == args.partitions * num_buckets,
                                          **({} if same else {"expected": want}))
        setup["verify"] = setup.get("verify", 0.0) + time.perf_counter() - t
        return targets[0]

    try:
        # Warm-up: a tiny table through bootstrap, rescale and a baseline (JVM, Python workers, imports).
        set_phase(sc, "warm-up")
        t = time.perf_counter()
        warm = os.path.join(work, "warmup")
        tiny = make_table(spark, warm, NAME, "{type: SIMPLE}")
        tiny.write(orders(spark.range(0, 2000), 3, 0), "bulk_insert")
        tiny_files = [p for p, _ in latest_base_files(tiny.location).values()]
        apply_index(spark, warm, bucket_index(4))
        apply_index(spark, warm, bucket_index(8))
        baseline_write(spark, tiny_files, 4, os.path.join(work, "warmup_out"))
        if args.hudi:
            hudi_write(orders(spark.range(0, 2000), 3, 0), os.path.join(warm, "hudi_simple"),
                       hudi_options(NAME, "SIMPLE"), "bulk_insert")
            hudi_rewrite(spark, os.path.join(warm, "hudi_simple"), os.path.join(warm, "hudi_4"), 4)
            hudi_rewrite(spark, os.path.join(warm, "hudi_4"), os.path.join(warm, "hudi_8"), 8)
        setup["warm-up"] = time.perf_counter() - t

        set_phase(sc, "load")
        t = time.perf_counter()
        table = make_table(spark, warehouses[0], NAME, "{type: SIMPLE}")
        table.write(orders(spark.range(0, args.rows), args.partitions, 0), "bulk_insert")
        setup["load SIMPLE"] = time.perf_counter() - t
        for w in warehouses[1:]:  # copies of the loaded table for the repeated runs
            shutil.copytree(table.location, table_location(w, table.spec.spec.location))
        simple_files = latest_base_files(table.location)
        set_phase(sc, "verify")
        loaded = fingerprint(table.read())
        expected = {k: loaded[k] for k in ("rows", "keys", "amount_sum", "checksum")}
        checks["loaded"] = dict(**loaded, ok=loaded["rows"] == args.rows == loaded["keys"])
        if args.hudi:
            set_phase(sc, "load Hudi")
            t = time.perf_counter()
            hudi_simple = os.path.join(work, "hudi_simple")
            hudi_write(orders(spark.range(0, args.rows), args.partitions, 0), hudi_simple,
                       hudi_options(NAME, "SIMPLE"), "bulk_insert")
            setup["load Hudi SIMPLE"] = time.perf_counter() - t

        # Each baseline runs right after the tablespec phase that reads the same files.
        timed_migration(boot, b0)
        bucketed_files = latest_base_files(table.location)
        timed_baseline(base0, simple_files, b0)
        if per_bucket:
            timed_baseline(ref0, simple_files, b0, file_per_bucket=True)
        if args.hudi:
            hudi_bucketed = timed_hudi(hboot, hudi_simple, b0)
        timed_migration(rescale, b1)
        timed_baseline(base1, bucketed_files, b1)
        if per_bucket:
            timed_baseline(ref1, bucketed_files, b1, file_per_bucket=True)
        if args.hudi:
            timed_hudi(hrescale, hudi_bucketed, b1)
    finally:
        set_phase(sc, None)
        spark.stop()

    log = EventLog(events)
    stages, jobs = log.phases(), log.job_seconds()
    print(f"bucket bootstrap SIMPLE -> BUCKET({b0}) and rescale {b0} -> {b1} of {args.rows:,} rows, "
          f"{args.partitions} partitions; master {args.master}, {os.cpu_count()} cpus; best of {repeat}")
    print(f"setup: Spark start {SPARK_START['seconds']:.1f}s, " + ", ".join(f"{k} {v:.1f}s" for k, v in setup.items()))
    print(f"{'phase':<30}{'seconds':>8}{'rows/s':>10}{'x baseline':>11}{'x per bucket':>13}{'x Hudi':>8}"
          f"{'files r/w':>12}"
          f"{'MB read':>9}{'MB written':>11}{'others':>8}  peak RSS MiB d/JVM/w")
    results = {}
    for phase in phases.timings:
        secs, baseline, reference = phases.seconds(phase), baseline_of[phase], reference_of[phase]
        ratio = secs / phases.seconds(baseline)
        ratio_ref = secs / phases.seconds(reference) if reference in phases.timings else None
        peer = hudi_of.get(phase)
        ratio_hudi = secs / phases.seconds(peer) if peer in phases.timings else None
        t = phases.timings[phase]
        results[phase] = dict(seconds=secs, rows_per_s=args.rows / secs, ratio_to_baseline=ratio, baseline=baseline,
                              ratio_to_per_bucket=ratio_ref, ratio_to_hudi=ratio_hudi, runs=t["runs"],
                              other_cpu_cores=t["other_cpu_cores"], peak_rss=t["peak_rss"], **io[phase])
        if phase in (boot, rescale):
            results[phase].update(goal=goal(phase), goal_met=ratio <= goal(phase))
        files = f"{io[phase]['files_read']}/{io[phase]['files_written']}"
        ref = f"{ratio_ref:>12.2f}x" if ratio_ref is not None else f"{'-':>13}"
        hud = f"{ratio_hudi:>7.2f}x" if ratio_hudi is not None else f"{'-':>8}"
        print(f"{phase:<30}{secs:>8.2f}{args.rows / secs:>10,.0f}{ratio:>10.2f}x{ref}{hud}{files:>12}"
              f"{io[phase]['bytes_read'] / 2**20:>9.1f}{io[phase]['bytes_written'] / 2**20:>11.1f}"
              f"{max(t['other_cpu_cores']):>8.2f}  {rss_cell(t['peak_rss'])}")
    print("baseline = plain Spark over the same base files: Hudi's bucket hash of each record key (mapInArrow), "
          "repartition(order_date, bucket), write.partitionBy(order_date); per bucket = the same with "
          "partitionBy(order_date, bucket), one file per bucket as tablespec writes (run once); "
          "others = CPU cores other processes kept busy meanwhile; x Hudi = tablespec / Apache Hudi 0.15.0 seconds "
          "(Hudi: the table's snapshot bulk-inserted into a new table with the new bucket count); "
          "peak RSS = driver Python / JVM / Python workers")
    if args.hudi:
        print("tablespec / Hudi: " + ", ".join(f"{p} {results[p]['ratio_to_hudi']:.2f}x" for p in (boot, rescale)))
    target_met = all(results[p]["goal_met"] for p in (boot, rescale))
    print("goals (x baseline): " + ", ".join(f"{p} {results[p]['ratio_to_baseline']:.2f}x <= {results[p]['goal']}"
                                             f"{'' if results[p]['goal_met'] else ' NOT met'}" for p in (boot, rescale)))
    print("where the time goes (mean seconds per run = with a Spark job running + driver alone):")
    for phase in results:
        runs = phases.timings[phase]["runs"]
        mean, job = sum(runs) / len(runs), jobs.get(phase, {"wall_s": 0.0, "jobs": 0})
        spark_s = job["wall_s"] / len(runs)
        extra = ""
        if phase in migrations:
            m = migrations[phase]
            extra = f"; best run: plan {m['plan_s']:.2f}, apply {m['apply_s']:.2f}, rebucket {m['actual']['seconds']:.2f}"
        print(f"  {phase:<30}{mean:7.2f} = {spark_s:6.2f} Spark ({job['jobs'] // len(runs)} jobs) + "
              f"{mean - spark_s:5.2f} driver{extra}")
    print(f"stages per phase (all runs){'':<24}{'wall s':>8}{'task s':>8}{'tasks':>6}")
    for phase in results:
        print(f" {phase}")
        for s in stages.get(phase, []):
            print(stage_line(s))
    ok = all(c["ok"] for c in checks.values())
    print("correctness: " + "; ".join(f"{k} {c['rows']:,} rows{'' if c['ok'] else ' MISMATCH'}"
                                      for k, c in checks.items()))
    if not ok:
        print(json.dumps({k: c for k, c in checks.items() if not c["ok"]}, indent=2))

    result = {"rows": args.rows, "partitions": args.partitions, "buckets": b0, "rescale_to": b1,
              "master": args.master, "cpus": os.cpu_count(), "driver_memory": args.driver_memory, "repeat": repeat,
              "spark_start_s": SPARK_START["seconds"], "setup_s": setup, "results": results, "hudi": args.hudi,
              "hudi_overrides": hudi_overrides,
              "ratios_to_hudi": {p: results[p]["ratio_to_hudi"] for p in (boot, rescale) if args.hudi},
              "hudi_commits": hudi, "target_met": target_met,
              "migrations": migrations, "spark_jobs": jobs, "checks": checks, "stages": stages}
    write_report(args.out, result)
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

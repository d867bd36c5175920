"""Data skipping on a version 9 table: what keeping column and partition statistics adds to an upsert,
and what they save a selective read, against the same table without them and Apache Hudi 1.2.

One run, the same generated rows everywhere: `--rows` rows in `--partitions` partitions (order_date,
a block of consecutive ids each), `--files` base files per partition, SIMPLE index, 10 data columns
with statistics (`dataSkipping: {columnStats: {columns: [10 columns]}, partitionStats: true}`).
`seq` (the row's id) is clustered: each base file holds one run of consecutive values, as after a
sort on it. Two tables, each created and loaded by tablespec (untimed: `apply` until the plan is
empty, one bulk_insert): "with" keeps the two index partitions, "without" declares none
(`dataSkipping: {}`); both keep the metadata table's `files` partition.

Timed:
1. `upsert`: `--upsert-rows` (default 10%) updates of existing keys spread over every file, into a
   fresh copy of each loaded table, alternating, best of `--repeat`: the difference is what keeping
   the statistics costs (a footer read per written file and, per touched partition, per latest base
   file; the metadata table's records).
2. `read`: `Table.read(filters=[("seq", ">=", a), ("seq", "<", a + rows / 1000)])` (0.1% of the rows,
   inside one file) collected to the driver, on both upserted tables (best of `--read-repeat`, after
   one untimed run); Apache Hudi 1.2.0, in its own process and SparkSession (same master and driver
   memory; one JVM holds one Hudi bundle), runs the same query on a copy of the "with" table through
   its datasource with data skipping on (its defaults: metadata table and `hoodie.enable.data.skipping`)
   and off, the same way timed.

Goals (data skipping's performance targets): upsert with / without <= 1.1; read without / with >= 5;
read tablespec / Hudi 1.2 (skipping on) <= 1. Every read must return the same rows.

    python bench/skipping_bench.py                               # 2M rows, 20 partitions, 200k upserted
    python bench/skipping_bench.py --rows 400000                 # reduced (upsert 10%: 40k)
    python bench/skipping_bench.py --quick                       # smoke: 100k rows, 10 partitions

Run as `python bench/skipping_bench.py --hudi-worker JOB.json OUT.json` it is the Hudi 1.2 side.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

from _common import EPOCH_2026, SPARK_START, UPDATE_SHIFT, cpu_ticks, finish_worker, start_spark, write_report

HUDI_VERSION = "1.2.0"
STATS_COLUMNS = ("seq", "customer_id", "amount", "quantity", "price", "status", "region", "sku", "updated_at",
                 "order_date")
GOALS = {"upsert with / without": 1.1, "read tablespec / Hudi 1.2": 1.0}
SPEEDUP_GOAL = 5.0   # read without / with, at least
SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {{name: {name}, database: bench}}
spec:
  location: bench/{name}
  tableVersion: 9
  columns:
    - {{name: order_id, type: string, nullable: false}}
    - {{name: seq, type: long}}
    - {{name: customer_id, type: long}}
    - {{name: amount, type: "decimal(12,2)"}}
    - {{name: quantity, type: int}}
    - {{name: price, type: double}}
    - {{name: status, type: string}}
    - {{name: region, type: string}}
    - {{name: sku, type: long}}
    - {{name: updated_at, type: timestamp}}
    - {{name: order_date, type: date}}
  recordKey: {{fields: [order_id]}}
  partitioning: {{fields: [order_date]}}
  orderingField: updated_at
  index: {{type: SIMPLE}}
  dataSkipping: {skipping}
"""
WITH = f"{{columnStats: {{columns: [{', '.join(STATS_COLUMNS)}]}}, partitionStats: true}}"


def rows_of(ids, rows: int, partitions: int, version: int):
    """The rows of the ids in column `id`: partition i holds ids [i * rows / partitions, (i + 1) * ...)."""
    from pyspark.sql import functions as F

    block = max(1, rows // partitions)
    i = F.col("id")
    return ids.select(
        F.format_string("ord-%010d", i).alias("order_id"), i.alias("seq"),
        ((i * 2_654_435_761) % 1_000_003).alias("customer_id"),
        (((i * 7919 + version * 13) % 10_000_000) / 100).cast("decimal(12,2)").alias("amount"),
        ((i + version) % 97).cast("int").alias("quantity"), ((i * 37 + version) % 100_000 / 100.0).alias("price"),
        F.element_at(F.array(*[F.lit(s) for s in ("new", "paid", "shipped", "returned", "closed")]),
                     (i % 5 + 1).cast("int")).alias("status"),
        F.concat(F.lit("r"), (i % 7).cast("string")).alias("region"), ((i * 7919) % 100_000).alias("sku"),
        F.timestamp_seconds(F.lit(EPOCH_2026 + version * UPDATE_SHIFT) + i % 86_400).alias("updated_at"),
        F.date_add(F.lit("2026-01-01").cast("date"), F.least(i / block, F.lit(partitions - 1)).cast("int"))
        .alias("order_date"))


def load_input(spark, rows: int, partitions: int, files: int):
    """Every row, in partitions * files Spark partitions of consecutive ids: bulk_insert writes one
    base file per task and table partition, so each file holds one run of `seq`."""
    return rows_of(spark.range(0, rows, numPartitions=partitions * files), rows, partitions, 0)


def update_input(spark, rows: int, n: int, partitions: int):
    """n existing keys, evenly spread (so over every file), a version newer."""
    step = max(1, rows // max(n, 1))
    return rows_of(spark.range(0, n).selectExpr(f"id * {step} + {step // 2} as id"), rows, partitions, 1)


def query(rows: int, partitions: int, files: int) -> tuple[int, int]:
    """[a, b): 0.1% of the rows, inside the middle file of the middle partition."""
    per_file = max(1, rows // (partitions * files))
    a = (partitions * files // 2) * per_file + per_file // 4
    return a, a + max(1, rows // 1000)


def load_spec(name: str, skipping: str):
    from tablespec.spec.loader import load_spec_text

    result = load_spec_text(SPEC.format(name=name, skipping=skipping), f"{name}.yaml")
    if result.errors:
        raise SystemExit(f"bench spec invalid: {result.errors}")
    return result.specs[0]


def apply_until_clean(spark, loaded, warehouse: str) -> list[str]:
    """`plan` + `apply` until the plan is empty (create, metadata table, index partitions): the kinds applied."""
    from tablespec.apply import Applier
    from tablespec.hudi.table import Location
    from tablespec.plan.builder import plan_observed

    done: list[str] = []
    for _ in range(5):
        plan, observed = plan_observed([loaded], Location.parse(warehouse))
        kinds = [a.kind for t in plan.tables for a in t.actions]
        if not kinds:
            return done
        Applier(spark=spark, observed=observed).apply(plan)
        done += kinds
    raise SystemExit(f"{loaded.spec.qualified_name}: the plan does not settle ({done})")


def metadata_partitions(location: str) -> tuple[str, ...]:
    from tablespec.hudi.table import HudiTable
    from tablespec.state import observe

    return tuple(observe(HudiTable.open(location)).metadata_table.partitions)


def best(repeat: int, run) -> tuple[float, list[float], float, object]:
    """Best wall seconds of `repeat` runs, all of them, CPU cores other processes took, the last result."""
    times, others, out = [], [], None
    for _ in range(repeat):
        busy0, ours0 = cpu_ticks()
        t = time.perf_counter()
        out = run()
        secs = time.perf_counter() - t
        busy1, ours1 = cpu_ticks()
        times.append(round(secs, 3))
        others.append(round(max(0, (busy1 - busy0) - (ours1 - ours0)) / os.sysconf("SC_CLK_TCK") / secs, 2))
    return min(times), times, max(others), out


def ids_of(rows) -> list[str]:
    return sorted(r["order_id"] for r in rows)


# --- the Apache Hudi 1.2 side (its own process) -----------------------------------------------

def worker(todo: str, done: str) -> int:
    """Hudi 1.2's datasource: the query on the table, data skipping on and off (one warm-up each)."""
    from tablespec.engine.hudi_bundle import session_conf
    from tablespec.engine.session import get_spark

    job = json.loads(open(todo).read())
    t = time.perf_counter()
    spark = get_spark(job["master"], {"spark.driver.memory": job["driver_memory"], **session_conf(job["jar"]),
                                      "spark.python.daemon.module": "pyspark.daemon"}, app_name="hudi-1.2")
    out: dict = {"spark_start_s": round(time.perf_counter() - t, 2)}
    try:
        where = f"seq >= {job['a']} and seq < {job['b']}"
        for label, skipping in (("skipping on", "true"), ("skipping off", "false")):
            def run(skipping=skipping):
                return spark.read.format("hudi").option("hoodie.metadata.enable", "true") \
                    .option("hoodie.enable.data.skipping", skipping).load(job["path"]).where(where).collect()
            run()   # warm-up
            secs, times, others, rows = best(job["repeat"], run)
            out[label] = dict(seconds=secs, runs=times, other_cpu_cores=others, rows=len(rows),
                              ids=ids_of(rows))
    except Exception:  # noqa: BLE001 - reported to the parent with Hudi's own message
        out["error"] = traceback.format_exc()[-4000:]
    return finish_worker(spark, out, done)


def hudi_reads(master: str, driver_memory: str, path: str, a: int, b: int, repeat: int, work: str) -> dict:
    from tablespec.engine.hudi_bundle import bundle_jar

    todo, done = os.path.join(work, "hudi_job.json"), os.path.join(work, "hudi_out.json")
    with open(todo, "w") as fh:
        json.dump(dict(jar=str(bundle_jar(version=HUDI_VERSION)), master=master, driver_memory=driver_memory,
                       path=path, a=a, b=b, repeat=repeat), fh)
    env = {**os.environ, "TABLESPEC_HUDI_VERSION": HUDI_VERSION}
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--hudi-worker", todo, done], env=env,
                          capture_output=True, text=True)
    result = json.loads(open(done).read()) if os.path.exists(done) else {"error": proc.stderr[-4000:]}
    if "error" in result:
        raise SystemExit(f"Apache Hudi {HUDI_VERSION} failed (exit {proc.returncode}):\n{result['error']}")
    return result


# --- the run ---------------------------------------------------------------------------------

def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--hudi-worker":
        return worker(sys.argv[2], sys.argv[3])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--upsert-rows", type=int, default=None, help="updates upserted (default: 10%% of --rows)")
    ap.add_argument("--partitions", type=int, default=20)
    ap.add_argument("--files", type=int, default=4, help="base files per partition")
    ap.add_argument("--quick", action="store_true", help="smoke sizes: 100k rows, 10 partitions")
    ap.add_argument("--hudi", action=argparse.BooleanOptionalAction, default=True,
                    help=f"time Apache Hudi {HUDI_VERSION}'s read too (default: yes)")
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--repeat", type=int, default=2, help="timed upserts per table, best taken")
    ap.add_argument("--read-repeat", type=int, default=3, help="timed reads, best taken")
    ap.add_argument("--workdir", default=None, help="scratch directory, kept (default: a temporary one, removed)")
    ap.add_argument("--out", default="bench/results/skipping_bench.json")
    args = ap.parse_args()
    if args.quick:
        args.rows, args.partitions = 100_000, 10
    n = args.upsert_rows or max(1, args.rows // 10)
    a, b = query(args.rows, args.partitions, args.files)
    work = args.workdir or tempfile.mkdtemp(prefix="skipping_bench_")
    warehouse = os.path.join(work, "warehouse")
    os.makedirs(os.path.join(warehouse, "bench"), exist_ok=True)

    from tablespec.hudi.io import table_location
    from tablespec.table import Table

    spark = start_spark(args.master, args.driver_memory, os.path.join(work, "events"), app_name="skipping_bench")
    setup: dict[str, float] = {}
    results: dict[str, dict] = {}
    facts: dict[str, object] = {}
    try:
        # The two tables (untimed), and a warm-up of every timed step on tiny ones.
        tables = {}
        t = time.perf_counter()
        for label, skipping in (("with", WITH), ("without", "{}")):
            for prefix, rows, parts in (("w_", 2000, 2), ("", args.rows, args.partitions)):
                loaded = load_spec(f"{prefix}orders_{label}", skipping)
                location = table_location(warehouse, loaded.spec.spec.location)
                facts[f"{prefix}setup {label}"] = apply_until_clean(spark, loaded, warehouse)
                Table(loaded.spec, location, spark).write(load_input(spark, rows, parts, args.files), "bulk_insert")
                tables[prefix + label] = (loaded, location)
        setup["load"] = round(time.perf_counter() - t, 2)
        for label in ("with", "without"):
            facts[f"metadata partitions {label}"] = metadata_partitions(tables[label][1])
        if facts["metadata partitions with"] != ("column_stats", "files", "partition_stats") or \
                facts["metadata partitions without"] != ("files",):
            raise SystemExit(f"skipping_bench setup is wrong: {facts}")

        def upsert(label: str, prefix: str, i: int, rows: int, parts: int, count: int):
            loaded, source = tables[prefix + label]
            copy = f"{source}_run{i}"
            shutil.copytree(source, copy)
            table = Table(loaded.spec, copy, spark)
            return copy, lambda: table.write(update_input(spark, rows, count, parts), "upsert")

        def read(loaded, location: str, lo: int, hi: int):
            table = Table(loaded.spec, location, spark)
            return lambda: table.read(filters=[("seq", ">=", lo), ("seq", "<", hi)]).collect()

        t = time.perf_counter()
        for label in ("with", "without"):
            copy, run = upsert(label, "w_", 0, 2000, 2, 200)
            run()
            read(tables["w_" + label][0], copy, 0, 10)()
        setup["warm-up"] = round(time.perf_counter() - t, 2)

        # 1. The upsert, alternating between the tables, each run on a fresh copy.
        upserted: dict[str, str] = {}
        runs: dict[str, list] = {"with": [], "without": []}
        for i in range(args.repeat):
            for label in ("with", "without") if i % 2 == 0 else ("without", "with"):
                copy, run = upsert(label, "", i, args.rows, args.partitions, n)
                secs, _, others, result = best(1, run)
                if result.updated != n:
                    raise SystemExit(f"upsert {label}: {result.updated} updated, not {n}")
                runs[label].append((secs, others))
                upserted.setdefault(label, copy)
        for label in ("with", "without"):
            times = [s for s, _ in runs[label]]
            results[f"upsert {label}"] = dict(seconds=min(times), runs=times,
                                              other_cpu_cores=max(o for _, o in runs[label]))
        if metadata_partitions(upserted["with"]) != facts["metadata partitions with"]:
            raise SystemExit("the upsert dropped an index partition")

        # 2. The selective read, on the upserted tables.
        found = {}
        for label in ("with", "without"):
            run = read(tables[label][0], upserted[label], a, b)
            run()
            secs, times, others, rows = best(args.read_repeat, run)
            results[f"read {label}"] = dict(seconds=secs, runs=times, other_cpu_cores=others, rows=len(rows))
            found[label] = ids_of(rows)
        hudi_copy = os.path.join(work, "hudi_reads", "orders_with")
        shutil.copytree(upserted["with"], hudi_copy)
    finally:
        spark.stop()

    if args.hudi:
        t = time.perf_counter()
        hudi = hudi_reads(args.master, args.driver_memory, hudi_copy, a, b, args.read_repeat, work)
        setup["Hudi 1.2 process"] = round(time.perf_counter() - t, 2)
        for label in ("skipping on", "skipping off"):
            found[f"Hudi {label}"] = hudi[label].pop("ids")
            results[f"read Hudi 1.2 {label}"] = hudi[label]
    if any(ids != found["with"] for ids in found.values()) or len(found["with"]) != b - a:
        raise SystemExit(f"the reads differ: {({k: len(v) for k, v in found.items()})}, expected {b - a} rows")

    secs = {k: v["seconds"] for k, v in results.items()}
    ratios = {"upsert with / without": secs["upsert with"] / secs["upsert without"],
              "read without / with": secs["read without"] / secs["read with"]}
    if args.hudi:
        ratios["read tablespec / Hudi 1.2"] = secs["read with"] / secs["read Hudi 1.2 skipping on"]
        ratios["read Hudi 1.2 off / on"] = secs["read Hudi 1.2 skipping off"] / secs["read Hudi 1.2 skipping on"]
    goals = {k: dict(ratio=round(ratios[k], 3), goal=f"<= {g}", met=ratios[k] <= g) for k, g in GOALS.items()
             if k in ratios}
    goals["read without / with"] = dict(ratio=round(ratios["read without / with"], 3), goal=f">= {SPEEDUP_GOAL}",
                                        met=ratios["read without / with"] >= SPEEDUP_GOAL)

    print(f"data skipping, version 9: {args.rows:,} rows, {args.partitions} partitions x {args.files} files, "
          f"{len(STATS_COLUMNS)} columns with statistics + partition statistics; upsert of {n:,} updates; read of "
          f"seq in [{a:,}, {b:,}) ({b - a:,} rows); master {args.master}, {os.cpu_count()} cpus")
    print(f"setup: Spark start {SPARK_START['seconds']:.1f}s, " + ", ".join(f"{k} {v:.1f}s" for k, v in setup.items()))
    print(f"{'phase':<30}{'seconds':>9}  {'runs':<24}{'others':>7}")
    for phase, r in results.items():
        print(f"{phase:<30}{r['seconds']:>9.2f}  {', '.join(f'{s:.2f}' for s in r['runs']):<24}"
              f"{r['other_cpu_cores']:>7.2f}")
    print("others = CPU cores other processes kept busy (the most over the runs)")
    print("ratios: " + ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items()))
    print("goals: " + ", ".join(f"{k} {g['ratio']:.2f}x {g['goal']}{'' if g['met'] else ' NOT met'}"
                                for k, g in goals.items()))
    write_report(args.out, {
        "rows": args.rows, "upsert_rows": n, "partitions": args.partitions, "files_per_partition": args.files,
        "stats_columns": list(STATS_COLUMNS), "query": [a, b], "master": args.master, "cpus": os.cpu_count(),
        "driver_memory": args.driver_memory, "repeat": args.repeat, "read_repeat": args.read_repeat,
        "hudi_version": HUDI_VERSION if args.hudi else None, "spark_start_s": SPARK_START["seconds"],
        "setup_s": setup, "results": results, "ratios": {k: round(v, 3) for k, v in ratios.items()},
        "goals": goals, "facts": {k: v for k, v in facts.items() if not k.startswith("w_")}})
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Record-level index (Apache Hudi's record index): lookup latency at 2M and 10M keys, and the tagging share of an upsert.

Lookups (no Spark): Hudi's record index of N keys ("ord-%010d", 0 <= id < N) is built through the
format layer directly (tablespec.hudi.mdt.record_index_writer on an empty table: one HFile base
file per record-index file group, as many file groups as Hudi gives N keys, written one file group
at a time), not by ingesting N rows through Spark. Each repetition looks up 100k keys, half present (ids below N) and
half absent (ids from N to 2N), in random order, on the driver as `Table.lookup` does
(record_index_reader.lookup); p50 / p95 over the repetitions, wall and CPU (process time: on a
shared machine the steadier figure). Targets: p95 at most 60 ms at 2M keys, 100 ms at 10M. Before
them, a cold lookup (the reader's caches cleared: the first after a process start, imports aside),
target at most 300 ms at 2M.

Tagging share (Spark): one orders table (bench/_common.py) is loaded with `--rows` rows,
copied, and the copy moved to RECORD_LEVEL through `index_migration` (plan -> apply: Hudi's record
index built: its seconds, the driver's CPU seconds and peak RSS of driver / JVM / Python workers,
`--build-only` stops there). The same upsert (half updates over every partition, half new keys)
then runs into both. Tagging runs inside the write job, so it is the task seconds the writer reports
(`WriteResult.tag_seconds`: record-index lookups, SIMPLE's key-column reads, insert placement),
and its share is of the upsert's task capacity (wall seconds x cores); the record index's change
is written with the commit's metadata-table deltacommit and is part of the upsert's time. Prints
a table and writes JSON (default bench/results/rli_bench.json).

The peer, in the same Spark session, is Apache Hudi 0.15.0 (bench/_common.py hudi_options: same
key, partition and precombine fields, snappy, meta fields populated, Hudi's metadata table as
Hudi defaults it: enabled, `files` partition). Hudi 0.15 has no stand-alone record-index build in
its Spark bundle: the async HoodieIndexer is a hudi-utilities job, and the metadata-table
procedures (create_metadata_table, init_metadata_table) take catalog table names and (re)create
the metadata table as a whole. What it offers on a Spark write is the bootstrap of the metadata
table's record_index partition by the first write that enables it, which reads the keys of every
latest base file and writes the index before that write's own commit. So:
- setup (untimed): the same `--rows` rows bulk-inserted into a Hudi SIMPLE table, copied twice;
- Hudi index build: an upsert of one existing row (unchanged values) into one copy with
  hoodie.metadata.record.index.enable=true and hoodie.index.type=RECORD_INDEX (the bootstrap
  plus a one-row copy-on-write commit); the same one-row upsert with SIMPLE into the other copy is
  timed as the write's own share, and the difference reported as the build's estimate;
- Hudi upsert SIMPLE / RECORD_INDEX: the same upsert as tablespec's into the SIMPLE table and
  into the indexed copy (tagging by a key join / by record-index lookups in the metadata table,
  copy-on-write merge, metadata table updated). Hudi does not expose its tagging time apart, so
  whole upserts are compared; tablespec's upserts here materialise their tagging to time it,
  so bench/upsert_bench.py's RECORD_LEVEL vs RECORD_INDEX ratio is the cleaner one.
Ratios (tablespec / Hudi seconds): index_build = tablespec's index_migration apply / Hudi's
bootstrapping write; index_build_vs_estimate = the same over Hudi's write minus the one-row upsert.
Lookups have no Hudi counterpart here: Hudi reads its record index inside its writers and readers
(HoodieBackedTableMetadata.readRecordIndex, which the interop tests call to check answers).

    python bench/rli_bench.py [--sizes 2000000,10000000] [--lookups 100000] [--repeat 20] [--rows 1000000]
    python bench/rli_bench.py --sizes 2000000 --rows 200000 --upsert-rows 20000   # quick run
    python bench/rli_bench.py --quick       # development: 200k keys, 10 lookup runs, 100k rows, 10k upserted
    python bench/rli_bench.py --no-hudi     # without Apache Hudi
    python bench/rli_bench.py --sizes "" --rows 10000000 --build-only   # the build's driver memory at 10M rows
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from _common import (
    PeakRss,
    add_hudi_arguments,
    hudi_options,
    hudi_read,
    hudi_write,
    jvm_pid,
    make_table,
    orders,
    rss_cell,
    set_hudi_overrides,
    spec_text,
    start_spark,
    write_report,
)

from tablespec.actions.metadata import create_table
from tablespec.hudi.mdt import record_index_reader, record_index_writer
from tablespec.hudi.mdt.record_index import file_group_count, file_group_indices
from tablespec.hudi.table import HudiTable, Location
from tablespec.spec.loader import load_spec_text

INSTANT = "20260101000000000"


def order_keys(ids: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise("ord-", pc.utf8_lpad(pc.cast(pa.array(ids), pa.string()), 10, "0"), "")


def build_index(location: str, n: int) -> tuple[HudiTable, int, float]:
    """Hudi's record index of keys 0..n-1 on an empty table (partition and file id vary like a
    real table's), one file group's entries at a time (`record_index_writer.write_file_group`, as
    the Spark build's executors write them); returns the table, its file-group count and the
    build's seconds."""
    spec = load_spec_text(spec_text("orders", "{type: SIMPLE}"), "orders.yaml").specs[0].spec
    table = HudiTable.open(location)
    create_table(table, spec)
    t = time.perf_counter()
    count = file_group_count(n)
    chunks = np.array_split(np.arange(n), max(1, n // 1_000_000))
    groups = np.concatenate([file_group_indices(order_keys(c).to_pylist(), count) for c in chunks])

    def write(instant: str, one_x: bool) -> list:
        out = []
        for index in range(count):
            ids = np.flatnonzero(groups == index)          # ascending ids: keys in order
            day, file_no = pa.array(ids % 30 + 1).cast(pa.string()), pa.array(ids % 997).cast(pa.string())
            entries = pa.table({"key": order_keys(ids),
                                "partition": pc.binary_join_element_wise("order_date=2026-01-", day, ""),
                                "file_id": pc.binary_join_element_wise("fg-", file_no, ""),
                                "instant": pa.array([INSTANT] * len(ids), pa.string())})
            out.append(record_index_writer.write_file_group(table.storage, table.base, instant, index, one_x, entries))
        return out
    record_index_writer.initialize_written(table, count, write)
    return table, len(record_index_reader.slices(table)[0]), time.perf_counter() - t


def lookup_latency(table: HudiTable, n: int, lookups: int, repeat: int) -> dict:
    rng = np.random.default_rng(42)

    def keys() -> list[str]:
        ids = np.concatenate([rng.choice(n, lookups // 2, replace=False), n + rng.choice(n, lookups - lookups // 2,
                                                                                          replace=False)])
        return order_keys(rng.permutation(ids)).to_pylist()

    def timed(asked: list[str]) -> tuple[float, float, int]:
        wall, cpu = time.perf_counter(), time.process_time()
        out = record_index_reader.lookup(table, asked)
        return time.perf_counter() - wall, time.process_time() - cpu, len(out)

    record_index_reader.lookup(table, order_keys(np.arange(10)).to_pylist())  # imports
    record_index_reader.clear_cache()                                           # cold: nothing decoded yet
    cold_wall, cold_cpu, first = timed(keys())
    runs = [timed(keys()) for _ in range(repeat)]
    ms, cpu_ms = np.array([r[0] for r in runs]) * 1000, np.array([r[1] for r in runs]) * 1000
    found = [first] + [r[2] for r in runs]
    folder = os.path.join(table.base, ".hoodie", "metadata", "record_index")
    return dict(entries=n, lookups=lookups, repeat=repeat, p50_ms=float(np.percentile(ms, 50)),
                p95_ms=float(np.percentile(ms, 95)), max_ms=float(ms.max()),
                cpu_p50_ms=float(np.percentile(cpu_ms, 50)), cpu_p95_ms=float(np.percentile(cpu_ms, 95)),
                cold_ms=cold_wall * 1000, cold_cpu_ms=cold_cpu * 1000, found=found,
                ok=all(f == lookups // 2 for f in found),
                index_bytes=sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)))


def upsert_input(spark, rows: int, n: int, partitions: int):
    from pyspark.sql import functions as F
    step = max(1, rows // max(n // 2, 1))
    updates = orders(spark.range(0, n // 2).select((F.col("id") * step + F.col("id") % step).alias("id")),
                     partitions, version=1)
    return updates.unionByName(orders(spark.range(rows, rows + n - n // 2), partitions, version=1))


def tagging_share(args, work: str) -> dict:
    from tablespec.apply import Applier
    from tablespec.plan.builder import build_plan
    from tablespec.state import observe
    from tablespec.table import Table
    spark = start_spark(args.master, args.driver_memory, os.path.join(work, "events"), app_name="rli_bench",
                        hudi=args.hudi)
    out = {}
    try:
        warehouse = os.path.join(work, "warehouse")
        warm = make_table(spark, os.path.join(work, "warmup"), "warm", "{type: SIMPLE}")
        warm.write(orders(spark.range(0, 2000), 3, 0), "bulk_insert")
        warm.write(upsert_input(spark, 2000, 200, 3), "upsert")
        simple = make_table(spark, warehouse, "orders", "{type: SIMPLE}")
        t = time.perf_counter()
        simple.write(orders(spark.range(0, args.rows), args.partitions, 0), "bulk_insert")
        out["load_s"] = time.perf_counter() - t
        rli_location = simple.location + "_rli"
        shutil.copytree(simple.location, rli_location)
        text = spec_text("orders", "{type: RECORD_LEVEL}").replace("location: bench/orders", "location: bench/orders_rli")
        loaded = load_spec_text(text, "orders.yaml")
        plan = build_plan(loaded.specs, {rli_location: observe(HudiTable.open(rli_location))}, Location.parse(warehouse))
        t, cpu = time.perf_counter(), time.process_time()
        with PeakRss(jvm_pid(spark)) as rss:
            built = Applier(spark=spark).apply(plan).actions[0].actual
        out["index_build"] = dict(seconds=time.perf_counter() - t, driver_cpu_s=time.process_time() - cpu,
                                  peak_rss_mb=rss.peak, **built.model_dump())
        if args.build_only:
            return out
        tables = {"SIMPLE": simple, "RECORD_LEVEL": Table(loaded.specs[0].spec, rli_location, spark)}
        for kind, table in tables.items():
            t = time.perf_counter()
            result = table.write(upsert_input(spark, args.rows, args.upsert_rows, args.partitions), "upsert")
            total = time.perf_counter() - t
            cores = spark.sparkContext.defaultParallelism
            out[kind] = dict(upsert_s=total, tag_s=result.tag_seconds, tag_share=result.tag_seconds / (total * cores),
                             inserted=result.inserted, updated=result.updated)
        from tablespec.index import verify
        out["verify_ok"] = verify(HudiTable.open(rli_location)).ok
        if args.hudi:
            out["hudi"] = hudi_peer(spark, args, work)
    finally:
        spark.stop()
    return out


def hudi_peer(spark, args, work: str) -> dict:
    """Apache Hudi: record-index bootstrap on an existing SIMPLE table, then the same upsert with each index."""
    out = {}
    simple, rli, ref = (os.path.join(work, "apache_hudi", n) for n in ("orders", "orders_rli", "orders_ref"))
    warm = os.path.join(work, "apache_hudi", "warm")
    hudi_write(orders(spark.range(0, 2000), 3, 0), warm, hudi_options("warm", "SIMPLE"), "bulk_insert")
    hudi_write(orders(spark.range(0, 1), 3, 0), warm, hudi_options("warm", "RECORD_LEVEL"), "upsert")
    hudi_write(upsert_input(spark, 2000, 200, 3), warm, hudi_options("warm", "RECORD_LEVEL"), "upsert")
    t = time.perf_counter()
    hudi_write(orders(spark.range(0, args.rows), args.partitions, 0), simple, hudi_options("orders", "SIMPLE"),
               "bulk_insert")
    out["load_s"] = time.perf_counter() - t
    shutil.copytree(simple, rli)
    shutil.copytree(simple, ref)
    one_row = orders(spark.range(0, 1), args.partitions, 0)
    t = time.perf_counter()
    hudi_write(one_row, rli, hudi_options("orders", "RECORD_LEVEL"), "upsert")
    build = time.perf_counter() - t
    t = time.perf_counter()
    hudi_write(one_row, ref, hudi_options("orders", "SIMPLE"), "upsert")
    one = time.perf_counter() - t
    shutil.rmtree(ref, ignore_errors=True)
    out["index_build"] = dict(seconds=build, one_row_upsert_s=one, build_estimate_s=build - one,
                              index_files=len([f for f in os.listdir(os.path.join(rli, ".hoodie", "metadata",
                                                                                   "record_index"))
                                               if f.startswith("record-index-")]))
    for kind, location in (("SIMPLE", simple), ("RECORD_LEVEL", rli)):
        t = time.perf_counter()
        stats = hudi_write(upsert_input(spark, args.rows, args.upsert_rows, args.partitions), location,
                           hudi_options("orders", kind), "upsert")
        out[kind] = dict(upsert_s=time.perf_counter() - t, inserted=stats["inserted"], updated=stats["updated"])
    expected = args.rows + args.upsert_rows - args.upsert_rows // 2
    out["rows_ok"] = all(hudi_read(spark, loc).count() == expected for loc in (simple, rli))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2000000,10000000", help="index sizes (keys), comma-separated")
    ap.add_argument("--lookups", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows of the upsert table (0: skip the Spark part)")
    ap.add_argument("--upsert-rows", type=int, default=100_000, help="rows upserted; half update existing keys")
    ap.add_argument("--partitions", type=int, default=30)
    ap.add_argument("--build-only", action="store_true", help="of the Spark part, the index build alone")
    ap.add_argument("--quick", action="store_true",
                    help="development sizes: 200k keys, 20k lookups x 10, 100k rows, 10k upserted, 10 partitions")
    add_hudi_arguments(ap)
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--workdir", default=None, help="scratch directory, kept (default: a temporary one, removed)")
    ap.add_argument("--out", default="bench/results/rli_bench.json")
    args = ap.parse_args()
    hudi_overrides = set_hudi_overrides(args.hudi_option)
    if args.quick:
        args.sizes, args.lookups, args.repeat = "200000", 20_000, 10
        args.rows, args.upsert_rows, args.partitions = 100_000, 10_000, 10
    work = args.workdir or tempfile.mkdtemp(prefix="rli_bench_")
    targets = {2_000_000: 60.0, 10_000_000: 100.0}
    result: dict = {"lookups": {}, "cpus": os.cpu_count(), "hudi_overrides": hudi_overrides}
    try:
        print(f"lookup of {args.lookups:,} keys (half present), {args.repeat} repetitions, driver only")
        print(f"{'entries':>12}{'groups':>9}{'index MB':>10}{'build s':>9}{'p50 ms':>9}{'p95 ms':>9}{'target':>9}"
              f"{'CPU p50':>9}{'CPU p95':>9}{'cold ms':>9}{'cold CPU':>9}")
        for n in (int(s) for s in args.sizes.split(",") if s):
            location = os.path.join(work, f"index_{n}")
            table, groups, build_s = build_index(location, n)
            r = lookup_latency(table, n, args.lookups, args.repeat)
            target = targets.get(n)
            r.update(file_groups=groups, build_s=build_s, target_p95_ms=target,
                     target_met=None if target is None else r["p95_ms"] <= target)
            result["lookups"][str(n)] = r
            print(f"{n:>12,}{groups:>9}{r['index_bytes'] / 2**20:>10.1f}{build_s:>9.1f}{r['p50_ms']:>9.1f}"
                  f"{r['p95_ms']:>9.1f}{'' if target is None else f'{target:.0f}':>9}{r['cpu_p50_ms']:>9.1f}"
                  f"{r['cpu_p95_ms']:>9.1f}{r['cold_ms']:>9.0f}{r['cold_cpu_ms']:>9.0f}"
                  f"{'' if r['ok'] else '  WRONG RESULT'}")
            shutil.rmtree(location, ignore_errors=True)
        if args.rows:
            share = tagging_share(args, work)
            result["upsert"] = {"rows": args.rows, "upsert_rows": args.upsert_rows, "partitions": args.partitions,
                                "master": args.master, **share}
            b = share["index_build"]
            print(f"\nindex build (index_migration) of {args.rows:,} rows, {args.partitions} partitions: "
                  f"{b['seconds']:.1f}s, driver CPU {b['driver_cpu_s']:.1f}s, peak RSS MiB driver/JVM/workers "
                  f"{rss_cell(b['peak_rss_mb'])}")
            if args.build_only:
                write_report(args.out, result)
                return 0 if all(r["ok"] for r in result["lookups"].values()) else 1
            print(f"upsert of {args.upsert_rows:,} rows (half updates) into {args.rows:,} rows, "
                  f"{args.partitions} partitions")
            print(f"{'index':<14}{'upsert s':>9}{'tag task s':>11}{'tag share':>10}")
            for kind in ("SIMPLE", "RECORD_LEVEL"):
                u = share[kind]
                print(f"{kind:<14}{u['upsert_s']:>9.2f}{u['tag_s']:>11.2f}{u['tag_share']:>9.0%}")
            print(f"verify after the upserts: {'ok' if share['verify_ok'] else 'MISMATCH'}")
            if "hudi" in share:
                h = share["hudi"]
                b = h["index_build"]
                ratios = {"index_build": share["index_build"]["seconds"] / b["seconds"],
                          "index_build_vs_estimate": share["index_build"]["seconds"] / max(b["build_estimate_s"], 1e-3),
                          **{f"upsert {k}": share[k]["upsert_s"] / h[k]["upsert_s"]
                             for k in ("SIMPLE", "RECORD_LEVEL")}}
                h["ratios"] = result["ratios_to_hudi"] = ratios
                print(f"Apache Hudi 0.15.0: record-index bootstrap by a one-row upsert {b['seconds']:.1f}s (the same "
                      f"upsert without it {b['one_row_upsert_s']:.1f}s, build ~{b['build_estimate_s']:.1f}s, "
                      f"{b['index_files']} index file groups); upsert SIMPLE {h['SIMPLE']['upsert_s']:.2f}s, "
                      f"RECORD_INDEX {h['RECORD_LEVEL']['upsert_s']:.2f}s; rows {'ok' if h['rows_ok'] else 'MISMATCH'}")
                print("tablespec / Hudi: " + ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items()))
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    write_report(args.out, result)
    ok = all(r["ok"] for r in result["lookups"].values()) and result.get("upsert", {}).get("verify_ok", True) \
        and result.get("upsert", {}).get("hudi", {}).get("rows_ok", True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

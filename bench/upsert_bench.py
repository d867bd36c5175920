"""Bulk insert and upsert cost: BUCKET, SIMPLE and RECORD_LEVEL, against plain Spark and Apache Hudi.

Creates three tables with the same schema (key order_id, partitioned by order_date, ordering
field updated_at), BUCKET(n), SIMPLE and RECORD_LEVEL, bulk-inserts `--rows` rows into each
(timed), then upserts `--upsert-rows` rows (half updates of existing keys spread over every
partition, half new keys) into each and times it. The baseline, in the same run, is plain Spark
reading the base files the BUCKET upsert rewrote and writing them plus the new rows as parquet
(the row count the upsert writes); the same over the SIMPLE upsert's files is shown for
reference (a few large files instead of many small ones); the bulk inserts' baseline is plain
Spark writing the same rows, with meta-like columns, partitionBy(order_date). Data is generated
by Spark expressions, so every run is the same.

The peer, in the same session and on the same rows: Apache Hudi 0.15.0 through its Spark
datasource (bench/_common.py hudi_options: same key, partition field, precombine field, bucket
count and hash field, meta fields populated, snappy as tablespec writes, 128MiB / 100MiB file
sizing as tablespec's defaults; Hudi's metadata table as Hudi defaults it: enabled, its `files`
partition updated by every commit; inline clean and archival off, as a tablespec write does
neither):
- Hudi bulk_insert <kind>: `bulk_insert` (row writer, Hudi's default sort mode NONE) into a new
  table: BUCKET with hoodie.index.type=BUCKET (simple bucket engine, same buckets), SIMPLE with
  hoodie.index.type=SIMPLE, RECORD_LEVEL with hoodie.index.type=RECORD_INDEX and
  hoodie.metadata.record.index.enable=true (the metadata table's record_index partition is
  initialised and filled by this commit);
- Hudi upsert <kind>: `upsert` of the same input into that table: tagging by the index (bucket
  hash; a join with the keys of the affected partitions' files; record-index lookups in the
  metadata table), copy-on-write merge of the touched file groups, new file groups or small-file
  packing for inserts, and the metadata table (files, and record_index for RECORD_INDEX) updated
  in the same commit.
Every Hudi base file carries Hudi's footer bloom filter (about 420 KiB, whatever the index), hence
its larger bytes written, most visible with BUCKET's many small files.
Repeated runs of an upsert write copies of the loaded table (copied untimed), as tablespec's do.
Columns: x baseline = seconds / the BUCKET upsert's plain Spark baseline (bulk inserts: their
own baseline); x Hudi = tablespec seconds / Hudi seconds for the same phase. Prints a table and
writes JSON (default bench/results/upsert_bench.json); stage timings per phase come from Spark's
event log (the UI is off), and each timed phase records how many CPU cores other processes kept
busy, since the machine may be shared.

    python bench/upsert_bench.py [--rows 5000000] [--upsert-rows 500000] [--partitions 30] [--buckets 64]
    python bench/upsert_bench.py --rows 500000 --upsert-rows 50000     # quick run
    python bench/upsert_bench.py --quick                               # development: 100k rows, 10k upserted
    python bench/upsert_bench.py --no-hudi                             # tablespec and plain Spark only
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

from _common import (add_hudi_arguments, dir_bytes, EventLog, goal, hudi_options, hudi_read, hudi_write,
                     latest_base_files, make_table, orders, parquet_files, Phases, rss_cell, set_hudi_overrides,
                     set_phase, SPARK_START, stage_line, start_spark, write_report)
from tablespec.hudi.naming import BaseFileName
from tablespec.table import Table


def update_ids(spark, rows: int, n: int):
    """n distinct existing ids, one per block of rows // n, at a varying offset so every partition is hit."""
    from pyspark.sql import functions as F

    step = max(1, rows // max(n, 1))
    return spark.range(0, n).select((F.col("id") * step + F.col("id") % step).alias("id"))


def upsert_input(spark, rows: int, n_updates: int, n_new: int, partitions: int):
    updates = orders(update_ids(spark, rows, n_updates), partitions, version=1)
    new = orders(spark.range(rows, rows + n_new), partitions, version=1)
    return updates.unionByName(new)


def meta_like():
    """Columns standing in for Hudi's meta columns (same types and similar sizes) in the baselines."""
    from pyspark.sql import functions as F

    meta = [F.lit("20260101000000000").alias("_hoodie_commit_time"),
            F.concat(F.lit("20260101000000000_0_"), F.col("order_id")).alias("_hoodie_commit_seqno"),
            F.col("order_id").alias("_hoodie_record_key"),
            F.concat(F.lit("order_date="), F.col("order_date").cast("string")).alias("_hoodie_partition_path"),
            F.lit("00000000-0000-0000-0000-000000000000-0_0-0-0_20260101000000000.parquet")
            .alias("_hoodie_file_name")]
    return meta


def baseline_load(spark, rows, out: str) -> None:
    """Plain Spark: the bulk insert's rows with meta-like columns, written partitionBy(order_date)."""
    rows.select(*meta_like(), "*").write.mode("overwrite").partitionBy("order_date").parquet(out)


def written(location: str, files) -> tuple[set[str], int]:
    """File ids and total bytes of the files a write reports (paths relative to the table)."""
    ids = {BaseFileName.parse(os.path.basename(f)).file_id for f in files}
    return ids, sum(os.path.getsize(os.path.join(location, f)) for f in files)


def baseline_write(spark, files: list[str], new_rows, out: str, partitioned: bool = False) -> None:
    """Plain Spark: read the base files, add the new rows (with meta-like columns), write parquet
    (with `partitioned`, partitionBy(order_date) as the table is)."""
    rows = spark.read.parquet(*files).unionByName(new_rows.select(*meta_like(), "*")).write.mode("overwrite")
    (rows.partitionBy("order_date") if partitioned else rows).parquet(out)


def partition_files(files: dict[str, tuple[str, int]], touched: list[str]) -> list[tuple[str, int]]:
    """(path, size) of every latest base file in the partitions (folders) of the `touched` files."""
    folders = {os.path.dirname(p) for p in touched}
    return sorted(f for f in files.values() if os.path.dirname(f[0]) in folders)


def tag_share(described: dict[str, dict], runs: list[float]) -> dict:
    """An upsert's Spark job seconds by tablespec's job description (its writer labels the jobs that tag
    rows, key preparation included, those that write file groups, and the record-index delta's), over
    all runs, and tagging's share of the upsert's seconds. BUCKET tables have no tagging jobs: a
    row's bucket is hashed as it is prepared for the write."""
    secs = {part: described.get(f"tablespec: {part}", {}).get("wall_s", 0.0) for part in ("tag", "write", "index")}
    return dict(**{f"{part}_s": round(s, 3) for part, s in secs.items()}, upsert_s=round(sum(runs), 3),
                share=round(secs["tag"] / sum(runs), 3))


KINDS = {"BUCKET": None, "SIMPLE": "{type: SIMPLE}", "BLOOM": "{type: BLOOM}", "RECORD_LEVEL": "{type: RECORD_LEVEL}"}
# The plain baselines, run over the BUCKET and the SIMPLE table; BLOOM and RECORD_LEVEL tables are
# laid out as SIMPLE's (same rows, same file sizing, no buckets) and take SIMPLE's.
BASELINE_KIND = {"BUCKET": "BUCKET", "SIMPLE": "SIMPLE", "BLOOM": "SIMPLE", "RECORD_LEVEL": "SIMPLE"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=5_000_000, help="rows loaded into each table (bulk insert)")
    ap.add_argument("--upsert-rows", type=int, default=500_000, help="rows upserted; half update existing keys")
    ap.add_argument("--partitions", type=int, default=30, help="distinct order_date values")
    ap.add_argument("--buckets", type=int, default=64, help="numBuckets of the BUCKET table")
    ap.add_argument("--quick", action="store_true",
                    help="development sizes: 100k rows, 10k upserted, 10 partitions, 16 buckets, one run each")
    add_hudi_arguments(ap)
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--driver-memory", default="8g")
    ap.add_argument("--repeat", type=int, default=None,
                    help="timed runs per phase, best taken (default 2 up to 1M rows, else 1)")
    ap.add_argument("--workdir", default=None, help="scratch directory, kept (default: a temporary one, removed)")
    ap.add_argument("--out", default="bench/results/upsert_bench.json")
    args = ap.parse_args()
    hudi_overrides = set_hudi_overrides(args.hudi_option)
    if args.quick:
        args.rows, args.upsert_rows, args.partitions, args.buckets = 100_000, 10_000, 10, 16
        args.repeat = args.repeat or 1
    repeat = args.repeat or (2 if args.rows <= 1_000_000 else 1)
    n_updates = min(args.upsert_rows // 2, args.rows)
    n_new = args.upsert_rows - n_updates
    n_in = n_updates + n_new
    kinds = {k: v or f"{{type: BUCKET, numBuckets: {args.buckets}}}" for k, v in KINDS.items()}

    work = args.workdir or tempfile.mkdtemp(prefix="upsert_bench_")
    events = os.path.join(work, "events")
    spark = start_spark(args.master, args.driver_memory, events, app_name="upsert_bench", hudi=args.hudi)
    sc = spark.sparkContext
    phases = Phases(spark, repeat)
    timings, measure = phases.timings, phases.measure
    setup: dict[str, float] = {}
    io: dict[str, dict] = {}  # phase -> files / bytes read and written
    upserts: dict[str, dict] = {}
    hudi: dict[str, dict] = {}
    checks: dict[str, dict] = {}

    def load_input():
        return orders(spark.range(0, args.rows), args.partitions, 0)

    def new_input():
        return upsert_input(spark, args.rows, n_updates, n_new, args.partitions)

    try:
        warehouse = os.path.join(work, "warehouse")
        # Warm-up: a tiny load + upsert on every index type, through tablespec and Hudi, and tiny
        # baseline writes (JVM, JIT, Python workers, imports).
        set_phase(sc, "warm-up")
        t = time.perf_counter()
        for name, index in (("wbucket", "{type: BUCKET, numBuckets: 4}"), ("wsimple", "{type: SIMPLE}"),
                            ("wbloom", "{type: BLOOM}"), ("wrli", "{type: RECORD_LEVEL}")):
            tiny = make_table(spark, os.path.join(work, "warmup"), name, index)
            tiny.write(orders(spark.range(0, 2000), 3, 0), "bulk_insert")
            tiny.write(upsert_input(spark, 2000, 100, 100, 3), "upsert")
        if args.hudi:
            for kind in kinds:
                location = os.path.join(work, "warmup", f"hudi_{kind.lower()}")
                options = hudi_options(f"w_{kind.lower()}", kind, 4)
                hudi_write(orders(spark.range(0, 2000), 3, 0), location, options, "bulk_insert")
                hudi_write(upsert_input(spark, 2000, 100, 100, 3), location, options, "upsert")
        baseline_write(spark, [p for p, _ in latest_base_files(tiny.location).values()],
                       orders(spark.range(2000, 2100), 3, 1), os.path.join(work, "warmup_out"))
        baseline_load(spark, orders(spark.range(0, 2000), 3, 0), os.path.join(work, "warmup_load"))
        setup["warm-up"] = time.perf_counter() - t

        # Bulk inserts: each run into a new table; the best run's table is the one upserted.
        tables: dict[str, Table] = {}
        hudi_tables: dict[str, str] = {}
        for kind, index in kinds.items():
            def load(i, kind=kind, index=index):
                table = make_table(spark, os.path.join(warehouse, f"load{i}"), f"orders_{kind.lower()}", index)
                return table, table.write(load_input(), "bulk_insert")

            tables[kind], result = measure(f"bulk_insert {kind}", load)
            io[f"bulk_insert {kind}"] = dict(files_read=0, bytes_read=0, files_written=len(result.files),
                                             bytes_written=written(tables[kind].location, result.files)[1])
            if args.hudi:
                options = hudi_options(f"orders_{kind.lower()}", kind, args.buckets)

                def hudi_load(i, kind=kind, options=options):
                    location = os.path.join(warehouse, f"hudi_load{i}", f"orders_{kind.lower()}")
                    return location, hudi_write(load_input(), location, options, "bulk_insert")

                location, stats = measure(f"Hudi bulk_insert {kind}", hudi_load)
                hudi_tables[kind] = location
                hudi[f"bulk_insert {kind}"] = stats
                io[f"Hudi bulk_insert {kind}"] = dict(files_read=0, bytes_read=0, files_written=stats["files_written"],
                                                      bytes_written=stats["bytes_written"])
        scratch = os.path.join(work, "baseline_load")
        measure("baseline bulk_insert", lambda _: baseline_load(spark, load_input(), scratch))
        io["baseline bulk_insert"] = dict(files_read=0, bytes_read=0, files_written=len(parquet_files(scratch)),
                                          bytes_written=dir_bytes(scratch))
        if repeat > 1:  # pristine copies for the repeated upsert runs
            for location in [t.location for t in tables.values()] + list(hudi_tables.values()):
                shutil.copytree(location, location + ".pristine")

        for kind, table in tables.items():
            before = latest_base_files(table.location)

            def fresh(i, table=table):
                """Run 0 writes the loaded table; later runs a copy of it as loaded (copied untimed)."""
                if not i:
                    return table, new_input()
                copy = Table(table.spec, f"{table.location}.run{i}", spark)
                shutil.copytree(table.location + ".pristine", copy.location)
                return copy, new_input()

            result, target = measure(f"upsert {kind}", lambda a: (a[0].write(a[1], "upsert"), a[0]), fresh)
            ids, out_bytes = written(target.location, result.files)
            touched = [before[f] for f in sorted(ids) if f in before]
            upserts[kind] = dict(inserted=result.inserted, updated=result.updated, files_written=len(result.files),
                                 bytes_written=out_bytes, files_read=len(touched),
                                 bytes_read=sum(size for _, size in touched), location=target.location,
                                 touched=[p for p, _ in touched], partition_files=partition_files(before, [
                                     p for p, _ in touched]))
            io[f"upsert {kind}"] = {k: upserts[kind][k] for k in ("files_read", "bytes_read", "files_written",
                                                                 "bytes_written")}
            if args.hudi:
                options = hudi_options(f"orders_{kind.lower()}", kind, args.buckets)

                def hudi_fresh(i, location=hudi_tables[kind]):
                    if not i:
                        return location
                    copy = f"{location}.run{i}"
                    shutil.copytree(location + ".pristine", copy)
                    return copy

                location, stats = measure(f"Hudi upsert {kind}",
                                          lambda loc, options=options: (loc, hudi_write(new_input(), loc, options,
                                                                                        "upsert")), hudi_fresh)
                hudi[f"upsert {kind}"] = dict(stats, location=location)
                io[f"Hudi upsert {kind}"] = dict(files_read=stats["files_merged"], bytes_read=None,
                                                 files_written=stats["files_written"],
                                                 bytes_written=stats["bytes_written"])

        # Plain Spark over the files each upsert rewrote, then over every file of the partitions it
        # touched, written partitionBy(order_date) (same page cache); the faster is the kind's baseline.
        for kind in ("BUCKET", "SIMPLE"):
            new_rows = orders(spark.range(args.rows, args.rows + n_new), args.partitions, version=1)
            for scope, inputs, partitioned in (("files", upserts[kind]["touched"], False),
                                               ("partitions", [p for p, _ in upserts[kind]["partition_files"]], True)):
                phase, scratch = f"baseline {kind} {scope}", os.path.join(work, f"baseline_{kind.lower()}_{scope}")
                measure(phase, lambda _, inputs=inputs, scratch=scratch, partitioned=partitioned:
                        baseline_write(spark, inputs, new_rows, scratch, partitioned))
                set_phase(sc, "verify")
                rows_out, rows_in = spark.read.parquet(scratch).count(), spark.read.parquet(*inputs).count()
                io[phase] = dict(files_read=len(inputs), bytes_read=sum(os.path.getsize(p) for p in inputs),
                                 files_written=len(parquet_files(scratch)), bytes_written=dir_bytes(scratch))
                checks[phase] = dict(rows=rows_out, expected=rows_in + n_new, ok=rows_out == rows_in + n_new)

        set_phase(sc, "verify")
        expected = args.rows + n_new
        for kind in tables:
            u = upserts[kind]
            count = Table(tables[kind].spec, u["location"], spark).read().count()
            checks[kind] = dict(rows=count, expected=expected, inserted=u["inserted"], updated=u["updated"],
                                ok=count == expected and u["inserted"] == n_new and u["updated"] == n_updates)
            if args.hudi:
                h = hudi[f"upsert {kind}"]
                count = hudi_read(spark, h["location"]).count()
                checks[f"Hudi {kind}"] = dict(rows=count, expected=expected, inserted=h["inserted"],
                                              updated=h["updated"], ok=count == expected and
                                              h["inserted"] == n_new and h["updated"] == n_updates)
    finally:
        set_phase(sc, None)
        spark.stop()

    log = EventLog(events)
    stages, described = log.phases(), log.job_descriptions()
    # Each kind's baseline: the faster of plain Spark over the touched files and over the touched partitions.
    fastest = {k: min((f"baseline {k} files", f"baseline {k} partitions"), key=phases.seconds) for k in ("BUCKET",
                                                                                                         "SIMPLE")}

    def baseline_of(phase: str) -> str:
        if "bulk_insert" in phase:
            return "baseline bulk_insert"
        words = phase.split()
        return fastest[words[1]] if words[0] == "baseline" else fastest[BASELINE_KIND[words[-1]]]

    tagging = {kind: tag_share(described.get(f"upsert {kind}", {}), timings[f"upsert {kind}"]["runs"])
               for kind in kinds}
    print(f"bulk insert of {args.rows:,} rows, then upsert of {n_in:,} rows ({n_updates:,} updates, {n_new:,} new "
          f"keys), {args.partitions} partitions, {' vs '.join(kinds)} (BUCKET({args.buckets}))"
          f"{', tablespec and Apache Hudi 0.15.0' if args.hudi else ''}; master {args.master}, "
          f"{os.cpu_count()} cpus; best of {repeat}")
    print(f"setup: Spark start {SPARK_START['seconds']:.1f}s, " + ", ".join(f"{k} {v:.1f}s" for k, v in setup.items()))
    print(f"{'phase':<30}{'seconds':>8}{'rows/s':>11}{'x baseline':>11}{'x Hudi':>8}{'files r/w':>12}{'MB read':>9}"
          f"{'MB written':>11}{'others':>8}  {'peak RSS MiB d/JVM/w':<21}{'tag share':>9}")
    results = {}
    order = [f"{op} {kind}" for op in ("bulk_insert", "upsert") for kind in kinds]
    order = [p for phase in order for p in (phase, f"Hudi {phase}") if p in timings]
    order += ["baseline bulk_insert"] + [f"baseline {k} {s}" for k in ("BUCKET", "SIMPLE") for s in ("files",
                                                                                                      "partitions")]
    for phase in order:
        secs, t = timings[phase]["seconds"], timings[phase]
        rows = args.rows if "bulk_insert" in phase else n_in
        baseline = baseline_of(phase)
        ratio = secs / timings[baseline]["seconds"]
        peer = f"Hudi {phase}"
        ratio_hudi = secs / timings[peer]["seconds"] if peer in timings else None
        results[phase] = dict(seconds=secs, runs=t["runs"], rows_per_s=rows / secs, baseline=baseline,
                              ratio_to_baseline=ratio, ratio_to_hudi=ratio_hudi, other_cpu_cores=t["other_cpu_cores"],
                              peak_rss=t["peak_rss"], **io[phase])
        if phase.split()[0] in ("bulk_insert", "upsert"):
            results[phase].update(goal=goal(phase), goal_met=ratio <= goal(phase))
        if phase.startswith("upsert"):
            results[phase]["tagging"] = tagging[phase.split()[-1]]
        i = io[phase]
        files = f"{i['files_read']}/{i['files_written']}"
        mb_read = "-" if i["bytes_read"] is None else f"{i['bytes_read'] / 2**20:.1f}"
        hudi_col = f"{ratio_hudi:>7.2f}x" if ratio_hudi is not None else f"{'-':>8}"
        share = f"{results[phase]['tagging']['share']:>8.0%}" if "tagging" in results[phase] else ""
        print(f"{phase:<30}{secs:>8.2f}{rows / secs:>11,.0f}{ratio:>10.2f}x{hudi_col}{files:>12}"
              f"{mb_read:>9}{i['bytes_written'] / 2**20:>11.1f}{max(t['other_cpu_cores']):>8.2f}  "
              f"{rss_cell(t['peak_rss']):<21}{share:>9}")
    print("baseline = the faster of plain Spark reading the files the upsert rewrote (BUCKET's; SIMPLE's for "
          "SIMPLE, BLOOM, RECORD_LEVEL) and writing them plus the new rows, and the same over every file of the "
          "partitions it touched written partitionBy(order_date): "
          + ", ".join(f"{k} {v.split()[-1]}" for k, v in fastest.items())
          + " (bulk inserts: writing the same rows partitionBy(order_date)); x Hudi = tablespec / Apache Hudi seconds; "
          "rows/s = rows written (bulk insert) or upserted per second; Hudi files r = file groups merged; "
          "others = CPU cores other processes kept busy meanwhile; peak RSS = driver Python / JVM / Python workers; "
          "tag share = tagging jobs' wall seconds (key preparation included) / the upsert's seconds")
    target_met = all(r["goal_met"] for r in results.values() if "goal_met" in r)
    print("goals (x baseline): " + ", ".join(f"{p} {r['ratio_to_baseline']:.2f}x <= {r['goal']}"
                                             f"{'' if r['goal_met'] else ' NOT met'}"
                                             for p, r in results.items() if "goal" in r))
    if args.hudi:
        print("tablespec / Hudi: " + ", ".join(f"{p} {results[p]['ratio_to_hudi']:.2f}x" for p in results
                                              if results[p]["ratio_to_hudi"] is not None))
    print("upsert time by tablespec's job descriptions (seconds over all runs): " + "; ".join(
        f"{k} tag {v['tag_s']:.2f}, write {v['write_s']:.2f}, index {v['index_s']:.2f} of {v['upsert_s']:.2f}"
        for k, v in tagging.items()))
    print(f"stages per phase{'':<34}{'wall s':>8}{'task s':>8}{'tasks':>6}")
    for phase in results:
        print(f" {phase}")
        for s in stages.get(phase, []):
            print(stage_line(s))
    ok = all(c["ok"] for c in checks.values())
    print("correctness: " + "; ".join(f"{k} {c['rows']:,} rows (expected {c['expected']:,})"
                                      f"{'' if c['ok'] else ' MISMATCH'}" for k, c in checks.items()))

    for u in upserts.values():
        u.pop("touched")
        u.pop("partition_files")
    result = {"rows": args.rows, "upsert_rows": n_in, "updates": n_updates, "new_keys": n_new,
              "partitions": args.partitions, "buckets": args.buckets, "master": args.master, "cpus": os.cpu_count(),
              "driver_memory": args.driver_memory, "repeat": repeat, "hudi": args.hudi,
              "hudi_overrides": hudi_overrides, "spark_start_s": SPARK_START["seconds"], "setup_s": setup,
              "results": results, "ratios_to_hudi": {p: r["ratio_to_hudi"] for p, r in results.items()
                                                     if r["ratio_to_hudi"] is not None},
              "baselines": fastest, "target_met": target_met, "tagging": tagging,
              "upserts": upserts, "hudi_commits": hudi, "checks": checks, "stages": stages,
              "job_descriptions": described}
    write_report(args.out, result)
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

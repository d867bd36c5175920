"""Clustering (RFC-19's experiment at our scale): small files in, SORT and ZORDER out, query before/after.

Ingests `--rows` rows in `--commits` small commits through tablespec's writer (bulk_insert with a
small `targetFileSize`, so each commit opens several small file groups: hundreds of small files
in one non-partitioned table), copies the table, and clusters one copy with SORT and one with
ZORDER on (customer_id, amount) into files of `--target-mib`. The baseline, in the same run, is
delta-rs: the same rows appended as the same number of commits, then `optimize.z_order` on the
same two columns and target size. It is the fastest plain way to a clustered layout of the same
rows: the same small input files, no partitioning, the same sort columns and file size, in native
code with no JVM or Spark scheduling; both SORT and ZORDER are set against it (goal: tablespec
<= 1.0x its seconds with the query's speed-up kept, i.e. the query reads no more rows after the
clustering than after z_order; bench/_common.py GOALS). Peak RSS of the driver's Python (where
delta-rs runs), the JVM and the Python workers is recorded for each clustering.

The query is RFC-19's shape: a range filter on both sort columns and a group by
(`sum(amount), count(*) ... where customer_id between .. and amount between .. group by
category`). It is run the way a reader with parquet statistics pruning runs it: the snapshot's
files from metadata (tablespec's file-system view; the Delta log for delta-rs), each file's
footer read, row groups whose min/max statistics of the two columns miss the ranges skipped,
the rest read (three columns), filtered and aggregated with pyarrow. Reported: files, row groups
and rows read, and wall time (best of `--repeat`).

The second peer, in the same Spark session, is Apache Hudi 0.15.0 (bench/_common.py):
- ingest (setup, timed but not compared): the same rows in the same number of commits, each a
  `bulk_insert` through Hudi's datasource into a non-partitioned table (same record key,
  NonpartitionedKeyGenerator, SIMPLE index, snappy, meta fields populated, the same small
  hoodie.parquet.max.file.size as tablespec's ingest targetFileSize; Hudi's metadata table as
  Hudi defaults it: enabled, `files` partition kept by every commit);
- Hudi SORT / Hudi ZORDER (timed, on copies of that table): `CALL run_clustering(path => ...,
  order => 'customer_id,amount', options => ...)`, which schedules a plan with Hudi's size-based
  plan strategy and executes it with its sort-and-size execution strategy, with
  hoodie.layout.optimize.strategy = linear (SORT) / z-order (ZORDER; curve built directly from
  the values, Hudi's default) and tablespec's settings: target file size, small-file limit
  (target / 2), bytes per group, 30 groups per plan; commit metadata of the rows preserved
  (Hudi's default), the replacecommit and the metadata table written.
Both run a tiny ingest and both clusterings first (warm-up, untimed). tablespec's clustering
time is what `tablespec apply` spends on it: observe + build_plan + apply
(apply alone is reported too). Ratios: tablespec / Hudi seconds per layout, and the query's rows
and row groups read after each.

Profile of tablespec's ZORDER task (1M rows, 100 commits: one group of 305 files -> 6 files;
CPU seconds of the task, before -> after the cluster-speed changes): reading the files 0.7 -> 0.5
(on threads), layout 1.0-1.6 -> 0.5 (pc.rank per column and a (curve, key) table sort -> numpy
ranks, byte-table bit spreading, argsort with key tie-breaks among tied rows only), take 0.9 ->
0.3 (one chunk, per output file on threads), write 0.9-1.3 -> 0.5 (no Java key sort for kept
orders, seqnos not rebuilt when preserved); about 0.6 s of Spark (job, task, Python worker) and
0.3 s of driver work (observe, plan, timeline, commit) on top. delta-rs z_order: about 2.4 s CPU.
With one group and two cores, the task's threads use both.

    python bench/clustering_bench.py [--rows 5000000] [--commits 100] [--target-mib 8]
    python bench/clustering_bench.py --rows 500000 --commits 40       # quick run
    python bench/clustering_bench.py --quick                          # development: 200k rows, 10 commits
    python bench/clustering_bench.py --no-hudi                        # tablespec and delta-rs only
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _common import (
    SPARK_START,
    PeakRss,
    add_hudi_arguments,
    dir_bytes,
    goal,
    hudi_cluster,
    hudi_options,
    hudi_read,
    hudi_write,
    jvm_pid,
    latest_base_files,
    rss_cell,
    set_hudi_overrides,
    start_spark,
    write_report,
)

from tablespec.actions.metadata import create_table
from tablespec.apply import Applier
from tablespec.engine.reader import to_arrow
from tablespec.hudi.io import table_location
from tablespec.hudi.table import HudiTable, Location
from tablespec.plan.builder import build_plan
from tablespec.spec.loader import load_spec_text
from tablespec.state import observe
from tablespec.table import Table

SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {{name: sales, database: bench}}
spec:
  location: bench/{location}
  columns:
    - {{name: order_id, type: string, nullable: false}}
    - {{name: customer_id, type: long}}
    - {{name: amount, type: double}}
    - {{name: category, type: string}}
    - {{name: updated_at, type: timestamp}}
  recordKey: {{fields: [order_id]}}
  index: {{type: SIMPLE}}
  clustering: {clustering}
"""
CUSTOMERS, AMOUNT = 1_000_000, 10_000.0
# The query: about 5% of customers and 10% of amounts (0.5% of the rows).
LOW_CUSTOMER, HIGH_CUSTOMER, LOW_AMOUNT, HIGH_AMOUNT = 400_000, 450_000, 2_000.0, 3_000.0


def spec(location: str, clustering: str):
    result = load_spec_text(SPEC.format(location=location, clustering=clustering), f"{location}.yaml")
    if result.errors:
        raise SystemExit(f"bench spec invalid: {result.errors}")
    return result.specs


def rows(spark, start: int, n: int):
    """Deterministic rows: customer and amount independent of each other and of the commit."""
    from pyspark.sql import functions as F

    ids = spark.range(start, start + n)
    h = F.xxhash64("id")
    return ids.select(
        F.format_string("ord-%010d", "id").alias("order_id"),
        F.pmod(h, F.lit(CUSTOMERS)).alias("customer_id"),
        (F.pmod(F.xxhash64(F.col("id") * 31 + 7), F.lit(1_000_000)) / 1_000_000 * AMOUNT).alias("amount"),
        F.concat(F.lit("cat-"), F.pmod(F.xxhash64(F.col("id") + 99), F.lit(20)).cast("string")).alias("category"),
        F.timestamp_seconds(F.lit(1_767_225_600) + F.col("id") % 86_400).alias("updated_at"),
    )


def query(files: list[str]) -> dict:
    """The selective query over `files`, row groups pruned by their min/max statistics."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    row_groups = read_groups = read_rows = 0
    parts = []
    for path in files:
        pf = pq.ParquetFile(path.removeprefix("file://"))
        names = pf.schema_arrow.names
        ci, ai = names.index("customer_id"), names.index("amount")
        wanted = []
        for g in range(pf.metadata.num_row_groups):
            row_groups += 1
            rg = pf.metadata.row_group(g)
            c, a = rg.column(ci).statistics, rg.column(ai).statistics
            if c is not None and c.has_min_max and (c.max < LOW_CUSTOMER or c.min > HIGH_CUSTOMER):
                continue
            if a is not None and a.has_min_max and (a.max < LOW_AMOUNT or a.min > HIGH_AMOUNT):
                continue
            wanted.append(g)
        if wanted:
            t = pf.read_row_groups(wanted, columns=["customer_id", "amount", "category"])
            read_groups += len(wanted)
            read_rows += t.num_rows
            mask = pc.and_(pc.and_(pc.greater_equal(t["customer_id"], LOW_CUSTOMER),
                                   pc.less_equal(t["customer_id"], HIGH_CUSTOMER)),
                           pc.and_(pc.greater_equal(t["amount"], LOW_AMOUNT), pc.less_equal(t["amount"], HIGH_AMOUNT)))
            parts.append(t.filter(mask))
    result = (pa.concat_tables(parts).group_by("category").aggregate([("amount", "sum"), ("amount", "count")])
              if parts else pa.table({}))
    answer = sorted((r["category"], round(r["amount_sum"], 2), r["amount_count"]) for r in result.to_pylist())
    return dict(files=len(files), row_groups=row_groups, row_groups_read=read_groups, rows_read=read_rows,
                answer=answer)


def timed_query(files: list[str], repeat: int) -> dict:
    best, out = None, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = query(files)
        secs = time.perf_counter() - t
        best = secs if best is None else min(best, secs)
    return {**out, "seconds": round(best, 3)}


def hudi_files(location: str) -> list[str]:
    return sorted(p for p, _ in latest_base_files(location).values())


def ingest_hudi(spark, warehouse: str, n_rows: int, commits: int, ingest_target: int) -> Table:
    specs = spec("small", f"{{targetFileSize: {ingest_target}, smallFileLimit: {ingest_target // 2}, "
                          f"everyNCommits: 1000000}}")
    s = specs[0].spec
    location = table_location(warehouse, s.spec.location)
    create_table(HudiTable.open(location), s)
    table = Table(s, location, spark)
    per = n_rows // commits
    for c in range(commits):
        table.write(rows(spark, c * per, per), "bulk_insert")
    return table


def cluster_hudi(spark, warehouse: str, source: str, name: str, strategy: str, target: int, group_bytes: int) -> dict:
    shutil.copytree(source, os.path.join(warehouse, "bench", name))
    loaded = spec(name, f"{{strategy: {strategy}, sortColumns: [customer_id, amount], targetFileSize: {target}, "
                        f"smallFileLimit: {target // 2}, maxBytesPerGroup: {group_bytes}, everyNCommits: 1}}")
    location = table_location(warehouse, loaded[0].spec.spec.location)
    with PeakRss(jvm_pid(spark)) as rss:
        t0 = time.perf_counter()
        plan = build_plan(loaded, {location: observe(HudiTable.open(location))}, Location.parse(warehouse))
        kinds = [a.kind for _, a in plan.actions]
        if kinds != ["update_settings", "clustering"]:
            raise SystemExit(f"unexpected plan for {name}: {kinds}")
        t = time.perf_counter()
        result = Applier(spark=spark).apply(plan)
        seconds = time.perf_counter() - t
        plan_apply = time.perf_counter() - t0
    actual = result.actions[-1].actual
    return dict(location=location, seconds=round(seconds, 2), plan_apply_seconds=round(plan_apply, 2),
                peak_rss=rss.peak, groups=actual.groups,
                files_after=len(hudi_files(location)), bytes_after=sum(os.path.getsize(p) for p in hudi_files(location)))


def ingest_peer(spark, root: str, n_rows: int, commits: int, ingest_target: int) -> str:
    """Apache Hudi: the same rows in the same commits, bulk_insert into a non-partitioned table."""
    location = os.path.join(root, "apache_hudi", "small")
    options = hudi_options("sales", "SIMPLE", partition=None, ordering=None, target_file=ingest_target,
                           small_file=ingest_target // 2)
    per = n_rows // commits
    for c in range(commits):
        hudi_write(rows(spark, c * per, per), location, options, "bulk_insert")
    return location


def cluster_peer(spark, source: str, strategy: str, target: int, group_bytes: int) -> dict:
    """Apache Hudi's run_clustering on a copy of `source` with tablespec's layout and sizes."""
    location = os.path.join(os.path.dirname(source), f"cluster_{strategy.lower()}")
    shutil.copytree(source, location)
    with PeakRss(jvm_pid(spark)) as rss:
        t = time.perf_counter()
        stats = hudi_cluster(spark, location, ["customer_id", "amount"], strategy, target, target // 2, group_bytes)
        seconds = time.perf_counter() - t
    files = hudi_files(location)
    return dict(location=location, seconds=round(seconds, 2), peak_rss=rss.peak, groups=stats["groups"],
                files_after=len(files),
                bytes_after=sum(os.path.getsize(p) for p in files), rows_after=hudi_read(spark, location).count())


def delta_peer(spark, root: str, n_rows: int, commits: int, target: int, repeat: int) -> dict:
    from deltalake import DeltaTable, write_deltalake

    path = os.path.join(root, "delta")
    per = n_rows // commits
    for c in range(commits):
        write_deltalake(path, to_arrow(rows(spark, c * per, per)), mode="append")
    dt = DeltaTable(path)
    before = dict(files=len(dt.file_uris()), bytes=dir_bytes(path), query=timed_query(dt.file_uris(), repeat))
    with PeakRss(jvm_pid(spark)) as rss:  # delta-rs runs in the driver's Python process
        t = time.perf_counter()
        metrics = dt.optimize.z_order(["customer_id", "amount"], target_size=target)
        seconds = time.perf_counter() - t
    dt = DeltaTable(path)
    files = dt.file_uris()
    return dict(before=before, z_order_seconds=round(seconds, 2), peak_rss=rss.peak, files_after=len(files),
                bytes_after=sum(os.path.getsize(f) for f in files), query_after=timed_query(files, repeat),
                metrics={k: v for k, v in metrics.items() if isinstance(v, (int, float, str))})


def clustering_action(run: dict, delta: dict, hudi: dict | None) -> dict:
    """One clustering against its baseline, delta-rs z_order on the same rows, and the goal: no slower,
    and the query's speed-up kept (it reads no more rows after tablespec's clustering than after
    z_order; rows, not the query's milliseconds, which are noise at these sizes)."""
    seconds, rows_read = run["plan_apply_seconds"], run["query"]["rows_read"]
    ratio = seconds / delta["z_order_seconds"]
    kept = rows_read <= delta["query_after"]["rows_read"]
    return dict(seconds=seconds, baseline="delta-rs z_order", baseline_seconds=delta["z_order_seconds"],
                ratio_to_baseline=round(ratio, 3), hudi_seconds=hudi["seconds"] if hudi else None,
                ratio_to_hudi=round(seconds / hudi["seconds"], 3) if hudi else None, goal=goal("cluster"),
                query_rows_read=rows_read, baseline_query_rows_read=delta["query_after"]["rows_read"],
                query_kept=kept, goal_met=ratio <= goal("cluster") and kept, peak_rss=run["peak_rss"],
                baseline_peak_rss=delta["peak_rss"], hudi_peak_rss=hudi["peak_rss"] if hudi else None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--commits", type=int, default=100)
    ap.add_argument("--ingest-kib", type=int, default=160, help="targetFileSize while ingesting (small files)")
    ap.add_argument("--target-mib", type=int, default=8, help="targetFileSize of clustering and z_order")
    ap.add_argument("--group-mib", type=int, default=64, help="maxBytesPerGroup (parallelism of clustering)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true",
                    help="development sizes: 200k rows in 10 commits, 2 MiB target, 16 MiB groups, one query run")
    add_hudi_arguments(ap)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "clustering_bench.json"))
    args = ap.parse_args()
    hudi_overrides = set_hudi_overrides(args.hudi_option)
    if args.quick:
        args.rows, args.commits, args.target_mib, args.group_mib, args.repeat = 200_000, 10, 2, 16, 1

    root = tempfile.mkdtemp(prefix="clustering_bench_")
    warehouse = os.path.join(root, "wh")
    spark = start_spark(args.master, args.driver_memory, os.path.join(root, "events"), "clustering_bench",
                        hudi=args.hudi)
    target, group = args.target_mib * 2**20, args.group_mib * 2**20
    try:
        # Warm-up (JVM, JIT, Python workers, imports): a tiny table ingested and clustered with each layout,
        # by tablespec and by Apache Hudi.
        warm = os.path.join(root, "warmup")
        tiny = ingest_hudi(spark, warm, 4000, 2, args.ingest_kib * 1024)
        for strategy in ("SORT", "ZORDER"):
            cluster_hudi(spark, warm, tiny.location, f"cluster_{strategy.lower()}", strategy, target, group)
        if args.hudi:
            tiny_peer = ingest_peer(spark, warm, 4000, 2, args.ingest_kib * 1024)
            for strategy in ("SORT", "ZORDER"):
                cluster_peer(spark, tiny_peer, strategy, target, group)
        t = time.perf_counter()
        small = ingest_hudi(spark, warehouse, args.rows, args.commits, args.ingest_kib * 1024)
        ingest_seconds = time.perf_counter() - t
        files = hudi_files(small.location)
        before = dict(files=len(files), bytes=sum(os.path.getsize(p) for p in files),
                      query=timed_query(files, args.repeat))
        runs = {}
        for strategy in ("SORT", "ZORDER"):
            done = cluster_hudi(spark, warehouse, small.location, f"cluster_{strategy.lower()}", strategy, target, group)
            done["query"] = timed_query(hudi_files(done["location"]), args.repeat)
            runs[strategy] = done
        peer: dict = {}
        if args.hudi:
            t = time.perf_counter()
            source = ingest_peer(spark, root, args.rows, args.commits, args.ingest_kib * 1024)
            files = hudi_files(source)
            peer = dict(ingest_seconds=round(time.perf_counter() - t, 1),
                        before=dict(files=len(files), bytes=sum(os.path.getsize(p) for p in files),
                                    query=timed_query(files, args.repeat)), clustered={})
            for strategy in ("SORT", "ZORDER"):
                done = cluster_peer(spark, source, strategy, target, group)
                done["query"] = timed_query(hudi_files(done["location"]), args.repeat)
                peer["clustered"][strategy] = done
        delta = delta_peer(spark, root, args.rows, args.commits, target, args.repeat)
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)

    answers = [("SORT", runs["SORT"]["query"]), ("ZORDER", runs["ZORDER"]["query"]),
               ("delta before", delta["before"]["query"]), ("delta z_order", delta["query_after"])]
    if peer:
        answers += [("Hudi before", peer["before"]["query"])]
        answers += [(f"Hudi {s}", r["query"]) for s, r in peer["clustered"].items()]
    for name, q in answers:
        if q["answer"] != before["query"]["answer"]:
            raise SystemExit(f"query answer differs after {name}")
    z = runs["ZORDER"]["query"]
    report = dict(
        rows=args.rows, commits=args.commits, ingest_seconds=round(ingest_seconds, 1),
        target_file_bytes=target, max_bytes_per_group=group, before=before, clustered=runs, delta=delta,
        ratios=dict(
            query_speedup_zorder=round(before["query"]["seconds"] / z["seconds"], 2),
            row_groups_fewer_zorder=round(before["query"]["row_groups_read"] / max(1, z["row_groups_read"]), 1),
            rows_fewer_zorder=round(before["query"]["rows_read"] / max(1, z["rows_read"]), 1),
            query_speedup_sort=round(before["query"]["seconds"] / runs["SORT"]["query"]["seconds"], 2),
            clustering_vs_delta_zorder=round(runs["ZORDER"]["seconds"] / delta["z_order_seconds"], 2),
            **({f"clustering_vs_hudi_{s.lower()}":
                round(runs[s]["plan_apply_seconds"] / peer["clustered"][s]["seconds"], 2) for s in runs} if peer else {}),
            **({f"rows_read_vs_hudi_{s.lower()}": round(runs[s]["query"]["rows_read"]
                                                        / max(1, peer["clustered"][s]["query"]["rows_read"]), 2)
                for s in runs} if peer else {}),
        ),
        hudi=peer or None, hudi_overrides=hudi_overrides,
        ratios_to_hudi={f"cluster {s}": round(runs[s]["plan_apply_seconds"] / peer["clustered"][s]["seconds"], 3)
                        for s in runs} if peer else {},
        targets=dict(query_speedup=">= 3", row_groups_fewer=">= 5", clustering_vs_delta=f"<= {goal('cluster')}"),
        actions={f"cluster {s}": clustering_action(r, delta, peer["clustered"][s] if peer else None)
                 for s, r in runs.items()},
        spark_start_s=SPARK_START["seconds"],
    )
    for part in (report["before"], *report["clustered"].values(), report["delta"]["before"]):
        part.get("query", {}).pop("answer", None)
    report["delta"]["query_after"].pop("answer", None)
    if peer:
        for part in (peer["before"], *peer["clustered"].values()):
            part["query"].pop("answer", None)
        for strategy, r in peer["clustered"].items():
            if r["rows_after"] != args.rows // args.commits * args.commits:
                raise SystemExit(f"Hudi {strategy} clustering lost rows: {r['rows_after']}")

    print(f"{args.rows} rows in {args.commits} commits (ingest {ingest_seconds:.0f}s through tablespec's writer); "
          f"Spark start {SPARK_START['seconds']:.1f}s")
    print(f"{'layout':<20}{'files':>7}{'MiB':>8}{'cluster s':>11}{'rg read':>9}{'of rg':>7}{'rows read':>11}"
          f"{'query s':>9}  peak RSS MiB d/JVM/w")

    def line(name, files_, size, secs, q, peak=None):
        print(f"{name:<20}{files_:>7}{size / 2**20:>8.1f}{secs:>11}{q['row_groups_read']:>9}{q['row_groups']:>7}"
              f"{q['rows_read']:>11}{q['seconds']:>9.3f}  {rss_cell(peak)}")
    line("tablespec small", before["files"], before["bytes"], "-", before["query"])
    for s, r in runs.items():
        line(f"tablespec {s}", r["files_after"], r["bytes_after"], r["plan_apply_seconds"], r["query"], r["peak_rss"])
    if peer:
        line("Apache Hudi small", peer["before"]["files"], peer["before"]["bytes"], "-", peer["before"]["query"])
        for s, r in peer["clustered"].items():
            line(f"Apache Hudi {s}", r["files_after"], r["bytes_after"], r["seconds"], r["query"], r["peak_rss"])
    line("delta small", delta["before"]["files"], delta["before"]["bytes"], "-", delta["before"]["query"])
    line("delta z_order", delta["files_after"], delta["bytes_after"], delta["z_order_seconds"], delta["query_after"],
         delta["peak_rss"])
    print("cluster s: tablespec = observe + build_plan + apply; Apache Hudi = CALL run_clustering (schedule + "
          f"execute); Hudi ingest {peer.get('ingest_seconds', '-')}s; peak RSS = driver Python (delta-rs runs "
          "there) / JVM / Python workers")
    print("ratios:", json.dumps(report["ratios"]))
    print("goals (x delta-rs z_order, query reading no more rows than after it): " + ", ".join(
        f"{a} {r['ratio_to_baseline']:.2f}x <= {r['goal']}{'' if r['goal_met'] else ' NOT met'}"
        for a, r in report["actions"].items()))
    write_report(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())

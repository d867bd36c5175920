"""Merge-on-read: upserts as deltacommits, compaction and snapshot reads, against copy-on-write and Apache Hudi 0.15.

One run, the same generated rows everywhere (bench/_common.py `orders`): a `--rows` table in
`--partitions` partitions by BUCKET(`--buckets`) index, then upserts of `--upsert-rows` (default
1%) updates of existing keys spread over every partition and bucket.

Tables (version 6; the BUCKET merge-on-read table tablespec writes on is one Apache Hudi created,
imported, as users adopt Hudi's tables):
- tablespec MOR: Apache Hudi 0.15 bulk-inserts the rows into a MERGE_ON_READ table (untimed), the
  table is copied and imported into tablespec as `tablespec import` does (its spec as import writes
  it, plus `compaction: {runBy: tablespec, deltaCommits: N, strategy: UNBOUNDED}`, recorded by an
  untimed apply; its writes go through the same spec with `runBy: hudi`, so no write compacts);
- Hudi MOR: the same bulk-inserted table, written on by Apache Hudi's datasource (bucket index,
  same buckets and hash field, inline compaction off);
- tablespec COW: the same spec as COPY_ON_WRITE, created and bulk-inserted by tablespec (untimed);
- Hudi COW: Hudi's datasource bulk_insert into a COPY_ON_WRITE table (untimed);
- RECORD_LEVEL (unless `--no-record-level`): a version 6 MERGE_ON_READ table with the RECORD_LEVEL
  index created from its spec and bulk-inserted by tablespec, the same as COPY_ON_WRITE, and Hudi
  0.15's MERGE_ON_READ table with its RECORD_INDEX (metadata table on), bulk-inserted (untimed).

Phases (each timed once: they change the tables; reads best of `--read-repeat`):
1. `upsert <table>`: the first upsert batch into each table (tablespec MOR: a deltacommit of log
   files, checked on its timeline; COW: a commit rewriting the touched base files). Then
   `--deltacommits` - 1 more batches (other keys, newer values) into both MOR tables, each timed
   (`deltacommit k`). RECORD_LEVEL: the first batch into each of its three tables (`upsert
   RECORD_LEVEL <table>`; tablespec MOR: a deltacommit of log files).
2. `compaction`: tablespec's table after its deltacommits is copied; tablespec compacts it
   (`plan` + `apply`, in this session: schedule the plan under Hudi's lock and run it on Spark) and
   Apache Hudi 0.15 compacts the copy (`call run_compaction(op => 'schedule')`, then `op => 'run'`,
   snappy as tablespec writes). Both must leave every slice without log files.
3. `read`: tablespec's `Table.read` of its MOR table with the log files of every deltacommit
   (snapshot) and read-optimized (base files only), and the snapshot after compaction: `count()` and
   a full scan (every column materialised, Spark's `noop` sink); Apache Hudi's snapshot and
   read-optimized reads of its own MOR table for reference.
4. `--long-deltacommits` (default 50; 0: none) more batches into tablespec's compacted MOR table
   (each timed: `long deltacommit k`), then its snapshot read (`read after N deltacommits`), against
   the read right after compaction.

Goals (merge-on-read's performance goals): upsert tablespec MOR <= 0.3x tablespec COW
and <= 0.5x Hudi MOR, for BUCKET and RECORD_LEVEL; compaction <= 0.5x Hudi's; snapshot read with the
log files <= 2x the read-optimized read; snapshot after the long run of deltacommits <= 2x the
snapshot right after compaction. Each phase records wall seconds, the
driver's Python CPU seconds (tablespec's metadata work: planning, timelines, commit files) and the
peak RSS of driver / JVM / Python workers (PeakRss), and the CPU cores other processes took. Wrong
setups fail loudly: the tablespec MOR upsert must commit a deltacommit of log files only, Hudi's
MOR upserts deltacommits, both compactions a commit after which no slice has log files, and the
tables must read the same rows (count and sums).

    python bench/mor_bench.py                                   # 2M rows, 20 partitions, BUCKET(32), 20k upserted
    python bench/mor_bench.py --quick                           # development: 200k rows, 10 partitions, BUCKET(16)
    python bench/mor_bench.py --rows 20000 --partitions 4 --buckets 4   # smoke
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

from _common import (
    SPARK_START,
    EventLog,
    Phases,
    add_hudi_arguments,
    hudi_options,
    hudi_write,
    make_table,
    orders,
    rss_cell,
    set_hudi_overrides,
    set_phase,
    spec_text,
    start_spark,
    write_report,
)

from tablespec.actions.metadata import create_table
from tablespec.apply import Applier
from tablespec.hudi.io import LOCAL, table_location
from tablespec.hudi.table import HudiTable, Location
from tablespec.hudi.timeline.active import Timeline
from tablespec.importer import spec_document
from tablespec.plan.builder import plan_observed
from tablespec.spec.loader import load_spec_text
from tablespec.state import observe
from tablespec.table import Table

GOALS = {"upsert tablespec MOR / tablespec COW": 0.3, "upsert tablespec MOR / Hudi MOR": 0.5,
         "RECORD_LEVEL upsert tablespec MOR / tablespec COW": 0.3, "RECORD_LEVEL upsert tablespec MOR / Hudi MOR": 0.5,
         "compaction tablespec / Hudi": 0.5, "snapshot / read-optimized (scan)": 2.0,
         "long snapshot / after compaction (scan)": 2.0}


def update_ids(spark, rows: int, n: int, batch: int):
    """n distinct existing ids, one per block of rows // n, at an offset that moves with `batch`."""
    from pyspark.sql import functions as F

    step = max(1, rows // max(n, 1))
    return spark.range(0, n).select((F.col("id") * step + (F.col("id") + batch * 7) % step).alias("id"))


def updates(spark, rows: int, n: int, partitions: int, batch: int):
    """Batch `batch` (1..): updates of n existing keys, `batch` months newer than the load."""
    return orders(update_ids(spark, rows, n, batch), partitions, version=batch)


def mor_options(name: str, buckets: int, index: str = "BUCKET") -> dict[str, str]:
    """Hudi 0.15 MERGE_ON_READ options: the bench's bucket index (or `index`), compaction neither
    scheduled nor run inline."""
    return {**hudi_options(name, index, buckets), "hoodie.datasource.write.table.type": "MERGE_ON_READ",
            "hoodie.compact.inline": "false", "hoodie.compact.schedule.inline": "false"}


def record_level_table(spark, warehouse: str, name: str, merge_on_read: bool) -> Table:
    """A RECORD_LEVEL orders table tablespec creates from its spec (MERGE_ON_READ: table version 6)."""
    text = spec_text(name, "{type: RECORD_LEVEL}")
    if merge_on_read:
        text += "  tableType: MERGE_ON_READ\n  tableVersion: 6\n"
    spec = load_spec(text, name).spec
    location = table_location(warehouse, spec.spec.location)
    create_table(HudiTable.open(location), spec)
    return Table(spec, location, spark)


def timeline_actions(location: str) -> list[tuple[str, str]]:
    """(action, state) of every instant of the table's active timeline, oldest first."""
    return [(i.action, i.state) for i in Timeline.load(LOCAL, location).instants]


def log_files_per_slice(location: str) -> dict:
    slices = HudiTable.open(location).view.latest_slices()
    counts = [len(s.log_files) for s in slices]
    return dict(slices=len(slices), with_logs=sum(1 for c in counts if c), max=max(counts, default=0),
                mean=round(sum(counts) / max(1, len(counts)), 2))


def imported(spark, hudi_location: str, location: str, warehouse: str, buckets: int, delta_commits: int):
    """Copy Hudi's MERGE_ON_READ table to `location` and import it as `tablespec import` does (the
    BUCKET settings recorded in hoodie.properties, where Hudi keeps none), with compaction run by
    tablespec; the policy recorded by an apply. Returns the loaded spec (which `plan` compacts with)
    and the table to write on, with the same spec but `runBy: hudi`: a tablespec writer compacts after
    its deltacommit when the trigger is due, which would move the compaction into a timed upsert."""
    shutil.copytree(hudi_location, location)
    props = os.path.join(location, ".hoodie", "hoodie.properties")
    with open(props, "a") as fh:
        fh.write(f"hoodie.index.type=BUCKET\nhoodie.bucket.index.num.buckets={buckets}\n")
    crc = os.path.join(location, ".hoodie", ".hoodie.properties.crc")
    if os.path.exists(crc):
        os.remove(crc)
    doc = spec_document(observe(HudiTable.open(location)), Location.parse(warehouse))
    doc["spec"]["compaction"] = {"runBy": "tablespec", "deltaCommits": delta_commits, "strategy": "UNBOUNDED"}
    loaded = load_spec(json.dumps(doc), os.path.basename(location))   # JSON is YAML
    kinds = apply_plan(spark, loaded, warehouse)
    if kinds != ["update_settings"]:
        raise SystemExit(f"importing {location}: expected only update_settings to apply, got {kinds}")
    doc["spec"]["compaction"]["runBy"] = "hudi"
    return loaded, Table(load_spec(json.dumps(doc), os.path.basename(location)).spec, location, spark)


def load_spec(text: str, name: str):
    result = load_spec_text(text, f"{name}.yaml")
    if result.errors:
        raise SystemExit(f"bench spec invalid: {result.errors}")
    return result.specs[0]


def apply_plan(spark, loaded, warehouse: str) -> list[str]:
    """`tablespec plan` then `apply` of one spec in this session; the kinds of the actions applied."""
    plan, observed = plan_observed([loaded], Location.parse(warehouse))
    kinds: list[str] = [a.kind for t in plan.tables for a in t.actions]
    if kinds:
        Applier(spark=spark, observed=observed).apply(plan)
    return kinds


def hudi_compact(spark, location: str, buckets: int) -> dict:
    """Apache Hudi 0.15's compaction: `run_compaction` schedules a plan (every slice with log files),
    then runs it; the table's bucket index and record key (its writers' options: Hudi checks the hash
    field against the key), snappy as tablespec writes.
    Seconds of each step."""
    options = {k: v for k, v in mor_options("orders_mor", buckets).items() if ".index." in k or "codec" in k or "recordkey" in k}
    conf = ",".join(f"{k}={v}" for k, v in {**options, "hoodie.compact.inline.max.delta.commits": "1"}.items())
    t = time.perf_counter()
    scheduled = spark.sql(f"call run_compaction(op => 'schedule', path => '{location}', options => '{conf}')").collect()
    t1 = time.perf_counter()
    ran = spark.sql(f"call run_compaction(op => 'run', path => '{location}', options => '{conf}')").collect()
    return dict(schedule_s=round(t1 - t, 3), run_s=round(time.perf_counter() - t1, 3),
                scheduled=[r.asDict() for r in scheduled], ran=len(ran))


def fingerprint(df) -> dict:
    """Rows, the sum of amounts and of update times: equal for tables holding the same rows."""
    from pyspark.sql import functions as F

    r = df.agg(F.count("*").alias("rows"), F.sum("amount").alias("amount"),
               F.sum(F.unix_timestamp("updated_at")).alias("updated")).collect()[0]
    return dict(rows=r["rows"], amount=str(r["amount"]), updated=r["updated"])


def scan(df) -> None:
    """Every row and column materialised, nothing written (Spark's noop sink)."""
    df.write.format("noop").mode("overwrite").save()


def check(ok: bool, what: str) -> None:
    if not ok:
        raise SystemExit(f"mor_bench setup is wrong: {what}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000, help="rows bulk-inserted into each table")
    ap.add_argument("--upsert-rows", type=int, default=None, help="rows per upsert batch, all updates (default: 1%%)")
    ap.add_argument("--partitions", type=int, default=20, help="distinct order_date values")
    ap.add_argument("--buckets", type=int, default=32, help="numBuckets of every table")
    ap.add_argument("--deltacommits", type=int, default=5, help="upsert batches into the MOR tables before compaction")
    ap.add_argument("--long-deltacommits", type=int, default=50,
                    help="upsert batches into tablespec's MOR table after compaction, then a snapshot read (0: none)")
    ap.add_argument("--record-level", action=argparse.BooleanOptionalAction, default=True,
                    help="also time the first upsert with the RECORD_LEVEL index (default: yes)")
    ap.add_argument("--quick", action="store_true", help="development sizes: 200k rows, 10 partitions, BUCKET(16)")
    add_hudi_arguments(ap)
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--driver-memory", default="8g")
    ap.add_argument("--read-repeat", type=int, default=2, help="timed runs per read, best taken")
    ap.add_argument("--workdir", default=None, help="scratch directory, kept (default: a temporary one, removed)")
    ap.add_argument("--out", default="bench/results/mor_bench.json")
    args = ap.parse_args()
    if not args.hudi:
        raise SystemExit("mor_bench needs Apache Hudi: it creates the merge-on-read tables tablespec writes on")
    hudi_overrides = set_hudi_overrides(args.hudi_option)
    if args.quick:
        args.rows, args.partitions, args.buckets = 200_000, 10, 16
    n = args.upsert_rows or max(1, args.rows // 100)

    work = args.workdir or tempfile.mkdtemp(prefix="mor_bench_")
    events = os.path.join(work, "events")
    spark = start_spark(args.master, args.driver_memory, events, app_name="mor_bench", hudi=True)
    sc = spark.sparkContext
    phases = Phases(spark, 1)
    cpu: dict[str, float] = {}   # phase -> driver Python CPU seconds of its best run
    facts: dict[str, dict] = {}
    checks: dict[str, dict] = {}

    def measure(phase: str, run, repeat: int = 1):
        def timed(i):
            t = time.process_time()
            out = run()
            return out, time.process_time() - t
        out, cpu[phase] = phases.measure(phase, timed, repeat=repeat)
        return out

    def load():
        return orders(spark.range(0, args.rows), args.partitions, 0)

    try:
        warehouse = os.path.join(work, "warehouse")
        bench = os.path.join(warehouse, "bench")
        os.makedirs(bench)
        setup: dict[str, float] = {}

        # Warm-up (JVM, JIT, Python workers, imports): a tiny run of every step on both systems.
        set_phase(sc, "warm-up")
        t = time.perf_counter()
        w_hudi = os.path.join(bench, "w_hudi")
        hudi_write(orders(spark.range(0, 2000), 3, 0), w_hudi, mor_options("w_mor", 4), "bulk_insert")
        _, w = imported(spark, w_hudi, os.path.join(bench, "w_mor"), warehouse, 4, args.deltacommits)
        w.write(updates(spark, 2000, 50, 3, 1), "upsert")
        hudi_write(updates(spark, 2000, 50, 3, 1), w_hudi, mor_options("w_mor", 4), "upsert")
        w_cow = make_table(spark, warehouse, "w_cow", "{type: BUCKET, numBuckets: 4}")
        w_cow.write(orders(spark.range(0, 2000), 3, 0), "bulk_insert")
        w_cow.write(updates(spark, 2000, 50, 3, 1), "upsert")
        scan(w.read())
        scan(w.read(view="read_optimized"))
        if args.record_level:
            for mor_table in (True, False):
                w_rli = record_level_table(spark, warehouse, f"w_rli_{mor_table}", mor_table)
                w_rli.write(orders(spark.range(0, 2000), 3, 0), "bulk_insert")
                w_rli.write(updates(spark, 2000, 50, 3, 1), "upsert")
            w_hudi_rli = os.path.join(bench, "w_hudi_rli")
            for op in ("bulk_insert", "upsert"):
                hudi_write(orders(spark.range(0, 2000), 3, 0) if op == "bulk_insert" else updates(spark, 2000, 50, 3, 1),
                           w_hudi_rli, mor_options("w_rli", 4, "RECORD_LEVEL"), op)
        setup["warm-up"] = time.perf_counter() - t

        # The tables (untimed): Hudi creates the merge-on-read one, tablespec the copy-on-write one.
        t = time.perf_counter()
        hudi_mor = os.path.join(bench, "hudi_mor")
        hudi_write(load(), hudi_mor, mor_options("orders_mor", args.buckets), "bulk_insert")
        hudi_cow = os.path.join(bench, "hudi_cow")
        hudi_write(load(), hudi_cow, hudi_options("orders_cow", "BUCKET", args.buckets), "bulk_insert")
        loaded, mor = imported(spark, hudi_mor, os.path.join(bench, "orders_mor"), warehouse, args.buckets,
                               args.deltacommits)
        cow = make_table(spark, warehouse, "orders_cow", f"{{type: BUCKET, numBuckets: {args.buckets}}}")
        cow.write(load(), "bulk_insert")
        if args.record_level:
            rli = {"tablespec MOR": record_level_table(spark, warehouse, "orders_rli_mor", True),
                   "tablespec COW": record_level_table(spark, warehouse, "orders_rli_cow", False)}
            for table in rli.values():
                table.write(load(), "bulk_insert")
            hudi_rli = os.path.join(bench, "hudi_rli_mor")
            hudi_write(load(), hudi_rli, mor_options("orders_rli_mor", args.buckets, "RECORD_LEVEL"), "bulk_insert")
        setup["load"] = time.perf_counter() - t
        loaded_print = fingerprint(mor.read(view="read_optimized"))

        # 1. The first batch into each table, then the other batches into the MOR tables.
        head = len(timeline_actions(mor.location))
        result = measure("upsert tablespec MOR", lambda: mor.write(updates(spark, args.rows, n, args.partitions, 1)))
        added = timeline_actions(mor.location)[head:]
        check(added == [("deltacommit", "completed")], f"tablespec's MOR upsert committed {added}, not one deltacommit")
        check(result.updated == n and all(".log." in f for f in result.files),
              f"tablespec's MOR upsert: {result.updated} updated, files {list(result.files)[:3]}")
        facts["upsert tablespec MOR"] = dict(updated=result.updated, files_written=len(result.files))
        result = measure("upsert tablespec COW", lambda: cow.write(updates(spark, args.rows, n, args.partitions, 1)))
        check(timeline_actions(cow.location)[-1] == ("commit", "completed") and result.updated == n,
              f"tablespec's COW upsert: {timeline_actions(cow.location)[-1]}, {result.updated} updated")
        facts["upsert tablespec COW"] = dict(updated=result.updated, files_written=len(result.files))
        options = mor_options("orders_mor", args.buckets)
        for name, location, opts in (("Hudi MOR", hudi_mor, options),
                                     ("Hudi COW", hudi_cow, hudi_options("orders_cow", "BUCKET", args.buckets))):
            stats = measure(f"upsert {name}", lambda location=location, opts=opts: hudi_write(
                updates(spark, args.rows, n, args.partitions, 1), location, opts, "upsert"))
            facts[f"upsert {name}"] = stats
        check(timeline_actions(hudi_mor)[-1] == ("deltacommit", "completed"), "Hudi's MOR upsert is no deltacommit")
        check(timeline_actions(hudi_cow)[-1] == ("commit", "completed"), "Hudi's COW upsert is no commit")
        if args.record_level:
            batch = updates(spark, args.rows, n, args.partitions, 1)
            for name, table in rli.items():
                result = measure(f"upsert RECORD_LEVEL {name}", lambda table=table: table.write(batch))
                check(result.updated == n, f"RECORD_LEVEL {name} upsert: {result.updated} updated, not {n}")
                check(name != "tablespec MOR" or (
                    timeline_actions(table.location)[-1] == ("deltacommit", "completed")
                    and all(".log." in f for f in result.files)),
                      f"tablespec's RECORD_LEVEL MOR upsert wrote {list(result.files)[:3]}, not log files")
                facts[f"upsert RECORD_LEVEL {name}"] = dict(updated=result.updated, files_written=len(result.files))
            facts["upsert RECORD_LEVEL Hudi MOR"] = measure("upsert RECORD_LEVEL Hudi MOR", lambda: hudi_write(
                batch, hudi_rli, mor_options("orders_rli_mor", args.buckets, "RECORD_LEVEL"), "upsert"))
            check(timeline_actions(hudi_rli)[-1] == ("deltacommit", "completed"), "Hudi's RECORD_LEVEL MOR upsert "
                  "is no deltacommit")
        for k in range(2, args.deltacommits + 1):
            batch = updates(spark, args.rows, n, args.partitions, k)
            result = measure(f"deltacommit {k} tablespec", lambda batch=batch: mor.write(batch))
            check(result.updated == n and all(".log." in f for f in result.files), f"deltacommit {k}: {result}")
            measure(f"deltacommit {k} Hudi", lambda batch=batch: hudi_write(batch, hudi_mor, options, "upsert"))
        mor_actions = [a for a, _ in timeline_actions(mor.location)]
        check(mor_actions.count("deltacommit") == args.deltacommits + 1 and "commit" not in mor_actions,
              f"tablespec's MOR timeline: {mor_actions}")
        facts["log files per slice"] = log_files_per_slice(mor.location)
        facts["log files per slice (Hudi MOR)"] = log_files_per_slice(hudi_mor)

        # 3. (before compaction) reads of tablespec's MOR table with every deltacommit's log files.
        reads = {"snapshot": lambda: mor.read(), "read-optimized": lambda: mor.read(view="read_optimized"),
                 "Hudi snapshot": lambda: spark.read.format("hudi").load(hudi_mor),
                 "Hudi read-optimized": lambda: spark.read.format("hudi")
                 .option("hoodie.datasource.query.type", "read_optimized").load(hudi_mor)}
        for view, df in reads.items():
            measure(f"read {view} count", lambda df=df: df().count(), args.read_repeat)
            measure(f"read {view} scan", lambda df=df: scan(df()), args.read_repeat)
        set_phase(sc, "verify")
        checks["snapshot"] = fingerprint(mor.read())
        checks["Hudi snapshot"] = fingerprint(spark.read.format("hudi").load(hudi_mor))
        checks["read-optimized"] = fingerprint(mor.read(view="read_optimized"))
        check(checks["snapshot"] == checks["Hudi snapshot"], f"snapshots differ: {checks}")
        check(checks["read-optimized"] == loaded_print and checks["snapshot"] != loaded_print,
              f"the read-optimized view is not the loaded table, or the snapshot is: {checks}, {loaded_print}")

        # 2. Compaction of the same table: tablespec's, and Hudi's of a copy.
        copy = os.path.join(bench, "orders_mor_hudi_compacts")
        shutil.copytree(mor.location, copy)
        kinds = measure("compaction tablespec", lambda: apply_plan(spark, loaded, warehouse))
        check(kinds == ["compaction"], f"tablespec's plan applied {kinds}, not one compaction")
        facts["compaction Hudi"] = measure("compaction Hudi", lambda: hudi_compact(spark, copy, args.buckets))
        for who, location in (("tablespec", mor.location), ("Hudi", copy)):
            actions = timeline_actions(location)
            left = log_files_per_slice(location)
            check(actions[-1] == ("commit", "completed") and left["with_logs"] == 0,
                  f"{who}'s compaction left {actions[-1]}, {left['with_logs']} slices with log files")
        set_phase(sc, "verify")
        checks["after compaction"] = fingerprint(mor.read())
        checks["Hudi's compaction, read by tablespec"] = fingerprint(Table(loaded.spec, copy, spark).read())
        check(checks["after compaction"] == checks["snapshot"] == checks["Hudi's compaction, read by tablespec"],
              f"compaction changed the rows: {checks}")

        # 3. (after compaction)
        measure("read after compaction count", lambda: mor.read().count(), args.read_repeat)
        measure("read after compaction scan", lambda: scan(mor.read()), args.read_repeat)

        # 4. A long run of deltacommits on the compacted table, then its snapshot read.
        long = args.long_deltacommits
        for k in range(args.deltacommits + 1, args.deltacommits + long + 1):
            batch = updates(spark, args.rows, n, args.partitions, k)
            result = measure(f"long deltacommit {k}", lambda batch=batch: mor.write(batch))
            check(result.updated == n and all(".log." in f for f in result.files), f"long deltacommit {k}: {result}")
        if long:
            facts[f"log files per slice after {long} deltacommits"] = log_files_per_slice(mor.location)
            measure(f"read after {long} deltacommits count", lambda: mor.read().count(), args.read_repeat)
            measure(f"read after {long} deltacommits scan", lambda: scan(mor.read()), args.read_repeat)
            set_phase(sc, "verify")
            checks[f"after {long} deltacommits"] = fingerprint(mor.read())
            check(checks[f"after {long} deltacommits"]["rows"] == args.rows, f"rows after {long} deltacommits: {checks}")
    finally:
        set_phase(sc, None)
        spark.stop()

    timings = phases.timings
    secs = phases.seconds
    stages = EventLog(events).phases()
    ratios = {
        "upsert tablespec MOR / tablespec COW": secs("upsert tablespec MOR") / secs("upsert tablespec COW"),
        "upsert tablespec MOR / Hudi MOR": secs("upsert tablespec MOR") / secs("upsert Hudi MOR"),
        "upsert tablespec COW / Hudi COW": secs("upsert tablespec COW") / secs("upsert Hudi COW"),
        "deltacommits 2.. tablespec / Hudi": sum(secs(f"deltacommit {k} tablespec") for k in range(2, args.deltacommits + 1))
        / max(1e-9, sum(secs(f"deltacommit {k} Hudi") for k in range(2, args.deltacommits + 1))),
        "compaction tablespec / Hudi": secs("compaction tablespec") / secs("compaction Hudi"),
    }
    for what in ("count", "scan"):
        ratios[f"snapshot / read-optimized ({what})"] = secs(f"read snapshot {what}") / secs(f"read read-optimized {what}")
        ratios[f"snapshot / after compaction ({what})"] = secs(f"read snapshot {what}") / secs(f"read after compaction {what}")
        ratios[f"snapshot tablespec / Hudi ({what})"] = secs(f"read snapshot {what}") / secs(f"read Hudi snapshot {what}")
    long = args.long_deltacommits
    if args.record_level:
        for other in ("tablespec COW", "Hudi MOR"):
            ratios[f"RECORD_LEVEL upsert tablespec MOR / {other}"] = (secs("upsert RECORD_LEVEL tablespec MOR")
                                                                      / secs(f"upsert RECORD_LEVEL {other}"))
    if long:
        ratios["long deltacommits tablespec / first deltacommit"] = (
            sum(secs(f"long deltacommit {k}") for k in range(args.deltacommits + 1, args.deltacommits + long + 1))
            / long / secs("upsert tablespec MOR"))
        for what in ("count", "scan"):
            ratios[f"long snapshot / after compaction ({what})"] = (secs(f"read after {long} deltacommits {what}")
                                                                    / secs(f"read after compaction {what}"))
    goals = {k: dict(ratio=round(ratios[k], 3), goal=g, met=ratios[k] <= g) for k, g in GOALS.items() if k in ratios}

    print(f"merge-on-read: {args.rows:,} rows, {args.partitions} partitions, BUCKET({args.buckets}); upserts of "
          f"{n:,} updates; {args.deltacommits} deltacommits before compaction; tablespec and Apache Hudi 0.15.0; "
          f"master {args.master}, {os.cpu_count()} cpus")
    print(f"setup: Spark start {SPARK_START['seconds']:.1f}s, " + ", ".join(f"{k} {v:.1f}s" for k, v in setup.items()))
    lf = facts["log files per slice"]
    print(f"log files per slice before compaction: mean {lf['mean']}, max {lf['max']}, {lf['with_logs']} of "
          f"{lf['slices']} slices with log files")
    if long:
        lf = facts[f"log files per slice after {long} deltacommits"]
        print(f"log files per slice after {long} deltacommits: mean {lf['mean']}, max {lf['max']}")
    print(f"{'phase':<34}{'seconds':>9}{'driver CPU s':>13}{'others':>8}  {'peak RSS MiB d/JVM/w':<21}")
    results = {}
    for phase, timing in timings.items():
        results[phase] = dict(seconds=round(timing["seconds"], 3), runs=timing["runs"], driver_cpu_s=round(cpu[phase], 3),
                              other_cpu_cores=timing["other_cpu_cores"], peak_rss=timing["peak_rss"])
        print(f"{phase:<34}{timing['seconds']:>9.2f}{cpu[phase]:>13.2f}{max(timing['other_cpu_cores']):>8.2f}  "
              f"{rss_cell(timing['peak_rss']):<21}")
    print("driver CPU = the driver's Python process (tablespec's metadata work; Hudi's is in the JVM); others = CPU "
          "cores other processes kept busy; peak RSS = driver Python / JVM / Python workers")
    print("ratios: " + ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items()))
    print("goals: " + ", ".join(f"{k} {g['ratio']:.2f}x <= {g['goal']}{'' if g['met'] else ' NOT met'}"
                                for k, g in goals.items()))
    print("checks: " + "; ".join(f"{k} {v['rows']:,} rows" for k, v in checks.items()) + " (rows and sums equal where "
          "they must be)")
    write_report(args.out, {
        "rows": args.rows, "upsert_rows": n, "partitions": args.partitions, "buckets": args.buckets,
        "deltacommits": args.deltacommits, "long_deltacommits": long, "record_level": args.record_level,
        "master": args.master, "cpus": os.cpu_count(),
        "driver_memory": args.driver_memory, "read_repeat": args.read_repeat, "hudi_overrides": hudi_overrides,
        "spark_start_s": SPARK_START["seconds"], "setup_s": setup, "results": results,
        "ratios": {k: round(v, 3) for k, v in ratios.items()}, "goals": goals,
        "target_met": all(g["met"] for g in goals.values()), "facts": facts, "checks": checks, "stages": stages})
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

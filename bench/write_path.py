"""The write path in one table: every data action against its plain baseline and Apache Hudi, at each size.

Runs bench/upsert_bench.py (bulk_insert and upsert with BUCKET, SIMPLE, BLOOM, RECORD_LEVEL),
bench/migrate_bench.py (bucket bootstrap SIMPLE -> BUCKET(64), rescale 64 -> 128) and
bench/clustering_bench.py (SORT and ZORDER clustering of small files) one after the other, each in
its own process with its own Spark session, at every `--rows` (upserts: a tenth of the rows), and
prints one table from their JSON: tablespec seconds, the plain baseline's (plain Spark; delta-rs
`optimize.z_order` for clustering), Apache Hudi 0.15.0's, the ratios, the goal
(bench/_common.py GOALS: bulk_insert <= 1.3x plain, upsert <= 1.5x BUCKET / 2x others, bootstrap
and rescale <= 1.2x, clustering <= 1.0x delta-rs with the query's speed-up kept; every action
below Hudi's time) and whether it is met, the peak RSS of the driver's Python, the JVM and the
Python workers during the action, and notes (an upsert's tagging share, which plain baseline was
the faster). Why each baseline is fair is in each bench's docstring. Spark's session start is
excluded from every timing and printed apart, per bench.

Each bench's JSON and output go to bench/results/write_path/<bench>_<rows>.{json,log}; the
table's rows to bench/results/write_path.json. Sizes are the lead's quiet-machine runs; a shared
machine makes every figure noisy (each bench records the CPU other processes took).

    python bench/write_path.py                       # 2M and 5M rows (long: run on a quiet machine)
    python bench/write_path.py --rows 500000         # one size
    python bench/write_path.py --quick               # smoke run: every bench's --quick sizes
    python bench/write_path.py --quick --no-hudi     # without Apache Hudi
    python bench/write_path.py --bench upsert_bench  # rerun one bench; the others' JSON at each size is reused
    python bench/write_path.py --table-only          # no bench: the table from the JSON already there
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from _common import rss_cell

HERE = Path(__file__).resolve().parent
BENCHES = ("upsert_bench", "migrate_bench", "clustering_bench")
KINDS = ("BUCKET", "SIMPLE", "BLOOM", "RECORD_LEVEL")


def run_bench(name: str, rows: int | None, hudi: bool, out: Path) -> dict | None:
    """One bench in its own process (and Spark); its JSON, or None when it failed (its log says why)."""
    cmd = [sys.executable, str(HERE / f"{name}.py"), "--out", str(out.with_suffix(".json"))]
    cmd += ["--quick"] if rows is None else ["--rows", str(rows)]
    if rows is not None and name == "upsert_bench":
        cmd += ["--upsert-rows", str(rows // 10)]
    if not hudi:
        cmd.append("--no-hudi")
    t = time.perf_counter()
    with open(out.with_suffix(".log"), "w") as log:
        done = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=HERE.parent)
    print(f"  {name}: {time.perf_counter() - t:.0f}s, exit {done.returncode}, log {out.with_suffix('.log')}",
          flush=True)
    if done.returncode != 0 or not out.with_suffix(".json").exists():
        return None
    return json.loads(out.with_suffix(".json").read_text())


def row(action: str, rows: int, secs: float, plain: float, hudi: float | None, goal: float, peak: dict | None,
        notes: str = "", kept: bool = True) -> dict:
    """One action's line: ratios, and its goals (x plain at most `goal`, and `kept`; below Hudi's time)."""
    x_plain = secs / plain
    x_hudi = secs / hudi if hudi else None
    return dict(action=action, rows=rows, seconds=round(secs, 3), plain_seconds=round(plain, 3),
                hudi_seconds=round(hudi, 3) if hudi else None, x_plain=round(x_plain, 3), goal=goal,
                met=x_plain <= goal and kept, x_hudi=round(x_hudi, 3) if x_hudi is not None else None,
                below_hudi=x_hudi < 1.0 if x_hudi is not None else None, peak_rss=peak, notes=notes)


def upsert_rows(report: dict) -> list[dict]:
    r, out = report["results"], []
    for op in ("bulk_insert", "upsert"):
        for kind in KINDS:
            phase = f"{op} {kind}"
            if phase not in r:
                continue
            p, hudi = r[phase], r.get(f"Hudi {phase}")
            notes = "plain: partitionBy write"
            if op == "upsert":
                notes = f"plain: {p['baseline'].removeprefix('baseline ')}"
                t = p["tagging"]
                notes += (f"; tag {t['share']:.0%} of task s ({t['tag_task_s']:.1f} of {t['task_s']:.1f})"
                          + (f", index delta {t['index_s']:.1f}s" if t["index_s"] else "")
                          + (f"; Hudi's tag {hudi['tagging']['share']:.0%} of its wall s" if hudi else ""))
            out.append(row(phase, report["rows"] if op == "bulk_insert" else report["upsert_rows"], p["seconds"],
                           r[p["baseline"]]["seconds"], hudi["seconds"] if hudi else None, p["goal"],
                           p["peak_rss"], notes))
    return out


def migrate_rows(report: dict) -> list[dict]:
    r, out = report["results"], []
    for phase, p in r.items():
        if "goal" in p:
            hudi = r.get(f"Hudi {phase}")
            out.append(row(phase, report["rows"], p["seconds"], r[p["baseline"]]["seconds"],
                           hudi["seconds"] if hudi else None, p["goal"], p["peak_rss"],
                           "plain: hash-repartition + partitionBy write"))
    return out


def clustering_rows(report: dict) -> list[dict]:
    return [row(action, report["rows"], a["seconds"], a["baseline_seconds"], a["hudi_seconds"], a["goal"],
                a["peak_rss"], f"plain: delta-rs z_order; query rows {a['query_rows_read']:,} vs "
                               f"{a['baseline_query_rows_read']:,}", kept=a["query_kept"])
            for action, a in report["actions"].items()]


ROWS_OF = {"upsert_bench": upsert_rows, "migrate_bench": migrate_rows, "clustering_bench": clustering_rows}


def print_table(lines: list[dict]) -> None:
    print(f"{'action':<24}{'rows':>10}{'tablespec s':>12}{'plain s':>9}{'Hudi s':>9}{'x plain':>9}{'goal':>6}"
          f"{'met':>5}{'x Hudi':>8}{'<Hudi':>6}  {'peak RSS MiB d/JVM/w':<21}notes")
    for r in lines:
        hudi = f"{r['hudi_seconds']:>9.2f}" if r["hudi_seconds"] else f"{'-':>9}"
        x_hudi = f"{r['x_hudi']:>7.2f}x" if r["x_hudi"] is not None else f"{'-':>8}"
        below = {True: "yes", False: "NO", None: "-"}[r["below_hudi"]]
        print(f"{r['action']:<24}{r['rows']:>10,}{r['seconds']:>12.2f}{r['plain_seconds']:>9.2f}{hudi}"
              f"{r['x_plain']:>8.2f}x{r['goal']:>6}{'yes' if r['met'] else 'NO':>5}{x_hudi}{below:>6}  "
              f"{rss_cell(r['peak_rss']):<21}{r['notes']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[2_000_000, 5_000_000],
                    help="table sizes, each a full pass over the three benches (upserts: rows / 10)")
    ap.add_argument("--quick", action="store_true", help="one smoke pass at every bench's --quick sizes")
    ap.add_argument("--hudi", action=argparse.BooleanOptionalAction, default=True,
                    help="also run Apache Hudi 0.15.0 (default: yes)")
    ap.add_argument("--bench", choices=BENCHES, action="append",
                    help="run only this bench (repeatable); the others' earlier JSON at the same size, when "
                         "present, is reused and marked so in the output")
    ap.add_argument("--table-only", action="store_true", help="run no bench: print the table from earlier JSON")
    ap.add_argument("--out", default=str(HERE / "results" / "write_path.json"))
    args = ap.parse_args()
    sizes = [None] if args.quick else args.rows
    folder = Path(args.out).with_suffix("")
    folder.mkdir(parents=True, exist_ok=True)

    lines, starts, failed, reports, reused = [], {}, [], {}, []
    for rows in sizes:
        label = "quick" if rows is None else str(rows)
        print(f"rows {label}:", flush=True)
        for name in BENCHES:
            earlier = (folder / f"{name}_{label}").with_suffix(".json")
            if args.table_only or (args.bench and name not in args.bench):
                if not earlier.exists():
                    continue
                report = json.loads(earlier.read_text())
                reused.append(f"{name} at {label}")
                print(f"  {name}: reused {earlier}", flush=True)
            else:
                report = run_bench(name, rows, args.hudi, folder / f"{name}_{label}")
            if report is None:
                failed.append(f"{name} at {label}")
                continue
            reports.setdefault(label, {})[name] = str(folder / f"{name}_{label}.json")
            starts.setdefault(label, {})[name] = report["spark_start_s"]
            lines += ROWS_OF[name](report)

    print_table(lines)
    print("plain = plain Spark (clustering: delta-rs z_order), the fastest plain way to the same rows in the same "
          "layout (see each bench's docstring); goal = x plain at most; met = goal met (clustering: and the query "
          "reads no more rows); <Hudi = faster than Apache Hudi 0.15.0; peak RSS = during tablespec's action: "
          "driver Python / JVM (driver and executors in local mode) / Python workers (sum); tag = the task seconds "
          "an upsert spent tagging / its task seconds")
    for label, per in starts.items():
        print(f"Spark session start at {label} (excluded from every timing): "
              + ", ".join(f"{name} {secs:.1f}s" for name, secs in per.items()))
    if reused:
        print("reused from an earlier run: " + ", ".join(reused))
    Path(args.out).write_text(json.dumps(dict(sizes=[s or "quick" for s in sizes], hudi=args.hudi, actions=lines,
                                              spark_start_s=starts, bench_reports=reports, reused=reused,
                                              failed=failed),
                                         indent=2) + "\n")
    print(f"wrote {args.out}")
    if failed:
        print("FAILED: " + ", ".join(failed) + " (see their logs)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

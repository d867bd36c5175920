"""Plan cost with catalog sync on: 500 unchanged tables in one catalog database, against the same
tables planned without a catalog. Metadata only, no Spark.

Creates the tables (metadata, a few commits of tiny files each: plan_bench's `write_commits`),
registers them in an embedded metastore (as apply does), then times `plan_observed` with and
without the catalog, and counts the catalog's reads (goal: one batched read per database).
Prints a table and writes JSON (default bench/results/catalog_plan_bench.json).

    python bench/catalog_plan_bench.py [--tables 500] [--repeat 3]
    python bench/catalog_plan_bench.py --quick      # development: 50 tables
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (puts this checkout first on sys.path, as the other benches do)
from plan_bench import SPEC, write_commits

from tablespec.actions.metadata import create_table
from tablespec.apply import sync_table
from tablespec.catalog import EmbeddedMetastore
from tablespec.hudi.io import table_location
from tablespec.hudi.table import HudiTable, Location
from tablespec.plan.builder import plan_observed
from tablespec.spec.loader import load_specs
from tablespec.state import observe

CATALOG = "  catalog: {database: bench}\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=500)
    ap.add_argument("--commits", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3, help="timed plans of each kind (the best counts)")
    ap.add_argument("--quick", action="store_true", help="development size: 50 tables")
    ap.add_argument("--out", default="bench/results/catalog_plan_bench.json")
    args = ap.parse_args()
    if args.quick:
        args.tables = 50
    with tempfile.TemporaryDirectory() as tmp:
        plain, registered, warehouse = Path(tmp, "plain"), Path(tmp, "registered"), Path(tmp, "warehouse")
        plain.mkdir()
        registered.mkdir()
        for i in range(args.tables):
            spec = SPEC.format(i=i, buckets=16, keep=10)
            (plain / f"t{i:04d}.yaml").write_text(spec)
            (registered / f"t{i:04d}.yaml").write_text(spec + CATALOG)
        store = EmbeddedMetastore(Path(tmp, ".tablespec", "metastore.db"), "bench")
        t0 = time.perf_counter()
        for ls in load_specs([str(registered)]).specs:
            loc = table_location(str(warehouse), ls.spec.spec.location)
            create_table(HudiTable.open(loc), ls.spec)
            write_commits(loc, args.commits, args.partitions)
            sync_table(store, ls.spec, observe(HudiTable.open(loc)))
        setup = time.perf_counter() - t0
        at = Location.parse(str(warehouse))
        runs: dict[str, list[float]] = {"without catalog": [], "with catalog": []}
        reads = []
        for _ in range(args.repeat):
            for kind, specs_dir, catalog in (("without catalog", plain, None), ("with catalog", registered, store)):
                specs = load_specs([str(specs_dir)]).specs
                before = store.reads
                t = time.perf_counter()
                plan, _ = plan_observed(specs, at, catalog=catalog)
                runs[kind].append(time.perf_counter() - t)
                assert not plan.has_changes, "the bench's tables must plan unchanged"
                if catalog is not None:
                    reads.append(store.reads - before)
    n = args.tables
    best = {k: min(v) for k, v in runs.items()}
    print(f"plan of {n} unchanged tables in one catalog database ({args.commits} commits x {args.partitions} "
          f"partitions each); setup {setup:.1f}s; best of {args.repeat}")
    print(f"{'':<18}{'total s':>10}{'per table ms':>15}")
    for kind, secs in best.items():
        print(f"{kind:<18}{secs:>10.3f}{secs / n * 1000:>15.3f}")
    extra = (best["with catalog"] - best["without catalog"]) / n * 1000
    print(f"catalog reads per plan: {reads[0]} ({reads[0] / n:.4f} per table); catalog cost {extra:.3f} ms per table")
    result = {"tables": n, "commits_per_table": args.commits, "partitions_per_table": args.partitions,
              "best_s": best, "per_table_ms": {k: v / n * 1000 for k, v in best.items()},
              "catalog_reads_per_plan": reads[0], "catalog_ms_per_table": extra}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

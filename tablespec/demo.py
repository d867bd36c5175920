"""The demo: validate, plan, apply, ingest and read back the example specs in a fresh warehouse.

Run with `python -m tablespec.demo [--warehouse DIR_OR_URI]` (default: `$TABLESPEC_WAREHOUSE`,
else ./demo-warehouse; an `s3://bucket/prefix` warehouse works the same, configured from the
standard AWS environment). It drives the same CLI a user types, printing each command first, and
stops at the first failure. Ingestion runs on Spark (`local[*]`); reading back goes through
tablespec and, independently, hudi-rs.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from tablespec import demo_data
from tablespec.cli import main as cli
from tablespec.hudi.io import check_location, is_object_store, join, storage_for

ROOT = Path(__file__).resolve().parents[1]


def run(*argv: str) -> int:
    print(f"\n$ tablespec {' '.join(argv)}", flush=True)
    return cli(list(argv))


def demo(root: str) -> int:
    specs = str(ROOT / "specs" / "examples")
    warehouse = check_location(root, "the demo warehouse")
    storage, _ = storage_for(warehouse)
    storage.delete_tree(warehouse)   # emptied and re-created
    storage.mkdirs(warehouse)
    steps = [
        (("validate", specs), {0}),
        (("plan", specs, "--warehouse", warehouse, "--detailed-exitcode"), {2}),
        (("apply", specs, "--warehouse", warehouse, "--auto-approve"), {0}),
        (("plan", specs, "--warehouse", warehouse, "--detailed-exitcode"), {0}),
    ]
    for argv, ok in steps:
        code = run(*argv)
        if code not in ok:
            print(f"\ndemo failed: exit code {code}", file=sys.stderr)
            return 1
    inputs = (Path(tempfile.mkdtemp(prefix="tablespec-demo-inputs-")) if is_object_store(warehouse)
              else Path(warehouse).parent / (Path(warehouse).name + "-inputs"))
    ingests = [
        ("orders.yaml", demo_data.write(demo_data.orders(1000), inputs / "orders-1.parquet"), "upsert"),
        ("orders.yaml", demo_data.write(demo_data.orders(300, first=900, amount_shift=7), inputs / "orders-2.parquet"),
         "upsert"),
        ("events.yaml", demo_data.write(demo_data.events(2000), inputs / "events.parquet"), "insert"),
        ("customers.yaml", demo_data.write(demo_data.customers(200), inputs / "customers.parquet"), "upsert"),
    ]
    for spec, path, operation in ingests:
        if run("ingest", f"{specs}/{spec}", "--input", path, "--operation", operation, "--warehouse", warehouse) != 0:
            return 1
    # two more upsert batches make orders' clustering due (everyNCommits: 4): plan proposes it,
    # apply sorts each bucket's file group by customer_id, and the tables match their specs again
    for i, first in enumerate((1100, 1150), start=3):
        path = demo_data.write(demo_data.orders(100, first=first, amount_shift=i), inputs / f"orders-{i}.parquet")
        if run("ingest", f"{specs}/orders.yaml", "--input", path, "--warehouse", warehouse) != 0:
            return 1
    for argv, ok in [(("plan", specs, "--warehouse", warehouse, "--detailed-exitcode"), {2}),
                     (("apply", specs, "--warehouse", warehouse, "--auto-approve"), {0}),
                     (("plan", specs, "--warehouse", warehouse, "--detailed-exitcode"), {0}),
                     (("verify", join(warehouse, "sales/customers")), {0}),
                     (("lookup", join(warehouse, "sales/customers"), "7", "199", "4242"), {0})]:
        code = run(*argv)
        if code not in ok:
            print(f"\ndemo failed: exit code {code}", file=sys.stderr)
            return 1
    tables = sorted(f.path[:-len("/.hoodie/hoodie.properties")] for f in storage.walk_files(warehouse)
                    if f.path.endswith("/.hoodie/hoodie.properties"))
    for table in tables:
        if run("show", table) != 0:
            return 1
    return read_back(specs, warehouse)


def read_back(specs: str, warehouse: str) -> int:
    """Read every table through tablespec and hudi-rs; both must see the same rows."""
    import hudi
    import pyarrow as pa

    from tablespec.table import Table
    options = getattr(storage_for(warehouse)[0], "config", None)
    options = options.store_options() if options is not None else {}
    print("\nReading back (tablespec on Spark vs hudi-rs):")
    expected = {"orders": 1250, "events": 2000, "customers": 200}
    ok = True
    for name, rows in expected.items():
        table = Table.load(f"{specs}/{name}.yaml", str(warehouse))
        ours = table.read()
        builder = hudi.HudiTableBuilder.from_base_uri(table.location).with_storage_options(options)
        theirs = pa.Table.from_batches(builder.build().read())
        keys_ours = sorted(r._hoodie_record_key for r in ours.select("_hoodie_record_key").collect())
        keys_theirs = sorted(theirs.column("_hoodie_record_key").to_pylist())
        same = keys_ours == keys_theirs and len(keys_ours) == rows
        ok &= same
        print(f"  {table.spec.qualified_name:<18} tablespec {len(keys_ours):>5} rows, hudi-rs {len(keys_theirs):>5} rows"
              f"  {'ok' if same else 'MISMATCH'}")
    if not ok:
        print("demo failed: read-back mismatch", file=sys.stderr)
        return 1
    print(f"\nDemo complete: tables are in {warehouse}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", default=os.environ.get("TABLESPEC_WAREHOUSE") or "demo-warehouse",
                        help="emptied and re-created (default: $TABLESPEC_WAREHOUSE, else ./demo-warehouse)")
    return demo(parser.parse_args().warehouse)


if __name__ == "__main__":
    sys.exit(main())

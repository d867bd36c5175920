"""The demo: validate, plan, apply, ingest and read back the example specs in a warehouse of its own.

Run with `python -m tablespec.demo [--warehouse DIR_OR_URI]` (default ./demo-warehouse; an
`s3://bucket/prefix` warehouse works the same, configured from the standard AWS environment). It
drives the same CLI a user types, printing each command first, and stops at the first failure.
Ingestion runs on Spark (`local[*]`); reading back goes through tablespec and, independently, hudi-rs.
The demo's project (catalog: hive) lives in its inputs folder: apply and every ingest register the
tables in that embedded metastore, and the demo ends with the `spark-sql` command that queries them by name
and the health report (`tablespec report`) it wrote beside its inputs.

The demo deletes nothing it did not create: it marks the warehouse (and the folder of input files
beside it) as its own, and a warehouse holding anything but the example specs' tables, or one it
did not mark, is refused untouched. A marked one is reused: only the example tables are recreated.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from tablespec import demo_data
from tablespec.cli import main as cli
from tablespec.errors import TablespecError
from tablespec.hudi.io import join
from tablespec.hudi.table import Location
from tablespec.spec.project import PROJECT_FILE

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "specs" / "examples"
MARKER = ".tablespec-demo"
MARKER_TEXT = ("Created by `python -m tablespec.demo`, which may delete and recreate the example tables here "
               "(and its input files); it refuses a folder holding anything else.\n")
SPARK_SQL_CONF = "spark-sql.conf"
QUERY = "SELECT order_date, count(*) AS orders, sum(amount) AS amount FROM sales.orders GROUP BY order_date ORDER BY 1"


def run_command(*argv: str) -> int:
    print(f"\n$ tablespec {' '.join(argv)}", flush=True)
    return cli(list(argv))


def demo_tables(specs: Path = SPECS) -> list[str]:
    """The example specs' table locations, relative to the warehouse: all the demo may delete there."""
    from tablespec.spec.loader import load_specs
    result = load_specs([specs])
    if result.errors:
        raise TablespecError(f"{specs}: the example specs do not load; run `tablespec validate {specs}`")
    return sorted({loaded.spec.spec.location for loaded in result.specs})


def demo_leftovers(where: Location, tables: list[str]) -> list[str]:
    """The demo's tables of an earlier run in the warehouse, to delete before this run. Refuses (one
    line, nothing touched) a warehouse the demo did not mark, or one holding anything but `tables`."""
    storage, warehouse = where.storage, where.uri
    if storage.exists(warehouse) and not storage.is_dir(warehouse):
        raise TablespecError(f"{warehouse}: not a directory; pass --warehouse NEW_DIR")
    owned, marker, found = [join(warehouse, t) for t in tables], join(warehouse, MARKER), set()
    refuse = "the demo deletes nothing it did not create: pass --warehouse NEW_DIR"
    if not where.is_object_store:  # a link would lead the deletion out of the warehouse
        for root, dirs, files in os.walk(warehouse):
            if link := next((n for n in dirs + files if os.path.islink(os.path.join(root, n))), None):
                raise TablespecError(f"{warehouse}: holds a symbolic link ({os.path.relpath(os.path.join(root, link), warehouse)}); "
                                     f"{refuse}")
    for file in storage.walk_files(warehouse):  # lazily: stops at the first file that is not the demo's
        owner = marker if file.path == marker else next((o for o in owned if file.path.startswith(o + "/")), None)
        if owner is None:
            raise TablespecError(f"{warehouse}: holds {file.path[len(warehouse) + 1:]}, which is in none of the demo's tables "
                                 f"({', '.join(tables)}); {refuse}")
        found.add(owner)
    if found and marker not in found:
        raise TablespecError(f"{warehouse}: holds tables the demo did not create (no {MARKER} marker); {refuse}")
    return [o for o in owned if o in found]


def claim_inputs(inputs: Path) -> None:
    """The folder the demo writes its input files to: new, empty, or marked by an earlier run."""
    if inputs.exists() and (not inputs.is_dir() or (any(inputs.iterdir()) and not (inputs / MARKER).is_file())):
        raise TablespecError(f"{inputs}: exists and was not created by the demo (no {MARKER} marker); "
                             "the demo overwrites nothing it did not create: pass --warehouse NEW_DIR")
    inputs.mkdir(parents=True, exist_ok=True)
    (inputs / MARKER).write_text(MARKER_TEXT, encoding="utf-8")


def write_project(inputs: Path, warehouse: str) -> Path:
    """The demo's project file in its inputs folder: the warehouse, and the embedded metastore beside
    it (`.tablespec/`), emptied of an earlier run's registrations. Returns the file."""
    catalog = inputs / ".tablespec"
    for name in ("metastore.db", "metastore.db-wal", "metastore.db-shm"):
        (catalog / name).unlink(missing_ok=True)
    project = inputs / PROJECT_FILE
    project.write_text("# the demo's project (python -m tablespec.demo): its tables are registered in the embedded\n"
                       f"# metastore in {catalog}\nwarehouse: {json.dumps(warehouse)}\ncatalog: hive\n", encoding="utf-8")
    return project


def prepare(where: Location) -> Path:
    """Refuse a warehouse or inputs folder that is not the demo's (before anything is touched), then
    mark both, delete the demo tables of an earlier run and write the demo's project file (see
    `write_project`). Returns the inputs folder."""
    storage, warehouse = where.storage, where.uri
    leftovers = demo_leftovers(where, demo_tables())
    local = not where.is_object_store
    inputs = (Path(warehouse).parent / (Path(warehouse).name + "-inputs") if local
              else Path(tempfile.mkdtemp(prefix="tablespec-demo-inputs-")))
    claim_inputs(inputs)
    storage.mkdirs(warehouse)
    storage.write_bytes(join(warehouse, MARKER), MARKER_TEXT.encode())
    for table in leftovers:
        print(f"removing the demo table {table} of an earlier run", flush=True)
        storage.delete_tree(table)
    write_project(inputs, warehouse)
    return inputs


def demo(root: str) -> int:
    specs = str(SPECS)
    where = Location.parse(root, origin="the demo warehouse")   # configured from the AWS environment
    storage, warehouse = where.storage, where.uri
    inputs = prepare(where)
    project = str(inputs / PROJECT_FILE)

    def run(*argv: str) -> int:   # every command in the demo's project: its catalog registers the tables
        return run_command("--project", project, *argv)
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
        # updated_at grows with amount_shift: these rows are newer than batch 2's (shift 7), so they update
        path = demo_data.write(demo_data.orders(100, first=first, amount_shift=7 + i), inputs / f"orders-{i}.parquet")
        if run("ingest", f"{specs}/orders.yaml", "--input", path, "--warehouse", warehouse) != 0:
            return 1
    for argv, ok in [(("plan", specs, "--warehouse", warehouse, "--detailed-exitcode"), {2}),
                     (("apply", specs, "--warehouse", warehouse, "--auto-approve"), {0}),
                     (("plan", specs, "--warehouse", warehouse, "--detailed-exitcode"), {0}),
                     (("verify", join(warehouse, "sales/customers")), {0}),
                     (("lookup", join(warehouse, "sales/customers"), "7", "199", "4242"), {0}),
                     (("catalog", "conf", "--out", str(inputs / SPARK_SQL_CONF)), {0})]:
        code = run(*argv)
        if code not in ok:
            print(f"\ndemo failed: exit code {code}", file=sys.stderr)
            return 1
    roots = (f.path[:-len("/.hoodie/hoodie.properties")] for f in storage.walk_files(warehouse)
             if f.path.endswith("/.hoodie/hoodie.properties"))
    tables = sorted(r for r in roots if "/.hoodie/" not in r + "/")   # not a table's own metadata table
    for table in tables:
        if run("show", table) != 0:
            return 1
    report = inputs / "report.html"   # beside the inputs: on local disk, whatever the warehouse
    if run("report", specs, "--warehouse", warehouse, "--out", str(report)) != 0:
        return 1
    if read_back(specs, where, inputs) != 0:
        return 1
    print(f"\nThe tables' health report (one page, open it in a browser): {report}")
    return 0


def read_back(specs: str, where: Location, inputs: Path) -> int:
    """Read every table through tablespec and hudi-rs (both must see the same rows), and check that
    the demo's catalog registers each as Hudi's sync would for the table as it is now."""
    import hudi
    import pyarrow as pa

    from tablespec.catalog import open_catalog
    from tablespec.catalog.sync import catalog_diffs
    from tablespec.spec.loader import load_specs
    from tablespec.spec.project import load_project, resolve_catalog
    from tablespec.state import observe
    from tablespec.table import Table
    warehouse = where.uri
    options = getattr(where.storage, "config", None)
    options = options.store_options() if options is not None else {}
    setting = resolve_catalog(load_project(inputs / PROJECT_FILE))
    if setting is None:  # the demo's own project file names it
        raise TablespecError(f"{inputs / PROJECT_FILE}: the demo's project names no catalog")
    catalog = open_catalog(setting)
    print("\nReading back (tablespec on Spark vs hudi-rs), and the catalog's registration:")
    expected = {"orders": 1250, "events": 2000, "customers": 200}
    ok = True
    for name, rows in expected.items():
        spec = load_specs([f"{specs}/{name}.yaml"]).specs[0].spec
        table = Table(spec, where.child(spec.spec.location).uri)   # storage from the AWS environment, as the demo's
        ours = table.read()
        builder = hudi.HudiTableBuilder.from_base_uri(table.location).with_storage_options(options)
        theirs = pa.Table.from_batches(builder.build().read())
        keys_ours = sorted(r._hoodie_record_key for r in ours.select("_hoodie_record_key").collect())
        keys_theirs = sorted(theirs.column("_hoodie_record_key").to_pylist())
        registered = all(d.in_sync for d in catalog_diffs(catalog, [(spec, observe(table.table))]).values())
        same = keys_ours == keys_theirs and len(keys_ours) == rows and registered
        ok &= same
        print(f"  {table.spec.qualified_name:<18} tablespec {len(keys_ours):>5} rows, hudi-rs {len(keys_theirs):>5} rows, "
              f"catalog {'in step' if registered else 'OUT OF STEP'}  {'ok' if same else 'MISMATCH'}")
    if not ok:
        print("demo failed: read-back mismatch", file=sys.stderr)
        return 1
    print(f"\nDemo complete: tables are in {warehouse}, registered in the embedded metastore in {inputs / '.tablespec'}.")
    print("Query them by name (pyspark --properties-file works the same):")
    print(f"  spark-sql --properties-file {inputs / SPARK_SQL_CONF} -e '{QUERY}'")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tablespec.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--warehouse", default="demo-warehouse", metavar="DIR_OR_URI",
                        help="where the demo creates its tables (default: ./demo-warehouse; input files go to "
                             "DIR-inputs beside it). Must be new, empty, or a warehouse of an earlier demo run, "
                             "whose example tables are recreated; anything else is refused untouched")
    try:
        return demo(parser.parse_args(argv).warehouse)
    except TablespecError as e:
        print(f"demo: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

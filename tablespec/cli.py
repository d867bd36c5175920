"""The `tablespec` command: parse arguments, call the library, print, exit.

Exit codes: 0 success (plan --detailed-exitcode: no changes), 1 error, 2 changes present
(plan --detailed-exitcode only). Every library error is printed as a message, never a traceback.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from tablespec.errors import PlanError, SparkJobError, SpecError, TablespecError
from tablespec.version import __version__

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable, Location

DEFAULT_SPEC_PATHS = ["specs/"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tablespec", description="Infrastructure-as-config for Apache Hudi tables.")
    p.add_argument("--version", action="version", version=f"tablespec {__version__}")
    p.add_argument("--project", metavar="FILE", help="project file (default: tablespec.project.yaml here or above)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND",
                           help="run `tablespec COMMAND --help` for its arguments")
    specs_help = "spec files or directories of them (default: specs/)"

    def with_vars(sp):
        sp.add_argument("--var", action="append", default=[], metavar="K=V", help="template variable (repeatable)")

    def with_warehouse(sp):
        sp.add_argument("--warehouse", metavar="DIR", help="root directory or URI the tables are under "
                                                           "(default: $TABLESPEC_WAREHOUSE, else `warehouse:` of "
                                                           "the project file)")

    v = sub.add_parser("validate", help="check spec files and print every problem")
    v.add_argument("paths", nargs="*", metavar="PATH", help=specs_help)
    with_vars(v)

    pl = sub.add_parser("plan", help="show what apply would change")
    pl.add_argument("paths", nargs="*", metavar="PATH", help=specs_help)
    with_warehouse(pl)
    with_vars(pl)
    pl.add_argument("--format", choices=["text", "json", "markdown"], default="text",
                    help="text for a terminal (default), markdown for a pull-request comment, json for scripts")
    pl.add_argument("--out", metavar="PLAN.json", help="also save the plan for `apply PLAN.json`")
    pl.add_argument("--detailed-exitcode", action="store_true", help="exit 0 no changes, 2 changes, 1 error")

    ap = sub.add_parser("apply", help="make the tables match the specs (or run a saved plan)",
                        description="Make the tables match the specs: plan, show the plan, ask for confirmation "
                                    "(unless --auto-approve), apply. A saved plan (PLAN.json from `plan --out`) "
                                    "applies without asking: it was reviewed when it was made, and it is refused "
                                    "if any table or spec changed since.")
    ap.add_argument("paths", nargs="*", metavar="PATH | PLAN.json",
                    help=specs_help + ", or one saved plan (applied without asking)")
    with_warehouse(ap)
    with_vars(ap)
    ap.add_argument("--auto-approve", action="store_true",
                    help="do not ask for confirmation (a saved plan never asks)")
    ap.add_argument("--allow-destructive", action="store_true", help="allow actions that rewrite keys or drop data")
    ap.add_argument("--schedule-only", action="store_true",
                    help="write clustering and compaction plans to the timeline without running them "
                         "(Apache Hudi's run_clustering / run_compaction or a later apply runs them)")

    sh = sub.add_parser("show", help="print the observed state of one table")
    sh.add_argument("location", metavar="LOCATION", help="the table's base path (as given, else under the warehouse)")
    with_warehouse(sh)
    sh.add_argument("--format", choices=["text", "json"], default="text",
                    help="text for people (default) or json (typed values) for scripts")

    im = sub.add_parser("import", help="print a spec for an existing Hudi table")
    im.add_argument("location", metavar="LOCATION", help="the table's base path, or DATABASE.TABLE in the project's catalog")
    im.add_argument("--warehouse", metavar="DIR", help="root the spec location is relative to (default: the table's parent)")
    im.add_argument("--timestamp", action="append", default=[], metavar="NAME=VALUE",
                    help="a partitioning.timestamp setting (field, input, unit, inputFormat, inputFormatDelimiter, "
                         "outputFormat, timeZone, inputTimeZone, outputTimeZone) the "
                         "table's hoodie.properties does not record, as its writers used it; checked against the "
                         "stored rows (repeatable)")

    ing = sub.add_parser("ingest", help="write a file of records into a table (runs Spark)")
    ing.add_argument("spec", metavar="SPEC", help="the spec file of the table")
    ing.add_argument("--input", required=True, metavar="PATH", help="file or directory of records")
    ing.add_argument("--input-format", choices=["parquet", "csv", "json"],
                     help="how to read the input (default: from the file name: .csv; .json, .jsonl, .ndjson; "
                          ".parquet; for a directory, from its files' names)")
    ing.add_argument("--operation", choices=["insert", "upsert", "bulk_insert", "delete"], default="upsert",
                     help="write operation (default: upsert)")
    ing.add_argument("--name", help="the table, when SPEC holds several")
    with_warehouse(ing)
    ing.add_argument("--master", help="Spark master (default: spark.master of the project file, else local[*])")
    with_vars(ing)

    vf = sub.add_parser("verify", help="check tables against their timelines: missing, truncated or orphan "
                                       "data files, index mismatches (exit 1 on any finding)")
    vf.add_argument("paths", nargs="*", metavar="LOCATION | SPEC",
                    help="table base paths (as given, else under the warehouse), or spec files or directories "
                         "whose tables to check (default: specs/)")
    vf.add_argument("--name", help="only the table of this name (of the specs)")
    with_warehouse(vf)
    with_vars(vf)

    lk = sub.add_parser("lookup", help="print where record keys live (RECORD_LEVEL and BLOOM tables)")
    lk.add_argument("location", metavar="LOCATION", help="the table's base path")
    lk.add_argument("keys", nargs="+", metavar="KEY", help="record keys as stored (e.g. id:42 for complex keys)")

    ho = sub.add_parser("hudi-options", help="print the Apache Hudi writer options that make a Hudi job obey a spec")
    ho.add_argument("spec", metavar="SPEC", help="the spec file of the table")
    ho.add_argument("--name", help="the table, when SPEC holds several")
    with_warehouse(ho)
    ho.add_argument("--format", choices=["properties", "json"], default="properties",
                    help="Java properties (--props / --properties-file) or a flat JSON object (df.write.options)")
    ho.add_argument("--hudi-version", choices=["0.15", "1.0", "1.2"], default=None,
                    help="the Apache Hudi line of the job (default: the one that writes the table's version: "
                         "6 -> 0.15, 8 -> 1.0, 9 -> 1.2)")
    with_vars(ho)

    ca = sub.add_parser("catalog", help="print the Spark settings that open the project's catalog",
                        description="`catalog conf` prints a Spark properties file for a session on the project's "
                                    "catalog (class path, Hudi's session settings, the metastore), so that "
                                    "`spark-sql --properties-file FILE` or `pyspark --properties-file FILE` "
                                    "queries the registered tables by name. Fetches Hudi's bundle (and for the "
                                    "embedded metastore the SQLite JDBC driver) into the cache when missing.")
    ca.add_argument("what", choices=["conf"], metavar="conf", help="what to print: `conf`, the Spark settings")
    ca.add_argument("--out", metavar="FILE", help="write the properties to FILE instead of standard output")

    rp = sub.add_parser("report", help="write a health report of tables: one HTML file, or JSON for monitoring",
                        description="A health report of tables from their metadata only (no data file is read, no "
                                    "JVM): file sizes, partitions and buckets, the timeline, services due, drift from "
                                    "the spec, and a score per table with the reasons that lowered it. An unreadable "
                                    "table is reported as such and the others still are (exit code 1).")
    rp.add_argument("paths", nargs="*", metavar="SPEC_OR_DIR",
                    help="spec files or directories of them, table base paths (as given, else under the warehouse), "
                         "or folders of tables (default: specs/ when it exists, else every table under the warehouse)")
    with_warehouse(rp)
    with_vars(rp)
    rp.add_argument("--format", choices=["html", "json"], default="html",
                    help="html: one self-contained page (default); json: the same figures for scripts")
    rp.add_argument("--out", metavar="FILE", help="where to write it (default: report.html; json: standard output)")

    sub.add_parser("schema", help="print the JSON Schema of spec files")
    return p


class _Context:
    """Project file, variables and warehouse, resolved once per command."""

    def __init__(self, args):
        from tablespec.spec.project import find_project, load_project
        from tablespec.spec.templating import parse_var_assignments
        self.args = args
        self.project = load_project(args.project) if args.project else find_project(Path.cwd())
        defaults = dict(self.project.vars) if self.project else {}
        from tablespec.hudi.table import StorageOptions
        # how to reach object stores, passed down with every location (no module-level setting)
        self.options = (StorageOptions.of(self.project.storage, f"{self.project.file}: storage")
                        if self.project and self.project.storage else StorageOptions())
        self.variables = {**defaults, **parse_var_assignments(getattr(args, "var", []))}

    def warehouse(self) -> Location:
        from tablespec.hudi.table import Location
        from tablespec.spec.project import resolve_warehouse
        w = resolve_warehouse(getattr(self.args, "warehouse", None), self.project)
        if not w:
            raise TablespecError("no warehouse: pass --warehouse DIR, set TABLESPEC_WAREHOUSE, "
                                 "or set `warehouse:` in tablespec.project.yaml")
        return Location.parse(w, self.options)

    def catalog(self, needed: bool = False):
        """The project's catalog (`catalog:` or $TABLESPEC_CATALOG); where it names none, the embedded
        metastore (the default) when `needed` (specs ask to be registered), else None."""
        from tablespec.catalog import open_catalog
        from tablespec.spec.project import catalog_or_default, resolve_catalog
        setting = catalog_or_default(self.project) if needed else resolve_catalog(self.project)
        return open_catalog(setting) if setting is not None else None

    def table(self, location: str, origin: str | None = None) -> HudiTable:
        """The handle on the table at `location` (a command-line argument), with the project's storage options."""
        from tablespec.hudi.table import HudiTable
        return HudiTable.open(location, self.options, origin)

    def spark_factory(self, master: str | None = None):
        """Makes the SparkSession when an action needs one: master and conf from the project file."""
        settings = self.project.spark if self.project else None

        def make():
            from tablespec.engine.session import get_spark
            return get_spark(master or (settings.master if settings else None), settings.conf if settings else None)
        return make

    def load(self, paths):
        from tablespec.spec.loader import load_specs
        result = load_specs(paths or DEFAULT_SPEC_PATHS, self.variables,
                            self.project.table_version if self.project else 6)
        for d in result.warnings:
            print(d, file=sys.stderr)
        if result.errors:
            raise SpecError(result.errors)
        return result.specs

    def plan(self, paths):
        return self.plan_observed(paths)[0]

    def plan_observed(self, paths):
        """The plan, and the table states it was made from (by location)."""
        from tablespec.plan.builder import plan_observed
        specs = self.load(paths)
        catalog = self.catalog(needed=any(s.spec.catalog_name is not None for s in specs))
        plan, states = plan_observed(specs, self.warehouse(), self.variables, catalog=catalog)
        return plan.model_copy(update={"default_catalog": _default_file(catalog)}), states


def _default_file(catalog) -> str | None:
    """The embedded metastore's file when `catalog` is the default one (the project names none)."""
    from tablespec.catalog import EmbeddedMetastore
    return str(catalog.db) if isinstance(catalog, EmbeddedMetastore) and catalog.default else None


def cmd_validate(ctx: _Context) -> int:
    specs = ctx.load(ctx.args.paths)
    files = len({s.file for s in specs})
    print(f"{len(specs)} spec{'s' if len(specs) != 1 else ''} in {files} file{'s' if files != 1 else ''}: valid.")
    return 0


def cmd_plan(ctx: _Context) -> int:
    from tablespec.plan.render import render, render_json
    out = ctx.args.out
    if out and not os.path.isdir(os.path.dirname(os.path.abspath(out))):
        raise TablespecError(f"--out {out}: its directory does not exist")
    plan = ctx.plan(ctx.args.paths)
    sys.stdout.write(render(plan, ctx.args.format))
    if ctx.args.out:
        Path(ctx.args.out).write_text(render_json(plan), encoding="utf-8")
        print(f"\nSaved the plan to {ctx.args.out}; run `tablespec apply {ctx.args.out}` to apply exactly this plan.",
              file=sys.stderr)
    return 2 if ctx.args.detailed_exitcode and plan.has_changes else 0


def cmd_apply(ctx: _Context) -> int:
    from tablespec.apply import Applier, check_spec_digests
    from tablespec.plan.render import load_plan, render
    paths = ctx.args.paths
    saved = len(paths) == 1 and paths[0].endswith(".json")
    observed = {}   # a plan made here and applied without a prompt: the states it was made from
    if saved:
        plan = load_plan(paths[0], warehouse=ctx.warehouse() if ctx.args.warehouse else None)
        check_spec_digests(plan)
    else:
        plan, observed = ctx.plan_observed(paths)
    catalog = ctx.catalog(needed=plan.default_catalog is not None or any(a.kind == "catalog_sync" for _, a in plan.actions))
    if plan.default_catalog is not None and _default_file(catalog) != plan.default_catalog:
        raise PlanError(f"{paths[0]}: the plan registers tables in the embedded metastore {plan.default_catalog} (the "
                        f"default), and this apply would use {catalog!r} ({getattr(catalog, 'origin', 'none')}); "
                        "plan again; nothing was changed")
    sys.stdout.write(render(plan, "text"))
    if not plan.has_changes:
        return 0
    if not saved and not ctx.args.auto_approve:
        if not sys.stdin.isatty():
            raise PlanError("refusing to prompt for confirmation: standard input is not a terminal; "
                            "pass --auto-approve, or apply a saved plan (plan --out PLAN.json)")
        answer = input("\nDo you want to perform these actions? Only 'yes' will be accepted: ")
        if answer.strip() != "yes":
            print("Apply cancelled.")
            return 1

    def report(t, a, done):
        print(f"{t.name}: {a.kind} done in {done.seconds:.2f}s")
        estimate, actual = a.estimate.shown(), done.actual.shown()
        if estimate or actual:
            print(f"    estimate: {_pairs(estimate)}")
            print(f"    actual:   {_pairs(actual)}")

    print()
    applier = Applier(on_action=report, on_progress=ProgressPrinter(sys.stdout), spark=ctx.spark_factory(),
                      schedule_only=ctx.args.schedule_only, options=ctx.options,
                      observed=observed if ctx.args.auto_approve else None, catalog=catalog)
    if any(a.needs_spark for _, a in plan.actions):
        with spark_errors("apply failed"):
            result = applier.apply(plan, allow_destructive=ctx.args.allow_destructive)
    else:
        result = applier.apply(plan, allow_destructive=ctx.args.allow_destructive)
    print(result.summary())
    return 0


@contextmanager
def spark_errors(what: str):
    """Spark failures caused by the data (malformed input, values that do not cast) as one
    clear line naming the full log; the action was rolled back, so nothing was committed."""
    from tablespec.engine.failures import one_line
    from tablespec.engine.session import require_pyspark, with_log
    require_pyspark()
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException
    try:
        yield
    except (PySparkException, Py4JError) as e:
        raise SparkJobError(with_log(f"{what}: {one_line(e)}; nothing was committed")) from None


def _pairs(shown: dict) -> str:
    """Values as `Measured.shown` gives them (in units by their type)."""
    return ", ".join(f"{k}={v}" for k, v in shown.items()) or "-"


class ProgressPrinter:
    """Progress of long actions: one updating line on a terminal, plain log lines otherwise (CI)."""

    def __init__(self, stream):
        self.stream = stream
        self.tty = stream.isatty()

    def __call__(self, t, a, done_partitions, partitions, done_bytes, total_bytes, elapsed):
        from tablespec.spec.sizes import human_bytes
        rate = done_bytes / elapsed if elapsed > 0 else 0
        left = (total_bytes - done_bytes) / rate if rate else 0
        line = (f"{t.name}: {a.kind} {done_partitions}/{partitions} partitions, {human_bytes(done_bytes)}/"
                f"{human_bytes(total_bytes)}, {human_bytes(int(rate))}/s, ~{left:.0f}s left")
        if self.tty:
            self.stream.write("\r" + line + ("\n" if done_bytes >= total_bytes else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def _table_path(ctx: _Context, location: str) -> str:
    """A path as given when it exists, else relative to the warehouse (when one is configured)."""
    from tablespec.spec.project import resolve_warehouse
    warehouse = resolve_warehouse(getattr(ctx.args, "warehouse", None), ctx.project)
    from tablespec.hudi.io import check_location, join
    if "://" in location or ":/" in location:
        return check_location(location, "the table location argument")
    if os.path.isdir(location) or not warehouse:
        return location
    return join(warehouse, location) if "://" in warehouse else os.path.join(warehouse, location)


def cmd_show(ctx: _Context) -> int:
    from tablespec.show import show_json, show_text
    from tablespec.state import observe
    state = observe(ctx.table(_table_path(ctx, ctx.args.location)))
    if not state.exists:
        raise TablespecError(f"{ctx.args.location}: no Hudi table there (no .hoodie/hoodie.properties)")
    sys.stdout.write(show_json(state) if ctx.args.format == "json" else show_text(state))
    return 0


def cmd_import(ctx: _Context) -> int:
    from tablespec.importer import import_yaml
    from tablespec.state import observe
    location, registered = ctx.args.location, None
    if re.fullmatch(r"[A-Za-z_]\w*\.[A-Za-z_]\w*", location) and not os.path.exists(location):
        location, registered = _catalog_location(ctx, location)   # db.table: where the catalog says it is
    table = ctx.table(location, "the table location argument" if ":/" in location else None)
    state = observe(table)
    warehouse = ctx.warehouse() if ctx.args.warehouse else table.location.parent()
    given = {}
    for item in ctx.args.timestamp:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise TablespecError(f"--timestamp {item}: expected NAME=VALUE, e.g. outputFormat=yyyy/MM/dd")
        given[key.strip()] = value.strip()
    sys.stdout.write(import_yaml(state, warehouse, given, registered))
    return 0


def _catalog_location(ctx: _Context, qualified: str) -> tuple[str, tuple[str, str]]:
    """The base path the project's catalog registers `db.table` at, and its (database, table)."""
    database, name = qualified.lower().split(".")
    catalog = ctx.catalog()
    if catalog is None:
        raise TablespecError(f"import {qualified}: the project names no catalog to look it up in: set `catalog:` "
                             "in tablespec.project.yaml or $TABLESPEC_CATALOG (or pass the table's location)")
    found = catalog.tables(database).get(name)
    if found is None:
        raise TablespecError(f"import {qualified}: {catalog.origin}: the catalog has no table {database}.{name}")
    path = found.serde_parameters.get("path") or found.location
    return path.removeprefix("file:") if path.startswith("file:/") else path, (database, name)


def cmd_ingest(ctx: _Context) -> int:
    from tablespec.engine.ingest import explain_parse_failure, infer_format, read_input
    from tablespec.engine.session import with_log
    from tablespec.table import Table
    args = ctx.args
    if not os.path.exists(args.input):
        raise TablespecError(f"{args.input}: no such file or directory")
    fmt = args.input_format
    if fmt is None:
        fmt = infer_format(args.input)
        print(f"{args.input}: reading {fmt} (from the file name; --input-format overrides)", file=sys.stderr)
    spark = ctx.spark_factory(args.master)()
    table = Table.load(args.spec, ctx.warehouse().uri, name=args.name, variables=ctx.variables, spark=spark,
                       storage_options=ctx.options, project=ctx.project)
    what = f"{args.input}: cannot ingest ({fmt})"
    try:
        with spark_errors(what):
            df = read_input(spark, args.input, fmt, table.spec)  # by column name; typed by the spec
            result = table.write(df, args.operation)
    except SparkJobError:
        with spark_errors(what):
            why = explain_parse_failure(spark, args.input, fmt, table.spec)
        if why:
            raise SparkJobError(with_log(f"{why}; nothing was committed")) from None
        raise
    print(result)
    return 0


def _is_table(table: HudiTable) -> bool:
    from tablespec.hudi.config import META_FOLDER
    return table.storage.is_dir(table.location.join(META_FOLDER))


def _verify_tables(ctx: _Context) -> list[HudiTable]:
    """The tables `verify` checks: table paths as given (or under the warehouse), and the tables
    the specs among the paths declare (all of specs/ by default), optionally one by --name."""
    from tablespec.hudi.table import HudiTable
    args = ctx.args
    tables: list[HudiTable] = []
    spec_paths = []
    for path in args.paths or DEFAULT_SPEC_PATHS:
        location = _table_path(ctx, path)
        if "://" in path or ":/" in path:  # a URI (_table_path checked it)
            tables.append(ctx.table(location))
        elif _is_table(table := ctx.table(location)):
            tables.append(table)
        elif os.path.isdir(path) or path.endswith((".yaml", ".yml")):
            spec_paths.append(path)
        else:
            raise TablespecError(f"{path}: no Hudi table there (no .hoodie/) and no spec file")
    if args.name and not spec_paths:
        raise TablespecError("--name picks a table of the specs; no spec files or directories were given")
    if spec_paths:
        specs = ctx.load(spec_paths)
        if args.name:
            specs = [s for s in specs if args.name in (s.spec.name, s.spec.qualified_name)]
            if not specs:
                raise TablespecError(f"no table named {args.name} in {', '.join(spec_paths)}")
        elif not specs:
            raise TablespecError(f"{', '.join(spec_paths)}: no Hudi table there (no .hoodie/) and no specs")
        warehouse = ctx.warehouse()
        for loaded in specs:
            table = HudiTable(warehouse.child(loaded.spec.spec.location))
            if not _is_table(table):
                raise TablespecError(f"{loaded.spec.qualified_name} ({loaded.where()}): no table at {table.base} "
                                     "yet; `tablespec apply` creates it")
            tables.append(table)
    return list({t.base: t for t in tables}.values())


def _report_targets(ctx: _Context) -> tuple[list, str | None]:
    """The tables `report` covers, each with the spec declaring it (if given by one), and the warehouse."""
    from tablespec.hudi.table import HudiTable, Location
    from tablespec.report.warehouse import Target, tables_under
    from tablespec.spec.project import resolve_warehouse
    args = ctx.args
    warehouse = resolve_warehouse(args.warehouse, ctx.project)
    if not args.paths and not os.path.isdir(DEFAULT_SPEC_PATHS[0]):   # no specs here: every table in the warehouse
        return [Target(t) for t in tables_under(ctx.warehouse())], ctx.warehouse().uri
    targets, spec_paths = [], []
    for path in args.paths or DEFAULT_SPEC_PATHS:
        location = _table_path(ctx, path)
        if "://" in path or ":/" in path:   # a URI (_table_path checked it)
            targets.append(Target(ctx.table(location)))
        elif _is_table(table := ctx.table(location)):
            targets.append(Target(table))
        elif path.endswith((".yaml", ".yml")) or (os.path.isdir(path) and _holds_specs(Path(path))):
            spec_paths.append(path)
        elif os.path.isdir(path):   # a folder of tables; holding none, it is reported as no table
            found = tables_under(Location.parse(os.path.abspath(path), ctx.options))
            targets += [Target(t) for t in found] or [Target(table)]
        else:
            raise TablespecError(f"{path}: no Hudi table there (no .hoodie/), no spec file and no folder of either")
    if spec_paths:
        where = ctx.warehouse()
        warehouse = where.uri
        targets += [Target(HudiTable(where.child(loaded.spec.spec.location)), loaded) for loaded in ctx.load(spec_paths)]
    return list({t.table.base: t for t in targets}.values()), warehouse


def _holds_specs(folder: Path) -> bool:
    return any(p.suffix in (".yaml", ".yml") for p in folder.rglob("*") if ".hoodie" not in p.parts)


def cmd_report(ctx: _Context) -> int:
    import json

    from tablespec.report.warehouse import build_report, drawn_report
    targets, warehouse = _report_targets(ctx)
    if not targets:
        raise TablespecError("no tables to report on: pass spec files, table paths or a warehouse holding tables")
    out = ctx.args.out or (None if ctx.args.format == "json" else "report.html")
    if out and not os.path.isdir(os.path.dirname(os.path.abspath(out))):
        raise TablespecError(f"--out {out}: its directory does not exist")
    if ctx.args.format == "json":
        report = build_report(targets, warehouse)
        text = json.dumps(report, indent=2) + "\n"
    else:
        from tablespec.report.html import charts, render_html
        report, drawn = drawn_report(targets, warehouse, draw=charts)
        text = render_html(report, drawn)
    if out:
        Path(out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    for entry in report["tables"]:
        if entry["error"]:
            print(f"error: {entry['name']}: {entry['error']}", file=sys.stderr)
    unreadable = len(report["overview"]["unreadable"])
    if out:
        print(f"Wrote the report of {report['overview']['tables']} table(s) to {out}"
              + (f"; {unreadable} could not be read" if unreadable else ""), file=sys.stderr)
    return 1 if unreadable else 0


def cmd_verify(ctx: _Context) -> int:
    from tablespec.verify import verify_table
    tables = _verify_tables(ctx)
    dirty = 0
    for table in tables:
        try:
            report = verify_table(table)
        except TablespecError as e:  # an unreadable timeline or config: say so, check the other tables
            print(f"error: {e}", file=sys.stderr)
            dirty += 1
            continue
        print(report)
        dirty += not report.ok
    if len(tables) > 1:
        print(f"{len(tables)} tables verified: " + (f"{dirty} with findings or errors" if dirty else "all clean"))
    return 1 if dirty else 0


def cmd_lookup(ctx: _Context) -> int:
    from tablespec.index import lookup
    found = {r["key"]: r for r in lookup(ctx.table(ctx.args.location), ctx.args.keys).to_pylist()}
    for key in dict.fromkeys(ctx.args.keys):  # in the order given, each once
        if key in found:
            print(f"{key}\t{found[key]['partition_path']}\t{found[key]['file_id']}")
    missing = len(set(ctx.args.keys)) - len(found)
    if missing:
        print(f"({missing} key(s) not in the table)", file=sys.stderr)
    return 0


def cmd_hudi_options(ctx: _Context) -> int:
    import json

    from tablespec.hudi_options import options_for, render_properties
    from tablespec.spec.loader import select_spec
    loaded = select_spec(ctx.load([ctx.args.spec]), ctx.args.name, ctx.args.spec)
    rendered = options_for(loaded, ctx.warehouse(), ctx.args.hudi_version)
    for note in rendered.notes:
        print(f"note: {note}", file=sys.stderr)
    options = rendered.options
    sys.stdout.write(json.dumps(options, indent=2) + "\n" if ctx.args.format == "json" else render_properties(options))
    return 0


def cmd_catalog(ctx: _Context) -> int:
    from tablespec.engine.catalog_conf import catalog_spark_conf
    from tablespec.hudi.formats.properties import format_properties
    from tablespec.spec.project import catalog_or_default
    setting = catalog_or_default(ctx.project)
    text = format_properties(catalog_spark_conf(setting), (f"Spark settings for the catalog {setting.uri} ({setting.origin})",),
                             sort_keys=False, dated=False)
    if ctx.args.out:
        Path(ctx.args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def cmd_schema(ctx: _Context) -> int:
    from tablespec.spec.schema import render_schema
    sys.stdout.write(render_schema())
    return 0


COMMANDS = {"validate": cmd_validate, "plan": cmd_plan, "apply": cmd_apply, "show": cmd_show,
            "import": cmd_import, "ingest": cmd_ingest, "verify": cmd_verify, "lookup": cmd_lookup,
            "hudi-options": cmd_hudi_options, "catalog": cmd_catalog, "report": cmd_report, "schema": cmd_schema}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](_Context(args))
    except SpecError as e:
        for d in e.diagnostics:
            print(d, file=sys.stderr)
        n = len(e.diagnostics)
        print(f"{n} error{'s' if n != 1 else ''}.", file=sys.stderr)
        return 1
    except TablespecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # a path that is not what it should be (a file for a directory, no permission)
        print(f"error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a Spark or Java failure outside spark_errors: still one line, and the log
        from tablespec.engine.failures import is_spark_failure, one_line
        if not is_spark_failure(e):
            raise
        from tablespec.engine.session import with_log
        print(f"error: {with_log(one_line(e))}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""The Python API ingestion jobs use: a table as its spec declares it.

    table = Table.load("specs/examples/orders.yaml", warehouse="./warehouse")
    table.write(df, operation="upsert")
    table.read(as_of="20261121093000123")
    table.read_incremental("20261121093000123")   # what commits after it wrote, as Hudi's incremental query
    table.lookup(["o-1", "o-2"])   # RECORD_LEVEL and BLOOM tables: where keys live, no Spark
    table.verify()                 # missing, truncated or orphan files, index mismatches; no Spark
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from tablespec.catalog import open_catalog
from tablespec.errors import SpecError, TablespecError
from tablespec.hudi.table import HudiTable, Location, StorageOptions
from tablespec.plan.locations import check_location
from tablespec.spec.loader import load_specs, select_spec
from tablespec.spec.project import Project, catalog_or_default, find_project, resolve_warehouse


class Table:
    """One table: its spec and one `HudiTable` handle (opened here, reused by every call)."""

    def __init__(self, spec, location: str, spark=None, storage_options: Mapping | StorageOptions | None = None,
                 catalog=None):
        """`storage_options`: how to reach an object store (a project file's `storage:` section).
        `catalog` (tablespec.catalog.Catalog): where a spec with `catalog:` is registered; writes sync it."""
        self.spec, self.location, self._spark = spec, location, spark
        self.table = HudiTable.open(location, StorageOptions.of(storage_options))
        self.catalog = catalog

    @classmethod
    def load(cls, spec_path: str, warehouse: str | None = None, name: str | None = None,
             variables: dict | None = None, spark=None,
             storage_options: Mapping | StorageOptions | None = None, project: Project | None = None) -> Table:
        """The table a spec file declares (`name` picks one of several documents). `storage_options`
        default to the project's `storage:` section; `project` (its vars, warehouse, storage and
        catalog) to the project file found from the working directory."""
        project = project if project is not None else find_project(Path.cwd())
        result = load_specs([spec_path], {**(project.vars if project else {}), **(variables or {})})
        if result.errors:
            raise SpecError(result.errors)
        spec = select_spec(result.specs, name, spec_path).spec
        root = resolve_warehouse(warehouse, project)
        if not root:
            raise TablespecError("no warehouse: pass warehouse=..., set TABLESPEC_WAREHOUSE, "
                                 "or set `warehouse:` in tablespec.project.yaml")
        if storage_options is None and project is not None and project.storage:
            storage_options = StorageOptions.of(project.storage, f"{project.file}: storage")
        options = StorageOptions.of(storage_options)
        at = Location.parse(root, options)
        location = check_location(at, at.child(spec.spec.location))
        catalog = open_catalog(catalog_or_default(project)) if spec.catalog_name is not None else None
        return cls(spec, location.uri, spark, options, catalog)

    @property
    def spark(self):
        if self._spark is None:
            from tablespec.engine.session import get_spark
            self._spark = get_spark()
        return self._spark

    def spec_ddl(self) -> str:
        """The spec's columns as a Spark DDL schema (for reading untyped inputs such as CSV)."""
        from tablespec.engine.schema import spark_ddl
        return spark_ddl(self.spec)

    def write(self, df, operation: str = "upsert", **options):
        """Commit `df` with insert / upsert / bulk_insert / delete; returns what was committed."""
        from tablespec.engine.writer import TableWriter
        result = TableWriter(self.spark, self.spec, self.table, **options).write(df, operation)
        self.sync_catalog()
        return result

    def sync_catalog(self):
        """After a commit (its instant completed): the catalog gets the new partitions, columns and
        last commit, as Hudi's sync after each commit would. A crash before it: the next apply syncs."""
        if self.catalog is None or self.spec.catalog_name is None:
            return None
        from tablespec.apply import sync_table
        from tablespec.state import observe
        return sync_table(self.catalog, self.spec, observe(self.table.refresh()))

    def read(self, as_of: str | None = None, filters=None, view: str = "snapshot"):
        """The latest snapshot (or the one as of a completed instant) as a Spark DataFrame; `filters`:
        a mapping of column to value, or a list of (column, op, value) conditions that all hold
        (engine/filters.py), which also prune the files read; `view` "read_optimized" reads a
        merge-on-read table's base files only, without its log files."""
        from tablespec.engine.reader import read
        return read(self.spark, self.table, self.spec, as_of, filters, view)

    def read_incremental(self, begin: str, end: str | None = None):
        """The records commits from `begin` to `end` wrote, as Hudi's incremental query of the table's
        version reads them (version 6: requested times, begin excluded; 8/9: completion times)."""
        from tablespec.engine.reader import read_incremental
        return read_incremental(self.spark, self.table, self.spec, begin, end)

    def lookup(self, keys):
        """RECORD_LEVEL and BLOOM tables: pyarrow.Table(key, partition_path, file_id) of the keys the
        table holds (absent keys are left out). Reads Hudi's record index (BLOOM: the files' bloom
        filters, then the candidate files' keys) on the driver; no Spark."""
        from tablespec.index import lookup
        return lookup(self.table.refresh(), keys)  # the table as it is now: others may have written since

    def verify(self):
        """Check the table's files and index against its timeline (`tablespec verify`): a
        tablespec.verify.TableReport, `.ok` when nothing was found. Driver side; no Spark."""
        from tablespec.verify import verify_table
        return verify_table(self.table.refresh())  # the table as it is now

"""Helpers for engine tests: create tables from spec text, compare with hudi-rs."""
from __future__ import annotations

import decimal

import pyarrow as pa

from tablespec.actions.metadata import create_table
from tablespec.engine.reader import to_arrow
from tablespec.hudi.io import table_location
from tablespec.hudi.table import HudiTable
from tablespec.spec.loader import load_spec_text
from tablespec.table import Table


def make_table(spark, warehouse, text: str) -> Table:
    result = load_spec_text(text, "test.yaml")
    assert not result.errors, result.errors
    spec = result.specs[0].spec
    location = table_location(str(warehouse), spec.spec.location)
    create_table(HudiTable.open(location), spec)
    return Table(spec, location, spark)


def _norm(v):
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, list) and v and isinstance(v[0], tuple):  # map as list of pairs
        return sorted(v)
    if isinstance(v, dict):
        return tuple(sorted((k, _norm(x)) for k, x in v.items()))
    return v


def rows(table: pa.Table) -> list[tuple]:
    names = sorted(table.column_names)
    out = [tuple((n, _norm(r[n])) for n in names) for r in table.to_pylist()]
    return sorted(out, key=repr)


def hudi_rs_options(location: str) -> dict[str, str]:
    """The storage options hudi-rs needs for `location` (endpoint, region... of an s3:// one; none locally)."""
    from tablespec.hudi.table import Location
    storage = Location.parse(location).storage
    return storage.config.store_options() if hasattr(storage, "config") else {}


def hudi_rs_table(location: str):
    """hudi-rs's view of the table at `location`, on local disk or S3."""
    import hudi
    return hudi.HudiTableBuilder.from_base_uri(location).with_storage_options(hudi_rs_options(location)).build()


def hudi_rs_rows(location: str) -> list[tuple]:
    batches = hudi_rs_table(location).read()
    table = pa.Table.from_batches(batches) if batches else pa.table({})
    return rows(table)


def tablespec_rows(table: Table, **kw) -> list[tuple]:
    return rows(to_arrow(table.read(**kw)))


def assert_hudi_rs_agrees(table: Table) -> list[tuple]:
    """The table read through hudi-rs equals table.read() (meta columns included), and `verify`
    finds nothing wrong with its files or index; returns the rows."""
    ours = tablespec_rows(table)
    theirs = hudi_rs_rows(table.location)
    assert theirs == ours
    report = table.verify()
    assert report.ok, str(report)
    return ours


def run_script(body: str, **env: str):
    """Run `body` (dedented) in a fresh Python process that imports this checkout and these helpers
    (for local-cluster sessions and crash tests) with a short-lived JVM's flags; returns the CompletedProcess."""
    import os
    import subprocess
    import sys
    import textwrap

    from _support import ROOT, SHORT_LIVED_JVM
    script = f"import sys\nsys.path.insert(0, {str(ROOT / 'tests' / 'engine')!r})\n" + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **SHORT_LIVED_JVM, **env})

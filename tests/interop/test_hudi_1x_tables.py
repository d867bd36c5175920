"""Version-6 tables Apache Hudi 1.2.0 writes (`hoodie.write.table.version=6`), in its own process.

Hudi 1.2.0 spells two keys its own way in hoodie.properties (measured here, and listed in the
docs/hudi-interop.md, "Tables Apache Hudi writes"): `hoodie.table.keygenerator.type=SIMPLE` instead of
`hoodie.table.keygenerator.class`, and `hoodie.table.ordering.fields` instead of
`hoodie.table.precombine.field`. tablespec reads both spellings, keeps the table's own when it
rewrites the file, and Hudi 1.2.0 (and 0.15) read and write on after tablespec did."""
from __future__ import annotations

import pyarrow as pa
from helpers import hudi_rs_rows, rows, tablespec_rows
from hudi_process import Batch, read_step, write_step
from interop_support import assert_readers_agree, cli, hudi_rows
from test_hudi_metadata_table import assert_listing_is_storage
from test_hudi_tables import KEYED, SCHEMA, _df, _import, _table

from tablespec.hudi.config import read_table_config
from tablespec.hudi.formats.properties import parse_properties
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.table import HudiTable
from tablespec.hudi_options import hudi_write_options

FIRST = [("a", 1, "2024-01-01", 1), ("b", 2, "2024-01-01", 1), ("c", 3, "2024-01-02", 1)]
V6 = {"hoodie.write.table.version": "6", "hoodie.datasource.write.operation": "upsert"}
SIMPLE_V6 = (Batch.of({"hoodie.table.name": "simple_v6", **KEYED, **V6}, SCHEMA, FIRST),)
TWO_ORDERING_FIELDS = (Batch.of({"hoodie.table.name": "two_ordering", **KEYED, **V6,
                                 "hoodie.datasource.write.precombine.field": "ts,v"}, SCHEMA, FIRST),)


def _properties(location) -> dict[str, str]:
    return parse_properties((location / ".hoodie" / "hoodie.properties").read_text("latin-1"))


def _hudi_spelling(props: dict[str, str]) -> None:
    """The keys Hudi 1.2.0 writes for a version-6 table, and not the ones Hudi 0.15 writes."""
    assert props["hoodie.table.version"] == "6"
    assert props["hoodie.table.keygenerator.type"] == "SIMPLE" and props["hoodie.table.ordering.fields"] == "ts"
    assert "hoodie.table.keygenerator.class" not in props and "hoodie.table.precombine.field" not in props


def _as_read(read: list[dict]) -> list[tuple]:
    return rows(pa.Table.from_pylist(read))


def test_version_6_table_written_by_hudi_1x(hudi, hudi1, tmp_path, capsys):
    hudi1.prepare(SIMPLE_V6, TWO_ORDERING_FIELDS)   # one Hudi 1.2.0 process writes both tables
    location, hudi_read = hudi1.copy(SIMPLE_V6, tmp_path / "simple_v6")
    _hudi_spelling(_properties(location))

    # import, then plan with the spec: only dropping the column_stats partition Hudi 1.x keeps by default
    doc, _ = _import(tmp_path, location, capsys, ("drop_metadata_partitions",))
    assert doc["spec"]["orderingField"] == "ts"
    table = _table(hudi, doc, location)
    ours = tablespec_rows(table)
    assert ours == _as_read(hudi_read) == hudi_rs_rows(table.location)

    # a is older than the stored row (it loses), b newer, d new; the write drops the column_stats
    # partition (hoodie.properties rewritten in the table's own spelling) and records itself in `files`
    table.write(_df(hudi, [("a", 10, "2024-01-01", 0), ("b", 20, "2024-01-01", 2), ("d", 4, "2024-01-02", 2)]))
    _hudi_spelling(_properties(location))
    after_ours = tablespec_rows(table)
    # Apache Hudi 0.15 reads the commit through the metadata table (Hudi 1.x's, continued by tablespec),
    # and tablespec reads it too (the base file is Hudi 1.2.0's HFile)
    assert_listing_is_storage(str(location))
    assert hudi_rows(hudi, str(location), **{"hoodie.metadata.enable": "true"}) == after_ours
    assert {dict(r)["id"]: dict(r)["v"] for r in after_ours} == {"a": 1, "b": 20, "c": 3, "d": 4}

    # Hudi 1.2.0 opens the table tablespec wrote, then upserts with `hudi-options` (plus the table
    # version its writers must keep: without it Hudi 1.x upgrades the table)
    options = {k: v for k, v in hudi_write_options(table.spec, HudiTable.open(table.location)).items() if k != "path"}
    options.update({"hoodie.write.table.version": "6", "hoodie.datasource.write.operation": "upsert"})
    upsert = [("c", 30, "2024-01-02", 0), ("d", 40, "2024-01-02", 3), ("e", 5, "2024-01-03", 3)]
    before, _, after = hudi1.process.run([read_step(location), write_step(location, options, SCHEMA, upsert),
                                         read_step(location)])
    assert _as_read(before) == after_ours
    _hudi_spelling(_properties(location))
    assert read_table_config(LocalStorage(), str(location)).version == 6
    final = assert_readers_agree(hudi, table)   # tablespec, hudi-rs and Hudi 0.15
    assert _as_read(after) == final
    assert {dict(r)["id"]: dict(r)["v"] for r in final} == {"a": 1, "b": 20, "c": 3, "d": 40, "e": 5}


def test_several_ordering_fields_are_refused(hudi1, tmp_path, capsys):
    """tablespec orders records by one field: a table Hudi 1.x orders by two is refused by name."""
    hudi1.prepare(SIMPLE_V6, TWO_ORDERING_FIELDS)
    location, _ = hudi1.copy(TWO_ORDERING_FIELDS, tmp_path / "two_ordering")
    assert _properties(location)["hoodie.table.ordering.fields"] == "ts,v"
    code, out, err = cli(capsys, "import", str(location), "--warehouse", str(tmp_path))
    assert code == 1 and out == "" and "Traceback" not in err
    assert "hoodie.table.ordering.fields=ts,v lists 2 ordering fields" in err

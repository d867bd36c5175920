"""Virtual keys (hoodie.populate.meta.fields=false) on a table Apache Hudi wrote: every tablespec
entry point refuses it with the reason, in one line, before touching anything; and Hudi indeed
cannot turn meta fields on for it, which is what the refusal tells the user."""
from __future__ import annotations

import pytest
from interop_support import hudi_rows, hudi_write

from tablespec.cli import main
from tablespec.engine.writer import WriteRefused
from tablespec.spec.loader import load_spec_text
from tablespec.table import Table

SCHEMA = "id string, region string, v int"
SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: vkeys}
spec:
  location: vkeys
  columns:
    - {name: id, type: string, nullable: false}
    - {name: region, type: string}
    - {name: v, type: int}
  recordKey: {fields: [id]}
  partitioning: {fields: [region]}
  orderingField: v
  index: {type: BUCKET, numBuckets: 2}
"""
REASON = "hoodie.populate.meta.fields=false (virtual keys) is not supported"


def _files(location) -> dict:
    return {p: p.read_bytes() for p in location.rglob("*") if p.is_file()}


def test_virtual_keys_table_is_refused_everywhere_untouched(hudi, tmp_path, capsys):
    location = tmp_path / "vkeys"
    options = {"hoodie.table.name": "vkeys", "hoodie.datasource.write.recordkey.field": "id",
               "hoodie.datasource.write.partitionpath.field": "region",
               "hoodie.datasource.write.precombine.field": "v", "hoodie.populate.meta.fields": "false"}
    hudi_write(hudi.createDataFrame([("a", "eu", 1), ("b", "us", 1)], SCHEMA), location, options)
    seen = hudi_rows(hudi, location)
    before = _files(location)
    assert (location / ".hoodie" / "metadata").is_dir()   # Hudi's metadata table: no refusal retires it

    spec_file = tmp_path / "vkeys.yaml"
    spec_file.write_text(SPEC)
    for argv in (("import", str(location)), ("plan", str(spec_file)), ("apply", str(spec_file), "--auto-approve"),
                 ("hudi-options", str(spec_file))):
        code = main([*argv, "--warehouse", str(tmp_path)])
        out, err = capsys.readouterr()
        assert code == 1 and REASON in err and "Traceback" not in err, argv
        if argv[0] == "import":
            assert out == "" and len(err.strip().splitlines()) == 1
            assert "Apache Hudi cannot turn meta fields on" in err and "copy its rows into a new table" in err
    table = Table(load_spec_text(SPEC, "vkeys.yaml").specs[0].spec, str(location), hudi)
    with pytest.raises(WriteRefused, match="virtual keys"):
        table.write(hudi.createDataFrame([("c", "eu", 1)], SCHEMA), "upsert")
    assert _files(location) == before

    # what the refusal says: Hudi refuses a writer that would populate meta fields on this table
    with pytest.raises(Exception, match="(?i)config conflict"):
        hudi_write(hudi.createDataFrame([("c", "eu", 1)], SCHEMA), location,
                   {**options, "hoodie.populate.meta.fields": "true"})
    assert hudi_rows(hudi, location) == seen

"""Url-encoded partition paths (hoodie.datasource.write.partitionpath.urlencode=true) beside Apache Hudi:
a table Hudi wrote with values holding `/`, space and `%` is imported, planned clean, upserted,
bucketed and clustered by tablespec, then written by Hudi with `hudi-options`; a url-encoded table
tablespec created takes Hudi's writes. Every reader agrees at each step, partition values included."""
from __future__ import annotations

import json

from interop_support import apply_until_done, assert_readers_agree, cli, hudi_rows, hudi_write, save_spec

from tablespec.hudi.config import read_table_config
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.table import HudiTable, Location
from tablespec.hudi_options import hudi_write_options
from tablespec.importer import spec_document
from tablespec.spec.model import TableSpec
from tablespec.state import observe
from tablespec.table import Table

SCHEMA = "id string, region string, v int"
ROWS = [("a", "eu/west", 1), ("b", "us east", 1), ("c", "100%", 1), ("d", "plain", 1), ("e", None, 1)]
# Hudi 0.15 escapes `/` and `%` (upper-case hex), keeps spaces; nulls go to the default partition.
HUDI_PATHS = {"a": "region=eu%2Fwest", "b": "region=us east", "c": "region=100%25", "d": "region=plain",
              "e": "region=__HIVE_DEFAULT_PARTITION__"}



def _by_id(rows) -> dict[str, dict]:
    return {dict(r)["id"]: dict(r) for r in rows}




def test_hudi_url_encoded_table_imports_upserts_migrates_and_takes_hudi_writes(hudi, tmp_path, capsys):
    location = tmp_path / "regions"
    hudi_write(hudi.createDataFrame(ROWS, SCHEMA), location, {
        "hoodie.table.name": "regions", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "v", "hoodie.datasource.write.operation": "upsert",
        "hoodie.datasource.write.partitionpath.field": "region", "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.partitionpath.urlencode": "true"})
    # Hudi records the setting in hoodie.properties: the table itself says how its paths are encoded
    assert read_table_config(LocalStorage(), str(location)).url_encode_partitioning
    assert {i: r["_hoodie_partition_path"] for i, r in _by_id(hudi_rows(hudi, str(location))).items()} == HUDI_PATHS

    code, out, err = cli(capsys, "import", str(location), "--warehouse", str(tmp_path))
    assert code == 0, err
    spec_file = str(tmp_path / "regions.yaml")
    with open(spec_file, "w") as f:
        f.write(out)
    code, out, err = cli(capsys, "plan", spec_file, "--warehouse", str(tmp_path), "--detailed-exitcode")
    assert code == 0 and out.startswith("No changes."), out + err
    doc = spec_document(observe(HudiTable.open(str(location))), Location.parse(str(tmp_path)))
    assert doc["spec"]["partitioning"] == {"fields": ["region"], "hiveStyle": True, "urlEncode": True}
    code, out, _ = cli(capsys, "show", str(location))
    assert "partitions  region hive-style url-encoded\n" in out
    table = Table(TableSpec.model_validate(doc), str(location), hudi)
    seen = _by_id(assert_readers_agree(hudi, table))
    assert {i: r["region"] for i, r in seen.items()} == dict((i, r) for i, r, _ in ROWS)

    # tablespec upserts into an existing encoded partition and a new one
    table.write(hudi.createDataFrame([("a", "eu/west", 2), ("f", "n/1 5%", 1)], SCHEMA), "upsert")
    seen = _by_id(assert_readers_agree(hudi, table))
    assert seen["a"]["v"] == 2 and seen["a"]["_hoodie_partition_path"] == "region=eu%2Fwest"
    assert seen["f"]["_hoodie_partition_path"] == "region=n%2F1 5%25" and seen["f"]["region"] == "n/1 5%"
    assert (location / "region=n%2F1 5%25").is_dir()

    # bucket bootstrap and clustering rewrite the encoded partitions in place
    doc["spec"]["index"] = {"type": "BUCKET", "numBuckets": 2}
    doc["spec"]["clustering"].update(strategy="SORT", sortColumns=["v"], everyNCommits=1)
    save_spec(doc, spec_file)
    kinds = apply_until_done(capsys, spec_file, tmp_path)
    assert {"bucket_bootstrap", "clustering"} <= set(kinds), kinds
    table = Table(TableSpec.model_validate(doc), str(location), hudi)
    before = _by_id(assert_readers_agree(hudi, table))
    assert {i: r["_hoodie_partition_path"] for i, r in before.items() if i in HUDI_PATHS} == HUDI_PATHS

    # a Hudi job with the options hudi-options prints upserts into encoded partitions, old and new
    code, out, err = cli(capsys, "hudi-options", spec_file, "--warehouse", str(tmp_path), "--format", "json")
    assert code == 0, err
    options = json.loads(out)
    assert options["hoodie.datasource.write.partitionpath.urlencode"] == "true"
    hudi_write(hudi.createDataFrame([("b", "us east", 3), ("g", "x%2Fy", 1)], SCHEMA), location, options)
    after = _by_id(assert_readers_agree(hudi, table))
    assert after["b"]["v"] == 3 and after["g"]["_hoodie_partition_path"] == "region=x%252Fy"
    assert after["g"]["region"] == "x%2Fy" and len(after) == len(before) + 1
    # only the spec's clustering is due after Hudi's commit; it keeps every row where it was
    assert apply_until_done(capsys, spec_file, tmp_path) == ["clustering"]
    unfiled = lambda rows: {i: {k: v for k, v in r.items() if k != "_hoodie_file_name"} for i, r in rows.items()}
    assert unfiled(_by_id(assert_readers_agree(hudi, table))) == unfiled(after)


def test_url_encoded_table_tablespec_created_takes_hudi_writes(hudi, tmp_path):
    text = {"apiVersion": "tablespec/v1", "kind": "HudiTable", "metadata": {"name": "paths"}, "spec": {
        "location": "paths",
        "columns": [{"name": "id", "type": "string", "nullable": False}, {"name": "region", "type": "string"},
                    {"name": "v", "type": "int"}],
        "recordKey": {"fields": ["id"]}, "orderingField": "v",
        "partitioning": {"fields": ["region"], "hiveStyle": False, "urlEncode": True}}}
    from tablespec.actions.metadata import create_table
    spec = TableSpec.model_validate(text)
    location = str(tmp_path / "paths")
    create_table(HudiTable.open(location), spec)
    assert read_table_config(LocalStorage(), location).url_encode_partitioning
    table = Table(spec, location, hudi)
    table.write(hudi.createDataFrame(ROWS, SCHEMA), "upsert")
    seen = _by_id(assert_readers_agree(hudi, table))
    assert {i: r["_hoodie_partition_path"] for i, r in seen.items()} == {
        i: p.removeprefix("region=") for i, p in HUDI_PATHS.items()}
    hudi_write(hudi.createDataFrame([("a", "eu/west", 5), ("z", "a b/c", 1)], SCHEMA), location,
               hudi_write_options(spec, HudiTable.open(location)))
    rows = _by_id(assert_readers_agree(hudi, table))
    assert rows["a"]["v"] == 5 and rows["z"]["_hoodie_partition_path"] == "a b%2Fc" and len(rows) == 6


def test_escaping_matches_hudis_partition_path_encoding(hudi):
    """Every ASCII character and a few beyond, escaped by Apache Hudi's own PartitionPathEncodeUtils."""
    import pyarrow as pa

    from tablespec.arrow.keys import escape_path_name
    from tablespec.hudi.formats.partition import escape_partition_value, unescape_partition_value
    encode = hudi._jvm.org.apache.hudi.common.util.PartitionPathEncodeUtils
    values = [chr(c) for c in range(1, 128)] + ["é/ü", "a b%2F", "100%"]
    theirs = [encode.escapePathName(v) for v in values]
    assert [escape_partition_value(v) for v in values] == theirs
    assert escape_path_name(pa.array(values)).to_pylist() == theirs
    assert [unescape_partition_value(t) for t in theirs] == [encode.unescapePathName(t) for t in theirs] == values

"""Timestamp partitioning beside Apache Hudi: a table Hudi partitioned by event time is imported,
planned clean, upserted and bucketed by tablespec; a table tablespec created takes Hudi's writes."""
from __future__ import annotations

import json

from helpers import hudi_rs_rows, tablespec_rows
from interop_support import hudi_rows, hudi_write
from tablespec.cli import main
from tablespec.hudi import keygen
from tablespec.hudi_options import hudi_write_options
from tablespec.importer import spec_document
from tablespec.spec.model import TableSpec
from tablespec.state import observe
from tablespec.table import Table

SCHEMA = "id string, region string, ms long, ds string, v int"
T0 = 1_700_000_000_123
DAY = 86_400_000
ROWS = [("a", "eu", T0, "2024-03-05 10:11:12", 1), ("b", "us", T0 + DAY, "2024-03-06 23:59:59", 1),
        ("c", "eu", None, None, 1)]


def assert_readers_agree(spark, table) -> list[tuple]:
    """tablespec, hudi-rs and Apache Hudi read the same rows. Apache Hudi 0.15's Spark reader shows a
    time-formatted partition column as its partition path string (`2023/11/14`, not the stored long),
    so that one column is left out of the comparison with it."""
    ours = tablespec_rows(table)
    assert hudi_rs_rows(table.location) == ours, "hudi-rs disagrees with tablespec"
    field = table.spec.spec.partitioning.timestamp.field
    drop = lambda rows: sorted((tuple(kv for kv in r if kv[0] != field) for r in rows), key=repr)
    assert drop(hudi_rows(spark, table.location)) == drop(ours), "Apache Hudi disagrees with tablespec"
    return ours


def _cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _hudi_table(spark, location, **options):
    opts = {"hoodie.table.name": location.name, "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "v", "hoodie.datasource.write.operation": "upsert",
            **options}
    hudi_write(spark.createDataFrame(ROWS, SCHEMA), location, opts)
    return opts


def _import_plans_clean(capsys, location, warehouse) -> tuple[dict, str]:
    code, out, err = _cli(capsys, "import", str(location), "--warehouse", str(warehouse))
    assert code == 0, err
    spec_file = warehouse / f"{location.name}.yaml"
    spec_file.write_text(out)
    code, out, err = _cli(capsys, "plan", str(spec_file), "--warehouse", str(warehouse), "--detailed-exitcode")
    assert code == 0 and out.startswith("No changes."), out + err
    return spec_document(observe(str(location)), str(warehouse)), str(spec_file)


def test_hudi_epoch_millis_table_imports_takes_upserts_and_a_bucket_bootstrap(hudi, tmp_path, capsys):
    location = tmp_path / "clicks"
    opts = _hudi_table(hudi, location, **{
        "hoodie.datasource.write.keygenerator.class": keygen.TIMESTAMP_BASED,
        "hoodie.datasource.write.partitionpath.field": "ms", "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
        "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd", "hoodie.keygen.timebased.timezone": "UTC",
        "hoodie.metadata.enable": "false"})
    props = observe(str(location)).config.to_properties()
    assert keygen.TYPE_KEY not in props  # Hudi 0.15 does not record it: import finds it from the files
    doc, spec_file = _import_plans_clean(capsys, location, tmp_path)
    assert doc["spec"]["partitioning"] == {
        "fields": ["ms"], "hiveStyle": False,
        "timestamp": {"field": "ms", "input": "epochMillis", "outputFormat": "yyyy/MM/dd", "timeZone": "UTC"}}
    table = Table(TableSpec.model_validate(doc), str(location), hudi)
    more = [("d", "us", T0 + 2 * DAY, "x", 1), ("a", "eu", T0, "y", 2)]
    table.write(hudi.createDataFrame(more, SCHEMA), "upsert")
    seen = assert_readers_agree(hudi, table)
    assert {dict(r)["_hoodie_partition_path"] for r in seen} == {"2023/11/14", "2023/11/15", "2023/11/16", "1970/01/01"}
    # Hudi keeps writing with its own options into the same partitions
    hudi_write(hudi.createDataFrame([("e", "eu", T0, "z", 1)], SCHEMA), location, opts)
    doc["spec"]["index"] = {"type": "BUCKET", "numBuckets": 2}
    with open(spec_file, "w") as f:
        json.dump(doc, f)
    code, out, err = _cli(capsys, "apply", spec_file, "--warehouse", str(tmp_path), "--auto-approve")
    assert code == 0 and "bucket_bootstrap" in out, out + err
    code, out, err = _cli(capsys, "plan", spec_file, "--warehouse", str(tmp_path), "--detailed-exitcode")
    assert code == 0, out + err
    rows = assert_readers_agree(hudi, Table(TableSpec.model_validate(doc), str(location), hudi))
    assert len(rows) == 5


def test_hudi_date_string_table_imports_clean(hudi, tmp_path, capsys):
    location = tmp_path / "logs"
    _hudi_table(hudi, location, **{
        "hoodie.datasource.write.keygenerator.class": keygen.TIMESTAMP_BASED,
        "hoodie.datasource.write.partitionpath.field": "ds", "hoodie.keygen.timebased.timestamp.type": "DATE_STRING",
        "hoodie.keygen.timebased.input.dateformat": "yyyy-MM-dd HH:mm:ss",
        "hoodie.keygen.timebased.output.dateformat": "yyyy-MM-dd-HH", "hoodie.keygen.timebased.timezone": "UTC",
        "hoodie.metadata.enable": "false"})
    doc, _ = _import_plans_clean(capsys, location, tmp_path)
    assert doc["spec"]["partitioning"]["timestamp"]["input"] == "dateString"
    table = Table(TableSpec.model_validate(doc), str(location), hudi)
    table.write(hudi.createDataFrame([("d", "us", 0, "2024-03-07 01:00:00", 1)], SCHEMA), "upsert")
    assert "2024-03-07-01" in {dict(r)["_hoodie_partition_path"] for r in assert_readers_agree(hudi, table)}


def test_custom_generator_table_without_recorded_types_is_refused_by_name(hudi, tmp_path, capsys):
    location = tmp_path / "mixed"
    _hudi_table(hudi, location, **{
        "hoodie.datasource.write.keygenerator.class": keygen.CUSTOM,
        "hoodie.datasource.write.partitionpath.field": "region:SIMPLE,ms:TIMESTAMP",
        "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
        "hoodie.keygen.timebased.output.dateformat": "yyyyMMdd", "hoodie.keygen.timebased.timezone": "UTC",
        "hoodie.metadata.enable": "false"})
    code, out, err = _cli(capsys, "import", str(location), "--warehouse", str(tmp_path))
    assert code != 0 and out == ""
    assert keygen.CUSTOM_FIELDS_KEY in err and "region:SIMPLE|TIMESTAMP" in err and "Traceback" not in err


def test_hudi_writes_into_a_custom_table_tablespec_created(hudi, tmp_path):
    text = {"apiVersion": "tablespec/v1", "kind": "HudiTable", "metadata": {"name": "visits"}, "spec": {
        "location": "visits",
        "columns": [{"name": "id", "type": "string", "nullable": False}, {"name": "region", "type": "string"},
                    {"name": "ms", "type": "long"}, {"name": "ds", "type": "string"}, {"name": "v", "type": "int"}],
        "recordKey": {"fields": ["id"]}, "orderingField": "v",
        "partitioning": {"fields": ["region", "ms"], "timestamp": {
            "field": "ms", "input": "epochMillis", "outputFormat": "yyyyMMdd", "timeZone": "Asia/Kolkata"}}}}
    from tablespec.actions.metadata import create_table
    spec = TableSpec.model_validate(text)
    location = str(tmp_path / "visits")
    create_table(location, spec)
    table = Table(spec, location, hudi)
    table.write(hudi.createDataFrame(ROWS, SCHEMA), "upsert")
    options = hudi_write_options(spec, location)
    assert options["hoodie.datasource.write.partitionpath.field"] == "region:SIMPLE,ms:TIMESTAMP"
    hudi_write(hudi.createDataFrame([("b", "us", T0 + DAY, "u", 5), ("z", "eu", T0 + 3 * DAY, "n", 1)], SCHEMA),
               location, options)
    rows = {dict(r)["id"]: dict(r) for r in assert_readers_agree(hudi, table)}
    assert rows["b"]["v"] == 5 and rows["b"]["_hoodie_partition_path"] == "region=us/ms=20231116"
    assert rows["z"]["_hoodie_partition_path"] == "region=eu/ms=20231118"
    assert rows["c"]["_hoodie_partition_path"] == "region=eu/ms=19700101"
    assert len(hudi_rows(hudi, location)) == 4

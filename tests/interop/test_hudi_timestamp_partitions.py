"""Timestamp partitioning beside Apache Hudi: a table Hudi partitioned by event time is imported,
planned clean, upserted and bucketed by tablespec; a table tablespec created takes Hudi's writes."""
from __future__ import annotations

import json

import pytest
from helpers import hudi_rs_rows, tablespec_rows
from interop_support import cli, hudi_rows, hudi_write

from tablespec.engine.writer import WriteRefused
from tablespec.hudi import keygen
from tablespec.hudi.table import HudiTable, Location
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



def _hudi_table(spark, location, **options):
    opts = {"hoodie.table.name": location.name, "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "v", "hoodie.datasource.write.operation": "upsert",
            **options}
    hudi_write(spark.createDataFrame(ROWS, SCHEMA), location, opts)
    return opts


def _import_plans_clean(capsys, location, warehouse) -> tuple[dict, str]:
    code, out, err = cli(capsys, "import", str(location), "--warehouse", str(warehouse))
    assert code == 0, err
    spec_file = warehouse / f"{location.name}.yaml"
    spec_file.write_text(out)
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(warehouse), "--format", "json")
    kinds = [a["kind"] for t in json.loads(out)["tables"] for a in t["actions"]] if code == 0 else None
    # nothing to change, but the metadata table where Hudi wrote without one (hoodie.metadata.enable=false)
    assert kinds == ([] if (location / ".hoodie" / "metadata").is_dir() else ["build_metadata_table"]), out + err
    return spec_document(observe(HudiTable.open(str(location))), Location.parse(str(warehouse))), str(spec_file)


def test_hudi_epoch_millis_table_imports_takes_upserts_and_a_bucket_bootstrap(hudi, tmp_path, capsys):
    location = tmp_path / "clicks"
    opts = _hudi_table(hudi, location, **{
        "hoodie.datasource.write.keygenerator.class": keygen.TIMESTAMP_BASED,
        "hoodie.datasource.write.partitionpath.field": "ms", "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
        "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd", "hoodie.keygen.timebased.timezone": "UTC",
        "hoodie.metadata.enable": "false"})
    props = observe(HudiTable.open(str(location))).config.to_properties()
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
    code, out, err = cli(capsys, "apply", spec_file, "--warehouse", str(tmp_path), "--auto-approve")
    assert code == 0 and "bucket_bootstrap" in out, out + err
    code, out, err = cli(capsys, "plan", spec_file, "--warehouse", str(tmp_path), "--detailed-exitcode")
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


def _files(location) -> dict:
    return {p: p.read_bytes() for p in location.rglob("*") if p.is_file()}


def _hudi_upsert_with_hudi_options(spark, doc: dict, location, rows) -> None:
    """A user's Hudi job configured by `hudi-options` for the spec `doc`: upserts `rows`."""
    options = hudi_write_options(TableSpec.model_validate(doc), HudiTable.open(str(location)))
    hudi_write(spark.createDataFrame(rows, SCHEMA), location, {**options, "hoodie.datasource.write.operation": "upsert"})


def test_hudi_timestamp_table_without_a_time_zone_is_imported_as_utc(hudi, tmp_path, capsys):
    """Hudi's defaults plus the timestamp settings it requires (type, output format): hoodie.properties
    records no time zone, and UTC (Hudi's documented default) reproduces the stored paths."""
    location = tmp_path / "events"
    _hudi_table(hudi, location, **{
        "hoodie.datasource.write.keygenerator.class": keygen.TIMESTAMP_BASED,
        "hoodie.datasource.write.partitionpath.field": "ms", "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
        "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd/HH"})
    assert keygen.TIMEZONE_KEY not in observe(HudiTable.open(str(location))).config.to_properties()
    doc, spec_file = _import_plans_clean(capsys, location, tmp_path)
    assert doc["spec"]["partitioning"]["timestamp"] == {
        "field": "ms", "input": "epochMillis", "outputFormat": "yyyy/MM/dd/HH", "timeZone": "UTC"}
    table = Table(TableSpec.model_validate(doc), str(location), hudi)
    table.write(hudi.createDataFrame([("d", "us", T0 + 2 * DAY, "x", 1), ("a", "eu", T0, "y", 2)], SCHEMA), "upsert")
    _hudi_upsert_with_hudi_options(hudi, doc, location, [("b", "us", T0 + DAY, "u", 5), ("e", "eu", T0 + 3600_000, "z", 1)])
    rows = {dict(r)["id"]: dict(r) for r in assert_readers_agree(hudi, table)}
    assert {k: (r["v"], r["_hoodie_partition_path"]) for k, r in rows.items()} == {
        "a": (2, "2023/11/14/22"), "b": (5, "2023/11/15/22"), "c": (1, "1970/01/01/00"),
        "d": (1, "2023/11/16/22"), "e": (1, "2023/11/14/23")}
    code, out, err = cli(capsys, "plan", spec_file, "--warehouse", str(tmp_path), "--detailed-exitcode")
    assert code == 0, out + err


def test_hudi_custom_generator_table_is_imported_with_what_hudi_does_not_record(hudi, tmp_path, capsys):
    """CustomKeyGenerator: Hudi 0.15 records none of its timestamp settings. The field types and the
    timestamp type come from the stored rows; the output format and (here) the zone only the writers
    know: import asks for them at once, in spec terms, checks the answers against the rows, and a spec
    the rows contradict is refused by plan and Table.write before anything is touched."""
    location = tmp_path / "visits"
    _hudi_table(hudi, location, **{
        "hoodie.datasource.write.keygenerator.class": keygen.CUSTOM,
        "hoodie.datasource.write.partitionpath.field": "region:SIMPLE,ms:TIMESTAMP",
        "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
        "hoodie.keygen.timebased.output.dateformat": "yyyyMMddHH", "hoodie.keygen.timebased.timezone": "Asia/Kolkata"})
    props = observe(HudiTable.open(str(location))).config.to_properties()
    assert not any(k.startswith(keygen.PREFIX) or k == keygen.CUSTOM_FIELDS_KEY for k in props)
    crc = location / ".hoodie" / ".hoodie.properties.crc"   # Hadoop's checksum of the file Hudi wrote
    assert crc.is_file()
    before = _files(location)
    args = ("import", str(location), "--warehouse", str(tmp_path))

    code, out, err = cli(capsys, *args)
    assert code == 1 and out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "--timestamp outputFormat=" in err and "timeZone" in err
    code, out, err = cli(capsys, *args, "--timestamp", "outputFormat=yyyyMMddHH")
    assert code == 1 and "UTC" in err and "--timestamp timeZone=" in err and len(err.strip().splitlines()) == 1
    assert _files(location) == before

    code, out, err = cli(capsys, *args, "--timestamp", "outputFormat=yyyyMMddHH", "--timestamp", "timeZone=Asia/Kolkata")
    assert code == 0, err
    spec_file = tmp_path / "visits.yaml"
    spec_file.write_text(out)
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path), "--detailed-exitcode")
    assert code == 0 and out.startswith("No changes."), out + err
    doc = spec_document(observe(HudiTable.open(str(location))), Location.parse(str(tmp_path)),
                        {"outputFormat": "yyyyMMddHH", "timeZone": "Asia/Kolkata"})
    assert doc["spec"]["partitioning"] == {"fields": ["region", "ms"], "hiveStyle": False, "timestamp": {
        "field": "ms", "input": "epochMillis", "outputFormat": "yyyyMMddHH", "timeZone": "Asia/Kolkata"}}

    # a spec the stored rows contradict (the zone Hudi documents, not the writers'): refused, untouched
    wrong = json.loads(json.dumps(doc))
    wrong["spec"]["partitioning"]["timestamp"]["timeZone"] = "UTC"
    wrong_file = tmp_path / "wrong.yaml"
    wrong_file.write_text(json.dumps(wrong))
    code, out, err = cli(capsys, "plan", str(wrong_file), "--warehouse", str(tmp_path))
    assert code == 1 and "spec.partitioning.timestamp" in err and "not partitioned this way" in err, out + err
    with pytest.raises(WriteRefused, match="not partitioned this way"):
        Table(TableSpec.model_validate(wrong), str(location), hudi).write(
            hudi.createDataFrame([("z", "eu", T0, "n", 1)], SCHEMA), "upsert")
    assert _files(location) == before

    table = Table(TableSpec.model_validate(doc), str(location), hudi)
    assert_readers_agree(hudi, table)
    # hudi-options describes the table with what import was told (hoodie.properties records none of it)
    code, out, err = cli(capsys, "hudi-options", str(spec_file), "--warehouse", str(tmp_path), "--format", "json")
    assert code == 0 and json.loads(out)[keygen.TIMEZONE_KEY] == "Asia/Kolkata", out + err
    table.write(hudi.createDataFrame([("d", "us", T0 + 2 * DAY, "x", 1)], SCHEMA), "upsert")
    doc["spec"]["index"] = {"type": "BUCKET", "numBuckets": 2}   # rewrites hoodie.properties (and drops its .crc)
    spec_file.write_text(json.dumps(doc))
    code, out, err = cli(capsys, "apply", str(spec_file), "--warehouse", str(tmp_path), "--auto-approve")
    assert code == 0 and "bucket_bootstrap" in out, out + err
    recorded = observe(HudiTable.open(str(location))).config.to_properties()
    assert not crc.exists()   # tablespec's rewrites of hoodie.properties drop it: Hudi reads the file unchecked
    assert recorded[keygen.TIMEZONE_KEY] == "Asia/Kolkata" and recorded[keygen.CUSTOM_FIELDS_KEY] == "region:SIMPLE,ms:TIMESTAMP"
    _hudi_upsert_with_hudi_options(hudi, doc, location, [("b", "us", T0 + DAY, "u", 5), ("e", "eu", T0, "z", 1)])
    table = Table(TableSpec.model_validate(doc), str(location), hudi)
    rows = {dict(r)["id"]: dict(r) for r in assert_readers_agree(hudi, table)}
    assert {k: (r["v"], r["_hoodie_partition_path"]) for k, r in rows.items()} == {
        "a": (1, "eu/2023111503"), "b": (5, "us/2023111603"), "c": (1, "eu/1970010105"),
        "d": (1, "us/2023111703"), "e": (1, "eu/2023111503")}
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path), "--detailed-exitcode")
    assert code == 0, out + err


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
    create_table(HudiTable.open(location), spec)
    table = Table(spec, location, hudi)
    table.write(hudi.createDataFrame(ROWS, SCHEMA), "upsert")
    options = hudi_write_options(spec, HudiTable.open(location))
    assert options["hoodie.datasource.write.partitionpath.field"] == "region:SIMPLE,ms:TIMESTAMP"
    hudi_write(hudi.createDataFrame([("b", "us", T0 + DAY, "u", 5), ("z", "eu", T0 + 3 * DAY, "n", 1)], SCHEMA),
               location, options)
    rows = {dict(r)["id"]: dict(r) for r in assert_readers_agree(hudi, table)}
    assert rows["b"]["v"] == 5 and rows["b"]["_hoodie_partition_path"] == "region=us/ms=20231116"
    assert rows["z"]["_hoodie_partition_path"] == "region=eu/ms=20231118"
    assert rows["c"]["_hoodie_partition_path"] == "region=eu/ms=19700101"
    assert len(hudi_rows(hudi, location)) == 4

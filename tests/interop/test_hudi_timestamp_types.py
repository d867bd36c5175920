"""Every timestamp type and Joda pattern Hudi's timestamp key generator takes, beside Apache Hudi:
Hudi 0.15 (in the session) and 1.2 (a subprocess) write one tiny table per type; tablespec imports
it, plans it clean, computes for every stored value the partition path Hudi put it in, reads what
hudi-rs reads, and writes the rows again into the partitions they are in."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest
from helpers import hudi_rs_rows, hudi_rs_table, tablespec_rows
from hudi_process import read_step, sql_step, write_step
from interop_support import cli, hudi_write

from tablespec.arrow.keys import partition_paths
from tablespec.hudi import keygen
from tablespec.hudi.table import HudiTable, Location
from tablespec.importer import spec_document
from tablespec.spec.model import TableSpec
from tablespec.state import observe
from tablespec.table import Table

TB = "hoodie.keygen.timebased."
# name: (column type, values, Hudi's timebased settings, what import must be told: Hudi 0.15 records neither
# the type nor, for SCALAR, the unit)
CASES = {
    "unix_seconds": ("long", [1700000000, -1, None],
                     {"timestamp.type": "UNIX_TIMESTAMP", "output.dateformat": "yyyy/MM/dd/HH", "timezone": "Asia/Kolkata"},
                     {}),
    "scalar_minutes": ("long", [28333333, 0, None],
                       {"timestamp.type": "SCALAR", "timestamp.scalar.time.unit": "MINUTES",
                        "output.dateformat": "yyyyMMddHHmm"},
                       {"input": "scalar", "unit": "MINUTES"}),
    "millis_double": ("double", [1700000000123.9, -1.5, None],
                      {"timestamp.type": "EPOCHMILLISECONDS", "output.dateformat": "yyyy-MM-dd'T'HH.mm.ss.SSS"}, {}),
    # Hudi's own test tables' pattern; no zone set: each folder in the offset its string names
    "iso_offsets": ("string", ["2024-03-01T23:30:00.000+0530", "2024-03-01T23:30:00.000Z",
                               "2024-03-02T01:15:00.5-0800", None],
                    {"timestamp.type": "DATE_STRING", "input.dateformat": "yyyy-MM-dd'T'HH:mm:ss.SSSZ",
                     "output.dateformat": "yyyy/MM/dd/HH"}, {}),
    # several input patterns (a regex between them), input and output zones, text fields
    "mixed_patterns": ("string", ["2024-03-10T01:30:00-05:00", "20240310", "10 Mar 2024 03:30 Europe/Paris", None],
                       {"timestamp.type": "MIXED", "input.dateformat": "yyyy-MM-dd'T'HH:mm:ssZZ; yyyyMMdd ;dd MMM yyyy HH:mm ZZZ",
                        "input.dateformat.list.delimiter.regex": ";", "input.timezone": "America/New_York",
                        "output.timezone": "Asia/Tokyo", "output.dateformat": "yyyy-MM-dd-HH_EEE"}, {}),
    # the default comma between patterns; a wall-clock time Berlin has twice (the clocks went back)
    "comma_patterns": ("string", ["2024-10-27 02:30:00.2", "2024-10-28", "2024-03-05 07:08:09.1"],
                       {"timestamp.type": "DATE_STRING", "input.dateformat": "yyyy-MM-dd HH:mm:ss.S,yyyy-MM-dd",
                        "timezone": "Europe/Berlin", "output.dateformat": "yyyy/MM/dd/HH"}, {}),
    # week-based fields, a day of week that moves the date, era, 1-24 and 0-11 hours
    "week_fields": ("string", ["2024-W10-2 07", "2024-W10", "Fri 2024-03-05 13", None],
                    {"timestamp.type": "DATE_STRING", "input.dateformat": "xxxx-'W'ww-e HH,xxxx-'W'ww,EEE yyyy-MM-dd kk",
                     "timezone": "UTC", "output.dateformat": "xxxx-'W'ww-e_GG_YYYY_kk_KK_D"}, {}),
}


def _import_plans_clean(capsys, location, warehouse, given: dict[str, str], allowed=frozenset()) -> dict:
    """`import` (told `given`), then `plan` of its spec: nothing to change but `allowed` actions;
    returns the imported spec document."""
    told = [a for k, v in given.items() for a in ("--timestamp", f"{k}={v}")]
    code, out, err = cli(capsys, "import", str(location), "--warehouse", str(warehouse), *told)
    assert code == 0, err
    spec_file = warehouse / f"{location.name}.yaml"
    spec_file.write_text(out)
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(warehouse), "--format", "json")
    assert code == 0, err
    kinds = {a["kind"] for t in json.loads(out)["tables"] for a in t["actions"]}
    assert kinds <= set(allowed), out
    return spec_document(observe(HudiTable.open(str(location))), Location.parse(str(warehouse)), given)


def _stored(location) -> pa.Table:
    """Every stored row as hudi-rs reads it."""
    return pa.Table.from_batches(hudi_rs_table(str(location)).read())


def _assert_paths_are_hudis(doc: dict, location) -> pa.Table:
    """The partition path tablespec computes for each stored value is the one Hudi stored it under."""
    spec = TableSpec.model_validate(doc)
    parts = spec.spec.partitioning
    stored = _stored(location)
    ours = partition_paths(stored, list(parts.fields), parts.hive_style, timestamp=spec.timestamp_partitioning)
    field = parts.timestamp.field
    assert list(zip(stored.column(field).to_pylist(), ours.to_pylist(), strict=True)) == \
        list(zip(stored.column(field).to_pylist(), stored.column("_hoodie_partition_path").to_pylist(), strict=True))
    return stored


@pytest.mark.parametrize("case", sorted(CASES))
def test_hudi_015_timestamp_type(hudi, tmp_path, capsys, case):
    column, values, settings, given = CASES[case]
    location = tmp_path / case
    hudi_write(hudi.createDataFrame([(f"k{i}", 1, v) for i, v in enumerate(values)], f"id string, v int, t {column}"),
               location, {"hoodie.table.name": case, "hoodie.datasource.write.recordkey.field": "id",
                          "hoodie.datasource.write.precombine.field": "v", "hoodie.datasource.write.operation": "upsert",
                          "hoodie.datasource.write.keygenerator.class": keygen.TIMESTAMP_BASED,
                          "hoodie.datasource.write.partitionpath.field": "t", "hoodie.metadata.enable": "false",
                          **{TB + k: v for k, v in settings.items()}})
    doc = _import_plans_clean(capsys, location, tmp_path, given, {"build_metadata_table"})
    _assert_paths_are_hudis(doc, location)
    table = Table(TableSpec.model_validate(doc), str(location), hudi)
    before = {dict(r)["id"]: dict(r)["_hoodie_partition_path"] for r in tablespec_rows(table)}
    assert hudi_rs_rows(str(location)) == tablespec_rows(table)
    # tablespec writes the rows again: each lands where Hudi put it (an upsert, not a second copy)
    table.write(hudi.createDataFrame([(f"k{i}", 2, v) for i, v in enumerate(values)], f"id string, v int, t {column}"),
                "upsert")
    after = {dict(r)["id"]: (dict(r)["v"], dict(r)["_hoodie_partition_path"]) for r in tablespec_rows(table)}
    assert after == {k: (2, p) for k, p in before.items()}
    assert hudi_rs_rows(str(location)) == tablespec_rows(table)


# --- Apache Hudi 1.2 (table version 9) --------------------------------------------------------

SQL_MS = [(1, "a", 1700000000123), (2, "b", 1700086400123), (3, "c", 1700200000000)]


def test_hudi_1x_timestamp_types(hudi, hudi1, tmp_path, capsys):
    """Version 9: EPOCHMICROSECONDS (Hudi 1.x's, recorded as such), and the table of the issue: Spark SQL made
    it EPOCHMILLISECONDS with yyyy/MM/dd/HH and no zone, and its UPDATE wrote the field back as a string
    of digits (Hudi 1.x's SQL layer reads such a field as a string): Hudi's own writers now fail on it
    (no input pattern for a string); tablespec imports it, plans it clean, reads what hudi-rs and Hudi
    read, and writes a row where Hudi put the same number."""
    micros, millis = tmp_path / "micros", tmp_path / "sql_millis"
    options = {"hoodie.table.name": "micros", "hoodie.datasource.write.recordkey.field": "id",
               "hoodie.datasource.write.precombine.field": "v", "hoodie.datasource.write.operation": "upsert",
               "hoodie.datasource.write.keygenerator.class": keygen.TIMESTAMP_BASED,
               "hoodie.datasource.write.partitionpath.field": "t", TB + "timestamp.type": "EPOCHMICROSECONDS",
               TB + "output.dateformat": "yyyy/MM/dd/HH", TB + "output.timezone": "America/Los_Angeles"}
    results = hudi1.process.run([
        write_step(micros, options, "id string, v int, t long", [("a", 1, 1700000000123456), ("b", 1, -1), ("c", 1, None)]),
        sql_step(f"CREATE TABLE sql_millis (id int, name string, ms bigint) USING hudi LOCATION '{millis}' "
                 "TBLPROPERTIES (type = 'cow', primaryKey = 'id', preCombineField = 'id', "
                 f"'hoodie.table.keygenerator.class' = '{keygen.TIMESTAMP_BASED}', "
                 f"'{TB}timestamp.type' = 'EPOCHMILLISECONDS', '{TB}output.dateformat' = 'yyyy/MM/dd/HH') "
                 "PARTITIONED BY (ms)"),
        sql_step("INSERT INTO sql_millis VALUES " + ", ".join(f"({i}, '{n}', {ms})" for i, n, ms in SQL_MS)),
        sql_step("UPDATE sql_millis SET name = 'z' WHERE id = 1"),
        read_step(millis),
    ])
    props = observe(HudiTable.open(str(micros))).config.to_properties()
    assert props[keygen.TYPE_KEY] == "EPOCHMICROSECONDS"
    doc = _import_plans_clean(capsys, micros, tmp_path, {}, {"drop_metadata_partitions"})
    assert doc["spec"]["partitioning"]["timestamp"] == {
        "field": "t", "input": "epochMicros", "outputFormat": "yyyy/MM/dd/HH", "outputTimeZone": "America/Los_Angeles"}
    _assert_paths_are_hudis(doc, micros)
    assert hudi_rs_rows(str(micros)) == tablespec_rows(Table(TableSpec.model_validate(doc), str(micros), hudi))

    assert {c.name: str(c.type) for c in observe(HudiTable.open(str(millis))).columns}["ms"] == "string"
    doc = _import_plans_clean(capsys, millis, tmp_path, {}, {"drop_metadata_partitions"})
    assert doc["spec"]["partitioning"]["timestamp"] == {
        "field": "ms", "input": "epochMillis", "outputFormat": "yyyy/MM/dd/HH", "timeZone": "UTC"}
    _assert_paths_are_hudis(doc, millis)
    table = Table(TableSpec.model_validate(doc), str(millis), hudi)
    ours = tablespec_rows(table)
    assert hudi_rs_rows(str(millis)) == ours
    hudi_read = {r["id"]: (r["name"], r["ms"], r["_hoodie_partition_path"]) for r in results[-1]}
    assert {dict(r)["id"]: (dict(r)["name"], dict(r)["ms"], dict(r)["_hoodie_partition_path"]) for r in ours} == \
        hudi_read
    table.write(hudi.createDataFrame([(4, "d", "1700200000000")], "id int, name string, ms string"), "upsert")
    paths = {dict(r)["id"]: dict(r)["_hoodie_partition_path"] for r in tablespec_rows(table)}
    assert paths[4] == hudi_read[3][2] == "ms=2023/11/17/05"
    assert hudi_rs_rows(str(millis)) == tablespec_rows(table)

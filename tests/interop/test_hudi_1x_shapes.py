"""The shapes of table Hudi 1.x users have, as Apache Hudi 1.0.2 (version 8) and 1.2.0 (version 9)
write them with their defaults (metadata table on): complex keys with Hive-style partitions,
non-partitioned, URL-encoded partition values, timestamp partitioning, auto-generated keys, and a
table made and filled by Spark SQL. Each imports, plans clean (on version 9 the metadata-table
partitions tablespec does not keep are dropped, with the reason) and reads the same through
tablespec, Hudi and hudi-rs. Virtual keys (no meta fields) are refused as on version 6, in one line,
the table untouched (test_hudi_virtual_keys.py)."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest
from helpers import hudi_rs_rows, rows, tablespec_rows
from hudi_process import Batch, read_step, sql_step
from interop_support import cli
from test_hudi_tables import _table

from tablespec.hudi.table import HudiTable, Location
from tablespec.importer import spec_document
from tablespec.state import observe

WIDE = "id string, n int, v int, region string, dt string, ts long"
FIRST = [("a", 1, 1, "eu", "2024-01-01", 1), ("b", 2, 2, "us", "2024-01-01", 1), ("c", 3, 3, "eu", "2024-01-02", 1)]
THEN = [("a", 1, 10, "eu", "2024-01-01", 2), ("d", 4, 4, "us", "2024-01-03", 2)]
KEYGEN = "org.apache.hudi.keygen."


def _shape(name: str, first: list = FIRST, then: list | None = THEN, **options: str) -> tuple[Batch, ...]:
    """A table written twice (an insert, then an upsert) with `options`."""
    base = {"hoodie.table.name": name, "hoodie.datasource.write.precombine.field": "ts", **options}
    batches = [Batch.of({**base, "hoodie.datasource.write.operation": "insert"}, WIDE, first)]
    if then is not None:
        batches.append(Batch.of({**base, "hoodie.datasource.write.operation": "upsert"}, WIDE, then))
    return tuple(batches)


SHAPES = {
    "complex_hive_style": _shape(
        "complex_hive_style", **{"hoodie.datasource.write.keygenerator.class": KEYGEN + "ComplexKeyGenerator",
                                 "hoodie.datasource.write.recordkey.field": "id,n",
                                 "hoodie.datasource.write.partitionpath.field": "region,dt",
                                 "hoodie.datasource.write.hive_style_partitioning": "true"}),
    "non_partitioned": _shape(
        "non_partitioned", **{"hoodie.datasource.write.keygenerator.class": KEYGEN + "NonpartitionedKeyGenerator",
                              "hoodie.datasource.write.recordkey.field": "id",
                              "hoodie.datasource.write.partitionpath.field": ""}),
    "url_encoded": _shape(
        "url_encoded", first=[("a", 1, 1, "eu", "2024/01 01", 1), ("b", 2, 2, "us", "a=b", 1)],
        then=[("a", 1, 10, "eu", "2024/01 01", 2)],
        **{"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "dt",
           "hoodie.datasource.write.partitionpath.urlencode": "true"}),
    "timestamp_partitions": _shape(
        "timestamp_partitions",
        first=[("a", 1, 1, "eu", "x", 1704067200000), ("b", 2, 2, "us", "x", 1704153600000)],
        then=[("a", 1, 10, "eu", "x", 1704067200001)],
        **{"hoodie.datasource.write.keygenerator.class": KEYGEN + "TimestampBasedKeyGenerator",
           "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "ts",
           "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
           "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd",
           "hoodie.keygen.timebased.timezone": "UTC"}),
    "auto_keys": _shape("auto_keys", then=None, **{"hoodie.datasource.write.partitionpath.field": "dt"}),
}
VIRTUAL_KEYS = _shape("virtual_keys", **{"hoodie.populate.meta.fields": "false",
                                         "hoodie.datasource.write.recordkey.field": "id",
                                         "hoodie.datasource.write.partitionpath.field": "dt"})


@pytest.fixture(scope="module", params=[9, 8])
def version_tables(request):
    """(version, its HudiTables) with every shape written (in one process per version)."""
    tables = request.getfixturevalue("hudi1" if request.param == 9 else "hudi10")
    tables.prepare(*SHAPES.values(), VIRTUAL_KEYS)
    return request.param, tables


def _plans_clean(tmp_path, location, capsys, version: int) -> dict:
    """`tablespec import` then `plan` of its spec: no change but, on version 9, dropping metadata-table
    partitions tablespec does not keep (named with the reason). Returns the imported spec document."""
    code, out, err = cli(capsys, "import", str(location), "--warehouse", str(tmp_path))
    assert code == 0, err
    spec_file = tmp_path / f"{location.name}.yaml"
    spec_file.write_text(out)
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path), "--format", "json")
    assert code == 0, err
    actions = [a for t in json.loads(out)["tables"] for a in t["actions"]]
    allowed = {"drop_metadata_partitions"} if version == 9 else set()
    assert {a["kind"] for a in actions} <= allowed, actions
    assert all(a["reasons"] for a in actions)
    return spec_document(observe(HudiTable.open(str(location))), Location.parse(str(tmp_path)))


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_shape_hudi_1x_wrote_imports_plans_and_reads(hudi, version_tables, shape, tmp_path, capsys):
    version, tables = version_tables
    location, hudi_read = tables.copy(SHAPES[shape], tmp_path / shape)
    assert HudiTable.open(str(location)).config.version == version
    doc = _plans_clean(tmp_path, location, capsys, version)
    ours = tablespec_rows(_table(hudi, doc, location))
    assert ours == hudi_rs_rows(str(location))
    if shape == "timestamp_partitions":   # Hudi 1.x's Spark reader gives the partition field as a string
        hudi_read = [{**r, "ts": int(r["ts"])} for r in hudi_read]
    assert ours == rows(pa.Table.from_pylist(hudi_read))
    assert len(ours) == (3 if shape == "auto_keys" else 4 if shape not in ("url_encoded", "timestamp_partitions")
                         else 2)


def test_a_table_spark_sql_made_and_filled(hudi, version_tables, tmp_path, capsys):
    """CREATE TABLE (primary key, ordering field, partitioned), INSERT, UPDATE and DELETE by Spark SQL:
    the table a Hudi SQL user has."""
    version, tables = version_tables
    location = tmp_path / "sql_orders"
    name = f"sql_orders_v{version}"
    ordering = "orderingFields" if version == 9 else "preCombineField"
    hudi_read = tables.process.run([
        sql_step(f"CREATE TABLE {name} (id string, v int, ts bigint, dt string) USING hudi "
                 f"PARTITIONED BY (dt) LOCATION '{location}' "
                 f"TBLPROPERTIES (type = 'cow', primaryKey = 'id', {ordering} = 'ts')"),
        sql_step(f"INSERT INTO {name} VALUES ('a', 1, 1, '2024-01-01'), ('b', 2, 1, '2024-01-01'), "
                 "('c', 3, 1, '2024-01-02')"),
        sql_step(f"UPDATE {name} SET v = 10, ts = 2 WHERE id = 'a'"),
        sql_step(f"DELETE FROM {name} WHERE id = 'b'"),
        read_step(location),
    ])[-1]
    doc = _plans_clean(tmp_path, location, capsys, version)
    assert doc["spec"]["recordKey"]["fields"] == ["id"] and doc["spec"]["orderingField"] == "ts"
    ours = tablespec_rows(_table(hudi, doc, location))
    assert ours == rows(pa.Table.from_pylist(hudi_read)) == hudi_rs_rows(str(location))
    assert {dict(r)["id"]: dict(r)["v"] for r in ours} == {"a": 10, "c": 3}


def test_virtual_keys_are_refused_untouched(version_tables, tmp_path, capsys):
    _, tables = version_tables
    location, _ = tables.copy(VIRTUAL_KEYS, tmp_path / "virtual_keys")
    before = sorted((str(p), p.stat().st_mtime_ns) for p in location.rglob("*"))
    code, out, err = cli(capsys, "import", str(location), "--warehouse", str(tmp_path))
    assert code == 1 and "Traceback" not in err and not out
    assert "hoodie.populate.meta.fields=false (virtual keys) is not supported" in err.strip().splitlines()[-1]
    assert sorted((str(p), p.stat().st_mtime_ns) for p in location.rglob("*")) == before

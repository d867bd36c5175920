"""Apache Hudi and tablespec share a RECORD_LEVEL table's index, Hudi's record index, judged by Apache
Hudi 0.15: tablespec upserts (a key moving partition included) and Hudi reads the same rows; a Hudi
job with `hudi-options` (RECORD_INDEX) upserts, moves and deletes through the index and keeps it;
tablespec then tags from the index Hudi maintained (keys moving partition back), and tablespec's
`lookup` and Hudi's own record-index lookup agree key by key after every step."""
from __future__ import annotations

from helpers import make_table
from interop_support import assert_readers_agree, hudi_write
from test_engine_record_index import SPEC as PEOPLE
from test_hudi_metadata_record_index import assert_index_is_the_table, hudi_lookup

from tablespec.hudi.table import HudiTable, Location
from tablespec.hudi_options import hudi_write_options
from tablespec.index import lookup
from tablespec.plan.builder import build_plan
from tablespec.spec.loader import load_spec_text
from tablespec.state import observe_specs

SPEC = PEOPLE.replace("numBuckets: 3", "numBuckets: 2")
DDL = "id string, city string, n int"


def hudi_options(spec, location: str, operation: str) -> dict[str, str]:
    """What `tablespec hudi-options` prints for the table, plus the operation and small shuffles."""
    return {**hudi_write_options(spec, HudiTable.open(location)), "hoodie.datasource.write.operation": operation,
            "hoodie.upsert.shuffle.parallelism": "2", "hoodie.delete.shuffle.parallelism": "2"}


def plan(tmp_path):
    loaded = load_spec_text(SPEC, "people.yaml")
    return build_plan(loaded.specs, observe_specs(loaded.specs, Location.parse(str(tmp_path))), Location.parse(str(tmp_path)))


def assert_lookups_agree(spark, base: str, keys: list[str]) -> dict[str, str]:
    """tablespec's `lookup` and Hudi's readRecordIndex give every key the same place; key -> partition."""
    ours = {r["key"]: (r["partition_path"], r["file_id"]) for r in lookup(HudiTable.open(base), keys).to_pylist()}
    assert ours == {k: (v.partition, v.file_id) for k, v in hudi_lookup(spark, base, keys).items()}
    return {k: p for k, (p, _) in ours.items()}


def test_tablespec_and_hudi_tag_through_one_record_index(hudi, tmp_path):
    spark = hudi
    table = make_table(spark, tmp_path, SPEC)
    base = table.location
    assert hudi_options(table.spec, base, "upsert")["hoodie.index.type"] == "RECORD_INDEX"
    table.write(spark.createDataFrame([("a", "ams", 1), ("b", "ams", 1), ("c", "ber", 1), ("d", "ber", 1)], DDL), "insert")
    # tablespec: d moves ber -> ams (global: inserted there, deleted from ber), a updated in place
    r = table.write(spark.createDataFrame([("d", "ams", 2), ("a", "ams", 2)], DDL), "upsert")
    assert (r.inserted, r.updated, r.deleted) == (1, 1, 1)
    assert_readers_agree(spark, table)
    assert_index_is_the_table(spark, base)
    # Apache Hudi with hudi-options: update a in place, move c ber -> ams, insert e; then delete b
    hudi_write(spark.createDataFrame([("a", "ams", 3), ("c", "ams", 3), ("e", "ber", 3)], DDL), base,
               hudi_options(table.spec, base, "upsert"))
    hudi_write(spark.createDataFrame([("b", "ams", 4)], DDL), base, hudi_options(table.spec, base, "delete"))
    assert not plan(tmp_path).has_changes  # Hudi kept the index: nothing to catch up
    assert_index_is_the_table(spark, base)
    assert assert_lookups_agree(spark, base, list("abcdez")) == {
        "a": "city=ams", "c": "city=ams", "d": "city=ams", "e": "city=ber"}
    # tablespec tags from the index Hudi maintained: c moves back to ber, e to ams, a is updated where it lives
    r = table.write(spark.createDataFrame([("c", "ber", 5), ("e", "ams", 5), ("a", "ams", 5)], DDL), "upsert")
    assert (r.inserted, r.updated, r.deleted) == (2, 1, 2)
    got = assert_readers_agree(spark, table)
    assert sorted((dict(r)["id"], dict(r)["city"], dict(r)["n"]) for r in got) == [
        ("a", "ams", 5), ("c", "ber", 5), ("d", "ams", 2), ("e", "ams", 5)]
    assert_index_is_the_table(spark, base)
    assert assert_lookups_agree(spark, base, list("abcde")) == {
        "a": "city=ams", "c": "city=ber", "d": "city=ams", "e": "city=ams"}
    # and Hudi again, through what tablespec recorded: d moves to ber
    hudi_write(spark.createDataFrame([("d", "ber", 6)], DDL), base, hudi_options(table.spec, base, "upsert"))
    assert_readers_agree(spark, table)
    assert assert_index_is_the_table(spark, base)["d"].partition == "city=ber"

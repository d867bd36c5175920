"""Apache Hudi writes into a tablespec RECORD_LEVEL table: tablespec refuses to tag through an
index that missed them, plans and applies a catch-up, and every reader agrees afterwards."""
from __future__ import annotations

import pytest
from helpers import make_table
from interop_support import assert_readers_agree, hudi_write
from test_engine_record_index import SPEC as PEOPLE

from tablespec.apply import Applier
from tablespec.hudi.index_coverage import IndexBehind
from tablespec.hudi.table import HudiTable, Location
from tablespec.hudi_options import hudi_write_options
from tablespec.index import lookup, verify
from tablespec.plan.builder import build_plan
from tablespec.spec.loader import load_spec_text
from tablespec.state import observe_specs

SPEC = PEOPLE.replace("numBuckets: 3, maxFilesPerBucket: 2", "numBuckets: 2")
DDL = "id string, city string, n int"


def hudi_options(spec, location: str, operation: str) -> dict[str, str]:
    """What `tablespec hudi-options` prints for the table (a global index: keys stay unique across
    partitions), plus the operation and small shuffles."""
    return {**hudi_write_options(spec, HudiTable.open(location)), "hoodie.datasource.write.operation": operation,
            "hoodie.upsert.shuffle.parallelism": "2", "hoodie.delete.shuffle.parallelism": "2"}


def plan(tmp_path):
    loaded = load_spec_text(SPEC, "people.yaml")
    return build_plan(loaded.specs, observe_specs(loaded.specs, Location.parse(str(tmp_path))), Location.parse(str(tmp_path)))


def test_apache_hudi_writes_are_caught_up_and_tablespec_writes_again(hudi, tmp_path):
    spark = hudi
    table = make_table(spark, tmp_path, SPEC)
    table.write(spark.createDataFrame([("a", "ams", 1), ("b", "ams", 1), ("c", "ber", 1), ("d", "ber", 1)], DDL), "insert")
    # Apache Hudi: update a in place, move c ber -> ams, insert e; then delete b
    hudi_write(spark.createDataFrame([("a", "ams", 2), ("c", "ams", 2), ("e", "ber", 2)], DDL), table.location,
               hudi_options(table.spec, table.location, "upsert"))
    hudi_write(spark.createDataFrame([("b", "ams", 3)], DDL), table.location,
               hudi_options(table.spec, table.location, "delete"))
    with pytest.raises(IndexBehind, match="2 data commit"):
        table.write(spark.createDataFrame([("a", "ams", 9)], DDL), "upsert")
    with pytest.raises(IndexBehind):
        lookup(HudiTable.open(table.location), ["c"])
    the_plan = plan(tmp_path)
    [(_, action)] = the_plan.actions
    assert action.kind == "record_index_catch_up" and action.estimate.commits == 2
    Applier(spark=spark).apply(the_plan)
    assert not plan(tmp_path).has_changes
    result = verify(HudiTable.open(table.location))
    assert result.ok, str(result)
    where = {r["key"]: r["partition_path"] for r in lookup(HudiTable.open(table.location), list("abcde")).to_pylist()}
    assert where == {"a": "city=ams", "c": "city=ams", "d": "city=ber", "e": "city=ber"}
    # tablespec tags through the index again: c moves back to ber, a is updated where it lives
    r = table.write(spark.createDataFrame([("c", "ber", 5), ("a", "ams", 5)], DDL), "upsert")
    assert (r.updated, r.deleted) == (1, 1)
    assert verify(HudiTable.open(table.location)).ok
    got = assert_readers_agree(spark, table)
    assert sorted((dict(r)["id"], dict(r)["city"], dict(r)["n"]) for r in got) == [
        ("a", "ams", 5), ("c", "ber", 5), ("d", "ber", 1), ("e", "ber", 2)]

"""`show` on tables with a record-level index and a clustering history."""
from __future__ import annotations

import json

import pytest
from helpers import assert_hudi_rs_agrees, make_table
from test_engine_clustering import batch, plan_for, spec_text

from tablespec.apply import Applier
from tablespec.cli import main

pytestmark = pytest.mark.spark


def test_show_reports_the_record_index_and_the_last_clustering(spark, tmp_path, capsys):
    text = spec_text("{strategy: SORT, sortColumns: [customer_id], everyNCommits: 2}",
                     index="{type: RECORD_LEVEL, recordLevel: {numBuckets: 2}}")
    table = make_table(spark, tmp_path, text)
    table.write(batch(spark, 0, 20), "upsert")
    assert main(["show", table.location]) == 0
    out = capsys.readouterr().out
    assert "RECORD_LEVEL (Hudi's record index, 2 file groups)" in out and "clustering  never, 1 commit since" in out
    table.write(batch(spark, 20, 20), "upsert")
    plan = plan_for(text, tmp_path)
    assert [a.kind for _, a in plan.actions] == ["clustering"]
    instant = Applier(spark=spark).apply(plan).actions[0].actual.instant
    assert main(["show", table.location, "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["lastClustering"], shown["commitsSinceClustering"]) == (instant, 0)
    assert shown["index"]["recordLevel"] == {"fileGroups": 2, "built": True, "privateIndex": False}
    assert_hudi_rs_agrees(table)

"""The hudi-rs read snippet of docs/ingestion.md, run as written against a table tablespec wrote (issue 27)."""
from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import pytest
from _support import ORDERS_SPEC, ROOT
from helpers import make_table, rows, tablespec_rows

pytestmark = pytest.mark.spark


def docs_snippet(page: str, section: str) -> str:
    text = (ROOT / "docs" / page).read_text()
    body = text[text.index(f"\n{section}\n"):]
    return re.search(r"```python\n(.*?)\n```", body, re.S).group(1)


def test_docs_hudi_rs_snippet_reads_what_tablespec_wrote(spark, tmp_path, monkeypatch):
    table = make_table(spark, tmp_path / "warehouse", ORDERS_SPEC)
    t0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
    table.write(spark.createDataFrame(
        [(f"o{i}", i, Decimal(f"{i}.50"), t0, dt.date(2026, 11, 1 + i % 2)) for i in range(3)],
        "order_id string, customer_id bigint, amount decimal(12,2), updated_at timestamp, order_date date"), "upsert")
    monkeypatch.chdir(tmp_path)  # the snippet reads warehouse/sales/orders
    scope: dict = {}
    exec(docs_snippet("ingestion.md", "## Reading with hudi-rs"), scope)
    orders = scope["orders"]
    assert orders.column_names[:5] == ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                                       "_hoodie_partition_path", "_hoodie_file_name"]
    assert orders.num_rows == 3 and rows(orders) == tablespec_rows(table)

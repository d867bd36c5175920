"""Deterministic sample records for the example specs, written as parquet for `tablespec ingest`."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

T0 = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


def orders(n: int, first: int = 0, amount_shift: int = 0) -> pa.Table:
    ids = range(first, first + n)
    return pa.table({
        "order_id": [f"o{i:06d}" for i in ids],
        "customer_id": pa.array([i % 97 for i in ids], pa.int64()),
        "amount": pa.array([Decimal(f"{(i * 37) % 10000 + amount_shift}.{i % 100:02d}") for i in ids], pa.decimal128(12, 2)),
        "updated_at": pa.array([T0 + dt.timedelta(minutes=i + amount_shift) for i in ids], pa.timestamp("us", "UTC")),
        "order_date": pa.array([dt.date(2026, 11, 1 + i % 5) for i in ids], pa.date32()),
    })


def events(n: int) -> pa.Table:
    return pa.table({
        "event_time": pa.array([T0 + dt.timedelta(seconds=i) for i in range(n)], pa.timestamp("us", "UTC")),
        "user_id": pa.array([i % 50 for i in range(n)], pa.int64()),
        "session_id": [f"s{i // 10}" for i in range(n)],
        "event_type": [("view", "click", "buy")[i % 3] for i in range(n)],
        "properties": pa.array([[("page", f"/p/{i % 7}")] for i in range(n)], pa.map_(pa.string(), pa.string())),
        "event_date": pa.array([dt.date(2026, 11, 1 + i % 3) for i in range(n)], pa.date32()),
    })


def customers(n: int) -> pa.Table:
    address = pa.struct([("street", pa.string()), ("city", pa.string()), ("postcode", pa.string()), ("country", pa.string())])
    return pa.table({
        "customer_id": pa.array(range(n), pa.int64()),
        "name": [f"Customer {i}" for i in range(n)],
        "email": [f"c{i}@example.com" for i in range(n)],
        "address": pa.array([{"street": f"{i} Main St", "city": "Zürich", "postcode": f"80{i % 100:02d}", "country": "CH"}
                             for i in range(n)], address),
        "tags": pa.array([["vip"] if i % 10 == 0 else [] for i in range(n)], pa.list_(pa.string())),
        "updated_at": pa.array([T0 + dt.timedelta(hours=i) for i in range(n)], pa.timestamp("us", "UTC")),
    })


def write(table: pa.Table, path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return str(path)

"""An upsert on an object store opens the table once (issue 28): hoodie.properties, the timeline
folder and file sizes are read where correctness needs them, not again by every layer. Counted
at the loopback S3 server (its request log), for one bucket."""
from __future__ import annotations

import datetime as dt
import re
import time
from decimal import Decimal

from _support import ORDERS_SPEC
from helpers import make_table

SPEC = ORDERS_SPEC.replace("index: {type: BUCKET, numBuckets: 16}", "index: {type: SIMPLE}")
SCHEMA = "order_id string, customer_id long, amount decimal(12,2), updated_at timestamp, order_date date"
REQUEST = re.compile(r'"([A-Z]+) (\S+) HTTP/[0-9.]+"')


def orders(spark, first: int, n: int, shift: int = 0):
    t0 = dt.datetime(2026, 11, 1, 8, 0)
    return spark.createDataFrame([(f"o{i:04d}", i, Decimal(f"{i + shift}.50"), t0 + dt.timedelta(minutes=i + shift),
                                   dt.date(2026, 11, 1 + i % 3)) for i in range(first, first + n)], SCHEMA)


def logged_requests(server, bucket: str, run) -> list[tuple[str, str]]:
    """(method, target) of the requests for `bucket` while `run()` runs, from the server's log."""
    path = f"/proc/self/fd/{server.log.fileno()}"

    def logged(start: int = 0) -> bytes:
        with open(path, "rb") as fh:
            fh.seek(start)
            return fh.read()

    start = len(logged())
    run()
    seen, deadline = logged(start), time.monotonic() + 10
    while time.monotonic() < deadline:  # a request's log line follows its response: until it settles
        time.sleep(0.3)
        if (now := logged(start)) == seen:
            break
        seen = now
    found = [m.groups() for line in seen.decode(errors="replace").splitlines() if (m := REQUEST.search(line))]
    return [(method, target) for method, target in found if target.startswith(f"/{bucket}")]


def test_an_upsert_reads_the_table_state_once(spark, s3_server, s3_bucket):
    table = make_table(spark, s3_bucket + "/wh", SPEC)
    table.write(orders(spark, 0, 60), "insert")
    table.write(orders(spark, 30, 60, shift=5), "upsert")
    bucket = s3_bucket.removeprefix("s3://")

    requests = logged_requests(s3_server, bucket, lambda: table.write(orders(spark, 50, 60, shift=9), "upsert"))
    assert table.read().count() == 110   # the upsert did its work

    properties = [t for m, t in requests if m == "GET" and t.endswith("/.hoodie/hoodie.properties")]
    metadata = [(m, t) for m, t in requests if re.search(r"\.hoodie(/|%2F)metadata", t)]   # Hudi's metadata table
    timeline = [t for m, t in requests if m == "GET" and (m, t) not in metadata and re.search(
        r"list-type=2.*prefix=[^&]*%2F.hoodie%2F(&|$)|list-type=2.*prefix=[^&]*/\.hoodie/(&|$)", t)]
    heads = [t for m, t in requests if m == "HEAD"]
    # today's main: 4 reads of hoodie.properties, 7 listings of .hoodie/, 18 HEADs (bench/handle_bench.py)
    # hoodie.properties: once under the lock (a handle's first write may read it once before)
    assert 1 <= len(properties) <= 2, properties
    # .hoodie/ listed under the lock, for the new instant time and for the conflict check: no more
    assert 2 <= len(timeline) <= 3, timeline
    # sizes come from listings (file-system view), existence from reads and conditional writes
    assert len(heads) <= 2, heads
    # the metadata table (issue 23): its timeline listed under the lock (a compaction left
    # pending?) and before its deltacommit, its files partition once (the latest slice), then
    # the deltacommit's three instant files and one log file written; nothing read
    listed = [t for m, t in metadata if m == "GET" and "list-type=2" in t]
    assert len([t for t in listed if re.search(r"metadata(/|%2F)\.hoodie(/|%2F)(&|$)", t)]) <= 2, metadata
    assert len([t for t in listed if re.search(r"metadata(/|%2F)files(/|%2F)(&|$)", t)]) == 1, metadata
    assert len([t for m, t in metadata if m == "PUT"]) == 4, metadata
    assert len(metadata) <= 7, metadata

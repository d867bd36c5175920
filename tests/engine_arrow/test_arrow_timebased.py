"""Timestamp partition segments: the paths Apache Hudi 0.15 wrote for the same values (Avro write path)."""
from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from tablespec.engine.arrow.keys import partition_paths
from tablespec.engine.arrow.timebased import timestamp_segments
from tablespec.errors import TablespecError
from tablespec.hudi.keygen import TimestampPartitioning as TP

UTC = dt.UTC


def segments(values, type_, ts):
    return timestamp_segments(pa.array(values, type_), ts).to_pylist()


def test_epoch_millis():  # Hudi: EPOCHMILLISECONDS, yyyy/MM/dd, timezone UTC; null -> 1 ms
    ts = TP("ms", "epochMillis", "yyyy/MM/dd", "UTC")
    assert segments([1700000000123, 1600000000000, None], pa.int64(), ts) == ["2023/11/14", "2020/09/13", "1970/01/01"]


def test_epoch_millis_in_another_zone():  # Hudi: yyyyMMdd in Asia/Kolkata
    ts = TP("ms", "epochMillis", "yyyyMMdd", "Asia/Kolkata")
    assert segments([1700000000123, 1600000000000, None], pa.int64(), ts) == ["20231115", "20200913", "19700101"]


def test_epoch_seconds_and_micros():
    assert segments([1700000000, None], pa.int64(), TP("s", "epochSeconds", "yyyy-MM-dd HH", "UTC")) == \
        ["2023-11-14 22", "1970-01-01 00"]
    # finer than a millisecond: truncated toward zero like TimeUnit.convert, so -500 us is 0 ms
    assert segments([-500, -1500], pa.int64(), TP("u", "epochMicros", "yyyy-MM-dd HH:mm:ss", "UTC")) == \
        ["1970-01-01 00:00:00", "1969-12-31 23:59:59"]


def test_date_string():  # Hudi: DATE_STRING yyyy-MM-dd HH:mm:ss -> yyyy-MM-dd-HH; null -> the epoch's
    ts = TP("ds", "dateString", "yyyy-MM-dd-HH", "UTC", "yyyy-MM-dd HH:mm:ss")
    assert segments(["2024-03-05 10:11:12", "2020-09-13 12:26:40", None], pa.string(), ts) == \
        ["2024-03-05-10", "2020-09-13-12", "1970-01-01-00"]
    with pytest.raises(TablespecError, match="'05/03/2024'"):
        segments(["05/03/2024"], pa.string(), ts)


def test_timestamp_and_date_columns():  # Hudi: SCALAR MICROSECONDS / DAYS
    ts = TP("ts", "timestamp", "yyyy/MM/dd/HH", "UTC")
    values = [dt.datetime(2024, 3, 5, 23, 30, tzinfo=UTC), dt.datetime(2020, 9, 13, 1, 2, 3, tzinfo=UTC), None]
    assert segments(values, pa.timestamp("us", "UTC"), ts) == ["2024/03/05/23", "2020/09/13/01", "1970/01/01/00"]
    days = TP("d", "date", "yyyy/MM", "UTC")
    assert segments([dt.date(2024, 3, 5), None], pa.date32(), days) == ["2024/03", "1970/01"]


def test_custom_partition_path_joins_simple_and_timestamp_fields():  # Hudi: r:SIMPLE,ms:TIMESTAMP, hive style
    table = pa.table({"r": ["x", "y", None], "ms": pa.array([1700000000123, 1600000000000, None], pa.int64())})
    ts = TP("ms", "epochMillis", "yyyyMMdd", "Asia/Kolkata")
    assert partition_paths(table, ["r", "ms"], True, timestamp=ts).to_pylist() == \
        ["r=x/ms=20231115", "r=y/ms=20200913", "r=__HIVE_DEFAULT_PARTITION__/ms=19700101"]

"""Timestamp partition segments: the paths Apache Hudi 0.15 wrote for the same values (Avro write path)."""
from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from tablespec.arrow.keys import partition_paths
from tablespec.arrow.timebased import timestamp_segments
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


def test_date_strings_with_offsets_and_no_zone():  # Hudi: yyyy-MM-dd'T'HH:mm:ss.SSSZ, no zone: each in its own offset
    ts = TP("t", "dateString", "yyyy/MM/dd/HH", None, "yyyy-MM-dd'T'HH:mm:ss.SSSZ")
    values = ["2024-03-01T23:30:00.000+0530", "2024-03-01T23:30:00.000Z", "2024-03-02T01:15:00.5-0800", None]
    assert segments(values, pa.string(), ts) == ["2024/03/01/23", "2024/03/01/23", "2024/03/02/01", "1970/01/01/00"]
    # timezone set: read by their offsets, printed in it
    utc = TP("t", "dateString", "yyyy/MM/dd/HH", "UTC", "yyyy-MM-dd'T'HH:mm:ss.SSSZ")
    assert segments(values, pa.string(), utc) == ["2024/03/01/18", "2024/03/01/23", "2024/03/02/09", "1970/01/01/00"]


def test_several_input_patterns_and_zones():  # Hudi: MIXED, `;` between patterns, input and output zones
    ts = TP("t", "mixed", "yyyy-MM-dd-HH_EEE", None, "yyyy-MM-dd'T'HH:mm:ssZZ; yyyyMMdd ;dd MMM yyyy HH:mm ZZZ",
            input_time_zone="America/New_York", output_time_zone="Asia/Tokyo", input_delimiter=";")
    values = ["2024-03-10T01:30:00-05:00", "20240310", "10 Mar 2024 03:30 Europe/Paris", None]
    assert segments(values, pa.string(), ts) == ["2024-03-10-15_Sun", "2024-03-10-14_Sun", "2024-03-10-11_Sun",
                                                 "1970-01-01-09_Thu"]
    # the default comma between patterns; S reads one digit, as Joda's
    comma = TP("t", "dateString", "yyyy/MM/dd/HH", "Europe/Berlin", "yyyy-MM-dd HH:mm:ss.S,yyyy-MM-dd")
    assert segments(["2024-10-28", "2024-03-05 07:08:09.1"], pa.string(), comma) == ["2024/10/28/00", "2024/03/05/07"]
    with pytest.raises(TablespecError, match="'2024-03-05 07:08:09.12' matches none of"):
        segments(["2024-03-05 07:08:09.12"], pa.string(), comma)


def test_numbers_of_any_unit_in_any_column():  # Hudi: SCALAR MINUTES; EPOCHMILLISECONDS of doubles (truncated)
    assert segments([28333333, 0, None], pa.int64(), TP("t", "scalar", "yyyyMMddHHmm", unit="MINUTES")) == \
        ["202311142213", "197001010000", "197001010001"]
    assert segments([1700000000123.9, -1.5, None], pa.float64(), TP("t", "epochMillis", "yyyy-MM-dd'T'HH.mm.ss.SSS")) == \
        ["2023-11-14T22.13.20.123", "1969-12-31T23.59.59.999", "1970-01-01T00.00.00.001"]
    # a string field of digits (Hudi 1.x's SQL UPDATE writes an epoch field back so): read as the number
    assert segments(["1700200000000", None], pa.string(), TP("t", "epochMillis", "yyyy/MM/dd/HH")) == \
        ["2023/11/17/05", "1970/01/01/00"]
    with pytest.raises(TablespecError, match="not a whole number of MILLISECONDS"):
        segments(["2023-11-17"], pa.string(), TP("t", "epochMillis", "yyyy/MM/dd/HH"))


def test_week_fields_and_other_hours():  # Hudi: a week without its day is its Monday; a day of week moves the date
    ts = TP("t", "dateString", "xxxx-'W'ww-e_GG_YYYY_kk_KK_D", "UTC", "xxxx-'W'ww-e HH,xxxx-'W'ww,EEE yyyy-MM-dd kk")
    assert segments(["2024-W10-2 07", "2024-W10", "Fri 2024-03-05 13", None], pa.string(), ts) == [
        "2024-W10-2_AD_2024_07_07_65", "2024-W10-1_AD_2024_24_00_64", "2024-W10-5_AD_2024_13_01_68",
        "1970-W01-4_AD_1970_24_00_1"]

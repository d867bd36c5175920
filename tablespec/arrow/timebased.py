"""Timestamp partition path segments, as Hudi's TimestampBasedKeyGenerator formats them (Avro path).

Hudi turns the field's value into epoch milliseconds, then prints it with the output pattern:
- numbers (and Avro timestamps, longs of microseconds; dates, ints of days) are converted from
  their unit with Java's `TimeUnit.convert`, which truncates toward zero (floating values are
  truncated to a long first); a string column of a numeric type holds the number's digits;
- strings are parsed with the first input pattern that reads them, in the input zone unless
  they name their own offset or zone (tablespec/hudi/joda.py);
- the folder is printed in the output zone; with none, a parsed string's own zone, else the
  writer JVM's (taken as UTC);
- a null value formats as 1 of the input's unit (a string input: the instant 1 ms, printed
  with the first input pattern and parsed back), so nulls land in the epoch's partition, never in
  `__HIVE_DEFAULT_PARTITION__`.
"""
from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tablespec.errors import TablespecError
from tablespec.hudi import joda
from tablespec.hudi.keygen import DEFAULT_TIME_ZONE, UNIT_MICROS, TimestampPartitioning


def _numbers(arr: pa.Array, ts: TimestampPartitioning) -> pa.Array:
    """The column's values as int64 in the input's unit (nulls kept)."""
    t = arr.type
    if pa.types.is_timestamp(t):
        return arr.cast(pa.timestamp("us", t.tz)).view(pa.int64())
    if pa.types.is_date32(t):
        return arr.view(pa.int32()).cast(pa.int64())
    if pa.types.is_date64(t):
        return arr.cast(pa.date32()).view(pa.int32()).cast(pa.int64())
    if pa.types.is_integer(t):
        return arr.cast(pa.int64())
    if pa.types.is_floating(t):   # Java's longValue(): toward zero
        return pc.trunc(arr).cast(pa.int64(), safe=False)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        try:
            return pc.cast(pc.utf8_trim_whitespace(arr), pa.int64())
        except pa.ArrowInvalid:
            raise TablespecError(f"partition field {ts.field!r}: a value is not a whole number of "
                                 f"{ts.number_unit}; input {ts.input} reads the digits of one") from None
    raise TablespecError(f"partition field {ts.field!r} of type {t} cannot be read as {ts.input}")


def _epoch_millis(arr: pa.Array, ts: TimestampPartitioning) -> pa.Array:
    """Each value as epoch milliseconds (int64), nulls already filled."""
    values = np.asarray(pc.fill_null(_numbers(arr, ts), 1), dtype=np.int64)
    micros = UNIT_MICROS[ts.number_unit or "MILLISECONDS"]   # numeric inputs always name their unit
    if micros >= 1000:
        factor = int(micros) // 1000
        limit = np.iinfo(np.int64).max // factor   # TimeUnit.convert saturates at Long's bounds
        return pa.array(np.clip(values, -limit, limit) * factor)
    step = round(1000 / micros)   # finer than a millisecond: TimeUnit.convert truncates toward zero
    return pa.array(np.sign(values) * (np.abs(values) // step))


def _parse(arr: pa.Array, ts: TimestampPartitioning) -> tuple[pa.Array, pa.Array | None]:
    """(epoch milliseconds, each value's own zone or None) of date strings."""
    patterns = ts.input_patterns
    reading = ts.reading_zone or DEFAULT_TIME_ZONE
    if arr.null_count:   # Hudi's stand-in: the instant 1 ms printed with the first pattern
        zone = ts.input_time_zone or ts.time_zone or ts.output_time_zone or "GMT"
        first = re.split((ts.input_delimiter or "").strip() or ",", ts.input_format or "")[0]   # untrimmed, as Hudi
        null_text = joda.print_instants(pa.array([1], pa.int64()), "UTC" if zone == "GMT" else zone, first)[0]
        arr = pc.fill_null(arr, null_text)
    unique = pc.unique(arr)
    millis, zones = [], []
    for text in unique.to_pylist():
        try:
            parsed = joda.parse(text, patterns, reading)
        except ValueError as e:
            raise TablespecError(f"partition field {ts.field!r}: a value does not match inputFormat "
                                 f"{ts.input_format!r} ({e})") from None
        millis.append(parsed.millis)
        zones.append(reading if ts.reading_zone else parsed.zone)
    index = pc.index_in(arr, value_set=unique)
    return pc.take(pa.array(millis, pa.int64()), index), pc.take(pa.array(zones, pa.string()), index)


def timestamp_segments(arr: pa.Array, ts: TimestampPartitioning) -> pa.StringArray:
    """The formatted path segment of every value (before hive-style prefixing)."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if ts.input in ("dateString", "mixed"):
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            raise TablespecError(f"partition field {ts.field!r} of type {arr.type} cannot be read as {ts.input}")
        millis, own = _parse(arr, ts)
    else:
        millis, own = _epoch_millis(arr, ts), None
    if ts.printing_zone is not None or own is None or own.null_count == len(own):
        return joda.print_instants(millis, ts.printing_zone or DEFAULT_TIME_ZONE, ts.output_format)
    # each string printed in the zone it named (the JVM's, taken as UTC, where it named none)
    own = pc.fill_null(own, DEFAULT_TIME_ZONE)
    out = pa.array([""] * len(millis), pa.string())
    for zone in pc.unique(own).to_pylist():
        mask = pc.equal(own, zone)
        local, offsets = joda.wall_clock(pc.filter(millis, mask), zone)
        printed = joda.format_local(local, offsets, pa.array([zone] * len(local), pa.string()), ts.output_format)
        out = pc.replace_with_mask(out, mask, printed)
    return out


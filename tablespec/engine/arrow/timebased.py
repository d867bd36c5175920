"""Timestamp partition path segments, as Hudi's TimestampBasedKeyGenerator formats them (Avro path).

Hudi turns the field's value into epoch milliseconds, then formats it with the output pattern in
the configured zone:
- numbers (and Avro timestamps, longs of microseconds; dates, ints of days) are converted from
  their unit with Java's `TimeUnit.convert`, which truncates toward zero;
- strings are parsed with the input pattern in the configured zone;
- a null value formats as 1 of the input's unit (a string input: the instant 1 ms, printed
  with the input pattern and parsed back), so nulls land in the epoch's partition, never in
  `__HIVE_DEFAULT_PARTITION__`.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tablespec.errors import TablespecError
from tablespec.hudi.keygen import UNIT_MICROS, TimestampPartitioning, joda_to_strftime


def _epoch_millis(arr: pa.Array, ts: TimestampPartitioning) -> pa.Array:
    """Each value as epoch milliseconds (int64), nulls already filled."""
    t = arr.type
    if pa.types.is_timestamp(t):
        values = arr.cast(pa.timestamp("us", t.tz)).view(pa.int64())
    elif pa.types.is_date32(t):
        values = arr.view(pa.int32()).cast(pa.int64())
    elif pa.types.is_date64(t):
        values = arr.cast(pa.date32()).view(pa.int32()).cast(pa.int64())
    elif pa.types.is_integer(t):
        values = arr.cast(pa.int64())
    else:
        raise TablespecError(f"partition field {ts.field!r} of type {t} cannot be read as {ts.input}")
    values = np.asarray(pc.fill_null(values, 1), dtype=np.int64)
    micros = UNIT_MICROS[ts.unit or "MILLISECONDS"]   # numeric inputs always name their unit
    if micros >= 1000:
        return pa.array(values * (micros // 1000))
    step = 1000 // micros   # finer than a millisecond: TimeUnit.convert truncates toward zero
    return pa.array(np.sign(values) * (np.abs(values) // step))


def _parse(arr: pa.Array, ts: TimestampPartitioning) -> pa.Array:
    fmt = joda_to_strftime(ts.input_format or "")
    epoch = pa.array([1], pa.int64()).cast(pa.timestamp("ms", ts.time_zone))
    null_text = _format(epoch, fmt)[0]
    text = pc.fill_null(arr.cast(pa.string()), null_text)
    try:
        local = pc.strptime(text, format=fmt, unit="ms")
    except pa.ArrowInvalid:
        bad = pc.filter(text, pc.is_null(pc.strptime(text, format=fmt, unit="ms", error_is_null=True)))
        raise TablespecError(f"partition field {ts.field!r}: {len(bad)} value(s) do not match inputFormat "
                             f"{ts.input_format!r}, e.g. {bad[0].as_py()!r}") from None
    return pc.assume_timezone(local, ts.time_zone, ambiguous="earliest", nonexistent="raise")


def timestamp_segments(arr: pa.Array, ts: TimestampPartitioning) -> pa.StringArray:
    """The formatted path segment of every value (before hive-style prefixing)."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if ts.input == "dateString":
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            raise TablespecError(f"partition field {ts.field!r} of type {arr.type} cannot be read as dateString")
        instants = _parse(arr, ts)
    else:
        instants = _epoch_millis(arr, ts).cast(pa.timestamp("ms", ts.time_zone))
    return _format(instants, joda_to_strftime(ts.output_format))


def _format(instants: pa.Array, fmt: str) -> pa.StringArray:
    """strftime at second resolution (Arrow's %S prints the fraction of finer units; Joda's ss does not)."""
    whole = pc.floor_temporal(instants, 1, "second").cast(pa.timestamp("s", instants.type.tz))
    return pc.strftime(whole, format=fmt)

"""Record keys and partition paths as Hudi writes them, computed over a whole Arrow batch.

A row's `_hoodie_record_key` and `_hoodie_partition_path` decide where Hudi and every other
reader look for it, so the strings must be byte-identical to what Hudi's key generators make
(Avro write path, Hudi 0.14/0.15, default `consistent.logical.timestamp` = false):

- a field value becomes the Java `toString()` of its Avro value: ints/longs in decimal,
  booleans `true`/`false`, strings as they are, dates (Avro int days) as `LocalDate`
  `yyyy-MM-dd`, timestamps as the Avro long, i.e. microseconds since the epoch
  (`1680368460000000`), decimals as `BigDecimal.toString()` (plain, or scientific such as
  `1.00E-8` / `0E-10` when the adjusted exponent is below -6 — Arrow's decimal-to-string
  follows the same rule). Floats/doubles (Java's own digit algorithm) and binary/nested
  values (`Object.toString()` of a buffer) have no reproducible string and are refused.
- SimpleKeyGenerator: the value; null or empty is an error.
- ComplexKeyGenerator: `f1:v1,f2:v2` in record-key field order, null -> `__null__`,
  empty -> `__empty__`; all parts null/empty is an error. One field still gives `f1:v1`
  (Hudi 0.14.0 and 1.0.3+ encoding; HUDI-7001).
- Partition path: values joined by `/`, hive style `f=v`; null or empty ->
  `__HIVE_DEFAULT_PARTITION__`; with url-encoding, Hive's path escaping (`%XX`).
- TimestampBased/CustomKeyGenerator: the time field's segment is formatted (timebased.py).
- Auto-generated keys (RFC-76): `<instant>_<sparkPartitionId>_<rowId>`.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tablespec.arrow.timebased import timestamp_segments
from tablespec.errors import TablespecError
from tablespec.hudi.formats.partition import DEFAULT_PARTITION, ESCAPED_CHARACTERS
from tablespec.hudi.keygen import EMPTY_PLACEHOLDER, NULL_PLACEHOLDER, TimestampPartitioning

# `%` first, so that the escapes added later are not escaped again
_ESCAPED = ["%", *sorted(ESCAPED_CHARACTERS - {"%"})]
_ESCAPED_CLASS = "[" + "".join(f"\\x{{{ord(c):02x}}}" for c in _ESCAPED) + "]"


class RecordKeys(NamedTuple):
    keys: pa.StringArray
    """The record key of each row; null where `invalid`."""
    invalid: np.ndarray
    """Rows Hudi refuses (null/empty simple key, all-null/empty complex key)."""


def column(table: pa.Table, field: str) -> pa.Array:
    """A top-level column or a nested struct field (`a.b`), as one array (nulls propagate)."""
    if field in table.column_names:
        arr = table.column(field)
    else:
        head, _, rest = field.partition(".")
        if not rest or head not in table.column_names:
            raise TablespecError(f"field {field!r} is not a column of the data")
        arr = table.column(head)
        for part in rest.split("."):
            if not pa.types.is_struct(arr.type) or arr.type.get_field_index(part) < 0:
                raise TablespecError(f"field {field!r} is not a column of the data")
            arr = pc.struct_field(arr, part)
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


def value_strings(arr: pa.Array, field: str = "") -> pa.StringArray:
    """Java `toString()` of each value's Avro form, as Hudi's key generators render it."""
    t = arr.type
    if pa.types.is_dictionary(t):
        return value_strings(arr.dictionary_decode(), field)
    if pa.types.is_string(t):
        return arr
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return arr.cast(pa.string())
    if pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_date32(t) or pa.types.is_decimal(t):
        return arr.cast(pa.string())
    if pa.types.is_date64(t):
        return arr.cast(pa.date32()).cast(pa.string())
    if pa.types.is_timestamp(t):
        micros = arr.cast(pa.timestamp("us", t.tz)).view(pa.int64())
        return micros.cast(pa.string())
    raise TablespecError(
        f"field {field!r} of type {t} cannot be a key or partition field: Hudi renders it with"
        " Java's toString(), which tablespec does not reproduce (use a string, integer,"
        " boolean, date, timestamp or decimal column)")


def record_keys(table: pa.Table, fields: list[str], complex: bool) -> RecordKeys:
    """Hudi's record key of every row (Simple: the value; Complex: `f1:v1,f2:v2`)."""
    if not fields:
        raise ValueError("record keys need at least one field")
    if not complex:
        if len(fields) != 1:
            raise ValueError("a simple key has exactly one field")
        keys = value_strings(column(table, fields[0]), fields[0])
        invalid = np.asarray(pc.fill_null(pc.equal(pc.binary_length(keys), 0), True))
        return RecordKeys(_null_where(keys, invalid), invalid)
    parts = []
    all_missing = np.ones(table.num_rows, dtype=bool)
    for f in fields:
        s = value_strings(column(table, f), f)
        empty = pc.equal(pc.binary_length(s), 0)
        all_missing &= np.asarray(pc.fill_null(empty, True))
        s = pc.if_else(pc.fill_null(empty, False), EMPTY_PLACEHOLDER, pc.fill_null(s, NULL_PLACEHOLDER))
        parts.append(pc.binary_join_element_wise(f"{f}:", s, ""))
    keys = pc.binary_join_element_wise(*parts, ",") if len(parts) > 1 else parts[0]
    return RecordKeys(_null_where(keys, all_missing), all_missing)


def partition_paths(table: pa.Table, fields: list[str], hive_style: bool, url_encode: bool = False,
                    timestamp: TimestampPartitioning | None = None) -> pa.StringArray:
    """Hudi's partition path of every row (`""` for a non-partitioned table); the `timestamp`
    field's segment is its time value formatted (TimestampBased/CustomKeyGenerator).

    Refuses values that would make a `..` path segment: the path names a directory under
    the table, and Hudi itself rejects such values (PartitionPathEncodeUtils).
    """
    if not fields:
        return pa.repeat(pa.scalar("", pa.string()), table.num_rows)
    parts = []
    for f in fields:
        if timestamp is not None and f == timestamp.field:
            s = timestamp_segments(column(table, f), timestamp)
        else:
            s = value_strings(column(table, f), f)
            s = pc.if_else(pc.fill_null(pc.equal(pc.binary_length(s), 0), True), DEFAULT_PARTITION, s)
        if url_encode:
            s = escape_path_name(s)
        parts.append(pc.binary_join_element_wise(f"{f}=", s, "") if hive_style else s)
    paths = pc.binary_join_element_wise(*parts, "/") if len(parts) > 1 else parts[0]
    traversal = pc.match_substring_regex(paths, r"(^|/)\.\.(/|$)")
    if pc.any(traversal).as_py():
        bad = pc.filter(paths, traversal)
        raise TablespecError(f"{len(bad)} row(s) have a partition value that makes a '..' path segment,"
                             f" e.g. {bad[0].as_py()!r}; Hudi refuses these")
    return paths


def escape_path_name(values: pa.StringArray) -> pa.StringArray:
    """Hive's `escapePathName`: each listed character becomes `%XX` (upper-case hex)."""
    needs = pc.match_substring_regex(values, _ESCAPED_CLASS)
    if not pc.any(needs).as_py():
        return values
    needs = pc.fill_null(needs, False)
    subset = values.filter(needs)
    for ch in _ESCAPED:
        subset = pc.replace_substring(subset, ch, f"%{ord(ch):02X}")
    return pc.replace_with_mask(values, needs, subset)


def auto_keys(instant: str, partition_id: int, num_rows: int, start_row: int = 0) -> pa.StringArray:
    """RFC-76 keys `<instant>_<partitionId>_<rowId>`: unique across the table (instant prefix)
    and the same when Spark recomputes a partition of a determinate input."""
    rows = pa.array(np.arange(start_row, start_row + num_rows, dtype=np.int64)).cast(pa.string())
    return pc.binary_join_element_wise(f"{instant}_{partition_id}_", rows, "")


def _null_where(values: pa.Array, mask: np.ndarray) -> pa.Array:
    if not mask.any():
        return values
    return pc.if_else(pa.array(mask), pa.scalar(None, values.type), values)

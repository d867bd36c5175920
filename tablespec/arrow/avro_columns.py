"""Avro records decoded column by column: all records of a run of log blocks at once, one numpy
pass per field, into Arrow arrays.

fastavro builds a Python dict per record and an object per value, which pyarrow then converts
back: a few microseconds a record, most of a merge-on-read slice's read once it has many small log
blocks. Records of one writer schema are laid out alike, so each field can be decoded for every
record together: a varint or a fixed width at each record's cursor, the cursors then moved on.
Only flat records qualify: fields of a primitive type, fixed, or a union of null and one of those,
read as the Arrow type a record-by-record conversion gives (`columns_plan` returns None otherwise,
and the caller decodes record by record). Fields the reader does not want are skipped, not built.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

_VARINT_MAX = 10                  # bytes of a zigzag long
_PAD = np.zeros(16, np.uint8)     # past the last record: a cursor that runs off reads zeros, then is refused
# Avro type -> the Arrow types its values convert to as they are (no range check, no reinterpretation)
_TARGETS: dict[str, tuple[pa.DataType, ...]] = {
    "boolean": (pa.bool_(),), "int": (pa.int32(), pa.int64()), "long": (pa.int64(),),
    "float": (pa.float32(), pa.float64()), "double": (pa.float64(),), "string": (pa.string(),),
    "bytes": (pa.binary(),), "fixed": (pa.binary(),)}
_WIDTHS = {"float": 4, "double": 8}


@dataclass(frozen=True)
class _Field:
    kind: str                     # an Avro primitive type or "fixed"
    size: int                     # bytes of a fixed
    value_branch: int | None      # a union's branch holding the value (None: not a union)
    target: pa.DataType | None    # the Arrow type read; None: skipped


@dataclass(frozen=True)
class ColumnsPlan:
    """How records of one writer schema decode into the columns of `schema` (fields the writer
    lacks are null)."""
    fields: tuple[_Field, ...]
    names: tuple[str | None, ...]       # the wanted column each field fills (None: skipped)
    schema: pa.Schema


def _kind(avro: Any, read: bool) -> tuple[str, int] | None:
    """(primitive or "fixed", fixed size) of a field's (non-union) type; None for any other type,
    and for a logical type when the field is `read` (its values would convert otherwise)."""
    if isinstance(avro, str):
        return (avro, 0) if avro in _TARGETS and avro != "fixed" else None
    if isinstance(avro, dict) and not (read and avro.get("logicalType")):
        if avro.get("type") == "fixed" and isinstance(avro.get("size"), int):
            return "fixed", avro["size"]
        if avro.get("type") in _TARGETS and avro["type"] != "fixed":
            return avro["type"], 0
    return None


def columns_plan(writer: dict[str, Any], schema: pa.Schema) -> ColumnsPlan | None:
    """The plan for records of `writer` (a record schema, fastavro-parsed or plain) read as `schema`;
    None when a field is not flat or would not convert to its column's type as it is."""
    if writer.get("type") != "record":
        return None
    fields, names = [], []
    for f in writer.get("fields", ()):
        avro, branch = f["type"], None
        if isinstance(avro, list):
            if len(avro) != 2 or "null" not in avro:
                return None
            branch = 1 - avro.index("null")
            avro = avro[branch]
        target = schema.field(f["name"]).type if f["name"] in schema.names else None
        kind = _kind(avro, target is not None)
        if kind is None or (target is not None and target not in _TARGETS[kind[0]]):
            return None
        fields.append(_Field(kind[0], kind[1], branch, target))
        names.append(f["name"] if target is not None else None)
    return ColumnsPlan(tuple(fields), tuple(names), schema)


def record_spans(content: bytes) -> np.ndarray:
    """(start, end) of each record in an Avro data block's content (version, count, then each
    record's length and bytes), one row each; ValueError where the lengths run past the content."""
    count = struct.unpack_from(">i", content, 4)[0]
    starts, pos, size, unpack = [], 8, len(content), struct.Struct(">i").unpack_from
    for _ in range(count):
        length = unpack(content, pos)[0]
        pos += 4
        starts.append(pos)
        pos += length
        if length < 0 or pos > size:
            raise ValueError("an Avro record runs past its block")
    spans = np.empty((count, 2), np.int64)
    spans[:, 0] = starts
    spans[:-1, 1] = spans[1:, 0] - 4         # each record ends where the next one's length begins ...
    if count:
        spans[-1, 1] = pos                   # ... the last where the block's records do
    return spans


class _Records:
    """Every record's cursor over one buffer, moved field by field. A cursor may run past its
    record's end inside a varint (the check comes after the last field) but not before a gather."""

    def __init__(self, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray):
        self.buf, self.pos, self.ends = buf, starts.copy(), ends

    def varints(self, rows: np.ndarray) -> np.ndarray:
        """The zigzag longs at the cursors of `rows`, cursors moved past them."""
        pos = self.pos[rows]
        first = self.buf[pos]
        if not (first & 0x80).any():            # every value in one byte (lengths, union branches, small ints)
            self.pos[rows] = pos + 1
            raw = first.astype(np.int64)
            return (raw >> 1) ^ -(raw & 1)
        value = np.zeros(len(rows), np.uint64)
        used = np.zeros(len(rows), np.int64)
        going = np.ones(len(rows), bool)
        for k in range(_VARINT_MAX):
            byte = self.buf[pos + k].astype(np.uint64)
            value |= np.where(going, (byte & np.uint64(0x7F)) << np.uint64(7 * k), np.uint64(0))
            used += going
            going &= (byte & np.uint64(0x80)) != 0
            if not going.any():
                break
        else:
            raise ValueError("an Avro varint longer than 10 bytes")
        self.pos[rows] = pos + used
        return (value >> np.uint64(1)).astype(np.int64) ^ -(value & np.uint64(1)).astype(np.int64)

    def skip(self, rows: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Cursors of `rows` moved past `lengths` bytes; where they were."""
        starts = self.pos[rows]
        if (lengths < 0).any() or (starts + lengths > self.ends[rows]).any():
            raise ValueError("an Avro record ends inside a field")
        self.pos[rows] = starts + lengths
        return starts

    def gather(self, rows: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """The bytes of `lengths` at the cursors of `rows`, concatenated; cursors moved past them."""
        starts = self.skip(rows, lengths)
        first = np.cumsum(lengths) - lengths
        return self.buf[np.repeat(starts - first, lengths) + np.arange(int(lengths.sum()))]

    def widths(self, rows: np.ndarray, width: int) -> np.ndarray:
        """The `width` bytes at the cursors of `rows`, one row each; cursors moved past them."""
        starts = self.skip(rows, np.full(len(rows), width, np.int64))
        return self.buf[starts[:, None] + np.arange(width)]

    def check_ends(self) -> None:
        if (self.pos > self.ends).any():
            raise ValueError("an Avro record ends inside a field")


def _offsets(lengths: np.ndarray, rows: np.ndarray, n: int) -> np.ndarray:
    every = np.zeros(n + 1, np.int64)
    every[rows + 1] = lengths
    offsets = np.cumsum(every)
    if offsets[-1] >= 2 ** 31:
        raise ValueError("a column over 2 GiB")
    return offsets.astype(np.int32)


def _column(records: _Records, field: _Field, rows: np.ndarray, n: int) -> pa.Array | None:
    """The field's values at the rows that hold one (others null), or None for a skipped field."""
    kind, keep = field.kind, field.target is not None
    if kind == "boolean":
        values = records.widths(rows, 1)[:, 0]
        if not keep:
            return None
        out: np.ndarray = np.zeros(n, bool)
        out[rows] = values != 0
    elif kind in ("int", "long"):
        decoded = records.varints(rows)
        if not keep:
            return None
        if kind == "int" and ((decoded < -2 ** 31) | (decoded >= 2 ** 31)).any():
            raise ValueError("an Avro int out of range")
        out = np.zeros(n, np.int32 if kind == "int" else np.int64)
        out[rows] = decoded
    elif kind in _WIDTHS:
        width = _WIDTHS[kind]
        raw = records.widths(rows, width)
        if not keep:
            return None
        out = np.zeros(n, np.float32 if width == 4 else np.float64)
        out[rows] = raw.reshape(-1).view("<f4" if width == 4 else "<f8")
    else:
        lengths = np.full(len(rows), field.size, np.int64) if kind == "fixed" else records.varints(rows)
        if not keep:
            records.skip(rows, lengths)
            return None
        data = records.gather(rows, lengths)
        valid = None if len(rows) == n else pa.py_buffer(np.packbits(_mask(rows, n), bitorder="little"))
        array = pa.Array.from_buffers(pa.string() if kind == "string" else pa.binary(), n,
                                      [valid, pa.py_buffer(_offsets(lengths, rows, n)), pa.py_buffer(data)])
        array.validate(full=True)       # UTF-8, as a record-by-record decoder refuses other bytes
        return array
    mask = None if len(rows) == n else ~_mask(rows, n)
    return pa.array(out, mask=mask)


def _mask(rows: np.ndarray, n: int) -> np.ndarray:
    held = np.zeros(n, bool)
    held[rows] = True
    return held


def decode_columns(plan: ColumnsPlan, contents: list[bytes], spans: list[np.ndarray]) -> pa.Table:
    """The records of `contents` (data blocks' contents, each with its `record_spans`), in order,
    as a table of the plan's schema; ValueError for bytes that are not the writer schema's records."""
    offsets = np.cumsum([0, *(len(c) for c in contents)])
    bounds = np.concatenate([s + o for s, o in zip(spans, offsets)]) if spans else np.empty((0, 2), np.int64)
    buf = np.frombuffer(b"".join([*contents, _PAD.tobytes()]), np.uint8)
    n = len(bounds)
    records = _Records(buf, bounds[:, 0], bounds[:, 1])
    every = np.arange(n)
    columns: dict[str, pa.Array] = {}
    for field, name in zip(plan.fields, plan.names):
        rows = every
        if field.value_branch is not None:
            branch = records.varints(every)
            if ((branch != 0) & (branch != 1)).any():
                raise ValueError("an Avro union branch out of range")
            rows = np.flatnonzero(branch == field.value_branch)
        column = _column(records, field, rows, n)
        if column is not None and name is not None:
            columns[name] = column if column.type == field.target else column.cast(field.target)
    records.check_ends()
    return pa.table([columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in plan.schema],
                    schema=plan.schema)

"""Hudi's record index (the metadata table's `record_index` partition, seed RFC-08): record key ->
(partition, file group, instant), as Apache Hudi 0.15 keeps it. Pure conversions only.

The partition has a fixed number of file groups `record-index-0000-0`, `record-index-0001-0`, ...,
chosen when it is initialized (`file_group_count`); a key lives in file group
`file_group_index(key, count)` of the file groups sorted by id (Java's String.hashCode, as Hudi
computes it). A key's record is a HoodieMetadataRecord of type 5 whose HoodieRecordIndexInfo holds
the data partition, the file group id (a `<uuid>-<n>` id as the UUID's two 64-bit halves and
`n`; any other id as the string, encoding 1) and the writing instant in epoch milliseconds.

Per data instant Hudi records inserted keys and keys that moved to another file group (a new
record: the latest record of a key wins) and deleted keys (a delete block); an update in place
records nothing, so a key's instant stays the instant that inserted it.
"""
from __future__ import annotations

import functools
import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from tablespec.errors import HudiFormatError
from tablespec.hudi import keys
from tablespec.hudi.formats.logfile import delete_block
from tablespec.hudi.mdt.layout import LogAppend, Slice
from tablespec.hudi.mdt.records import data_block
from tablespec.hudi.timeline.instant import format_instant_time, parse_instant_time

RECORD_INDEX = "record_index"                 # the metadata table's partition (and its name in hoodie.properties)
RECORD_INDEX_TYPE = 5
FILE_ID_PREFIX = "record-index-"
UUID_ENCODING, RAW_ENCODING = 0, 1
MISSING_FILE_INDEX = -1                       # a bare 36-character UUID id has no `-<n>`
# Hudi's defaults sizing a new index, and the average stored size of one index record it assumes.
MIN_FILE_GROUPS = int(keys.RECORD_INDEX_MIN_FILE_GROUPS.default or 0)
MAX_FILE_GROUPS = int(keys.RECORD_INDEX_MAX_FILE_GROUPS.default or 0)
GROWTH_FACTOR = float(keys.RECORD_INDEX_GROWTH_FACTOR.default or 0)
MAX_FILE_GROUP_BYTES = int(keys.RECORD_INDEX_MAX_FILE_GROUP_BYTES.default or 0)
AVERAGE_RECORD_BYTES = 48


@dataclass(frozen=True)
class Location:
    """Where a record is: its data partition ("" when not partitioned), file group and the instant
    that wrote it there (17 digits: the index keeps milliseconds)."""
    partition: str
    file_id: str
    instant: str


def file_group_id(index: int) -> str:
    """The id of the record index's file group number `index`."""
    return f"{FILE_ID_PREFIX}{index:04d}-0"


def file_group_index(key: str, count: int) -> int:
    """The file group (0 .. count-1) holding `key`: Java's String.hashCode of the key (UTF-16 code
    units, 32-bit overflow), then abs(abs(h) % count) with Java's int semantics."""
    h = 0
    raw = key.encode("utf-16-be")
    for i in range(0, len(raw), 2):
        h = (31 * h + (raw[i] << 8 | raw[i + 1])) & 0xFFFFFFFF
    if h >= 1 << 31:
        h -= 1 << 32
    if h != -(1 << 31):                       # Math.abs(Integer.MIN_VALUE) stays negative
        h = abs(h)
    return abs(int(math.fmod(h, count)))


def file_group_indices(keys: Sequence[str], count: int,
                       ascii_keys: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """`file_group_index` of many keys at once (vectorized: a lookup hashes every key);
    `ascii_keys`: their `ascii_matrix`, when the caller has it."""
    if not keys:
        return np.zeros(0, dtype=np.int64)
    ascii_keys = ascii_keys or ascii_matrix(keys)
    if ascii_keys is not None:                       # one UTF-16 unit per byte: Horner's rule, column by column
        matrix, lengths = ascii_keys
        uniform = bool((lengths == matrix.shape[1]).all())
        hashes = np.zeros(len(matrix), np.uint32)          # uint32 wraps as Java's int does
        for column in range(matrix.shape[1]):
            step = hashes * np.uint32(31) + matrix[:, column]
            hashes = step if uniform else np.where(column < lengths, step, hashes)
        sums = hashes.astype(np.uint64)
    else:
        units = np.frombuffer("".join(keys).encode("utf-16-be"), dtype=">u2").astype(np.uint64)
        lengths = np.fromiter((len(k.encode("utf-16-be")) // 2 for k in keys), dtype=np.int64, count=len(keys))
        ends = np.cumsum(lengths)
        starts = ends - lengths
        exponent = np.repeat(ends, lengths) - 1 - np.arange(len(units), dtype=np.int64)     # 31 ** (len - 1 - i)
        powers = _powers(int(lengths.max(initial=0)))
        products = units * powers[exponent]                # uint64 wraps: the low 32 bits stay exact
        sums = np.zeros(len(keys), dtype=np.uint64)
        nonempty = lengths > 0
        if nonempty.any():
            sums[nonempty] = np.add.reduceat(products, starts[nonempty])
    h = (sums & np.uint64(0xFFFFFFFF)).astype(np.int64)
    h = np.where(h >= 1 << 31, h - (1 << 32), h)
    h = np.where(h == -(1 << 31), h, np.abs(h))
    return np.abs(np.fmod(h, count))


def ascii_matrix(keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """ASCII `keys` (none holding a NUL) as a byte matrix, one row per key zero-padded after it,
    and their lengths; None for other keys. Joined with NULs, so numpy finds
    the lengths (a Python loop over the keys is what lookups of 100k keys cannot afford)."""
    if not keys:
        return None
    joined = "\x00".join(keys)
    if not joined.isascii():
        return None
    buf = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
    ends = np.flatnonzero(buf == 0)
    if len(ends) != len(keys) - 1:
        return None
    starts = np.concatenate(([0], ends + 1))
    lengths = np.concatenate((ends, [len(buf)])) - starts
    width = max(1, int(lengths.max()))
    if (lengths == width).all():                               # one length: a view, no gather
        return np.concatenate((buf, np.zeros(1, np.uint8))).reshape(len(keys), width + 1)[:, :width], lengths
    columns = np.arange(width)
    take = np.clip(starts[:, None] + columns, 0, max(len(buf) - 1, 0))
    return np.where(columns < lengths[:, None], buf[take], 0).astype(np.uint8), lengths


def _powers(n: int) -> np.ndarray:
    out = np.ones(max(n, 1), dtype=np.uint64)
    for i in range(1, n):
        out[i] = (int(out[i - 1]) * 31) & 0xFFFFFFFF
    return out


def file_group_count(records: int, min_count: int = MIN_FILE_GROUPS, max_count: int = MAX_FILE_GROUPS,
                     growth_factor: float = GROWTH_FACTOR, max_bytes: int = MAX_FILE_GROUP_BYTES) -> int:
    """How many file groups Hudi gives a record index initialized with `records` keys."""
    if min_count == max_count and min_count != 0:
        return min_count
    expected = math.ceil(records * growth_factor)
    estimated = expected // (max_bytes // AVERAGE_RECORD_BYTES)
    if estimated >= max_count:
        return max_count
    return min_count if estimated <= min_count else max(1, estimated)


def instant_millis(instant: str) -> int:
    """An instant time (14 or 17 digits, UTC as tablespec writes it) as epoch milliseconds."""
    return int(parse_instant_time(instant).timestamp() * 1000 + 0.5)


@functools.lru_cache(maxsize=4096)
def instant_of_millis(millis: int) -> str:
    """Epoch milliseconds as a 17-digit instant time."""
    moment = datetime.fromtimestamp(millis / 1000, UTC).replace(microsecond=(millis % 1000) * 1000)
    return format_instant_time(moment)


def index_info(location: Location) -> dict[str, Any]:
    """The HoodieRecordIndexInfo of `location`: a `<uuid>-<n>` (or bare UUID) file id in encoding 0,
    any other in encoding 1."""
    millis = instant_millis(location.instant)
    file_id = location.file_id
    head, _, tail = file_id.rpartition("-") if len(file_id) != 36 else (file_id, "", str(MISSING_FILE_INDEX))
    try:
        uid, index = uuid.UUID(head), int(tail)
        if str(uid) != head or not tail.lstrip("-").isdigit():
            raise ValueError("not a canonical UUID")      # it would not read back as the same id
    except ValueError:
        return {"partitionName": location.partition, "fileIdHighBits": -1, "fileIdLowBits": -1, "fileIndex": -1,
                "fileId": file_id, "instantTime": millis, "fileIdEncoding": RAW_ENCODING}
    high, low = uid.int >> 64, uid.int & ((1 << 64) - 1)
    return {"partitionName": location.partition, "fileIdHighBits": _signed(high), "fileIdLowBits": _signed(low),
            "fileIndex": index, "fileId": "", "instantTime": millis, "fileIdEncoding": UUID_ENCODING}


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def index_record(key: str, location: Location) -> dict[str, Any]:
    """The HoodieMetadataRecord saying `key` is at `location`."""
    return {"key": key, "type": RECORD_INDEX_TYPE, "filesystemMetadata": None, "recordIndexMetadata": index_info(location)}


def location_of(record: Mapping[str, Any]) -> Location:
    """The location a record-index record gives (Hudi's getLocationFromRecordIndexInfo)."""
    info = record.get("recordIndexMetadata")
    if record.get("type") != RECORD_INDEX_TYPE or not info:
        raise HudiFormatError(f"record {record.get('key')!r} is not a record-index record (type {record.get('type')})")
    try:
        if info["fileIdEncoding"] == UUID_ENCODING:
            file_id = _uuid_file_id(info["fileIdHighBits"], info["fileIdLowBits"], info["fileIndex"])
        else:
            file_id = info["fileId"]
        return Location(info["partitionName"] or "", file_id, instant_of_millis(info["instantTime"]))
    except (KeyError, TypeError, ValueError) as e:   # a schema without the field, or a value of another type
        raise HudiFormatError(f"record {record.get('key')!r} is not a record-index record: no usable {e}") from None


@functools.lru_cache(maxsize=65536)
def _uuid_file_id(high: int, low: int, index: int) -> str:
    uid = uuid.UUID(int=((high % (1 << 64)) << 64) | (low % (1 << 64)))
    return str(uid) if index == MISSING_FILE_INDEX else f"{uid}-{index}"


# --- the stored bytes of an index record, without a generic Avro codec ---------------------------
# A record-index record under records.STORED_SCHEMA is, in Avro binary: the five meta fields (null,
# or in a base file `_hoodie_file_name`), the blanked key, type 5, three null unions, then the
# HoodieRecordIndexInfo (every union but the last field non-null); under Hudi 1.x's schema two nulls
# follow (`position`, SecondaryIndexMetadata). Lookups and builds handle
# millions of them: these two functions write and read that layout directly (tests check them
# against fastavro and against Hudi's bytes); anything else goes through the generic codec.

def _zigzag(value: int) -> bytes:
    n = (value << 1) ^ (value >> 63)
    n &= (1 << 64) - 1
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _text(value: str) -> bytes:
    raw = value.encode("utf-8")
    return _zigzag(len(raw)) + raw


_NULL_META = b"\x00" * 4
_HEAD = b"\x00" + _zigzag(RECORD_INDEX_TYPE) + b"\x00\x00\x00\x02"     # key "", type, 3 nulls, RLI present


_ONE_X_TAIL = b"\x00\x00"   # Hudi 1.x's schema: a null `position`, then a null SecondaryIndexMetadata


def encode_location(location: Location, file_name: str | None = None, one_x: bool = False) -> bytes:
    """The stored bytes of `location`'s index record (records.encode of `index_record`, under
    Hudi 0.15's schema or, `one_x`, 1.x's)."""
    info = index_info(location)
    return b"".join((
        _NULL_META, b"\x02" + _text(file_name) if file_name is not None else b"\x00", _HEAD,
        b"\x02", _text(info["partitionName"]), b"\x02", _zigzag(info["fileIdHighBits"]),
        b"\x02", _zigzag(info["fileIdLowBits"]), b"\x02", _zigzag(info["fileIndex"]),
        b"\x02", _text(info["fileId"]), b"\x02", _zigzag(info["instantTime"]), _zigzag(info["fileIdEncoding"]),
        _ONE_X_TAIL if one_x else b""))


def _read_long(data: bytes, pos: int) -> tuple[int, int]:
    b = data[pos]
    pos += 1
    n, shift = b & 0x7F, 7
    while b & 0x80:
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
    return (n >> 1) ^ -(n & 1), pos


def location_start(value: bytes) -> int | None:
    """Where the location part (the bytes after the type and its three null unions) of an index
    record's stored bytes starts, or None (another layout). Values that share the bytes before
    it read the same as their location parts do: a block's values are decoded by those."""
    try:
        pos = 0
        for field_no in range(6):                       # five meta fields (unions), then the key (blanked)
            length, pos = _read_long(value, pos)
            if field_no < 5 and length:
                length, pos = _read_long(value, pos)
            if length < 0:
                return None
            pos += length
    except IndexError:
        return None
    return pos + 5 if value[pos:pos + 5] == _HEAD[1:] else None


def decode_location(value: bytes) -> Location | None:
    """The location in an index record's stored bytes; None for bytes of another layout (a
    record of another type, a null field): the caller decodes those with the generic codec."""
    try:
        pos = 0
        for _ in range(5):                              # meta fields
            branch, pos = _read_long(value, pos)
            if branch:
                length, pos = _read_long(value, pos)
                pos += length
        length, pos = _read_long(value, pos)           # the key (blanked)
        pos += length
        if value[pos:pos + 5] != _HEAD[1:]:
            return None
        pos += 5
        fields: list[Any] = []
        for kind in "sllisl":
            if value[pos] != 2:
                return None
            pos += 1
            number, pos = _read_long(value, pos)
            if kind == "s":
                fields.append(value[pos:pos + number].decode("utf-8"))
                pos += number
            else:
                fields.append(number)
        encoding, pos = _read_long(value, pos)
    except (IndexError, UnicodeDecodeError):
        return None
    if pos != len(value) and value[pos:] != _ONE_X_TAIL:
        return None
    partition, high, low, index, file_id, millis = fields
    if encoding == UUID_ENCODING:
        file_id = _uuid_file_id(high, low, index)
    return Location(partition, file_id, instant_of_millis(millis))


def decode_locations(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[Location | None]:
    """`decode_location` of many location parts at once: part i is data[starts[i]:ends[i]] (numpy
    bytes), as `location_start` cuts it. Fields are read with numpy across all parts (a lookup of
    100k keys decodes tens of thousands); None for a part numpy does not settle (a long varint, a
    field out of bounds, bytes of another layout): the caller decodes that one with its whole value."""
    n = len(starts)
    if not n:
        return []
    last = len(data) - 1
    pos, bad = starts.astype(np.int64), np.zeros(n, bool)
    columns: list[np.ndarray] = []
    for kind in "sllisl":
        bad |= (pos >= ends) | (data[np.minimum(pos, last)] != 2)
        number, pos, wrong = _read_longs(data, pos + 1, ends)
        bad |= wrong
        if kind == "s":
            bad |= (number < 0) | (pos + number > ends)
            columns.append(pos.copy())
            pos = pos + np.maximum(number, 0)
        columns.append(number)
    encoding, pos, wrong = _read_longs(data, pos, ends)
    bad |= wrong
    rest = ends - pos
    tail_ok = (rest == 0) | ((rest == 2) & (data[np.minimum(pos, last)] == 0) & (data[np.minimum(pos + 1, last)] == 0))
    bad |= ~tail_ok
    raw = data.tobytes()
    part_at, part_len, high, low, index, file_at, file_len, millis = (c.tolist() for c in columns)
    out: list[Location | None] = []
    for i, (b, enc) in enumerate(zip(bad.tolist(), encoding.tolist())):
        if b:
            out.append(None)
            continue
        try:
            partition = raw[part_at[i]:part_at[i] + part_len[i]].decode("utf-8")
            file_id = raw[file_at[i]:file_at[i] + file_len[i]].decode("utf-8")
        except UnicodeDecodeError:
            out.append(None)
            continue
        if enc == UUID_ENCODING:
            file_id = _uuid_file_id(high[i], low[i], index[i])
        out.append(Location(partition, file_id, instant_of_millis(millis[i])))
    return out


def _read_longs(data: np.ndarray, pos: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Avro longs (zig-zag varints) at each of `pos`: their values, the positions after them, and
    which ran past their part's end or past 64 bits (`decode_location` reads those alone)."""
    last = len(data) - 1
    value = np.zeros(len(pos), np.uint64)
    going, wrong = np.ones(len(pos), bool), np.zeros(len(pos), bool)
    pos = pos.copy()
    for shift in range(0, 64, 7):
        wrong |= going & (pos >= ends)
        byte = data[np.minimum(pos, last)].astype(np.uint64)
        if shift == 63:                                    # the tenth byte holds the last bit, no more
            wrong |= going & (byte > 1)
        value |= np.where(going, (byte & np.uint64(0x7F)) << np.uint64(shift), np.uint64(0))
        pos += going
        going &= (byte & np.uint64(0x80)) != 0
        if not going.any():
            break
    wrong |= going
    signed = (value >> np.uint64(1)).astype(np.int64) ^ -(value & np.uint64(1)).astype(np.int64)
    return signed, pos, wrong


@dataclass
class RecordIndexChange:
    """What one data instant does to the record index: keys written to a new place (inserted,
    moved to another partition or file group) -> their location, and keys deleted. A key in both
    counts as written (Hudi's reduce keeps the insert of a key that moved)."""
    upserts: dict[str, Location] = field(default_factory=dict)
    deletes: set[str] = field(default_factory=set)

    @property
    def empty(self) -> bool:
        return not (self.upserts or self.deletes)

    def by_file_group(self, count: int) -> dict[int, tuple[list[tuple[str, dict[str, Any]]], list[str]]]:
        """File group index -> (its index records sorted by key, its deleted keys sorted)."""
        out: dict[int, tuple[list[tuple[str, dict[str, Any]]], list[str]]] = {}
        for key in sorted(self.upserts, key=str.encode):
            out.setdefault(file_group_index(key, count), ([], []))[0].append((key, index_record(key, self.upserts[key])))
        for key in sorted(self.deletes - set(self.upserts), key=str.encode):
            out.setdefault(file_group_index(key, count), ([], []))[1].append(key)
        return out


def by_file_group(entries: Sequence[tuple[str, Location]], count: int) -> list[list[tuple[str, Location]]]:
    """Each file group's (key, location) pairs, sorted by key, of a whole index: what
    initialization writes as base files."""
    groups: list[dict[str, Location]] = [{} for _ in range(count)]
    indices = file_group_indices([k for k, _ in entries], count).tolist()
    for (key, location), index in zip(entries, indices):
        groups[index][key] = location
    return [[(k, g[k]) for k in sorted(g, key=str.encode)] for g in groups]


@dataclass
class HashedChange:
    """What one data instant does to a metadata partition whose keys go to file groups as the
    record index's do (`column_stats`, `partition_stats`): records written, keys deleted."""
    records: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    group: Callable[[str, int], int] = file_group_index   # a key's file group (secondary indexes: by value)

    @property
    def empty(self) -> bool:
        return not (self.records or self.deletes)


def hashed_appends(slices: Sequence[Slice], instant: str, partition: str, change: HashedChange,
                   one_x: bool = False) -> list[LogAppend]:
    """The log files a deltacommit at `instant` appends to such a partition (its latest `slices`,
    sorted by file id): per file group touched (`change.group`), a data block of its records, then a
    delete block of its deleted keys, each sorted by key."""
    group = change.group
    groups: dict[int, tuple[list[tuple[str, Mapping[str, Any]]], list[str]]] = {}
    for key, record in sorted(change.records, key=lambda kv: kv[0].encode()):
        groups.setdefault(group(key, len(slices)), ([], []))[0].append((key, record))
    for key in sorted(set(change.deletes), key=str.encode):
        groups.setdefault(group(key, len(slices)), ([], []))[1].append(key)
    out = []
    for index, (records, deleted) in sorted(groups.items()):
        blocks = [data_block(instant, records, one_x)] if records else []
        if deleted:
            blocks.append(delete_block(instant, [(k, partition) for k in deleted]))
        out.append(LogAppend(slices[index], tuple(blocks), len(records) + len(deleted)))
    return out


def log_appends(slices: Sequence[Slice], instant: str, change: RecordIndexChange,
                one_x: bool = False) -> list[LogAppend]:
    """The log files a deltacommit at `instant` appends to the record index's file groups (their
    latest `slices`, sorted by file id) for `change`: per file group touched, a data block of its
    index records, then a delete block of its deleted keys, as Hudi's append handle writes them."""
    out = []
    for index, (records, deleted) in sorted(change.by_file_group(len(slices)).items()):
        blocks = [data_block(instant, records, one_x)] if records else []
        if deleted:
            blocks.append(delete_block(instant, [(k, RECORD_INDEX) for k in deleted]))
        out.append(LogAppend(slices[index], tuple(blocks), len(records) + len(deleted)))
    return out

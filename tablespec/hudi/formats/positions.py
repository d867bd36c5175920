"""Record positions in a log block's RECORD_POSITIONS header: the rows of the slice's base file
that the block's records update or delete, so a reader can merge by row number instead of by key.

The value is the Base64 of a 64-bit Roaring bitmap in its portable serialization (RoaringFormatSpec,
the 64-bit extension, as Apache Hudi 1.x writes it): the number of 32-bit buckets (uint64), then per
bucket, by ascending high 32 bits, those bits (uint32) and a standard 32-bit Roaring bitmap of the
low 32 bits. A 32-bit bitmap is a cookie, a descriptive header (per container: its high 16 bits and
cardinality - 1, uint16 each), an offset header (uint32 per container; left out when run containers
are present and there are fewer than four containers), then the containers: an array of uint16
values (up to 4096), a bitset of 8192 bytes, or runs (count, then start and length - 1 per run).
Little-endian throughout. Like Hudi's writer (which optimizes runs before serializing), a container
is written as runs when that is smaller, so the bytes equal Hudi's for the same positions.
"""
from __future__ import annotations

import base64
import struct
from collections.abc import Iterable

_COOKIE = 12346             # no run containers: the container count follows as a uint32
_RUN_COOKIE = 12347         # run containers: count - 1 in the cookie's high 16 bits, then a run flag bitset
_NO_OFFSET_THRESHOLD = 4    # with runs, the offset header is written from this many containers on
_ARRAY_MAX = 4096
_BITSET_BYTES = 8192


def _runs(values: list[int]) -> list[tuple[int, int]]:
    """Maximal runs of consecutive sorted `values` as (start, length - 1)."""
    runs: list[tuple[int, int]] = []
    for v in values:
        if runs and runs[-1][0] + runs[-1][1] + 1 == v:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((v, 0))
    return runs


def _container(values: list[int]) -> tuple[bool, bytes]:
    """(is a run container, its bytes) for sorted 16-bit `values`: the smallest form."""
    runs = _runs(values)
    plain = 2 * len(values) if len(values) <= _ARRAY_MAX else _BITSET_BYTES
    if 2 + 4 * len(runs) < plain:
        return True, struct.pack(f"<H{2 * len(runs)}H", len(runs), *(x for r in runs for x in r))
    if len(values) <= _ARRAY_MAX:
        return False, struct.pack(f"<{len(values)}H", *values)
    bits = bytearray(_BITSET_BYTES)
    for v in values:
        bits[v >> 3] |= 1 << (v & 7)
    return False, bytes(bits)


def _bitmap32(values: list[int]) -> bytes:
    """The portable serialization of a 32-bit Roaring bitmap of sorted `values`."""
    by_key: dict[int, list[int]] = {}
    for v in values:
        by_key.setdefault(v >> 16, []).append(v & 0xFFFF)
    containers = [(key, len(low), *_container(low)) for key, low in by_key.items()]
    n = len(containers)
    has_runs = any(run for _, _, run, _ in containers)
    if has_runs:
        flags = bytearray((n + 7) // 8)
        for i, (_, _, run, _) in enumerate(containers):
            if run:
                flags[i >> 3] |= 1 << (i & 7)
        head = struct.pack("<I", _RUN_COOKIE | ((n - 1) << 16)) + bytes(flags)
    else:
        head = struct.pack("<II", _COOKIE, n)
    head += b"".join(struct.pack("<HH", key, count - 1) for key, count, _, _ in containers)
    if not has_runs or n >= _NO_OFFSET_THRESHOLD:
        offset = len(head) + 4 * n
        for _, _, _, body in containers:
            head += struct.pack("<I", offset)
            offset += len(body)
    return head + b"".join(body for _, _, _, body in containers)


def encode_positions(positions: Iterable[int]) -> str:
    """The RECORD_POSITIONS header value of `positions` (row numbers in a base file, >= 0)."""
    by_high: dict[int, list[int]] = {}
    for p in sorted(set(positions)):
        by_high.setdefault(p >> 32, []).append(p & 0xFFFFFFFF)
    out = [struct.pack("<Q", len(by_high))]
    for high, low in by_high.items():
        out.append(struct.pack("<I", high) + _bitmap32(low))
    return base64.b64encode(b"".join(out)).decode("ascii")

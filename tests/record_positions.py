"""A reader of RECORD_POSITIONS header values (the 64-bit Roaring bitmap `encode_positions`
writes; its layout is described there), for tests: tablespec's own readers merge by key and never
decode positions, so the decoder lives with the tests that check what the writers wrote."""
from __future__ import annotations

import base64
import struct

_COOKIE, _RUN_COOKIE, _NO_OFFSET_THRESHOLD, _ARRAY_MAX, _BITSET_BYTES = 12346, 12347, 4, 4096, 8192


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        assert self.pos + size <= len(self.data), "RECORD_POSITIONS header is truncated"
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return values


def _read_bitmap32(r: _Reader) -> list[int]:
    (cookie,) = r.take("<I")
    if cookie & 0xFFFF == _RUN_COOKIE:
        n = (cookie >> 16) + 1
        flags = r.take(f"<{(n + 7) // 8}B")
        runs = [bool(flags[i >> 3] >> (i & 7) & 1) for i in range(n)]
    else:
        assert cookie == _COOKIE, f"RECORD_POSITIONS header has no Roaring bitmap cookie ({cookie})"
        (n,) = r.take("<I")
        runs = [False] * n
    header = [r.take("<HH") for _ in range(n)]
    if not any(runs) or n >= _NO_OFFSET_THRESHOLD:
        r.take(f"<{n}I")                       # offsets: the containers follow in order anyway
    values: list[int] = []
    for (key, count_less_one), run in zip(header, runs):
        base, count = key << 16, count_less_one + 1
        if run:
            (nruns,) = r.take("<H")
            pairs = r.take(f"<{2 * nruns}H")
            values += [base + v for start, length in zip(pairs[::2], pairs[1::2])
                       for v in range(start, start + length + 1)]
        elif count <= _ARRAY_MAX:
            values += [base + v for v in r.take(f"<{count}H")]
        else:
            bits = r.take(f"<{_BITSET_BYTES}B")
            values += [base + (i << 3) + b for i, byte in enumerate(bits) if byte for b in range(8) if byte >> b & 1]
    return values


def decode_positions(value: str) -> list[int]:
    """The sorted positions a RECORD_POSITIONS header value holds."""
    r = _Reader(base64.b64decode(value, validate=True))
    (buckets,) = r.take("<Q")
    positions: list[int] = []
    for _ in range(buckets):
        (high,) = r.take("<I")
        positions += [(high << 32) | low for low in _read_bitmap32(r)]
    assert r.pos == len(r.data), "RECORD_POSITIONS header has bytes after its bitmap"
    return positions

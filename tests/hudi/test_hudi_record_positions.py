"""The RECORD_POSITIONS header's 64-bit Roaring bitmap: the values Apache Hudi 1.2 wrote (measured on
the blocks of SIMPLE and BLOOM deltacommits it wrote) decode to the rows of their keys in the base
file, and re-encode to the same text; every container kind and several 32-bit buckets round-trip."""
from __future__ import annotations

import base64
import struct

import pytest
from record_positions import decode_positions

from tablespec.hudi.formats.positions import encode_positions

# header values of Hudi 1.2's blocks, with the rows of the block's keys in its base file
HUDI_1_2 = {"AQAAAAAAAAAAAAAAOjAAAAEAAAAAAAEAEAAAAAgAFgA=": [8, 22],
            "AQAAAAAAAAAAAAAAOjAAAAEAAAAAAAEAEAAAAAAAFgA=": [0, 22],
            "AQAAAAAAAAAAAAAAOjAAAAEAAAAAAAAAEAAAABMA": [19]}


@pytest.mark.parametrize("value", sorted(HUDI_1_2))
def test_hudi_1_2s_positions_decode_and_encode_to_the_same_text(value):
    assert decode_positions(value) == HUDI_1_2[value]
    assert encode_positions(reversed(HUDI_1_2[value])) == value


@pytest.mark.parametrize("positions", [
    list(range(3, 40)),                            # one run: a run container (smaller than the array)
    [*range(0, 10_000, 2), 70_000],                # a bitset container, then an array one
    [*range(5), 9, *range(70_000, 70_100), 140_000, 200_000, 300_001],   # runs among four+ containers: offsets
    [7, 2**32 + 1, 2**32 + 2, 5 * 2**32],          # three 32-bit buckets
])
def test_every_container_kind_round_trips(positions):
    assert decode_positions(encode_positions(positions)) == sorted(positions)


def test_a_run_container_is_written_when_smaller():
    raw = base64.b64decode(encode_positions(range(100)))
    cookie, = struct.unpack_from("<I", raw, 12)
    assert cookie & 0xFFFF == 12347 and len(raw) == 8 + 4 + 4 + 1 + 4 + 2 + 4

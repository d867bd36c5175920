"""Clustering row orders: linear sort, Z-order and Hilbert curve over rank-scaled columns."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from tablespec.arrow.layout import hilbert_values, layout_indices, z_values


def grid(dims: int, bits: int) -> np.ndarray:
    side = 2 ** bits
    return np.array(np.meshgrid(*[np.arange(side)] * dims, indexing="ij")).reshape(dims, -1).astype(np.uint64)


@pytest.mark.parametrize("dims, bits", [(2, 1), (2, 4), (3, 3), (4, 2)])
def test_hilbert_visits_every_cell_once_through_neighbours(dims, bits):
    points = grid(dims, bits)
    index = hilbert_values(list(points), bits)
    assert sorted(index.tolist()) == list(range(2 ** (dims * bits)))
    path = points[:, np.argsort(index)].astype(int)
    assert set(np.abs(np.diff(path, axis=1)).sum(axis=0).tolist()) == {1}  # each step moves to a neighbour


def test_z_values_interleave_bits_first_column_leading():
    x, y = np.array([0, 0, 1, 1, 2], np.uint64), np.array([0, 1, 0, 1, 0], np.uint64)
    assert z_values([x, y], 2).tolist() == [0, 1, 2, 3, 8]


def test_layouts_order_rows_nulls_first():
    t = pa.table({"a": [3, None, 1, 2], "b": [1.0, 2.0, None, 0.5], "k": ["w", "x", "y", "z"]})
    assert layout_indices(t, "SORT", ["a", "b"], "k").to_pylist() == [1, 2, 3, 0]
    for strategy in ("ZORDER", "HILBERT"):
        order = layout_indices(t, strategy, ["a", "b"], "k").to_pylist()
        assert sorted(order) == [0, 1, 2, 3] and order[-1] in (0, 3)  # the far corner (a=3 or a=2,b=.5) comes last


def test_curve_orders_make_tight_blocks():
    rng = np.random.default_rng(7)
    t = pa.table({"a": rng.integers(0, 10**9, 4096), "b": rng.random(4096), "k": [f"{i}" for i in range(4096)]})
    for strategy in ("ZORDER", "HILBERT"):
        ordered = t.take(layout_indices(t, strategy, ["a", "b"], "k"))
        blocks = [ordered.slice(i, 256) for i in range(0, 4096, 256)]
        area = np.mean([(np.ptp(b["a"].to_numpy()) / 1e9) * np.ptp(b["b"].to_numpy()) for b in blocks])
        assert area < 0.2  # 16 blocks of a random unit square: each covers a small box, not the whole square

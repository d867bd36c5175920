"""Row orders a clustering lays files out in: linear sort, Z-order and Hilbert curve.

SORT orders by the sort columns (nulls first), ties by record key. ZORDER and HILBERT map each
row's sort-column values to a point on a space-filling curve and order by its position: each
column is first replaced by its dense rank among the rows (nulls first), scaled to the same
number of bits, so columns of any orderable type and of any value spread weigh equally (the
rank-based normalisation layout optimisers use, since raw values of different columns have no
common scale). Z-order interleaves the bits; the Hilbert index (Skilling's transpose algorithm)
keeps consecutive positions adjacent in space, which gives tighter per-file ranges at the edges
of Z-order's jumps. All of it is vectorised numpy over the rows of one clustering group, with no
more passes than needed (a clustering's cost is mostly here and in parquet writing): ranks of
numeric columns by one numpy sort, bits spread a byte at a time through a table, and ties of the
curve (rows equal in every sort column) broken by record key among those rows only.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_CURVE = "_ts_curve"


def layout_indices(table: pa.Table, strategy: str, columns: list[str], key: str, map_=map) -> pa.Array:
    """The order of `table`'s rows under `strategy` (SORT, ZORDER or HILBERT) on `columns`;
    `map_` (e.g. a thread pool's) ranks the columns, side by side if it can (numpy sorts release the GIL)."""
    if strategy == "SORT":
        keys = [(c, "ascending", "at_start") for c in columns] + [(key, "ascending", "at_start")]
        return pc.sort_indices(table, sort_keys=keys)
    bits = max(1, min(32, 64 // len(columns)))
    coords = list(map_(lambda c: _scaled_ranks(table.column(c), bits), columns))
    curve = z_values(coords, bits) if strategy == "ZORDER" else hilbert_values(coords, bits)
    return pa.array(_curve_order(curve, table.column(key)), pa.uint64())


def _curve_order(curve: np.ndarray, keys: pa.ChunkedArray) -> np.ndarray:
    """Row order by (curve, key): a stable sort by curve, then each run of equal positions by key."""
    order = np.argsort(curve, kind="stable")
    ranked = curve[order]
    tied = np.zeros(len(order), bool)
    same = ranked[1:] == ranked[:-1]
    tied[1:] |= same
    tied[:-1] |= same
    if tied.any():
        rows = order[tied]  # runs of equal curve positions, in curve order
        sub = pa.table({_CURVE: pa.array(curve[rows]), "k": keys.take(pa.array(rows))})
        order[tied] = rows[np.asarray(pc.sort_indices(sub, sort_keys=[(_CURVE, "ascending"), ("k", "ascending")]))]
    return order


def _scaled_ranks(column: pa.ChunkedArray, bits: int) -> np.ndarray:
    """Dense ranks (nulls first, from 0) stretched over [0, 2**bits - 1]."""
    ranks = _dense_ranks(column)
    top = ranks.max() if len(ranks) else 0
    if top <= 0:
        return np.zeros(len(ranks), np.uint64)
    return np.floor(ranks / top * (2 ** bits - 1)).astype(np.uint64)


def _dense_ranks(column: pa.ChunkedArray) -> np.ndarray:
    """Dense ranks from 1 of the values, 0 for nulls (float64)."""
    t = column.type
    numeric = pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t) or pa.types.is_boolean(t)
    if numeric and not (pa.types.is_floating(t) and pc.any(pc.is_nan(column)).as_py()):
        ranks = np.zeros(len(column), np.float64)
        valid = np.asarray(column.is_valid()) if column.null_count else slice(None)
        values = column.drop_null().to_numpy(zero_copy_only=False)
        ranks[valid] = np.unique(values, return_inverse=True)[1] + 1  # -0.0 and 0.0 tie, as in pc.rank
        return ranks
    ranks = np.asarray(pc.rank(column, tiebreaker="dense")).astype(np.float64)  # 1.., nulls last
    ranks[np.asarray(column.is_null())] = 0
    return ranks


def _spread_table(n: int) -> np.ndarray:
    """For each byte value, its 8 bits moved `n` apart (bit j to bit j * n), within 64 bits."""
    return np.array([sum(((v >> j) & 1) << (j * n) for j in range(8)) & (2**64 - 1) for v in range(256)], np.uint64)


def z_values(coords: list[np.ndarray], bits: int) -> np.ndarray:
    """Bit interleaving, most significant bit first, the first column leading at each level:
    bit b of column i lands at b * n + (n - 1 - i) (bits past 64 fall off)."""
    n = len(coords)
    spread = _spread_table(n)
    out = np.zeros(len(coords[0]), np.uint64)
    for i, x in enumerate(coords):
        x = x & np.uint64(2**bits - 1)
        for low in range(0, bits, 8):
            shift = low * n + (n - 1 - i)
            if shift < 64:
                out |= spread[(x >> np.uint64(low)) & np.uint64(0xFF)] << np.uint64(shift)
    return out


def hilbert_values(coords: list[np.ndarray], bits: int) -> np.ndarray:
    """Position on the `len(coords)`-dimensional Hilbert curve of order `bits`."""
    x = [c.astype(np.uint64).copy() for c in coords]
    n = len(x)
    top = np.uint64(1) << np.uint64(bits - 1)
    q = top
    while q > 1:  # undo excess work (inverse of the transpose's rotations/reflections)
        p = q - np.uint64(1)
        for i in range(n):
            high = (x[i] & q) != 0
            x[0] = np.where(high, x[0] ^ p, x[0])
            t = np.where(high, np.uint64(0), (x[0] ^ x[i]) & p)
            x[0] ^= t
            x[i] ^= t
        q >>= np.uint64(1)
    for i in range(1, n):  # Gray encode
        x[i] ^= x[i - 1]
    t = np.zeros_like(x[0])
    q = top
    while q > 1:
        t = np.where((x[n - 1] & q) != 0, t ^ (q - np.uint64(1)), t)
        q >>= np.uint64(1)
    x = [xi ^ t for xi in x]
    return z_values(x, bits)  # the transposed index, read out bit level by bit level

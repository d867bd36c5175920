"""Java's `String.hashCode()` / `List<String>.hashCode()` over Arrow arrays, vectorised.

The bucket index must send a key to the bucket a Spark or Flink Hudi writer would pick:
`(hashKeys.hashCode() & Integer.MAX_VALUE) % numBuckets`, where `hashKeys` is a Java
`List<String>`. Java hashes strings over UTF-16 code units, so UTF-8 bytes are decoded to
code units (a character outside the BMP becomes a surrogate pair) before hashing.

Both hashes are the polynomial `sum(x[i] * 31**(n-1-i))` (plus `31**n` for a list, which
folds from 1), computed mod 2**32: numpy's uint32 arithmetic wraps exactly like Java's int.
Each row's sum is one `np.add.reduceat` segment; no Python loop runs per row.

Nulls: a null string hashes to 0 — what `List.hashCode()` adds for a null element (Hudi
hashes a null field of a complex key as a null list element, see
`hash_values_from_record_keys`).
"""
from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tablespec.hudi.keygen import EMPTY_PLACEHOLDER, NULL_PLACEHOLDER

INT_MAX = 0x7FFFFFFF
_SLICE_BYTES = 1 << 22  # UTF-8 bytes hashed per numpy pass: bounds temporary memory
_INV31 = pow(31, -1, 1 << 32)  # 31 is odd, so it has an inverse mod 2**32
_POW31 = np.ones(1, dtype=np.uint32)
_INVPOW31 = np.ones(1, dtype=np.uint32)


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(31**k, 31**-k) mod 2**32 for k in 0..n, cached and grown on demand."""
    global _POW31, _INVPOW31
    if len(_POW31) <= n:
        size = max(n + 1, 2 * len(_POW31), _SLICE_BYTES + 1)
        _POW31 = np.cumprod(np.r_[1, np.full(size - 1, 31)].astype(np.uint32), dtype=np.uint32)
        _INVPOW31 = np.cumprod(np.r_[1, np.full(size - 1, _INV31)].astype(np.uint32), dtype=np.uint32)
    return _POW31, _INVPOW31


def _as_chunks(arr) -> list[pa.Array]:
    if isinstance(arr, pa.ChunkedArray):
        return arr.chunks or [pa.array([], arr.type)]
    if not isinstance(arr, pa.Array):
        arr = pa.array(arr, pa.string())
    return [arr]


def _string_chunk(arr: pa.Array) -> pa.Array:
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        return arr
    if pa.types.is_dictionary(arr.type):
        return _string_chunk(arr.dictionary_decode())
    if pa.types.is_string_view(arr.type):
        return arr.cast(pa.large_string())
    raise TypeError(f"Java string hashing needs a string array, got {arr.type}")


def _byte_offsets(arr: pa.Array) -> np.ndarray:
    """The n+1 UTF-8 byte offsets of a (possibly sliced) string array, as int64."""
    offsets_buf = arr.buffers()[1]
    if offsets_buf is None:
        return np.zeros(len(arr) + 1, np.int64)
    offset_type = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    return np.frombuffer(offsets_buf, dtype=offset_type)[arr.offset: arr.offset + len(arr) + 1].astype(np.int64)


def _decode_utf8(data: np.ndarray, lead: np.ndarray, unit_pos: np.ndarray) -> np.ndarray:
    """UTF-16 code units of UTF-8 bytes, one code point per lead byte (robust to junk bytes)."""
    starts = np.flatnonzero(lead)
    padded = np.concatenate([data, np.zeros(3, np.uint8)]).astype(np.uint32)
    b0 = padded[starts]
    b1, b2, b3 = (padded[starts + k] & 0x3F for k in (1, 2, 3))
    cp = np.where(b0 < 0x80, b0,
         np.where(b0 < 0xE0, ((b0 & 0x1F) << 6) | b1,
         np.where(b0 < 0xF0, ((b0 & 0x0F) << 12) | (b1 << 6) | b2,
                  ((b0 & 0x07) << 18) | (b1 << 12) | (b2 << 6) | b3)))
    units = np.empty(unit_pos[-1], dtype=np.uint32)
    pos = unit_pos[starts]
    bmp = cp < 0x10000
    units[pos[bmp]] = cp[bmp]
    supp = cp[~bmp] - 0x10000
    units[pos[~bmp]] = 0xD800 + (supp >> 10)
    units[pos[~bmp] + 1] = 0xDC00 + (supp & 0x3FF)
    return units


def _utf16_units(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(code units, per-row unit offsets) of a string array: UTF-8 decoded to UTF-16."""
    data_buf = arr.buffers()[2]
    offsets = _byte_offsets(arr)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    data = data[offsets[0]: offsets[-1]]
    offsets = offsets - offsets[0]
    if not (data >= 0x80).any():  # ASCII: one byte is one code unit
        return data, offsets
    lead = (data & 0xC0) != 0x80
    units_per_byte = lead.astype(np.int64) + (data >= 0xF0)  # 4-byte sequences give a surrogate pair
    unit_pos = np.concatenate([[0], np.cumsum(units_per_byte)])
    try:  # the codecs are C loops; valid UTF-8 (what Arrow promises) takes this path
        units = np.frombuffer(data.tobytes().decode("utf-8").encode("utf-16-le"), dtype="<u2")
    except UnicodeDecodeError:  # e.g. stray bytes in a null slot: decode per code point
        units = _decode_utf8(data, lead, unit_pos)
    if len(units) != unit_pos[-1]:
        units = _decode_utf8(data, lead, unit_pos)
    return units, unit_pos[offsets]


def _poly_hash(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per segment `values[s:e]`: sum(v[i] * 31**(e-1-i)) mod 2**32, as uint32.

    Written as 31**(e-1) * sum(v[i] * 31**-i): the inner sum needs no per-element gather, and
    each segment's sum is one `np.add.reduceat` slot.
    """
    n = len(offsets) - 1
    out = np.zeros(n, dtype=np.uint32)
    total = int(offsets[-1]) if n else 0
    if total == 0:
        return out
    pow31, invpow31 = _powers(total)
    weighted = values[:total].astype(np.uint32) * invpow31[:total]
    nonempty = offsets[1:] > offsets[:-1]
    sums = np.add.reduceat(weighted, offsets[:-1][nonempty], dtype=np.uint32)
    out[nonempty] = sums * pow31[offsets[1:][nonempty] - 1]
    return out


def _row_slices(arr: pa.Array):
    """Slices of `arr` holding about _SLICE_BYTES of string data each (at least one row)."""
    offsets = _byte_offsets(arr)
    row = 0
    while row < len(arr):
        stop = int(np.searchsorted(offsets, offsets[row] + _SLICE_BYTES, side="right")) - 1
        stop = min(max(stop, row + 1), len(arr))
        yield arr.slice(row, stop - row)
        row = stop


def _string_hash_u32(arr) -> np.ndarray:
    parts = []
    for chunk in _as_chunks(arr):
        for piece in _row_slices(_string_chunk(chunk)):
            h = _poly_hash(*_utf16_units(piece))
            if piece.null_count:
                h[np.asarray(piece.is_null())] = 0
            parts.append(h)
    return np.concatenate(parts) if parts else np.zeros(0, np.uint32)


def java_string_hash(arr) -> np.ndarray:
    """`String.hashCode()` of every element (int32); null elements give 0."""
    return _string_hash_u32(arr).view(np.int32)


def java_list_hash(columns) -> np.ndarray:
    """`List.of(c1[i], c2[i], ...).hashCode()` per row (int32); a null element adds 0."""
    if not columns:
        raise ValueError("a hash list needs at least one column")
    h = np.ones(len(columns[0]), dtype=np.uint32)
    for col in columns:
        if len(col) != len(h):
            raise ValueError("hash columns differ in length")
        h = h * np.uint32(31) + _string_hash_u32(col)
    return h.view(np.int32)


def java_list_hash_of_lists(lists) -> np.ndarray:
    """`List<String>.hashCode()` of each row of a list<string> array (lists may differ in length)."""
    parts = []
    for chunk in _as_chunks(lists):
        chunk = chunk.cast(pa.list_(pa.string())) if not pa.types.is_list(chunk.type) else chunk
        offsets = np.asarray(chunk.offsets, dtype=np.int64)
        offsets = offsets - offsets[0]
        element_hashes = _string_hash_u32(chunk.flatten())  # flatten() honours slicing
        lengths = np.diff(offsets)
        parts.append(_poly_hash(element_hashes, offsets) + _powers(int(lengths.max(initial=0)))[0][lengths])
    return (np.concatenate(parts) if parts else np.zeros(0, np.uint32)).view(np.int32)


def bucket_of_hash(list_hash: np.ndarray, num_buckets: int) -> np.ndarray:
    """`(hash & Integer.MAX_VALUE) % numBuckets` (int32)."""
    if num_buckets <= 0:
        raise ValueError(f"number of buckets must be positive, got {num_buckets}")
    return ((list_hash.view(np.uint32) & INT_MAX) % num_buckets).astype(np.int32)


def bucket_ids(hash_columns, num_buckets: int) -> np.ndarray:
    """Hudi's bucket of each row, hashing the list of the hash-field values (as strings)."""
    return bucket_of_hash(java_list_hash(hash_columns), num_buckets)


def hash_values_from_record_keys(record_keys, hash_fields: list[str]) -> pa.ListArray:
    """The `List<String>` Hudi (0.13-0.15, table version 6) hashes for each record key.

    Hudi does not hash field values but re-parses the stored record key
    (`KeyGenUtils.extractRecordKeysByFields`): the key is split on `,` (Java `split`, so
    trailing empty parts vanish), each part on its first `:`; a part without `:` is kept
    as is, a `name:value` part only if `name` is a hash field, and the values `__null__` /
    `__empty__` become null / "". Values come in record-key order. A simple key without `:`
    therefore hashes as `[key]`; a key whose values contain `,` or `:` hashes as Hudi's
    parser splits it, which is what a Hudi writer does too, so both pick the same bucket.
    """
    chunks = [_string_chunk(c) for c in _as_chunks(record_keys)]
    keys = pa.concat_arrays(chunks) if len(chunks) != 1 else chunks[0]
    if keys.null_count:
        raise ValueError("record keys must not be null")
    n = len(keys)
    parts = pc.split_pattern(keys, ",")
    flat = parts.flatten()
    parent = np.asarray(pc.list_parent_indices(parts), dtype=np.int64)
    starts = np.asarray(parts.offsets, dtype=np.int64)[:-1] - parts.offsets[0].as_py()
    # Java's split drops trailing empty parts, but only when the separator occurs at all.
    index = np.arange(len(flat))
    nonempty_index = np.where(np.asarray(pc.binary_length(flat)) > 0, index, -1)
    last_nonempty = np.maximum.reduceat(nonempty_index, starts) if n else np.zeros(0, np.int64)
    has_comma = np.diff(np.append(starts, len(flat))) > 1
    keep = ~has_comma[parent] | (index <= last_nonempty[parent])

    pair = pc.extract_regex(flat, r"(?s)^(?P<name>[^:]*):(?P<value>.*)$")
    has_colon = np.asarray(pair.is_valid())
    name = pc.struct_field(pair, "name")
    value = pc.struct_field(pair, "value")
    keep &= ~has_colon | np.asarray(pc.fill_null(pc.is_in(name, pa.array(hash_fields, pa.string())), False))
    value = pc.if_else(pc.equal(value, EMPTY_PLACEHOLDER), "", value)
    value = pc.if_else(pc.equal(value, NULL_PLACEHOLDER), pa.scalar(None, pa.string()), value)
    element = pc.if_else(pa.array(has_colon), value, flat)

    kept = np.flatnonzero(keep)
    counts = np.bincount(parent[kept], minlength=n)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), element.take(pa.array(kept)))


def record_key_hashes(record_keys, hash_fields: list[str]) -> np.ndarray:
    """The `List<String>` hash a Hudi writer computes for each record key (int32)."""
    if not pc.any(pc.match_substring_regex(record_keys, "[,:]")).as_py():  # simple keys: [key]
        return java_list_hash([record_keys])
    return java_list_hash_of_lists(hash_values_from_record_keys(record_keys, hash_fields))


def bucket_ids_for_record_keys(record_keys, hash_fields: list[str], num_buckets) -> np.ndarray:
    """The bucket a Hudi writer gives each record key (see `hash_values_from_record_keys`);
    `num_buckets` may be one count or an array of per-row counts (per-partition buckets)."""
    hashes = record_key_hashes(record_keys, hash_fields)
    if np.isscalar(num_buckets):
        return bucket_of_hash(hashes, int(num_buckets))  # type: ignore[arg-type]  # a scalar count
    return ((hashes.view(np.uint32) & INT_MAX) % np.asarray(num_buckets, dtype=np.uint32)).astype(np.int32)


def bench(rows: int = 5_000_000, seed: int = 7) -> dict[str, float]:
    """Print and return rows/s of `java_string_hash` and `bucket_ids` over random ASCII and
    non-ASCII keys (a micro benchmark for the closing note, not a test)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 10**12, rows)
    ascii_keys = pc.binary_join_element_wise("order-", pc.cast(pa.array(ids), pa.string()), "")
    mixed_keys = pc.binary_join_element_wise("Zürich-😀-", pc.cast(pa.array(ids), pa.string()), "")
    java_string_hash(ascii_keys.slice(0, 10))  # warm-up: builds the power tables once per process
    results = {}
    for label, keys in (("ascii", ascii_keys), ("non-ascii", mixed_keys)):
        t0 = time.perf_counter()
        java_string_hash(keys)
        t1 = time.perf_counter()
        bucket_ids([keys], 64)
        t2 = time.perf_counter()
        results[f"string_hash_{label}"] = rows / (t1 - t0)
        results[f"bucket_ids_{label}"] = rows / (t2 - t1)
    complex_keys = pc.binary_join_element_wise("id:", pc.cast(pa.array(ids), pa.string()), ",name:x", "")
    t0 = time.perf_counter()
    bucket_ids_for_record_keys(complex_keys, ["id"], 64)
    results["bucket_ids_for_complex_record_keys"] = rows / (time.perf_counter() - t0)
    for name, rate in results.items():
        print(f"{name:40s} {rate / 1e6:8.2f} M rows/s  ({rows:,} rows)")
    return results


if __name__ == "__main__":
    bench()

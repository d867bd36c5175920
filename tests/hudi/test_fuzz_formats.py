"""Fuzzing the metadata table's format readers (HFile, log blocks, the record index and `files`
readers) with single-byte flips and truncations of real files tablespec wrote: every read gives
the same entries, or a one-line TablespecError naming the file, or (a listing that differs)
`damage.find` reports the partition, so `plan` proposes its rebuild. Never another exception
type, never a wrong entry. Bounded: a few hundred reads of a tiny table, written once."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hudi_mdt import ST, _commit
from test_hudi_mdt_damage import NEW_KEYS, files_log, indexed_with_upserts

from tablespec.errors import TablespecError
from tablespec.hudi.formats.naming import new_file_id
from tablespec.hudi.mdt import damage, layout, reader
from tablespec.hudi.mdt import record_index_reader as rli_reader
from tablespec.hudi.mdt.record_index import RECORD_INDEX
from tablespec.hudi.table import HudiTable

FUZZ = settings(max_examples=60, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A tiny table with a record index (a base file per file group, a completed deltacommit's
    log file) and a `files` partition (a base HFile, log files), and what they read as."""
    base, expected, ri_log = indexed_with_upserts(tmp_path_factory.mktemp("fuzz"))
    _commit(base, {("d", new_file_id()): 20})
    table = HudiTable.open(base)
    slices, _ = rli_reader.slices(table)
    ri_base = Path(layout.partition_path(base, RECORD_INDEX)) / slices[0].base_file
    current = layout.latest_slice(ST, base, layout.completions(layout.timeline(ST, base)))
    files = {"record index log": ri_log, "record index hfile": ri_base, "files log": files_log(base),
             "files hfile": Path(layout.partition_path(base)) / current.base_file}
    return base, expected, reader.listing(table), files


def _damaged(path: Path, data: bytes, cut: int | None, at: int, mask: int) -> None:
    if cut is not None:
        path.write_bytes(data[:cut % len(data)])
        return
    changed = bytearray(data)
    changed[at % len(data)] ^= mask
    path.write_bytes(bytes(changed))


def _outcome(base: str, path: Path, read, truth) -> str:
    rli_reader.clear_cache()
    try:
        got = read(HudiTable.open(base))
    except TablespecError as e:
        assert path.name in str(e) and "\n" not in str(e), str(e)
        return "refused"
    if got == truth:
        return "same"
    found = damage.find(HudiTable.open(base))                   # a wrong listing: plan rebuilds it
    assert found and path.name in found[0].message or "differs from the storage" in found[0].message, found
    return "rebuilt"


@pytest.mark.parametrize("name", ["record index log", "record index hfile", "files log", "files hfile"])
@FUZZ
@given(at=st.integers(0, 1 << 20), mask=st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128]),
       cut=st.one_of(st.none(), st.none(), st.integers(0, 1 << 20)))
def test_a_flipped_or_cut_metadata_file_reads_the_same_is_refused_or_rebuilt(written, name, at, mask, cut):
    base, expected, listing, files = written
    path = files[name]
    data = path.read_bytes()
    keys = sorted(expected) + NEW_KEYS + ["absent"]
    if name.startswith("record index"):
        read, truth = (lambda t: rli_reader.lookup(t, keys)), expected
    else:
        read, truth = (lambda t: reader.listing(t)), listing
    try:
        _damaged(path, data, cut, at, mask)
        _outcome(base, path, read, truth)
    finally:
        path.write_bytes(data)
        rli_reader.clear_cache()


def test_a_files_log_whose_schema_renames_a_field_is_refused_naming_it(written):
    """A flipped bit in a log block's schema header that renames `isDeleted` still decodes (found
    by the fuzz test above: a KeyError traceback); the record lacks the field, so it is damage."""
    base, _, _, files = written
    path = files["files log"]
    data = path.read_bytes()
    at = data.index(b'"isDeleted"') + len(b'"isDelete')
    try:
        _damaged(path, data, None, at, 1)
        with pytest.raises(TablespecError, match="lacks a file's size or isDeleted") as e:
            reader.listing(HudiTable.open(base))
        assert path.name in str(e.value)
    finally:
        path.write_bytes(data)

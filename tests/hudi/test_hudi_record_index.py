"""The record-level index format without Spark: layout, seek vs scan, newest wins, what counts, rollback."""
from __future__ import annotations

import json
import os

import hudi
import numpy as np
import pyarrow as pa
import pytest

from tablespec.actions.metadata import TABLE_DEFAULTS
from tablespec.hudi import record_index as ri
from tablespec.hudi.avro import to_avro_schema
from tablespec.hudi.config import TableConfig, init_table
from tablespec.hudi.instant import new_instant_time
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.rollback import rollback
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline import Timeline, TimelineWriter
from tablespec.types import parse_type

ST = LocalStorage()
# An index commit carries the table schema: hudi-rs takes the schema from the latest commit.
SCHEMA = json.dumps(to_avro_schema([("id", parse_type("string"), False)], "t"), separators=(",", ":"))


def table(tmp_path) -> str:
    base = str(tmp_path / "t")
    init_table(ST, base, TableConfig.from_properties({
        **TABLE_DEFAULTS, "hoodie.table.name": "t", "hoodie.table.type": "COPY_ON_WRITE", "hoodie.table.version": "6",
        "hoodie.table.recordkey.fields": "id", "hoodie.index.type": "RECORD_LEVEL", ri.NUM_BUCKETS_PROPERTY: "1"}))
    return base


def instant(base: str, complete: bool = True) -> str:
    timeline = Timeline.load(ST, base)
    ts = new_instant_time(after=timeline.instants[-1].timestamp if timeline.instants else None)
    writer = TimelineWriter(ST, base)
    inflight = writer.start(writer.request("commit", ts))
    if complete:
        from tablespec.hudi.commit import CommitMetadata
        writer.complete(inflight, CommitMetadata(operation_type="INDEX", extra_metadata={"schema": SCHEMA}))
    return ts


def put(base: str, ts: str, rows: dict, kind: str = "delta") -> None:
    ri.write_file(ri.index_folder(base), ri.IndexFile(0, ts, kind, 1),
                  ri.entries(list(rows), [v and v[0] for v in rows.values()], [v and v[1] for v in rows.values()]))


def lookup(base: str, keys) -> dict:
    t = ri.RecordIndex(ST, base, Timeline.load(ST, base), 1).lookup(keys)
    return {k: (p, f) for k, p, f in zip(*(t.column(c).to_pylist() for c in ("key", "partition_path", "file_id")))}


def test_file_is_sorted_by_hash_uncompressed_and_memory_mapped(tmp_path):
    e = ri.entries(["b", "a", "c", "a"], ["p"] * 4, ["f1", None, "f3", "f4"])
    assert e.column("key").to_pylist().count("a") == 1  # a location beats a tombstone of the same key
    assert list(e.column("h").to_numpy()) == sorted(e.column("h").to_numpy())
    path = ri.write_file(str(tmp_path), ri.IndexFile(3, "20260101000000000", "delta", 4), e)
    mapped = ri.read_file(path)
    assert mapped.equals(e) and mapped.column("h").chunk(0).buffers()[1].address != 0
    assert os.path.basename(path) == "00003-of-00004_20260101000000000.delta.arrow"


@pytest.mark.parametrize("mode", ["seek", "scan", "auto"])
def test_seek_and_scan_agree_including_hash_collisions(tmp_path, mode):
    keys = [f"k{i}" for i in range(500)] + ["Aa", "BB", "AaAa", "BBBB", "AaBB"]  # Java hashCode collisions
    assert len(set(ri.key_hashes(pa.array(["Aa", "BB"])))) == 1
    e = ri.entries(keys, ["p"] * len(keys), [f"f{i}" for i in range(len(keys))])
    path = ri.write_file(str(tmp_path), ri.IndexFile(0, "20260101000000000", "base", 1), e)
    queries = pa.array(["BB", "k7", "nope", "AaBB", "BBAa", "Aa"])
    found = ri.probe([path], queries, ri.key_hashes(queries), mode)
    got = {queries[q].as_py(): f for q, f in zip(found.column("q").to_pylist(), found.column("file_id").to_pylist())}
    assert got == {"BB": "f501", "k7": "f7", "AaBB": "f504", "Aa": "f500"}


def test_newest_entry_wins_tombstones_hide_and_reinserts_return(tmp_path):
    base = table(tmp_path)
    t1 = instant(base)
    put(base, t1, {"a": ("p1", "f1"), "b": ("p1", "f1"), "c": ("p1", "f1")}, "base")
    t2 = instant(base)
    put(base, t2, {"a": ("p2", "f2"), "b": None})         # a moved, b deleted
    t3 = instant(base)
    put(base, t3, {"b": ("p3", "f3")})                     # b re-inserted
    assert lookup(base, ["a", "b", "c", "x"]) == {"a": ("p2", "f2"), "b": ("p3", "f3"), "c": ("p1", "f1")}
    state = ri.RecordIndex(ST, base, Timeline.load(ST, base), 1).live_entries()
    assert sorted(state.column("key").to_pylist()) == ["a", "b", "c"]


def test_only_completed_instants_count_and_a_base_hides_older_files(tmp_path):
    base = table(tmp_path)
    t1 = instant(base)
    put(base, t1, {"a": ("p", "f1")})
    pending = instant(base, complete=False)
    put(base, pending, {"a": ("p", "fX"), "z": ("p", "fZ")})
    assert lookup(base, ["a", "z"]) == {"a": ("p", "f1")}
    rollback(HudiTable.open(base), Timeline.load(ST, base).pending()[0])  # the index rolls back with the instant
    assert [f.instant for f in ri.list_files(ST, base)] == [t1]
    t3 = instant(base)
    put(base, t3, {"b": ("p", "f2")}, "base")
    assert lookup(base, ["a", "b"]) == {"b": ("p", "f2")}
    assert [f.instant for f in ri.superseded_files(ST, base, Timeline.load(ST, base), 1)] == [t1]


def test_hudi_rs_reads_a_timeline_with_index_files_and_index_commits(tmp_path):
    base = table(tmp_path)
    ts = instant(base)
    put(base, ts, {"a": ("p", "f1")})
    t = hudi.HudiTableBuilder.from_base_uri(base).build()
    assert sum(b.num_rows for b in t.read()) == 0 and t.get_file_slices() == []
    assert ts in repr([i.timestamp for i in t.get_timeline().get_completed_commits()])


def test_lookup_of_non_string_keys_is_a_clear_error(tmp_path):
    from tablespec.errors import TablespecError
    with pytest.raises(TablespecError, match="must be strings"):
        lookup(table(tmp_path), [{"a": 1}])


def test_default_bucket_count_has_headroom():
    assert ri.default_num_buckets(0) == ri.MIN_BUCKETS
    assert ri.default_num_buckets(10_000_000) == 13  # 10M * 1.3 / 1M
    assert np.all(ri.buckets_of(ri.key_hashes(pa.array([f"k{i}" for i in range(1000)])), 7) < 7)


def test_lookup_answers_each_key_once_and_handles_empty_and_non_ascii_keys(tmp_path):
    base = table(tmp_path)
    ts = instant(base)
    put(base, ts, {"ключ": ("p=ü", "f1"), "鍵😀": ("p", "f2"), "Aa": ("p", "f3")})
    keys = ["ключ", "ключ", "鍵😀", "BB", "Aa", "Aa", None]  # "Aa" and "BB" share a Java hash
    t = ri.RecordIndex(ST, base, Timeline.load(ST, base), 1).lookup(keys)
    assert sorted(t.column("key").to_pylist()) == ["Aa", "ключ", "鍵😀"]
    assert lookup(base, ["ключ"]) == {"ключ": ("p=ü", "f1")}
    assert lookup(base, []) == {}


def test_a_damaged_index_file_is_a_clear_error_not_a_traceback(tmp_path, capsys):
    from tablespec.cli import main
    base = table(tmp_path)
    put(base, instant(base), {"a": ("p", "f1")})
    path, = [os.path.join(ri.index_folder(base), f.name) for f in ri.list_files(ST, base)]
    with open(path, "r+b") as f:
        f.truncate(20)
    assert main(["verify", base]) == 1  # a finding of verify
    out, err = capsys.readouterr()
    assert "\tindex\t" in out and "not a readable record-level index file" in out and "Traceback" not in err
    assert main(["lookup", base, "a"]) == 1  # an error of lookup
    err = capsys.readouterr().err
    assert "not a readable record-level index file" in err and "Traceback" not in err

"""The secondary index's keys and file groups as Hudi 1.2.0 lays them out (measured on a table it wrote
with `CREATE INDEX idx_v ON t (v)` over v = 1, 2, 3, 3 and then 5: keys `1$a`, `2$b`, `3$c`, `3$d`, `5$a` in
file groups 5, 6, 7, 7, 9 of 10), and the escaping of its key parts."""
from __future__ import annotations

import io
import json
import shutil
from collections import Counter
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _support import RecordingStorage, cli, table_files
from test_hudi_mdt_1x import ST, TIMELINE, _start, _table

from tablespec.engine.commit import locked
from tablespec.hudi.archive.archiver import archive
from tablespec.hudi.archive.plan import ArchiveSettings
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.formats.hfile import HFileReader
from tablespec.hudi.formats.naming import BaseFileName, new_file_id
from tablespec.hudi.formats.partition import write_partition_metadata
from tablespec.hudi.io import LocalStorage, join
from tablespec.hudi.mdt import column_stats_init, layout, record_index_writer, secondary_index, sync, writer
from tablespec.hudi.mdt.column_stats import COLUMN_STATS
from tablespec.hudi.mdt.compaction import MAX_DELTA_COMMITS
from tablespec.hudi.mdt.record_index import Location, RecordIndexChange
from tablespec.hudi.mdt.records import from_commit as files_change
from tablespec.hudi.metadata_table import PARTITIONS_KEY
from tablespec.hudi.table import HudiTable
from tablespec.hudi.table import Location as TableLocation
from tablespec.hudi.timeline.active import TimelineWriter

FG = new_file_id()


@pytest.mark.parametrize("key, group", [("1$a", 5), ("2$b", 6), ("3$c", 7), ("3$d", 7), ("5$a", 9)])
def test_a_key_lives_in_the_file_group_of_its_value(key, group):
    assert secondary_index.file_group(key, 10) == group
    assert secondary_index.file_id("idx_v", group) == f"secondary-index-idx-v-{group:04d}-0"


def test_key_parts_are_escaped_and_a_null_value_is_nul():
    assert secondary_index.index_key("part\\one", "key$two") == "part\\\\one$key\\$two"
    assert secondary_index.index_key(None, "k") == "\0$k"
    assert secondary_index.index_key("a\0", "k") == "a\\\0$k"
    # the value part (up to the first unescaped `$`) picks the file group, whatever the record key
    assert secondary_index.file_group("x\\$y$k1", 10) == secondary_index.file_group("x\\$y$other", 10)


# ---------------------------------------------------------------- kept on tables written here (no JVM)

def _avro_schema(columns: dict) -> str:
    """The table schema a commit records: key and partition columns, then `columns` (name -> Arrow type)."""
    avro = {pa.int64(): "long", pa.float64(): "double"}
    return json.dumps({"type": "record", "name": "t_record", "namespace": "hoodie.t", "fields": [
        {"name": "id", "type": "string"}, {"name": "part", "type": "string"},
        *({"name": n, "type": ["null", avro[t]], "default": None} for n, t in columns.items())]})


def _commit(base: str, rows: dict[str, int | None], prev: str = "null", schema: dict | None = None,
            storage: LocalStorage = ST, partition: str = "p") -> str:
    """A copy-on-write commit rewriting file group FG of `partition` to hold `rows` (record key -> v),
    recorded in the metadata table (files, record index, secondary index; read through `storage`) before it
    completes, then the metadata table compacted when due, as tablespec's writers do."""
    ts, inflight = _start(base)
    write_partition_metadata(ST, base, partition, ts)
    rel = f"{partition}/{BaseFileName(FG, '0-1-0', ts).format()}"
    columns = {"_hoodie_record_key": pa.array(list(rows), pa.string()),
               "_hoodie_partition_path": pa.array([partition] * len(rows), pa.string())}
    columns |= {name: pa.array(list(rows.values()), kind) for name, kind in (schema or {"v": pa.int64()}).items()}
    pq.write_table(pa.table(columns), join(base, rel))
    metadata = CommitMetadata({partition: [WriteStat(file_id=FG, path=rel, prev_commit=prev, num_writes=len(rows),
                                                    partition_path=partition, file_size_in_bytes=ST.info(join(base, rel)).size)]},
                              operation_type="UPSERT", extra_metadata={"schema": _avro_schema(schema or {"v": pa.int64()})})
    table = HudiTable.open(replace(TableLocation.parse(base), storage=storage))
    with sync.completing(table, "commit") as locked:
        recorded = sync.record_commit(table, ts, metadata)
        TimelineWriter(ST, base, TIMELINE).complete(inflight, metadata, locked=locked)
    sync.compact_if_due(HudiTable.open(base), recorded)
    return ts


def _indexed(tmp_path, rows: dict[str, int | None], schema: dict | None = None) -> tuple[str, str]:
    """A version 9 copy-on-write table of `rows` in one file group, with its record index and the secondary
    index `idx_v` on column v built over it."""
    base = _table(tmp_path)
    first = _commit(base, rows, schema=schema)
    record_index_writer.initialize(HudiTable.open(base), [(k, "p", FG, first) for k in rows], 2)
    table = HudiTable.open(base)
    keys = set().union(*(secondary_index.file_keys(ST, base, s.base_file.path, s.base_file.size, {"v"})["v"]
                         for s in table.view.latest_slices()))   # as the build's executors read them
    with table.transaction_lock("secondary index build"):
        secondary_index.initialize(table, "idx_v", "v", keys)
    return base, first


def _pairs(rows: dict[str, int | None]) -> set[str]:
    return {secondary_index.index_key(None if v is None else str(v), k) for k, v in rows.items()}


def _slices(base: str) -> list[layout.Slice]:
    completed = layout.completions(layout.timeline(ST, base, layout.V2))
    return layout.latest_slices(ST, base, completed, secondary_index.partition("idx_v"), layout.V2)


def test_compaction_absorbs_the_index_so_archiving_loses_none_of_it(tmp_path):
    """Each write's index changes live in log blocks named by its data instant, which count only while that
    instant is on the active timeline: the metadata table's compaction merges them (a delete block's pair
    gone) into a base file sorted by key, so the index stays whole after the data timeline is archived."""
    rows = {"a": 1, "b": 2, "c": 3}
    base, prev = _indexed(tmp_path, rows)
    compacted = None
    for n in range(MAX_DELTA_COMMITS):          # values change, keys come and go, until the metadata table compacts
        rows = {**{k: v for k, v in rows.items() if k != "a"}, "b": 20 + n, f"n{n}": n, "a": 100 + n} if n % 2 \
            else {k: v for k, v in rows.items() if k != "a"} | {f"n{n}": n}
        prev = _commit(base, rows, prev)
        compacted = [i for i in layout.timeline(ST, base, layout.V2) if i.action == layout.COMPACTION and i.completed]
        if compacted:
            break
    assert compacted, "the metadata table never compacted"
    table = HudiTable.open(base)
    assert set(secondary_index.stored(table, "secondary_index_idx_v")) == _pairs(rows)
    with_keys = [s for s in _slices(base) if s.base_file is not None]
    assert with_keys and all(s.base_instant == compacted[-1].timestamp and not s.log_files for s in with_keys)
    for s in with_keys:                          # Hudi's base file: keys sorted, no deleted pairs
        keys = [k.decode() for k, _ in HFileReader(ST.read_bytes(join(layout.partition_path(
            base, s.partition), s.base_file)), s.base_file).records()]
        assert keys == sorted(keys, key=str.encode) and set(keys) <= _pairs(rows)

    rows = {**rows, "z": 7}
    _commit(base, rows, prev)
    table = HudiTable.open(base)
    with table.transaction_lock("archive"):
        archived = archive(table, ArchiveSettings(2, 3, 1))
    assert archived.archived                     # the data instants that wrote the index's first changes are gone
    assert set(secondary_index.stored(HudiTable.open(base), "secondary_index_idx_v")) == _pairs(rows)


def test_a_commit_reads_each_base_file_once_for_all_the_indexes(tmp_path):
    """The metadata update of a commit keeping column stats, the record index and a secondary index reads the
    base file it wrote once (footer, key and indexed columns) and the one it replaced once, for all three;
    and the index definitions (their source fields) once."""
    base, prev = _indexed(tmp_path, {"a": 1, "b": 2})
    table = HudiTable.open(base)
    with table.transaction_lock("column stats build"):
        column_stats_init.initialize(table, {}, [COLUMN_STATS], ["v"])
    [old] = [s.base_file.name for s in HudiTable.open(base).view.latest_slices()]
    storage = RecordingStorage()
    ts = _commit(base, {"a": 3, "c": 4}, prev, storage=storage)
    [new] = [s.base_file.name for s in HudiTable.open(base).view.latest_slices()]
    assert ts in new and Counter(p.rsplit("/", 1)[-1] for p in storage.paths() if p.endswith(".parquet")) == {new: 1, old: 1}
    assert [p for p in storage.paths() if p.endswith("index.json")] == [join(base, ".hoodie", ".index_defs", "index.json")]
    assert set(secondary_index.stored(HudiTable.open(base), "secondary_index_idx_v")) == _pairs({"a": 3, "c": 4})


class _ReadCounting(LocalStorage):
    """Local files, counting the reads of each data base file's bytes (footer, column chunks)."""

    def __init__(self):
        self.reads: Counter[str] = Counter()

    def open_input_file(self, path, size=None):
        reads, name = self.reads, path.rsplit("/", 1)[-1]

        class Counted(io.FileIO):
            def read(self, size=-1):
                reads[name] += 1
                return super().read(size)

        return pa.PythonFile(Counted(path, "rb"), mode="r")


def test_a_compaction_reads_the_footers_of_its_base_files_only(tmp_path):
    """A compaction moves no key: its metadata update (column stats, record index) reads the footer of the
    base file it wrote, in one read, and no column of it."""
    base, _ = _indexed(tmp_path, {"a": 1, "b": 2})
    table = HudiTable.open(base)
    with table.transaction_lock("column stats build"):
        column_stats_init.initialize(table, {}, [COLUMN_STATS], ["v"])
    [written] = [s.base_file for s in HudiTable.open(base).view.latest_slices()]
    stat = WriteStat(file_id=FG, path=f"p/{written.name}", prev_commit="null", num_writes=2, partition_path="p",
                     file_size_in_bytes=written.size)
    compaction = CommitMetadata({"p": [stat]}, operation_type="COMPACT", compacted=True,
                                extra_metadata={"schema": _avro_schema({"v": pa.int64()})})
    storage = _ReadCounting()
    table = HudiTable.open(replace(TableLocation.parse(base), storage=storage))
    _, index, stats = sync.partition_changes(table, _start(base)[0], files_change(compaction), compaction)
    assert stats and index == RecordIndexChange() and storage.reads == {written.name: 1}


def test_a_file_written_before_the_column_was_added_indexes_its_rows_as_null(tmp_path):
    """Schema evolution: a base file written before the indexed column existed reads it as null (Hudi's key
    for a null value is NUL alone), at the build and when a write replaces that file."""
    base, prev = _indexed(tmp_path, {"a": 1, "b": 2}, schema={"w": pa.int64()})     # no column v yet
    assert set(secondary_index.stored(HudiTable.open(base), "secondary_index_idx_v")) == {"\0$a", "\0$b"}
    _commit(base, {"a": 5, "b": None}, prev)
    assert set(secondary_index.stored(HudiTable.open(base), "secondary_index_idx_v")) == _pairs({"a": 5, "b": None})


def test_a_kept_index_on_a_column_tablespec_cannot_key_is_refused_by_plan(tmp_path, capsys):
    """A secondary index Hudi built on a double column (tablespec cannot write its keys: their text is not
    measured): import leaves it out (a spec declaring it does not validate), and a plan that keeps it is
    refused in one line naming the index, before any change; one whose dataSkipping leaves it out drops it."""
    base = _table(tmp_path)
    record_index_writer.initialize(HudiTable.open(base), [], 2)
    table = HudiTable.open(base)
    with table.transaction_lock("secondary index build"):
        secondary_index.initialize(table, "idx_v", "v", ())      # over no rows yet
    ts, inflight = _start(base)                                  # Hudi's write of a row with a double v
    write_partition_metadata(ST, base, "p", ts)
    rel = f"p/{BaseFileName(FG, '0-1-0', ts).format()}"
    pq.write_table(pa.table({"_hoodie_record_key": ["a"], "_hoodie_partition_path": ["p"], "id": ["a"],
                             "part": ["p"], "v": [1.5]}), join(base, rel))
    metadata = CommitMetadata({"p": [WriteStat(file_id=FG, path=rel, prev_commit="null", num_writes=1, partition_path="p",
                                              file_size_in_bytes=ST.info(join(base, rel)).size)]},
                              operation_type="UPSERT", extra_metadata={"schema": _avro_schema({"v": pa.float64()})})
    writer.record(HudiTable.open(base), ts, files_change(metadata),        # Hudi's index entry left out
                  record_index=RecordIndexChange(upserts={"a": Location("p", FG, ts)}))
    TimelineWriter(ST, base, TIMELINE).complete(inflight, metadata)

    code, out, err = cli(capsys, "import", base, "--warehouse", str(tmp_path))
    assert code == 0, err
    assert "secondaryIndexes" not in out
    spec_file = tmp_path / "t.yaml"
    spec_file.write_text(out)
    before = table_files(base)
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path))
    assert code != 0 and len(err.strip().splitlines()) == 1, out + err
    assert "secondary index idx_v is on column v of type double" in err and "string, byte, short, int, long" in err, err
    assert table_files(base) == before
    # a write is refused the same way before it changes anything (write_refusal, under its lock), not once
    # its tasks have written data files
    from tablespec.plan.builder import write_refusal
    from tablespec.spec.loader import load_specs
    from tablespec.state import observe
    why = write_refusal(load_specs([spec_file]).specs[0].spec, observe(HudiTable.open(base), check_metadata=False))
    assert why is not None and why in err and "\n" not in why, why

    spec_file.write_text(spec_file.read_text().replace("\n  index:", "\n  dataSkipping: {}\n  index:", 1))
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path), "--format", "json")
    assert code == 0, err
    [drop] = [a for t in json.loads(out)["tables"] for a in t["actions"] if a["kind"] == "drop_metadata_partitions"]
    assert drop["params"]["partitions"] == ["secondary_index_idx_v"]
    # the index lacks Hudi's entry of key a: a stale index, which verify reports and plan rebuilds
    assert any(r.startswith("rebuild: ") and "1 record key(s) the record index holds have no entry (e.g. a)" in r
               for r in drop["reasons"]), drop["reasons"]
    code, out, err = cli(capsys, "verify", base)
    assert code != 0 and "secondary_index_idx_v: 1 record key(s) the record index holds have no entry" in out, out + err


def test_an_index_named_ready_without_a_completed_file_group_is_dropped_or_built_again(tmp_path, capsys):
    """hoodie.properties name the index, but it has no completed file group (a restore rolled back its build):
    import does not declare it, plan drops it (every write would otherwise fail recording into it), a spec
    declaring it builds it again; a write drops it before it records its changes (it would fail recording into it)."""
    base, prev = _indexed(tmp_path, {"a": 1, "b": 2})
    shutil.rmtree(layout.partition_path(base, "secondary_index_idx_v"))
    code, out, err = cli(capsys, "import", base, "--warehouse", str(tmp_path))
    assert code == 0 and "secondaryIndexes" not in out, out + err
    spec_file = tmp_path / "t.yaml"
    spec_file.write_text(out.replace("\n  index:", "\n  dataSkipping:\n    secondaryIndexes: [{name: idx_v, column: v}]"
                                                   "\n  index:", 1))
    [build] = _plan(capsys, spec_file, tmp_path)
    assert build["kind"] == "build_data_skipping" and "half-built (secondary_index_idx_v" in build["reasons"][0]
    assert build["params"] == {"partitions": ["secondary_index_idx_v"], "secondary_indexes": [{"name": "idx_v", "column": "v"}]}
    spec_file.write_text(out)
    [drop] = _plan(capsys, spec_file, tmp_path)
    assert drop["kind"] == "drop_metadata_partitions" and drop["params"] == {"partitions": ["secondary_index_idx_v"]}
    assert "no completed file group" in drop["reasons"][0]
    with locked(HudiTable.open(base), "write"):      # as a write takes the table: dropped first
        pass
    assert "secondary_index" not in HudiTable.open(base).config.extra[PARTITIONS_KEY]
    _commit(base, {"a": 3}, prev)                    # records into files and record_index alone
    assert _plan(capsys, spec_file, tmp_path) == []


def _plan(capsys, spec_file, warehouse) -> list[dict]:
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(warehouse), "--format", "json")
    assert code == 0, err
    return [a for t in json.loads(out)["tables"] for a in t["actions"]]


def test_the_index_definitions_are_read_once_for_every_secondary_index(tmp_path):
    """`columns` of two secondary indexes reads `.hoodie/.index_defs/index.json` once, not once per index."""
    base, _ = _indexed(tmp_path, {"a": 1, "b": 2})
    table = HudiTable.open(base)
    with table.transaction_lock("secondary index build"):
        secondary_index.initialize(table, "idx_w", "v", set(secondary_index.stored(table, "secondary_index_idx_v")))
    storage = RecordingStorage()
    opened = HudiTable.open(replace(TableLocation.parse(base), storage=storage))
    named = secondary_index.kept_in(opened.config)
    storage.reads.clear()
    assert secondary_index.columns(opened, named) == {"secondary_index_idx_v": "v", "secondary_index_idx_w": "v"}
    assert [p for p in storage.paths() if p.endswith("index.json")] == [join(base, ".hoodie", ".index_defs", "index.json")]


def test_the_tasks_changes_join_into_the_commits():
    """Each write task reports the pairs its file groups lose and write (`PairChanges`, on executors); joined on
    the driver, an update keeping its value and a key moving partition with its value change nothing, a value
    changed deletes the old pair and inserts the new, a deleted key deletes its pair; a task without a report
    (a path that reads on the driver) gives none."""
    one, two = secondary_index.PairChanges("t", ["v"]), secondary_index.PairChanges("t", ["v"])
    stored = pa.table({"_hoodie_record_key": ["a", "b", "m", "x"], "v": [1, 2, 3, 4]})
    one.remove(stored)                                               # file group 1 rewrites all four
    one.add(pa.table({"v": [1, 20]}), pa.array(["a", "b"]))          # a kept, b changed, m moved, x deleted
    two.remove(pa.table({"w": [9]}), pa.array(["n"]))                # an old file without v: n's value null
    two.add(pa.table({"v": [3, 5]}), pa.array(["m", "n"]))           # m arrives with its value, n gets one
    reported = secondary_index.gathered([one.report(), two.report()])
    assert reported == {"v": ({"20$b", "5$n"}, {"2$b", "4$x", "\0$n"})}
    [(name, change)] = secondary_index.from_reported({"secondary_index_idx_v": "v"}, reported).items()
    assert name == "secondary_index_idx_v" and change.deletes == ["\0$n", "2$b", "4$x"]
    assert [k for k, _ in change.records] == ["20$b", "5$n"] and change.group is secondary_index.file_group
    assert secondary_index.gathered([one.report(), None]) is None

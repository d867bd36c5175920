"""The file-system view against hudi-rs, on the real fixtures and on tables written here."""
import json
import shutil

import hudi
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tablespec.errors import HudiFormatError
from tablespec.hudi.config import TableConfig, ensure_supported, init_table, read_table_config
from tablespec.hudi.formats.avro import to_avro_schema
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.formats.naming import META_COLUMNS, BaseFileName, new_file_id, write_token
from tablespec.hudi.formats.partition import write_partition_metadata
from tablespec.hudi.fs_view import FileSystemView, missing_latest_base_files, refuse_missing_latest
from tablespec.hudi.io import LocalStorage, join
from tablespec.hudi.timeline.active import Timeline, TimelineWriter
from tablespec.hudi.timeline.instant import new_instant_time
from tablespec.types import parse_type

ST = LocalStorage()


def _ours(base, as_of=None):
    view = FileSystemView.build(ST, str(base), Timeline.load(ST, str(base)))
    return sorted((s.partition, s.file_id, s.base_instant, s.base_file.name if s.base_file else None,
                   tuple(f.file_name.format() for f in s.log_files)) for s in view.latest_slices(as_of=as_of))


def _hudi_rs(base, as_of=None):
    table = hudi.HudiTableBuilder.from_base_uri(str(base)).build()
    options = hudi.HudiReadOptions().with_as_of_timestamp(as_of) if as_of else None
    return sorted((s.partition_path, s.file_id, s.creation_instant_time, s.base_file_name, tuple(s.log_file_names))
                  for s in table.get_file_slices(options))


def test_cow_fixture_loads_and_agrees_with_hudi_rs(fixture_table, cow_name):
    base = fixture_table(cow_name)
    config = read_table_config(ST, str(base))
    ensure_supported(config)
    timeline = Timeline.load(ST, str(base))
    view = FileSystemView.build(ST, str(base), timeline)
    assert _ours(base) == _hudi_rs(base)
    groups = view.file_groups()
    assert len(groups) == len(view.latest_slices())
    assert all(g.latest_slice.base_file.size == (base / g.partition / g.latest_slice.base_file.name).stat().st_size
               for g in groups)
    if timeline.commits():
        assert json.loads(timeline.latest_schema())["name"] == f"{config.name}_record"
        assert view.total_bytes() > 0
    else:
        assert groups == [] and view.total_bytes() == 0


def test_cow_fixture_time_travel_agrees_with_hudi_rs(fixture_table, cow_name):
    base = fixture_table(cow_name)
    for instant in Timeline.load(ST, str(base)).commits():
        assert _ours(base, instant.timestamp) == _hudi_rs(base, instant.timestamp)


def test_fixture_file_groups_keep_every_slice(fixture_table):
    base = fixture_table("cow_v6_simplekeygen_nonhivestyle")
    view = FileSystemView.build(ST, str(base), Timeline.load(ST, str(base)))
    group = next(g for g in view.file_groups("10"))
    assert [s.base_instant for s in group.slices] == ["20240418172802262", "20240418172804498"]
    assert group.latest_slice.base_instant == "20240418172804498"
    assert [g.partition for g in view.file_groups()] == ["10", "20", "30"]
    assert view.partitions == ("10", "20", "30")
    assert [s.partition for s in view.latest_slices("20")] == ["20"]
    only = FileSystemView.build(ST, str(base), Timeline.load(ST, str(base)), partitions=["30"])
    assert only.partitions == ("30",) and len(only.file_groups()) == 1


def test_mor_fixture_is_recognised_and_its_slices_agree(fixture_table, mor_name):
    base = fixture_table(mor_name)
    assert read_table_config(ST, str(base)).table_type == "MERGE_ON_READ"
    assert _ours(base) == _hudi_rs(base)
    assert any(row[4] for row in _ours(base))  # log files are recognised and attached to their slice


def test_last_commit_only_inflight_its_files_are_ignored(fixture_table):
    base = fixture_table("cow_v6_simplekeygen_nonhivestyle")
    (base / ".hoodie/20240418172804498.commit").unlink()  # the last commit never completed
    ours = _ours(base)
    assert ours == _hudi_rs(base)
    assert [(p, i) for p, _, i, _, _ in ours] == [("10", "20240418172802262"), ("20", "20240418172802262")]
    timeline = Timeline.load(ST, str(base))
    assert [str(i) for i in timeline.pending()] == ["20240418172804498.commit[inflight]"]


def test_files_of_unknown_and_archived_instants(fixture_table):
    base = fixture_table("cow_v6_simplekeygen_nonhivestyle")
    src = base / "20/76e0556b-390d-4249-b7ad-9059e2bc2cbd-0_0-98-141_20240418172802262.parquet"
    archived = "aaaaaaaa-390d-4249-b7ad-9059e2bc2cbd-0_0-1-1_20230101000000000.parquet"  # commit archived long ago
    unknown = "bbbbbbbb-390d-4249-b7ad-9059e2bc2cbd-0_0-1-1_20240418172803000.parquet"  # between two commits
    future = "76e0556b-390d-4249-b7ad-9059e2bc2cbd-0_0-1-1_20250101000000000.parquet"  # after the head
    for name in (archived, unknown, future):
        shutil.copy(src, base / "20" / name)
    names = [row[3] for row in _ours(base)]
    assert archived in names and unknown not in names and future not in names
    assert _ours(base) == _hudi_rs(base)
    (base / ".hoodie/20221201000000000.commit.requested").write_bytes(b"")  # a pending write before it
    assert archived not in [row[3] for row in _ours(base)]
    assert _ours(base) == _hudi_rs(base)


# --- a table written by tablespec's own writer functions --------------------------------------

COLUMNS = [("id", parse_type("string"), True), ("value", parse_type("long"), True), ("part", parse_type("string"), True)]
SCHEMA = json.dumps(to_avro_schema(COLUMNS, "synthetic"), separators=(",", ":"))


def _write_base_file(base, partition, file_id, instant, rows, prev_commit="null"):
    name = BaseFileName(file_id, write_token(0, 1, 1), instant).format()
    rel = f"{partition}/{name}"
    data = {
        "_hoodie_commit_time": [instant] * len(rows),
        "_hoodie_commit_seqno": [f"{instant}_0_{n}" for n in range(len(rows))],
        "_hoodie_record_key": [r["id"] for r in rows],
        "_hoodie_partition_path": [partition] * len(rows),
        "_hoodie_file_name": [name] * len(rows),
        "id": [r["id"] for r in rows], "value": [r["value"] for r in rows], "part": [partition.split("=")[1]] * len(rows),
    }
    assert list(data)[:5] == list(META_COLUMNS)
    pq.write_table(pa.table(data, schema=pa.schema([(k, pa.int64() if k == "value" else pa.string()) for k in data])),
                   join(base, rel))
    size = len(ST.read_bytes(join(base, rel)))
    return WriteStat(file_id=file_id, path=rel, prev_commit=prev_commit, num_writes=len(rows),
                     num_inserts=len(rows) if prev_commit == "null" else 0,
                     num_update_writes=0 if prev_commit == "null" else len(rows),
                     total_write_bytes=size, partition_path=partition, file_size_in_bytes=size)


def _commit(base, action, files, operation, replaced=None, complete=True):
    """Write `files` {(partition, file_id): (rows, prev_commit)} as one instant of `action`."""
    timeline = Timeline.load(ST, base)
    ts = new_instant_time(timeline.instants[-1].timestamp if timeline.instants else None)
    writer = TimelineWriter(ST, base)
    inflight = writer.start(writer.request(action, ts))
    stats = {}
    for (partition, file_id), (rows, prev) in files.items():
        write_partition_metadata(ST, base, partition, ts)
        stats.setdefault(partition, []).append(_write_base_file(base, partition, file_id, ts, rows, prev))
    if complete:
        writer.complete(inflight, CommitMetadata(stats, extra_metadata={"schema": SCHEMA}, operation_type=operation,
                                                 partition_to_replace_file_ids=replaced))
    return ts


@pytest.fixture
def synthetic(tmp_path):
    base = str(tmp_path / "synthetic")
    init_table(ST, base, TableConfig(name="synthetic", database="default", record_key_fields=["id"],
                                     partition_fields=["part"], hive_style_partitioning=True,
                                     key_generator_class="org.apache.hudi.keygen.SimpleKeyGenerator",
                                     create_schema=SCHEMA))
    a, b, c, d = (new_file_id() for _ in range(4))
    c1 = _commit(base, "commit", {("part=a", a): ([{"id": "1", "value": 1}, {"id": "2", "value": 2}], "null"),
                                  ("part=b", b): ([{"id": "3", "value": 3}], "null")}, "INSERT")
    c2 = _commit(base, "commit", {("part=a", a): ([{"id": "1", "value": 10}, {"id": "2", "value": 20}], c1)}, "UPSERT")
    c3 = _commit(base, "replacecommit", {("part=a", c): ([{"id": "1", "value": 10}, {"id": "2", "value": 20}], "null")},
                 "CLUSTER", replaced={"part=a": [a]})
    c4 = _commit(base, "commit", {("part=a", c): ([{"id": "1", "value": 99}], c3),
                                  ("part=b", d): ([{"id": "4", "value": 4}], "null")}, "UPSERT", complete=False)
    return base, dict(a=a, b=b, c=c, d=d, c1=c1, c2=c2, c3=c3, c4=c4)


def test_replacecommit_table_agrees_with_hudi_rs(synthetic):
    base, ids = synthetic
    ours = _ours(base)
    assert ours == _hudi_rs(base)
    assert [(p, f, i) for p, f, i, _, _ in ours] == [("part=a", ids["c"], ids["c3"]), ("part=b", ids["b"], ids["c1"])]
    timeline = Timeline.load(ST, base)
    assert timeline.replaced_file_ids() == {"part=a": {ids["a"]}}
    assert [i.timestamp for i in timeline.pending()] == [ids["c4"]]
    assert timeline.latest_schema() == SCHEMA
    rows = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(base).build().read())
    assert sorted(zip(rows["id"].to_pylist(), rows["value"].to_pylist())) == [("1", 10), ("2", 20), ("3", 3)]


def test_replacecommit_time_travel_agrees_with_hudi_rs(synthetic):
    base, ids = synthetic
    for as_of, expected in ((ids["c1"], [("part=a", ids["a"], ids["c1"]), ("part=b", ids["b"], ids["c1"])]),
                            (ids["c2"], [("part=a", ids["a"], ids["c2"]), ("part=b", ids["b"], ids["c1"])])):
        ours = _ours(base, as_of)
        assert ours == _hudi_rs(base, as_of)
        assert sorted((p, f, i) for p, f, i, _, _ in ours) == sorted(expected)


def test_replaced_group_still_listed_with_all_slices_before_replacement(synthetic):
    base, ids = synthetic
    view = FileSystemView.build(ST, base, Timeline.load(ST, base))
    assert ids["a"] not in {g.file_id for g in view.file_groups()}
    assert {g.file_id for g in view.file_groups(as_of=ids["c2"])} == {ids["a"], ids["b"]}
    assert ids["d"] not in {g.file_id for g in view.file_groups()}  # pending commit's new file group
    assert view.total_bytes() == sum(s.base_file.size for s in view.latest_slices())


def _missing(base):
    view = FileSystemView.build(ST, base, Timeline.load(ST, base))
    return [(m.partition, m.file_id, m.instant, m.file_name) for m in missing_latest_base_files(view)]


def _file_of(base, partition, file_id, instant):
    (path,) = [f for f in ST.list_dir(join(base, partition))
               if (n := BaseFileName.parse(f.name)) and n.file_id == file_id and n.instant == instant]
    return path


def test_missing_latest_base_file_is_found_from_the_commits_write_stats(synthetic):
    base, ids = synthetic
    assert _missing(base) == []  # replaced groups and the pending commit's files are not expected
    c5 = _commit(base, "commit", {("part=b", ids["b"]): ([{"id": "3", "value": 30}], ids["c1"])}, "UPSERT")
    assert _missing(base) == []
    older = _file_of(base, "part=b", ids["b"], ids["c1"])
    ST.delete(older.path)  # an older slice (the cleaner's to remove): not the latest, not reported
    ST.delete(_file_of(base, "part=a", ids["a"], ids["c2"]).path)  # a replaced file group
    assert _missing(base) == []
    latest = _file_of(base, "part=b", ids["b"], c5)
    ST.write_bytes(older.path, b"")  # the older slice back: the view now picks it as the latest
    ST.delete(latest.path)
    assert _missing(base) == [("part=b", ids["b"], c5, latest.name)]
    ST.delete(_file_of(base, "part=a", ids["c"], ids["c3"]).path)  # a file group's only slice
    assert [m[:3] for m in _missing(base)] == [("part=a", ids["c"], ids["c3"]), ("part=b", ids["b"], c5)]
    view = FileSystemView.build(ST, base, Timeline.load(ST, base))
    refuse_missing_latest(view, ["part=c"])  # nothing missing there
    with pytest.raises(HudiFormatError) as e:
        refuse_missing_latest(view, ["part=b"], doing="the upsert")
    assert str(e.value) == (f"{base}: refusing the upsert: file group {ids['b']} in partition 'part=b': its latest "
                            f"base file {latest.name} (written by instant {c5}) is missing from storage; restore it "
                            f"or roll back {c5}; nothing was committed")


def test_the_view_after_this_process_commits_follows_from_the_one_before(synthetic):
    """The view after a commit this process made (new file groups, a new slice, a new partition) is
    the view it wrote with plus the files the write stats name, the same as a fresh listing's; with
    another writer's instant on the timeline meanwhile there is no such view (list again)."""
    base, ids = synthetic
    before = FileSystemView.build(ST, base, Timeline.load(ST, base))
    ts = new_instant_time(Timeline.load(ST, base).instants[-1].timestamp)
    writer = TimelineWriter(ST, base)
    inflight = writer.start(writer.request("commit", ts))
    stats: dict = {}
    for partition, file_id, prev in (("part=b", ids["b"], ids["c1"]), ("part=b", new_file_id(), "null"),
                                     ("part=e", new_file_id(), "null")):
        write_partition_metadata(ST, base, partition, ts)
        stats.setdefault(partition, []).append(_write_base_file(base, partition, file_id, ts, [{"id": "9", "value": 9}],
                                                                prev))
    metadata = CommitMetadata(stats, extra_metadata={"schema": SCHEMA}, operation_type="UPSERT")
    done = writer.complete(inflight, metadata)
    after = Timeline.load(ST, base)
    derived = before.after_commit(after, done, metadata)
    fresh = FileSystemView.build(ST, base, after)
    assert derived is not None and derived.partitions == fresh.partitions == ("part=a", "part=b", "part=e")
    assert derived.file_groups() == fresh.file_groups() and derived.latest_slices() == fresh.latest_slices()
    assert _ours(base) == _hudi_rs(base)
    writer.request("commit", new_instant_time(ts))     # another writer starts: its files would not be known
    assert before.after_commit(Timeline.load(ST, base), done, metadata) is None

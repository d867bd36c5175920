import io
import json

import fastavro
import hudi
import pytest

from tablespec.errors import HudiFormatError
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.timeline.active import Timeline, TimelineWriter
from tablespec.hudi.timeline.instant import Instant

ST = LocalStorage()
T1, T2, T3 = "20240101000000001", "20240101000000002", "20240101000000003"


def _files(base):
    return sorted(p.name for p in (base / ".hoodie").iterdir() if p.is_file())


def test_fixture_timeline_matches_hudi_rs(fixture_table, any_name):
    base = fixture_table(any_name)
    tl = Timeline.load(ST, str(base))
    rs = hudi.HudiTableBuilder.from_base_uri(str(base)).build().get_timeline()
    rs_commits = rs.get_completed_commits() + rs.get_completed_deltacommits() + rs.get_completed_replacecommits()
    assert [(i.timestamp, i.action) for i in tl.commits()] == sorted((i.timestamp, i.action) for i in rs_commits)
    assert tl.pending() == ()
    if tl.commits():
        assert tl.head == tl.commits()[-1] and tl.contains_completed(tl.head.timestamp)
        assert json.loads(tl.latest_schema()) == json.loads(rs.get_latest_avro_schema())
    else:
        assert tl.head is None and tl.latest_schema() is None


def test_fixture_timeline_groups_states_and_reads_metadata(fixture_table):
    base = fixture_table("cow_v6_simplekeygen_nonhivestyle")
    tl = Timeline.load(ST, str(base))
    assert [str(i) for i in tl.instants] == ["20240418172802262.commit[completed]", "20240418172804498.commit[completed]"]
    assert tl.last("commit").timestamp == "20240418172804498" and tl.last("replacecommit") is None
    meta = tl.read_metadata(tl.head)
    assert meta["operationType"] == "UPSERT" and set(meta["partitionToWriteStats"]) == {"10", "30"}
    assert tl.commit_metadata(tl.head).write_stats()[0].prev_commit == "null"
    assert tl.read_metadata(Instant("20240418172804498", "commit", "requested")) == {}
    assert tl.read_metadata(Instant("20240418172804498", "commit", "inflight"))["extraMetadata"] == {}
    assert tl.replaced_file_ids() == {}


def test_transitions_request_start_complete(tmp_path):
    base = str(tmp_path)
    w = TimelineWriter(ST, base)
    req = w.request("commit", T1)
    assert _files(tmp_path) == [f"{T1}.commit.requested"]
    assert Timeline.load(ST, base).pending() == (req,) and Timeline.load(ST, base).head is None
    inflight = w.start(req, b'{"partitionToWriteStats" : { }}')
    assert inflight == Instant(T1, "commit", "inflight")
    assert Timeline.load(ST, base).instants == (inflight,)
    meta = CommitMetadata(operation_type="INSERT", extra_metadata={"schema": "{}"})
    done = w.complete(inflight, meta)
    assert done == Instant(T1, "commit", "completed")
    assert _files(tmp_path) == [f"{T1}.commit", f"{T1}.commit.requested", f"{T1}.inflight"]
    tl = Timeline.load(ST, base)
    assert tl.instants == (done,) and tl.head == done and tl.commits() == (done,)
    assert tl.commit_metadata(done) == meta
    assert (tmp_path / ".hoodie" / f"{T1}.commit").read_bytes() == meta.to_json()


def test_complete_accepts_dict_and_bytes(tmp_path):
    w = TimelineWriter(ST, str(tmp_path))
    w.complete(w.start(w.request("clean", T1)), {"a": [1]})
    assert (tmp_path / f".hoodie/{T1}.clean").read_bytes() == b'{\n  "a" : [ 1 ]\n}'
    w.complete(w.start(w.request("rollback", T2)), b"raw")
    assert (tmp_path / f".hoodie/{T2}.rollback").read_bytes() == b"raw"


def test_invalid_transitions_are_refused(tmp_path):
    base = str(tmp_path)
    w = TimelineWriter(ST, base)
    req = w.request("commit", T2)
    with pytest.raises(HudiFormatError, match="already exists|not after"):
        w.request("commit", T2)
    with pytest.raises(HudiFormatError, match="not after the latest instant"):
        w.request("commit", T1)
    with pytest.raises(HudiFormatError, match="only an inflight instant can complete"):
        w.complete(req, CommitMetadata())
    inflight = w.start(req)
    with pytest.raises(HudiFormatError, match="already inflight"):
        w.start(req)
    with pytest.raises(HudiFormatError, match="only a requested instant"):
        w.start(inflight)
    done = w.complete(inflight, CommitMetadata())
    with pytest.raises(HudiFormatError, match="already completed"):
        w.complete(inflight, CommitMetadata(operation_type="X"))
    assert CommitMetadata.from_json((tmp_path / f".hoodie/{T2}.commit").read_bytes()) == CommitMetadata()
    with pytest.raises(HudiFormatError, match="already completed"):
        w.start(req)
    with pytest.raises(HudiFormatError, match="it is completed"):
        w.delete_instant(done)
    with pytest.raises(HudiFormatError, match="it is completed"):
        w.revert_inflight(inflight)
    with pytest.raises(HudiFormatError, match="does not exist"):
        w.start(Instant(T3, "commit", "requested"))
    with pytest.raises(HudiFormatError, match="does not exist"):
        w.complete(Instant(T3, "commit", "inflight"), b"")
    with pytest.raises(HudiFormatError, match="no requested state"):
        w.request("savepoint", T3)
    with pytest.raises(HudiFormatError, match="must have 17 digits"):
        w.request("commit", "20990101000000")  # second-precision instants are read, never written


def test_completed_file_is_the_only_commit_point(tmp_path):
    base = str(tmp_path)
    w = TimelineWriter(ST, base)
    w.complete(w.start(w.request("commit", T1)), CommitMetadata())
    inflight = w.start(w.request("commit", T2))
    tl = Timeline.load(ST, base)
    assert tl.head.timestamp == T1 and tl.pending() == (inflight,) and not tl.contains_completed(T2)
    w.complete(inflight, CommitMetadata())
    assert Timeline.load(ST, base).head.timestamp == T2
    assert not [n for n in _files(tmp_path) if n.startswith(".")]  # no temp files left behind


def test_revert_inflight_and_delete_pending_instant(tmp_path):
    base = str(tmp_path)
    w = TimelineWriter(ST, base)
    inflight = w.start(w.request("replacecommit", T1, b"plan"))
    requested = w.revert_inflight(inflight)
    assert requested == Instant(T1, "replacecommit", "requested")
    assert _files(tmp_path) == [f"{T1}.replacecommit.requested"]
    assert Timeline.load(ST, base).read_bytes(requested) == b"plan"
    w.delete_instant(w.start(requested))
    assert _files(tmp_path) == [] and Timeline.load(ST, base).instants == ()


def test_compaction_files_group_into_one_instant(tmp_path):
    meta = tmp_path / ".hoodie"
    meta.mkdir()
    for name in (f"{T1}.compaction.requested", f"{T1}.compaction.inflight", f"{T1}.commit",
                 f"{T2}.compaction.requested", f"{T2}.compaction.inflight", "hoodie.properties"):
        (meta / name).write_bytes(b"")
    (meta / "archived").mkdir()
    tl = Timeline.load(ST, str(tmp_path))
    assert tl.instants == (Instant(T1, "commit", "completed"), Instant(T2, "compaction", "inflight"))
    assert tl.pending() == (Instant(T2, "compaction", "inflight"),)


def test_avro_metadata_is_decoded(tmp_path):
    schema = {"type": "record", "name": "HoodieCleanMetadata", "fields": [
        {"name": "startCleanTime", "type": "string"}, {"name": "totalFilesDeleted", "type": "int"}]}
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), [{"startCleanTime": T1, "totalFilesDeleted": 3}])
    (tmp_path / ".hoodie").mkdir()
    (tmp_path / f".hoodie/{T1}.clean").write_bytes(buf.getvalue())
    (tmp_path / f".hoodie/{T2}.commit").write_bytes(b"{not json")
    tl = Timeline.load(ST, str(tmp_path))
    assert tl.read_metadata(Instant(T1, "clean")) == {"startCleanTime": T1, "totalFilesDeleted": 3}
    with pytest.raises(HudiFormatError, match="unreadable metadata"):
        tl.read_metadata(Instant(T2, "commit"))


def test_json_metadata_reads_as_the_standard_library_reads_it(tmp_path):
    """Commit files are parsed fast (orjson), as `json` reads them: an integer past 64 bits stays an
    integer, what only `json` takes (NaN, infinity, a byte-order mark, a lone surrogate) is taken, and
    a file neither takes fails in `json`'s words."""
    cases = [b'{"a": 123456789012345678901234, "b": -9223372036854775809, "c": 18446744073709551615}',
             b'{"a": NaN}', b'{"a": 1e400}', b'\xef\xbb\xbf{"a": 1}', b'{"a": "\\ud800"}', b'{"a": [1,]}', b'{"a": 1} x',
             b'{"a": 1, "a": [2.5, -0.0, "\\u00e9"]}']
    (tmp_path / ".hoodie").mkdir()
    for n, raw in enumerate(cases):
        (tmp_path / f".hoodie/{T1[:-1]}{n}.commit").write_bytes(raw)
    tl = Timeline.load(ST, str(tmp_path))
    for instant, raw in zip(tl.instants, cases, strict=True):
        try:
            expected = json.loads(raw)
        except ValueError as e:
            with pytest.raises(HudiFormatError) as refused:
                tl.read_metadata(instant)
            assert str(refused.value) == f"{tmp_path}/.hoodie/{instant.file_name}: unreadable metadata: {e}"
        else:
            assert repr(tl.read_metadata(instant)) == repr(expected)   # types too (an int is no float); nan != nan


def test_replaced_file_ids_and_schema_from_completed_commits_only(tmp_path):
    base = str(tmp_path)
    w = TimelineWriter(ST, base)
    w.complete(w.start(w.request("commit", T1)), CommitMetadata(extra_metadata={"schema": "s1"}))
    replace = CommitMetadata(partition_to_write_stats={"p": [WriteStat(file_id="new")]}, operation_type="CLUSTER",
                             partition_to_replace_file_ids={"p": ["a", "b"], "q": ["c"]})
    w.complete(w.start(w.request("replacecommit", T2)), replace)
    w.start(w.request("replacecommit", T3))  # pending: does not count
    tl = Timeline.load(ST, base)
    assert tl.replaced_file_ids() == {"p": {"a", "b"}, "q": {"c"}}
    assert tl.replaced_file_ids(as_of=T1) == {}
    assert tl.latest_schema() == "s1"  # the replacecommit recorded none
    assert tl.last("replacecommit").timestamp == T2

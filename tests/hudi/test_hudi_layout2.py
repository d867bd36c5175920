"""Table versions 8 and 9 (Apache Hudi 1.x), read: timeline layout 2 in .hoodie/timeline/ (completion
times in completed file names, a `clustering` action), Avro commit metadata, the LSM history in
.hoodie/timeline/history/ (manifest -> Parquet files), and the config of such tables.

The tables here are generated in the test, laid out as Hudi 1.2.0 lays them out (measured on the
tables of tests/interop/test_hudi_1x_versions.py, which Hudi 1.0.2 and 1.2.0 write themselves)."""
from __future__ import annotations

import dataclasses
import io
import json

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tablespec.errors import HudiFormatError, UnsupportedTableError
from tablespec.hudi.archive import History
from tablespec.hudi.config import TableConfig, archive_folder, read_table_config, unwritable_version
from tablespec.hudi.formats.properties import format_properties
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.services.clustering import (
    ClusteringGroup,
    ClusteringPlan,
    Layout,
    SliceInfo,
    encode_plan,
    layout_history,
    pending_plans,
)
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.instant import Instant

ST = LocalStorage()
NS = "org.apache.hudi.avro.model"
STAT = {"type": "record", "name": "HoodieWriteStat", "namespace": NS, "fields": [
    {"name": n, "type": ["null", t], "default": None} for n, t in (
        ("fileId", "string"), ("path", "string"), ("prevCommit", "string"), ("numWrites", "long"),
        ("numDeletes", "long"), ("numUpdateWrites", "long"), ("totalWriteBytes", "long"), ("partitionPath", "string"),
        ("totalLogFiles", "long"), ("numInserts", "long"), ("fileSizeInBytes", "long"),
        ("runtimeStats", {"type": "map", "values": "long"}))]}
STRING_MAP = ["null", {"type": "map", "values": "string"}]


def _commit_schema(replace: bool) -> dict:
    fields = [{"name": "partitionToWriteStats", "type": ["null", {"type": "map", "values": {"type": "array", "items": STAT}}],
               "default": None},
              {"name": "compacted", "type": ["null", "boolean"], "default": None},
              {"name": "extraMetadata", "type": STRING_MAP, "default": None},
              {"name": "version", "type": ["int", "null"], "default": 1},
              {"name": "operationType", "type": ["null", "string"], "default": None}]
    if replace:
        fields.append({"name": "partitionToReplaceFileIds",
                       "type": ["null", {"type": "map", "values": {"type": "array", "items": "string"}}], "default": None})
    return {"type": "record", "name": "HoodieReplaceCommitMetadata" if replace else "HoodieCommitMetadata",
            "namespace": NS, "fields": fields}


SCHEMA = json.dumps({"type": "record", "name": "orders_record", "namespace": "hoodie.orders", "fields": [
    {"name": "id", "type": "string"}, {"name": "v", "type": ["null", "int"], "default": None}]})
T1, T2, T3, T4, T5 = "20250101000000001", "20250101000000002", "20250101000000003", "20250101000000004", "20250101000000005"


def _commit(partition: str, file_id: str, instant: str, operation: str = "UPSERT", replaced: dict | None = None,
            version: int = 9) -> bytes:
    record = {"partitionToWriteStats": {partition: [{
        "fileId": file_id, "path": f"{partition}/{file_id}_0-1-2_{instant}.parquet", "prevCommit": "null",
        "numWrites": 2, "numDeletes": 0, "numUpdateWrites": 0, "totalWriteBytes": 100, "partitionPath": partition,
        "totalLogFiles": None, "numInserts": 2, "fileSizeInBytes": 100, "runtimeStats": {"totalCreateTime": 5}}]},
        "compacted": False, "extraMetadata": {"schema": SCHEMA}, "version": None, "operationType": operation}
    if replaced is not None:
        record["partitionToReplaceFileIds"] = replaced
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(_commit_schema(replaced is not None)), [record])
    return out.getvalue()


def _plan() -> bytes:
    group = ClusteringGroup((SliceInfo("p", "fg-1", f"p/fg-1_0-1-2_{T1}.parquet", 100),))
    return encode_plan(ClusteringPlan((group,), Layout("SORT", ("v",))))


def _version_9_table(tmp_path, version: int = 9):
    """A table: commits T1, T2, T4 and T6 (T6 requested after T4, completed before it), T3 a
    clustering of T1's file group (T1 and T3 archived: in the LSM history), T5 a pending clustering."""
    meta = tmp_path / ".hoodie"
    timeline, history = meta / "timeline", meta / "timeline" / "history"
    history.mkdir(parents=True)
    config = TableConfig(name="orders", version=version, timeline_layout_version=2, record_key_fields=["id"],
                         partition_fields=["p"])
    props = config.to_properties() | {"hoodie.timeline.path": "timeline", "hoodie.timeline.history.path": "history",
                                      "hoodie.archivelog.folder": "history", "hoodie.table.initial.version": str(version),
                                      "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
                                      "hoodie.table.keygenerator.type": "SIMPLE", "hoodie.table.ordering.fields": "v"}
    (meta / "hoodie.properties").write_text(format_properties(props))
    files = {f"{T2}.commit.requested": b"", f"{T2}.inflight": b"",
             f"{T2}_20250101000000010.commit": _commit("p", "fg-2", T2),
             f"{T4}.commit.requested": b"", f"{T4}.inflight": b"",
             f"{T4}_20250101000000030.commit": _commit("p", "fg-4", T4),
             f"{T5}.clustering.requested": _plan(), f"{T5}.clustering.inflight": b""}
    for name, content in files.items():
        (timeline / name).write_bytes(content)
    # requested after T4, completed before it
    (timeline / "20250101000000006.commit.requested").write_bytes(b"")
    (timeline / "20250101000000006_20250101000000020.commit").write_bytes(_commit("p", "fg-6", "20250101000000006"))
    rows = [
        {"instantTime": T1, "completionTime": "20250101000000007", "action": "commit",
         "metadata": _commit("p", "fg-1", T1), "plan": None, "version": 1},
        {"instantTime": T3, "completionTime": "20250101000000009", "action": "replacecommit",
         "metadata": _commit("p", "fg-3", T3, "CLUSTER", {"p": ["fg-1"]}), "plan": _plan(), "version": 1},
    ]
    pq.write_table(pa.Table.from_pylist(rows), history / f"{T1}_{T3}_0.parquet")
    # a file an LSM compaction replaced: no longer in the current manifest, so not read
    stale = [{**rows[0], "instantTime": "20240101000000000", "action": "commit"}]
    pq.write_table(pa.Table.from_pylist(stale), history / "20240101000000000_20240101000000000_0.parquet")
    (history / "manifest_1").write_text(json.dumps({"files": [
        {"fileName": "20240101000000000_20240101000000000_0.parquet", "fileLen": 1}]}))
    (history / "manifest_2").write_text(json.dumps({"files": [{"fileName": f"{T1}_{T3}_0.parquet", "fileLen": 1}]}))
    (history / "_version_").write_text("2")
    return HudiTable.open(str(tmp_path))


@pytest.mark.parametrize(("name", "action", "state", "completion"), [
    (f"{T1}_20250101000000009.commit", "commit", "completed", "20250101000000009"),
    (f"{T1}_20250101000000009.replacecommit", "replacecommit", "completed", "20250101000000009"),
    (f"{T1}_20250101000000009.clean", "clean", "completed", "20250101000000009"),
    (f"{T1}.clustering.requested", "clustering", "requested", None),
    (f"{T1}.clustering.inflight", "clustering", "inflight", None),
    (f"{T1}.inflight", "commit", "inflight", None),
    (f"{T1}.commit.requested", "commit", "requested", None),
])
def test_layout_2_file_names(name, action, state, completion):
    instant = Instant.parse(name, layout=2)
    assert (instant.action, instant.state, instant.completion) == (action, state, completion)
    assert instant.file_name == name
    assert instant == Instant(T1, action, state)   # the completion time is no part of its identity


@pytest.mark.parametrize("name", [f"{T1}_{T2}.commit.requested", f"{T1}_{T2}.inflight", f"{T1}_2025.commit",
                                  f"{T1}_{T2}", f"{T1}.clustering", f"{T1}_2026112800182X509.commit",
                                  f"{T1}_2026112800182350.commit",
                                  f"{T1}.inflightx.8d58d825-501f-42af-8bdd-fec4fe144d66"])   # no instant's name + UUID
def test_layout_2_refuses_damaged_instant_names(name):
    """A completed instant with a malformed completion time is no pending instant: refused."""
    with pytest.raises(HudiFormatError, match="not a timeline file name"):
        Instant.parse(name, layout=2)


@pytest.mark.parametrize("name", ["history", "hoodie.properties", f".{T1}_{T2}.commit.crc",
                                  f"{T1}.inflight.8d58d825-501f-42af-8bdd-fec4fe144d66",   # Hudi 1.2 writing it
                                  f"{T1}_{T2}.commit.0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"])
def test_layout_2_ignores_other_names(name):
    assert Instant.parse(name, layout=2) is None


def test_a_clustering_completes_as_a_replacecommit():
    assert Instant(T1, "clustering", "inflight").to("completed") == Instant(T1, "replacecommit")
    with pytest.raises(HudiFormatError, match="no completion time"):
        Instant(T1, "commit", "inflight", T2)


def test_timeline_of_a_version_9_table(tmp_path):
    table = _version_9_table(tmp_path)
    timeline = table.timeline
    assert (timeline.folder, timeline.layout) == (".hoodie/timeline", 2)
    assert [str(i) for i in timeline.instants] == [
        f"{T2}.commit[completed]", f"{T4}.commit[completed]", f"{T5}.clustering[inflight]",
        "20250101000000006.commit[completed]"]
    # requested order T2 < T4 < T6; completion order T2 < T6 < T4: the head is what completed last
    assert [i.timestamp for i in timeline.completion_order()] == [T2, "20250101000000006", T4]
    assert timeline.head.timestamp == T4 and timeline.head.completion == "20250101000000030"
    metadata = timeline.commit_metadata(timeline.instants[0])   # Avro, in the shape of the JSON form
    (stat,) = metadata.write_stats()
    assert (metadata.operation_type, stat.file_id, stat.num_inserts, stat.runtime_stats) == ("UPSERT", "fg-2", 2,
                                                                                             {"totalCreateTime": 5})
    assert stat.total_log_records == 0 and "totalLogFiles" not in stat.extra   # Avro-only nulls dropped
    assert metadata.partition_to_replace_file_ids is None and timeline.latest_schema() == SCHEMA


def test_pending_clustering_has_its_own_action(tmp_path):
    timeline = _version_9_table(tmp_path).timeline
    ((instant, plan),) = pending_plans(timeline).items()
    assert instant == Instant(T5, "clustering", "inflight")
    assert plan.layout == Layout("SORT", ("v",)) and plan.file_ids() == {("p", "fg-1")}


def test_lsm_history(tmp_path):
    table = _version_9_table(tmp_path)
    history = History.of(table)
    archived = history.archived
    assert [str(i) for i in archived.instants] == [f"{T1}.commit[completed]", f"{T3}.replacecommit[completed]"]
    assert [i.completion for i in archived.instants] == ["20250101000000007", "20250101000000009"]
    assert [i.timestamp for i in history.commits()] == [T1, T2, T3, T4, "20250101000000006"]
    assert history.is_archived(Instant(T3, "replacecommit")) and not history.is_archived(Instant(T2, "commit"))
    clustering = history.commit_metadata(Instant(T3, "replacecommit"))
    assert clustering.operation_type == "CLUSTER" and clustering.partition_to_replace_file_ids == {"p": ["fg-1"]}
    assert archived.requested_content(Instant(T3, "replacecommit"))["clusteringPlan"]["inputGroups"]
    assert archived.requested_content(Instant(T1, "commit")) == {}
    assert layout_history(table.timeline, archived) == [(T3, Layout("SORT", ("v",)))]
    with pytest.raises(HudiFormatError, match="not an archived completed commit"):
        archived.commit_metadata(Instant(T2, "commit"))


def test_an_unreadable_manifest_is_named(tmp_path):
    table = _version_9_table(tmp_path)
    (tmp_path / ".hoodie/timeline/history/manifest_2").write_text("{not json")
    with pytest.raises(HudiFormatError, match="manifest_2: unreadable LSM timeline manifest"):
        History.of(table)


@pytest.mark.parametrize("version", [8, 9])
def test_version_8_is_read_not_written_and_9_written(tmp_path, version):
    table = _version_9_table(tmp_path, version)
    config = read_table_config(ST, str(tmp_path))
    assert config.version == version and config.precombine_field == "v" and config.key_generator_class
    assert archive_folder(config) == "timeline/history"
    why = unwritable_version(config)
    if version == 8:
        assert f"table version {version} (Apache Hudi 1.x)" in why and "writes to version" in why
    else:   # written with its metadata table's files partition, and Hudi 1.x's record index, kept
        assert why is None
        with_mdt = dataclasses.replace(config, extra={**config.extra, "hoodie.table.metadata.partitions": "files"})
        assert unwritable_version(with_mdt) is None
        with_index = dataclasses.replace(config, extra={**config.extra,
                                                        "hoodie.table.metadata.partitions": "files,record_index"})
        assert unwritable_version(with_index) is None
    assert table.timeline.layout == 2


def test_version_6_stays_as_it_was(tmp_path):
    config = TableConfig(name="orders")
    assert unwritable_version(config) is None and archive_folder(config) == "archived"
    for version in (7, 10):
        (tmp_path / ".hoodie").mkdir(exist_ok=True)
        props = TableConfig(name="orders", version=version).to_properties()
        (tmp_path / ".hoodie/hoodie.properties").write_text(format_properties(props))
        with pytest.raises(UnsupportedTableError, match=f"table version {version}; tablespec supports Hudi table "
                                                        "versions 6, 8, 9"):
            read_table_config(ST, str(tmp_path))


def test_an_active_clustering_plan_is_found_under_its_own_action(tmp_path):
    _version_9_table(tmp_path)
    t7, timeline = "20250101000000007", tmp_path / ".hoodie/timeline"
    (timeline / f"{t7}.clustering.requested").write_bytes(_plan())
    (timeline / f"{t7}.clustering.inflight").write_bytes(b"")
    (timeline / f"{t7}_20250101000000040.replacecommit").write_bytes(_commit("p", "fg-7", t7, "CLUSTER", {"p": ["fg-2"]}))
    table = HudiTable.open(str(tmp_path))
    assert layout_history(table.timeline, History.of(table).archived) == [(T3, Layout("SORT", ("v",))),
                                                                          (t7, Layout("SORT", ("v",)))]
    assert table.timeline.head.timestamp == t7


def test_observe_reads_the_clustering_history_from_the_lsm_timeline(tmp_path):
    from tablespec.state import observe
    state = observe(_version_9_table(tmp_path))
    assert state.clusterings == ((T3, Layout("SORT", ("v",))),)
    assert [str(i) for i in state.pending] == [f"{T5}.clustering[inflight]"]
    assert set(state.pending_clustering) == {Instant(T5, "clustering", "inflight")}

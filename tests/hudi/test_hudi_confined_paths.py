"""Paths read from a table's own files stay inside the table: hoodie.properties keys, partition
paths and files in commit metadata, the files clean and rollback plans delete, the slices
clustering plans rewrite. Each crafted path is
refused in one line naming the file (and key), before anything changes; the folder beside the table
is untouched."""
from __future__ import annotations

import io
import os

import fastavro
import pytest
from test_hudi_rollback import ST, _fail, _make_table

from tablespec.errors import HudiFormatError, TablespecError
from tablespec.hudi.config import read_table_config
from tablespec.hudi.formats.clean_format import CLEANER_PLAN_SCHEMA, POLICY, VERSION
from tablespec.hudi.io import join_inside, path_inside
from tablespec.hudi.services.clean import resume_pending_cleans
from tablespec.hudi.services.clustering import decode_plan
from tablespec.hudi.services.rollback import ROLLBACK_PLAN_SCHEMA, resume_pending_rollbacks
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import Timeline, TimelineWriter
from tablespec.hudi.timeline.instant import new_instant_time


@pytest.mark.parametrize("part", ["../x", "a/../../x", "/etc", "s3://other/x", "a\\..\\x", "..", "a\0b"])
def test_join_inside_refuses_what_leads_outside(part):
    with pytest.raises(TablespecError, match=r"^hoodie.properties k: .* leads outside the table"):
        join_inside("/w/t", part, origin="hoodie.properties k")


def test_join_inside_and_path_inside_keep_what_is_inside():
    assert join_inside("/w/t", ".hoodie/.index_defs/index.json", origin="o") == "/w/t/.hoodie/.index_defs/index.json"
    assert path_inside("s3://b/w/t", "s3a://b/w/t/p/f.parquet", "o") == "s3://b/w/t/p/f.parquet"
    for outside in ("/w/t2/f", "/w/t/../t2/f", "/w/t", "s3://b/w/t/f"):
        with pytest.raises(TablespecError, match="is not a file of the table"):
            path_inside("/w/t", outside, "plan")


@pytest.fixture
def table(tmp_path):
    """A table tablespec's format layer wrote, and someone else's folder beside it."""
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("not tablespec's")
    return _make_table(str(tmp_path / "rb"))


def _tree(root) -> dict[str, bytes]:
    return {os.path.relpath(os.path.join(d, f), root): open(os.path.join(d, f), "rb").read()
            for d, _, files in os.walk(root) for f in files if "lock" not in f}


@pytest.mark.parametrize(("key", "value"), [
    ("hoodie.table.metadata.partitions", "files,../../../other"),
    ("hoodie.table.metadata.partitions.inflight", "secondary_index_a/../../x"),
    ("hoodie.table.metadata.partitions", "files,column_stats,my_partition"),
    ("hoodie.archivelog.folder", "../../other"),
    ("hoodie.archivelog.folder", "/tmp/x"),
    ("hoodie.table.index.defs.path", "../other/.hoodie/.index_defs/index.json"),
    ("hoodie.timeline.path", "s3://elsewhere/t"),
])
def test_a_path_key_leading_outside_is_refused_naming_file_and_key(table, key, value):
    base, _ = table
    props = os.path.join(base, ".hoodie", "hoodie.properties")
    with open(props, "a") as f:
        f.write(f"{key}={value}\n")
    with pytest.raises(HudiFormatError) as e:
        read_table_config(ST, base)
    assert str(e.value).startswith(f"{props}: {key}") and "\n" not in str(e.value)


@pytest.mark.parametrize("value", ["files,column_stats,bloom_filters,record_index,partition_stats",
                                   "files,expr_index_by_day,secondary_index_idx_name-2", ""])
def test_the_metadata_partitions_hudi_writes_are_read(table, value):
    base, _ = table
    with open(os.path.join(base, ".hoodie", "hoodie.properties"), "a") as f:
        f.write(f"hoodie.table.metadata.partitions={value}\n")
    assert read_table_config(ST, base).extra["hoodie.table.metadata.partitions"] == value


@pytest.mark.parametrize("edit", [
    lambda t: t.replace('"part=a"', '"../../other"', 1),
    lambda t: t.replace('"path" : "part=a/', '"path" : "part=a/../../../other/', 1),
    lambda t: t.replace('"partitionToWriteStats" : {', '"partitionToWriteStats" : {"x": 5, ', 1),
    lambda t: t.replace('"numWrites" : 2', '"numWrites" : "2"', 1),
])
def test_commit_metadata_with_paths_outside_or_a_wrong_shape_is_refused_naming_the_file(table, edit):
    base, ids = table
    path = os.path.join(base, ".hoodie", f"{ids['c1']}.commit")
    text = open(path).read()
    assert edit(text) != text
    open(path, "w").write(edit(text))
    timeline = Timeline.load(ST, base)
    with pytest.raises(HudiFormatError, match=rf"^{path}: "):
        timeline.commit_metadata(timeline.commits()[0])


def _pending(base, action, schema, record):
    plan = io.BytesIO()
    fastavro.writer(plan, schema, [record])
    writer = TimelineWriter(ST, base)
    return writer.request(action, new_instant_time(Timeline.load(ST, base).latest_time), plan.getvalue())


def test_a_rollback_plan_naming_a_file_outside_the_table_is_refused_before_any_change(table, tmp_path):
    base, ids = table
    failed = _fail(base, ids)
    keep = str(tmp_path / "other" / "keep.txt")
    requested = _pending(base, "rollback", ROLLBACK_PLAN_SCHEMA, {
        "instantToRollback": {"commitTime": failed, "action": "commit"},
        "RollbackRequests": [{"partitionPath": "part=a", "fileId": "", "latestBaseInstant": "",
                              "filesToBeDeleted": [f"file:{keep}", f"file:{base}/../other/keep.txt"],
                              "logBlocksToBeDeleted": {}}], "version": 1})
    before = _tree(tmp_path)
    with pytest.raises(TablespecError, match=rf"^{base}/.hoodie/{requested.file_name}: .* is not a file of the table"):
        resume_pending_rollbacks(HudiTable.open(base))
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("plan", [
    {"filePathsToBeDeletedPerPartition": {"part=a": [{"filePath": "file:{other}/keep.txt", "isBootstrapBaseFile": False}]}},
    {"filePathsToBeDeletedPerPartition": {}, "filesToBeDeletedPerPartition": {"../other": ["keep.txt"]}},
    {"filePathsToBeDeletedPerPartition": {}, "partitionsToBeDeleted": ["../other"]},
])
def test_a_clean_plan_naming_files_outside_the_table_is_refused_before_any_change(table, tmp_path, plan):
    base, ids = table
    other = str(tmp_path / "other")
    record = {"earliestInstantToRetain": {"timestamp": ids["c1"], "action": "commit", "state": "COMPLETED"},
              "lastCompletedCommitTimestamp": ids["c1"], "policy": POLICY, "filesToBeDeletedPerPartition": {},
              "version": VERSION, "partitionsToBeDeleted": [], "extraMetadata": {}}
    for key, value in plan.items():
        record[key] = {p: [{**f, "filePath": f["filePath"].format(other=other)} if isinstance(f, dict) else f
                           for f in files] for p, files in value.items()} if isinstance(value, dict) else value
    requested = _pending(base, "clean", CLEANER_PLAN_SCHEMA, record)
    before = _tree(tmp_path)
    with pytest.raises(TablespecError, match=rf"^{base}/.hoodie/{requested.file_name}: .*"):
        resume_pending_cleans(HudiTable.open(base))
    assert _tree(tmp_path) == before


@pytest.mark.parametrize(("partition", "path", "logs"), [
    ("../other", "p/f1_0-1-2_20250101000000001.parquet", []),
    ("p", "p/../../other/f1_0-1-2_20250101000000001.parquet", []),
    ("/abs", "f.parquet", []),
    ("p", "p/f1_0-1-2_20250101000000001.parquet", ["p/../../other/.f1_20250101000000001.log.1_0-1-2"]),  # merge-on-read
])
def test_a_clustering_plan_naming_a_slice_outside_the_table_is_refused(partition, path, logs):
    """Clustering rewrites the slices its plan names (their log files too), into their partitions: all stay inside."""
    plan = {"clusteringPlan": {"inputGroups": [{"slices": [{"fileId": "f1", "partitionPath": partition,
                                                            "dataFilePath": path, "deltaFilePaths": logs}]}]}}
    with pytest.raises(HudiFormatError, match=r"^/t/.hoodie/T.replacecommit.requested: slice 'f1' .* leads outside"):
        decode_plan(plan, "/t/.hoodie/T.replacecommit.requested")

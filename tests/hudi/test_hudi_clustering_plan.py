"""Clustering plans as Apache Hudi 0.14/0.15 writes them: the Avro container's embedded schema,
record for record, and plans round-tripping through encode/decode."""
import io
import json

import fastavro
import pytest

from tablespec.errors import HudiFormatError
from tablespec.hudi.services.clustering import (
    ClusteringGroup,
    ClusteringPlan,
    Layout,
    SliceInfo,
    decode_plan,
    encode_plan,
)

# Hudi 0.14/0.15 (hudi-common/src/main/avro, namespace org.apache.hudi.avro.model): per record,
# its fields in order with their types (named types by name) and defaults (absent: no default).
_MAP = ["null", {"type": "map", "values": "string"}]
HUDI = {
    "HoodieRequestedReplaceMetadata": [
        ("operationType", ["null", "string"], ""),
        ("clusteringPlan", ["HoodieClusteringPlan", "null"], None),
        ("extraMetadata", _MAP, None),
        ("version", ["int", "null"], 1)],
    "HoodieClusteringPlan": [
        ("inputGroups", ["null", {"type": "array", "items": "HoodieClusteringGroup"}], None),
        ("strategy", ["null", "HoodieClusteringStrategy"], None),
        ("extraMetadata", _MAP, None),
        ("version", ["int", "null"], 1),
        ("preserveHoodieMetadata", ["null", "boolean"], None)],
    "HoodieClusteringGroup": [
        ("slices", ["null", {"type": "array", "items": "HoodieSliceInfo"}], None),
        ("metrics", ["null", {"type": "map", "values": "double"}], None),
        ("numOutputFileGroups", ["int", "null"], 1),
        ("extraMetadata", _MAP, None),
        ("version", ["int", "null"], 1)],
    "HoodieSliceInfo": [
        ("dataFilePath", ["null", "string"], None),
        ("deltaFilePaths", ["null", {"type": "array", "items": "string"}], None),
        ("fileId", ["null", "string"], "<none>"),
        ("partitionPath", ["null", "string"], None),
        ("bootstrapFilePath", ["null", "string"], None),
        ("version", ["int", "null"], 1)],
    "HoodieClusteringStrategy": [
        ("strategyClassName", ["null", "string"], None),
        ("strategyParams", _MAP, None),
        ("version", ["int", "null"], 1)],
}


def _records(schema, out: dict) -> object:
    """Walk a parsed JSON schema: record name -> [(field, type with named types by name, default)]."""
    if isinstance(schema, list):
        return [_records(s, out) for s in schema]
    if isinstance(schema, dict) and schema.get("type") == "record":
        name = schema["name"].rsplit(".", 1)[-1]
        assert schema.get("namespace", "org.apache.hudi.avro.model") == "org.apache.hudi.avro.model" or \
            schema["name"].startswith("org.apache.hudi.avro.model.")
        out[name] = [(f["name"], _records(f["type"], out), f.get("default", "<none>")) for f in schema["fields"]]
        return name
    if isinstance(schema, dict) and schema.get("type") in ("array", "map"):
        key = "items" if schema["type"] == "array" else "values"
        return {"type": schema["type"], key: _records(schema[key], out)}
    if isinstance(schema, str):
        return schema.rsplit(".", 1)[-1]
    return schema


def plan() -> ClusteringPlan:
    slices = (SliceInfo("d=01", "f1-0", "/t/d=01/f1-0_0-1-2_1.parquet", 10),
              SliceInfo("d=01", "f2-0", "/t/d=01/f2-0_0-1-2_1.parquet", 20))
    return ClusteringPlan((ClusteringGroup(slices, 2),), Layout("ZORDER", ("a", "b")),
                          extra_metadata={"why": "test"})


def test_requested_file_embeds_hudis_schemas_field_for_field():
    reader = fastavro.reader(io.BytesIO(encode_plan(plan())))
    embedded: dict = {}
    _records(json.loads(reader.metadata["avro.schema"]), embedded)
    assert embedded == HUDI


def test_plan_round_trips_through_encode_and_decode():
    original = plan()
    decoded = decode_plan(next(iter(fastavro.reader(io.BytesIO(encode_plan(original))))), "t")
    assert [[(s.partition, s.file_id, s.data_file) for s in g.slices] for g in decoded.groups] == \
        [[(s.partition, s.file_id, s.data_file) for s in g.slices] for g in original.groups]
    assert [g.num_output_file_groups for g in decoded.groups] == [2]
    assert (decoded.layout, decoded.extra_metadata, decoded.strategy_class, decoded.params) == \
        (original.layout, {"why": "test"}, original.strategy_class, {})


def test_a_slice_of_log_files_only_decodes_without_a_base_file():
    """Apache Hudi 1.2 plans a file group of log files only with an empty `dataFilePath`; a slice
    naming neither a base file nor a log file is refused, naming the file."""
    log = "2024/.f1-0_20240101000000000.log.1_0-1-1"
    requested = {"clusteringPlan": {"inputGroups": [{"slices": [
        {"fileId": "f1-0", "partitionPath": "2024", "dataFilePath": "", "deltaFilePaths": [log]}]}]}}
    [[s]] = [g.slices for g in decode_plan(requested, "t.clustering.requested").groups]
    assert (s.data_file, s.file_name, s.delta_files) == (None, None, (log,))
    requested["clusteringPlan"]["inputGroups"][0]["slices"][0]["deltaFilePaths"] = []
    with pytest.raises(HudiFormatError, match=r"t.clustering.requested: group 0 has a slice without fileId, or with "
                                              "neither a dataFilePath nor deltaFilePaths"):
        decode_plan(requested, "t.clustering.requested")

import json

from tablespec.hudi.formats.commit import CommitMetadata, WriteStat, to_hudi_json


def _metadata_files(base):
    return sorted(p for p in (base / ".hoodie").iterdir()
                  if p.is_file() and p.name[0].isdigit() and p.stat().st_size > 0)


def test_every_fixture_commit_file_round_trips_byte_for_byte(fixture_table, any_name):
    files = _metadata_files(fixture_table(any_name))
    for path in files:
        raw = path.read_bytes()
        meta = CommitMetadata.from_json(raw)
        assert CommitMetadata.from_json(meta.to_json()) == meta
        assert meta.to_json() == raw, path.name  # same layout as Hudi's Jackson output
        assert meta.to_dict() == json.loads(raw)


def test_fixture_commit_fields(fixture_table):
    base = fixture_table("cow_v6_simplekeygen_nonhivestyle")
    meta = CommitMetadata.from_json((base / ".hoodie/20240418172804498.commit").read_bytes())
    assert meta.operation_type == "UPSERT" and meta.compacted is False
    assert meta.partition_to_replace_file_ids is None
    assert json.loads(meta.schema)["name"] == "v6_simplekeygen_nonhivestyle_record"
    new, updated = meta.partition_to_write_stats["30"][0], meta.partition_to_write_stats["10"][0]
    assert new.prev_commit == "null" and new.num_inserts == 1 and new.runtime_stats["totalCreateTime"] == 90
    assert updated.prev_commit == "20240418172802262" and updated.num_update_writes == 1
    assert updated.file_size_in_bytes == 441352 and updated.partition_path == "10"
    assert updated.path == "10/97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0_0-119-166_20240418172804498.parquet"


def test_delta_write_stat_keeps_extra_keys_in_order(fixture_table):
    base = fixture_table("mor_parquet_v6_simplekeygen_nonhivestyle")
    meta = CommitMetadata.from_json((base / ".hoodie/20250121000557095.deltacommit").read_bytes())
    stat = meta.partition_to_write_stats["10"][0]
    assert list(stat.extra) == ["logVersion", "logOffset", "baseFile", "logFiles", "recordsStats"]
    assert stat.extra["logFiles"] == [".26e33b7b-aa9f-4f2e-b683-a90ef0d5861d-0_20250121000547796.log.1_0-33-47"]


def test_new_write_stat_defaults_look_like_hudi():
    d = WriteStat(file_id="f-0", path="p/f.parquet", num_writes=2, num_inserts=2, partition_path="p").to_dict()
    assert list(d)[:4] == ["fileId", "path", "cdcStats", "prevCommit"]
    assert d["prevCommit"] == "null" and d["cdcStats"] is None and d["runtimeStats"] is None
    assert d["totalWriteErrors"] == 0 and len(d) == 23


def test_replacecommit_emits_partition_to_replace_file_ids_last():
    meta = CommitMetadata(partition_to_write_stats={"p": [WriteStat(file_id="n-0")]}, operation_type="CLUSTER",
                          partition_to_replace_file_ids={"p": ["a-0"], "q": []})
    raw = meta.to_json()
    assert list(json.loads(raw)) == ["partitionToWriteStats", "compacted", "extraMetadata", "operationType",
                                     "partitionToReplaceFileIds"]
    assert b'"q" : [ ]' in raw
    back = CommitMetadata.from_json(raw)
    assert back == meta and back.partition_to_replace_file_ids == {"p": ["a-0"], "q": []}
    assert "partitionToReplaceFileIds" not in json.loads(CommitMetadata(operation_type="INSERT").to_json())


def test_unknown_top_level_keys_survive_and_empty_file_is_empty_metadata():
    raw = b'{"partitionToWriteStats":{},"compacted":false,"extraMetadata":{},"operationType":null,"future":1}'
    meta = CommitMetadata.from_json(raw)
    assert meta.extra == {"future": 1} and json.loads(meta.to_json())["future"] == 1
    assert CommitMetadata.from_json(b"") == CommitMetadata()


def test_hudi_json_layout():
    assert to_hudi_json({}) == b"{ }"
    assert to_hudi_json({"a": {"b": [{"c": None}, {}], "d": []}, "e": "q\"\\\n\x01é"}) == (
        b'{\n  "a" : {\n    "b" : [ {\n      "c" : null\n    }, { } ],\n    "d" : [ ]\n  },\n'
        + '  "e" : "q\\"\\\\\\n\\u0001é"\n}'.encode())

"""A deltacommit's rollback on table version 6: one rollback command block per file group it
appended to, in a new log file after every log file of the slice; resumed, it writes no second."""
from __future__ import annotations

from tablespec.hudi.formats.logfile import BlockType, Header, avro_block, encode_block, read_blocks
from tablespec.hudi.formats.markers import write_marker
from tablespec.hudi.io import LOCAL, LocalStorage
from tablespec.hudi.services.log_rollback import (
    append_rollback_blocks,
    failed_log_files,
    log_requests,
    slice_logs,
)

FID, BASE = "00000000-aaaa-0", "20240101000000000"
SCHEMA = {"type": "record", "name": "r", "fields": [{"name": "k", "type": "string"}]}


def test_a_failed_deltacommit_gets_one_command_block_per_file_group(tmp_path):
    part = tmp_path / "2024-01-01"
    part.mkdir()
    ok, failed = f".{FID}_{BASE}.log.1_0-1-1", f".{FID}_{BASE}.log.2_0-5-6"
    (part / ok).write_bytes(encode_block(avro_block([{"k": "a"}], SCHEMA, "20240102000000000")))
    (part / failed).write_bytes(encode_block(avro_block([{"k": "b"}], SCHEMA, "20240103000000000"))[:40])  # torn
    write_marker(LOCAL, str(tmp_path), "20240103000000000", "2024-01-01", failed, "APPEND")
    requests = log_requests(LOCAL, str(tmp_path), "20240103000000000")
    assert requests == [{"partitionPath": "2024-01-01", "fileId": FID, "latestBaseInstant": BASE,
                         "filesToBeDeleted": [], "logBlocksToBeDeleted": {failed: 1}}]
    first = append_rollback_blocks(LOCAL, str(tmp_path), "20240104000000000", "20240103000000000", requests)
    again = append_rollback_blocks(LOCAL, str(tmp_path), "20240104000000000", "20240103000000000", requests)
    assert first == again and list(first["2024-01-01"]) == [str(part / f".{FID}_{BASE}.log.3_0-0-0")]
    [block] = read_blocks((part / f".{FID}_{BASE}.log.3_0-0-0").read_bytes())
    assert block.type == BlockType.COMMAND and block.header[Header.TARGET_INSTANT_TIME] == "20240103000000000"
    assert block.instant == "20240104000000000"
    assert failed_log_files(LOCAL, str(tmp_path), requests) == {"2024-01-01": {failed: 40}}


class _ListingStorage(LocalStorage):
    """Local files, counting the folders listed (a real store: the listings happen)."""

    def __init__(self):
        self.listed: list[str] = []

    def list_dir(self, path):
        self.listed.append(path)
        return super().list_dir(path)


def test_a_rollback_lists_each_partition_once_for_all_its_file_groups(tmp_path):
    """Three file groups in one partition, one in another: one listing per partition serves both the
    command blocks and the failed log files, with the result the per-call listings give."""
    target, groups = "20240103000000000", {"2024-01-01": ["f1-0", "f2-0", "f3-0"], "2024-01-02": ["f4-0"]}
    for partition, fids in groups.items():
        (tmp_path / partition).mkdir()
        for fid in fids:
            (tmp_path / partition / f".{fid}_{BASE}.log.1_0-1-1").write_bytes(
                encode_block(avro_block([{"k": fid}], SCHEMA, "20240102000000000")))
            failed = f".{fid}_{BASE}.log.2_0-5-6"
            (tmp_path / partition / failed).write_bytes(encode_block(avro_block([{"k": "x"}], SCHEMA, target)))
            write_marker(LOCAL, str(tmp_path), target, partition, failed, "APPEND")
    requests = log_requests(LOCAL, str(tmp_path), target)
    expected_failed = failed_log_files(LOCAL, str(tmp_path), requests)
    storage = _ListingStorage()
    listed = slice_logs(storage, str(tmp_path), requests)
    written = append_rollback_blocks(storage, str(tmp_path), "20240104000000000", target, requests, listed)
    assert failed_log_files(storage, str(tmp_path), requests, listed) == expected_failed
    assert sorted(storage.listed) == [str(tmp_path / p) for p in groups]
    assert {p: sorted(f.rsplit("/", 1)[-1] for f in files) for p, files in written.items()} == {
        p: [f".{fid}_{BASE}.log.3_0-0-0" for fid in fids] for p, fids in groups.items()}
    assert sum(len(v) for v in expected_failed.values()) == 4

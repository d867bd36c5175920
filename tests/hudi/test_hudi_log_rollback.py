"""A deltacommit's rollback on table version 6: one rollback command block per file group it
appended to, in a new log file after every log file of the slice; resumed, it writes no second."""
from __future__ import annotations

from tablespec.hudi.formats.logfile import BlockType, Header, avro_block, encode_block, read_blocks
from tablespec.hudi.formats.markers import write_marker
from tablespec.hudi.io import LOCAL
from tablespec.hudi.services.log_rollback import append_rollback_blocks, failed_log_files, log_requests

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

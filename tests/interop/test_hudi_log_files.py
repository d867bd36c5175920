"""Log files Apache Hudi 0.15 writes (its archived timeline, its metadata table's log files) read
block by block with tablespec's log format, and re-encode to Hudi's exact bytes."""
from __future__ import annotations

import json
from pathlib import Path

from _support import storage_and_base
from interop_support import hudi_write

from tablespec.hudi.formats.logfile import BlockType, Header, avro_content, avro_records, encode_block, read_blocks
from tablespec.hudi.timeline.active import Timeline

OPTIONS = {"hoodie.table.name": "archived", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
           "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1",
           "hoodie.metadata.compact.max.delta.commits": "2",  # archiving waits for the metadata table's compaction
           "hoodie.upsert.shuffle.parallelism": "1", "hoodie.insert.shuffle.parallelism": "1"}


def test_hudi_archived_timeline_and_metadata_logs_read_and_reencode(hudi, tmp_path):
    base = tmp_path / "archived"
    for i in range(5):
        df = hudi.createDataFrame([(j, i, f"p{j % 2}") for j in range(i, i + 2)], "id int, ts int, p string")
        hudi_write(df, str(base), OPTIONS)

    archives = sorted((base / ".hoodie" / "archived").glob(".commits_.archive.*"))
    assert archives, "Hudi archived nothing"
    archived = set()
    for path in archives:
        data = path.read_bytes()
        blocks = list(read_blocks(data))
        assert blocks and all(b.type == BlockType.AVRO_DATA for b in blocks)
        assert b"".join(encode_block(b) for b in blocks) == data          # the envelope, byte for byte
        for block in blocks:
            records = avro_records(block)
            assert avro_content(records, json.loads(block.header[Header.SCHEMA])) == block.content
            archived |= {(r["commitTime"], r["actionType"]) for r in records if r["actionState"] == "COMPLETED"}
    storage, root = storage_and_base(str(base))
    active = {(i.timestamp, i.action) for i in Timeline.load(storage, root).completed()}
    commits = {t for t, a in archived | active if a == "commit"}
    assert len(commits) == 5 and not archived & active

    logs = sorted(Path(base, ".hoodie", "metadata", "files").glob(".files-*.log.*"))
    assert logs, "Hudi's metadata table has no log files"
    kinds = set()
    for path in logs:
        data = path.read_bytes()
        blocks = list(read_blocks(data))
        kinds |= {b.type for b in blocks}
        assert BlockType.CORRUPT not in kinds
        assert b"".join(encode_block(b) for b in blocks) == data
        assert all(b.instant for b in blocks)
    assert BlockType.HFILE_DATA in kinds

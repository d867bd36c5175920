"""HFiles of Apache Hudi 0.15's metadata table read with tablespec's HFile reader (base files and the
HFILE_DATA blocks of its log files), re-written byte for byte, merged into the `files` listing that
equals the table's files on disk; and HFiles tablespec writes read by Hudi's own HFile reader."""
from __future__ import annotations

import os
from pathlib import Path

from interop_support import hudi_write

from tablespec.hudi.formats.hfile import HFileReader, merge_files_records, metadata_records, write_hfile
from tablespec.hudi.formats.logfile import BlockType, Header, encode_block, read_blocks

OPTIONS = {"hoodie.table.name": "mdt_hfiles", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
           "hoodie.cleaner.commits.retained": "1",               # cleans: deletions in the files partition
           "hoodie.metadata.compact.max.delta.commits": "2",     # a compaction: a base HFile of every key
           "hoodie.upsert.shuffle.parallelism": "1", "hoodie.insert.shuffle.parallelism": "1"}


def _instant(name: str) -> str:
    """The instant a metadata file slice's file names carry (base file: last `_` part; log file: the
    base instant before `.log.`)."""
    return name.split(".log.")[0].rsplit("_", 1)[1] if ".log." in name else name[:-len(".hfile")].rsplit("_", 1)[1]


def test_hudi_metadata_hfiles_read_rewrite_and_list_the_table(hudi, tmp_path):
    base = tmp_path / "mdt"
    for i, parts in enumerate([("a", "b"), ("a", "b"), ("b", "c"), ("a", "c")]):
        rows = [(j, i, parts[j % 2]) for j in range(i, i + 4)]
        hudi_write(hudi.createDataFrame(rows, "id int, ts int, p string"), str(base), OPTIONS)

    files_dir = base / ".hoodie" / "metadata" / "files"
    hfiles = sorted(files_dir.glob("files-*.hfile"))
    logs = sorted(files_dir.glob(".files-*.log.*"))
    assert len(hfiles) >= 2 and logs, "Hudi compacted no files partition"
    completed = {p.name.split(".")[0] for p in (base / ".hoodie" / "metadata" / ".hoodie").glob("*.deltacommit")}
    slice_instant = max(_instant(p.name) for p in hfiles)

    # every base HFile reads, and tablespec writes the same records and file info back byte for byte
    merged: list = []
    for path in hfiles:
        data = path.read_bytes()
        reader = HFileReader(data, path.name)
        records = list(reader.records())
        assert len(records) == reader.entry_count and records == sorted(records)
        assert reader.file_info[b"minRecordKey"] == records[0][0] == b"__all_partitions__"
        again = write_hfile(records, {k: v for k, v in reader.file_info.items()},
                            meta_blocks={"bloomFilter": reader.meta_block(b"bloomFilter")})
        assert again == data, f"{path.name}: tablespec's re-write differs from Hudi's"
        assert all(reader.get(k) == v for k, v in records) and reader.get(b"p") is None
        if _instant(path.name) == slice_instant:
            merged += metadata_records(reader)

    # every HFILE_DATA log block holds an inline HFile that reads and re-writes alike
    kinds = set()
    for path in logs:
        data = path.read_bytes()
        blocks = list(read_blocks(data))
        assert b"".join(encode_block(b) for b in blocks) == data
        for block in blocks:
            kinds.add(block.type)
            if block.type != BlockType.HFILE_DATA:
                continue
            reader = HFileReader(block.content, path.name)
            records = list(reader.records())
            assert write_hfile(records, {b"schema": reader.file_info[b"schema"]}, key_range=False) == block.content
            if _instant(path.name) == slice_instant and block.instant in completed:
                merged += metadata_records(reader, block.header[Header.SCHEMA])
    assert BlockType.HFILE_DATA in kinds

    # the latest file slice of the files partition lists exactly the table's data files, with their sizes
    listing = merge_files_records(merged)
    on_disk: dict[str, dict[str, int]] = {}
    for root, dirs, names in os.walk(base):
        dirs[:] = [d for d in dirs if d != ".hoodie"]
        for name in names:
            if name.endswith(".parquet"):
                on_disk.setdefault(Path(root).name, {})[name] = Path(root, name).stat().st_size
    assert listing.partitions == {"a", "b", "c"} == set(on_disk)
    assert listing.files == on_disk
    assert any(len(files) < 4 for files in on_disk.values()), "nothing was cleaned"

    # the other direction: Hudi's own HFile reader reads what tablespec writes
    records = list(HFileReader(next(p for p in hfiles if _instant(p.name) == slice_instant).read_bytes()).records())
    synthetic = [(f"key-{i:04d}".encode(), os.urandom(i % 50)) for i in range(0, 400, 2)]
    for rows, compression, block_size in ((records, "gzip", 64), (synthetic, "gzip", 512), (synthetic, "none", 300)):
        data = write_hfile(rows, {"schema": '{"type": "bytes"}'}, block_size=block_size, compression=compression)
        assert HFileReader(data).trailer.data_index_count > 3
        assert _hudi_reads(hudi, data, rows)


def _hudi_reads(spark, data: bytes, rows: list[tuple[bytes, bytes]]) -> bool:
    """Apache Hudi's HFile reader (hudi-io's HFileReaderImpl) scans `data` to exactly `rows`, seeks
    to every key and to keys between them, and finds the file info."""
    jvm = spark._jvm

    def open_reader():
        stream = jvm.org.apache.hudi.io.ByteArraySeekableDataInputStream(
            jvm.org.apache.hudi.common.util.io.ByteBufferBackedInputStream(bytearray(data)))
        reader = jvm.org.apache.hudi.io.hfile.HFileReaderImpl(stream, len(data))
        reader.initializeMetadata()
        return reader

    def cell(reader) -> tuple[bytes, bytes]:
        kv = reader.getKeyValue().get()
        raw = bytes(kv.getBytes())
        key = raw[kv.getKeyContentOffset():kv.getKeyContentOffset() + kv.getKeyContentLength()]
        return key, raw[kv.getValueOffset():kv.getValueOffset() + kv.getValueLength()]

    reader = open_reader()
    assert reader.getNumKeyValueEntries() == len(rows)
    info = reader.getMetaInfo(jvm.org.apache.hudi.io.hfile.UTF8StringKey("schema"))
    assert bytes(info.get()) == b'{"type": "bytes"}'
    scanned = []
    if reader.seekTo():
        scanned.append(cell(reader))
        while reader.next():
            scanned.append(cell(reader))
    reader.close()
    assert scanned == rows

    found = jvm.org.apache.hudi.io.hfile.HFileReader.SEEK_TO_FOUND
    reader = open_reader()                      # Hudi's seeks go forward from the first cell: keys in order
    assert reader.seekTo()
    for i in range(1, len(rows), 7):
        key, value = rows[i]
        miss = rows[i - 1][0] + b"~"            # between the key before and `key`
        assert reader.seekTo(jvm.org.apache.hudi.io.hfile.UTF8StringKey(miss.decode())) != found
        assert reader.seekTo(jvm.org.apache.hudi.io.hfile.UTF8StringKey(key.decode())) == found
        assert cell(reader) == (key, value)
    reader.close()
    return True

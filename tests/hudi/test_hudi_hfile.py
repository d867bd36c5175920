"""HFile as Hudi's metadata table writes it: files tablespec writes read back (blocks, seeks through
the block index, file info); corrupt files are refused. Files Apache Hudi writes, and Hudi reading
tablespec's, are checked in tests/interop/test_hudi_hfiles.py."""
from __future__ import annotations

import json
import random
import struct

import pytest
from _support import RecordingStorage

from tablespec.errors import HudiFormatError
from tablespec.hudi.formats.hfile import (
    CODECS,
    COMPARATOR,
    DATA,
    FILE_INFO,
    HEADER_SIZE,
    META,
    ROOT_INDEX,
    TRAILER_SIZE,
    HFileReader,
    Trailer,
    _compress,
    _encode_file_info,
    _fast_cells,
    _walk_cells,
    cell_key,
    merge_files_records,
    metadata_records,
    write_hfile,
)

RECORDS = [(f"key-{i:05d}".encode(), f"value-{i}-".encode() * (i % 7 + 1)) for i in range(0, 3000, 3)]
INFO = {"schema": '{"type": "string"}', b"bloomFilterTypeCode": b"DYNAMIC_V0"}


def _blocks(data: bytes, magic: bytes) -> list[int]:
    found, pos = [], data.find(magic)
    while pos >= 0:
        found.append(pos)
        pos = data.find(magic, pos + 1)
    return found


@pytest.mark.parametrize("compression", ["gzip", "none"])
def test_records_file_info_and_seeks_read_back(compression):
    data = write_hfile(RECORDS, INFO, block_size=2048, compression=compression,
                       meta_blocks={"bloomFilter": b"filter bytes"})
    reader = HFileReader(data)
    assert len(_blocks(data, DATA)) > 5 and reader.trailer.data_index_count == len(_blocks(data, DATA))
    assert reader.codec == compression and reader.entry_count == len(RECORDS)
    assert list(reader.records()) == RECORDS
    assert reader.file_info[b"schema"] == b'{"type": "string"}' and reader.schema == {"type": "string"}
    assert reader.file_info[b"bloomFilterTypeCode"] == b"DYNAMIC_V0"
    assert reader.file_info[b"minRecordKey"] == b"key-00000" and reader.file_info[b"maxRecordKey"] == b"key-02997"
    assert reader.meta_block(b"bloomFilter") == b"filter bytes" and reader.meta_block(b"other") is None
    # point lookups through the block index: each block's first and last key, misses between,
    # before the first and after the last key
    for key, value in RECORDS[::37] + RECORDS[-1:]:
        assert reader.get(key) == value and reader.get(key.decode()) == value
    for miss in (b"", b"key-00001", b"key-02998", b"key-0", b"zz", RECORDS[10][0] + b"\x00"):
        assert reader.get(miss) is None
    wanted = [k for k, _ in RECORDS[5::11]] + [b"key-00002", b"a", b"zzz"]
    assert list(reader.get_many(reversed(wanted))) == [(k, v) for k, v in RECORDS[5::11]]


def test_an_empty_file_and_a_one_record_file():
    empty = HFileReader(write_hfile([], {"schema": "{}"}))
    assert list(empty.records()) == [] and empty.get(b"k") is None and empty.entry_count == 0
    one = HFileReader(write_hfile([("__all_partitions__", b"v")], {}))
    assert list(one.records()) == [(b"__all_partitions__", b"v")] and one.get("__all_partitions__") == b"v"
    assert b"minRecordKey" not in HFileReader(write_hfile([("k", b"v")], {}, key_range=False)).file_info


def test_a_corrupt_checksum_is_refused():
    data = bytearray(write_hfile(RECORDS, INFO, block_size=2048))
    second = _blocks(bytes(data), DATA)[1]
    data[second + HEADER_SIZE + 5] ^= 0x01
    reader = HFileReader(bytes(data), source="files-0000-0_0-1-1_001.hfile")   # the index is intact
    assert reader.get(RECORDS[0][0]) == RECORDS[0][1]
    with pytest.raises(HudiFormatError, match=r"^files-0000-0_0-1-1_001.hfile: DATABLK\* block at offset "
                                              rf"{second}: checksum mismatch"):
        list(reader.records())
    # in the load-on-open section the file is refused at once
    data = bytearray(write_hfile(RECORDS, INFO))
    data[_blocks(bytes(data), FILE_INFO)[0] + HEADER_SIZE] ^= 0x01
    with pytest.raises(HudiFormatError, match="FILEINF2 block at offset .*: checksum mismatch"):
        HFileReader(bytes(data))


def _hudi_1x_block(magic: bytes, data: bytes, slots: bool) -> bytes:
    """A block as Hudi 1.x's native HFile writer (hudi-io) writes it: gzip, checksum type NULL
    (0), 16384 bytes per checksum, previous block offset -1 and, in 1.2, a zeroed slot of one int
    per 16384 bytes of header and data counted in the on-disk size (no slot at all: the writer's
    first revision)."""
    stored = _compress(data, CODECS["gzip"])
    with_header = HEADER_SIZE + len(stored)
    slot = 4 * -(-with_header // 16384) if slots else 0
    return magic + struct.pack(">iiqbii", len(stored) + slot, len(data), -1, 0, 16384, with_header) + stored \
        + b"\x00" * slot


def _hudi_1x_hfile(records: list[tuple[bytes, bytes]], slots: bool = True) -> bytes:
    """An HFile laid out as Hudi 1.x writes it: full KeyValue keys and a memstore timestamp in the
    cells, index keys and hfile.LASTKEY holding the row alone (length-prefixed), no
    total_uncompressed_bytes in the trailer."""
    cells = b"".join(struct.pack(">ii", len(cell_key(k)), len(v)) + cell_key(k) + v + b"\x00" for k, v in records)
    data = _hudi_1x_block(DATA, cells, slots)
    meta = _hudi_1x_block(META, b"bloom bits", slots)
    row_key = struct.pack(">h", len(records[0][0])) + records[0][0]
    root = _hudi_1x_block(ROOT_INDEX, struct.pack(">qi", 0, len(data)) + bytes([len(row_key)]) + row_key, slots)
    meta_root = _hudi_1x_block(ROOT_INDEX, struct.pack(">qi", len(data), len(meta)) + b"\x0bbloomFilter", slots)
    last = struct.pack(">h", len(records[-1][0])) + records[-1][0]
    info = _hudi_1x_block(FILE_INFO, _encode_file_info({
        b"schema": b'{"type": "string"}', b"hfile.LASTKEY": last, b"KEY_VALUE_VERSION": struct.pack(">i", 1),
        b"MAX_MEMSTORE_TS_KEY": struct.pack(">q", 0)}), slots)
    load_on_open = len(data) + len(meta)
    trailer = Trailer(load_on_open + len(root) + len(meta_root), load_on_open, 0, 0, 1, 1, len(records), 1, 0, 0,
                      COMPARATOR, CODECS["gzip"]).encode()
    return data + meta + root + meta_root + info + trailer


@pytest.mark.parametrize("slots", [True, False], ids=["zeroed-checksum-slots", "no-checksum-slots"])
def test_hfiles_hudi_1x_writes_are_read(slots):
    """Hudi 1.x writes checksum type NULL: nothing to check (Hudi's native reader checks none
    either); a corrupt block is still refused by its gzip CRC, a wrong slot by its size."""
    records = RECORDS[:40]
    data = _hudi_1x_hfile(records, slots)
    reader = HFileReader(data, source="files-0000-0_0-5-4_00000000000000010.hfile")
    assert list(reader.records()) == records and reader.get(records[7][0]) == records[7][1]
    assert reader.get(b"key-00001") is None and reader.meta_block(b"bloomFilter") == b"bloom bits"
    assert reader.schema == {"type": "string"} and reader.codec == "gzip"

    corrupt = bytearray(data)
    corrupt[HEADER_SIZE + 20] ^= 0x01                     # inside the data block's deflate stream
    with pytest.raises(HudiFormatError, match=r"^files-0000-0_0-5-4_00000000000000010.hfile: DATABLK\* block "
                                              r"at offset 0 does not decompress"):
        list(HFileReader(bytes(corrupt), source="files-0000-0_0-5-4_00000000000000010.hfile").records())
    # a slot two ints long where one chunk takes one: the sizes disagree
    longer = bytearray(data)
    struct.pack_into(">i", longer, 8, struct.unpack_from(">i", data, 8)[0] + 8)
    with pytest.raises(HudiFormatError, match=r"DATABLK\* block at offset 0 has (12|8) bytes after its data, its "
                                              r"header calls for 4 \(the file is corrupt\)"):
        list(HFileReader(bytes(longer)).records())


def test_not_an_hfile_is_refused_with_a_reason():
    data = write_hfile(RECORDS[:3], INFO)
    with pytest.raises(HudiFormatError, match="too short for an HFile"):
        HFileReader(b"x" * 100)
    with pytest.raises(HudiFormatError, match=r"HFile version 2\.0 is not supported"):
        HFileReader(data[:-4] + struct.pack(">I", 2))
    with pytest.raises(HudiFormatError, match="no HFile trailer magic"):
        HFileReader(data[:-TRAILER_SIZE] + b"X" + data[-TRAILER_SIZE + 1:])
    root = _blocks(data, ROOT_INDEX)[0]
    with pytest.raises(HudiFormatError, match="expected a IDXROOT2 block"):
        HFileReader(data[:root] + b"IDXROOTX" + data[root + 8:])
    with pytest.raises(HudiFormatError, match="must be sorted and unique"):
        write_hfile([(b"b", b""), (b"a", b"")], {})
    with pytest.raises(HudiFormatError, match="compression 'snappy' is not supported"):
        write_hfile([], {}, compression="snappy")


SCHEMA = {"type": "record", "name": "HoodieMetadataRecord", "namespace": "org.apache.hudi.avro.model", "fields": [
    {"name": "key", "type": {"type": "string", "avro.java.string": "String"}},
    {"name": "type", "type": "int"},
    {"name": "filesystemMetadata", "type": ["null", {"type": "map", "values": {
        "type": "record", "name": "HoodieMetadataFileInfo",
        "fields": [{"name": "size", "type": "long"}, {"name": "isDeleted", "type": "boolean"}]}}],
     "default": None}]}


def _files_hfile(records: dict[str, dict[str, tuple[int, bool]]], schema_in_file: bool = True) -> HFileReader:
    import io
    import json

    import fastavro
    parsed = fastavro.parse_schema(SCHEMA)
    cells = []
    for key in sorted(records):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, {
            "key": key, "type": 1 if key == "__all_partitions__" else 2,
            "filesystemMetadata": {n: {"size": s, "isDeleted": d} for n, (s, d) in records[key].items()}})
        cells.append((key, buf.getvalue()))
    return HFileReader(write_hfile(cells, {"schema": json.dumps(SCHEMA)} if schema_in_file else {}))


def test_files_partition_records_merge_oldest_first():
    base = _files_hfile({"__all_partitions__": {"p0": (0, False), "p1": (0, False)},
                         "p0": {"a.parquet": (10, False), "b.parquet": (20, False)}, "p1": {"c.parquet": (5, False)}})
    log = _files_hfile({"__all_partitions__": {"p1": (0, True), "p2": (0, False)},
                        "p0": {"a.parquet": (0, True), "d.parquet": (7, False), "b.parquet": (15, False)},
                        "p2": {"e.parquet": (1, False)}}, schema_in_file=False)
    records = list(metadata_records(base)) + list(metadata_records(log, json.dumps(SCHEMA)))
    assert [k for k, _ in records][:3] == ["__all_partitions__", "p0", "p1"]
    listing = merge_files_records(records)
    assert listing.partitions == {"p0", "p2"}
    assert listing.files == {"p0": {"b.parquet": 20, "d.parquet": 7}, "p2": {"e.parquet": 1}}
    with pytest.raises(HudiFormatError, match="no Avro schema"):
        list(metadata_records(log))


def _walked(reader: HFileReader) -> list[tuple[bytes, bytes]]:
    """Every cell, found by walking each block cell by cell (the reference for the vectorized path)."""
    out = []
    for n in range(reader.block_count):
        data = reader._block_at(reader._index[n][0], DATA).data
        starts, lengths, value_start, value_end = _walk_cells(data, True, 0)
        out += [(data[a:a + k], data[b:e]) for a, k, b, e in zip(starts, lengths, value_start, value_end)]
    return out


@pytest.mark.parametrize("records", [
    [(f"{i}".encode(), b"v" * (i % 5)) for i in sorted(range(1, 4000, 7), key=lambda i: str(i))],   # mixed lengths
    [(b"a", b""), (b"a\x00", b"x"), (b"a\x00\x00", b"y"), (b"b\x00", b"z"), (b"b\x01", b"w")],       # rows ending in NUL
    # a value holding the bytes every cell's key ends with: the vectorized path must not be fooled
    [(f"k{i:04d}".encode(), b"\x00\x7f" + b"\xff" * 7 + b"\x04" + bytes([i % 256])) for i in range(600)],
    # runs of 0xff of every length after a 0x7f, and a suffix cut short, at every alignment
    [(f"r{i:03d}".encode(), b"\x7f" * (i % 2) + b"\xff" * (i % 13) + b"\x7f" + b"\xff" * (i % 7) + b"\x00\x7f\xff\xff\xff")
     for i in range(300)],
])
def test_cells_decoded_in_bulk_equal_a_cell_by_cell_walk(records):
    reader = HFileReader(write_hfile(records, INFO, block_size=512))
    assert list(reader.records()) == _walked(reader) == records
    if not any(cell_key(b"")[2:] in value for _, value in records):      # only a value holding a suffix is walked
        assert all(_fast_cells(reader._block_at(offset, DATA).data, True) is not None for offset, _, _ in reader._index)
    keys = [k for k, _ in records]
    assert list(reader.get_many(keys[::-3] + [b"zz", b"", keys[0] + b"\x00\x00\x00"])) == sorted(
        (k, v) for k, v in records[::-1][::3])
    assert all(reader.get(k) == v for k, v in records)


def test_a_stored_hfile_is_read_by_ranges_and_its_index_kept(tmp_path):
    noise = random.Random(1)
    records = [(f"key-{i:06d}".encode(), noise.randbytes(150)) for i in range(20000)]   # 3 MB that gzip keeps
    data = write_hfile(records, INFO, block_size=16384)
    path = str(tmp_path / "f.hfile")
    storage = RecordingStorage()
    storage.write_bytes(path, data)
    reader = HFileReader.open(storage, path, len(data))
    assert reader.block_count > 50 and (path, 0, -1) not in storage.reads       # never the whole file
    assert len(storage.reads) == 2 and sum(n for _, _, n in storage.reads) < len(data) / 20    # trailer, load-on-open
    wanted = [records[7][0], records[19990][0], b"key-0000071"]
    storage.reads.clear()
    assert list(reader.get_many(wanted)) == [records[7], records[19990]]
    assert len(storage.reads) == 2 and sum(n for _, _, n in storage.reads) < len(data) / 20    # the two blocks only
    storage.reads.clear()
    near = [records[100][0], records[2000][0]]                              # blocks close by: one read
    assert list(reader.get_many(near)) == [records[100], records[2000]] and len(storage.reads) == 1
    storage.reads.clear()
    again = HFileReader.open(storage, path, len(data))                     # trailer and index: from memory
    assert not storage.reads and again.file_info == reader.file_info
    assert list(again.records()) == records and len(storage.reads) == 1   # a whole scan: one read of the data
    with pytest.raises(HudiFormatError, match="short: 10 bytes is too short for an HFile"):
        HFileReader.open(storage, str(tmp_path / "short"), 10)

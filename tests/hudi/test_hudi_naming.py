import re

import pytest

from tablespec.hudi.formats.naming import (
    BaseFileName,
    LogFileName,
    bucket_file_id,
    bucket_of,
    new_file_id,
    write_token,
)


def test_every_fixture_data_file_name_parses(fixture_table, any_name):
    base = fixture_table(any_name)
    names = [p.name for p in base.rglob("*") if p.is_file() and ".hoodie" not in p.parts[len(base.parts):]]
    for name in names:
        if name.endswith(".parquet"):
            parsed = BaseFileName.parse(name)
            assert parsed is not None and parsed.format() == name
            assert re.fullmatch(r"[0-9a-f-]{36}-0", parsed.file_id) and parsed.extension == ".parquet"
        elif ".log." in name:
            parsed = LogFileName.parse(name)
            assert parsed is not None and parsed.format() == name
        else:
            assert name in (".hoodie_partition_metadata", ".DS_Store")
            assert BaseFileName.parse(name) is None and LogFileName.parse(name) is None


def test_base_file_name_parts():
    name = "6db57019-98ee-480e-8eb1-fb3de48e1c24-0_1-119-167_20240418172804498.parquet"
    parsed = BaseFileName.parse(name)
    assert parsed == BaseFileName("6db57019-98ee-480e-8eb1-fb3de48e1c24-0", "1-119-167", "20240418172804498")
    assert str(parsed) == name


@pytest.mark.parametrize("name", [
    "x.parquet", "a_1-2-3_2024.parquet", "a_1-2_20240418172804498.parquet", "a_1-2-3_20240418172804498.csv",
    ".hoodie_partition_metadata", ".a_1-2-3_20240418172804498.parquet", "a_b_1-2-3_20240418172804498.parquet",
])
def test_non_base_files_are_not_base_files(name):
    assert BaseFileName.parse(name) is None


def test_log_file_name_parts():
    parsed = LogFileName.parse(".26e33b7b-aa9f-4f2e-b683-a90ef0d5861d-0_20250121000547796.log.1_0-33-47")
    assert parsed == LogFileName("26e33b7b-aa9f-4f2e-b683-a90ef0d5861d-0", "20250121000547796", 1, "0-33-47")
    cdc = LogFileName.parse(".f-0_20250121000547796.log.12_1-2-3.cdc")
    assert cdc.version == 12 and cdc.suffix == ".cdc" and cdc.format() == ".f-0_20250121000547796.log.12_1-2-3.cdc"
    assert LogFileName.parse("f-0_20250121000547796.log.1_0-1-2") is None


def test_new_file_id_is_uuid_with_suffix():
    fid = new_file_id()
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}-0", fid)
    assert fid != new_file_id()


def test_bucket_file_ids():
    fid = bucket_file_id(7, "1a2b3c4d-1111-4222-8333-444455556666")
    assert fid == "00000007-1111-4222-8333-444455556666-0"
    assert bucket_of(fid) == 7 and bucket_of(bucket_file_id(12345)) == 12345
    assert bucket_of("6db57019-98ee-480e-8eb1-fb3de48e1c24-0") is None
    with pytest.raises(ValueError):
        bucket_file_id(-1)


def test_write_token():
    assert write_token(0, 119, 166) == "0-119-166"


def test_hadoop_checksum_sidecars_are_no_table_files():
    """Hudi on a local disk leaves `.NAME.crc` beside every file (names seen in a real table):
    the timeline, file-system view, clean and rollback must never take one for a table file."""
    from tablespec.hudi.timeline.instant import Instant
    assert Instant.parse(".20261123102728963.commit.crc") is None
    assert Instant.parse(".hoodie.properties.crc") is None
    assert BaseFileName.parse(".b001d23b-dce5-4a83-9c89-4bad8e0c8d21-0_1-22-27_20261123102728963.parquet.crc") is None
    assert LogFileName.parse("..files-0000-0_00000000000000010.log.1_0-0-0.crc") is None
    assert LogFileName.parse(".files-0000-0_00000000000000010.log.1_0-0-0") is not None

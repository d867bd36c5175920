"""Hudi's write markers, in both layouts: what a rollback of a deltacommit learns its log files from."""
from __future__ import annotations

import pytest

from tablespec.errors import HudiFormatError
from tablespec.hudi.formats.markers import Marker, marker_dir, markers, write_marker
from tablespec.hudi.io import LOCAL

LOG = ".00000000-aaaa-0_20240101000000000.log.2_0-5-6"


def test_direct_markers_of_log_and_base_files_are_read_back(tmp_path):
    base = str(tmp_path)
    write_marker(LOCAL, base, "1", "2024-01-01", LOG, "APPEND")
    write_marker(LOCAL, base, "1", "", "f-0_0-1-1_1.parquet", "CREATE")
    (tmp_path / ".hoodie" / ".temp" / "1" / f".{LOG}.marker.APPEND.crc").write_bytes(b"x")   # Hadoop's checksum
    assert sorted(markers(LOCAL, base, "1"), key=repr) == sorted(
        [Marker("2024-01-01", LOG, "APPEND"), Marker("", "f-0_0-1-1_1.parquet", "CREATE")], key=repr)
    assert markers(LOCAL, base, "2") == []


def test_timeline_server_markers_as_hudi_0_15_writes_them(tmp_path):
    folder = tmp_path / ".hoodie" / ".temp" / "1"
    folder.mkdir(parents=True)
    (folder / "MARKERS.type").write_text("TIMELINE_SERVER_BASED")
    (folder / "MARKERS0").write_text(f"2024-01-01/{LOG}.marker.APPEND\n2024-01-02/{LOG}.marker.APPEND\n")
    assert markers(LOCAL, str(tmp_path), "1") == [Marker("2024-01-01", LOG, "APPEND"), Marker("2024-01-02", LOG, "APPEND")]


def test_a_marker_naming_a_file_outside_the_table_is_refused(tmp_path):
    folder = tmp_path / ".hoodie" / ".temp" / "1"
    folder.mkdir(parents=True)
    (folder / "MARKERS.type").write_text("TIMELINE_SERVER_BASED")
    (folder / "MARKERS0").write_text(f"../../etc/{LOG}.marker.APPEND\n")
    with pytest.raises(HudiFormatError, match="MARKERS0: .* is not a marker of a file inside the table"):
        markers(LOCAL, str(tmp_path), "1")
    assert marker_dir("/t", "1") == "/t/.hoodie/.temp/1"

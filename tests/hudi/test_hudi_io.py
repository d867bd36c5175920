import os

import pytest
from _support import storage_and_base

from tablespec.errors import TablespecError
from tablespec.hudi.io import LocalStorage, Storage, checksum_sidecar, join


def test_write_bytes_creates_parents(tmp_path):
    st = LocalStorage()
    path = join(str(tmp_path), "a/b/c.txt")
    st.write_bytes(path, b"x")
    assert st.read_bytes(path) == b"x" and st.read_text(path) == "x"


def test_write_atomic_replaces_whole_file_and_leaves_no_temp(tmp_path):
    st = LocalStorage()
    path = join(str(tmp_path), "d/f")
    st.write_atomic(path, b"old")
    st.write_atomic(path, b"new")
    assert st.read_bytes(path) == b"new"
    assert [i.name for i in st.list_dir(join(str(tmp_path), "d"))] == ["f"]


def test_create_exclusive_refuses_existing_file(tmp_path):
    st = LocalStorage()
    path = join(str(tmp_path), "lock")
    st.create_exclusive(path, b"me")
    with pytest.raises(FileExistsError):
        st.create_exclusive(path, b"you")
    with pytest.raises(FileExistsError):
        st.create_exclusive(path)
    assert st.read_bytes(path) == b"me"
    assert [i.name for i in st.list_dir(str(tmp_path))] == ["lock"]


def test_list_dir_sorted_with_sizes_and_missing_dir_empty(tmp_path):
    st = LocalStorage()
    st.write_bytes(join(str(tmp_path), "b"), b"123")
    st.mkdirs(join(str(tmp_path), "a"))
    infos = st.list_dir(str(tmp_path))
    assert [(i.name, i.is_dir) for i in infos] == [("a", True), ("b", False)]
    assert infos[1].size == 3 and infos[1].mtime_ms > 0 and infos[1].path == join(str(tmp_path), "b")
    assert st.list_dir(join(str(tmp_path), "missing")) == []


def test_walk_delete(tmp_path):
    st = LocalStorage()
    root = str(tmp_path)
    for rel in ("x/1", "x/y/2", "3"):
        st.write_bytes(join(root, rel), b"")
    assert [i.name for i in st.walk_files(root)] == ["3", "1", "2"]
    st.write_bytes(join(root, "z/4"), b"")
    st.delete_files([join(root, "3"), join(root, "gone")])
    assert st.exists(join(root, "z/4")) and not st.exists(join(root, "3"))
    st.delete(join(root, "missing"))
    st.delete(join(root, "z/4"))
    assert not st.exists(join(root, "z/4")) and st.is_dir(join(root, "z"))
    st.delete_tree(join(root, "x"))
    st.delete_tree(join(root, "x"))
    assert not st.exists(join(root, "x"))


def test_rewriting_or_deleting_a_file_drops_its_hadoop_checksum(tmp_path):
    """Hadoop verifies `.NAME.crc` on read: a file tablespec changed must not keep a stale one."""
    s = LocalStorage()
    paths = {op: str(tmp_path / f"{op}.txt") for op in ("write", "atomic", "delete", "stream")}
    for path in paths.values():
        s.write_bytes(path, b"old")
        s.write_bytes(checksum_sidecar(path), b"crc")
    s.write_bytes(paths["write"], b"new")
    s.write_atomic(paths["atomic"], b"new")
    s.delete(paths["delete"])
    with s.open_output_stream(paths["stream"]) as out:
        out.write(b"new")
    assert [p for p in paths.values() if os.path.exists(checksum_sidecar(p))] == []
    assert checksum_sidecar(paths["write"]) == str(tmp_path / ".write.txt.crc")
    unrelated = tmp_path / ".other.crc"
    unrelated.write_bytes(b"x")
    s.delete(paths["write"])
    assert unrelated.exists()


def test_join_skips_empty_partition():
    assert join("/t", "", "f") == "/t/f"
    assert join("/t/", "a/b", "f") == "/t/a/b/f"


def test_a_location_accepts_paths_and_file_uris(tmp_path):
    _, base = storage_and_base(str(tmp_path) + "/")
    assert base == str(tmp_path)
    _, base = storage_and_base(f"file://{tmp_path}")
    assert base == str(tmp_path)
    _, base = storage_and_base(f"file:{tmp_path}/t%20x")
    assert base == f"{tmp_path}/t x"
    _, base = storage_and_base("rel/path")
    assert base == os.path.abspath("rel/path")


@pytest.mark.parametrize("uri", ["gs://b/t", "hdfs://nn:8020/t", "abfs://c@acct.dfs.core.windows.net/t", "ftp://h/t"])
def test_a_location_with_an_unknown_scheme_names_supported_ones(uri):
    with pytest.raises(TablespecError, match=r"unsupported storage scheme .*supported are local paths, file://, "
                                             r"s3:// and s3a:// URIs"):
        storage_and_base(uri)


def test_read_range_reads_from_either_end_without_the_whole_file(tmp_path):
    path = str(tmp_path / "f")
    LocalStorage().write_bytes(path, b"PAR1-body-PAR1")

    class WholeFileOnly(LocalStorage):  # the base class's fallback: slice read_bytes
        read_range = Storage.read_range

    for st in (LocalStorage(), WholeFileOnly()):
        assert st.read_range(path, 0, 4) == b"PAR1" and st.read_range(path, -4, 4) == b"PAR1"
        assert st.read_range(path, 5, 4) == b"body" and st.read_range(path, -100, 4) == b"PAR1"
        assert st.read_range(path, 12, 10) == b"R1" and st.read_range(path, 40, 4) == b""

"""The Storage contract, on local disk and on a real S3 API server (moto, over HTTP on loopback)."""
from __future__ import annotations

import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _support import storage_and_base

from tablespec.errors import TablespecError
from tablespec.hudi.io import LocalStorage, join


@pytest.fixture(params=["local", "s3"])
def store(request, tmp_path):
    if request.param == "local":
        return storage_and_base(str(tmp_path / "root"))
    return storage_and_base(request.getfixturevalue("s3_bucket") + "/root")


def test_write_read_list_delete(store):
    s, root = store
    s.write_bytes(join(root, "a/b/1"), b"one")
    s.write_atomic(join(root, "a/2"), b"two")
    s.write_bytes(join(root, "3"), b"three")
    assert s.read_bytes(join(root, "a/b/1")) == b"one"
    assert s.read_range(join(root, "3"), 1, 3) == b"hre"
    assert s.read_range(join(root, "3"), -2, 2) == b"ee"
    assert [(i.name, i.is_dir) for i in s.list_dir(root)] == [("3", False), ("a", True)]
    assert [i.path for i in s.walk_files(root)] == [join(root, p) for p in ("3", "a/2", "a/b/1")]
    assert s.is_dir(join(root, "a")) and not s.is_dir(join(root, "3")) and not s.is_dir(join(root, "zz"))
    assert s.exists(join(root, "a")) and s.exists(join(root, "a/2")) and not s.exists(join(root, "a/9"))
    info = s.info(join(root, "a/2"))
    assert info.size == 3 and not info.is_dir and abs(info.mtime_ms / 1000 - time.time()) < 60
    assert s.info(join(root, "nothing")) is None
    with pytest.raises(FileNotFoundError):
        s.read_bytes(join(root, "nothing"))
    s.delete(join(root, "nothing"))
    s.delete_files([join(root, "3"), join(root, "a/2")])
    assert [i.path for i in s.walk_files(root)] == [join(root, "a/b/1")]
    s.delete_tree(root)
    assert list(s.walk_files(root)) == [] and s.list_dir(root) == []


def test_list_dirs_is_list_dir_of_each_folder(store, request):
    """Several folders listed at once (reconcile's partitions) are each folder's `list_dir`; on an
    object store a small table's folders come from one LIST, a large one's cost one LIST more at most."""
    s, root = store
    for name in (".hoodie/1.commit", "p=1/a", "p=1/sub/b", "p=1.5/c", "p=2/d", "p=2/e", "p=3/f", "q/g"):
        s.write_bytes(join(root, name), b"x")
    folders = [join(root, p) for p in ("p=1", "p=2", "q", "none")]

    def listed():
        return {f: [(i.name, i.is_dir) for i in entries] for f, entries in s.list_dirs(folders).items()}
    expected = {f: [(i.name, i.is_dir) for i in s.list_dir(f)] for f in folders}
    assert expected[join(root, "p=1")] == [("a", False), ("sub", True)] and expected[join(root, "none")] == []
    if isinstance(s, LocalStorage):
        assert listed() == expected
        return
    server = request.getfixturevalue("s3_server")
    before = server.requests()["GET"]
    assert listed() == expected
    assert server.requests()["GET"] == before + 1   # one LIST for the four folders
    import tablespec.hudi.s3 as s3
    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setattr(s3, "LIST_PAGE", 3)   # a page that ends inside p=1: `none` served, the rest listed alone
    before = server.requests()["GET"]
    assert listed() == expected
    assert server.requests()["GET"] == before + 1 + 3


def test_create_exclusive_lets_one_writer_win(store):
    s, root = store
    path = join(root, ".hoodie/20260101000000000.commit.requested")
    s.create_exclusive(path, b"first")
    with pytest.raises(FileExistsError):
        s.create_exclusive(path, b"second")
    assert s.read_bytes(path) == b"first"


def test_touch_moves_modification_time(store):
    s, root = store
    path = join(root, "hb")
    s.touch(path)
    first = s.info(path).mtime_ms
    time.sleep(1.1)   # S3's LastModified has second resolution
    s.touch(path)
    assert s.info(path).mtime_ms > first


def test_parquet_through_the_storage_reads_only_what_it_needs(store):
    s, root = store
    path = join(root, "p/f.parquet")
    table = pa.table({"a": list(range(1000)), "b": [str(i) * 20 for i in range(1000)]})
    with s.open_output_stream(path) as out:
        pq.write_table(table, out)
    with s.open_input_file(path) as f:
        assert pq.read_table(f, columns=["a"]).column("a").to_pylist() == list(range(1000))
    with s.open_input_file(path) as f:
        assert pq.read_metadata(f).num_rows == 1000


def test_s3_conditional_put_is_a_real_412(s3_bucket, s3_server):
    """moto honours If-None-Match: * on PutObject: the second conditional PUT is refused."""
    s, root = storage_and_base(s3_bucket + "/t")
    s.create_exclusive(join(root, "x"), b"1")
    before = s3_server.requests()
    with pytest.raises(FileExistsError):
        s.create_exclusive(join(root, "x"), b"2")
    assert s3_server.requests()["PUT"] == before["PUT"] + 1   # one PUT, refused by the server


@pytest.mark.parametrize("value, message", [
    ("s3:/bucket/root", "is not an S3 URI"),
    ("s3://", "is not an S3 URI"),
    ("s3a:///key", "is not an S3 URI"),
    ("s3://Bad_Bucket/x", "not a valid S3 bucket name"),
    ("s3://bucket/a/../b", "'..' are not allowed"),
    ("gs://bucket/x", "unsupported storage scheme 'gs'"),
])
def test_malformed_uris_are_refused_naming_the_value_and_origin(value, message):
    with pytest.raises(TablespecError, match=message) as e:
        storage_and_base(value, origin="--warehouse")
    assert str(e.value).startswith("--warehouse: ") and value in str(e.value)


def test_s3_and_s3a_name_the_same_objects(s3_bucket):
    s, root = storage_and_base(s3_bucket.replace("s3://", "s3a://") + "/t/")
    assert root == s3_bucket + "/t"
    s.write_bytes(join(root, "f"), b"x")
    s2, root2 = storage_and_base(s3_bucket + "/t")
    assert s2.read_bytes(join(root2, "f")) == b"x"


def test_plain_http_endpoint_only_on_loopback(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://minio.example.com:9000")
    with pytest.raises(TablespecError, match="plain http is allowed for loopback addresses only"):
        storage_and_base("s3://bucket/t")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "https://minio.example.com:9000")
    assert storage_and_base("s3://bucket/t")[1] == "s3://bucket/t"


def test_local_storage_is_the_default():
    assert isinstance(storage_and_base("rel")[0], LocalStorage)


def test_a_store_without_conditional_writes_is_refused(s3_server, monkeypatch):   # s3_server: moto is there
    """A server that ignores If-None-Match would let two writers both create an instant: tablespec
    finds out before its first exclusive create and refuses to write there."""
    import boto3
    from s3server import S3Server
    with S3Server(conditional_writes=False) as server:
        monkeypatch.setenv("AWS_ENDPOINT_URL", server.endpoint)
        monkeypatch.setenv("AWS_REGION", "us-east-1")
        boto3.client("s3", endpoint_url=server.endpoint).create_bucket(Bucket="no-conditional")
        s, root = storage_and_base("s3://no-conditional/t")
        with pytest.raises(TablespecError, match="does not support conditional writes"):
            s.create_exclusive(join(root, ".hoodie/hoodie.properties"), b"x")
        assert list(s.walk_files("s3://no-conditional")) == []   # the probe is gone, nothing written

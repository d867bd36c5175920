"""Amazon S3 and S3-compatible object stores behind the `Storage` interface (obstore, the Rust
`object_store` crate: conditional PUT, paginated listings, batched deletes, retries, multipart).

Paths are full URIs, `s3://bucket/key`; `s3a://` (what Hudi on Spark writes) names the same
objects and is accepted everywhere, the canonical form is `s3://`. Hudi's rules without renames:

- `write_atomic` is one PUT: a reader sees the old object or the new one, never a prefix;
- `create_exclusive` is a PUT with `If-None-Match: *`: of two writers one gets 412 (FileExistsError).
  A store that ignores the header would let two writers both "win": before its first exclusive
  create on a bucket, tablespec checks the store refuses a second conditional PUT, and refuses to
  write otherwise;
- `touch` is a PUT and `info` reports LastModified, so heartbeats and lock leases work by time;
- directories are key prefixes: `mkdirs` does nothing and listings are paginated prefix listings.

Configuration: `S3Config` (endpoint, region, options) is plain data, pickled to Spark executors;
credentials never are: each process takes them from the standard AWS chain (environment, web
identity, container or instance metadata), so they are never printed, logged or written.
"""
from __future__ import annotations

import os
import re
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa

from tablespec.errors import TablespecError
from tablespec.hudi.io import FileInfo, Storage

SCHEMES = ("s3", "s3a")
# Options a `storage:` section may set (object_store's S3 keys); credentials are not among them.
ALLOWED_OPTIONS = {"endpoint", "region", "allow_http", "virtual_hosted_style_request", "request_payer",
                   "skip_signature", "unsigned_payload", "checksum_algorithm", "s3_express",
                   "server_side_encryption", "sse_kms_key_id", "sse_bucket_key_enabled",
                   "imdsv1_fallback", "metadata_endpoint", "timeout", "connect_timeout",
                   "max_retries", "retry_timeout"}
SECRET_HINTS = ("secret", "access_key", "session_token", "token", "password", "credential")


@dataclass(frozen=True)
class S3Config:
    """How to reach the store (no credentials): pickled to executors with the storage."""

    endpoint: str | None = None      # AWS_ENDPOINT_URL (S3-compatible servers); None: AWS
    region: str | None = None        # AWS_REGION / AWS_DEFAULT_REGION
    options: tuple[tuple[str, str], ...] = ()   # from the project file's `storage:` section

    @classmethod
    def from_env(cls, options: dict | None = None, origin: str = "storage options") -> S3Config:
        opts = {str(k): str(v) for k, v in (options or {}).items()}
        for key in opts:
            if any(h in key.lower() for h in SECRET_HINTS):
                raise TablespecError(f"{origin}: {key!r}: credentials do not belong in the project file; "
                                     f"use the AWS credential chain (environment, profile role, instance role)")
            if key not in ALLOWED_OPTIONS:
                raise TablespecError(f"{origin}: unknown storage option {key!r}; known: {', '.join(sorted(ALLOWED_OPTIONS))}")
        endpoint = opts.pop("endpoint", None) or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        region = opts.pop("region", None) or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if endpoint:
            check_endpoint(endpoint, origin if "endpoint" in (options or {}) else "$AWS_ENDPOINT_URL")
        return cls(endpoint or None, region or None, tuple(sorted(opts.items())))

    def store_options(self) -> dict:
        """Storage options for hudi-rs / object_store readers (no credentials: they read the env)."""
        out = {f"aws_{k}": v for k, v in self.options}
        if self.endpoint:
            out["aws_endpoint_url"] = self.endpoint
            if self.endpoint.startswith("http://"):
                out["aws_allow_http"] = "true"
        if self.region:
            out["aws_region"] = self.region
        return out


def check_endpoint(endpoint: str, origin: str) -> None:
    parsed = urlparse(endpoint)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise TablespecError(f"{origin}: endpoint {endpoint!r} is not an http(s) URL")
    if parsed.scheme == "http" and parsed.hostname not in ("localhost", "::1") and not parsed.hostname.startswith("127."):
        raise TablespecError(f"{origin}: endpoint {endpoint!r}: plain http is allowed for loopback addresses only; "
                             f"use https")


def split_uri(uri: str) -> tuple[str, str]:
    """(bucket, key) of an s3:// or s3a:// URI; the key without leading or trailing '/'."""
    parsed = urlparse(uri)
    return parsed.netloc, parsed.path.strip("/")


_stores: dict = {}             # (bucket, S3Config) -> obstore S3Store, shared by the storages of a process
_stores_lock = threading.Lock()
_checked: set = set()          # (endpoint, bucket) whose conditional PUTs were seen to work
_checked_lock = threading.Lock()
LIST_PAGE = 1000   # keys of one S3 LIST response (ListObjectsV2's maximum)


class S3Storage(Storage):
    """One bucket of an S3 API store; every path is an `s3://bucket/...` (or `s3a://`) URI."""

    def __init__(self, bucket: str, config: S3Config):
        self.bucket, self.config = bucket, config
        self._store = None
        self._local = threading.local()   # .snapshot: (key prefix, key -> object meta), this thread's only

    def __getstate__(self):
        return {"bucket": self.bucket, "config": self.config}

    def __setstate__(self, state):
        S3Storage.__init__(self, state["bucket"], state["config"])

    def __eq__(self, other):
        return isinstance(other, S3Storage) and (self.bucket, self.config) == (other.bucket, other.config)

    def __hash__(self):
        return hash((self.bucket, self.config))

    @property
    def store(self):
        if self._store is None:
            with _stores_lock:   # one client (and connection pool) per bucket and configuration
                self._store = _stores.get((self.bucket, self.config)) or self._new_store()
                _stores[(self.bucket, self.config)] = self._store
        return self._store

    def _new_store(self):
        from obstore.store import S3Store
        cfg = dict(self.config.options)
        cfg["conditional_put"] = "etag"   # PutMode.Create -> If-None-Match: *
        if self.config.endpoint:
            cfg["endpoint"] = self.config.endpoint
        if self.config.region:
            cfg["region"] = self.config.region
        client = {"allow_http": True} if (self.config.endpoint or "").startswith("http://") else {}
        retry = {"max_retries": 5, "retry_timeout": timedelta(seconds=60),
                 "backoff": {"init_backoff": timedelta(milliseconds=50), "max_backoff": timedelta(seconds=5), "base": 2}}
        return S3Store(self.bucket, config=cfg, client_options=client or None,  # type: ignore[arg-type]  # obstore's TypedDicts
                       retry_config=retry)  # type: ignore[arg-type]

    # a listing snapshot (read-only work: observe)
    @contextmanager
    def listing_snapshot(self, base: str):
        key = self._key(base)
        prefix = f"{key}/" if key else ""
        if self._covers(key):   # within a snapshot of this prefix already: no second LIST
            yield self
            return
        self._local.snapshot = (prefix, None)   # listed on first use: a block served from caches lists nothing
        try:
            yield self
        finally:
            self._local.snapshot = None

    def _covers(self, key: str) -> bool:
        snapshot = getattr(self._local, "snapshot", None)
        return snapshot is not None and ((key + "/").startswith(snapshot[0]) or not snapshot[0])

    def _snapshot_for(self, key: str) -> dict | None:
        """The snapshot's objects (listed now if not yet), when `key` lies within its prefix."""
        if not self._covers(key):
            return None
        prefix, objects = self._local.snapshot
        if objects is None:
            import obstore
            try:
                objects = {o["path"]: o for batch in obstore.list(self.store, prefix or None) for o in batch}
            except Exception as exc:
                raise self._error(exc, self._uri(prefix.rstrip("/"))) from None
            self._local.snapshot = (prefix, objects)
        return objects

    def _changed(self) -> None:
        self._local.snapshot = None

    # paths <-> keys
    def _key(self, path: str) -> str:
        bucket, key = split_uri(path)
        if urlparse(path).scheme not in SCHEMES or bucket != self.bucket:
            raise TablespecError(f"{path!r} is not in bucket s3://{self.bucket}")
        return key

    def _uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def _error(self, exc: Exception, path: str) -> Exception:
        name = type(exc).__name__
        if isinstance(exc, (FileNotFoundError, FileExistsError, TablespecError)):
            return exc
        if name == "PermissionDeniedError" or name == "UnauthenticatedError":
            return TablespecError(f"{path}: access denied by the store ({name}); check the AWS credentials and policy")
        return OSError(f"{path}: {name}: {_redact(str(exc))}")

    # reads
    def read_bytes(self, path: str) -> bytes:
        import obstore
        try:
            return bytes(obstore.get(self.store, self._key(path)).bytes())
        except Exception as exc:
            raise self._error(exc, path) from None

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        import obstore
        if length <= 0:
            return b""
        key = self._key(path)
        try:
            if offset < 0:
                data = bytes(obstore.get(self.store, key, options={"range": {"suffix": -offset}}).bytes())
                return data[:length]
            return bytes(obstore.get(self.store, key, options={"range": (offset, offset + length)}).bytes())
        except Exception as exc:
            if type(exc).__name__ == "GenericError" and "Range" in str(exc):
                return b""   # offset past the end
            raise self._error(exc, path) from None

    def exists(self, path: str) -> bool:
        return self.info(path) is not None

    def is_dir(self, path: str) -> bool:
        import obstore
        key = self._key(path)
        prefix = f"{key}/" if key else ""
        if (snap := self._snapshot_for(key)) is not None and prefix.startswith(self._local.snapshot[0]):
            return any(k.startswith(prefix) for k in snap)
        try:
            for batch in obstore.list(self.store, prefix or None, chunk_size=1):
                return bool(batch)
        except Exception as exc:
            raise self._error(exc, path) from None
        return False

    def _entries(self, objects: Mapping[str, Any], key: str) -> list[FileInfo]:
        """`list_dir` of `key` from a flat listing that holds every object below it."""
        prefix = f"{key}/" if key else ""
        dirs, files = set(), []
        for k, o in objects.items():
            if k.startswith(prefix):
                head, sep, _ = k[len(prefix):].partition("/")
                if sep:
                    dirs.add(head)
                else:
                    files.append(_info(self._uri(k), o))
        out = [FileInfo(d, self._uri(prefix + d), 0, 0, True) for d in dirs] + files
        return sorted(out, key=lambda i: i.name)

    def list_dirs(self, paths: list[str]) -> dict[str, list[FileInfo]]:
        """One LIST page (up to 1,000 keys, in key order) from the first folder on serves every
        folder it holds whole; a folder it does not reach is listed alone (at most one request
        more than a LIST per folder; one in all for a small table's partitions)."""
        keys = {p: self._key(p) for p in paths}
        if len(keys) < 2 or any(not k or self._covers(k) for k in keys.values()):
            return super().list_dirs(paths)
        import obstore
        first = min(keys.values())
        parent = os.path.commonpath(list(keys.values()))
        try:   # keys after `first + "."`: every key below `first/` ('.' sorts just before '/')
            page = next(iter(obstore.list(self.store, f"{parent}/" if parent else None, offset=first + ".",
                                          chunk_size=LIST_PAGE)), [])
        except Exception as exc:
            raise self._error(exc, paths[0]) from None
        objects = {o["path"]: o for o in page}
        last = max(objects, default="")
        whole = len(objects) < LIST_PAGE   # the listing ended within the page
        return {p: self._entries(objects, k) if whole or last >= k + "0" else self.list_dir(p)  # '0' follows '/'
                for p, k in keys.items()}

    def list_dir(self, path: str) -> list[FileInfo]:
        import obstore
        key = self._key(path)
        if (snap := self._snapshot_for(key)) is not None:
            return self._entries(snap, key)
        try:
            listing = obstore.list_with_delimiter(self.store, key or None)
        except Exception as exc:
            raise self._error(exc, path) from None
        out = [FileInfo(p.rsplit("/", 1)[-1], self._uri(p), 0, 0, True) for p in listing["common_prefixes"]]
        out += [_info(self._uri(o["path"]), o) for o in listing["objects"] if o["path"] != key]
        return sorted(out, key=lambda i: i.name)

    def walk_files(self, path: str) -> Iterator[FileInfo]:
        """One flat, paginated listing of the prefix (not a request per directory)."""
        import obstore
        key = self._key(path)
        try:
            if (snap := self._snapshot_for(key)) is not None:
                objects = [o for k, o in snap.items() if k.startswith(f"{key}/" if key else "")]
            else:
                objects = [o for batch in obstore.list(self.store, f"{key}/" if key else None) for o in batch]
        except Exception as exc:
            raise self._error(exc, path) from None
        for o in sorted(objects, key=lambda o: o["path"].split("/")):
            yield _info(self._uri(o["path"]), o)

    def info(self, path: str) -> FileInfo | None:
        import obstore
        key = self._key(path)
        if (snap := self._snapshot_for(key)) is not None:
            if key in snap:
                return _info(path.rstrip("/"), snap[key])
            return FileInfo(key.rsplit("/", 1)[-1], path.rstrip("/"), 0, 0, True) if self.is_dir(path) else None
        try:
            return _info(path.rstrip("/"), obstore.head(self.store, key)) if key else None
        except FileNotFoundError:
            pass
        except Exception as exc:
            raise self._error(exc, path) from None
        if self.is_dir(path):
            return FileInfo(key.rsplit("/", 1)[-1], path.rstrip("/"), 0, 0, True)
        return None

    # writes
    def write_bytes(self, path: str, data: bytes) -> None:
        import obstore
        self._changed()
        try:
            obstore.put(self.store, self._key(path), bytes(data), max_concurrency=4)
        except Exception as exc:
            raise self._error(exc, path) from None

    def write_atomic(self, path: str, data: bytes) -> None:
        import obstore
        self._changed()
        try:   # one PUT: S3 makes a whole object visible at once
            obstore.put(self.store, self._key(path), bytes(data), use_multipart=False)
        except Exception as exc:
            raise self._error(exc, path) from None

    def create_exclusive(self, path: str, data: bytes = b"") -> None:
        self._check_conditional_put(path)
        self._put_if_absent(path, data)

    def _put_if_absent(self, path: str, data: bytes) -> None:
        import obstore
        self._changed()
        try:
            obstore.put(self.store, self._key(path), bytes(data), mode="create", use_multipart=False)
        except Exception as exc:
            if type(exc).__name__ == "AlreadyExistsError":
                raise FileExistsError(path) from None
            if type(exc).__name__ in ("NotSupportedError", "NotImplementedError"):
                raise self._refuse(path) from None
            raise self._error(exc, path) from None

    def _refuse(self, path: str) -> TablespecError:
        where = self.config.endpoint or "AWS S3"
        return TablespecError(f"{path}: the store at {where} does not support conditional writes "
                              f"(PUT with If-None-Match: *); without them two writers could both take the "
                              f"same instant or lock, so tablespec does not write there")

    def _check_conditional_put(self, path: str) -> None:
        marker = (self.config.endpoint, self.bucket)
        with _checked_lock:
            if marker in _checked:
                return
        import obstore
        probe = f"{self._uri(self._key(path).rsplit('/', 1)[0])}/.tablespec-conditional-put-{uuid.uuid4().hex}"
        self._put_if_absent(probe, b"")
        try:
            self._put_if_absent(probe, b"")
        except FileExistsError:
            with _checked_lock:
                _checked.add(marker)
            return
        finally:
            obstore.delete(self.store, self._key(probe))
        raise self._refuse(path)

    def touch(self, path: str) -> None:
        self.write_atomic(path, b"")   # a PUT sets LastModified: heartbeats are empty objects

    def delete(self, path: str) -> None:
        import obstore
        self._changed()
        try:
            obstore.delete(self.store, self._key(path))
        except FileNotFoundError:
            pass
        except Exception as exc:
            raise self._error(exc, path) from None

    def delete_files(self, paths: list[str]) -> None:
        import obstore
        self._changed()
        if paths:
            try:   # DeleteObjects, up to 1,000 keys a request
                obstore.delete(self.store, [self._key(p) for p in paths])
            except Exception as exc:
                raise self._error(exc, paths[0]) from None

    def delete_tree(self, path: str) -> None:
        self.delete_files([i.path for i in self.walk_files(path)])

    def mkdirs(self, path: str) -> None:
        """Prefixes need no creating."""

    # parquet
    def open_input_file(self, path: str, size: int | None = None) -> pa.NativeFile:
        if size is None:
            info = self.info(path)
            if info is None or info.is_dir:
                raise FileNotFoundError(path)
            size = info.size
        return pa.PythonFile(_RangeFile(self, path, size), mode="r")

    def open_output_stream(self, path: str):
        return _PutOnClose(self, path)


def _info(path: str, meta: Mapping[str, Any]) -> FileInfo:
    return FileInfo(path.rsplit("/", 1)[-1], path, int(meta["size"]),
                    int(meta["last_modified"].timestamp() * 1000), False)


def _redact(text: str) -> str:
    """Error texts from the client never carry credentials, but signed URLs might: cut queries."""
    return re.sub(r"\?[^\s\"']*", "?...", text)


class _RangeFile:
    """A read-only, seekable file over ranged GETs: parquet readers fetch the footer and the
    column chunks they need, as from a local file (no read-ahead: the bytes moved are the bytes read)."""

    def __init__(self, storage: S3Storage, path: str, size: int):
        self.storage, self.path, self.size, self.pos, self.closed = storage, path, size, 0, False

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = offset if whence == 0 else self.pos + offset if whence == 1 else self.size + offset
        return self.pos

    def tell(self) -> int:
        return self.pos

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        if end <= self.pos:
            return b""
        data = self.storage.read_range(self.path, self.pos, end - self.pos)
        self.pos += len(data)
        return data

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True


class _PutOnClose:
    """An output stream for one object: buffered, then one PUT (multipart above 5 MiB) on close,
    so the object appears whole or not at all."""

    def __init__(self, storage: S3Storage, path: str):
        self.storage, self.path = storage, path
        self.sink = pa.BufferOutputStream()

    def __enter__(self):
        return self.sink

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.storage.write_bytes(self.path, self.sink.getvalue().to_pybytes())
        return False

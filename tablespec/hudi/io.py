"""Storage behind a small interface, so object stores can be added without touching the Hudi code.

Paths are plain strings joined with "/" (`join`). Two primitives carry Hudi's safety rules:
`write_atomic` (a reader sees the old file or the whole new one, never a prefix: completed
instants and hoodie.properties are written this way) and `create_exclusive` (fails if the file
exists: two writers cannot request the same instant or take the same lock).
"""
from __future__ import annotations

import operator
import os
import re
import shutil
import stat
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

import pyarrow as pa

from tablespec.errors import TablespecError

_entry_name = operator.attrgetter("name")


@dataclass(frozen=True)
class FileInfo:
    name: str
    path: str
    size: int
    mtime_ms: int
    is_dir: bool


def join(base: str, *parts: str) -> str:
    """Join path segments with "/", ignoring empty segments (the non-partitioned partition is "")."""
    out = base.rstrip("/") or "/"
    for part in parts:
        part = part.strip("/")
        if part:
            out = f"{out}/{part}" if out != "/" else f"/{part}"
    return out


def outside_reason(relative: str) -> str | None:
    """Why `relative`, a path read from a table's own files, could lead outside the folder it is
    joined to (absolute, a URI scheme, a `..` segment, a backslash or NUL), or None."""
    if not isinstance(relative, str):
        return "not a path"
    if not (relative.startswith("/") or ":" in relative or "\\" in relative or "\0" in relative or ".." in relative):
        return None   # the usual partition or file name: none of the checks below can find anything
    if relative.startswith("/") or re.match(r"[A-Za-z][A-Za-z0-9+.\-]*:/", relative):
        return "an absolute path or URI"
    if "\\" in relative or "\0" in relative:
        return "a backslash or NUL in a path"
    if ".." in relative.split("/"):
        return "a '..' segment"
    return None


def join_inside(base: str, *relative: str, origin: str) -> str:
    """`base` joined with paths read from the table's files (hoodie.properties keys, commit metadata,
    plans): refused, naming `origin` (the file and key or field), unless they stay below `base`."""
    for part in relative:
        reason = outside_reason(part)
        if reason is not None:
            raise TablespecError(f"{origin}: {part!r} leads outside the table ({reason}); refused")
    return join(base, *relative)


def path_inside(base: str, path: str, origin: str) -> str:
    """`path`, a full path a table's plan lists (Hudi's clean and rollback plans name files so),
    refused naming `origin` unless it is below `base` (s3a:// read as s3://)."""
    plain = re.sub(r"^s3a://", "s3://", path) if isinstance(path, str) else ""
    if not plain or ".." in plain.split("/") or "\\" in plain or "\0" in plain or not within(plain, base) \
            or plain.rstrip("/") == base.rstrip("/"):
        raise TablespecError(f"{origin}: {path!r} is not a file of the table at {base}; refused")
    return plain


class Storage(ABC):
    """The file operations tablespec needs from a table's storage."""

    @abstractmethod
    def read_bytes(self, path: str) -> bytes: ...

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        return self.read_bytes(path).decode(encoding)

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        """Up to `length` bytes from `offset`; a negative offset counts from the end of the file
        (a parquet footer's magic: `read_range(path, -4, 4)`). Stores override it to read less."""
        data = self.read_bytes(path)
        start = offset if offset >= 0 else max(0, len(data) + offset)
        return data[start:start + length]

    @abstractmethod
    def write_bytes(self, path: str, data: bytes) -> None:
        """Write (or overwrite) a file, creating parent directories."""

    @abstractmethod
    def write_atomic(self, path: str, data: bytes) -> None:
        """Replace `path` with `data` in one step: readers see the old content or all of the new."""

    @abstractmethod
    def create_exclusive(self, path: str, data: bytes = b"") -> None:
        """Create a new file; raise FileExistsError if it already exists. Readers never see
        partial content: the file appears with all of `data` or not at all."""

    @abstractmethod
    def exists(self, path: str) -> bool: ...

    @abstractmethod
    def is_dir(self, path: str) -> bool: ...

    @abstractmethod
    def list_dir(self, path: str) -> list[FileInfo]:
        """Entries directly under `path`, sorted by name; [] when the directory does not exist."""

    def list_dirs(self, paths: list[str]) -> dict[str, list[FileInfo]]:
        """`list_dir` of several folders (object stores: fewer requests than one per folder)."""
        return {p: self.list_dir(p) for p in paths}

    def walk_files(self, path: str) -> Iterator[FileInfo]:
        """Every file below `path`, depth first, in name order."""
        for info in self.list_dir(path):
            if info.is_dir:
                yield from self.walk_files(info.path)
            else:
                yield info

    def info(self, path: str) -> FileInfo | None:
        """The listing entry of one file or directory, or None when it does not exist."""
        parent, _, name = path.rstrip("/").rpartition("/")
        return next((i for i in self.list_dir(parent or "/") if i.name == name), None)

    def touch(self, path: str) -> None:
        """Create an empty file or, if it exists, set its modification time to now (heartbeats)."""
        self.write_bytes(path, b"")

    @abstractmethod
    def delete(self, path: str) -> None:
        """Delete a file; a missing file is fine."""

    @abstractmethod
    def delete_tree(self, path: str) -> None:
        """Delete a directory and everything below it; missing is fine."""

    def delete_files(self, paths: list[str]) -> None:
        """Delete several files (object stores batch them); missing ones are fine."""
        for path in paths:
            self.delete(path)

    @abstractmethod
    def mkdirs(self, path: str) -> None: ...

    @contextmanager
    def listing_snapshot(self, base: str):
        """Within the block, listings below `base` may be served from one listing, taken when the
        block first lists (object stores: one paginated LIST of the prefix instead of one per
        directory; none when everything the block needs is cached). For read-only work such as
        observing a table; any write through this storage ends it."""
        yield self

    @abstractmethod
    def open_input_file(self, path: str, size: int | None = None) -> pa.NativeFile:
        """A random-access file for pyarrow readers (parquet reads only the ranges it needs)."""

    def open_whole_file(self, path: str) -> pa.NativeFile:
        """A file that will be read whole (every column): one read of all of it (object stores:
        one GET), no footer-first ranged reads."""
        return pa.BufferReader(self.read_bytes(path))

    @abstractmethod
    def open_output_stream(self, path: str):
        """A context manager giving a pyarrow output stream; the file is complete when it exits."""


def _write_aside(path: str, data: bytes, place) -> None:
    """Write `data` to a hidden temp file beside `path` (same file system; Hudi readers ignore
    dot files), then `place(tmp, path)` (os.replace or os.link): readers never see a partial file."""
    directory, name = os.path.split(path)
    os.makedirs(directory or ".", exist_ok=True)
    tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        place(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def checksum_sidecar(path: str) -> str:
    """Hadoop's local file system writes `.NAME.crc` beside every file it writes and checks it on
    read: a file rewritten without it fails Hudi's next read (ChecksumException)."""
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}.crc")


def _drop_checksum(path: str) -> None:
    """Remove `path`'s checksum sidecar, before the file changes: a file without one is read
    unchecked, so a crash right after leaves nothing stale behind."""
    try:
        os.remove(checksum_sidecar(path))
    except FileNotFoundError:
        pass


class LocalStorage(Storage):
    """A local (or locally mounted) file system. Rewriting, replacing or deleting a file drops
    its Hadoop checksum sidecar (`checksum_sidecar`)."""

    def read_bytes(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        with open(path, "rb") as f:
            if offset < 0:
                f.seek(max(offset, -os.fstat(f.fileno()).st_size), os.SEEK_END)
            else:
                f.seek(offset)
            return f.read(length)

    def write_bytes(self, path: str, data: bytes) -> None:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        _drop_checksum(path)
        with open(path, "wb") as f:
            f.write(data)

    def write_atomic(self, path: str, data: bytes) -> None:
        _drop_checksum(path)
        _write_aside(path, data, os.replace)

    def create_exclusive(self, path: str, data: bytes = b"") -> None:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        if not data:
            with open(path, "xb"):
                return
        # Hard-link into place: the link fails if the name exists.
        _write_aside(path, data, os.link)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def list_dir(self, path: str) -> list[FileInfo]:
        try:
            entries = list(os.scandir(path))
        except (FileNotFoundError, NotADirectoryError):
            return []
        entries.sort(key=_entry_name)
        prefix = path.rstrip("/") + "/"   # join(path, name): names hold no "/"
        out = []
        for e in entries:
            try:
                st = e.stat()
            except FileNotFoundError:  # gone since the scan, e.g. a concurrent writer's temp file
                continue
            is_dir = stat.S_ISDIR(st.st_mode)
            out.append(FileInfo(e.name, prefix + e.name, 0 if is_dir else st.st_size,
                                st.st_mtime_ns // 1_000_000, is_dir))
        return out

    def info(self, path: str) -> FileInfo | None:
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        is_dir = stat.S_ISDIR(st.st_mode)
        return FileInfo(os.path.basename(path.rstrip("/")), path, 0 if is_dir else st.st_size,
                        st.st_mtime_ns // 1_000_000, is_dir)

    def touch(self, path: str) -> None:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "ab"):
            pass
        os.utime(path)

    def delete(self, path: str) -> None:
        _drop_checksum(path)
        try:
            os.remove(path)
        except FileNotFoundError:
            pass

    def delete_tree(self, path: str) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def mkdirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def open_input_file(self, path: str, size: int | None = None) -> pa.NativeFile:
        return pa.OSFile(path, "rb")

    def open_whole_file(self, path: str) -> pa.NativeFile:
        return pa.OSFile(path, "rb")

    def open_output_stream(self, path: str):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        _drop_checksum(path)
        return pa.OSFile(path, "wb")


LOCAL_SCHEMES = ("", "file")
OBJECT_SCHEMES = ("s3", "s3a")


def check_location(value: str, origin: str | None = None) -> str:
    """`value` as a location tablespec can serve, normalized (local: absolute path; S3:
    `s3://bucket/key`); a TablespecError naming the value and where it came from otherwise."""
    text = str(value)
    where = f"{origin}: " if origin else ""
    if not text.strip():
        raise TablespecError(f"{where}empty location")
    parsed = urlparse(text)
    scheme = parsed.scheme.lower()
    if len(scheme) == 1:   # a Windows drive letter: a path
        scheme = ""
    if scheme in OBJECT_SCHEMES:
        if not text.lower().startswith(f"{scheme}://") or not parsed.netloc:
            raise TablespecError(f"{where}{text!r} is not an S3 URI: write {scheme}://BUCKET/PATH")
        bucket = parsed.netloc
        if not re.fullmatch(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]", bucket) or ".." in bucket:
            raise TablespecError(f"{where}{text!r}: {bucket!r} is not a valid S3 bucket name")
        if parsed.query or parsed.fragment or parsed.params:
            raise TablespecError(f"{where}{text!r}: an S3 location takes no query or fragment")
        parts = [p for p in parsed.path.split("/") if p]
        if any(p in (".", "..") for p in parts):
            raise TablespecError(f"{where}{text!r}: '.' and '..' are not allowed in an S3 location")
        return "/".join([f"s3://{bucket}", *parts])
    if scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise TablespecError(f"{where}file URI with a remote host is not supported: {text!r}")
        text = unquote(parsed.path)
    elif scheme or re.match(r"^[A-Za-z][A-Za-z0-9+.\-]+:/", text):   # "s3:/x", "gs:/x"; not "C:/x"
        shown = scheme or text.split(":", 1)[0].lower()
        raise TablespecError(
            f"{where}unsupported storage scheme {shown!r} in {text!r}: supported are local paths, file://, "
            f"s3:// and s3a:// URIs")
    return os.path.normpath(os.path.abspath(text)).replace(os.sep, "/")


def is_object_store(location: str) -> bool:
    return urlparse(str(location)).scheme.lower() in OBJECT_SCHEMES


LOCAL = LocalStorage()


def parent_location(location: str) -> str:
    """The folder holding `location` (a path or an object-store URI)."""
    if not is_object_store(location):
        return os.path.dirname(location)
    head, _, _ = location.rstrip("/").rpartition("/")
    return head if head.count("/") >= 2 and not head.endswith(":/") else location.rstrip("/")


def relative_location(location: str, root: str) -> str:
    """`location` relative to `root` (both normalized by `check_location`); '..' parts when outside."""
    if not is_object_store(location) and not is_object_store(root):
        return os.path.relpath(location, root)
    a, b = location.rstrip("/").split("/"), root.rstrip("/").split("/")
    common = 0
    while common < min(len(a), len(b)) and a[common] == b[common]:
        common += 1
    return "/".join([".."] * (len(b) - common) + a[common:]) or "."


def within(location: str, root: str) -> bool:
    """Whether `location` is `root` or below it (normalized forms, no links resolved)."""
    location, root = location.rstrip("/"), root.rstrip("/")
    return location == root or location.startswith(root + "/")


REMOTE_CONCURRENCY = 32   # requests in flight when many tables are looked at on an object store


def map_locations(fn, items: list, location: str) -> list:
    """`[fn(item) for item in items]`, run concurrently when `location` is on an object store
    (each call waits on requests; local calls gain nothing from threads). Order is kept."""
    if not is_object_store(location) or len(items) < 2:
        return [fn(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(min(REMOTE_CONCURRENCY, len(items))) as pool:
        return list(pool.map(fn, items))


def table_location(warehouse: str, spec_location: str) -> str:
    """A spec's table base path: its location under the warehouse root."""
    if is_object_store(warehouse):
        return check_location(join(check_location(warehouse), spec_location))
    return os.path.normpath(os.path.join(os.path.abspath(warehouse), spec_location))

"""The transaction lock Apache Hudi writers take: Hudi's FileSystemBasedLockProvider, on any storage.

Hudi's optimistic concurrency control serializes the short critical sections of every writer
(creating an instant, checking for conflicts and completing a commit) on one lock. Its file-system
provider (Hudi 0.15, `org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider`) is:

- the lock file `<hoodie.write.lock.filesystem.path>/lock`, by default `<base>/.hoodie/lock`;
- taken by creating that file exclusively (`create(path, overwrite=false)`) and released by
  deleting it; a writer that finds the file waits and retries;
- expired when its modification time is older than `hoodie.write.lock.filesystem.expire`
  minutes (0, Hudi's default, means never: a dead Hudi writer's lock then stays until deleted),
  and an expired file is deleted by the next writer before it tries;
- content: Jackson-pretty JSON `{lockCreateTime, lockThreadName, lockStacksInfo}`, for logs only.

tablespec takes the same file the same way. It names itself in `lockThreadName`
(`tablespec <who> <host>:<pid>`) so another tablespec on the same host need not wait out the
expiry of a lock whose process is gone, and it refreshes the file's modification time while it
holds the lock, so a long critical section is not taken for a dead one. Hudi's own writers do
neither: `hudi-options` sets an expiry so a killed Hudi job does not block the table forever.

This lock is not tablespec's table lock (`lock.py`): that one is held for a whole action and
keeps two tablespec writers apart; this one is held for milliseconds and keeps every writer's
commit steps apart, so the optimistic conflict check (`conflict.py`) sees a stable timeline.
"""
from __future__ import annotations

import json
import os
import re
import socket
import threading
import time
from dataclasses import dataclass
from datetime import datetime

from tablespec.errors import TablespecError
from tablespec.hudi.config import META_FOLDER
from tablespec.hudi.io import Storage, join
from tablespec.hudi.timeline.lock import process_alive

LOCK_FILE = "lock"
PROVIDER = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
EXPIRE_ENV = "TABLESPEC_HUDI_LOCK_EXPIRE_MINUTES"
DEFAULT_EXPIRE_MINUTES = 2
DEFAULT_TIMEOUT_SECONDS = 180.0  # longer than the expiry: a dead writer's lock frees up within it
_OURS = re.compile(r"tablespec .* (?P<host>[^\s:]+):(?P<pid>\d+)$")


class TransactionLockTimeout(TablespecError):
    """Another writer held Hudi's transaction lock for the whole wait."""


def expire_minutes() -> int:
    """Minutes after which an unrefreshed lock file counts as abandoned: the value Hudi writers must
    be given as `hoodie.write.lock.filesystem.expire` (`hudi-options` does). $TABLESPEC_HUDI_LOCK_EXPIRE_MINUTES
    overrides the default of 2."""
    raw = os.environ.get(EXPIRE_ENV, str(DEFAULT_EXPIRE_MINUTES))
    try:
        value = int(raw)
    except ValueError:
        raise TablespecError(f"${EXPIRE_ENV} must be a whole number of minutes, got {raw!r}") from None
    if value < 0:
        raise TablespecError(f"${EXPIRE_ENV} must not be negative, got {value}")
    return value


def lock_folder(base: str) -> str:
    """The folder Hudi's provider keeps its lock file in by default (`hoodie.write.lock.filesystem.path`)."""
    return join(base, META_FOLDER)


def lock_path(base: str) -> str:
    return join(lock_folder(base), LOCK_FILE)


@dataclass(frozen=True)
class Holder:
    """Who holds the lock, as its file says."""
    thread: str
    created: str
    age_seconds: float
    expired: bool

    def describe(self) -> str:
        state = "expired" if self.expired else "held"
        return f"{self.thread or 'an unnamed writer'} (since {self.created or 'unknown'}, {self.age_seconds:.0f}s ago, {state})"


def _content(thread: str, note: str) -> bytes:
    """Hudi's LockInfo as Jackson's default pretty printer writes it."""
    created = datetime.now().strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    body = {"lockCreateTime": created, "lockThreadName": thread, "lockStacksInfo": [note]}
    text = json.dumps(body, indent=2, separators=(",", " : "))
    return text.replace("[\n    ", "[ ").replace("\n  ]", " ]").encode("utf-8")


def read_holder(storage: Storage, base: str, expire: int | None = None, now: float | None = None) -> Holder | None:
    """The writer holding Hudi's lock on the table at `base`, or None when the lock is free."""
    path = lock_path(base)
    info = storage.info(path)
    if info is None or info.is_dir:
        return None
    try:
        data = json.loads(storage.read_bytes(path) or b"{}")
    except FileNotFoundError:
        return None
    except ValueError:
        data = {}
    thread = str(data.get("lockThreadName", "")) if isinstance(data, dict) else ""
    created = str(data.get("lockCreateTime", "")) if isinstance(data, dict) else ""
    age = max(0.0, (time.time() if now is None else now) - info.mtime_ms / 1000.0)
    expire = expire_minutes() if expire is None else expire
    dead = (m := _OURS.match(thread)) is not None and m["host"] == socket.gethostname() \
        and not process_alive(int(m["pid"]))
    return Holder(thread, created, age, dead or (expire > 0 and age > expire * 60))


class TransactionLock:
    """Hudi's file-system transaction lock on one table. `with TransactionLock(storage, base, who):`."""

    def __init__(self, storage: Storage, base: str, who: str = "writer", expire: int | None = None,
                 timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS, poll_seconds: float = 0.2,
                 refresh_seconds: float | None = None):
        """`refresh_seconds`: how often the held lock's modification time is renewed (a third of the expiry)."""
        self.storage, self.base, self.path = storage, base, lock_path(base)
        self.thread = f"tablespec {who} {socket.gethostname()}:{os.getpid()}"
        self.expire = expire_minutes() if expire is None else expire
        self.timeout_seconds, self.poll_seconds = timeout_seconds, poll_seconds
        self.refresh_seconds = self.expire * 20 if refresh_seconds is None else refresh_seconds
        self._content: bytes | None = None
        self._stop = threading.Event()
        self._refresher: threading.Thread | None = None

    @property
    def held(self) -> bool:
        return self._content is not None

    def acquire(self, note: str = "") -> TransactionLock:
        """Take the lock, waiting for the holder to release it or for its file to expire."""
        if self._content is not None:
            raise TablespecError(f"{self.path}: already held by this writer")
        deadline = time.monotonic() + self.timeout_seconds
        content = _content(self.thread, note)
        try:  # free (the usual case): taken with one conditional create, nothing read first
            self.storage.create_exclusive(self.path, content)
            self._content = content
            self._start_refresher()
            return self
        except FileExistsError:
            pass
        while True:
            holder = read_holder(self.storage, self.base, self.expire)
            if holder is not None and holder.expired:
                self.storage.delete(self.path)  # as Hudi does: an expired lock file is removed, then taken
                holder = None
            if holder is None:
                content = _content(self.thread, note)
                try:
                    self.storage.create_exclusive(self.path, content)
                except FileExistsError:
                    continue  # another writer was quicker
                self._content = content
                self._start_refresher()
                return self
            if time.monotonic() >= deadline:
                raise TransactionLockTimeout(
                    f"table {self.base}: Hudi's transaction lock ({self.path}) is held by {holder.describe()}; "
                    f"gave up after {self.timeout_seconds:g}s. It expires {self.expire} minute(s) after its last "
                    f"refresh" + (" (never: expiry 0)" if self.expire == 0 else "")
                    + "; if no writer is running on this table, delete the file")
            time.sleep(self.poll_seconds)

    def _start_refresher(self) -> None:
        if self.expire <= 0:
            return
        self._stop.clear()
        self._refresher = threading.Thread(target=self._refresh, daemon=True, name="tablespec-txn-lock")
        self._refresher.start()

    def _refresh(self) -> None:
        """Keep the file's modification time fresh while held (Hudi expires by modification time)."""
        while not self._stop.wait(self.refresh_seconds):
            try:
                if self.storage.read_bytes(self.path) == self._content:  # rewritten whole: object stores
                    self.storage.write_atomic(self.path, self._content)  # set the time only by a PUT
            except OSError:
                continue

    def release(self) -> None:
        """Delete the lock file, if it is still the one this writer created."""
        self._stop.set()
        if self._refresher is not None:
            self._refresher.join()
            self._refresher = None
        content, self._content = self._content, None
        if content is None:
            return
        try:
            if self.storage.read_bytes(self.path) == content:
                self.storage.delete(self.path)
        except FileNotFoundError:
            pass

    def __enter__(self) -> TransactionLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

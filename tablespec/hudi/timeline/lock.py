"""One writer per table: a lease lock under `<base>/.hoodie/.tablespec/lock/`.

A writer that dies (kill -9, lost node) cannot release its lock, so the lock carries a lease the
holder keeps extending (`renew`, or a background renewer with `auto_renew=True`). A lock whose
lease ran out is taken over by the next writer; nobody has to delete files by hand.

The lock is a sequence of generations, one file each (`lock/00000000000000000007`); the
highest generation is the lock's current state. Taking the lock means creating the next
generation with `create_exclusive`, which only one writer can do, and only after reading the
current one as released or expired. Nothing ever moves or deletes the current generation, so a
writer working from a stale read cannot disturb a newer holder: its create fails, or it finds a
higher generation than its own and backs off. (Renaming one lock file away to take it over, the
simpler scheme, lets a slow taker move a *fresh* lock aside while a third writer creates
another: two holders.) Like every lease, this assumes clocks agree to well within the lease and
that a holder does not stall for longer than its lease: writers call `verify()` right before
their commit point.

Releasing marks the generation released and then leaves an empty `<generation>.released` beside
it: a reader that only wants to know whether the lock is held (`read_lock`, which every `plan`
runs), and a writer about to take it, see the marker in the listing and read no file (on an
object store, one GET less). The
marker is written after the released record, so it never claims more than the file says; older
tablespec versions ignore it (not a generation name).
"""
from __future__ import annotations

import dataclasses
import getpass
import json
import os
import re
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tablespec.errors import TablespecError
from tablespec.hudi.config import META_FOLDER
from tablespec.hudi.io import Storage, join

LOCK_DIR = ".tablespec/lock"
DEFAULT_LEASE_SECONDS = 60.0
DEFAULT_TIMEOUT_SECONDS = 30.0
_GENERATION = re.compile(r"\d{20}")
RELEASED = ".released"   # suffix of the marker a release leaves beside its generation


class LockTimeoutError(TablespecError):
    """The table stayed locked by another writer for the whole wait."""


class LockLostError(TablespecError):
    """The lease ran out or another writer took the lock: whatever this writer did since is unprotected."""


def lock_dir(base: str) -> str:
    return join(base, META_FOLDER, LOCK_DIR)


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")


def _default_owner() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no user name in the environment (some containers)
        return "unknown"


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


@dataclass(frozen=True)
class LockInfo:
    """One generation of the lock. Times are epoch seconds here and ISO-8601 UTC on disk."""
    owner: str
    host: str
    pid: int
    acquired_at: float
    expires_at: float
    token: str
    released: bool = False

    def expired(self, now: float | None = None) -> bool:
        """Free to take: released by its holder, its lease ran out, or its holder was a process
        on this host that no longer exists (a killed writer need not wait out its lease)."""
        return (self.released or (time.time() if now is None else now) >= self.expires_at
                or (self.host == socket.gethostname() and not process_alive(self.pid)))

    def describe(self) -> str:
        return (f"owner {self.owner!r} (host {self.host}, pid {self.pid}) since {_iso(self.acquired_at)}, "
                f"lease expires {_iso(self.expires_at)}")

    def to_bytes(self) -> bytes:
        data = {"owner": self.owner, "host": self.host, "pid": self.pid, "acquired_at": _iso(self.acquired_at),
                "expires_at": _iso(self.expires_at), "token": self.token, "released": self.released}
        return json.dumps(data, indent=2).encode("utf-8")

    @classmethod
    def from_bytes(cls, raw: bytes) -> LockInfo:
        """Raises ValueError for anything that is not a lock file tablespec wrote."""
        try:
            data: Any = json.loads(raw)
            return cls(str(data["owner"]), str(data["host"]), int(data["pid"]),
                       datetime.fromisoformat(data["acquired_at"]).timestamp(),
                       datetime.fromisoformat(data["expires_at"]).timestamp(), str(data["token"]),
                       data.get("released") is True)
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"not a tablespec lock file: {e}") from None


def _path(directory: str, generation: int) -> str:
    return join(directory, f"{generation:020d}")


def _listing(storage: Storage, directory: str) -> tuple[list[int], set[str]]:
    """Generation numbers present, ascending (create_exclusive's hidden temp files are not), and
    every file name listed."""
    names = {i.name for i in storage.list_dir(directory) if not i.is_dir}
    return sorted(int(n) for n in names if _GENERATION.fullmatch(n)), names


def _generations(storage: Storage, directory: str) -> list[int]:
    return _listing(storage, directory)[0]


def _latest(storage: Storage, directory: str, marker: bool = False) -> tuple[int, LockInfo | None] | None:
    """The current generation and its content (None if unreadable); None when never locked.
    `marker`: a generation whose released marker is listed comes back as released unread (the
    marker is written after the released record), for a taker that needs no more than that."""
    while True:
        generations, names = _listing(storage, directory)
        if not generations:
            return None
        if marker and f"{generations[-1]:020d}{RELEASED}" in names:
            return generations[-1], _RELEASED
        try:
            raw = storage.read_bytes(_path(directory, generations[-1]))
        except FileNotFoundError:
            continue  # removed by hand since the listing
        try:
            return generations[-1], LockInfo.from_bytes(raw)
        except ValueError:
            return generations[-1], None


_RELEASED = LockInfo("", "", 0, 0.0, 0.0, "", released=True)   # a generation known released from its marker


def read_lock(storage: Storage, base: str) -> LockInfo | None:
    """Who holds the table's lock (possibly with an expired lease), or None when it is free."""
    latest = _latest(storage, lock_dir(base), marker=True)   # released: nothing to read
    if latest is None:
        return None
    if latest[1] is None:
        raise TablespecError(f"{_path(lock_dir(base), latest[0])} is not a tablespec lock file; "
                             f"if no writer is running, delete it")
    return None if latest[1].released else latest[1]


class TableLock:
    """A table's write lock. `with TableLock(storage, base):` or `acquire()` ... `release()`."""

    def __init__(self, storage: Storage, base: str, owner: str | None = None,
                 lease_seconds: float = DEFAULT_LEASE_SECONDS, auto_renew: bool = False):
        if lease_seconds <= 0:
            raise TablespecError(f"lock lease must be positive, got {lease_seconds}")
        self.storage, self.base, self.directory = storage, base, lock_dir(base)
        self.owner = owner or _default_owner()
        self.lease_seconds, self.auto_renew = lease_seconds, auto_renew
        self._held: LockInfo | None = None
        self._generation = 0
        self._lost: LockLostError | None = None
        self.recovered: list = []   # what recovery rolled back or finished when the lock was taken (engine/commit.locked)
        self._mutex = threading.Lock()  # renew() runs in the renewer thread and in the caller's
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    @property
    def held(self) -> bool:
        return self._held is not None

    @property
    def info(self) -> LockInfo | None:
        """This writer's lock record while held."""
        return self._held

    @property
    def path(self) -> str | None:
        """The file of the generation this writer holds."""
        return _path(self.directory, self._generation) if self._held is not None else None

    def acquire(self, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS, poll: float = 0.2) -> TableLock:
        """Take the lock, waiting up to `timeout_seconds` for the holder to release it or for its
        lease to expire. Raises LockTimeoutError naming the holder."""
        if self._held is not None:
            raise TablespecError(f"{self.path}: this writer already holds the lock")
        deadline = time.monotonic() + max(0.0, timeout_seconds)
        while True:
            latest = _latest(self.storage, self.directory, marker=True)
            if latest is not None and (latest[1] is None or not latest[1].expired()):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise LockTimeoutError(self._timeout_message(*latest, timeout_seconds))
                time.sleep(min(poll, remaining))
                continue
            generation = 1 if latest is None else latest[0] + 1
            now = time.time()
            raw = LockInfo(self.owner, socket.gethostname(), os.getpid(), now, now + self.lease_seconds,
                           uuid.uuid4().hex).to_bytes()
            path = _path(self.directory, generation)
            try:
                self.storage.create_exclusive(path, raw)
            except FileExistsError:
                continue  # another writer took this generation first
            generations = _generations(self.storage, self.directory)
            if generations[-1:] != [generation]:
                self.storage.delete(path)  # we read a stale state: a newer generation exists
                continue
            self._hold(generation, LockInfo.from_bytes(raw))  # as on disk (times in milliseconds)
            for old in generations:  # as listed just now: older generations are never recreated
                if old < generation - 1:  # the previous one stays: generations never restart
                    self.storage.delete_files([_path(self.directory, old), _path(self.directory, old) + RELEASED])
            return self

    def _hold(self, generation: int, info: LockInfo) -> None:
        self._generation, self._held, self._lost = generation, info, None
        if self.auto_renew:
            self._stop.clear()
            self._renewer = threading.Thread(target=self._renew_loop, name=f"tablespec-lock-{self.owner}",
                                             daemon=True)
            self._renewer.start()

    def _timeout_message(self, generation: int, holder: LockInfo | None, waited: float) -> str:
        who = (holder.describe() if holder is not None
               else "an unreadable lock file (not written by tablespec, or damaged)")
        path = _path(self.directory, generation)
        return (f"table {self.base} is locked by {who}; gave up after waiting {waited:g}s. Lock file: {path}. "
                f"If that writer is no longer running, the lock is taken over automatically once its lease "
                f"expires; to free it now (only when no writer is running on this table): rm '{path}'")

    def _lose(self, reason: str) -> LockLostError:
        self._lost = LockLostError(f"lock on table {self.base} lost: {reason} (lock directory {self.directory})")
        self._held = None
        self._stop.set()
        return self._lost

    def _check(self) -> LockInfo:
        """Our lock record, after checking the lease runs and our generation is still the current one."""
        if self._lost is not None:
            raise self._lost
        if self._held is None:
            raise LockLostError(f"lock on table {self.base} is not held")
        held = self._held
        if held.expired():
            raise self._lose(f"the lease expired at {_iso(held.expires_at)} before it was renewed")
        latest = _latest(self.storage, self.directory)
        if latest is None or latest[0] != self._generation or latest[1] is None or latest[1].token != held.token:
            now = ("nobody" if latest is None or latest[1] is None or latest[1].released
                   else latest[1].describe())
            raise self._lose(f"it is now held by {now}")
        return held

    def verify(self) -> None:
        """Raise LockLostError unless this writer still holds the lock; call it before a commit point."""
        with self._mutex:
            self._check()

    def renew(self) -> None:
        """Extend the lease by `lease_seconds` from now; LockLostError if the lock is no longer ours."""
        with self._mutex:
            held = self._check()
            raw = dataclasses.replace(held, expires_at=time.time() + self.lease_seconds).to_bytes()
            self.storage.write_atomic(_path(self.directory, self._generation), raw)
            self._held = LockInfo.from_bytes(raw)

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.lease_seconds / 3):
            try:
                self.renew()
            except LockLostError:
                return
            except OSError:
                continue  # transient storage error: retried at the next beat, before the lease runs out

    def release(self) -> bool:
        """Give the lock up (its generation is marked released); True when this writer still held
        it. A lock that is no longer ours (lost) is left alone."""
        self._stop.set()
        if self._renewer is not None and self._renewer is not threading.current_thread():
            self._renewer.join()
        self._renewer = None
        with self._mutex:
            try:
                held = self._check()
            except LockLostError:
                return False
            path = _path(self.directory, self._generation)
            self.storage.write_atomic(path, dataclasses.replace(held, released=True).to_bytes())
            self._held = None
            self.storage.write_bytes(path + RELEASED, b"")   # after the record: a marker never claims more
            return True

    def __enter__(self) -> TableLock:
        if self._held is None:
            self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

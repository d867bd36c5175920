"""Heartbeats of instants being written: `<base>/.hoodie/.heartbeat/<instant>`, kept fresh by the writer.

A pending instant on the timeline is either being written right now or was left behind by a
writer that died; only the second may be rolled back. The heartbeat file's modification time
tells them apart. This is the file and the meaning Apache Hudi uses for its lazy cleaning of
failed writes, so Hudi writers and tablespec recognise each other's live instants.

Defaults: a beat every 10 s; an instant is presumed dead after 120 s without one (or when its
file is missing). Hudi beats every 60 s and declares death after 2 misses, i.e. 120 s: with the
same tolerance, tablespec never declares a live Hudi writer dead sooner than Hudi itself would,
and with 12 misses allowed a long GC pause or a slow storage call does not kill a live
tablespec writer. The cost of a long tolerance is small: a dead write is rolled back a little
later, and nothing waits for it (readers ignore pending instants).

Writers start the heartbeat before requesting the instant (so a visible pending instant always
has a heartbeat) and stop it after the instant completed or failed; stopping deletes the file.
"""
from __future__ import annotations

import os
import threading
import time

from tablespec.errors import TablespecError
from tablespec.hudi.config import META_FOLDER
from tablespec.hudi.io import Storage, join
from tablespec.hudi.timeline.instant import validate_timestamp

HEARTBEAT_FOLDER = ".heartbeat"
DEFAULT_INTERVAL_SECONDS = 10.0
DEFAULT_TOLERANCE_SECONDS = 120.0
TOLERANCE_ENV = "TABLESPEC_HEARTBEAT_TOLERANCE"


def tolerance_seconds() -> float:
    """How long an instant's heartbeat may be silent before its writer counts as dead
    (default 120 s, as Hudi's 2 missed 60 s beats; $TABLESPEC_HEARTBEAT_TOLERANCE overrides)."""
    return float(os.environ.get(TOLERANCE_ENV, DEFAULT_TOLERANCE_SECONDS))


def heartbeat_path(base: str, instant_ts: str) -> str:
    return join(base, META_FOLDER, HEARTBEAT_FOLDER, validate_timestamp(instant_ts))


def last_heartbeat(storage: Storage, base: str, instant_ts: str) -> float | None:
    """Epoch seconds of the instant's last beat, or None when it has no heartbeat file."""
    info = storage.info(heartbeat_path(base, instant_ts))
    return None if info is None or info.is_dir else info.mtime_ms / 1000.0


def heartbeat_expired(storage: Storage, base: str, instant_ts: str,
                      tolerance_seconds: float = DEFAULT_TOLERANCE_SECONDS, now: float | None = None) -> bool:
    """True when no writer has beaten for the instant within `tolerance_seconds` (or ever)."""
    last = last_heartbeat(storage, base, instant_ts)
    return last is None or (time.time() if now is None else now) - last > tolerance_seconds


class Heartbeat:
    """Keeps one instant's heartbeat fresh from a daemon thread. `with Heartbeat(...):` or start/stop."""

    def __init__(self, storage: Storage, base: str, instant_ts: str,
                 interval_seconds: float = DEFAULT_INTERVAL_SECONDS):
        if interval_seconds <= 0:
            raise TablespecError(f"heartbeat interval must be positive, got {interval_seconds}")
        self.storage, self.instant_ts, self.interval_seconds = storage, instant_ts, interval_seconds
        self.path = heartbeat_path(base, instant_ts)
        self.error: OSError | None = None  # the last failed beat, cleared by the next good one
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self) -> Heartbeat:
        """Beat once now (so the instant is alive from this moment), then every interval."""
        if self._thread is not None:
            raise TablespecError(f"heartbeat of instant {self.instant_ts} is already running")
        self.storage.touch(self.path)
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"tablespec-heartbeat-{self.instant_ts}",
                                        daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval_seconds):
            try:
                self.storage.touch(self.path)
                self.error = None
            except OSError as e:  # keep beating: a transient error must not look like a dead writer
                self.error = e

    def stop(self) -> None:
        """Stop beating and delete the heartbeat file (the instant is done, or abandoned)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        self.storage.delete(self.path)

    def __enter__(self) -> Heartbeat:
        if self._thread is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

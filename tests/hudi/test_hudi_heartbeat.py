"""Heartbeats of in-flight instants: refreshed while running, expired when stale or missing."""
import os
import threading
import time

import pytest

from tablespec.errors import HudiFormatError, TablespecError
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.timeline.heartbeat import Heartbeat, heartbeat_expired, heartbeat_path, last_heartbeat

ST = LocalStorage()
T1 = "20240101000000001"


def test_heartbeat_file_is_where_hudi_keeps_it(tmp_path):
    assert heartbeat_path(str(tmp_path), T1) == f"{tmp_path}/.hoodie/.heartbeat/{T1}"
    with pytest.raises(HudiFormatError):
        heartbeat_path(str(tmp_path), "../etc")


def test_running_heartbeat_is_refreshed_then_stop_deletes_it(tmp_path):
    base = str(tmp_path)
    beat = Heartbeat(ST, base, T1, interval_seconds=0.05).start()
    try:
        assert beat.running and os.path.isfile(heartbeat_path(base, T1))
        assert os.path.getsize(heartbeat_path(base, T1)) == 0  # Hudi's heartbeats are empty files
        first = last_heartbeat(ST, base, T1)
        time.sleep(0.3)
        assert last_heartbeat(ST, base, T1) > first
        assert not heartbeat_expired(ST, base, T1, tolerance_seconds=1)
        assert beat.error is None
    finally:
        beat.stop()
    assert not beat.running and last_heartbeat(ST, base, T1) is None
    assert heartbeat_expired(ST, base, T1, tolerance_seconds=3600)
    assert not any(t.name == f"tablespec-heartbeat-{T1}" for t in threading.enumerate())


def test_heartbeat_expires_after_the_tolerance_without_beats(tmp_path):
    base = str(tmp_path)
    ST.touch(heartbeat_path(base, T1))  # one beat, then the writer hangs
    last = last_heartbeat(ST, base, T1)
    assert abs(last - time.time()) < 5
    assert not heartbeat_expired(ST, base, T1, tolerance_seconds=0.2, now=last + 0.19)
    assert heartbeat_expired(ST, base, T1, tolerance_seconds=0.2, now=last + 0.21)
    time.sleep(0.3)
    assert heartbeat_expired(ST, base, T1, tolerance_seconds=0.2)


def test_stale_mtime_left_by_a_killed_writer_is_expired(tmp_path):
    base = str(tmp_path)
    path = heartbeat_path(base, T1)
    ST.touch(path)
    hour_ago = time.time() - 3600
    os.utime(path, (hour_ago, hour_ago))
    assert heartbeat_expired(ST, base, T1, tolerance_seconds=60)
    assert not heartbeat_expired(ST, base, T1, tolerance_seconds=7200)
    ST.touch(path)  # a writer resumed beating
    assert not heartbeat_expired(ST, base, T1, tolerance_seconds=60)


def test_missing_heartbeat_is_expired(tmp_path):
    assert last_heartbeat(ST, str(tmp_path), T1) is None
    assert heartbeat_expired(ST, str(tmp_path), T1, tolerance_seconds=1e9)


def test_context_manager_and_misuse(tmp_path):
    base = str(tmp_path)
    with Heartbeat(ST, base, T1, interval_seconds=0.05) as beat:
        assert not heartbeat_expired(ST, base, T1, tolerance_seconds=1)
        with pytest.raises(TablespecError, match="already running"):
            beat.start()
    assert heartbeat_expired(ST, base, T1, tolerance_seconds=1)
    with pytest.raises(TablespecError, match="positive"):
        Heartbeat(ST, base, T1, interval_seconds=0)


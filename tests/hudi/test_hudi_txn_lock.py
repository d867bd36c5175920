"""Hudi's file-system transaction lock as tablespec takes it: exclusive, expiring by modification
time, taken over from dead tablespec processes, and in Hudi's file format and place."""
import json
import os
import subprocess
import sys
import threading
import time

import pytest
from _support import ROOT

from tablespec.errors import TablespecError
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.timeline.txn_lock import EXPIRE_ENV, TransactionLock, TransactionLockTimeout, expire_minutes, lock_path, read_holder

ST = LocalStorage()


def test_lock_file_is_hudis(tmp_path):
    base = str(tmp_path)
    with TransactionLock(ST, base, "apply") as lock:
        assert lock.path == os.path.join(base, ".hoodie", "lock")
        text = open(lock.path).read()
        data = json.loads(text)
        assert list(data) == ["lockCreateTime", "lockThreadName", "lockStacksInfo"]
        assert text.startswith('{\n  "lockCreateTime" : "') and '"lockStacksInfo" : [ "' in text
        assert data["lockThreadName"].startswith("tablespec apply ") and data["lockThreadName"].endswith(f":{os.getpid()}")
        holder = read_holder(ST, base)
        assert holder is not None and not holder.expired and holder.thread == data["lockThreadName"]
    assert not os.path.exists(lock_path(base)) and read_holder(ST, base) is None


def test_second_writer_waits_then_times_out_naming_the_holder(tmp_path):
    base = str(tmp_path)
    with TransactionLock(ST, base, "first"):
        with pytest.raises(TransactionLockTimeout, match=r"held by tablespec first .*gave up after 0.3s"):
            TransactionLock(ST, base, "second", timeout_seconds=0.3, poll_seconds=0.05).acquire()


def test_waiter_proceeds_when_the_holder_releases(tmp_path):
    base = str(tmp_path)
    first = TransactionLock(ST, base, "first").acquire()
    order = []
    def second():
        with TransactionLock(ST, base, "second", timeout_seconds=10, poll_seconds=0.02):
            order.append("second")
    t = threading.Thread(target=second)
    t.start()
    time.sleep(0.3)
    order.append("first")
    first.release()
    t.join(10)
    assert order == ["first", "second"]


def test_a_lock_file_older_than_the_expiry_is_taken_over(tmp_path):
    """What a killed Hudi writer leaves: its lock file, no longer refreshed."""
    base = str(tmp_path)
    os.makedirs(os.path.join(base, ".hoodie"))
    path = lock_path(base)
    with open(path, "w") as f:
        f.write('{\n  "lockCreateTime" : "2026-11-23 10:00:00.000",\n  "lockThreadName" : "main",\n'
                '  "lockStacksInfo" : [ ]\n}')
    holder = read_holder(ST, base, expire=1)
    assert holder.thread == "main" and not holder.expired
    with pytest.raises(TransactionLockTimeout, match="held by main"):
        TransactionLock(ST, base, "apply", expire=1, timeout_seconds=0.2).acquire()
    old = time.time() - 61
    os.utime(path, (old, old))
    assert read_holder(ST, base, expire=1).expired
    with TransactionLock(ST, base, "apply", expire=1, timeout_seconds=0.2):
        assert "tablespec apply" in json.loads(open(path).read())["lockThreadName"]


def test_expiry_zero_never_expires(tmp_path):
    base = str(tmp_path)
    os.makedirs(os.path.join(base, ".hoodie"))
    open(lock_path(base), "w").write("{}")
    old = time.time() - 86400
    os.utime(lock_path(base), (old, old))
    assert not read_holder(ST, base, expire=0).expired
    with pytest.raises(TransactionLockTimeout, match=r"never: expiry 0"):
        TransactionLock(ST, base, expire=0, timeout_seconds=0.1).acquire()


def test_a_killed_tablespec_holder_is_taken_over_at_once(tmp_path):
    base = str(tmp_path)
    code = ("import sys, os, signal; from tablespec.hudi.io import LocalStorage; "
            "from tablespec.hudi.timeline.txn_lock import TransactionLock; "
            f"TransactionLock(LocalStorage(), {base!r}, 'victim').acquire(); os.kill(os.getpid(), signal.SIGKILL)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True)
    assert proc.returncode == -9
    holder = read_holder(ST, base)
    assert holder.thread.startswith("tablespec victim") and holder.expired  # its process is gone
    started = time.monotonic()
    with TransactionLock(ST, base, "next", timeout_seconds=5):
        assert time.monotonic() - started < 2


def test_release_leaves_a_lock_someone_else_holds(tmp_path):
    base = str(tmp_path)
    lock = TransactionLock(ST, base, "slow").acquire()
    os.remove(lock.path)  # as Hudi does with a lock it found expired
    other = TransactionLock(ST, base, "other").acquire()
    lock.release()
    assert read_holder(ST, base).thread == other.thread
    other.release()


def test_expiry_setting(monkeypatch):
    assert expire_minutes() == 2
    monkeypatch.setenv(EXPIRE_ENV, "5")
    assert expire_minutes() == 5
    monkeypatch.setenv(EXPIRE_ENV, "soon")
    with pytest.raises(TablespecError, match="whole number of minutes"):
        expire_minutes()


def test_holder_refreshes_the_modification_time(tmp_path):
    base = str(tmp_path)
    with TransactionLock(ST, base, "slow", expire=1, refresh_seconds=0.1) as lock:
        content = open(lock.path, "rb").read()
        old = time.time() - 50
        os.utime(lock.path, (old, old))
        time.sleep(0.5)
        assert read_holder(ST, base, expire=1).age_seconds < 5 and open(lock.path, "rb").read() == content

"""Hudi's transaction lock on object storage (the S3 API server on loopback): exclusive creation by
conditional PUT, expiry and refresh by modification time, take-over from a killed holder."""
import subprocess
import sys
import time

import pytest
from _support import ROOT, storage_and_base

from tablespec.hudi.timeline.txn_lock import TransactionLock, TransactionLockTimeout, lock_path, read_holder


def test_transaction_lock_on_s3(s3_bucket):
    storage, base = storage_and_base(s3_bucket + "/t")
    with TransactionLock(storage, base, "first", expire=1) as lock:
        assert lock.path == f"{base}/.hoodie/lock"
        assert read_holder(storage, base, expire=1).thread.startswith("tablespec first")
        with pytest.raises(TransactionLockTimeout, match="held by tablespec first"):
            TransactionLock(storage, base, "second", expire=1, timeout_seconds=0.3, poll_seconds=0.05).acquire()
    assert read_holder(storage, base) is None and not storage.exists(lock_path(base))


def test_refresh_moves_the_modification_time_on_s3(s3_bucket):
    storage, base = storage_and_base(s3_bucket + "/t")
    with TransactionLock(storage, base, "slow", expire=1, refresh_seconds=0.2) as lock:
        content = storage.read_bytes(lock.path)
        first = storage.info(lock.path).mtime_ms
        time.sleep(2.2)   # LastModified has second resolution
        assert storage.info(lock.path).mtime_ms > first and storage.read_bytes(lock.path) == content


def test_a_killed_holder_is_taken_over_on_s3(s3_bucket):
    storage, base = storage_and_base(s3_bucket + "/t")
    code = ("import os, signal; from tablespec.hudi.table import HudiTable; "
            "from tablespec.hudi.timeline.txn_lock import TransactionLock; "
            f"HudiTable.open({base!r}).transaction_lock('victim').acquire(); os.kill(os.getpid(), signal.SIGKILL)")
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True).returncode == -9
    assert read_holder(storage, base).expired
    with TransactionLock(storage, base, "next", timeout_seconds=5):
        assert read_holder(storage, base).thread.startswith("tablespec next")

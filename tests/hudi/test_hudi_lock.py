"""The table lock: contention, lease expiry and take-over, lost locks, other processes."""
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
from tablespec.hudi.timeline.lock import RELEASED, LockInfo, LockLostError, LockTimeoutError, TableLock, lock_dir, read_lock

ST = LocalStorage()


def _generations(base):
    return sorted(n for n in os.listdir(lock_dir(base)) if not n.endswith(RELEASED))


def _current(base):
    return os.path.join(lock_dir(base), _generations(base)[-1])


def test_lock_file_records_the_holder(tmp_path):
    base = str(tmp_path)
    assert read_lock(ST, base) is None
    with TableLock(ST, base, owner="ingest-job", lease_seconds=30) as lock:
        assert lock.path == os.path.join(base, ".hoodie", ".tablespec", "lock", "00000000000000000001")
        data = json.loads(open(lock.path).read())
        assert set(data) == {"owner", "host", "pid", "acquired_at", "expires_at", "token", "released"}
        assert data["owner"] == "ingest-job" and data["pid"] == os.getpid() and data["token"] == lock.info.token
        holder = read_lock(ST, base)
        assert holder == lock.info and 29 < holder.expires_at - holder.acquired_at <= 30
    assert read_lock(ST, base) is None and json.loads(open(_current(base)).read())["released"] is True


def test_generations_advance_and_old_ones_are_cleaned_up(tmp_path):
    base = str(tmp_path)
    for _ in range(4):
        TableLock(ST, base).acquire(timeout_seconds=0).release()
    assert _generations(base) == ["00000000000000000003", "00000000000000000004"]
    assert sorted(os.listdir(lock_dir(base))) == ["00000000000000000003", "00000000000000000003.released",
                                                  "00000000000000000004", "00000000000000000004.released"]


def test_a_released_lock_is_known_from_the_listing_alone(tmp_path):
    """`plan` asks every table whether it is locked: a release leaves a marker, so the answer needs
    no file read. The marker is trusted for its own generation only."""
    base = str(tmp_path)
    TableLock(ST, base).acquire(timeout_seconds=0).release()
    first = _current(base)
    with open(first, "w") as f:
        f.write("not read")                      # a read would fail on it: the marker answered
    assert read_lock(ST, base) is None
    os.remove(first + RELEASED)
    with pytest.raises(TablespecError, match="is not a tablespec lock file"):
        read_lock(ST, base)
    os.remove(first)
    TableLock(ST, base).acquire(timeout_seconds=0).release()
    held = TableLock(ST, base, owner="later").acquire(timeout_seconds=0)   # the older generation's marker stays
    assert read_lock(ST, base).owner == "later" and held.release()


def test_second_writer_waits_then_fails_naming_the_holder(tmp_path):
    base = str(tmp_path)
    first = TableLock(ST, base, owner="alice").acquire()
    started = time.monotonic()
    with pytest.raises(LockTimeoutError) as err:
        TableLock(ST, base, owner="bob").acquire(timeout_seconds=0.4, poll=0.05)
    assert time.monotonic() - started >= 0.4
    message = str(err.value)
    assert "'alice'" in message and f"pid {os.getpid()}" in message and first.path in message
    assert "since" in message and "lease expires" in message and f"rm '{first.path}'" in message
    assert isinstance(err.value, TablespecError)
    assert first.release() is True
    second = TableLock(ST, base, owner="bob").acquire(timeout_seconds=0)
    assert read_lock(ST, base).owner == "bob"
    second.release()


def test_waiting_writer_gets_the_lock_when_it_is_released(tmp_path):
    base = str(tmp_path)
    first = TableLock(ST, base, owner="alice").acquire()
    threading.Timer(0.3, first.release).start()
    second = TableLock(ST, base, owner="bob").acquire(timeout_seconds=5, poll=0.05)
    assert second.held and read_lock(ST, base).owner == "bob"
    second.release()


def test_expired_lease_is_taken_over(tmp_path):
    base = str(tmp_path)
    dead = TableLock(ST, base, owner="dead", lease_seconds=0.2).acquire()  # never renewed nor released
    time.sleep(0.3)
    taker = TableLock(ST, base, owner="taker").acquire(timeout_seconds=0)
    assert read_lock(ST, base).token == taker.info.token and taker.path == _current(base)
    with pytest.raises(LockLostError, match="lease expired"):
        dead.renew()
    assert dead.release() is False and read_lock(ST, base).owner == "taker"  # the dead writer cannot undo it
    taker.release()


def test_exactly_one_of_many_writers_takes_over_an_expired_lock(tmp_path):
    base = str(tmp_path)
    for round_ in range(5):
        TableLock(ST, base, owner="dead", lease_seconds=0.05).acquire()
        time.sleep(0.1)
        locks = [TableLock(ST, base, owner=f"w{round_}-{n}") for n in range(8)]
        outcomes = {}

        def attempt(lock):
            try:
                lock.acquire(timeout_seconds=0.5, poll=0.01)
                outcomes[lock.owner] = "held"
            except LockTimeoutError:
                outcomes[lock.owner] = "timeout"

        threads = [threading.Thread(target=attempt, args=(lock,)) for lock in locks]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winners = [lock for lock in locks if outcomes[lock.owner] == "held"]
        assert len(winners) == 1, outcomes
        assert read_lock(ST, base).token == winners[0].info.token
        winners[0].verify()
        for lock in locks:
            assert lock.held == (lock is winners[0])
        # the winner dies holding the lock: it expires for the next round
        winners[0].lease_seconds = 0.05
        winners[0].renew()
        time.sleep(0.1)


def test_renew_extends_the_lease_and_detects_a_lost_lock(tmp_path):
    base = str(tmp_path)
    lock = TableLock(ST, base, owner="a", lease_seconds=0.5).acquire()
    before = lock.info.expires_at
    time.sleep(0.05)
    lock.renew()
    assert lock.info.expires_at > before and read_lock(ST, base).expires_at == lock.info.expires_at
    assert read_lock(ST, base).acquired_at == lock.info.acquired_at
    os.remove(lock.path)  # an operator removed the lock and someone else took it
    other = TableLock(ST, base, owner="b").acquire(timeout_seconds=0)
    with pytest.raises(LockLostError, match="now held by owner 'b'"):
        lock.renew()
    with pytest.raises(LockLostError):
        lock.verify()
    assert not lock.held and lock.release() is False
    assert read_lock(ST, base).owner == "b"
    other.verify()
    other.release()


def test_renew_refuses_after_the_lease_ran_out_even_if_nobody_took_it(tmp_path):
    lock = TableLock(ST, str(tmp_path), lease_seconds=0.1).acquire()
    time.sleep(0.15)
    with pytest.raises(LockLostError, match="lease expired"):
        lock.verify()


def test_auto_renew_keeps_the_lock_beyond_its_lease(tmp_path):
    base = str(tmp_path)
    with TableLock(ST, base, owner="long-write", lease_seconds=0.6, auto_renew=True) as lock:
        time.sleep(1.5)
        lock.verify()
        with pytest.raises(LockTimeoutError, match="long-write"):
            TableLock(ST, base).acquire(timeout_seconds=0.3, poll=0.05)
    assert read_lock(ST, base) is None
    assert not any(t.name.startswith("tablespec-lock") for t in threading.enumerate())


def test_acquire_twice_and_invalid_lease_are_refused(tmp_path):
    lock = TableLock(ST, str(tmp_path)).acquire()
    with pytest.raises(TablespecError, match="already holds"):
        lock.acquire()
    lock.release()
    with pytest.raises(TablespecError, match="positive"):
        TableLock(ST, str(tmp_path), lease_seconds=0)


def test_unreadable_lock_file_is_never_taken_over(tmp_path):
    base = str(tmp_path)
    garbage = os.path.join(lock_dir(base), "00000000000000000009")
    ST.write_bytes(garbage, b"garbage")
    with pytest.raises(LockTimeoutError, match="unreadable lock file") as err:
        TableLock(ST, base).acquire(timeout_seconds=0.1, poll=0.05)
    assert garbage in str(err.value)
    with pytest.raises(TablespecError, match="not a tablespec lock file"):
        read_lock(ST, base)
    assert ST.read_bytes(garbage) == b"garbage"
    os.remove(garbage)  # what the message tells an operator to do
    assert TableLock(ST, base).acquire(timeout_seconds=0).path.endswith("00000000000000000001")


def test_lock_info_round_trips():
    info = LockInfo("o", "h", 7, 1_700_000_000.25, 1_700_000_060.5, "t")
    assert LockInfo.from_bytes(info.to_bytes()) == info
    assert b"2023-11-14T22:13:20.250+00:00" in info.to_bytes()
    assert not info.expired(now=1_700_000_060.4) and info.expired(now=1_700_000_060.5)
    assert LockInfo("o", "h", 7, 0, 2e9, "t", released=True).expired(now=0)


_HOLDER = """
import sys, time
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.timeline.lock import TableLock
lock = TableLock(LocalStorage(), sys.argv[1], owner="other-process", lease_seconds=float(sys.argv[2]), auto_renew=True)
lock.acquire(timeout_seconds=5)
print("held", flush=True)
sys.stdin.readline()
lock.release()
print("released", flush=True)
"""


def _holder(base, lease):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, base, str(lease)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_lock_held_by_another_process_released_cleanly(tmp_path):
    base = str(tmp_path)
    proc = _holder(base, 30)
    try:
        with pytest.raises(LockTimeoutError) as err:
            TableLock(ST, base).acquire(timeout_seconds=0.3, poll=0.05)
        assert "'other-process'" in str(err.value) and f"pid {proc.pid}" in str(err.value)
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "released"
    finally:
        proc.kill()
        proc.wait()
    TableLock(ST, base).acquire(timeout_seconds=0).release()


def test_lock_of_a_killed_process_is_taken_over_after_its_lease(tmp_path):
    base = str(tmp_path)
    proc = _holder(base, 0.9)
    try:
        # alive, the other process renews its lease: waiting longer than the lease does not help
        with pytest.raises(LockTimeoutError, match="other-process"):
            TableLock(ST, base).acquire(timeout_seconds=2, poll=0.05)
    finally:
        proc.kill()  # dies holding the lock
        proc.wait()
    assert read_lock(ST, base).pid == proc.pid
    lock = TableLock(ST, base, owner="next").acquire(timeout_seconds=5, poll=0.05)
    assert read_lock(ST, base).owner == "next"
    lock.release()

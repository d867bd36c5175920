"""Fault injection for recovery tests: kill -9 at a named point (any layer may name one)."""
from __future__ import annotations

import os
import signal

CRASH_ENV = "TABLESPEC_CRASH_AT"


def crash_point(name: str) -> None:
    """Kill this process (SIGKILL, as `kill -9`) when $TABLESPEC_CRASH_AT names this point."""
    if os.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)

"""Counts as people write them: `1 commit`, `2 commits`, never `1 commits`."""
from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and the noun in the number it takes (`plural` when adding an s is wrong)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"

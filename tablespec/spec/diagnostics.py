"""Diagnostics: one located message per problem, so every error in every file is reported at once.

Paths are the YAML spelling of a field (`spec.index.numBuckets`, `spec.columns[2].type`);
they are built here from pydantic-style locations so all modules agree on one format.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Diagnostic:
    """A problem in a spec or project file; `line`/`col` are 1-based (0 when no position is known)."""

    file: str
    line: int
    col: int
    path: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.col}" if self.line else self.file
        parts = [where]
        if self.severity == "warning":
            parts.append("warning")
        if self.path:
            parts.append(clip(self.path, MAX_PATH))
        return ": ".join(parts) + ": " + clip(self.message, MAX_MESSAGE)


MAX_MESSAGE, MAX_PATH = 400, 160
"""Diagnostics quote what the file says; a huge value is cut, not echoed whole."""


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit:,} more characters)"


def format_path(loc: Iterable[str | int]) -> str:
    """`("spec", "columns", 2, "type")` -> `spec.columns[2].type`."""
    out = ""
    for part in loc:
        out = child_path(out, part)
    return out


def child_path(path: str, part: object) -> str:
    """The path of `part` below `path`: `spec.columns` and 2 -> `spec.columns[2]`."""
    if isinstance(part, int):
        return f"{path}[{part}]"
    return f"{path}.{part}" if path else str(part)


_LAST_PART = re.compile(r"(?:\.[^.\[\]]*|\[\d+\])$")


def parent_path(path: str) -> str:
    """`spec.columns[2].type` -> `spec.columns[2]` -> `spec.columns` -> `spec` -> ``."""
    if not path:
        return ""
    shorter = _LAST_PART.sub("", path)
    return "" if shorter == path else shorter


def locate(positions: Mapping[str, tuple[int, int]], path: str) -> tuple[int, int]:
    """The position of `path`, or of its nearest ancestor that has one (a missing key points at its parent)."""
    while True:
        if path in positions:
            return positions[path]
        if not path:
            return (0, 0)
        path = parent_path(path)

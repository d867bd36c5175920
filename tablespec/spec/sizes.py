"""Byte sizes written the way people write them (`256MiB`, `100 MB`, `1GiB`) or as plain bytes.

Units are case-sensitive because `Mb` (bits) and `MB` differ; KB/MB/GB/TB are decimal,
KiB/MiB/GiB/TiB binary.
"""
from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated

from pydantic import BeforeValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

UNITS = {
    "B": 1,
    "KB": 1000, "MB": 1000**2, "GB": 1000**3, "TB": 1000**4,
    "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4,
}
KiB, MiB, GiB = 1024, 1024**2, 1024**3

_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*")
SIZE_PATTERN = r"^\s*\d+(\.\d+)?\s*(" + "|".join(UNITS) + r")?\s*$"
_HELP = "write bytes as an integer or a number with a unit (" + ", ".join(UNITS) + "), e.g. 256MiB"


def parse_size(value: object) -> int:
    """Bytes for an int or a size string; raises ValueError with a message fit for the user."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"size must not be negative, got {value}")
        return value
    if not isinstance(value, str):
        raise ValueError(f"invalid size {value!r}: {_HELP}")
    m = _SIZE.fullmatch(value)
    if not m:
        raise ValueError(f"invalid size {value!r}: {_HELP}")
    number, unit = Decimal(m.group(1)), m.group(2) or "B"
    if unit not in UNITS:
        close = [u for u in UNITS if u.lower() == unit.lower()]
        hint = f"units are case-sensitive; did you mean '{close[0]}'?" if close else _HELP
        raise ValueError(f"invalid size {value!r}: unknown unit '{unit}'; {hint}")
    size = number * UNITS[unit]
    if size != size.to_integral_value():
        raise ValueError(f"invalid size {value!r}: not a whole number of bytes")
    return int(size)


def _validate(value: object) -> object:
    try:
        return parse_size(value)
    except ValueError as e:
        raise PydanticCustomError("size", "{message}", {"message": str(e)}) from None


ByteSize = Annotated[
    int,
    BeforeValidator(_validate),
    WithJsonSchema({"anyOf": [
        {"type": "integer", "minimum": 0},
        {"type": "string", "pattern": SIZE_PATTERN},
    ]}),
]
"""An int of bytes in Python; in YAML also a string with a unit."""


def size_text(n: int) -> str | int:
    """Bytes as a spec would state them: `128MiB` when a binary unit divides them exactly, else the int."""
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        if n and n % UNITS[unit] == 0:
            return f"{n // UNITS[unit]}{unit}"
    return n


def human_bytes(n) -> str:
    """Bytes for people, in the largest unit under which they are at least 1: 500 -> '500 B',
    1536 -> '1.5 KiB' (so small sizes never read '0.0 MiB'; non-integers are shown as they are)."""
    if not isinstance(n, int) or isinstance(n, bool):
        return str(n)
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024:
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"

"""Java .properties files as java.util.Properties reads and writes them.

hoodie.properties and .hoodie_partition_metadata are written by Java; matching its escaping
rules exactly is what lets Apache Hudi read back what tablespec writes (e.g. the Avro schema in
hoodie.table.create.schema, full of `:` that must be written as `\\:`).
"""
from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

from tablespec.errors import HudiFormatError

_WS = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> Iterable[str]:
    """Natural lines joined across backslash continuations; comments and blank lines dropped."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(_WS)
        i += 1
        if not line or line[0] in "#!":
            continue
        while _ends_with_continuation(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip(_WS)
            i += 1
        if _ends_with_continuation(line):  # continuation at end of file: the backslash is dropped
            line = line[:-1]
        yield line


def _ends_with_continuation(line: str) -> bool:
    n = len(line) - len(line.rstrip("\\"))
    return n % 2 == 1


_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|(u)|(.)|\Z)", re.DOTALL)
"""A backslash and what it escapes: `\\uXXXX`, a malformed `\\u`, any other character, or nothing at the end."""
_SURROGATE = re.compile("[\ud800-\udfff]")
_KEY = re.compile(r"(?:\\.?|[^\\=: \t\f])*", re.DOTALL)
"""A key: up to the first `=`, `:` or white space that no backslash escapes."""


def _unescape(s: str) -> str:
    def one(m: re.Match) -> str:
        code, bad_u, other = m.groups()
        if code is not None:
            return chr(int(code, 16))
        if bad_u is not None:
            raise HudiFormatError(f"malformed \\uXXXX escape in properties: {m.string[m.start():m.start() + 6]!r}")
        return "" if other is None else _ESCAPES.get(other, other)

    if "\\" in s:
        s = _ESCAPE.sub(one, s)
    elif not _SURROGATE.search(s):
        return s
    # Java strings are UTF-16: a character outside the BMP arrives as two \u escapes.
    return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _split_key_value(line: str) -> tuple[str, str]:
    i = _KEY.match(line).end()  # type: ignore[union-attr]  # matches every string
    key, rest = line[:i], line[i:]
    rest = rest.lstrip(_WS)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_WS)
    return key, rest


def parse_properties(text: str) -> dict[str, str]:
    """Parse .properties text; later duplicates win, as in Java."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split_key_value(line)
        props[_unescape(key)] = _unescape(value)
    return props


def _escape(s: str, is_key: bool) -> str:
    out: list[str] = []
    for i, c in enumerate(s):
        if c == " ":
            out.append("\\ " if is_key or i == 0 else " ")
        elif c in "\\=:#!":
            out.append("\\" + c)
        elif c == "\t":
            out.append("\\t")
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\f":
            out.append("\\f")
        elif " " < c <= "~":
            out.append(c)
        else:  # control and non-ASCII characters as UTF-16 \uXXXX units, like Properties.store
            units = c.encode("utf-16-be", "surrogatepass")
            out.extend(f"\\u{units[j] << 8 | units[j + 1]:04X}" for j in range(0, len(units), 2))
    return "".join(out)


def _escape_comment(s: str) -> str:
    """Comments keep `:`/`=`/`#`; only non-printable or non-ASCII characters become \\uXXXX."""
    return "".join(c if " " <= c <= "~" else _escape(c, False) for c in s)


def _java_date(now: datetime) -> str:
    return now.strftime("%a %b %d %H:%M:%S UTC %Y")


def format_properties(props: Mapping[str, str], comment_lines: Iterable[str] = ("Updated by tablespec",),
                      now: datetime | None = None, sort_keys: bool = True, dated: bool = True) -> str:
    """Render properties like Properties.store: comment lines, a date comment (unless not `dated`),
    escaped key=value lines.

    Keys are sorted by default so that rewriting an unchanged config produces the same bytes
    (apart from the date line).
    """
    lines = [f"#{_escape_comment(line)}" for c in comment_lines for line in c.splitlines() or [""]]
    if dated:
        lines.append(f"#{_java_date(now or datetime.now(UTC))}")
    keys = sorted(props) if sort_keys else list(props)
    lines.extend(f"{_escape(k, True)}={_escape(str(props[k]), False)}" for k in keys)
    return "\n".join(lines) + "\n"


def table_checksum(table_name: str, database: str | None = None) -> int:
    """hoodie.table.checksum: CRC32 of the UTF-8 bytes of "<database>.<table>".

    Hudi formats "%s.%s" with the database defaulting to "", so a table without a database
    checksums ".<table>" (not the bare table name).
    """
    return zlib.crc32(f"{database or ''}.{table_name}".encode())

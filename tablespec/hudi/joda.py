"""Joda-Time date patterns, read and printed as Hudi's timestamp key generator does (no JVM).

Hudi parses a DATE_STRING value and prints a partition folder with Joda-Time's `DateTimeFormat`
patterns. This module knows the pattern letters Hudi's users write, from one table (`LETTERS`):
printing is vectorized over pyarrow arrays, parsing goes value by value through a regular
expression built from the pattern. Joda's parsing rules kept here: numbers take up to their
field's width (a year up to 9 digits unless a number follows it), text and literals match in any
case, `S` is a fraction of the second (kept to milliseconds), `Z`/`ZZ` read `Z`, `+HHmm` or
`+HH:mm`, `ZZZ` a zone id; of several patterns the first that reads the whole value wins.
A letter not in the table is a ValueError naming it.
"""
from __future__ import annotations

import datetime as dt
import functools
import re
import zoneinfo
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

# Pattern letters: what each one is (Joda-Time's DateTimeFormat letters).
LETTERS = {
    "y": "year", "Y": "year of era", "x": "week year", "w": "week of week year", "G": "era (AD)",
    "M": "month of year", "d": "day of month", "H": "hour of day (0-23)",
    "h": "clock hour of half day (1-12)", "K": "hour of half day (0-11)", "k": "clock hour of day (1-24)",
    "a": "half day (AM/PM)", "m": "minute of hour", "s": "second of minute", "S": "fraction of second",
    "E": "day of week (text)", "e": "day of week (1-7, Monday 1)", "D": "day of year",
    "Z": "time zone offset (Z, ZZ) or id (ZZZ)",
}
# English names, as Joda's in Hudi's writers (the JVM's default locale there); not the process locale
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]   # as pyarrow's day_of_week
_TOKEN = re.compile(r"'((?:[^']|'')*)'|([A-Za-z])\2*|([^A-Za-z']+)")


@dataclass(frozen=True)
class Token:
    letter: str | None   # None: literal text
    count: int
    text: str = ""


@functools.lru_cache(maxsize=256)
def tokens(pattern: str) -> tuple[Token, ...]:
    """The pattern's fields and literals; ValueError names an unknown letter or an open quote."""
    if not pattern:
        raise ValueError("the date format is empty")
    out, pos = [], 0
    for m in _TOKEN.finditer(pattern):
        if m.start() != pos:
            break
        pos = m.end()
        quoted, letters, literal = m.group(1), m.group(0) if m.group(2) else None, m.group(3)
        if quoted is not None:
            out.append(Token(None, 0, quoted.replace("''", "'") if quoted else "'"))
        elif literal is not None:
            out.append(Token(None, 0, literal))
        else:
            assert letters is not None
            if letters[0] not in LETTERS:
                raise ValueError(f"{letters!r} in date format {pattern!r} is not supported; use Joda-Time letters "
                                 f"{', '.join(LETTERS)}, separators and 'quoted text'")
            out.append(Token(letters[0], len(letters)))
    if pos != len(pattern):
        raise ValueError(f"date format {pattern!r} has an unterminated quote")
    return tuple(out)


def check(pattern: str) -> str:
    """The pattern, if every letter of it is known (ValueError otherwise)."""
    tokens(pattern)
    return pattern


# --- printing --------------------------------------------------------------------------------

def _pad(values: pa.Array, width: int) -> pa.Array:
    return pc.utf8_lpad(pc.cast(values, pa.string()), width=width, padding="0")


def _names(index: pa.Array, names: list[str], count: int) -> pa.Array:
    names = [n[:3] if count <= 3 else n for n in names]
    return pc.take(pa.array(names), index)


def _offset(seconds: pa.Array, colon: bool) -> pa.Array:
    """+HHmm (+HH:mm) of offsets in seconds."""
    sign = pc.if_else(pc.less(seconds, 0), "-", "+")
    minutes = pc.divide(pc.abs(seconds), 60)
    hours, mins = pc.divide(minutes, 60), pc.subtract(minutes, pc.multiply(pc.divide(minutes, 60), 60))
    return pc.binary_join_element_wise(sign, pc.binary_join_element_wise(_pad(hours, 2), _pad(mins, 2), ":" if colon else ""), "")


def format_local(local: pa.Array, offsets: pa.Array, zone_ids: pa.Array, pattern: str) -> pa.StringArray:
    """Print wall-clock times (`local`, timestamp[ms] without zone) with `pattern`; `offsets` (int64
    seconds) and `zone_ids` (strings) are each value's zone, for Z and ZZZ."""
    parts = []
    n = len(local)
    for t in tokens(pattern):
        c = t.count
        if t.letter is None:
            parts.append(pa.array([t.text] * n, pa.string()))
        elif t.letter in "yYx":
            year = pc.iso_year(local) if t.letter == "x" else pc.year(local)
            parts.append(_pad(pc.subtract(year, pc.multiply(pc.divide(year, 100), 100)), 2) if c == 2 else _pad(year, c))
        elif t.letter == "M":
            month = pc.month(local)
            parts.append(_names(pc.subtract(month, 1), _MONTHS, c) if c >= 3 else _pad(month, c))
        elif t.letter in "dHmsDw":
            fn = {"d": pc.day, "H": pc.hour, "m": pc.minute, "s": pc.second, "D": pc.day_of_year, "w": pc.iso_week}
            parts.append(_pad(fn[t.letter](local), c))
        elif t.letter == "e":
            parts.append(_pad(pc.add(pc.day_of_week(local), 1), c))
        elif t.letter == "k":
            parts.append(_pad(pc.if_else(pc.equal(pc.hour(local), 0), 24, pc.hour(local)), c))
        elif t.letter == "K":
            parts.append(_pad(pc.subtract(pc.hour(local), pc.multiply(pc.divide(pc.hour(local), 12), 12)), c))
        elif t.letter == "G":
            parts.append(pa.array(["AD"] * n, pa.string()))
        elif t.letter == "h":
            hour = pc.subtract(pc.hour(local), pc.multiply(pc.divide(pc.hour(local), 12), 12))
            parts.append(_pad(pc.if_else(pc.equal(hour, 0), 12, hour), c))
        elif t.letter == "a":
            parts.append(pc.if_else(pc.less(pc.hour(local), 12), "AM", "PM"))
        elif t.letter == "S":   # the fraction's first digits (milliseconds, then zeros)
            millis = _pad(pc.millisecond(local), 3)
            parts.append(pc.utf8_slice_codeunits(millis, 0, c) if c <= 3 else pc.utf8_rpad(millis, width=c, padding="0"))
        elif t.letter == "E":
            parts.append(_names(pc.day_of_week(local), _DAYS, c))
        elif t.letter == "Z":
            parts.append(zone_ids if c >= 3 else _offset(offsets, colon=c == 2))
    if not parts:
        return pa.array([""] * n, pa.string())
    return pc.binary_join_element_wise(*parts, "")


def wall_clock(millis: pa.Array, zone: str) -> tuple[pa.Array, pa.Array]:
    """(local wall-clock times, offsets in seconds) of epoch milliseconds in `zone`."""
    instants = pc.cast(millis, pa.int64()).cast(pa.timestamp("ms", zone))
    local = pc.local_timestamp(instants)
    offsets = pc.divide(pc.subtract(local.cast(pa.int64()), pc.cast(millis, pa.int64())), 1000)
    return local, offsets


def print_instants(millis: pa.Array, zone: str, pattern: str) -> pa.StringArray:
    """Epoch milliseconds printed with `pattern` in `zone` (an IANA id)."""
    local, offsets = wall_clock(millis, zone)
    return format_local(local, offsets, pa.array([zone] * len(millis), pa.string()), pattern)


# --- parsing ---------------------------------------------------------------------------------

_NUMERIC = set("yYxwMdHhKkmsSDe")


def _numeric(t: Token | None) -> bool:
    return t is not None and t.letter in _NUMERIC and not (t.letter == "M" and t.count >= 3)


def _alternatives(words: list[str]) -> str:
    return "|".join(sorted({w for n in words for w in (n, n[:3])}, key=len, reverse=True))


@functools.lru_cache(maxsize=64)
def _regex(pattern: str) -> re.Pattern[str]:
    toks = tokens(pattern)
    out = []
    for i, t in enumerate(toks):
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        g = f"f{i}"
        if t.letter is None:
            out.append(re.escape(t.text))
        elif t.letter in "yYx":
            width = t.count if t.count != 2 and _numeric(nxt) else 2 if t.count == 2 and _numeric(nxt) else 9
            out.append(f"(?P<{g}>[-+]?\\d{{1,{width}}}+)")
        elif t.letter == "M" and t.count >= 3:
            out.append(f"(?P<{g}>{_alternatives(_MONTHS)})")
        elif t.letter == "S":
            out.append(f"(?P<{g}>\\d{{1,{t.count}}}+)")
        elif t.letter == "D":
            out.append(f"(?P<{g}>\\d{{1,3}}+)")
        elif t.letter in "MdHhKkmsw":
            out.append(f"(?P<{g}>\\d{{1,2}}+)")
        elif t.letter == "e":
            out.append(f"(?P<{g}>\\d)")
        elif t.letter == "G":
            out.append(f"(?P<{g}>AD|BC)")
        elif t.letter == "a":
            out.append(f"(?P<{g}>AM|PM)")
        elif t.letter == "E":
            out.append(f"(?P<{g}>{_alternatives(_DAYS)})")
        elif t.letter == "Z":
            out.append(f"(?P<{g}>[A-Za-z][A-Za-z0-9_/+\\-]*)" if t.count >= 3 else f"(?P<{g}>Z|[-+]\\d\\d(?::?\\d\\d)?)")
    return re.compile("".join(out), re.IGNORECASE)


@dataclass(frozen=True)
class Parsed:
    millis: int                # the instant, epoch milliseconds
    zone: str | None           # the zone the value named (`+05:30`, `Europe/Paris`), None: none


def _zone_of_offset(seconds: int) -> str:
    """Joda's id of a fixed offset zone (`UTC` for zero)."""
    if seconds == 0:
        return "UTC"
    sign, s = ("-" if seconds < 0 else "+"), abs(seconds)
    return f"{sign}{s // 3600:02d}:{s % 3600 // 60:02d}"


def zone_info(zone: str) -> dt.tzinfo:
    """A zone id (IANA name, or a fixed offset `+05:30`) as a tzinfo."""
    if zone[:1] in "+-":
        sign = -1 if zone[0] == "-" else 1
        return dt.timezone(sign * dt.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6] or 0)))
    return dt.UTC if zone in ("UTC", "GMT", "Z") else zoneinfo.ZoneInfo(zone)


def _two_digit_year(value: int) -> int:
    pivot = dt.date.today().year - 30   # Joda's yy: the century that puts the year within 30 years before now
    return pivot + (value - pivot % 100) % 100


def _fields(pattern: str, m: re.Match) -> tuple[dt.datetime, int | None, str | None]:
    """(the wall-clock time, the offset in seconds, the zone id) a matched value names."""
    parts = {"year": 1970, "month": 1, "day": 1, "hour": 0, "minute": 0, "second": 0, "microsecond": 0}
    offset, zone, pm, day_of_year = None, None, None, None
    week_year, week, weekday = None, None, None
    for i, t in enumerate(tokens(pattern)):
        value = m.group(f"f{i}") if t.letter else None
        if value is None or t.letter is None:
            continue
        if t.letter in "yYx":
            year = _two_digit_year(int(value)) if t.count == 2 and len(value) == 2 else int(value)
            if t.letter == "x":
                week_year = year
            else:
                parts["year"] = year
        elif t.letter == "w":
            week = int(value)
        elif t.letter in "Ee":
            weekday = int(value) if t.letter == "e" else 1 + [d[:3].lower() for d in _DAYS].index(value[:3].lower())
        elif t.letter == "M":
            parts["month"] = int(value) if t.count < 3 else 1 + [n[:3].lower() for n in _MONTHS].index(value[:3].lower())
        elif t.letter in "dHms":
            parts[{"d": "day", "H": "hour", "m": "minute", "s": "second"}[t.letter]] = int(value)
        elif t.letter in "hK":
            parts["hour"] = int(value) % 12
        elif t.letter == "k":
            parts["hour"] = int(value) % 24
        elif t.letter == "a":
            pm = value.upper() == "PM"
        elif t.letter == "S":
            parts["microsecond"] = int((value + "000")[:3]) * 1000
        elif t.letter == "D":
            day_of_year = int(value)
        elif t.letter == "Z":
            if t.count >= 3:
                zone = value
            elif value.upper() == "Z":
                offset = 0
            else:
                digits = value[1:].replace(":", "")
                offset = (-1 if value[0] == "-" else 1) * (int(digits[:2]) * 3600 + int(digits[2:4] or 0) * 60)
    if pm:
        parts["hour"] += 12
    local = dt.datetime(parts["year"], parts["month"], parts["day"], parts["hour"], parts["minute"], parts["second"],
                        parts["microsecond"])
    if day_of_year is not None:
        local = local.replace(month=1, day=1) + dt.timedelta(days=day_of_year - 1)
    if week_year is not None or week is not None:   # a week without its day is its Monday (found with Hudi 0.15)
        day = dt.date.fromisocalendar(week_year or 1970, week or 1, weekday or 1)
        local = local.replace(year=day.year, month=day.month, day=day.day)
    elif weekday is not None:   # a day of week moves the date within its ISO week
        local += dt.timedelta(days=weekday - local.isoweekday())
    return local, offset, zone


def parse(text: str, patterns: list[str], default_zone: str) -> Parsed:
    """`text` read with the first of `patterns` that reads all of it; a value without an offset or
    zone is a wall-clock time in `default_zone`. ValueError when none reads it."""
    for pattern in patterns:
        m = _regex(pattern).fullmatch(text)
        if m is None:
            continue
        try:
            local, offset, zone = _fields(pattern, m)
            if offset is not None:
                return Parsed(_millis(local, dt.timezone(dt.timedelta(seconds=offset))), _zone_of_offset(offset))
            if zone is not None:
                return Parsed(_millis(local, zone_info(zone)), zone)
            return Parsed(_millis(local, zone_info(default_zone)), None)
        except (ValueError, KeyError, zoneinfo.ZoneInfoNotFoundError) as e:
            raise ValueError(f"{text!r} does not read as {pattern!r}: {e}") from None
    raise ValueError(f"{text!r} matches none of {', '.join(repr(p) for p in patterns)}")


def _millis(local: dt.datetime, zone: dt.tzinfo) -> int:
    aware = local.replace(tzinfo=zone, fold=0)
    back = aware.astimezone(dt.UTC).astimezone(zone).replace(tzinfo=None)
    if back != local:   # a wall-clock time the zone skips (a daylight-saving gap): Joda refuses it
        raise ValueError(f"{local} does not exist in {zone}")
    epoch = aware.astimezone(dt.UTC) - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return epoch // dt.timedelta(milliseconds=1)

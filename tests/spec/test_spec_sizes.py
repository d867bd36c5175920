"""Byte sizes: units as people write them, case-sensitive, whole bytes only."""
from __future__ import annotations

import pytest

from tablespec.spec.sizes import parse_size


@pytest.mark.parametrize("text, size", [
    (0, 0),
    (1024, 1024),
    ("1024", 1024),
    ("12B", 12),
    ("256MiB", 256 * 1024**2),
    ("100 MB", 100 * 1000**2),
    ("1GiB", 1024**3),
    ("1.5GiB", 3 * 1024**3 // 2),
    ("2 TiB", 2 * 1024**4),
    ("3KB", 3000),
    ("4KiB", 4096),
    ("1TB", 10**12),
    (" 7 GB ", 7 * 10**9),
])
def test_parse_size(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text, message", [
    ("256mib", "invalid size '256mib': unknown unit 'mib'; units are case-sensitive; did you mean 'MiB'?"),
    ("1 gb", "invalid size '1 gb': unknown unit 'gb'; units are case-sensitive; did you mean 'GB'?"),
    ("10 XB", "invalid size '10 XB': unknown unit 'XB'; write bytes as an integer"),
    ("0.5B", "invalid size '0.5B': not a whole number of bytes"),
    ("MiB", "invalid size 'MiB': write bytes"),
    ("-1MiB", "invalid size '-1MiB': write bytes"),
    ("", "invalid size '': write bytes"),
    (-5, "size must not be negative, got -5"),
    (1.5, "invalid size 1.5: write bytes"),
    (True, "invalid size True: write bytes"),
    (None, "invalid size None: write bytes"),
])
def test_parse_size_refuses(text, message):
    with pytest.raises(ValueError) as info:
        parse_size(text)
    assert str(info.value).startswith(message)

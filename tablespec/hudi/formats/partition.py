"""Partition paths and the `.hoodie_partition_metadata` marker file.

A directory is a partition when it holds the marker; Hudi writes it (commitTime,
partitionDepth) the first time a commit writes into the partition.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tablespec.errors import HudiFormatError
from tablespec.hudi.formats.properties import format_properties, parse_properties
from tablespec.hudi.io import Storage, join

PARTITION_METAFILE = ".hoodie_partition_metadata"
DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
# Characters Hudi's PartitionPathEncodeUtils (after Hive's FileUtils.escapePathName) escapes as %XX
# when url-encoding is on: ASCII control characters and these.
ESCAPED_CHARACTERS = frozenset([chr(c) for c in range(0x20)] + list("\"#%'*/:=?\\\x7f{[]^"))


def escape_partition_value(value: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in ESCAPED_CHARACTERS else c for c in value)


def unescape_partition_value(value: str) -> str:
    out, i = [], 0
    while i < len(value):
        code = value[i + 1:i + 3]
        if value[i] == "%" and len(code) == 2 and all(c in "0123456789abcdefABCDEF" for c in code):
            out.append(chr(int(code, 16)))
            i += 3
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def _value_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def partition_path(values: Mapping[str, Any] | Sequence[Any], fields: Sequence[str],
                   hive_style: bool, url_encode: bool = False) -> str:
    """The relative partition path of a row, as Hudi's key generators build it.

    Null or empty values become __HIVE_DEFAULT_PARTITION__; with url-encoding, special
    characters become %XX; hive style prefixes each value with `field=`. No fields: "".
    """
    if isinstance(values, Mapping):
        missing = [f for f in fields if f not in values]
        if missing:
            raise HudiFormatError(f"no value for partition field(s): {', '.join(missing)}")
        ordered = [values[f] for f in fields]
    else:
        ordered = list(values)
        if len(ordered) != len(fields):
            raise HudiFormatError(f"{len(ordered)} partition value(s) for {len(fields)} partition field(s)")
    parts = []
    for name, value in zip(fields, ordered):
        text = _value_text(value) or DEFAULT_PARTITION
        if url_encode:
            text = escape_partition_value(text)
        parts.append(f"{name}={text}" if hive_style else text)
    return "/".join(parts)


def parse_partition_path(path: str, fields: Sequence[str], hive_style: bool,
                         url_encode: bool = False) -> dict[str, str | None]:
    """Field values of a partition path (the inverse of `partition_path`); the default partition is None."""
    segments = [s for s in path.split("/") if s] if fields else []
    if len(segments) != len(fields):
        raise HudiFormatError(f"partition path {path!r} does not have {len(fields)} level(s) for {list(fields)}")
    out: dict[str, str | None] = {}
    for name, segment in zip(fields, segments):
        if hive_style:
            key, eq, segment = segment.partition("=")
            if not eq or key != name:
                raise HudiFormatError(f"partition path {path!r}: expected {name}=<value>, found {key!r}")
        value = unescape_partition_value(segment) if url_encode else segment
        out[name] = None if value == DEFAULT_PARTITION else value
    return out


def _is_metafile(name: str) -> bool:
    # Tables with hoodie.partition.metafile.use.base.format write `.hoodie_partition_metadata.parquet`.
    return name == PARTITION_METAFILE or name.startswith(PARTITION_METAFILE + ".")


def has_partition_metadata(storage: Storage, base: str, partition: str) -> bool:
    """Whether `partition` holds its marker (in either form): without it no reader lists it."""
    return any(not e.is_dir and _is_metafile(e.name) for e in storage.list_dir(join(base, partition)))


def read_partition_metadata(storage: Storage, base: str, partition: str) -> dict[str, str]:
    path = join(base, partition, PARTITION_METAFILE)
    if not storage.exists(path):
        raise HudiFormatError(f"{path} does not exist")
    return parse_properties(storage.read_bytes(path).decode("latin-1"))


def write_partition_metadata(storage: Storage, base: str, partition: str, commit_time: str) -> bool:
    """Mark `partition` as a partition of the table; returns False when it already was one."""
    path = join(base, partition, PARTITION_METAFILE)
    if storage.exists(path):
        return False
    depth = len([s for s in partition.split("/") if s])
    text = format_properties({"commitTime": commit_time, "partitionDepth": str(depth)},
                             ("partition metadata",), sort_keys=False)
    try:
        storage.create_exclusive(path, text.encode("ascii"))
    except FileExistsError:  # another writer marked it first: same content
        return False
    return True


def discover_partitions(storage: Storage, base: str, listings: dict | None = None) -> list[str]:
    """Relative paths of every partition below `base` ("" for a non-partitioned table), sorted.

    Hidden directories (.hoodie, .temp, editors' dot folders) are skipped, and a partition's
    own subdirectories are not searched: partitions do not nest. `listings` receives each
    partition's listing (its files), so a caller need not list it again.
    """
    found: list[str] = []

    def visit(path: str, rel: str) -> None:
        entries = storage.list_dir(path)
        if any(not e.is_dir and _is_metafile(e.name) for e in entries):
            found.append(rel)
            if listings is not None:
                listings[rel] = entries
            return
        for e in entries:
            if e.is_dir and not e.name.startswith("."):
                visit(e.path, f"{rel}/{e.name}" if rel else e.name)

    visit(base, "")
    return sorted(found)

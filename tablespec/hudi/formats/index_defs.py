"""Hudi 1.x's index definitions: a JSON file (`hoodie.table.index.defs.path`, by default
`.hoodie/.index_defs/index.json`) naming each metadata-table index Hudi 1.x built, with its options
and index version. Hudi 1.2 adds `record_index` (global: `isPartitioned` false; index version V1)
when it initializes the record index and `column_stats` (its source fields; V2) with column
statistics (`partition_stats` has none), and removes an index's definition when it drops the index;
tablespec does the same, so a table reads as one Hudi 1.2 kept. Version 6 tables have none."""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from tablespec.errors import HudiFormatError
from tablespec.hudi import keys
from tablespec.hudi.config import TableConfig
from tablespec.hudi.io import Storage, join_inside

RECORD_INDEX_DEFINITION = {"indexName": "record_index", "indexType": "record_index", "indexFunction": "",
                           "sourceFields": [], "indexOptions": {"isPartitioned": "false"}, "version": "V1"}


def _path(base: str, config: TableConfig) -> str:
    return join_inside(base, keys.INDEX_DEFS_PATH.value(config.extra) or keys.INDEX_DEFS_PATH.default or "",
                       origin=f"{keys.PROPERTIES_FILE} {keys.INDEX_DEFS_PATH.name}")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


def _refused(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _read(storage: Storage, path: str) -> dict[str, Any]:
    """The file's content, checked: an object whose `indexDefinitions` maps names to objects, with
    finite numbers only (strict JSON is what it is written back as)."""
    if not storage.exists(path):
        return {"indexDefinitions": {}}
    try:
        found = json.loads(storage.read_bytes(path), parse_float=_finite, parse_constant=_refused)
    except (ValueError, RecursionError) as e:
        raise HudiFormatError(f"{path}: unreadable index definitions: {e}") from None
    definitions = found.setdefault("indexDefinitions", {}) if isinstance(found, dict) else None
    if not isinstance(definitions, dict) or not all(isinstance(d, dict) for d in definitions.values()):
        raise HudiFormatError(f"{path}: not index definitions: expected {{\"indexDefinitions\": {{<name>: {{...}}}}}}")
    return found


def _write(storage: Storage, path: str, content: dict[str, Any]) -> None:
    storage.write_atomic(path, json.dumps(content, indent=2, allow_nan=False).encode())


def check(storage: Storage, base: str, config: TableConfig) -> None:
    """Read the table's index definitions (where there are any), refusing a file that holds none:
    call before the first change of an action that may rewrite them."""
    _read(storage, _path(base, config))


def column_stats_definition(fields: list[str]) -> dict[str, Any]:
    """The definition Hudi 1.2 writes for column statistics of `fields` (partition statistics,
    built from the same fields, have none of their own)."""
    return {"indexName": "column_stats", "indexType": "column_stats", "indexFunction": "column_stats",
            "sourceFields": list(fields), "indexOptions": {}, "version": "V2"}


def with_index(storage: Storage, base: str, config: TableConfig, definition: dict[str, Any]) -> TableConfig:
    """Define an index (call before hoodie.properties name its partition); returns `config`
    naming the definitions file, for the caller to write."""
    path = _path(base, config)
    content = _read(storage, path)
    content["indexDefinitions"][definition["indexName"]] = definition
    _write(storage, path, content)
    return config.with_updates(extra={keys.INDEX_DEFS_PATH.name: keys.INDEX_DEFS_PATH.value(config.extra) or
                                      keys.INDEX_DEFS_PATH.default or "", **config.extra})


def definitions(storage: Storage, base: str, config: TableConfig) -> dict[str, dict[str, Any]]:
    """Every index definition by name, in one read of the file (none without one)."""
    if keys.INDEX_DEFS_PATH.name not in config.extra:
        return {}
    return {name: dict(found) for name, found in _read(storage, _path(base, config))["indexDefinitions"].items()}


def source_fields(storage: Storage, base: str, config: TableConfig, name: str,
                  defined: Mapping[str, Mapping[str, Any]] | None = None) -> list[str] | None:
    """The source fields of index `name` as its definition lists them; None without a definition.
    `defined`: the definitions `definitions` read already (a commit reads the file once), else read."""
    if keys.INDEX_DEFS_PATH.name not in config.extra:
        return None
    definition = (definitions(storage, base, config) if defined is None else defined).get(name)
    if definition is None:
        return None
    fields = definition.get("sourceFields")
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise HudiFormatError(f"{_path(base, config)}: index {name!r} has no list of source fields (sourceFields)")
    return fields


def remove(storage: Storage, base: str, config: TableConfig, names: tuple[str, ...]) -> None:
    """Drop the definitions of the indexes `names` (metadata partitions dropped), where a file has them."""
    if keys.INDEX_DEFS_PATH.name not in config.extra:
        return
    path = _path(base, config)
    content = _read(storage, path)
    if any(n in content["indexDefinitions"] for n in names):
        content["indexDefinitions"] = {k: v for k, v in content["indexDefinitions"].items() if k not in names}
        _write(storage, path, content)


__all__ = ["RECORD_INDEX_DEFINITION", "check", "column_stats_definition", "definitions", "remove", "source_fields", "with_index"]

"""Where a table may live: below the warehouse's real path, never inside or around another table.

Locations are checked on real paths (symbolic links resolved, `os.path.realpath`, which also
resolves the existing prefix of a path not created yet), so a link inside the warehouse cannot
put a table outside it, and two spellings of one directory are one location. A directory holding
`.hoodie/` is a Hudi table (or one being created): a table may not be created inside one, nor
around one. Where a table exists already (its hoodie.properties), nothing is created: its place is
not searched again (no request per folder above it on an object store). `plan` reports every
problem at the spec's `spec.location` line; `apply` checks again right before it acts (the file
system may have changed since the plan).

On an object store (`s3://`) there are no links: locations are compared as normalized URIs,
a table is a prefix holding `.hoodie/` objects, and the search for tables within a location is
one paginated listing of its prefix.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from tablespec.errors import TablespecError
from tablespec.hudi.config import META_FOLDER, PROPERTIES_FILE
from tablespec.hudi.io import Storage, is_object_store, join, map_locations, parent_location
from tablespec.hudi.io import check_location as normalized
from tablespec.hudi.table import Location
from tablespec.spec.diagnostics import Diagnostic

if TYPE_CHECKING:
    from tablespec.spec.loader import LoadedSpec

SEARCH_LIMIT = 10_000   # directories looked at below a location for tables within it
SHOWN = 5               # entries named in a message


class LocationError(TablespecError):
    """A table location that would put a table outside the warehouse, or inside / around another table."""


def _has_timeline(storage: Storage, path: str, seen: dict | None = None) -> bool:
    if seen is not None:   # folders above many tables (the warehouse, a database folder) are asked once
        if path not in seen:
            seen[path] = _has_timeline(storage, path)
        return seen[path]
    return storage.is_dir(join(path, META_FOLDER))


def _real(path: str) -> str:
    return normalized(path) if is_object_store(path) else os.path.realpath(path)


def _below(path: str, root: str) -> bool:
    sep = "/" if is_object_store(root) else os.sep
    return path != root and path.startswith(root.rstrip(sep) + sep)


def outside(warehouse: Location, location: Location) -> str | None:
    """Why the table base path `location` is not below the warehouse's real path, or None."""
    if warehouse.is_object_store != location.is_object_store:
        return f"{location} is not in the warehouse ({warehouse}): they are on different storages"
    root, real = _real(warehouse.uri), _real(location.uri)
    if _below(real, root):
        return None
    how = "is the warehouse root itself" if real == root else "lies outside the warehouse"
    return f"{location} resolves to {real}, which {how} ({root}); a symbolic link must not lead a table out of it"


def enclosing_table(warehouse: Location, location: Location, seen: dict | None = None) -> str | None:
    """The table (a directory with `.hoodie/`) that `location` lies inside, up to the warehouse root."""
    root, path = _real(warehouse.uri), _real(location.uri)
    while _below(path, root):
        path = parent_location(path)
        if _has_timeline(location.storage, path, seen):
            return path
    return None


def tables_within(location: Location, limit: int = SEARCH_LIMIT) -> list[str]:
    """Tables below `location` (paths relative to it), when it is an existing directory and no
    table itself; the search looks at `limit` directories at most, and stops at SHOWN tables."""
    if location.is_object_store:
        return _tables_within_prefix(location, limit)
    real = os.path.realpath(location.uri)
    if not os.path.isdir(real) or _has_timeline(location.storage, real):
        return []
    found: list[str] = []
    for seen, (path, dirs, _) in enumerate(os.walk(real)):
        if seen >= limit or len(found) >= SHOWN:
            break
        if META_FOLDER in dirs and path != real:
            found.append(os.path.relpath(path, real))
            dirs.clear()  # a table's partitions hold no tables
        dirs.sort()
    return found


def _tables_within_prefix(location: Location, limit: int) -> list[str]:
    """Object store: tables below `location`, from one listing of its keys (at most `limit` keys)."""
    storage, base = location.storage, location.uri
    if _has_timeline(storage, base):
        return []
    found: list[str] = []
    for seen, info in enumerate(storage.walk_files(base)):
        rel = info.path[len(base) + 1:]
        if seen >= limit or len(found) >= SHOWN:
            break
        parts = rel.split("/")
        if META_FOLDER in parts[:-1]:
            table = "/".join(parts[:parts.index(META_FOLDER)])
            if table not in found and not any(table.startswith(t + "/") for t in found):
                found.append(table)
    return found


def occupied_message(location: str, files: list[str] | tuple[str, ...]) -> str:
    """Why a table is not created at `location`, which holds `files` (the first few)."""
    shown = ", ".join(files[:SHOWN]) + (", ..." if len(files) > SHOWN else "")
    what = ("a .hoodie folder without hoodie.properties" if any(f.startswith(META_FOLDER + "/") for f in files)
            else "files")
    return (f"{location} is not empty: it holds {what} ({shown}); a table is created only in an empty directory. "
            "To manage an existing Hudi table, adopt it with `tablespec import`; otherwise pick another location "
            "or empty it")


def refusal(warehouse: Location, location: Location, seen: dict | None = None) -> str | None:
    """Why no table may be at `location` under `warehouse` (outside it, inside a table, around a table)."""
    if why := outside(warehouse, location):
        return why
    if location.storage.exists(location.join(META_FOLDER, PROPERTIES_FILE)):
        return None   # a table is here already: nothing is created, so nothing is placed inside or around a table
    if table := enclosing_table(warehouse, location, seen):
        return f"{location} lies inside the Hudi table at {table} (it has {META_FOLDER}/); a table within a table is refused"
    if within := tables_within(location):
        listed = ", ".join(within[:SHOWN])
        return (f"{location} contains Hudi table(s) at {listed} (relative to it); a table around another table "
                "is refused")
    return None


def check_location(warehouse: Location, location: Location) -> Location:
    """`location`, or LocationError when no table may be there (for callers outside plan / apply)."""
    if why := refusal(warehouse, location):
        raise LocationError(why)
    return location


def location_problems(specs: list[LoadedSpec], warehouse: Location,
                      refused: dict[str, str] | None = None) -> list[tuple[LoadedSpec, Diagnostic]]:
    """Every spec whose location is refused, with a diagnostic at its `spec.location`: outside the
    warehouse, inside or around a table on disk, or the same directory as (or nested in) another
    spec's once links are resolved (the loader compares the locations as written). `refused`:
    the refusals already worked out, by location (see `state.observe_specs`)."""
    def problem(loaded: LoadedSpec, message: str) -> tuple[LoadedSpec, Diagnostic]:
        line, col = loaded.position("spec.location")
        return loaded, Diagnostic(loaded.file, line, col, "spec.location", message)

    out = []
    claimed: dict[str, LoadedSpec] = {}     # real path -> the spec placing its table there
    ancestors: dict[str, str] = {}          # every directory above a claimed path -> that path
    locations = [warehouse.child(loaded.spec.spec.location) for loaded in specs]
    if refused is None:
        seen: dict = {}
        refusals = map_locations(lambda location: refusal(warehouse, location, seen), locations, warehouse.uri)
    else:
        refusals = [refused.get(location.uri) for location in locations]
    for loaded, location, why in zip(specs, locations, refusals):
        if why:
            out.append(problem(loaded, why))
            continue
        real = _real(location.uri)
        above = [p for p in _parents(real) if p in claimed]
        r, how = ((real, "is the same directory as") if real in claimed else
                  (above[0], "lies inside") if above else
                  (ancestors[real], "contains") if real in ancestors else (None, None))
        if r is not None:
            other = claimed[r]
            out.append(problem(loaded, f"{location} resolves to {real}, which {how} the location of table "
                                       f"'{other.spec.qualified_name}' at {other.where('spec.location')} ({r})"))
            continue
        claimed[real] = loaded
        for p in _parents(real):
            ancestors.setdefault(p, real)
    return out


def _parents(path: str) -> list[str]:
    out = []
    while (parent := parent_location(path)) != path:
        out.append(parent)
        path = parent
    return out

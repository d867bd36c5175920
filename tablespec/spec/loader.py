"""Find spec files, render, parse and validate them, and check the specs against each other.

Bad spec content never raises: every problem in every file becomes a diagnostic, so one
run shows them all.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from tablespec.errors import SpecError, TablespecError
from tablespec.spec.diagnostics import Diagnostic, locate
from tablespec.spec.model import TableSpec
from tablespec.spec.project import PROJECT_FILE
from tablespec.spec.source import read_documents
from tablespec.spec.templating import render
from tablespec.spec.validation import validate_document

SPEC_SUFFIXES = (".yaml", ".yml")


def spec_digest(spec: TableSpec) -> str:
    """sha256 of the spec's canonical JSON: equal for specs that mean the same, whatever their YAML spelling."""
    canonical = json.dumps(spec.model_dump(mode="json", by_alias=True), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class LoadedSpec:
    """A valid spec and where it came from."""

    spec: TableSpec
    file: str
    document: int
    """0-based index of the YAML document in its file."""
    line: int
    """1-based line where the document starts."""
    digest: str
    positions: Mapping[str, tuple[int, int]] = field(default_factory=dict, compare=False, hash=False)
    """`spec.index.numBuckets` -> (line, col) of every key and list item of the document."""
    default_table_version: int = 6
    """The project's `tableVersion`: what a new table is created at when the spec names none."""

    @property
    def new_table_version(self) -> int:
        """The Hudi table version the spec's table is created at (an existing table keeps its own
        unless the spec names one)."""
        return self.spec.spec.table_version or self.default_table_version

    def position(self, path: str) -> tuple[int, int]:
        """Position of `path`, or of its nearest ancestor present in the YAML (for defaulted settings)."""
        return locate(self.positions, path)

    def where(self, path: str = "") -> str:
        """`FILE:LINE` of `path` (default: the document start), for messages that point at this spec."""
        return f"{self.file}:{self.position(path)[0] if path else self.line}"


@dataclass(frozen=True)
class LoadResult:
    specs: list[LoadedSpec]
    diagnostics: list[Diagnostic]

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "warning"]


def _discover(paths: Iterable[str | Path]) -> tuple[list[Path], list[Diagnostic]]:
    files: list[Path] = []
    missing = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = (p for p in path.rglob("*") if p.suffix in SPEC_SUFFIXES and p.is_file())
            files += sorted(p for p in found if p.name != PROJECT_FILE
                            and not any(part.startswith(".") for part in p.relative_to(path).parts))
        elif path.is_file():
            if path.name != PROJECT_FILE:
                files.append(path)
        else:
            missing.append(Diagnostic(str(raw), 0, 0, "", "no such file or directory"))
    unique = list(dict.fromkeys(files))
    return unique, missing


def discover(paths: Iterable[str | Path]) -> list[Path]:
    """Spec files named by `paths`: files as given, directories searched recursively (sorted, hidden skipped)."""
    files, missing = _discover(paths)
    if missing:
        raise SpecError(missing)
    return files


def _has_content(text: str) -> bool:
    """Anything besides blank lines, comments and document markers."""
    return any(s and not s.startswith("#") and s not in ("---", "...")
               for s in (line.strip() for line in text.splitlines()))


def _load(text: str, file: str, variables: Mapping[str, Any] | None) -> tuple[list[LoadedSpec], list[Diagnostic]]:
    source = text
    try:
        text = render(text, file, variables)
    except SpecError as e:
        return [], e.diagnostics
    documents, diagnostics = read_documents(text, file)
    if not documents and not diagnostics:  # an empty file is a mistake; a template may render to nothing
        if not _has_content(source):
            return [], [Diagnostic(file, 0, 0, "", "empty spec file: no HudiTable document in it")]
        return [], [Diagnostic(file, 0, 0, "", "the template renders to no spec", "warning")]
    specs = []
    for doc in documents:
        spec, found = validate_document(doc, file)
        diagnostics += found
        if spec is not None:
            specs.append(LoadedSpec(spec, file, doc.index, doc.line, spec_digest(spec), doc.positions))
    return specs, diagnostics


def _catalog_path(loaded: LoadedSpec) -> str:
    entry = loaded.spec.spec.catalog
    return "spec.catalog.table" if entry is not None and entry.table is not None else "spec.catalog"


def catalog_clashes(specs: list[LoadedSpec]) -> list[Diagnostic]:
    """Two specs registered as one catalog table (catalogs ignore case): each apply would point the
    name at the other table."""
    out = []
    registered: dict[tuple[str, str], LoadedSpec] = {}
    for loaded in specs:
        if (name := loaded.spec.catalog_name) is None:
            continue
        key = (name[0].lower(), name[1].lower())
        first = registered.setdefault(key, loaded)
        if first is not loaded:
            path = _catalog_path(loaded)
            line, col = loaded.position(path)
            out.append(Diagnostic(loaded.file, line, col, path,
                                  f"catalog table '{'.'.join(key)}' is already registered by table "
                                  f"'{first.spec.qualified_name}' at {first.where(_catalog_path(first))}"))
    return out


def clashes(specs: list[LoadedSpec]) -> list[Diagnostic]:
    """Two specs for one table: same (database, name), same location, one location inside another, or
    one catalog table."""
    out = catalog_clashes(specs)
    names: dict[tuple[str, str], LoadedSpec] = {}
    locations: dict[str, LoadedSpec] = {}
    ancestors: dict[str, LoadedSpec] = {}  # every parent directory of a claimed location
    for loaded in specs:
        spec = loaded.spec
        key = ((spec.metadata.database or "").lower(), spec.name.lower())
        first = names.setdefault(key, loaded)
        if first is not loaded:
            line, col = loaded.position("metadata.name")
            out.append(Diagnostic(loaded.file, line, col, "metadata.name",
                                  f"table '{spec.qualified_name}' is already defined at {first.where('metadata.name')}"))
        location = PurePosixPath(spec.spec.location)
        line, col = loaded.position("spec.location")
        other = locations.get(str(location))
        if other is not None:
            out.append(Diagnostic(loaded.file, line, col, "spec.location",
                                  f"location '{location}' is already used by table '{other.spec.qualified_name}' "
                                  f"at {other.where('spec.location')}"))
            continue
        outer = next((locations[str(p)] for p in location.parents if str(p) in locations), None)
        inner = ancestors.get(str(location))
        if outer is not None:
            out.append(Diagnostic(loaded.file, line, col, "spec.location",
                                  f"location '{location}' is inside the location of table '{outer.spec.qualified_name}' "
                                  f"at {outer.where('spec.location')}"))
        elif inner is not None:
            out.append(Diagnostic(loaded.file, line, col, "spec.location",
                                  f"location '{location}' contains the location of table '{inner.spec.qualified_name}' "
                                  f"at {inner.where('spec.location')}"))
        else:
            locations[str(location)] = loaded
            for parent in location.parents:
                ancestors.setdefault(str(parent), loaded)
    return out


def load_spec_text(text: str, file: str = "<string>", variables: Mapping[str, Any] | None = None) -> LoadResult:
    """Load the specs of one text (one or more YAML documents)."""
    specs, diagnostics = _load(text, file, variables)
    diagnostics += clashes(specs)
    diagnostics.sort(key=lambda d: (d.line, d.col))
    return LoadResult(specs, diagnostics)


def load_specs(paths: Iterable[str | Path], variables: Mapping[str, Any] | None = None,
               table_version: int = 6) -> LoadResult:
    """Load every spec under `paths`; all problems of all files come back as diagnostics, sorted by file and line.
    `table_version`: the project's default for new tables."""
    files, diagnostics = _discover(paths)
    specs: list[LoadedSpec] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            diagnostics.append(Diagnostic(str(path), 0, 0, "", f"cannot read file: {e}"))
            continue
        found, problems = _load(text, str(path), variables)
        specs += [dataclasses.replace(s, default_table_version=table_version) for s in found]
        diagnostics += problems
    diagnostics += clashes(specs)
    order = {str(p): i for i, p in enumerate(files)}
    diagnostics.sort(key=lambda d: (order.get(d.file, -1), d.line, d.col))
    return LoadResult(specs, diagnostics)


def select_spec(specs: list[LoadedSpec], name: str | None, source: str) -> LoadedSpec:
    """The one spec of `source` a command acts on: the only one, or the one `name`d (qualified or not)."""
    chosen = [s for s in specs if name in (None, s.spec.name, s.spec.qualified_name)]
    if len(chosen) != 1:
        names = ", ".join(s.spec.qualified_name for s in specs) or "none"
        hint = "" if name else "; pick one by name (--name)"
        raise TablespecError(f"{source}: expected one table{f' named {name}' if name else ''}, found: {names}{hint}")
    return chosen[0]

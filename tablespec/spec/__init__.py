"""The spec language: YAML documents describing Hudi tables, their validation, templating and JSON Schema."""
from tablespec.spec.diagnostics import Diagnostic
from tablespec.spec.loader import LoadedSpec, LoadResult, discover, load_spec_text, load_specs, spec_digest
from tablespec.spec.model import TableSpec
from tablespec.spec.project import Project, find_project, load_project, resolve_warehouse
from tablespec.spec.templating import parse_var_assignments

__all__ = [
    "Diagnostic", "LoadResult", "LoadedSpec", "Project", "TableSpec", "discover", "find_project",
    "load_project", "load_spec_text", "load_specs", "parse_var_assignments", "resolve_warehouse", "spec_digest",
]

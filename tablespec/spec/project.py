"""The project file, `tablespec.project.yaml`: warehouse root, template variables and Spark settings.

It is found in the working directory or a parent, so commands work from anywhere inside
a repository; relative paths in it are relative to the file, not to the working directory.
"""
from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, PlainValidator, PrivateAttr, ValidationError, WithJsonSchema, field_validator

from tablespec.errors import SpecError
from tablespec.spec.base import SpecModel, problem
from tablespec.spec.diagnostics import Diagnostic
from tablespec.spec.source import Document, read_documents

PROJECT_FILE = "tablespec.project.yaml"
WAREHOUSE_ENV = "TABLESPEC_WAREHOUSE"
CATALOG_ENV = "TABLESPEC_CATALOG"
CATALOG_FORMS = "`hive` (the embedded metastore under the project), `thrift://HOST:PORT` or `glue`"


def _conf_value(value: Any) -> Any:
    """Spark conf values are strings; let YAML users write `4` or `true` without quotes."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return str(value)
    return value


def _scalar(value: Any) -> Any:
    if not isinstance(value, str | int | float | bool):
        raise problem(f"a variable must be a string, number or boolean, got a {type(value).__name__}")
    return value


Scalar = Annotated[str | int | float | bool, PlainValidator(_scalar),
                   WithJsonSchema({"type": ["string", "number", "boolean"]})]


class SparkSettings(SpecModel):
    """How the engine starts Spark (only for actions that rewrite data)."""

    master: str | None = None
    """Spark master URL, e.g. local[*]; default: Spark's own default."""
    conf: dict[str, Annotated[str, BeforeValidator(_conf_value)]] = {}
    """Extra Spark configuration, e.g. spark.sql.shuffle.partitions: 8."""


def catalog_problem(value: Any) -> str | None:
    """Why `value` is not a catalog setting (None when it is one)."""
    if not isinstance(value, str):
        return f"catalog must be {CATALOG_FORMS}, got a {type(value).__name__}"
    if value in ("hive", "glue"):
        return None
    match = re.fullmatch(r"thrift://([A-Za-z0-9.\-]+|\[[0-9A-Fa-f:.]+\]):(\d{1,5})", value)
    if match is None:
        return f"catalog must be {CATALOG_FORMS}, got {value!r}"
    why = host_problem(match.group(1)) or ("" if 0 < int(match.group(2)) < 65536 else "the port is not 1 to 65535")
    return f"catalog must be {CATALOG_FORMS}, got {value!r}: {why}" if why else None


def host_problem(host: str) -> str | None:
    """Why `host` (a name, or an IPv6 address in brackets) cannot be looked up, checked here so that a bad
    one is a line naming the setting, not an error from the resolver."""
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return f"{host} is not an IPv6 address"
        return None
    name = host.removesuffix(".")
    if len(name) > 253:
        return "the host name is longer than 253 characters"
    for label in name.split("."):
        if not label:
            return "the host name has an empty label"
        if len(label) > 63:
            return f"the host name's label {label[:16]}... is longer than 63 characters"
        if label.startswith("-") or label.endswith("-"):
            return f"the host name's label {label!r} starts or ends with '-'"
    return None


def _catalog(value: Any) -> Any:
    if (why := catalog_problem(value)) is not None:
        raise problem(why)
    return value


class Project(SpecModel):
    """Settings shared by every spec of a repository."""

    warehouse: str | None = None
    """Warehouse root; relative paths are relative to the project file."""
    vars: dict[str, Scalar] = {}
    """Template variables; `--var NAME=VALUE` overrides them."""
    spark: SparkSettings = SparkSettings()
    """Spark settings."""
    storage: dict[str, Annotated[str, BeforeValidator(_conf_value)]] = {}
    """Object-store options for s3:// warehouses: endpoint, region, allow_http, ... (never credentials:
    those come from the AWS credential chain)."""

    catalog: Annotated[str, PlainValidator(_catalog), WithJsonSchema({"type": "string"})] | None = None
    """Where specs with a `catalog:` section are registered: `hive` (embedded metastore in .tablespec/ beside
    this file; the default), `thrift://HOST:PORT` (a Hive metastore) or `glue`; $TABLESPEC_CATALOG overrides it."""

    table_version: Literal[6, 8, 9] = 6
    """Hudi table version of the tables specs create when they name none (`spec.tableVersion`): 6 (Hudi 0.14/0.15) or 9 (Hudi 1.1/1.2); existing tables keep theirs."""  # noqa: E501

    _file: Path | None = PrivateAttr(default=None)

    @field_validator("vars")
    @classmethod
    def _not_vars(cls, value: dict) -> dict:
        if "vars" in value:
            raise problem("'vars' cannot be a variable name: it is the mapping of all variables")
        return value

    @property
    def file(self) -> Path | None:
        """The file this project was loaded from (None when built in code)."""
        return self._file

    def resolve_warehouse(self, cli_value: str | None = None) -> str | None:
        """Warehouse root: the CLI flag, else $TABLESPEC_WAREHOUSE, else this file's `warehouse`."""
        return resolve_warehouse(cli_value, self)


def resolve_warehouse(cli_value: str | None, project: Project | None) -> str | None:
    """Warehouse root by precedence: CLI flag > $TABLESPEC_WAREHOUSE > project file (relative to its directory)."""
    from tablespec.hudi.io import check_location, is_object_store

    def checked(value: str, origin: str) -> str:
        normalized = check_location(value, f"warehouse {value!r} from {origin}")
        return normalized if is_object_store(normalized) else value

    if cli_value:
        return checked(cli_value, "--warehouse")
    if os.environ.get(WAREHOUSE_ENV):
        return checked(os.environ[WAREHOUSE_ENV], f"${WAREHOUSE_ENV}")
    if project is None or not project.warehouse:
        return None
    origin = f"{project.file}: warehouse" if project.file else "the project's warehouse"
    warehouse = os.path.expanduser(project.warehouse)
    if "://" in warehouse or ":/" in warehouse or os.path.isabs(warehouse) or project.file is None:
        return checked(warehouse, origin)
    return os.path.normpath(project.file.parent.resolve() / warehouse)


@dataclass(frozen=True)
class CatalogSetting:
    """The project's catalog and where that setting was read (for errors that name it)."""

    uri: str
    """`hive`, `thrift://HOST:PORT` or `glue`."""
    origin: str
    """`$TABLESPEC_CATALOG`, or the project file and field."""
    home: Path
    """Directory of the project (the embedded metastore lives in its .tablespec/)."""
    default: bool = False
    """Whether the project names no catalog and this is the default, the embedded metastore."""

    @property
    def kind(self) -> str:
        return "thrift" if self.uri.startswith("thrift://") else self.uri


def _home(project: Project | None) -> Path:
    return project.file.parent.resolve() if project is not None and project.file is not None else Path.cwd()


def resolve_catalog(project: Project | None) -> CatalogSetting | None:
    """The catalog by precedence: $TABLESPEC_CATALOG > the project file's `catalog`; None when neither is set."""
    if os.environ.get(CATALOG_ENV):
        value = os.environ[CATALOG_ENV]
        if (why := catalog_problem(value)) is not None:
            raise SpecError([Diagnostic(f"${CATALOG_ENV}", 0, 0, "", why)])
        return CatalogSetting(value, f"${CATALOG_ENV}", _home(project))
    if project is None or project.catalog is None:
        return None
    origin = f"{project.file}: catalog" if project.file else "the project's catalog"
    return CatalogSetting(project.catalog, origin, _home(project))


def catalog_or_default(project: Project | None) -> CatalogSetting:
    """`resolve_catalog`, or where neither names one the default: the embedded metastore beside the
    project file (or in the working directory, without one)."""
    return resolve_catalog(project) or CatalogSetting("hive", "the default catalog", _home(project), default=True)


def load_project(path: str | Path) -> Project:
    """Load a project file; any problem raises SpecError with located diagnostics."""
    from tablespec.spec.validation import diagnose

    path = Path(path)
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError([Diagnostic(file, 0, 0, "", f"cannot read project file: {e}")]) from None
    documents, diagnostics = read_documents(text, file)
    if diagnostics:
        raise SpecError(diagnostics)
    if len(documents) > 1:
        raise SpecError([Diagnostic(file, documents[1].line, documents[1].col, "", "a project file holds one YAML document")])
    doc = documents[0] if documents else None
    if doc is not None and not isinstance(doc.data, dict):
        raise SpecError([Diagnostic(file, doc.line, doc.col, "", "a project file must be a mapping")])
    try:
        project = Project.model_validate(doc.data if doc else {}, by_alias=True, by_name=False)
    except ValidationError as e:
        raise SpecError(sorted(diagnose(Project, e, doc or Document(0, 1, 1, {}), file), key=lambda d: (d.line, d.col))) from None
    project._file = path
    return project


def find_project(start: str | Path | None = None) -> Project | None:
    """The project file at `start` (a file), or in `start` (a directory, default: cwd) or its nearest parent."""
    start = Path(start) if start is not None else Path.cwd()
    if not start.exists():
        raise SpecError([Diagnostic(str(start), 0, 0, "", "no such file or directory")])
    if start.is_file():
        return load_project(start)
    for directory in (start.resolve(), *start.resolve().parents):
        candidate = directory / PROJECT_FILE
        if candidate.is_file():
            return load_project(candidate)
    return None

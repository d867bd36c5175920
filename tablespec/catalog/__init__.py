"""Catalogs: where a table is registered so SQL users query it by name (see docs/catalogs.md).

`registration` and `diff` are pure (what Hudi's sync writes; what must change); a `Catalog` reads a
database's tables in one batched call and applies a diff. `open_catalog` turns the project's
setting into one: the embedded metastore, a Thrift metastore or AWS Glue.
"""
from __future__ import annotations

from typing import Protocol

from tablespec.catalog.diff import CatalogDiff
from tablespec.catalog.metastore import CatalogError, EmbeddedMetastore
from tablespec.catalog.registration import Registration
from tablespec.spec.project import CatalogSetting

METASTORE_FILE = ".tablespec/metastore.db"


class Catalog(Protocol):
    origin: str

    def tables(self, database: str) -> dict[str, Registration]:
        """Every table of `database` as registered, by (lowercase) name: one call per database."""

    def sync(self, change: CatalogDiff) -> None:
        """Make the catalog's table `change.desired`."""


def open_catalog(setting: CatalogSetting) -> Catalog:
    """The catalog a project setting names; an unsupported one is refused naming the setting."""
    if setting.kind == "hive":
        return EmbeddedMetastore(setting.home / METASTORE_FILE, setting.origin, setting.default)
    if setting.kind == "thrift":
        from tablespec.catalog.thrift import ThriftMetastore
        return ThriftMetastore(setting.uri, setting.origin)
    if setting.kind == "glue":
        from tablespec.catalog.glue import GlueCatalog
        return GlueCatalog(setting.origin)
    raise CatalogError(f"{setting.origin}: catalog {setting.uri!r} is not supported")


__all__ = ["Catalog", "CatalogDiff", "CatalogError", "EmbeddedMetastore", "Registration", "open_catalog"]

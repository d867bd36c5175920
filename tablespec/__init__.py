"""tablespec: infrastructure-as-config for Apache Hudi tables."""
from tablespec.table import Table  # the public entry point: ts.Table.load(...)
from tablespec.version import __version__

__all__ = ["Table", "__version__"]

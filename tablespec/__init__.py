"""tablespec: infrastructure-as-config for Apache Hudi tables."""
__version__ = "0.1.0"

from tablespec.table import Table  # noqa: E402  (the public entry point: ts.Table.load(...))

__all__ = ["Table", "__version__"]

"""tablespec: infrastructure-as-config for Apache Hudi tables."""
__version__ = "0.1.0"

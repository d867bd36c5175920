"""Executors for plan actions. Metadata-only actions live here and never start Spark."""

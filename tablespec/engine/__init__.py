"""The PySpark side: session, key preparation, index tagging, copy-on-write writer, reader.

Only this package imports pyspark, so validate and plan never start a JVM.
"""

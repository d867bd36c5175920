"""The Arrow side of the data path: what an executor does to a batch, with pyarrow and numpy only.

The package sits below `engine` (Spark): nothing here imports pyspark, so the same code runs inside `mapInArrow` on an executor and
in plain Python tests: Hudi's key strings and partition paths (`keys`), Java-compatible
hashing for the bucket index (`hashing`), and base files with Hudi's meta columns and
footers (`basefile`, `bloom`).
"""

"""The daemon Spark forks tablespec's Python workers from (`spark.python.daemon.module`).

Spark starts a worker per concurrent Python task and stops the ones idle for a minute, and each
new worker imports pyarrow, numpy and the task modules on its first task: about 0.4 s of a
task, paid again after every pause between writes. Imported here once, a forked worker starts
with them (copy-on-write). Nothing here starts a thread before the fork (pyarrow's pools start
on first use), so the forked workers are as safe as pyspark's own.
"""
import pyarrow.compute  # noqa: F401
import pyarrow.parquet  # noqa: F401
from pyspark.daemon import manager

import tablespec.engine.clustering  # noqa: F401
import tablespec.engine.compaction  # noqa: F401
import tablespec.engine.reader  # noqa: F401
import tablespec.engine.rebucket  # noqa: F401
import tablespec.engine.record_index  # noqa: F401
import tablespec.engine.tasks  # noqa: F401

if __name__ == "__main__":
    manager()

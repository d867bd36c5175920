"""A failed Spark job comes back as the one line that says what went wrong: Spark's wrappers
("Job aborted due to stage failure") peeled off, a Python worker's traceback cut to its exception."""
from __future__ import annotations

import pytest

from tablespec.engine.failures import is_spark_failure, one_line

pytestmark = pytest.mark.spark


def test_a_python_worker_failure_is_its_exception_line(spark):
    def fail_in_worker(batches):  # defined here: pickled by value, workers need not import this module
        for batch in batches:
            raise ValueError(f"record keys must not be null ({batch.num_rows} rows)")
            yield batch

    df = spark.createDataFrame([(1,)], "x int")
    with pytest.raises(Exception) as caught:
        df.mapInArrow(fail_in_worker, df.schema).collect()
    assert is_spark_failure(caught.value)
    assert one_line(caught.value) == "ValueError: record keys must not be null (1 rows)"


def test_a_java_failure_is_its_first_message_past_the_wrappers(spark, tmp_path):
    (tmp_path / "in.csv").write_text("a,b\n1,2\n")
    with pytest.raises(Exception) as caught:
        spark.read.parquet(str(tmp_path / "in.csv")).collect()
    assert is_spark_failure(caught.value)
    line = one_line(caught.value)
    assert line.startswith("[CANNOT_READ_FILE_FOOTER] Could not read footer for file: ") and "\n" not in line

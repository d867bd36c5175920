"""A write labels its Spark jobs (Spark UI, event log) and gives the caller's job description back."""
from __future__ import annotations

import pytest
from _support import ORDERS_SPEC
from helpers import make_table


def orders(spark, start: int, end: int):
    return spark.range(start, end).selectExpr(
        "format_string('ord-%04d', id) AS order_id", "id AS customer_id", "CAST(id AS DECIMAL(12,2)) AS amount",
        "timestamp_seconds(1767225600 + id) AS updated_at", "date_add(DATE'2026-01-01', CAST(id % 3 AS INT)) AS order_date")


def jobs(spark) -> dict[int, str | None]:
    """Job id -> description of the session's jobs, from Spark's status store (listener bus drained)."""
    sc = spark.sparkContext._jsc.sc()
    sc.listenerBus().waitUntilEmpty()
    found = sc.statusStore().jobsList(None)  # a Scala Seq
    jobs = (found.apply(i) for i in range(found.size()))
    return {j.jobId(): j.description().get() if j.description().isDefined() else None for j in jobs}


@pytest.mark.parametrize("index, labels, write_jobs", [("{type: SIMPLE}", {"tablespec: write"}, 2),
                                                          ("{type: RECORD_LEVEL}", {"tablespec: write"}, 3)])
def test_an_upsert_labels_its_jobs_reports_its_tagging_time_and_restores_the_callers_description(spark, tmp_path,
                                                                                                index, labels,
                                                                                                write_jobs):
    """Tagging runs inside the write job (no pass of its own); its task seconds come back in the result.
    SIMPLE: a small batch into small partitions is tagged and written by the same tasks: one shuffle, by
    partition (AQE runs a shuffle's map side as a job of its own: two jobs; spread by file group: three).
    RECORD_LEVEL: one shuffle more, by the index's file groups, where the index tasks look keys up."""
    spec = ORDERS_SPEC.replace("{type: BUCKET, numBuckets: 16}", index)
    table = make_table(spark, tmp_path, spec)
    table.write(orders(spark, 0, 20), "bulk_insert")
    sc = spark.sparkContext
    before = max(jobs(spark), default=-1)
    sc.setJobDescription("caller's step")
    try:
        result = table.write(orders(spark, 10, 30), "upsert")
        assert sc.getLocalProperty("spark.job.description") == "caller's step"
    finally:
        sc.setJobDescription(None)
    assert (result.inserted, result.updated) == (10, 10)
    assert result.tag_seconds > 0
    labelled = {job: d for job, d in jobs(spark).items() if job > before}
    assert labels == set(labelled.values()) - {None, "caller's step"}
    if write_jobs is not None:
        assert sum(d == "tablespec: write" for d in labelled.values()) == write_jobs

"""Compaction plans (`T.compaction.requested`) written and read back, hostile plans refused in one
line naming the file, and Hudi's trigger and strategies as tablespec applies them. Hudi's own plans
are checked against these in tests/interop/test_compaction_plans.py (0.15) and
test_hudi_1x_compaction_plans.py (1.2)."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from _support import RecordingStorage

from tablespec.errors import HudiFormatError
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.formats.compaction_format import (
    PLAN_SCHEMA,
    PLAN_SCHEMA_1X,
    CompactionOperation,
    CompactionPlan,
    plan_record,
)
from tablespec.hudi.fs_view import FileSystemView
from tablespec.hudi.services.compaction import Backlog, Policy, backlog, due_reasons, pending_plans, select
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import Timeline, TimelineWriter, avro_record
from tablespec.hudi.timeline.instant import format_instant_time, new_instant_time

MB = 1024 * 1024


def _op(partition: str, file_id: str, base_mb: int, logs_mb: list[float]) -> CompactionOperation:
    logs = [(f".{file_id}_20240101000000000.log.{i + 1}_0-1-1", int(mb * MB)) for i, mb in enumerate(logs_mb)]
    base = (f"{file_id}_0-1-1_20240101000000000.parquet", base_mb * MB) if base_mb else None
    return CompactionOperation.of(partition, file_id, "20240101000000000", base, logs)


PLAN = CompactionPlan((_op("2024/01/01", "f1", 3, [1, 2]), _op("2024/01/02", "f2", 0, [0.5])), {"why": "test"})


def _requested(tmp_path, record: dict, one_x: bool = False):
    """A table folder whose timeline holds `record` as a requested compaction; its handle."""
    meta = tmp_path / ".hoodie"
    meta.mkdir(parents=True, exist_ok=True)
    (meta / "20240102000000000.compaction.requested").write_bytes(
        avro_record(PLAN_SCHEMA_1X if one_x else PLAN_SCHEMA, record))
    return HudiTable.open(str(tmp_path))


@pytest.mark.parametrize("one_x", [False, True])
def test_plans_read_back_as_written(tmp_path, one_x):
    plan = CompactionPlan(PLAN.operations, PLAN.extra_metadata, ("2024/01/03",) if one_x else ())
    table = _requested(tmp_path, plan_record(plan, one_x), one_x)
    [(instant, read)] = pending_plans(table.timeline).items()
    assert (instant.timestamp, instant.state) == ("20240102000000000", "requested")
    assert read == plan and [op.metrics for op in read.operations] == [op.metrics for op in plan.operations]
    assert read.file_ids() == {("2024/01/01", "f1"), ("2024/01/02", "f2")}


def test_hudis_metrics_whole_mb():
    """TOTAL_IO_READ_MB: base and log bytes in whole MB; TOTAL_IO_WRITE_MB: the base file's."""
    op = PLAN.operations[0]
    assert op.metrics == {"TOTAL_LOG_FILES": 2.0, "TOTAL_LOG_FILES_SIZE": 3.0 * MB, "TOTAL_IO_READ_MB": 6.0,
                          "TOTAL_IO_WRITE_MB": 3.0, "TOTAL_IO_MB": 9.0}


HOSTILE = [
    ({"partitionPath": "../../etc"}, "operation 0: partition '../../etc' leads outside the table (a '..' segment)"),
    ({"dataFilePath": "2024/f1_0-1-1_20240101000000000.parquet"}, "operation 0 names base file"),
    ({"deltaFilePaths": ["/tmp/.f1_20240101000000000.log.1_0-1-1"]}, "operation 0 names log file"),
    ({"deltaFilePaths": ["notes.txt"]}, "operation 0 names log file 'notes.txt'"),
    ({"fileId": None}, "operation 0 has no file group id"),
    ({"baseInstantTime": "yesterday"}, "operation 0 has no base instant"),
]


@pytest.mark.parametrize("change, message", HOSTILE)
def test_hostile_plans_are_refused_naming_the_file(tmp_path, change, message):
    record = plan_record(PLAN, one_x=False)
    record["operations"][0].update(change)
    table = _requested(tmp_path, record)
    with pytest.raises(HudiFormatError) as refused:
        pending_plans(table.timeline)
    text = str(refused.value)
    assert text.startswith(str(tmp_path / ".hoodie" / "20240102000000000.compaction.requested")) and message in text
    assert "\n" not in text


OPS = (_op("p1", "a", 100, [1]), _op("p1", "b", 10, [50, 1, 1]), _op("p2", "c", 200, [20, 20]), _op("p3", "d", 0, [5]))


@pytest.mark.parametrize("strategy, target, expected", [
    ("LOG_FILE_SIZE", 512000, ["b", "c", "d", "a"]),      # most log bytes first
    ("LOG_FILE_SIZE", 100, ["b", "c"]),                   # b's 72 MB of IO do not reach 100, c's 440 do
    ("LOG_FILE_COUNT", 512000, ["b", "c", "a", "d"]),     # most log files first (ties in partition order)
    ("BOUNDED_IO", 250, ["a", "b"]),                      # partition order: a's 201 MB, then b's 72 reach 250
    ("UNBOUNDED", 1, ["a", "b", "c", "d"]),
])
def test_strategies_order_and_bound_as_hudis(strategy, target, expected):
    assert [op.file_id for op in select(Policy(strategy=strategy, target_io_mb=target), OPS)] == expected


def test_day_based_takes_the_latest_partitions():
    assert [op.file_id for op in select(Policy(strategy="DAY_BASED", latest_partitions=2), OPS)] == ["c", "d"]


NOW = datetime(2024, 1, 2, 12, 0, 0, tzinfo=UTC)


def _backlog(deltas: int, last: timedelta | None) -> Backlog:
    times = [format_instant_time(NOW - timedelta(minutes=30 - i)) for i in range(deltas)]
    return Backlog(format_instant_time(NOW - last) if last else None, tuple(times), times[0] if times else None, (), OPS)


@pytest.mark.parametrize("trigger, deltas, age, due", [
    ("DELTA_COMMITS", 5, timedelta(minutes=40), True), ("DELTA_COMMITS", 4, timedelta(days=1), False),
    ("ELAPSED_TIME", 1, timedelta(hours=2), True), ("ELAPSED_TIME", 9, timedelta(minutes=40), False),
    ("EITHER", 1, timedelta(hours=2), True), ("EITHER", 5, timedelta(minutes=40), True),
    ("EITHER", 4, timedelta(minutes=40), False), ("BOTH", 5, timedelta(hours=2), True),
    ("BOTH", 5, timedelta(minutes=40), False), ("ELAPSED_TIME", 0, timedelta(hours=2), False),
])
def test_triggers_as_hudis(trigger, deltas, age, due):
    reasons = due_reasons(Policy(trigger=trigger), _backlog(deltas, age), NOW)
    assert bool(reasons) == due


def test_elapsed_time_counts_from_the_first_deltacommit_before_any_compaction():
    assert due_reasons(Policy(trigger="ELAPSED_TIME", elapsed_seconds=1200), _backlog(3, None), NOW) == [
        "1800 s since 20240102113000000; elapsedSeconds is 1200"]


def test_the_backlog_reads_the_deltacommits_only_when_their_records_are_counted(tmp_path):
    base, storage = str(tmp_path), RecordingStorage()
    writer, last = TimelineWriter(storage, base), None
    for n in range(3):
        ts = last = new_instant_time(after=last)
        log = f".f1_20240101000000000.log.{n + 1}_0-1-1"
        stats = {"p": [WriteStat(file_id="f1", path=f"p/{log}", num_writes=2, num_deletes=1, partition_path="p")]}
        writer.complete(writer.start(writer.request("deltacommit", ts)),
                        CommitMetadata(partition_to_write_stats=stats, operation_type="UPSERT").to_json())
    timeline = Timeline.load(storage, base)
    storage.reads.clear()
    found = backlog(timeline, FileSystemView.build(storage, base, timeline), set())
    assert len(found.delta_commits) == 3
    assert not [p for p in storage.paths() if p.endswith(".deltacommit")], storage.paths()   # an unchanged plan reads none
    assert found.count_log_records() == {("p", "f1"): 9}
    assert len([p for p in storage.paths() if p.endswith(".deltacommit")]) == 3

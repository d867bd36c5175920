"""A demo-like warehouse tablespec writes without Spark: tables created as `apply` creates them,
commits of real parquet files through the format layer (Hudi's metadata table kept, as writers
keep it), a replacecommit, a clean and an archiving run through tablespec's own services, and a
write left inflight by a writer that died."""
from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tablespec.actions.metadata import create_table
from tablespec.hudi.archive import ArchiveSettings, archive
from tablespec.hudi.config import TableConfig, init_table
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.formats.naming import BaseFileName, bucket_file_id, new_file_id, write_token
from tablespec.hudi.formats.partition import write_partition_metadata
from tablespec.hudi.mdt import sync as mdt_sync
from tablespec.hudi.services.clean import execute_clean, plan_clean
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import TimelineWriter
from tablespec.hudi.timeline.instant import new_instant_time
from tablespec.spec.loader import load_specs

ORDERS = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: orders, database: sales}
spec:
  location: sales/orders
  columns:
    - {name: id, type: string, nullable: false}
    - {name: day, type: string}
  recordKey: {fields: [id]}
  partitioning: {fields: [day]}
  index: {type: BUCKET, numBuckets: 4}
  clustering: {smallFileLimit: 1KiB, targetFileSize: 1MiB}
  retention: {keepCommits: 2}
"""
EVENTS = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: events, database: web}
spec:
  location: web/events
  columns:
    - {name: id, type: string, nullable: false}
    - {name: day, type: string}
  recordKey: {fields: [id]}
  partitioning: {fields: [day]}
  index: {type: SIMPLE}
"""


def _base_file(table: HudiTable, partition: str, file_id: str, ts: str, rows: int) -> WriteStat:
    name = BaseFileName(file_id, write_token(0, 1, 1), ts).format()
    path = Path(table.base, partition, name)
    keys = [f"{partition}-{file_id[:8]}-{i}" for i in range(rows)]
    pq.write_table(pa.table({"_hoodie_commit_time": [ts] * rows, "_hoodie_record_key": keys,
                             "id": keys, "day": [partition.split("=")[-1]] * rows}), path)
    size = os.path.getsize(path)
    return WriteStat(file_id=file_id, path=f"{partition}/{name}", num_writes=rows, num_inserts=rows,
                     total_write_bytes=size, file_size_in_bytes=size, partition_path=partition)


def commit(table: HudiTable, groups: dict[tuple[str, str], int], action: str = "commit", operation: str = "UPSERT",
           replaced: dict[str, list[str]] | None = None, complete: bool = True) -> str:
    """One write of `groups` {(partition, file id): rows}, each a new base file; left inflight unless `complete`."""
    table.refresh()
    writer = TimelineWriter.of(table.timeline)
    ts = new_instant_time(table.timeline.latest_time)
    instant = writer.start(writer.request(action, ts))
    stats: dict[str, list[WriteStat]] = {}
    for (partition, file_id), rows in groups.items():
        os.makedirs(Path(table.base, partition), exist_ok=True)
        write_partition_metadata(table.storage, table.base, partition, ts)
        stats.setdefault(partition, []).append(_base_file(table, partition, file_id, ts, rows))
    if not complete:
        return ts
    schema = table.table_config.create_schema
    metadata = CommitMetadata(stats, operation_type=operation, extra_metadata={"schema": schema} if schema else {},
                              partition_to_replace_file_ids=replaced)
    recorded = mdt_sync.record_commit(table, ts, metadata)
    writer.complete(instant, metadata.to_json(), after=mdt_sync.completed_by(recorded))
    table.refresh()
    return ts


def write_logs(base: Path, commits: int = 8) -> HudiTable:
    """A table with no spec and no metadata table (as Apache Hudi writes with it off): `commits`
    inserts into one partition, all but the last 2 archived."""
    logs = HudiTable.open(str(base))
    init_table(logs.storage, logs.base, TableConfig(name="logs", database="ops", record_key_fields=["id"],
                                                    partition_fields=["day"], hive_style_partitioning=True,
                                                    key_generator_class="org.apache.hudi.keygen.SimpleKeyGenerator"))
    for n in range(commits):
        commit(logs, {("day=2026-11-01", new_file_id()): 1 + n}, operation="INSERT")
    archive(logs.refresh(), ArchiveSettings(min_commits=2, max_commits=3, cleaner_commits_retained=1))
    return logs


def write_warehouse(root: Path) -> tuple[Path, Path]:
    """Specs folder and warehouse of two declared tables, sales.orders (BUCKET, 4 buckets, two
    partitions, updates, an insert_overwrite replacecommit, a clean) and web.events (SIMPLE, with a
    write whose writer died left inflight), and ops/logs, which no spec declares (write_logs)."""
    specs, warehouse = root / "specs", root / "warehouse"
    specs.mkdir(parents=True)
    (specs / "orders.yaml").write_text(ORDERS)
    (specs / "events.yaml").write_text(EVENTS)
    loaded = {ls.spec.metadata.name: ls for ls in load_specs([str(specs)]).specs}
    orders = HudiTable.open(str(warehouse / "sales/orders"))
    create_table(orders, loaded["orders"].spec)
    fids = {(p, b): bucket_file_id(b) for p in ("day=2026-11-01", "day=2026-11-02") for b in range(4)}
    commit(orders, {(p, fid): 5 + 3 * b for (p, b), fid in fids.items()}, operation="INSERT")
    for n in range(3):   # updates of bucket 0 and 1 of the first day
        commit(orders, {(p, fid): 6 + n for (p, b), fid in fids.items() if p == "day=2026-11-01" and b < 2})
    old = ("day=2026-11-02", 3)
    new_id = bucket_file_id(3)
    commit(orders, {("day=2026-11-02", new_id): 14}, action="replacecommit", operation="INSERT_OVERWRITE",
           replaced={"day=2026-11-02": [fids[old]]})
    orders.refresh()
    clean = plan_clean(orders.base, orders.timeline, orders.view, 2)
    assert clean is not None
    execute_clean(orders, clean)
    events = HudiTable.open(str(warehouse / "web/events"))
    create_table(events, loaded["events"].spec)
    for n in range(3):
        commit(events, {("day=2026-11-01", new_file_id()): 10 + n, ("day=2026-11-03", new_file_id()): 2},
               operation="INSERT")
    commit(events, {("day=2026-11-01", new_file_id()): 4}, complete=False)   # its writer died: no heartbeat
    write_logs(warehouse / "ops/logs")
    return specs, warehouse

"""Driver-side steps shared by every data-writing action before its commit point."""
from __future__ import annotations

import os

from tablespec.hudi.commit import CommitMetadata, WriteStat
from tablespec.hudi.naming import BaseFileName


def reconcile(storage, base: str, instant_ts: str, stats: list[dict]) -> None:
    """Delete files of this instant that no successful task reported (failed or retried attempts)."""
    keep = {s["path"] for s in stats}
    for partition in {s["partition"] for s in stats}:
        folder = os.path.join(base, partition) if partition else base
        for info in storage.list_dir(folder):
            name = BaseFileName.parse(info.name)
            rel = f"{partition}/{info.name}" if partition else info.name
            if name is not None and name.instant == instant_ts and rel not in keep:
                storage.delete(info.path)


def commit_metadata(stats: list[dict], operation_type: str, avro_schema: str, extra: dict | None = None,
                    replaced: dict[str, list[str]] | None = None) -> CommitMetadata:
    """Commit (or, with `replaced`, replacecommit) metadata from the tasks' write stats."""
    by_partition: dict[str, list[WriteStat]] = {}
    for s in stats:
        by_partition.setdefault(s["partition"], []).append(WriteStat(
            file_id=s["file_id"], path=s["path"], prev_commit=s["prev_commit"], num_writes=s["num_writes"],
            num_deletes=s["num_deletes"], num_update_writes=s["num_updates"], num_inserts=s["num_inserts"],
            total_write_bytes=s["bytes"], partition_path=s["partition"], file_size_in_bytes=s["bytes"]))
    return CommitMetadata(partition_to_write_stats=by_partition, operation_type=operation_type,
                          extra_metadata={"schema": avro_schema, **(extra or {})},
                          partition_to_replace_file_ids=None if replaced is None else
                          {p: list(ids) for p, ids in replaced.items()})

"""The metadata table's own cleaning and archiving (tablespec/hudi/mdt/cleaner.py, archiver.py): written
through the real commit path (record, complete, compact, clean, data archive), on local storage."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tablespec.faults import CRASH_ENV
from tablespec.hudi.archive import ArchiveSettings, archive
from tablespec.hudi.archive.log import archive_files, read_records
from tablespec.hudi.commit import CommitMetadata, WriteStat
from tablespec.hudi.config import TableConfig, init_table
from tablespec.hudi.instant import COMMIT, new_instant_time
from tablespec.hudi.io import LocalStorage, join
from tablespec.hudi.mdt import archiver, cleaner, layout, reader, sync, writer
from tablespec.hudi.naming import BaseFileName, new_file_id
from tablespec.hudi.partition import write_partition_metadata
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline import Timeline, TimelineWriter, avro_content

ST = LocalStorage()
SETTINGS = ArchiveSettings(3, 5, 2)     # data: keep 3..5 commits; the metadata table 4..6


def _table(tmp_path) -> str:
    base = str(tmp_path / "t")
    init_table(ST, base, TableConfig(name="t", database="default", record_key_fields=["id"],
                                     partition_fields=["part"],
                                     key_generator_class="org.apache.hudi.keygen.SimpleKeyGenerator"))
    writer.initialize(HudiTable.open(base))
    return base


def _write(base: str, n: int) -> str:
    """One data commit (a new base file in partition `a`) as the engine makes it: recorded in the
    metadata table, completed, compacted/cleaned when due, then the data archive (and with it
    the metadata table's)."""
    timeline = Timeline.load(ST, base)
    ts = new_instant_time(timeline.instants[-1].timestamp if timeline.instants else None)
    tw = TimelineWriter(ST, base)
    inflight = tw.start(tw.request(COMMIT, ts))
    write_partition_metadata(ST, base, "a", ts)
    rel = join("a", BaseFileName(new_file_id(), "0-1-0", ts).format())
    ST.write_bytes(join(base, rel), b"x" * (n + 1))
    metadata = CommitMetadata({"a": [WriteStat(file_id=rel.split("/")[1][:36], path=rel, prev_commit="null",
                                               partition_path="a", file_size_in_bytes=n + 1)]},
                              operation_type="INSERT")
    table = HudiTable.open(base)
    recorded = sync.record_commit(table, ts, metadata)
    tw.complete(inflight, metadata)
    table = HudiTable.open(base)
    sync.compact_if_due(table, recorded)
    archive(HudiTable.open(base), SETTINGS)
    return ts


def _active(base: str) -> list[str]:
    return sorted(i.name for i in ST.list_dir(layout.meta_path(base)) if not i.is_dir)


def _archived(base: str) -> set[tuple[str, str]]:
    mdt = layout.table_path(base)
    return {(r["commitTime"], r["actionType"]) for f in archive_files(ST, mdt) for r in read_records(ST, f)
            if r["actionState"] == "COMPLETED"}


def _assert_listing_is_storage(base: str) -> None:
    listed, stored = reader.listing(HudiTable.open(base)), writer.list_data_files(ST, base)
    assert listed.files == stored


def test_metadata_timeline_and_slices_stay_bounded(tmp_path):
    base = _table(tmp_path)
    counts = []
    for n in range(100):
        _write(base, n)
        counts.append(len(_active(base)))
        if n in (20, 99):
            _assert_listing_is_storage(base)
    # bounded: the last 30 writes never grow the metadata timeline beyond what writes 40-70 reached
    # (cleans accumulate up to the archive's max before they archive too)
    assert max(counts[70:]) <= max(counts[40:70]) < 3 * (6 + 10 + 6)
    metadata = layout.timeline(ST, base)
    commits = [i for i in metadata if i.completed and i.action in ("deltacommit", "compaction")]
    assert len(commits) <= archiver.MetaLimits.of(SETTINGS).max_commits + 10   # + deltacommits since a compaction
    # what left the active timeline is in the metadata table's archive, each once, never in both
    archived = _archived(base)
    assert archived and len(archived) == len({t for t, _ in archived})
    assert not {t for t, _ in archived} & {i.timestamp for i in metadata}
    assert all(a in archived or a[0] >= metadata[0].timestamp for a in archived)
    # cleans in the metadata timeline; only the latest slice and the one before the retained commit stay
    cleans = [i for i in metadata if i.action == "clean"] + [a for a in archived if a[1] == "clean"]
    assert cleans
    bases = [i.name for i in ST.list_dir(layout.partition_path(base)) if i.name.endswith(".hfile")]
    assert 1 <= len(bases) <= 2
    last_clean = [i for i in metadata if i.action == "clean"][-1]
    plan = avro_content(ST.read_bytes(join(layout.meta_path(base), f"{last_clean.timestamp}.clean")), "clean")
    assert plan["totalFilesDeleted"] >= 1 and plan["partitionMetadata"]["files"]["successDeleteFiles"]


def test_slices_to_clean_keeps_latest_and_the_one_before_the_retained_commit():
    t1, t2, t3 = (f"2026010100000{n}000001" for n in (1, 2, 3))      # compactions' 20-digit times
    names = [layout.base_file_name(b) for b in (t1, t2, t3)] + [f".files-0000-0_{b}.log.1_0-0-0" for b in (t1, t2, t3)]
    old = sorted([names[0], names[3]])
    assert cleaner.slices_to_clean(names, {t1, t2, t3}, "20260101000002500") == old
    assert cleaner.slices_to_clean(names, {t1, t2, t3}, "20260101000001500") == []
    assert cleaner.slices_to_clean(names, {t2, t3}, "20260101000002500") == []             # t1 not completed
    assert cleaner.slices_to_clean(names, {t2, t3}, "20260101000002500", t2) == old        # t1 archived
    assert cleaner.slices_to_clean(names, {t1, t2}, "20260101000003500") == old            # t3 pending


@pytest.mark.parametrize("point", ["mdt_archive_written", "mdt_archive_pending_deleted"])
def test_an_interrupted_metadata_archive_is_finished_by_the_next_run(tmp_path, point):
    base = _table(tmp_path)
    script = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
              f"from test_hudi_mdt_housekeeping import _write; [_write({base!r}, n) for n in range(60)]")
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, CRASH_ENV: point}, check=False)
    assert done.returncode == -signal.SIGKILL                # killed at the point, mid-archive
    archived = _archived(base)
    both = archived & {(i.timestamp, "commit" if i.action == "compaction" else i.action)
                       for i in layout.timeline(ST, base)}
    assert both                                           # left both archived and active
    archiver.archive(HudiTable.open(base), SETTINGS)  # the next run
    assert not archived & {(i.timestamp, "commit" if i.action == "compaction" else i.action)
                           for i in layout.timeline(ST, base)}
    _assert_listing_is_storage(base)
    _write(base, 99)
    _assert_listing_is_storage(base)


@pytest.mark.parametrize("point", ["mdt_clean_requested", "mdt_clean_deleted"])
def test_an_interrupted_metadata_clean_is_finished_by_the_next_write(tmp_path, point):
    base = _table(tmp_path)
    script = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
              f"from test_hudi_mdt_housekeeping import _write; [_write({base!r}, n) for n in range(30)]")
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, CRASH_ENV: point}, check=False)
    assert done.returncode == -signal.SIGKILL
    [pending] = [i for i in layout.timeline(ST, base) if not i.completed]
    assert pending.action == "clean" and pending.timestamp.endswith(cleaner.CLEAN_SUFFIX)
    _assert_listing_is_storage(base)                      # readers unaffected meanwhile
    _write(base, 99)
    metadata = layout.timeline(ST, base)
    assert all(i.completed for i in metadata) and pending.timestamp in {i.timestamp for i in metadata}
    planned = avro_content(ST.read_bytes(join(layout.meta_path(base), f"{pending.timestamp}.clean.requested")), "plan")
    assert not any(ST.exists(f["filePath"]) for fs in planned["filePathsToBeDeletedPerPartition"].values() for f in fs)
    _assert_listing_is_storage(base)

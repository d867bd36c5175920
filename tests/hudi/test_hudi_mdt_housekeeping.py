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
from tablespec.hudi.config import TableConfig, init_table
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.formats.naming import BaseFileName, LogFileName, new_file_id
from tablespec.hudi.formats.partition import write_partition_metadata
from tablespec.hudi.io import LocalStorage, join
from tablespec.hudi.mdt import archiver, cleaner, layout, reader, sync, writer
from tablespec.hudi.mdt import record_index_reader as rli_reader
from tablespec.hudi.mdt import record_index_writer as rli_writer
from tablespec.hudi.mdt.record_index import RECORD_INDEX, Location, RecordIndexChange, file_group_id
from tablespec.hudi.mdt.records import from_commit
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import Timeline, TimelineWriter, avro_content
from tablespec.hudi.timeline.instant import COMMIT, new_instant_time

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


def _write_keys(base: str, n: int) -> tuple[str, RecordIndexChange]:
    """One data commit that inserts key `n-NNN` and deletes `kNNN` through the record index, then
    compaction, cleaning and archiving as after any commit."""
    ts = new_instant_time(Timeline.load(ST, base).instants[-1].timestamp)
    tw = TimelineWriter(ST, base)
    inflight = tw.start(tw.request(COMMIT, ts))
    write_partition_metadata(ST, base, "a", ts)
    file_id = new_file_id()
    rel = join("a", BaseFileName(file_id, "0-1-0", ts).format())
    ST.write_bytes(join(base, rel), b"x")
    metadata = CommitMetadata({"a": [WriteStat(file_id=file_id, path=rel, prev_commit="null", partition_path="a",
                                               file_size_in_bytes=1)]}, operation_type="UPSERT")
    change = RecordIndexChange(upserts={f"n-{n:03d}": Location("a", file_id, ts)}, deletes={f"k{n:03d}"})
    writer.record(HudiTable.open(base), ts, from_commit(metadata), record_index=change)
    tw.complete(inflight, metadata)
    sync.compact_if_due(HudiTable.open(base), layout.timeline(ST, base))
    archive(HudiTable.open(base), SETTINGS)
    return ts, change


def test_record_index_file_groups_are_cleaned_like_the_files_partition(tmp_path):
    base = _table(tmp_path)
    first = _write(base, 0)
    [stat] = CommitMetadata.from_json(ST.read_bytes(join(base, ".hoodie", f"{first}.commit"))).partition_to_write_stats["a"]
    entries = [(f"k{i:03d}", "a", stat.file_id, first) for i in range(300)]
    rli_writer.initialize(HudiTable.open(base), entries, file_groups=4)
    expected = {k: Location(p, f, t.ljust(17, "0")) for k, p, f, t in entries}
    for n in range(60):
        ts, change = _write_keys(base, n)
        expected = {**{k: v for k, v in expected.items() if k not in change.deletes},
                    **{k: Location(v.partition, v.file_id, ts.ljust(17, "0")) for k, v in change.upserts.items()}}
    metadata = layout.timeline(ST, base)
    cleans = [i for i in metadata if i.action == "clean" and i.completed]
    cleaned = set().union(*(avro_content(ST.read_bytes(join(layout.meta_path(base), f"{c.timestamp}.clean")),
                                         "clean")["partitionMetadata"] for c in cleans))
    assert cleaned == {"files", RECORD_INDEX}              # the latest cleans: both partitions
    names = [i.name for i in ST.list_dir(layout.partition_path(base, RECORD_INDEX)) if not i.is_dir]
    for index in range(4):                                # latest slice and at most the one before the retained commit
        bases = [n for n in names if n.startswith(file_group_id(index)) and n.endswith(".hfile")]
        assert 1 <= len(bases) <= 2
        kept = {b.rsplit("_", 1)[1][:-len(".hfile")] for b in bases}
        logs = [n for n in names if n.startswith(f".{file_group_id(index)}_")]
        assert {LogFileName.parse(n).base_instant for n in logs} <= kept    # no log of a cleaned slice left
    table = HudiTable.open(base)
    assert rli_reader.scan(table) == expected
    assert rli_reader.lookup(table, [*expected, "k000", "absent"]) == expected
    _assert_listing_is_storage(base)

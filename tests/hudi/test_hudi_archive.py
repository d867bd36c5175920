"""Hudi's archived timeline: archiving settings, the archive plan (Hudi 0.15's rules), archive
entries read back in the active timeline's shape, and crash safety (each instant in exactly one
timeline for readers, at every point of an interrupted run; a re-run completes it). Tables Apache
Hudi archives, and Hudi reading tablespec's archive: tests/interop/test_hudi_archived_timeline.py."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from _support import ROOT

from tablespec.errors import HudiFormatError
from tablespec.hudi.archive import (
    ArchivedTimeline,
    ArchiveSettings,
    ArchiveSettingsError,
    Bounds,
    History,
    archive,
    finish_archive,
    housekeep,
    plan_archive,
)
from tablespec.hudi.archive.active import delete_archived, deletion_order, state_files
from tablespec.hudi.archive.archiver import interrupted, write_archive
from tablespec.hudi.archive.log import ArchiveFile, archive_files, folder_path, read_records, write_version
from tablespec.hudi.archive.merge import PLAN_NAME, MergeSettings, finish_merge, merge_candidates, merge_small_files
from tablespec.hudi.archive.plan import archive_due
from tablespec.hudi.archive.summary import ArchivedClusterings, archived_clusterings, read_summary
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.formats.logfile import MAGIC
from tablespec.hudi.io import FileInfo, LocalStorage, join
from tablespec.hudi.services.clean import CLEAN_METADATA_SCHEMA, CLEANER_PLAN_SCHEMA
from tablespec.hudi.services.clustering import ClusteringGroup, ClusteringPlan, Layout, SliceInfo, encode_plan
from tablespec.hudi.table import HudiTable, Location
from tablespec.hudi.timeline.active import Timeline, TimelineWriter, avro_record
from tablespec.hudi.timeline.instant import Instant

SCHEMA = '{"type":"record","name":"t_record","namespace":"hoodie.t","fields":[{"name":"id","type":"string"}]}'
SETTINGS = ArchiveSettings(min_commits=2, max_commits=3, cleaner_commits_retained=1)


def ts(n: int) -> str:
    return f"20260101{n:09d}"


def timeline_of(*instants: Instant) -> Timeline:
    """A timeline snapshot of these instants (planning reads nothing from storage)."""
    return Timeline(LocalStorage(), "/nowhere", instants)


def commits(*numbers: int, action: str = "commit") -> list[Instant]:
    return [Instant(ts(n), action) for n in numbers]


# --- settings ----------------------------------------------------------------------------------

def test_settings_default_to_hudis_and_are_checked_as_hudi_checks_them():
    assert ArchiveSettings() == ArchiveSettings(20, 30, 10)
    with pytest.raises(ArchiveSettingsError, match=r"hoodie.keep.max.commits=20 must be greater than hoodie.keep.min.commits=20"):
        ArchiveSettings(20, 20, 10)
    with pytest.raises(ArchiveSettingsError, match=r"hoodie.keep.min.commits=10 must be greater than "
                                                   r"hoodie.cleaner.commits.retained=10"):
        ArchiveSettings(10, 30, 10)
    with pytest.raises(ArchiveSettingsError, match=r"hoodie.keep.min.commits must be a whole number of at least 1"):
        ArchiveSettings(0, 30, 10)


def test_settings_from_hudi_properties_name_their_origin():
    assert ArchiveSettings.from_properties({"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
                                            "hoodie.cleaner.commits.retained": "1"}) == SETTINGS
    assert ArchiveSettings.from_properties({}) == ArchiveSettings()
    with pytest.raises(ArchiveSettingsError, match=r"^job.yaml: hoodie.keep.max.commits must be a whole number, found 'x'$"):
        ArchiveSettings.from_properties({"hoodie.keep.max.commits": "x"}, "job.yaml")
    with pytest.raises(ArchiveSettingsError, match=r"^job.yaml: hoodie.keep.max.commits=5 must be greater"):
        ArchiveSettings.from_properties({"hoodie.keep.max.commits": "5", "hoodie.keep.min.commits": "6",
                                         "hoodie.cleaner.commits.retained": "1"}, "job.yaml")


# --- the plan ----------------------------------------------------------------------------------

def test_commits_are_archived_only_past_max_and_down_to_min():
    assert plan_archive(timeline_of(*commits(1, 2, 3)), SETTINGS).empty
    plan = plan_archive(timeline_of(*commits(1, 2, 3, 4)), SETTINGS)
    assert plan.instants == tuple(commits(1, 2)) and (plan.min_commits, plan.max_commits) == (2, 3)
    defaults = plan_archive(timeline_of(*commits(*range(1, 32))), ArchiveSettings())
    assert defaults.instants == tuple(commits(*range(1, 12)))      # 31 > 30: down to 20


def test_archiving_never_passes_the_oldest_pending_write():
    # Hudi's cleaner retains from the last completed commit before a pending write, and the
    # limits follow it (min: the commits after it + 2), so nothing from there on is archived
    pending = Instant(ts(3), "commit", "inflight")
    plan = plan_archive(timeline_of(*commits(1, 2, *range(4, 13)), pending), SETTINGS)
    assert plan.empty and (plan.min_commits, plan.max_commits) == (11, 12)
    # a pending clustering plan (requested replacecommit) is a pending write too
    clustering = Instant(ts(2), "replacecommit", "requested")
    assert plan_archive(timeline_of(*commits(1, 3, 4, 5, 6), clustering), SETTINGS).empty
    # a pending clean holds nothing back
    clean = Instant(ts(2), "clean", "requested")
    assert plan_archive(timeline_of(*commits(1, 3, 4, 5), clean), SETTINGS).instants == tuple(commits(1, 3))


def test_archiving_stops_at_the_first_savepoint():
    savepoint = Instant(ts(2), "savepoint")
    assert plan_archive(timeline_of(*commits(1, 2, 3, 4, 5, 6), savepoint), SETTINGS).instants == tuple(commits(1))


def test_replacecommits_readers_need_stay():
    replace = Instant(ts(3), "replacecommit")
    timeline = timeline_of(*commits(1, 2, 4, 5, 6, 7), replace)
    # no clean yet: the replaced file groups are still on disk, so the first replacecommit stays
    assert plan_archive(timeline, SETTINGS).instants == tuple(commits(1, 2))
    # the last clean retains from before it: it stays; from after it: it may go
    assert plan_archive(timeline, SETTINGS, Bounds(clean_retains=ts(2))).instants == tuple(commits(1, 2))
    assert plan_archive(timeline, SETTINGS, Bounds(clean_retains=ts(4))).instants == (
        *commits(1, 2), replace, *commits(4, 5))
    # an inflight replacecommit keeps the last completed commit before it
    inflight = Instant(ts(8), "replacecommit", "inflight")
    timeline = timeline_of(*commits(1, 2, 3, 4, 5, 6, 7), inflight)
    assert plan_archive(timeline, SETTINGS, Bounds(clean_retains=ts(7))).instants == tuple(commits(1, 2, 3, 4, 5))


def test_cleans_and_rollbacks_are_archived_per_action_by_the_same_counts():
    cleans = [Instant(ts(n), "clean") for n in (2, 4, 6, 8)]
    rollbacks = [Instant(ts(n), "rollback") for n in (3, 5, 7)]
    plan = plan_archive(timeline_of(*commits(1, 9), *cleans, *rollbacks), SETTINGS)
    assert plan.instants == tuple(cleans[:2])       # 4 cleans > 3: down to 2; 3 rollbacks stay


def test_the_limits_follow_the_cleaner_as_hudi_adjusts_them():
    # the cleaner retains from the commit before the pending write (ts 2): 4 commits after it
    # need min 6, max 7
    timeline = timeline_of(*commits(1, 2, 4, 5, 6, 7), Instant(ts(3), "commit", "requested"),
                           *commits(8, 9))
    plan = plan_archive(timeline, ArchiveSettings(3, 4, 2))
    assert (plan.min_commits, plan.max_commits) == (8, 9)


def test_a_metadata_table_bounds_archiving_by_its_latest_compaction():
    timeline = timeline_of(*commits(1, 2, 3, 4, 5, 6))
    assert plan_archive(timeline, SETTINGS, Bounds(metadata_table=True)).empty
    assert plan_archive(timeline, SETTINGS, Bounds(metadata_table=True, metadata_compacted=ts(3))).instants == \
        tuple(commits(1, 2))


# --- tables on disk ----------------------------------------------------------------------------

def _stat(partition: str, file_id: str, n: int) -> WriteStat:
    return WriteStat(file_id=file_id, path=f"{partition}/{file_id}_0-1-2_{ts(n)}.parquet", prev_commit="null",
                     num_writes=n, num_inserts=n, total_write_bytes=100 * n, partition_path=partition,
                     file_size_in_bytes=100 * n, runtime_stats={"totalCreateTime": 5})


def _write_commit(writer: TimelineWriter, n: int, action: str = "commit") -> CommitMetadata:
    meta = CommitMetadata({"p0": [_stat("p0", f"f{n}-0", n)], "p1": [_stat("p1", f"g{n}-0", n)]},
                          extra_metadata={"schema": SCHEMA}, operation_type="UPSERT")
    if action == "replacecommit":
        meta.partition_to_replace_file_ids = {"p0": [f"f{n - 1}-0"]}
        meta.operation_type = "INSERT_OVERWRITE"
    # tablespec's writer leaves the inflight file empty, Hudi's writes the planned stats into it
    planned = CommitMetadata(operation_type="UPSERT").to_json() if n % 2 else b""
    inflight = writer.start(writer.request(action, ts(n)), planned)
    writer.complete(inflight, meta)
    return meta


def _write_clean(writer: TimelineWriter, n: int, retain: int) -> None:
    plan = {"earliestInstantToRetain": {"timestamp": ts(retain), "action": "commit", "state": "COMPLETED"},
            "lastCompletedCommitTimestamp": ts(n - 1), "policy": "KEEP_LATEST_COMMITS", "version": 2,
            "filesToBeDeletedPerPartition": {}, "filePathsToBeDeletedPerPartition": {}, "partitionsToBeDeleted": []}
    meta = {"startCleanTime": ts(n), "timeTakenInMillis": 3, "totalFilesDeleted": 0,
            "earliestCommitToRetain": ts(retain), "lastCompletedCommitTimestamp": ts(n - 1), "partitionMetadata": {},
            "version": 2}
    content = avro_record(CLEANER_PLAN_SCHEMA, plan)
    writer.complete(writer.start(writer.request("clean", ts(n), content), content),
                    avro_record(CLEAN_METADATA_SCHEMA, meta))


def _build(storage, base: str) -> dict[int, CommitMetadata]:
    """A table's timeline: commits 1..3, a clean 4, commit 5, a clean 6, a replacecommit 7, commit 8."""
    writer = TimelineWriter(storage, base)
    written = {}
    for n in (1, 2, 3):
        written[n] = _write_commit(writer, n)
    _write_clean(writer, 4, retain=3)
    written[5] = _write_commit(writer, 5)
    _write_clean(writer, 6, retain=5)
    written[7] = _write_commit(writer, 7, "replacecommit")
    written[8] = _write_commit(writer, 8)
    return written


@pytest.fixture
def table(tmp_path):
    base = str(tmp_path / "t")
    return base, _build(LocalStorage(), base)


def _avro_view(meta: CommitMetadata) -> CommitMetadata:
    """What the archive keeps of commit metadata: the write stats' Avro fields (no runtime stats)."""
    out = CommitMetadata.from_dict(meta.to_dict())
    for stat in out.write_stats():
        stat.runtime_stats = None
    return out


def test_archived_instants_and_commit_metadata_read_back_as_they_were_active(table):
    base, written = table
    storage = LocalStorage()
    before = Timeline.load(storage, base)
    result = archive(HudiTable(Location(base, storage)), SETTINGS)
    # 5 commits > 3: down to 2 (the replacecommit stays: the last clean retains from 5)
    assert result.archived == tuple(commits(1, 2, 3, 5)) and result.finished == ()
    assert [f.version for f in archive_files(storage, base)] == [1]
    active = Timeline.load(storage, base)
    assert [i.timestamp for i in active.instants] == [ts(n) for n in (4, 6, 7, 8)]
    assert not [f for f in storage.list_dir(join(base, ".hoodie")) if f.name.startswith(ts(1))]

    archived = ArchivedTimeline.load(storage, base)
    assert archived.instants == tuple(commits(1, 2, 3, 5))
    assert {str(i) for i in archived.records} == {
        f"{ts(n)}.commit[{s}]" for n in (1, 2, 3, 5) for s in ("requested", "inflight", "completed")}
    # an empty requested or inflight file is archived as Hudi archives it: empty metadata
    empty = {"partitionToWriteStats": {}, "extraMetadata": {"ROLLING_STAT": ""}, "version": None,
             "operationType": "UNKNOWN"}
    assert archived.records[Instant(ts(2), "commit", "inflight")]["hoodieCommitMetadata"] == empty
    assert archived.records[Instant(ts(1), "commit", "requested")]["hoodieCommitMetadata"] == empty
    assert archived.records[Instant(ts(1), "commit", "inflight")]["hoodieCommitMetadata"]["operationType"] == "UPSERT"
    for n in (1, 2, 3, 5):
        got = archived.commit_metadata(Instant(ts(n), "commit"))
        assert got == _avro_view(written[n]) and got.schema == SCHEMA
    history = History.of(HudiTable(Location(base, storage)))
    assert history.instants == before.instants
    assert history.commits() == before.commits()
    assert history.commit_metadata(Instant(ts(7), "replacecommit")) == written[7]    # active: as written
    assert history.is_archived(Instant(ts(1), "commit")) and not history.is_archived(Instant(ts(8), "commit"))
    with pytest.raises(HudiFormatError, match="not an archived completed commit"):
        archived.commit_metadata(Instant(ts(4), "clean"))


def test_replacecommits_and_cleans_read_back_from_the_archive(table):
    base, written = table
    storage = LocalStorage()
    writer = TimelineWriter(storage, base)
    for n in (9, 10, 11):
        written[n] = _write_commit(writer, n)
    _write_clean(writer, 12, retain=10)
    _write_clean(writer, 13, retain=11)
    archive(HudiTable(Location(base, storage)), SETTINGS)
    archived = ArchivedTimeline.load(storage, base)
    assert Instant(ts(7), "replacecommit") in archived.commits() and Instant(ts(4), "clean") in archived.completed()
    replace = archived.commit_metadata(Instant(ts(7), "replacecommit"))
    assert replace.partition_to_replace_file_ids == {"p0": ["f6-0"]} and replace == _avro_view(written[7])
    assert archived.read_metadata(Instant(ts(4), "clean"))["earliestCommitToRetain"] == ts(3)
    history = History.of(HudiTable(Location(base, storage)))
    assert [i.timestamp for i in history.instants] == [ts(n) for n in range(1, 14)]


def test_the_completed_only_archive_is_the_archive_s_completed_entries(table):
    """A reader of what completed (the report) decodes only the entries of completed states; an entry
    of another state whose content holds the same bytes ("COMPLETED" as an Avro string) is dropped too."""
    base, written = table
    storage = LocalStorage()
    writer = TimelineWriter(storage, base)
    decoy = CommitMetadata(operation_type="UPSERT", extra_metadata={"state": "COMPLETED"}).to_json()
    writer.complete(writer.start(writer.request("commit", ts(9)), decoy), CommitMetadata(operation_type="UPSERT"))
    for n in (10, 11, 12):
        written[n] = _write_commit(writer, n)
    _write_clean(writer, 13, retain=11)
    _write_clean(writer, 14, retain=12)
    archive(HudiTable(Location(base, storage)), SETTINGS)
    full, done = ArchivedTimeline.load(storage, base), ArchivedTimeline.load(storage, base, completed_only=True)
    assert Instant(ts(9), "commit", "inflight") in full.records and Instant(ts(4), "clean") in full.records
    assert done.records == {i: r for i, r in full.records.items() if i.is_completed}
    assert done.instants == done.completed() == full.completed()
    assert [done.commit_metadata(i) for i in done.commits()] == [full.commit_metadata(i) for i in full.commits()]


def test_nothing_to_archive_writes_nothing(table):
    base, _ = table
    storage = LocalStorage()
    archive(HudiTable(Location(base, storage)), SETTINGS)
    again = archive(HudiTable(Location(base, storage)), SETTINGS)
    assert again.archived == () and again.archive_file is None
    assert len(archive_files(storage, base)) == 1


# --- crash safety ------------------------------------------------------------------------------

def _each_instant_once(storage, base, expected: tuple[Instant, ...]) -> History:
    history = History.of(HudiTable(Location(base, storage)))
    assert history.instants == expected
    assert len({(i.timestamp, i.action) for i in history.instants}) == len(history.instants)
    return history


def test_an_archive_interrupted_after_writing_the_block_is_completed_by_the_next_run(table):
    base, _ = table
    storage = LocalStorage()
    expected = Timeline.load(storage, base).instants
    plan = plan_archive(Timeline.load(storage, base), SETTINGS)
    files = state_files(storage, base, plan.instants)
    write_archive(storage, base, files)                               # crash before deleting anything
    history = _each_instant_once(storage, base, expected)
    assert not any(history.is_archived(i) for i in history.instants)  # in both: counted as active

    result = archive(HudiTable(Location(base, storage)), SETTINGS)
    assert result.finished == plan.instants and result.archived == ()   # completed, nothing archived twice
    history = _each_instant_once(storage, base, expected)
    assert [i for i in history.instants if history.is_archived(i)] == list(plan.instants)
    assert len(archive_files(storage, base)) == 1


@pytest.mark.parametrize("deleted", range(1, 12))
def test_an_archive_interrupted_while_deleting_is_completed_by_the_next_run(table, deleted):
    base, _ = table
    storage = LocalStorage()
    expected = Timeline.load(storage, base).instants
    plan = plan_archive(Timeline.load(storage, base), SETTINGS)
    files = state_files(storage, base, plan.instants)
    order = deletion_order(files)
    assert len(order) == 12 and not any(f.instant.is_completed for f in order[:8])   # pending states first
    write_archive(storage, base, files)
    for f in order[:deleted]:                                         # crash after `deleted` deletions
        storage.delete(f.info.path)
    _each_instant_once(storage, base, expected)
    # the active timeline alone never shows an archived instant as pending
    assert all(i.is_completed for i in Timeline.load(storage, base).instants)

    assert finish_archive(HudiTable(Location(base, storage))) == tuple(i for i in plan.instants if i.file_name in
                                                  {f.info.name for f in order[deleted:]})
    history = _each_instant_once(storage, base, expected)
    assert [i for i in history.instants if history.is_archived(i)] == list(plan.instants)
    assert archive(HudiTable(Location(base, storage)), SETTINGS).archived == ()


def test_deleting_is_idempotent_and_markers_go_with_their_instant(table):
    base, _ = table
    storage = LocalStorage()
    marker = join(base, ".hoodie", ".temp", ts(1), "p0", "x.marker.CREATE")
    storage.write_bytes(marker, b"")
    plan = plan_archive(Timeline.load(storage, base), SETTINGS)
    files = state_files(storage, base, plan.instants)
    write_archive(storage, base, files)
    delete_archived(storage, base, files)
    delete_archived(storage, base, files)
    assert not storage.exists(marker)


def test_a_torn_archive_block_is_skipped(table):
    base, _ = table
    storage = LocalStorage()
    archive(HudiTable(Location(base, storage)), SETTINGS)
    path = archive_files(storage, base)[0].path
    data = storage.read_bytes(path)
    storage.write_bytes(path, data[:data.rindex(MAGIC) + 40])        # the last block torn
    archived = ArchivedTimeline.load(storage, base)
    assert len(archived.records) == 10 and archived.instants[:3] == tuple(commits(1, 2, 3))


def test_a_run_writes_the_next_version_of_the_log(table):
    base, _ = table
    storage = LocalStorage()
    storage.write_bytes(join(folder_path(base), ".commits_.archive.1_1-0-1"), b"")
    plan = plan_archive(Timeline.load(storage, base), SETTINGS)
    files = state_files(storage, base, plan.instants)
    path = write_archive(storage, base, files)
    assert path.endswith(".commits_.archive.2_1-0-1")


def test_archiving_on_an_object_store_survives_a_killed_archiver(s3_bucket):
    """On S3 (the loopback server): an archiver killed (-9) after writing the archive version
    leaves each instant readable once; the next run deletes the archived instants' files."""
    at = Location.parse(s3_bucket + "/t")
    storage, base = at.storage, at.uri
    _build(storage, base)
    expected = Timeline.load(storage, base).instants
    code = ("import os, signal; from tablespec.hudi.table import Location; "
            "from tablespec.hudi.timeline.active import Timeline; "
            "from tablespec.hudi.archive import ArchiveSettings, plan_archive; "
            "from tablespec.hudi.archive.active import state_files; from tablespec.hudi.archive.archiver import write_archive; "
            f"at = Location.parse({s3_bucket + '/t'!r}); storage, base = at.storage, at.uri; "
            "plan = plan_archive(Timeline.load(storage, base), ArchiveSettings(2, 3, 1)); "
            "write_archive(storage, base, state_files(storage, base, plan.instants)); "
            "os.kill(os.getpid(), signal.SIGKILL)")
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True).returncode == -9
    assert [f.version for f in archive_files(storage, base)] == [1]
    _each_instant_once(storage, base, expected)

    result = archive(HudiTable(Location(base, storage)), SETTINGS)
    assert result.finished == tuple(commits(1, 2, 3, 5)) and result.archived == ()
    assert [i.timestamp for i in Timeline.load(storage, base).instants] == [ts(n) for n in (4, 6, 7, 8)]
    history = _each_instant_once(storage, base, expected)
    assert [i for i in history.instants if history.is_archived(i)] == commits(1, 2, 3, 5)


# --- housekeeping ------------------------------------------------------------------------------

def test_undeclared_limits_follow_the_cleaner_instead_of_failing():
    assert ArchiveSettings.following(10) == ArchiveSettings(20, 30, 10)
    assert ArchiveSettings.following(24) == ArchiveSettings(25, 35, 24)
    assert ArchiveSettings.following(1, 2, 3) == ArchiveSettings(2, 3, 1)
    assert ArchiveSettings.from_properties({"hoodie.cleaner.commits.retained": "40"}) == ArchiveSettings(41, 51, 40)


def test_archiving_is_due_past_max_commits_cleans_or_rollbacks():
    assert not archive_due(timeline_of(*commits(1, 2, 3)), SETTINGS)
    assert archive_due(timeline_of(*commits(1, 2, 3, 4)), SETTINGS)
    assert archive_due(timeline_of(*commits(1, 2, 3, 4, action="clean"), *commits(5)), SETTINGS)


def test_housekeeping_archives_only_when_due_and_a_crash_left_run_is_found(table, tmp_path):
    base, _ = table
    storage = LocalStorage()
    handle = HudiTable(Location(base, storage))
    assert housekeep(handle, ArchiveSettings(5, 6, 1)) is None           # 5 commits: not due, nothing read
    assert not archive_files(storage, base) and interrupted(handle) == ()
    plan = plan_archive(Timeline.load(storage, base), SETTINGS)
    write_archive(storage, base, state_files(storage, base, plan.instants))   # a run killed after writing
    handle = HudiTable(Location(base, storage))
    assert interrupted(handle) == plan.instants
    done = housekeep(handle, SETTINGS)
    assert done is not None and done.finished == plan.instants and interrupted(handle) == ()


# --- merging small archive files (Hudi's hoodie.archive.merge.*) -------------------------------

def _one_version_per_instant(storage, base: str) -> ArchivedTimeline:
    """The archive of `_build`'s table (commits 1, 2, 3, 5) rewritten as one small version per
    instant, as four archiving runs leave it; returns what it reads as."""
    archive(HudiTable(Location(base, storage)), SETTINGS)
    first = archive_files(storage, base)[0]
    records = list(read_records(storage, first))
    storage.delete(first.path)
    for t in sorted({r["commitTime"] for r in records}):
        write_version(storage, base, [r for r in records if r["commitTime"] == t])
    assert [f.version for f in archive_files(storage, base)] == [1, 2, 3, 4]
    return ArchivedTimeline.load(storage, base)


def _same_archive(storage, base: str, before: ArchivedTimeline) -> None:
    after = ArchivedTimeline.load(storage, base)
    assert after.instants == before.instants
    for i in before.commits():
        assert after.commit_metadata(i).to_dict() == before.commit_metadata(i).to_dict()


def test_merge_candidates_are_the_newest_small_files_down_to_the_first_large_one():
    def f(version: int, size: int) -> ArchiveFile:
        return ArchiveFile(version, FileInfo(f"v{version}", f"/a/v{version}", size, 0, False))
    files = [f(1, 50), f(2, 500), f(3, 50), f(4, 100), f(5, 10)]
    assert [c.version for c in merge_candidates(files, 100)] == [3, 4, 5]   # 2 is large: 1 stays too
    assert merge_candidates([f(1, 500)], 100) == []


def test_small_archive_files_merge_into_the_next_version_once_there_are_enough(table):
    base, _ = table
    storage = LocalStorage()
    before = _one_version_per_instant(storage, base)
    assert merge_small_files(storage, base, "archived", MergeSettings(small_file_limit=10**6, batch=5)) is None
    merged = merge_small_files(storage, base, "archived", MergeSettings(small_file_limit=10**6, batch=4))
    assert merged is not None and merged.endswith(".commits_.archive.5_1-0-1")
    assert [f.version for f in archive_files(storage, base)] == [5]
    assert not storage.exists(join(folder_path(base), PLAN_NAME))
    _same_archive(storage, base, before)


def test_archiving_runs_keep_the_archive_folder_bounded(tmp_path):
    """Runs after runs: small files are merged before a run writes its own, so the archive folder
    holds the merged file and the runs since, and every archived instant reads back once."""
    storage, base = LocalStorage(), str(tmp_path / "t")
    writer = TimelineWriter(storage, base)
    settings = ArchiveSettings(2, 3, 1)
    counts = []
    for n in range(1, 60):
        _write_commit(writer, n)
        done = housekeep(HudiTable(Location(base, storage)), settings)
        assert done is None or not done.finished
        counts.append(len(archive_files(storage, base)))
    assert max(counts) <= 10 and counts[-1] < counts[-2] + 1
    history = History.of(HudiTable(Location(base, storage)))
    assert [i.timestamp for i in history.commits()] == [ts(n) for n in range(1, 60)]
    assert len(history.archived.commits()) >= 56   # all but the last few


@pytest.mark.parametrize("point", ["archive_merge_planned", "archive_merge_written",
                                   "archive_merge_candidates_deleted", "some_candidates_deleted"])
def test_a_killed_merge_is_undone_or_completed_by_the_next_run(table, point):
    base, _ = table
    storage = LocalStorage()
    before = _one_version_per_instant(storage, base)
    crash_at = "archive_merge_written" if point == "some_candidates_deleted" else point
    code = ("from tablespec.hudi.io import LocalStorage; "
            "from tablespec.hudi.archive.merge import MergeSettings, merge_small_files; "
            f"merge_small_files(LocalStorage(), {base!r}, 'archived', MergeSettings(10**6, 4))")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         env={**os.environ, "TABLESPEC_CRASH_AT": crash_at})
    assert run.returncode == -9, run.stderr
    if point == "some_candidates_deleted":                           # killed halfway through deleting
        storage.delete(archive_files(storage, base)[0].path)
    assert storage.exists(join(folder_path(base), PLAN_NAME))          # the plan goes last
    _same_archive(storage, base, before)                              # readers count each instant once meanwhile

    assert finish_merge(storage, base, "archived")
    # every candidate still there: the merged file may be incomplete, so it goes (Hudi's rule); else done
    undone = point in ("archive_merge_planned", "archive_merge_written")
    assert [f.version for f in archive_files(storage, base)] == ([1, 2, 3, 4] if undone else [5])
    assert not storage.exists(join(folder_path(base), PLAN_NAME))
    _same_archive(storage, base, before)


def test_a_torn_merge_plan_is_dropped(table):
    base, _ = table
    storage = LocalStorage()
    before = _one_version_per_instant(storage, base)
    storage.write_bytes(join(folder_path(base), PLAN_NAME), b"Obj\x01\x04")
    assert finish_merge(storage, base, "archived")
    assert [f.version for f in archive_files(storage, base)] == [1, 2, 3, 4]
    _same_archive(storage, base, before)


# --- the summary of archived clustering history ------------------------------------------------

def _write_clustering(writer: TimelineWriter, n: int, layout: Layout) -> None:
    plan = ClusteringPlan((ClusteringGroup((SliceInfo("p0", f"f{n - 1}-0", f"p0/f{n - 1}-0_0-1-2_{ts(n - 1)}.parquet"),)),),
                          layout)
    meta = CommitMetadata({"p0": [_stat("p0", f"c{n}-0", n)]}, extra_metadata={"schema": SCHEMA},
                          operation_type="CLUSTER", partition_to_replace_file_ids={"p0": [f"f{n - 1}-0"]})
    writer.complete(writer.start(writer.request("replacecommit", ts(n), encode_plan(plan))), meta)


def _clustered_history(tmp_path, runs: int) -> tuple[LocalStorage, str, Timeline]:
    """Commits 10, 20, ... (10 x runs), each followed by a clean, with a SORT clustering at 50 and a
    ZORDER one at 120, archived as they go."""
    storage, base = LocalStorage(), str(tmp_path / "t")
    writer, settings = TimelineWriter(storage, base), ArchiveSettings(2, 3, 1)
    for n in range(1, runs + 1):
        if n in (5, 12):
            _write_clustering(writer, 10 * n, Layout("SORT" if n == 5 else "ZORDER", ("id",)))
        else:
            _write_commit(writer, 10 * n)
        _write_clean(writer, 10 * n + 1, retain=10 * n)       # the cleaner passed every replacecommit
        housekeep(HudiTable(Location(base, storage)), settings)
    return storage, base, Timeline.load(storage, base)


def test_archiving_runs_keep_a_summary_equal_to_reading_the_archive(tmp_path):
    storage, base, active = _clustered_history(tmp_path, 25)
    full = ArchivedClusterings.of(ArchivedTimeline.load(storage, base), active)
    assert [(t, str(layout)) for t, layout in full.clusterings] == [(ts(50), "SORT(id)"), (ts(120), "ZORDER(id)")]
    assert full.commits_since == sum(1 for i in ArchivedTimeline.load(storage, base).commits() if i.timestamp > ts(120))
    assert read_summary(storage, base, "archived", archive_files(storage, base)) == full
    # the state takes it from the summary, not the archive: archive files of the same size but
    # unreadable do not change the answer
    for f in archive_files(storage, base):
        storage.write_bytes(f.path, b"\0" * f.info.size)
    assert archived_clusterings(storage, base, "archived", active) == full


def test_a_summary_that_does_not_describe_the_archive_is_not_used(tmp_path):
    storage, base, active = _clustered_history(tmp_path, 25)
    full = ArchivedClusterings.of(ArchivedTimeline.load(storage, base), active)
    assert archived_clusterings(storage, base, "archived", active) == full
    # another writer (a Hudi job) archived a version since: read from the archive, as it is
    records = [r for r in read_records(storage, archive_files(storage, base)[0])]
    write_version(storage, base, records)                                   # the same entries again
    assert read_summary(storage, base, "archived", archive_files(storage, base)) is None
    assert archived_clusterings(storage, base, "archived", active) == full  # repeated entries count once
    # and the next run records it anew
    writer = TimelineWriter(storage, base)
    for n in range(26, 30):
        _write_commit(writer, 10 * n)
    housekeep(HudiTable(Location(base, storage)), ArchiveSettings(2, 3, 1))
    active = Timeline.load(storage, base)
    assert read_summary(storage, base, "archived", archive_files(storage, base)) == \
        ArchivedClusterings.of(ArchivedTimeline.load(storage, base), active)


def _edits(summary: dict) -> list[dict]:
    """Edits of a summary tablespec wrote: invented or reordered clusterings, counts out of range or
    of the wrong type, a wrong shape; with its digest kept, or (the shape and ranges checked on
    their own) recomputed."""
    from tablespec.hudi.archive.summary import _digest
    body = {k: v for k, v in summary.items() if k != "digest"}
    changed = [
        {**body, "clusterings": [*body["clusterings"], ["29991231000000000", "HILBERT", ["id"]]]},
        {**body, "clusterings": body["clusterings"][::-1]},
        {**body, "commitsSinceClustering": 10 ** 400},
        {**body, "commitsSinceClustering": -1},
        {**body, "commitsSinceClustering": True},
        {**body, "clusterings": [["2026", "SORT", ["id"]]]},
        {**body, "clusterings": [[ts(50), "SORT", [5]]]},
        {**body, "clusterings": {"a": 1}},
    ]
    return [{**c, "digest": summary["digest"]} for c in changed] + [{**c, "digest": _digest(c)} for c in changed[1:]]


def test_an_edited_summary_is_not_trusted_and_the_archive_is_read(tmp_path):
    """An edit of the summary (invented clusterings, an overflowing count, a wrong shape) is noticed:
    the archive is read instead, never a traceback, never the invented history."""
    import json
    storage, base, active = _clustered_history(tmp_path, 25)
    full = ArchivedClusterings.of(ArchivedTimeline.load(storage, base), active)
    path = join(folder_path(base), ".tablespec_history.json")
    written = json.loads(storage.read_bytes(path))
    texts = [json.dumps(e).encode() for e in _edits(written)]
    texts += [storage.read_bytes(path).replace(b'"commitsSinceClustering":', b'"commitsSinceClustering":1e999,"x":'),
              b'{"version": 2, "files": NaN}', b"[" * 100_000, b"\xff"]
    for text in texts:
        storage.write_bytes(path, text)
        assert read_summary(storage, base, "archived", archive_files(storage, base)) is None, text[:200]
        assert archived_clusterings(storage, base, "archived", active) == full

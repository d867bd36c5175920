"""Checking a table's base files against its timeline: missing, truncated, orphan; bucket layout.
Tables written here with real parquet files (test_hudi_clean's writer), and Apache Hudi's own."""
import os

import pytest
from _support import storage_and_base
from test_hudi_clean import ST, A, B, _plan, _table, _updates, _write

from tablespec.errors import UnsupportedTableError
from tablespec.hudi.formats.naming import BaseFileName, bucket_file_id, new_file_id, write_token
from tablespec.hudi.formats.partition import PARTITION_METAFILE, write_partition_metadata
from tablespec.hudi.fs_view import FileSystemView
from tablespec.hudi.io import join
from tablespec.hudi.services.check import (
    INDEX,
    MISSING,
    ORPHAN,
    TRUNCATED,
    check_buckets,
    check_files,
)
from tablespec.hudi.services.clean import CLEAN_METADATA_SCHEMA, execute_clean
from tablespec.hudi.services.rollback import rollback
from tablespec.hudi.table import HudiTable, Location
from tablespec.hudi.timeline.active import Timeline, TimelineWriter, avro_record
from tablespec.hudi.timeline.instant import Instant, new_instant_time
from tablespec.importer import spec_document
from tablespec.state import observe


def check(base):
    return check_files(ST, base, Timeline.load(ST, base))


def kinds(base) -> list[tuple[str, str]]:
    return [(f.kind, f.file) for f in check(base).findings]


def rel(partition, file_id, instant, token=write_token(0, 1, 1)) -> str:
    return f"{partition}/{BaseFileName(file_id, token, instant).format()}"


def test_a_table_as_written_checks_clean(tmp_path):
    base = _table(tmp_path)
    commits = _updates(base, 3, new_file_id(), new_file_id())
    result = check(base)
    assert result.findings == []
    # every slice counts while no clean ran: time travel to every commit reads them
    assert (result.commits, result.files, result.pending_files) == (3, 4, 0)
    assert result.describe() == "4 base file(s) of 3 commit(s) checked"
    assert len(commits) == 3


def test_a_missing_latest_base_file_is_reported_by_name(tmp_path):
    base = _table(tmp_path)
    fg_a, fg_b = new_file_id(), new_file_id()
    commits = _updates(base, 2, fg_a, fg_b)
    latest = rel(A, fg_a, commits[1])
    os.remove(join(base, latest))
    [finding] = check(base).findings
    assert (finding.kind, finding.partition, finding.file, finding.instant) == (MISSING, A, latest, commits[1])
    assert "latest slice" in finding.message and fg_a in finding.message and "older slice" in finding.message
    # an older slice time travel still reads counts too
    os.remove(join(base, rel(B, fg_b, commits[0])))
    assert kinds(base) == [(MISSING, latest), (MISSING, rel(B, fg_b, commits[0]))]
    os.remove(join(base, rel(A, fg_a, commits[0])))
    finding = check(base).findings[0]
    assert finding.file == rel(A, fg_a, commits[0]) and "time travel" in finding.message


def test_cleaned_slices_and_replaced_groups_are_not_missing(tmp_path):
    base = _table(tmp_path)
    fg_a, fg_b, fg_c = new_file_id(), new_file_id(), new_file_id()
    c1 = _write(base, {(A, fg_a): [("1", 1)], (B, fg_b): [("3", 3)]}, operation="INSERT")
    _write(base, {(A, fg_a): [("1", 2)]})
    c3 = _write(base, {(A, fg_c): [("1", 2)]}, action="replacecommit", operation="CLUSTER", replaced={A: [fg_a]})
    _write(base, {(A, fg_c): [("1", 4)]})
    c5 = _write(base, {(A, fg_c): [("1", 5)]})
    c6 = _write(base, {(A, fg_c): [("1", 6)]})
    assert check(base).files == 7  # nothing cleaned yet: every slice is read by time travel
    # retains from c5: fg_a goes whole, and fg_c's slice of c3 (c4's is the newest before c5: Hudi keeps it)
    execute_clean(HudiTable.open(base), _plan(base, 2))
    assert not os.path.exists(join(base, rel(A, fg_c, c3)))
    result = check(base)
    assert result.findings == [] and result.files == 4  # fg_b's only slice, fg_c's slices of c4, c5 and c6
    # the slice time travel to the earliest retained commit reads must be there
    os.remove(join(base, rel(A, fg_c, c5)))
    [finding] = check(base).findings
    assert (finding.kind, finding.file) == (MISSING, rel(A, fg_c, c5)) and f"(>= {c5})" in finding.message
    assert c1 < c6


def test_a_clean_without_a_commit_window_records_what_it_deleted(tmp_path):
    """Hudi's KEEP_LATEST_FILE_VERSIONS cleans record no earliest commit to retain: the files they
    record as deleted are not missing; a latest slice always is, whatever a clean recorded."""
    base = _table(tmp_path)
    fg_a = new_file_id()
    commits = _updates(base, 3, fg_a)
    old = [rel(A, fg_a, c) for c in commits[:2]]
    for p in old:
        os.remove(join(base, p))
    assert [f.file for f in check(base).findings] == old
    names = [p.split("/")[1] for p in old]
    metadata = {"startCleanTime": "", "timeTakenInMillis": 1, "totalFilesDeleted": 2, "earliestCommitToRetain": "",
                "partitionMetadata": {A: {"partitionPath": A, "policy": "KEEP_LATEST_FILE_VERSIONS",
                                          "deletePathPatterns": names, "successDeleteFiles": names,
                                          "failedDeleteFiles": []}}}
    ts = new_instant_time(commits[-1])
    metadata["startCleanTime"] = ts
    writer = TimelineWriter(ST, base)
    writer.complete(writer.start(writer.request("clean", ts)), avro_record(CLEAN_METADATA_SCHEMA, metadata))
    assert check(base).findings == []
    os.remove(join(base, rel(A, fg_a, commits[2])))
    assert kinds(base) == [(MISSING, rel(A, fg_a, commits[2]))]


def test_truncated_or_damaged_base_files(tmp_path):
    base = _table(tmp_path)
    fg_a, fg_b = new_file_id(), new_file_id()
    [c1] = _updates(base, 1, fg_a, fg_b)
    a, b = rel(A, fg_a, c1), rel(B, fg_b, c1)
    size = os.path.getsize(join(base, a))
    with open(join(base, a), "r+b") as f:
        f.truncate(size - 100)
    with open(join(base, b), "r+b") as f:  # same size, footer magic overwritten
        f.seek(-4, os.SEEK_END)
        f.write(b"XXXX")
    [ta, tb] = check(base).findings
    assert (ta.kind, ta.file) == (TRUNCATED, a)
    assert f"written by commit {c1}: {size - 100} bytes, but its commit recorded {size}" in ta.message
    assert (tb.kind, tb.file) == (TRUNCATED, b) and "no PAR1 magic at its end" in tb.message


def test_orphans_named_with_unknown_instants_or_unlisted_by_their_commit(tmp_path):
    base = _table(tmp_path)
    fg_a = new_file_id()
    [c1] = _updates(base, 1, fg_a)
    data = ST.read_bytes(join(base, rel(A, fg_a, c1)))
    made_up = new_instant_time(c1)
    stray = rel(A, new_file_id(), made_up)
    retried = rel(A, fg_a, c1, write_token(0, 1, 2))  # a second attempt's file the commit does not list
    for p in (stray, retried):
        ST.write_bytes(join(base, p), data)
    found = {f.file: f for f in check(base).findings}
    assert {f.kind for f in found.values()} == {ORPHAN} and set(found) == {stray, retried}
    assert f"instant {made_up} is no completed commit on the timeline" in found[stray].message
    assert "readers ignore it" in found[stray].message
    assert f"completed commit {c1}, which does not list it" in found[retried].message


def test_files_of_pending_instants_are_counted_not_reported(tmp_path):
    base = _table(tmp_path)
    fg_a = new_file_id()
    _updates(base, 1, fg_a)
    pending = _write(base, {(A, fg_a): [("1", 9)], (B, new_file_id()): [("3", 9)]}, complete=False)
    result = check(base)
    assert result.findings == [] and result.pending_files == 2
    assert "2 file(s) of pending instants not checked" in result.describe()
    # rolled back, its files go; one put back is an orphan of a rolled-back instant
    leftover = ST.read_bytes(join(base, rel(A, fg_a, pending)))
    done = rollback(HudiTable.open(base), Instant(pending, "commit", "inflight"))
    ST.write_bytes(join(base, rel(A, fg_a, pending)), leftover)
    [finding] = check(base).findings
    assert finding.kind == ORPHAN and f"rollback {done.rollback_instant}" in finding.message


def test_files_older_than_the_timeline_are_archived_only_when_there_is_an_archive(tmp_path):
    base = _table(tmp_path)
    fg_a = new_file_id()
    [c1] = _updates(base, 1, fg_a)
    old = rel(A, new_file_id(), "20200101000000000")
    ST.write_bytes(join(base, old), ST.read_bytes(join(base, rel(A, fg_a, c1))))
    [finding] = check(base).findings
    assert (finding.kind, finding.file) == (ORPHAN, old)
    assert "readers take the file for part of the table" in finding.message
    ST.write_bytes(join(base, ".hoodie", "archived", ".commits_.archive.1_1-0-1"), b"archived instants")
    assert check(base).findings == []  # its commit may be archived (the archive is not read)


def test_a_partition_without_its_metadata_file_is_invisible(tmp_path):
    base = _table(tmp_path)
    _updates(base, 1, new_file_id(), new_file_id())
    os.remove(join(base, B, PARTITION_METAFILE))
    [finding] = check(base).findings
    assert (finding.kind, finding.file) == (MISSING, f"{B}/{PARTITION_METAFILE}")
    assert "readers do not list it, so its 1 base file(s) are invisible" in finding.message


def test_bucket_layout_of_file_groups(tmp_path):
    base = _table(tmp_path)
    good, far, twin = bucket_file_id(0), bucket_file_id(5), bucket_file_id(0)
    plain = "plain-" + new_file_id()  # a uuid may start with 8 digits: a bucket number by chance
    _write(base, {(A, good): [("1", 1)], (B, far): [("2", 2)]})

    def found():
        timeline = Timeline.load(ST, base)
        return check_buckets(FileSystemView.build(ST, base, timeline), lambda p: 4 if p == A else 8)
    assert found() == []
    _write(base, {(B, bucket_file_id(5)): [("3", 3)]})  # a second file group for bucket 5
    [dup] = found()
    assert dup.kind == INDEX and "bucket 5" in dup.message and "two file groups" in dup.message
    base = _table(tmp_path / "second")
    _write(base, {(A, good): [("1", 1)], (A, twin): [("2", 2)], (A, far): [("3", 3)], (B, plain): [("4", 4)]})
    messages = sorted(f.message for f in found())
    assert any("is bucket 5, but partition 'part=a' has 4 bucket(s)" in m for m in messages)
    assert any("bucket 0 of partition 'part=a' has two file groups" in m for m in messages)
    assert any(f"file group {plain} has no bucket number" in m for m in messages)
    assert len(messages) == 3


def test_tables_apache_hudi_wrote_check_clean(fixture_table, any_name):
    st, base = storage_and_base(str(fixture_table(any_name)))
    result = check_files(st, base, Timeline.load(st, base))
    assert result.findings == [] and result.commits >= (0 if "empty" in any_name else 1)


def test_a_missing_file_of_a_table_apache_hudi_wrote(fixture_table):
    st, base = storage_and_base(str(fixture_table("cow_v6_complexkeygen_hivestyle")))
    timeline = Timeline.load(st, base)
    latest = timeline.commit_metadata(timeline.commits()[-1]).write_stats()[0]
    os.remove(join(base, latest.path))
    [finding] = check_files(st, base, timeline).findings
    assert (finding.kind, finding.file) == (MISSING, latest.path)


def test_partitions_under_a_partitioned_root_keep_their_markers(tmp_path):
    """A table rewritten unpartitioned (replace_table) marks its root a partition; the old
    partitions, still read by time travel, keep their markers: nothing is missing."""
    base = _table(tmp_path)
    [c1] = _updates(base, 1, new_file_id(), new_file_id())
    write_partition_metadata(ST, base, "", new_instant_time(c1))
    assert check(base).findings == []


def test_import_tells_a_bucket_layout_from_random_ids_that_start_with_digits(tmp_path):
    """Import refuses a bucket layout Hudi kept no index for, but a random file group id that happens
    to start with eight digits (2% of them do) is a number in the millions, not a bucket."""
    def imported(base):
        return spec_document(observe(HudiTable.open(base)), Location.parse(str(tmp_path)))
    random_digits = _table(tmp_path / "random")
    _write(random_digits, {(A, "57561635-1a2b-4c3d-8e9f-0123456789ab-0"): [("1", 1)]})
    assert imported(random_digits)["spec"]["index"]["type"] == "SIMPLE"
    bucketed = _table(tmp_path / "bucketed")
    _write(bucketed, {(A, bucket_file_id(3)): [("1", 1)]})
    with pytest.raises(UnsupportedTableError, match="carries a bucket number"):
        imported(bucketed)

from datetime import UTC, datetime, timedelta

import pytest

from tablespec.errors import HudiFormatError
from tablespec.hudi.timeline.instant import Instant, format_instant_time, new_instant_time, parse_instant_time

T = "20240418172802262"


@pytest.mark.parametrize("name,action,state", [
    (f"{T}.commit.requested", "commit", "requested"),
    (f"{T}.inflight", "commit", "inflight"),
    (f"{T}.commit", "commit", "completed"),
    (f"{T}.replacecommit.requested", "replacecommit", "requested"),
    (f"{T}.replacecommit.inflight", "replacecommit", "inflight"),
    (f"{T}.replacecommit", "replacecommit", "completed"),
    (f"{T}.deltacommit.requested", "deltacommit", "requested"),
    (f"{T}.deltacommit.inflight", "deltacommit", "inflight"),
    (f"{T}.deltacommit", "deltacommit", "completed"),
    (f"{T}.clean.requested", "clean", "requested"),
    (f"{T}.clean.inflight", "clean", "inflight"),
    (f"{T}.clean", "clean", "completed"),
    (f"{T}.rollback.requested", "rollback", "requested"),
    (f"{T}.rollback", "rollback", "completed"),
    (f"{T}.compaction.requested", "compaction", "requested"),
    (f"{T}.compaction.inflight", "compaction", "inflight"),
    (f"{T}.logcompaction.inflight", "logcompaction", "inflight"),
    (f"{T}.restore.inflight", "restore", "inflight"),
    (f"{T}.savepoint.inflight", "savepoint", "inflight"),
    (f"{T}.savepoint", "savepoint", "completed"),
    (f"{T}.indexing.requested", "indexing", "requested"),
    (f"{T}.schemacommit", "schemacommit", "completed"),
    ("20240418172802.commit", "commit", "completed"),  # legacy second-precision instant
])
def test_parse_and_format_round_trip(name, action, state):
    instant = Instant.parse(name)
    assert (instant.action, instant.state) == (action, state)
    assert instant.file_name == name


@pytest.mark.parametrize("name", [
    "hoodie.properties", "hoodie.properties.backup", "archived", ".aux", f".{T}.commit.abc.tmp",
])
def test_parse_ignores_non_timeline_files(name):
    assert Instant.parse(name) is None


@pytest.mark.parametrize("name", [
    f"{T}.commit.inflight", f"{T}.compaction", f"{T}.savepoint.requested", f"{T}.unknown",
    f"{T}", "2024041817280226.commit", f"{T}_20240418172802999.commit", "2026112800182X509.commit",
])
def test_a_damaged_timeline_file_name_is_refused_naming_the_file(name):
    """Skipped, a completed instant whose name was damaged would read as pending (and be rolled back)."""
    with pytest.raises(HudiFormatError, match=rf"^/t/.hoodie/{name}: not a timeline file name"):
        Instant.parse(name, where=f"/t/.hoodie/{name}")


def test_every_fixture_timeline_file_parses_and_formats_back(fixture_table, any_name):
    names = [p.name for p in (fixture_table(any_name) / ".hoodie").iterdir() if p.is_file()]
    parsed = {n: Instant.parse(n) for n in names}
    assert {n for n, i in parsed.items() if i is None} <= {"hoodie.properties", ".DS_Store"}
    for name, instant in parsed.items():
        if instant is not None:
            assert instant.file_name == name


def test_ordering_by_timestamp_then_state():
    a = [Instant("20240101000000002", "commit", "requested"), Instant("20240101000000001", "commit", "completed"),
         Instant("20240101000000001", "commit", "inflight"), Instant("20240101000000001", "commit", "requested")]
    assert [str(i) for i in sorted(a)] == [
        "20240101000000001.commit[requested]", "20240101000000001.commit[inflight]",
        "20240101000000001.commit[completed]", "20240101000000002.commit[requested]"]


def test_invalid_instants_are_refused():
    with pytest.raises(HudiFormatError, match="17 digits"):
        Instant("2024", "commit")
    with pytest.raises(HudiFormatError, match="no completed state"):
        Instant(T, "compaction", "completed")
    with pytest.raises(HudiFormatError, match="no requested state"):
        Instant(T, "savepoint", "requested")


def test_compaction_completes_as_commit():
    assert Instant(T, "compaction", "inflight").to("completed") == Instant(T, "commit", "completed")
    assert Instant(T, "logcompaction", "inflight").to("completed").file_name == f"{T}.deltacommit"


def test_new_instant_time_is_utc_now_with_millis():
    before = format_instant_time(datetime.now(UTC) - timedelta(seconds=1))
    ts = new_instant_time()
    after = format_instant_time(datetime.now(UTC) + timedelta(seconds=1))
    assert len(ts) == 17 and ts.isdigit() and before < ts < after


def test_new_instant_time_is_strictly_after_given_instant():
    future = format_instant_time(datetime.now(UTC) + timedelta(days=1))
    assert new_instant_time(future) == format_instant_time(parse_instant_time(future) + timedelta(milliseconds=1))
    assert new_instant_time("20240101235959999") > "20240101235959999"
    assert new_instant_time("99991231235959") == "99991231235959001"
    assert new_instant_time("20000101000000000") > "20000101000000000"


def test_parse_instant_time_rejects_non_dates():
    with pytest.raises(HudiFormatError, match="not a date"):
        parse_instant_time("20241399000000000")

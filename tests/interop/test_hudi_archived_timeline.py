"""The archived timeline between Apache Hudi 0.15 and tablespec: tablespec reads what Hudi's
archiver wrote (instants and commit metadata as Hudi's archived timeline reports them), plans
what Hudi's archiver archives, and Hudi reads what tablespec archived (its timeline API lists
the instants; snapshot and time travel read as before; its own archiver appends to the log)."""
from __future__ import annotations

import json
import shutil

import pytest
from helpers import make_table
from interop_support import HISTORY_DDL as DDL
from interop_support import history_spec, hudi_df, hudi_rows, hudi_write

from tablespec.hudi.archive import ArchivedTimeline, ArchiveSettings, History, archive, plan_archive
from tablespec.hudi.archive.log import archive_files
from tablespec.hudi.archive.plan import read_bounds
from tablespec.hudi.formats.commit import CommitMetadata
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.mdt import compaction
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import Timeline
from tablespec.hudi_options import hudi_write_options

ARCHIVING = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1"}
SETTINGS = ArchiveSettings.from_properties(ARCHIVING)
HUDI_TABLE = {"hoodie.table.name": "archived", "hoodie.datasource.write.recordkey.field": "id",
              "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
              "hoodie.metadata.enable": "false", **ARCHIVING,
              "hoodie.upsert.shuffle.parallelism": "1", "hoodie.insert.shuffle.parallelism": "1"}

SPEC = history_spec("archived", "interop/archived", database="interop", retention="{keepCommits: 1}",
                    spec_lines=("index: {type: SIMPLE}",))


def _hudi_commits(spark, base: str, n: int, **options: str) -> None:
    """`n` upserts through Apache Hudi's datasource, two rows each, spread over two partitions."""
    for i in range(n):
        df = spark.createDataFrame([(j, i, f"p{j % 2}") for j in range(i, i + 2)], "id int, ts int, p string")
        hudi_write(df, base, {**HUDI_TABLE, **options})


def _meta_client(spark, base: str):
    jvm = spark._jvm
    conf = jvm.org.apache.hudi.storage.hadoop.HadoopStorageConfiguration(spark._jsc.hadoopConfiguration())
    return jvm.org.apache.hudi.common.table.HoodieTableMetaClient.builder().setConf(conf).setBasePath(base).build()


def _hudi_archived(spark, base: str) -> tuple[set[tuple[str, str, str]], dict[str, CommitMetadata]]:
    """Apache Hudi's archived timeline of the table: every archived (time, action, state), and each
    archived completed commit's metadata as Hudi parses it."""
    timeline = _meta_client(spark, base).getArchivedTimeline()
    timeline.loadCompletedInstantDetailsInMemory()
    model = spark._jvm.org.apache.hudi.common.model
    instants, commits = set(), {}
    for instant in timeline.getInstants().toArray():
        ts, action, state = str(instant.getTimestamp()), str(instant.getAction()), str(instant.getState().name())
        instants.add((ts, action, state))
        if state == "COMPLETED" and action in ("commit", "replacecommit"):
            cls = model.HoodieReplaceCommitMetadata if action == "replacecommit" else model.HoodieCommitMetadata
            details = timeline.getInstantDetails(instant).get()
            parsed = cls.fromBytes(details, cls().getClass())
            commits[ts] = CommitMetadata.from_json(str(parsed.toJsonString()))
    return instants, commits


def _ours(base: str) -> tuple[set[tuple[str, str, str]], dict[str, CommitMetadata]]:
    """The same, as tablespec reads the archive."""
    archived = ArchivedTimeline.load(LocalStorage(), base)
    instants = {(i.timestamp, i.action, i.state.upper()) for i in archived.records}
    return instants, {i.timestamp: archived.commit_metadata(i) for i in archived.commits()}


def _stats(meta: CommitMetadata) -> dict[str, list[tuple]]:
    return {p: sorted((s.file_id, s.path, s.prev_commit, s.num_writes, s.num_inserts, s.num_update_writes,
                       s.num_deletes, s.total_write_bytes, s.file_size_in_bytes) for s in stats)
            for p, stats in meta.partition_to_write_stats.items()}


def _assert_same_archive(spark, base: str) -> set[tuple[str, str, str]]:
    hudi_instants, hudi_commits = _hudi_archived(spark, base)
    our_instants, our_commits = _ours(base)
    assert our_instants == hudi_instants and hudi_instants
    assert our_commits.keys() == hudi_commits.keys()
    for ts, ours in our_commits.items():
        theirs = hudi_commits[ts]
        assert _stats(ours) == _stats(theirs), ts
        assert ours.operation_type == theirs.operation_type and ours.schema == theirs.schema and ours.schema
        assert ours.partition_to_replace_file_ids == theirs.partition_to_replace_file_ids
    return our_instants


def _instant_files(base) -> list[str]:
    return sorted(p.name for p in (base / ".hoodie").iterdir() if p.is_file() and p.name[:1].isdigit())


@pytest.fixture(scope="module")
def hudi_archived(spark_session, tmp_path_factory):
    """Seven upserts through Apache Hudi, which archived as it went (its cleans too), written once for
    the module; each test takes a copy (`archived_copy`)."""
    spark, missing = spark_session   # the `hudi` fixture's session, for the whole module
    if missing:
        pytest.skip(f"Apache Hudi is not available: {missing}")
    base = tmp_path_factory.mktemp("hudi-archived") / "archived"
    _hudi_commits(spark, str(base), 7)
    return base


@pytest.fixture
def archived_copy(hudi_archived, tmp_path):
    return shutil.copytree(hudi_archived, tmp_path / "archived")


def test_tablespec_reads_the_archived_timeline_hudi_wrote(hudi, archived_copy):
    base = str(archived_copy)
    instants = _assert_same_archive(hudi, base)
    assert {a for _, a, _ in instants} == {"commit", "clean"}

    history = History.of(HudiTable.open(base))
    assert len(history.commits()) == 7 and len(history.instants) == len({(i.timestamp, i.action) for i in history.instants})
    assert history.commits()[0].timestamp in {ts for ts, _, _ in instants}
    # Hudi archives after every write: on the timeline it left, tablespec's plan archives nothing more
    table = HudiTable.open(base)
    assert plan_archive(table.timeline, SETTINGS, read_bounds(table)).empty


def test_tablespec_archives_what_hudis_archiver_archives(hudi, tmp_path):
    """Seven Hudi commits (and its cleans) with archiving off; then Hudi's `archive_commits` on one
    copy and tablespec's archiver on another move the same instants."""
    written = tmp_path / "written"
    _hudi_commits(hudi, str(written), 7, **{"hoodie.archive.automatic": "false"})
    by_hudi, by_tablespec = tmp_path / "by_hudi", tmp_path / "by_tablespec"
    shutil.copytree(written, by_hudi)
    shutil.copytree(written, by_tablespec)

    hudi.sql(f"call archive_commits(path => '{by_hudi}', min_commits => 2, max_commits => 3, "
             f"retain_commits => 1, enable_metadata => false)").collect()
    result = archive(HudiTable.open(str(by_tablespec)), SETTINGS)

    assert result.archived and _instant_files(by_tablespec) == _instant_files(by_hudi)
    assert _ours(str(by_tablespec))[0] == _ours(str(by_hudi))[0]


def _tablespec_table(spark, tmp_path, commits: int):
    """A table tablespec wrote: `commits` upserts through the Python API (one small helper, so a
    change of that API touches one place)."""
    table = make_table(spark, tmp_path, SPEC)
    for i in range(commits):
        table.write(spark.createDataFrame([(f"k{j}", i, i, f"d{j % 2}") for j in range(i, i + 3)], DDL), "upsert")
    return table


def _compact_metadata_table(base: str):
    """Compact the metadata table as a Hudi writer with hoodie.metadata.compact.max.delta.commits=2
    would (tablespec, like Hudi's default, compacts after 10 deltacommits). Hudi 0.15 archives
    nothing at or after the metadata table's latest compaction, nothing at all before its first:
    this lets a few commits archive without ten writes."""
    return compaction.compact_if_due(HudiTable.open(base), max_delta_commits=2)


def _data(rows: list[tuple]) -> list[tuple]:
    return sorted(tuple(v for k, v in r if not k.startswith("_hoodie")) for r in rows)


def test_hudi_reads_what_tablespec_archived_and_archives_after_it(hudi, tmp_path):
    table = _tablespec_table(hudi, tmp_path, 5)
    base, storage = table.location, LocalStorage()
    commits = [i.timestamp for i in Timeline.load(storage, base).commits()]
    before = hudi_rows(hudi, base)
    as_of = commits[3]                                       # stays active
    before_as_of = hudi_df(hudi, base, **{"as.of.instant": as_of}).count()

    # the metadata table (tablespec's tables keep one) has not compacted yet: nothing archives, as in Hudi
    table_now = HudiTable.open(base)
    assert plan_archive(table_now.timeline, SETTINGS, read_bounds(table_now)).empty
    assert _compact_metadata_table(base) is not None
    result = archive(HudiTable.open(base), SETTINGS)
    assert [i.timestamp for i in result.archived] == commits[:3]
    assert [i.timestamp for i in Timeline.load(storage, base).commits()] == commits[3:]
    instants = _assert_same_archive(hudi, base)              # Hudi's timeline API lists what we archived
    assert {(ts, s) for ts, _, s in instants} == {(ts, s) for ts in commits[:3] for s in ("REQUESTED", "INFLIGHT", "COMPLETED")}
    assert hudi_rows(hudi, base) == before
    assert hudi_df(hudi, base, **{"as.of.instant": as_of}).count() == before_as_of
    assert _data(hudi_rows(hudi, base)) == _data(
        [tuple(sorted(r.asDict().items())) for r in table.read().collect()])

    # a Hudi job (the options `hudi-options` gives, archiving on) writes twice and archives itself,
    # as the next version of the same log
    options = {**hudi_write_options(table.spec, HudiTable.open(base)), **ARCHIVING, "hoodie.archive.automatic": "true",
               "hoodie.datasource.write.operation": "upsert"}
    for i in (5, 6):
        hudi.createDataFrame([(f"k{i}", i, i, "d0")], DDL).write.format("hudi").options(**options).mode("append").save()
    assert [f.version for f in archive_files(storage, base)] == [1, 2]
    _assert_same_archive(hudi, base)
    history = History.of(HudiTable.open(base))
    assert len(history.commits()) == 7 and len(Timeline.load(storage, base).commits()) == 2
    assert json.loads(history.commit_metadata(history.commits()[0]).schema)["fields"]
    assert _data(hudi_rows(hudi, base)) == _data([tuple(sorted(r.asDict().items())) for r in table.read().collect()])


def test_a_table_archiving_as_its_spec_says_reads_in_hudi_and_takes_hudi_upserts(hudi, tmp_path):
    """tablespec's writes archive by the spec (retention.archive 2/3); Apache Hudi lists the archive,
    reads the table and time travels as tablespec does; a Hudi job with exactly the `hudi-options`
    options (archiving on, the spec's limits) upserts and archives into the same log."""
    from interop_support import assert_readers_agree

    from tablespec.table import Table
    spec_text = SPEC.replace("retention: {keepCommits: 1}", "retention: {keepCommits: 1, archive: {minCommits: 2, maxCommits: 3}}")
    table = make_table(hudi, tmp_path, spec_text)
    # nine writes: the metadata table (its initializing deltacommit and one per write) compacts at the
    # ninth (Hudi's default, 10 deltacommits), and only then does archiving run past it
    written = [table.write(hudi.createDataFrame([(f"k{j}", i, i, f"d{j % 2}") for j in range(i, i + 3)], DDL),
                           "upsert").instant for i in range(9)]
    base, storage = table.location, LocalStorage()
    active = [i.timestamp for i in Timeline.load(storage, base).commits()]
    assert len(active) <= 3 and archive_files(storage, base)
    instants = _assert_same_archive(hudi, base)
    assert {ts for ts, a, s in instants if a == "commit" and s == "COMPLETED"} == set(written) - set(active)
    assert_readers_agree(hudi, table)
    as_of = active[0]
    assert _data(hudi_rows(hudi, base, **{"as.of.instant": as_of})) == _data(
        [tuple(sorted(r.asDict().items())) for r in table.read(as_of=as_of).collect()])

    options = {**hudi_write_options(table.spec, HudiTable.open(base)), "hoodie.datasource.write.operation": "upsert"}
    assert options["hoodie.archive.automatic"] == "true" and options["hoodie.keep.max.commits"] == "3"
    versions = len(archive_files(storage, base))
    for i in (9, 10, 11):
        hudi_write(hudi.createDataFrame([(f"k{i}", i, i, "d0")], DDL), base, options)
    assert len(archive_files(storage, base)) > versions          # Hudi archived, appending to the log
    _assert_same_archive(hudi, base)
    history = History.of(HudiTable.open(base))
    assert set(written) <= {i.timestamp for i in history.commits()} and len(Timeline.load(storage, base).commits()) <= 3
    assert_readers_agree(hudi, Table(table.spec, base, hudi))


def test_a_table_hudi_archived_imports_and_plans_clean(hudi, archived_copy, tmp_path, capsys):
    from interop_support import cli
    base = archived_copy
    assert archive_files(LocalStorage(), str(base))
    code, out, err = cli(capsys, "import", str(base), "--warehouse", str(tmp_path))
    assert code == 0, err
    spec_file = tmp_path / "archived.yaml"
    spec_file.write_text(out)
    # Hudi wrote it with its metadata table off: tablespec builds one (and plans nothing else)
    code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path), "--format", "json")
    assert code == 0 and [a["kind"] for t in json.loads(out)["tables"] for a in t["actions"]] == \
        ["build_metadata_table"], out + err


def test_hudi_reads_an_archive_tablespec_merged_and_merges_after_it(hudi, tmp_path):
    """Small archive files merged by tablespec (Hudi's merge, hoodie.archive.merge.*): Hudi's
    timeline API lists the same archived instants, reads and time travel agree; a Hudi job that
    merges small archive files itself takes the merged file in with its own."""
    from interop_support import assert_readers_agree

    from tablespec.hudi.archive.log import folder_path
    from tablespec.hudi.archive.merge import PLAN_NAME, MergeSettings, merge_small_files
    from tablespec.hudi.io import join
    spec_text = SPEC.replace("retention: {keepCommits: 1}", "retention: {keepCommits: 1, archive: {minCommits: 2, maxCommits: 3}}")
    table = make_table(hudi, tmp_path, spec_text)
    for i in range(6):
        table.write(hudi.createDataFrame([(f"k{j}", i, i, f"d{j % 2}") for j in range(i, i + 3)], DDL), "upsert")
        _compact_metadata_table(table.location)        # so that the writes' archiving runs go past it
    base, storage = table.location, LocalStorage()
    versions = [f.version for f in archive_files(storage, base)]
    assert len(versions) >= 2
    before = _assert_same_archive(hudi, base)
    active = [i.timestamp for i in Timeline.load(storage, base).commits()]
    as_of = _data(hudi_rows(hudi, base, **{"as.of.instant": active[0]}))

    assert merge_small_files(storage, base, "archived", MergeSettings(batch=2)) is not None
    assert [f.version for f in archive_files(storage, base)] == [versions[-1] + 1]
    assert _assert_same_archive(hudi, base) == before
    assert_readers_agree(hudi, table)
    assert _data(hudi_rows(hudi, base, **{"as.of.instant": active[0]})) == as_of == _data(
        [tuple(sorted(r.asDict().items())) for r in table.read(as_of=active[0]).collect()])

    options = {**hudi_write_options(table.spec, HudiTable.open(base)), "hoodie.datasource.write.operation": "upsert",
               "hoodie.archive.merge.enable": "true", "hoodie.archive.merge.files.batch.size": "2",
               "hoodie.metadata.compact.max.delta.commits": "2"}
    for i in (6, 7, 8, 9):
        hudi_write(hudi.createDataFrame([(f"k{i}", i, i, "d0")], DDL), base, options)
    after = _assert_same_archive(hudi, base)
    assert before < after and not storage.exists(join(folder_path(base), PLAN_NAME))
    assert len(archive_files(storage, base)) < len(versions) + 2    # Hudi merged too
    history = History.of(HudiTable.open(base))
    assert {ts for ts, _, _ in after} <= {i.timestamp for i in history.instants}
    assert_readers_agree(hudi, table)

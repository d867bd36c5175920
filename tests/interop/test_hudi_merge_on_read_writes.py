"""tablespec writes deltacommits into a merge-on-read table (version 6, BUCKET index) that Apache
Hudi 0.15 created: after each one Hudi's snapshot and read-optimized reads equal tablespec's, Hudi
writes on top and tablespec reads what it wrote; a deltacommit killed before it completed is
rolled back by the next write as Hudi 0.15 rolls one back (a rollback command block in a new log
file of each file group it appended to) and reads as before.

The layout, as Hudi 0.15 writes it (measured): a bucket's changes go to a new log file of its
file group (`.<file id>_<base instant>.log.<next version>_<write token>`) in every deltacommit, an
Avro data block for upserts and inserts, a delete block for deletes; a bucket not written yet gets
a base file."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from _support import ROOT
from helpers import hudi_rs_rows, tablespec_rows
from interop_support import SHORT_LIVED_JVM, apply_until_done, hudi_rows, hudi_write, save_spec
from record_positions import decode_positions
from test_hudi_merge_on_read import COMPACT, HISTORY, RO, SCHEDULE, _options, _record_index, _values
from test_hudi_tables import SCHEMA, _import, _table

from tablespec.engine.schema import DataSchemaError, conform
from tablespec.engine.writer import TableWriter, WriteRefused
from tablespec.faults import CRASH_ENV
from tablespec.hudi.formats.base_keys import base_file_keys
from tablespec.hudi.formats.logfile import BlockType, Header, avro_records, deleted_keys, read_blocks
from tablespec.hudi.formats.naming import BaseFileName, LogFileName
from tablespec.hudi.io import LOCAL
from tablespec.hudi.mdt.reader import listing
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import Timeline, TimelineWriter
from tablespec.hudi.timeline.heartbeat import heartbeat_path
from tablespec.index import verify
from tablespec.table import Table


def _logs(location) -> dict[str, list]:
    """Log file name -> its blocks."""
    return {p.name: list(read_blocks(p.read_bytes())) for p in sorted(location.rglob(".*.log.*"))
            if not p.name.endswith(".crc") and ".hoodie" not in p.parts}


def _positioned(location) -> dict[str, bool]:
    """Each data or delete block's log file (and index in it) -> whether it carries record positions;
    those it carries are checked to be the rows of the block's keys in its file group's base file of
    the instant the block names, in block order (a positional reader pairs the i-th record with the
    i-th smallest position)."""
    carried = {}
    for name, blocks in _logs(location).items():
        log = LogFileName.parse(name)
        [partition] = {p.parent for p in location.rglob(name) if ".hoodie" not in p.parts}
        for i, block in enumerate(blocks):
            if block.type not in (BlockType.AVRO_DATA, BlockType.DELETE):
                continue
            carried[f"{name}#{i}"] = Header.RECORD_POSITIONS in block.header
            if not carried[f"{name}#{i}"]:
                continue
            keys = ([k for k, _ in deleted_keys(block)] if block.type == BlockType.DELETE
                    else [r["_hoodie_record_key"] for r in avro_records(block)])
            instant = block.header[Header.BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS]
            [base] = [p for p in partition.glob(f"{log.file_id}_*_{instant}.parquet")]
            stored = base_file_keys(str(base)).to_pylist()
            assert decode_positions(block.header[Header.RECORD_POSITIONS]) == [stored.index(k) for k in keys]
    return carried


def _agree(hudi, table, location) -> list[tuple]:
    ours = tablespec_rows(table)
    assert ours == hudi_rows(hudi, str(location)), "Apache Hudi's snapshot disagrees"
    assert tablespec_rows(table, view="read_optimized") == hudi_rows(hudi, str(location), **RO)
    return ours


def _assert_listing_is_storage(location) -> None:
    """Hudi's metadata table lists exactly the data files on storage, log files included."""
    on_storage = {p.name: {f.name: f.stat().st_size for f in p.iterdir()
                           if BaseFileName.parse(f.name) or LogFileName.parse(f.name)}
                  for p in location.iterdir() if p.is_dir() and p.name != ".hoodie"}
    assert listing(HudiTable.open(str(location))).files == on_storage


def _files(location, meta: bool = True) -> list[tuple]:
    """Every file (`meta`: .hoodie/ too) with its size and modification time."""
    return sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in location.rglob("*")
                  if p.is_file() and (meta or ".hoodie" not in p.relative_to(location).parts))


def _mor_table(hudi, tmp_path, capsys, name: str):
    location = tmp_path / name
    hudi_write(hudi.createDataFrame(HISTORY[0][1], SCHEMA), str(location), _options(name, "bucket", "upsert"))
    _record_index(location, "bucket")
    doc, _ = _import(tmp_path, location, capsys)
    return location, _table(hudi, doc, location)


def test_tablespec_deltacommits_read_as_hudi_reads_them(hudi, tmp_path, capsys):
    location, table = _mor_table(hudi, tmp_path, capsys, "mor_writes")
    df = lambda data: hudi.createDataFrame(data, SCHEMA)   # noqa: E731
    bases = {p.name for p in location.rglob("*.parquet")}

    # an update and an insert into existing buckets, a new partition (its bucket: a base file)
    result = table.write(df([("a", 10, "2024-01-01", 5), ("x", 7, "2024-01-01", 5), ("n", 8, "2024-01-09", 5)]))
    assert (result.inserted, result.updated) == (2, 1), str(result)
    timeline = Timeline.load(LOCAL, str(location))
    assert timeline.head.action == "deltacommit" and timeline.head.timestamp == result.instant
    logs = _logs(location)
    assert logs and all([b.type for b in blocks] == [BlockType.AVRO_DATA] for blocks in logs.values())
    assert {b.header[Header.INSTANT_TIME] for blocks in logs.values() for b in blocks} == {result.instant}
    new_bases = {p.name for p in location.rglob("*.parquet")} - bases
    assert [p.split("_")[-1] for p in new_bases] == [f"{result.instant}.parquet"]   # the new bucket only
    stats = timeline.commit_metadata(timeline.head).write_stats()
    delta = [s for s in stats if ".log." in (s.path or "")]
    assert delta and all(s.extra["logVersion"] == 1 and s.extra["logFiles"] == [s.path.rsplit("/", 1)[-1]]
                         for s in delta)
    assert not (location / ".hoodie" / ".temp" / result.instant).exists()   # markers dropped
    assert _values(_agree(hudi, table, location)) == {"a": 10, "b": 2, "c": 3, "d": 4, "x": 7, "n": 8}
    _assert_listing_is_storage(location)

    # x lives only in a log file: deleted by a delete block; a key never stored deletes nothing
    result = table.write(df([("x", 0, "2024-01-01", 9), ("zz", 0, "2024-01-01", 9)]), "delete")
    assert result.deleted == 1, str(result)
    assert any(b.type == BlockType.DELETE for blocks in _logs(location).values() for b in blocks)
    assert _values(_agree(hudi, table, location)) == {"a": 10, "b": 2, "c": 3, "d": 4, "n": 8}

    # an insert into existing buckets: d (stored in a base file) and a new key, to log files
    result = table.write(df([("d", 44, "2024-01-02", 1), ("w", 5, "2024-01-02", 1)]), "insert")
    assert result.inserted == 2 and not result.files[0].endswith(".parquet"), str(result)
    assert _values(_agree(hudi, table, location)) == {"a": 10, "b": 2, "c": 3, "d": 44, "n": 8, "w": 5}

    # every row older than the stored one (a's log record, b's base row): no log block, no commit
    head, files = Timeline.load(LOCAL, str(location)).head, _logs(location)
    result = table.write(df([("a", 99, "2024-01-01", 1), ("b", 99, "2024-01-01", 0)]))
    assert result.unchanged and result.ignored == 2, str(result)
    assert Timeline.load(LOCAL, str(location)).head == head and _logs(location) == files

    # Apache Hudi upserts on top; tablespec reads what it wrote, and writes again
    hudi_write(df([("a", 11, "2024-01-01", 6), ("c", 33, "2024-01-02", 6)]), str(location),
               _options(location.name, "bucket", "upsert"))
    assert _values(tablespec_rows(table)) == {"a": 11, "b": 2, "c": 33, "d": 44, "n": 8, "w": 5}
    table.write(df([("b", 22, "2024-01-01", 7), ("y", 1, "2024-01-02", 7)]))
    ours = _agree(hudi, table, location)
    assert _values(ours) == {"a": 11, "b": 22, "c": 33, "d": 44, "n": 8, "w": 5, "y": 1}
    assert _values(hudi_rs_rows(table.location)) == _values(ours)
    _assert_listing_is_storage(location)


def test_a_deltacommit_ships_the_log_targets_of_the_partitions_it_writes_only(hudi, tmp_path, capsys, monkeypatch):
    """Every task gets the job: a deltacommit into one partition of a three-partition table with many
    file groups carries the log targets (and slice reads) of that partition's file groups, none of the
    others'; a table with few file groups ships them all, without a Spark pass to find the partitions."""
    from tablespec.engine import delta

    location = tmp_path / "mor_partitions"
    rows = [(k, 1, f"2024-01-0{p}", 1) for p in (1, 2, 3) for k in ("a", "b", "c", "d")]
    hudi_write(hudi.createDataFrame([(f"{k}{dt[-1]}", v, dt, ts) for k, v, dt, ts in rows], SCHEMA), str(location),
               _options(location.name, "bucket", "upsert"))
    _record_index(location, "bucket")
    doc, _ = _import(tmp_path, location, capsys)
    table = _table(hudi, doc, location)
    view = table.table.view
    assert {s.partition for s in view.latest_slices()} == {"2024-01-01", "2024-01-02", "2024-01-03"}
    writer = TableWriter(hudi, table.spec, table.table)
    batch = conform(hudi.createDataFrame([("a2", 5, "2024-01-02", 2), ("z", 5, "2024-01-02", 2)], SCHEMA), table.spec)
    props = table.table.table_config.to_properties()
    assert set(writer._job("20990101000000000", "upsert", view, props, batch).log_targets) == {
        s.file_id for s in view.latest_slices()}
    monkeypatch.setattr(delta, "TARGETS_WITHOUT_SCAN", 1)   # the table's six file groups count as many
    job = writer._job("20990101000000000", "upsert", view, props, batch)
    mine = {s.file_id for s in view.latest_slices() if s.partition == "2024-01-02"}
    assert set(job.log_targets) == mine and len(mine) == 2
    assert {t.partition for t in job.log_targets.values()} == {t.read.partition for t in job.log_targets.values()} \
        == {"2024-01-02"}
    result = table.write(batch)
    assert {p.split("/")[0] for p in result.files} == {"2024-01-02"}, str(result)
    assert _values(_agree(hudi, table, location))["a2"] == 5


def _properties(location) -> dict[str, str]:
    lines = (location / ".hoodie" / "hoodie.properties").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


# What every table tablespec creates leaves to Hudi's defaults (the values Hudi 0.15 writes).
DEFAULTED = ("hoodie.database.name", "hoodie.partition.metafile.use.base.format", "hoodie.table.base.file.format",
             "hoodie.table.cdc.enabled", "hoodie.table.timeline.timezone")


def test_a_merge_on_read_table_created_from_its_spec_is_hudis(hudi, tmp_path, capsys):
    """`plan`/`apply` create a version 6 MERGE_ON_READ BUCKET table from its spec with the
    hoodie.properties Hudi 0.15 creates one with (but the payload, which the spec's ordering field
    makes DefaultHoodieRecordPayload: tablespec's upserts keep the greater ordering value, in base
    files as in logs); tablespec's deltacommits read as Hudi reads them, Hudi upserts on top and
    compacts, and tablespec reads what Hudi wrote."""
    hudis, _ = _mor_table(hudi, tmp_path, capsys, "mor_by_hudi")
    doc, _ = _import(tmp_path, hudis, capsys)
    doc["metadata"]["name"] = doc["spec"]["location"] = "mor_by_spec"
    doc["spec"]["compaction"] = {"runBy": "hudi", "deltaCommits": 1}   # Hudi's writer compacts as COMPACT says
    spec_file = tmp_path / "mor_by_spec.yaml"
    save_spec(doc, spec_file)
    assert apply_until_done(capsys, spec_file, tmp_path) == ["create_table"]
    location = tmp_path / "mor_by_spec"
    ours, theirs = _properties(location), _properties(hudis)
    assert sorted(set(theirs) - set(ours)) == sorted(DEFAULTED), "a property Hudi 0.15 writes is missing"
    assert {k: ours[k] for k in ("hoodie.table.type", "hoodie.table.version", "hoodie.table.precombine.field",
                                 "hoodie.table.recordkey.fields", "hoodie.table.partition.fields",
                                 "hoodie.compaction.record.merger.strategy")} == \
        {k: theirs[k] for k in ("hoodie.table.type", "hoodie.table.version", "hoodie.table.precombine.field",
                                "hoodie.table.recordkey.fields", "hoodie.table.partition.fields",
                                "hoodie.compaction.record.merger.strategy")}
    assert ours["hoodie.compaction.payload.class"] == "org.apache.hudi.common.model.DefaultHoodieRecordPayload"

    table = _table(hudi, doc, location)
    df = lambda data: hudi.createDataFrame(data, SCHEMA)   # noqa: E731
    table.write(df(HISTORY[0][1]))                                        # into new buckets: base files
    result = table.write(df([("a", 10, "2024-01-01", 5), ("e", 5, "2024-01-01", 5)]))
    assert (result.inserted, result.updated) == (1, 1) and all(".log." in f for f in result.files), str(result)
    assert _values(_agree(hudi, table, location)) == {"a": 10, "b": 2, "c": 3, "d": 4, "e": 5}
    hudi_write(df([("b", 20, "2024-01-01", 6), ("c", 30, "2024-01-02", 6)]), str(location),
               {**_options(location.name, "bucket", "upsert"), **COMPACT})
    assert any(i.action == "commit" for i in Timeline.load(LOCAL, str(location)).completed()), "Hudi did not compact"
    ours_rows = _agree(hudi, table, location)
    assert _values(ours_rows) == {"a": 10, "b": 20, "c": 30, "d": 4, "e": 5}
    assert _values(hudi_rs_rows(table.location)) == _values(ours_rows)
    _assert_listing_is_storage(location)


def _ingest(spec_file, warehouse, csv, point: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **SHORT_LIVED_JVM, CRASH_ENV: point, "PYTHONPATH": str(ROOT), "TABLESPEC_SPARK_MASTER": "local[1]"}
    return subprocess.run([sys.executable, "-m", "tablespec.cli", "ingest", str(spec_file), "--input", str(csv),
                           "--input-format", "csv", "--operation", "upsert", "--warehouse", str(warehouse)],
                          env=env, capture_output=True, text=True, timeout=600)


def test_a_killed_deltacommit_is_rolled_back_as_hudi_rolls_one_back(hudi, tmp_path, capsys, monkeypatch):
    """kill -9 before the deltacommit completes (its log blocks and metadata-table deltacommit
    written); the next writer rolls it back: tablespec on the table, Apache Hudi 0.15 (from
    tablespec's markers) on a copy of the table as the kill left it."""
    location, table = _mor_table(hudi, tmp_path, capsys, "mor_crash")
    table.write(hudi.createDataFrame([("a", 10, "2024-01-01", 5)], SCHEMA))
    before = _agree(hudi, table, location)
    csv = tmp_path / "in.csv"
    csv.write_text("id,v,dt,ts\na,50,2024-01-01,8\nb,60,2024-01-01,8\nz,70,2024-01-02,8\n")
    proc = _ingest(tmp_path / f"{location.name}.yaml", tmp_path, csv, "before_completion")
    assert proc.returncode == -9, proc.stdout[-2000:] + proc.stderr[-2000:]
    [crashed] = Timeline.load(LOCAL, str(location)).pending()
    assert crashed.action == "deltacommit"
    assert any(b.instant == crashed.timestamp for blocks in _logs(location).values() for b in blocks)
    assert _agree(hudi, table, location) == before    # its blocks count nowhere
    copy = tmp_path / "copy" / location.name           # the same name: Hudi checks its table's name
    shutil.copytree(location, copy)
    copied = Table(table.spec, str(copy), hudi)

    monkeypatch.setenv("TABLESPEC_HEARTBEAT_TOLERANCE", "0")
    table.write(hudi.createDataFrame([("c", 30, "2024-01-02", 9)], SCHEMA))   # recovery first
    hudi_write(hudi.createDataFrame([("c", 30, "2024-01-02", 9)], SCHEMA), str(copy),
               _options(location.name, "bucket", "upsert"))
    for next_writer, at, recovered in (("tablespec", location, table), ("hudi", copy, copied)):
        timeline = Timeline.load(LOCAL, str(at))
        [rollback] = [i for i in timeline.completed() if i.action == "rollback"]
        assert crashed.timestamp not in {i.timestamp for i in timeline.instants if i.action == "deltacommit"}
        commands = [b for blocks in _logs(at).values() for b in blocks if b.type == BlockType.COMMAND]
        assert commands and {(b.header[Header.TARGET_INSTANT_TIME], b.instant) for b in commands} == \
            {(crashed.timestamp, rollback.timestamp)}, next_writer
        assert not (at / ".hoodie" / ".temp" / crashed.timestamp).exists()
        assert _values(_agree(hudi, recovered, at)) == {**_values(before), "c": 30}
        if next_writer == "tablespec":
            _assert_listing_is_storage(at)
            meta = json.loads(json.dumps(timeline.read_metadata(rollback), default=str))
            assert all(p["rollbackLogFiles"] and p["logFilesFromFailedCommit"] for p in meta["partitionMetadata"].values())

        # Apache Hudi writes on top of the rolled-back deltacommit, tablespec after it: both read the same
        hudi_write(hudi.createDataFrame([("b", 20, "2024-01-01", 9)], SCHEMA), str(at),
                   _options(location.name, "bucket", "upsert"))
        recovered.write(hudi.createDataFrame([("z", 7, "2024-01-02", 9)], SCHEMA))
        assert _values(_agree(hudi, recovered, at)) == {**_values(before), "b": 20, "c": 30, "z": 7}


BLOOM = {"hoodie.index.type": "BLOOM"}


@pytest.mark.parametrize("index", ["simple", "bloom"])
def test_simple_and_bloom_deltacommits_are_laid_out_as_hudi_lays_them_out(hudi, tmp_path, capsys, index):
    """SIMPLE / BLOOM on version 6 (Hudi 0.15, measured): updates and deletes go to a log file of the
    key's file group; inserts go to base files: a small slice without log files is merged into its
    next base file (updates to it too), a slice with log files takes none, then new file groups."""
    location = tmp_path / f"mor_{index}_writes"
    options = {**_options(location.name, "simple", "upsert"), **(BLOOM if index == "bloom" else {})}
    df = lambda data: hudi.createDataFrame(data, SCHEMA)   # noqa: E731
    hudi_write(df(HISTORY[0][1]), str(location), options)
    if index == "bloom":   # Hudi records no index in hoodie.properties; tablespec's import reads it there
        props = location / ".hoodie" / "hoodie.properties"
        props.write_text(props.read_text() + "hoodie.index.type=BLOOM\n")
        (location / ".hoodie" / ".hoodie.properties.crc").unlink(missing_ok=True)
    doc, _ = _import(tmp_path, location, capsys)
    assert doc["spec"]["index"]["type"] == index.upper()
    table = _table(hudi, doc, location)
    [first] = {p.name.split("_")[0] for p in (location / "2024-01-01").glob("*.parquet")}

    # a's update and the insert x into the small slice without logs: its next base file, no log
    result = table.write(df([("a", 10, "2024-01-01", 5), ("x", 7, "2024-01-01", 5)]))
    assert (result.inserted, result.updated) == (1, 1) and len(result.files) == 1, str(result)
    assert result.files[0].endswith(f"{result.instant}.parquet") and first in result.files[0] and not _logs(location)
    assert _values(_agree(hudi, table, location)) == {"a": 10, "b": 2, "c": 3, "d": 4, "x": 7}

    # b's update alone: to a log file of its file group
    result = table.write(df([("b", 20, "2024-01-01", 6)]))
    assert [LogFileName.parse(f.split("/")[-1]).file_id for f in result.files] == [first], str(result)
    # the slice has a log now: a's update to another log file of it, the insert y to a new file group
    result = table.write(df([("a", 12, "2024-01-01", 7), ("y", 8, "2024-01-01", 7)]))
    [log] = [f for f in result.files if ".log." in f]
    [new] = [f for f in result.files if f.endswith(".parquet")]
    assert LogFileName.parse(log.split("/")[-1]).file_id == first and first not in new, str(result)
    assert _values(_agree(hudi, table, location)) == {"a": 12, "b": 20, "c": 3, "d": 4, "x": 7, "y": 8}

    # deletes of b (its latest version in a log file) and x: a delete block in their file group's log
    result = table.write(df([("b", 0, "2024-01-01", 9), ("x", 0, "2024-01-01", 9), ("zz", 0, "2024-01-01", 9)]),
                         "delete")
    assert result.deleted == 2 and all(".log." in f for f in result.files), str(result)
    assert any(b.type == BlockType.DELETE for blocks in _logs(location).values() for b in blocks)
    assert _values(_agree(hudi, table, location)) == {"a": 12, "c": 3, "d": 4, "y": 8}
    _assert_listing_is_storage(location)
    expected = {"a": 11, "b": 2, "c": 33, "d": 4, "y": 8}
    if index == "simple":   # bulk_insert: a new file group's base file in a deltacommit (Hudi 0.15, measured)
        bases = {p.name for p in location.rglob("*.parquet")}
        result = table.write(df([("v", 9, "2024-01-02", 9)]), "bulk_insert")
        timeline = Timeline.load(LOCAL, str(location))
        assert timeline.head.action == "deltacommit" and timeline.commit_metadata(timeline.head).operation_type == \
            "BULK_INSERT", str(result)
        [new] = {p.name for p in location.rglob("*.parquet")} - bases
        assert result.files == (f"2024-01-02/{new}",) and BaseFileName.parse(new).file_id not in str(bases)
        expected["v"] = 9

    # Apache Hudi upserts on top and compacts; tablespec reads what it wrote, hudi-rs the same
    hudi_write(df([("a", 11, "2024-01-01", 10), ("c", 33, "2024-01-02", 10), ("b", 2, "2024-01-01", 10)]),
               str(location), {**options, **COMPACT})
    assert any(i.action == "commit" for i in Timeline.load(LOCAL, str(location)).completed()), "Hudi did not compact"
    ours = _agree(hudi, table, location)
    assert _values(ours) == expected
    assert _values(hudi_rs_rows(table.location)) == _values(ours)
    table.write(df([("y", 80, "2024-01-01", 11)]))
    assert _values(_agree(hudi, table, location))["y"] == 80


def test_merge_on_read_writes_wait_for_a_pending_compaction(hudi, tmp_path, capsys):
    location = tmp_path / "mor_pending"
    for n, (_, data) in enumerate(HISTORY[:2]):
        hudi_write(hudi.createDataFrame(data, SCHEMA), str(location),
                   {**_options(location.name, "simple", "upsert"), **(SCHEDULE if n else {})})
    doc, _ = _import(tmp_path, location, capsys)
    table = _table(hudi, doc, location)
    files = sorted((p, p.stat().st_size) for p in location.rglob("*") if p.is_file())
    with pytest.raises(Exception, match="MERGE_ON_READ table: compaction [0-9]+ is pending; tablespec writes "
                                        "deltacommits once it has run"):
        table.write(hudi.createDataFrame([("z", 1, "2024-01-01", 1)], SCHEMA))
    assert sorted((p, p.stat().st_size) for p in location.rglob("*") if p.is_file()) == files

    # a spec giving compaction to tablespec: the writer runs the pending plan first (as `apply` would),
    # as it does one its own housekeeping left when killed (test_hudi_merge_on_read_crash_loop.py)
    [pending] = HudiTable.open(str(location)).timeline.pending()
    doc["spec"]["compaction"] = {**doc["spec"].get("compaction", {}), "runBy": "tablespec"}
    table = _table(hudi, doc, location)
    # bad input is refused, and an empty one changes nothing, before the plan runs: the table untouched
    files = _files(location)
    with pytest.raises(DataSchemaError, match="input does not match the spec: column 'colour' is not in the spec"):
        table.write(hudi.createDataFrame([("z", 1, "2024-01-01", 1, "red")], SCHEMA + ", colour string"))
    assert table.write(hudi.createDataFrame([], SCHEMA)).instant is None
    assert _files(location) == files and HudiTable.open(str(location)).timeline.pending() == (pending,)
    # a run of the plan another process has started (inflight, its heartbeat live) refuses the write
    timeline = HudiTable.open(str(location)).timeline
    started = TimelineWriter.of(timeline).start(pending)
    LOCAL.touch(heartbeat_path(str(location), pending.timestamp))
    files_started = _files(location)
    with pytest.raises(WriteRefused, match=f"compaction {pending.timestamp} is running \\(its heartbeat is live\\)"):
        table.write(hudi.createDataFrame([("z", 1, "2024-01-01", 1)], SCHEMA))
    assert _files(location) == files_started
    assert HudiTable.open(str(location)).timeline.pending() == (started,)
    LOCAL.delete(heartbeat_path(str(location), pending.timestamp))   # its process died: rolled back, run again
    result = table.write(hudi.createDataFrame([("z", 1, "2024-01-01", 1)], SCHEMA))
    timeline = HudiTable.open(str(location)).timeline
    assert not timeline.pending() and timeline.contains_completed(pending.timestamp)
    assert [i.action for i in timeline.completed() if i.timestamp >= pending.timestamp] == ["commit", "rollback",
                                                                                          "deltacommit"]
    assert timeline.head.timestamp == result.instant
    assert _values(_agree(hudi, table, location)) == {"a": 10, "b": 2, "c": 30, "d": 4, "e": 5, "z": 1}


def test_tablespec_deltacommits_on_version_9_read_as_hudi_1_2_reads_them(hudi, hudi1, tmp_path, capsys):
    """Version 9 (a BUCKET table Hudi 1.2 created), laid out as Hudi 1.2 lays a deltacommit out
    (measured): each bucket's changes to a new log file named by the deltacommit (version 1), an Avro
    data or delete block; the write stat names the deltacommit as its previous commit, no base file,
    and only its own log file; `T_<completion>.deltacommit`. Hudi 1.2's snapshot and read-optimized
    reads and its metadata validation agree; Hudi upserts on top and compacts; tablespec and hudi-rs
    read what it wrote."""
    from hudi_process import read_step, write_step
    from test_hudi_1x_metadata_table import _assert_validated, _hudi_checks, _on_storage
    from test_hudi_merge_on_read import COMPACT, _as_read
    location = tmp_path / "mor9_writes"
    hudi1.process.run([write_step(location, _options(location.name, "bucket", "upsert"), SCHEMA, HISTORY[0][1])])
    _record_index(location, "bucket")
    doc, _ = _import(tmp_path, location, capsys)
    table = _table(hudi, doc, location)
    df = lambda data: hudi.createDataFrame(data, SCHEMA)   # noqa: E731

    result = table.write(df([("a", 10, "2024-01-01", 5), ("x", 7, "2024-01-01", 5), ("n", 8, "2024-01-09", 5)]))
    assert (result.inserted, result.updated) == (2, 1), str(result)
    timeline = HudiTable.open(str(location)).timeline
    assert timeline.head.action == "deltacommit" and timeline.head.timestamp == result.instant
    assert (location / ".hoodie" / "timeline" / f"{result.instant}_{timeline.head.completion}.deltacommit").is_file()
    logs = _logs(location)
    assert logs and all(LogFileName.parse(n).base_instant == result.instant and LogFileName.parse(n).version == 1
                        and [b.type for b in blocks] == [BlockType.AVRO_DATA] for n, blocks in logs.items())
    delta = [s for s in timeline.commit_metadata(timeline.head).write_stats() if ".log." in (s.path or "")]
    assert delta and all(s.prev_commit == result.instant and s.extra["baseFile"] == "" and s.extra["logVersion"] == 1
                         and s.extra["logFiles"] == [s.path.rsplit("/", 1)[-1]] for s in delta)
    assert not (location / ".hoodie" / ".temp" / result.instant).exists()   # markers dropped

    result = table.write(df([("x", 0, "2024-01-01", 9), ("zz", 0, "2024-01-01", 9)]), "delete")
    assert result.deleted == 1, str(result)
    ours, ours_ro = tablespec_rows(table), tablespec_rows(table, view="read_optimized")
    assert _values(ours) == {"a": 10, "b": 2, "c": 3, "d": 4, "n": 8}
    on_storage = _on_storage(location)
    on_top = [("a", 11, "2024-01-01", 6), ("c", 33, "2024-01-02", 6)]
    reads = hudi1.process.run([read_step(location), read_step(location, **RO), *_hudi_checks(location, "mor9_writes"),
                               write_step(location, {**_options(location.name, "bucket", "upsert"), **COMPACT},
                                          SCHEMA, on_top),
                               read_step(location), read_step(location, **RO)])
    snapshot, optimized, _, every, differences, through_metadata, _, after, after_ro = reads
    assert _as_read(snapshot) == ours == _as_read(through_metadata)
    assert _as_read(optimized) == ours_ro
    _assert_validated(on_storage, every, differences)
    compacted = HudiTable.open(str(location))
    assert any(i.action == "commit" for i in compacted.timeline.commits())   # Hudi compacted inline
    assert tablespec_rows(table) == _as_read(after) == _as_read(after_ro)
    assert _values(tablespec_rows(table)) == {"a": 11, "b": 2, "c": 33, "d": 4, "n": 8}
    assert _values(hudi_rs_rows(table.location)) == _values(tablespec_rows(table))


def test_a_killed_version_9_deltacommit_is_rolled_back_by_deleting_its_files(hudi, hudi1, tmp_path, capsys,
                                                                              monkeypatch):
    """kill -9 before a version 9 deltacommit completes; the next tablespec write rolls it back as
    Hudi 1.x does on version 9: its log files (named by it) deleted, no command block; Hudi 1.2
    reads the same rows and its metadata validation agrees."""
    from hudi_process import read_step, write_step
    from test_hudi_1x_metadata_table import _assert_validated, _hudi_checks, _on_storage
    from test_hudi_merge_on_read import _as_read
    location = tmp_path / "mor9_crash"
    hudi1.process.run([write_step(location, _options(location.name, "bucket", "upsert"), SCHEMA, HISTORY[0][1])])
    _record_index(location, "bucket")
    doc, _ = _import(tmp_path, location, capsys)
    table = _table(hudi, doc, location)
    before = tablespec_rows(table)
    csv = tmp_path / "in.csv"
    csv.write_text("id,v,dt,ts\na,50,2024-01-01,8\nb,60,2024-01-01,8\nz,70,2024-01-02,8\n")
    proc = _ingest(tmp_path / f"{location.name}.yaml", tmp_path, csv, "before_completion")
    assert proc.returncode == -9, proc.stdout[-2000:] + proc.stderr[-2000:]
    [crashed] = HudiTable.open(str(location)).timeline.pending()
    assert crashed.action == "deltacommit" and any(crashed.timestamp in name for name in _logs(location))
    assert tablespec_rows(table) == before    # its log files count nowhere

    monkeypatch.setenv("TABLESPEC_HEARTBEAT_TOLERANCE", "0")
    table.write(hudi.createDataFrame([("c", 30, "2024-01-02", 9)], SCHEMA))   # recovery first
    timeline = HudiTable.open(str(location)).timeline
    assert [i.action for i in timeline.completed() if i.timestamp > crashed.timestamp][:1] == ["rollback"]
    assert crashed.timestamp not in {i.timestamp for i in timeline.instants if i.action == "deltacommit"}
    assert not any(crashed.timestamp in name for name in _logs(location))
    assert not any(b.type == BlockType.COMMAND for blocks in _logs(location).values() for b in blocks)
    assert not (location / ".hoodie" / ".temp" / crashed.timestamp).exists()
    ours = tablespec_rows(table)
    assert _values(ours) == {**_values(before), "c": 30}
    on_storage = _on_storage(location)
    snapshot, _, every, differences, _ = hudi1.process.run([read_step(location), *_hudi_checks(location, "mor9_crash")])
    assert _as_read(snapshot) == ours
    _assert_validated(on_storage, every, differences)


def _record_index_is_the_table(spark, location) -> dict:
    """tablespec's scan of Hudi's record index, Hudi's own lookup in it, and where Hudi's snapshot
    read finds each key (a log record names its file id) agree; returns the index."""
    from test_hudi_metadata_record_index import hudi_lookup

    from tablespec.hudi.mdt import record_index_reader
    ours = record_index_reader.scan(HudiTable.open(str(location)))
    read = hudi_rows(spark, str(location))
    found = {dict(r)["_hoodie_record_key"]: (dict(r)["_hoodie_partition_path"], dict(r)["_hoodie_file_name"])
             for r in read}
    assert len(found) == len(read), "a key is in the table twice"
    assert {k: (v.partition, v.file_id) for k, v in ours.items()} == \
        {k: (p, f if BaseFileName.parse(f) is None else BaseFileName.parse(f).file_id) for k, (p, f) in found.items()}
    assert hudi_lookup(spark, str(location), sorted(found) + ["no-such-key"]) == ours
    return ours


def test_record_level_deltacommits_are_laid_out_as_hudi_lays_them_out(hudi, tmp_path, capsys):
    """RECORD_LEVEL on version 6, laid out as Hudi 0.15 lays a deltacommit out with its record index
    (measured): keys tagged through the index; updates and deletes to a log file of the file group it
    names, inserts into a small slice without log files (merged with its updates into its next base
    file) or new file groups; a key moving partition is inserted in its new partition and deleted from
    its old file group by a delete block; the index records inserted, moved and deleted keys (an
    update keeps the key's entry) in the same deltacommit. Hudi reads, looks keys up, validates its
    metadata table, upserts through the index tablespec kept and compacts; tablespec and hudi-rs read it."""
    from test_hudi_metadata_record_index import RECORD_INDEX_ON
    from test_hudi_metadata_table_kept import hudi_validates_in_place
    location = tmp_path / "mor_record_level"
    options = {**_options(location.name, "simple", "upsert"), **RECORD_INDEX_ON}
    df = lambda data: hudi.createDataFrame(data, SCHEMA)   # noqa: E731
    hudi_write(df(HISTORY[0][1]), str(location), options)
    doc, _ = _import(tmp_path, location, capsys)
    assert doc["spec"]["index"]["type"] == "RECORD_LEVEL"
    table = _table(hudi, doc, location)
    [first] = {p.name.split("_")[0] for p in (location / "2024-01-01").glob("*.parquet")}
    start = _record_index_is_the_table(hudi, location)

    # a's update and the insert x into the small slice without logs: its next base file; x indexed there
    result = table.write(df([("a", 10, "2024-01-01", 5), ("x", 7, "2024-01-01", 5)]))
    assert (result.inserted, result.updated) == (1, 1) and len(result.files) == 1, str(result)
    assert result.files[0].endswith(f"{result.instant}.parquet") and first in result.files[0] and not _logs(location)
    index = _record_index_is_the_table(hudi, location)
    assert index["a"] == start["a"] and index["x"].instant == result.instant   # an update keeps its entry

    # b's update to a log file; then a's to another log file of it and the insert y to a new file group
    table.write(df([("b", 20, "2024-01-01", 6)]))
    result = table.write(df([("a", 12, "2024-01-01", 7), ("y", 8, "2024-01-01", 7)]))
    [log] = [f for f in result.files if ".log." in f]
    [new] = [f for f in result.files if f.endswith(".parquet")]
    assert LogFileName.parse(log.split("/")[-1]).file_id == first and first not in new, str(result)

    # x moves partition: inserted into 2024-01-02's small slice, a delete block in its old file group's log
    result = table.write(df([("x", 70, "2024-01-02", 8)]))
    moved = [f for f in result.files if ".log." in f]
    assert (result.inserted, result.deleted) == (1, 1) and len(moved) == 1 and first in moved[0], str(result)
    assert [b.type for b in _logs(location)[moved[0].split("/")[-1]]] == [BlockType.DELETE]
    index = _record_index_is_the_table(hudi, location)
    assert index["x"].partition == "2024-01-02" and index["x"].instant == result.instant

    # deletes of b (its latest version in a log file) and y: delete blocks; the index drops them
    result = table.write(df([("b", 0, "2024-01-01", 9), ("y", 0, "2024-01-01", 9), ("zz", 0, "2024-01-01", 9)]),
                         "delete")
    assert result.deleted == 2 and all(".log." in f for f in result.files), str(result)
    assert _values(_agree(hudi, table, location)) == {"a": 12, "c": 3, "d": 4, "x": 70}
    assert set(_record_index_is_the_table(hudi, location)) == {"a", "c", "d", "x"}
    _assert_listing_is_storage(location)
    hudi_validates_in_place(hudi, str(location))

    # Apache Hudi upserts through the record index tablespec kept (a: into its log, no second a) and compacts
    hudi_write(df([("a", 11, "2024-01-01", 10), ("x", 71, "2024-01-02", 10), ("w", 1, "2024-01-01", 10)]),
               str(location), {**options, **COMPACT})
    assert any(i.action == "commit" for i in Timeline.load(LOCAL, str(location)).completed()), "Hudi did not compact"
    ours = _agree(hudi, table, location)
    assert _values(ours) == {"a": 11, "c": 3, "d": 4, "x": 71, "w": 1}
    assert _values(hudi_rs_rows(table.location)) == _values(ours)
    assert set(_record_index_is_the_table(hudi, location)) == {"a", "c", "d", "x", "w"}
    table.write(df([("w", 2, "2024-01-01", 11)]))
    assert _values(_agree(hudi, table, location))["w"] == 2


def _index(location) -> dict[str, tuple[str, str, str]]:
    """Key -> (partition, file id, instant) as tablespec scans Hudi's record index."""
    from tablespec.hudi.mdt import record_index_reader
    return {k: (v.partition, v.file_id, v.instant)
            for k, v in record_index_reader.scan(HudiTable.open(str(location))).items()}


def _index_agrees(index: dict, read: list[dict], looked_up: dict) -> None:
    """The record index (`_index`), Hudi 1.2's own lookup in it and where its snapshot read finds each
    key (a log record names its file id) agree, each key once."""
    found = {r["_hoodie_record_key"]: (r["_hoodie_partition_path"], r["_hoodie_file_name"].split("_")[0]) for r in read}
    assert len(found) == len(read), "a key is in the table twice"
    assert {k: v[:2] for k, v in index.items()} == found
    assert {k: tuple(v) for k, v in looked_up.items()} == index


@pytest.mark.parametrize("index", ["simple", "bloom", "record_level"])
def test_simple_bloom_and_record_level_deltacommits_on_version_9_are_laid_out_as_hudi_1_2_lays_them_out(
        hudi, hudi1, tmp_path, capsys, index):
    """SIMPLE / BLOOM / RECORD_LEVEL on version 9 (Hudi 1.2, measured): version 6's layout with version 9's
    log files (named by the deltacommit, version 1; the write stat names no base file and its own log only):
    inserts merge a small slice without log files into its next base file (updates to it too; the
    stat's previous commit is the old base instant), a slice with log files takes updates and deletes
    in a log file and no inserts, which open new file groups. RECORD_LEVEL (Hudi 1.2's record index,
    RECORD_INDEX with hoodie.record.index.update.partition.path: its record index does not index log
    files, so the layout is SIMPLE's): a key moving partition is inserted in its new partition and
    removed from its old file group by a delete block; the same deltacommit's record index records
    inserted and moved keys at the deltacommit, keeps an updated key's entry and drops deleted keys, as
    Hudi 1.2's does (measured). SIMPLE / BLOOM blocks carry their keys' rows in the slice's base file
    (RECORD_POSITIONS) as Hudi 1.2's do, which its reader merges by (hoodie.merge.use.record.positions,
    on by default); RECORD_LEVEL blocks carry none, as Hudi's record index writes none. Hudi 1.2 reads,
    looks keys up and validates, then upserts (through the record index tablespec kept) and compacts on
    top; tablespec and hudi-rs read what it wrote."""
    from hudi_process import read_step, record_index_step, write_step
    from test_hudi_1x_metadata_table import _assert_validated, _hudi_checks, _on_storage
    from test_hudi_merge_on_read import _as_read
    from test_hudi_metadata_record_index import RECORD_INDEX_ON
    location = tmp_path / f"mor9_{index}_writes"
    extra = {"bloom": BLOOM, "record_level": RECORD_INDEX_ON}.get(index, {})
    options = {**_options(location.name, "simple", "upsert"), **extra}
    hudi1.process.run([write_step(location, options, SCHEMA, HISTORY[0][1])])
    if index == "bloom":   # Hudi records no index in hoodie.properties; tablespec's import reads it there
        props = location / ".hoodie" / "hoodie.properties"
        props.write_text(props.read_text() + "hoodie.index.type=BLOOM\n")
        (location / ".hoodie" / ".hoodie.properties.crc").unlink()
    doc, _ = _import(tmp_path, location, capsys)
    assert doc["spec"]["index"]["type"] == index.upper()
    table = _table(hudi, doc, location)
    df = lambda data: hudi.createDataFrame(data, SCHEMA)   # noqa: E731
    [first] = (location / "2024-01-01").glob("*.parquet")
    file_id = BaseFileName.parse(first.name).file_id
    record_level = index == "record_level"
    start = _index(location) if record_level else {}

    # a's update and the insert x into the small slice without logs: its next base file, no log
    result = table.write(df([("a", 10, "2024-01-01", 5), ("x", 7, "2024-01-01", 5)]))
    assert (result.inserted, result.updated) == (1, 1) and result.files == (
        f"2024-01-01/{file_id}_{result.files[0].split('_')[1]}_{result.instant}.parquet",), str(result)
    assert not _logs(location)
    if record_level:   # x indexed at the deltacommit; a's update keeps its entry
        indexed = _index(location)
        assert indexed["x"] == ("2024-01-01", file_id, result.instant) and indexed["a"] == start["a"]
    timeline = HudiTable.open(str(location)).timeline
    [merged] = timeline.commit_metadata(timeline.head).write_stats()
    assert merged.prev_commit == BaseFileName.parse(first.name).instant and "logFiles" not in merged.extra

    # b's update to a log file named by the deltacommit; then a's update to another, the insert y to a
    # new file group (the slice has logs now)
    result = table.write(df([("b", 20, "2024-01-01", 6)]))
    result = table.write(df([("a", 12, "2024-01-01", 7), ("y", 8, "2024-01-01", 7)]))
    [log] = [f for f in result.files if ".log." in f]
    [new] = [f for f in result.files if f.endswith(".parquet")]
    name = LogFileName.parse(log.split("/")[-1])
    assert (name.file_id, name.base_instant, name.version) == (file_id, result.instant, 1) and file_id not in new
    timeline = HudiTable.open(str(location)).timeline
    [delta] = [s for s in timeline.commit_metadata(timeline.head).write_stats() if ".log." in s.path]
    assert delta.prev_commit == result.instant and delta.extra["baseFile"] == "" and \
        delta.extra["logFiles"] == [log.split("/")[-1]]
    deletes = [[BlockType.DELETE]]
    if record_level:   # x moves: into 2024-01-02's small slice, a delete block in its old file group's log
        result = table.write(df([("x", 70, "2024-01-02", 8)]))
        [moved] = [f for f in result.files if ".log." in f]
        assert (result.inserted, result.deleted) == (1, 1) and file_id in moved, str(result)
        assert [b.type for b in _logs(location)[moved.split("/")[-1]]] == [BlockType.DELETE]
        assert _index(location)["x"][::2] == ("2024-01-02", result.instant)
        deletes = [[BlockType.DELETE]] * 3   # the move's, then b's, then x's in its new file group

    # deletes of b (its latest version in a log file) and x: a delete block in their file group's log
    result = table.write(df([("b", 0, "2024-01-01", 9), ("x", 0, "2024-01-01", 9), ("zz", 0, "2024-01-01", 9)]),
                         "delete")
    assert result.deleted == 2 and all(".log." in f for f in result.files), str(result)
    assert [[b.type for b in blocks] for blocks in _logs(location).values()] == \
        [[BlockType.AVRO_DATA], [BlockType.AVRO_DATA], *deletes]
    # updates of d, then of c and d: Hudi's base file of 2024-01-02 holds d before c, so the second block's
    # records are d then c, in the order of their rows (positions), not key order. Measured: in key order,
    # Hudi 1.2's positional merge pairs c's record with d's row, where d's first update (ts 8) beats it,
    # and d's record with c's row: d is read twice and c's update is lost
    table.write(df([("d", 40, "2024-01-02", 8)]))
    table.write(df([("c", 30, "2024-01-02", 5), ("d", 41, "2024-01-02", 9)]))
    ours, ours_ro = tablespec_rows(table), tablespec_rows(table, view="read_optimized")
    assert _values(ours) == {"a": 12, "c": 30, "d": 41, "y": 8}
    # SIMPLE / BLOOM: every block names its keys' rows in the base file, as Hudi 1.2's do (RECORD_LEVEL: none)
    positioned = _positioned(location)
    assert set(positioned.values()) == {not record_level}, positioned
    on_storage, indexed = _on_storage(location), _index(location) if record_level else {}
    if record_level:   # `verify` takes each slice's live keys, log files merged: the rows of moved and
        # deleted keys stay in their old base files, delete blocks remove them
        checked = verify(HudiTable.open(str(location)))
        assert checked.ok and checked.keys == 4, checked.differences
    on_top = [("a", 11, "2024-01-01", 10), ("c", 33, "2024-01-02", 10), ("b", 2, "2024-01-01", 10)]
    lookup = [record_index_step(location, [*"abcdxy", "zz"])] if record_level else []
    reads = hudi1.process.run([read_step(location), read_step(location, **RO), *_hudi_checks(location, location.name),
                               *lookup, write_step(location, {**options, **COMPACT}, SCHEMA, on_top),
                               read_step(location), read_step(location, **RO), *lookup])
    snapshot, optimized, _, every, differences, through_metadata = reads[:6]
    after, after_ro = reads[-2 - len(lookup):len(reads) - len(lookup)]
    if record_level:   # the index tablespec kept is Hudi's, before and after Hudi wrote through it
        _index_agrees(indexed, snapshot, reads[6])
        assert set(indexed) == {"a", "c", "d", "y"}
        _index_agrees(_index(location), after, reads[-1])
    assert _as_read(snapshot) == ours == _as_read(through_metadata)
    assert _as_read(optimized) == ours_ro
    _assert_validated(on_storage, every, differences)
    assert any(i.action == "commit" for i in HudiTable.open(str(location)).timeline.commits())   # Hudi compacted
    hudis = {block: carries for block, carries in _positioned(location).items() if block not in positioned}
    assert hudis and set(hudis.values()) == {not record_level}, hudis   # Hudi's own blocks, the same rule
    ours = tablespec_rows(table)
    assert ours == _as_read(after) == _as_read(after_ro)
    assert _values(ours) == {"a": 11, "b": 2, "c": 33, "d": 41, "y": 8}
    assert len(_values(ours)) == len(ours)   # no key twice
    assert _values(hudi_rs_rows(table.location)) == _values(ours)

"""The metadata table's own archiving and cleaning, judged by Apache Hudi 0.15: after ~25 tablespec
writes with small archive limits (to a RECORD_LEVEL table: its `files` and `record_index`
partitions), Hudi's archived-timeline API of the metadata table lists what tablespec archived
there, the old file slices are cleaned with a clean instant on its timeline, Hudi reads through
the metadata table what tablespec reads, its metadata validation finds no difference, and a Hudi
upsert (its own metadata writer archiving and cleaning after ours) works."""
from __future__ import annotations

from helpers import make_table
from interop_support import hudi_write
from test_hudi_archived_timeline import _meta_client
from test_hudi_metadata_record_index import RECORD_INDEX_ON, assert_index_is_the_table
from test_hudi_metadata_record_index_kept import SPEC as RLI_SPEC
from test_hudi_metadata_record_index_kept import assert_index_kept
from test_hudi_metadata_table_kept import assert_metadata_table_true
from test_hudi_reads import batch

from tablespec.hudi.archive.log import archive_files, read_records
from tablespec.hudi.config import read_table_config, write_table_config
from tablespec.hudi.io import LOCAL
from tablespec.hudi.mdt import layout
from tablespec.hudi.mdt.record_index import RECORD_INDEX, file_group_id
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.active import Timeline, avro_content
from tablespec.hudi_options import hudi_write_options

ARCHIVING = "  retention: {keepCommits: 1, archive: {minCommits: 2, maxCommits: 3}}\n"
WRITES = 24


def _ours(base: str) -> set[tuple[str, str, str]]:
    mdt = layout.table_path(base)
    return {(r["commitTime"], r["actionType"], r["actionState"])
            for f in archive_files(LOCAL, mdt) for r in read_records(LOCAL, f)}


def _hudis(spark, base: str) -> set[tuple[str, str, str]]:
    timeline = _meta_client(spark, layout.table_path(base)).getArchivedTimeline()
    return {(str(i.getTimestamp()), str(i.getAction()), str(i.getState().name()))
            for i in timeline.getInstants().toArray()}


def test_metadata_table_archives_and_cleans_as_hudi_reads_it(hudi, tmp_path):
    """On a RECORD_LEVEL table whose record index tablespec built, upserts of stored keys and of a
    new key each (a record-index log block): the metadata table's compactions rewrite its `files`
    and `record_index` file groups, its cleans remove the superseded slices of both, its archiving
    is what Hudi's archived-timeline API lists; Hudi's lookup, validation and reads agree, and a
    Hudi RECORD_INDEX upsert goes through the cleaned index, its metadata writer archiving and
    cleaning after ours. (One table for both partitions: the writes are what costs.)"""
    spec = RLI_SPEC.replace("index: {type: RECORD_LEVEL}", "index: {type: RECORD_LEVEL, recordLevel: {numBuckets: 2}}")
    table = make_table(hudi, tmp_path, spec + ARCHIVING)   # created with its record index: 2 file groups
    base = table.location
    table.write(batch(hudi, range(0, 12)), "insert")
    for v in range(1, WRITES):
        table.write(batch(hudi, [*range(v % 10, v % 10 + 2), 100 + v], version=v), "upsert")

    ours = _ours(base)
    assert any(a == "deltacommit" for _, a, _ in ours) and any(a == "commit" for _, a, _ in ours)
    assert _hudis(hudi, base) == ours                         # Hudi's archived-timeline API of the metadata table
    active = layout.timeline(LOCAL, base)
    assert not {t for t, _, s in ours if s == "COMPLETED"} & {i.timestamp for i in active}
    data_first = Timeline.load(LOCAL, base).instants[0].timestamp
    assert all(t < data_first for t, _, _ in ours)            # nothing the data table still lists
    cleans = {i.timestamp for i in active if i.action == "clean"} | {t for t, a, _ in ours if a == "clean"}
    assert cleans and all(len(t) == 20 and t.endswith("002") for t in cleans)   # <deltacommit>002
    hfiles = [i.name for i in LOCAL.list_dir(layout.partition_path(base)) if i.name.endswith(".hfile")]
    assert len(hfiles) <= 2
    assert len([i for i in active if i.action in ("deltacommit", "compaction")]) <= 3 + 1 + 10

    meta = layout.meta_path(base)
    completed = [i for i in active if i.action == "clean" and i.completed]
    cleaned = {p for c in completed for p in avro_content(LOCAL.read_bytes(f"{meta}/{c.timestamp}.clean"),
                                                          "clean")["partitionMetadata"]}
    assert RECORD_INDEX in cleaned
    names = [i.name for i in LOCAL.list_dir(layout.partition_path(base, RECORD_INDEX))]
    for file_id in (file_group_id(0), file_group_id(1)):
        assert 1 <= len([n for n in names if n.startswith(file_id) and n.endswith(".hfile")]) <= 2
    index = assert_index_kept(hudi, table)                    # assert_metadata_table_true included
    assert set(index) == {f"o{i:04d}" for i in [*range(12), *range(101, 100 + WRITES)]}

    # Apache Hudi upserts through the record index: its metadata writer takes over from here
    write_table_config(LOCAL, base, read_table_config(LOCAL, base).with_updates(index_type="RECORD_INDEX"))
    options = {**hudi_write_options(table.spec, HudiTable.open(base)), **RECORD_INDEX_ON,
               "hoodie.datasource.write.operation": "upsert"}
    hudi_write(batch(hudi, [5, 101, 300], version=70), base, options)
    assert _ours(base) >= ours
    after = assert_index_is_the_table(hudi, base)
    assert set(after) == set(index) | {"o0300"}
    for key in ("o0005", "o0101"):                                           # updated where the index said
        assert (after[key].partition, after[key].file_id) == (index[key].partition, index[key].file_id)
    rows = assert_metadata_table_true(hudi, table)
    table.write(batch(hudi, range(30, 32), version=60), "upsert")
    assert assert_metadata_table_true(hudi, table) != rows

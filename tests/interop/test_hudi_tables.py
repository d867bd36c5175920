"""Tables Apache Hudi creates with its own defaults (metadata table on): tablespec imports them
(the spec plans clean), writes into them (keeping Hudi's metadata table, dropping partitions it
does not maintain) and migrates them; Apache Hudi then reads them and writes again (continuing
its metadata table), and tablespec, hudi-rs and Apache Hudi agree on the rows at each step."""
from __future__ import annotations

import json
import os

import pytest
from interop_support import apply_until_done, assert_readers_agree, cli, hudi_rows, hudi_write, save_spec
from test_hudi_metadata_table import assert_listing_is_storage

from tablespec.hudi.io import LocalStorage, checksum_sidecar
from tablespec.hudi.mdt import record_index_reader as rli_reader
from tablespec.hudi.table import HudiTable, Location
from tablespec.importer import spec_document
from tablespec.spec.model import TableSpec
from tablespec.state import observe
from tablespec.table import Table

SCHEMA = "id string, v int, dt string, ts long"
FIRST = [("a", 1, "2024-01-01", 1), ("b", 2, "2024-01-01", 1), ("c", 3, "2024-01-02", 1)]
KEYED = {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "dt",
         "hoodie.datasource.write.precombine.field": "ts"}


def _options(name: str, **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": name, **KEYED, "hoodie.datasource.write.operation": "upsert", **extra}


def _df(spark, data):
    return spark.createDataFrame(data, SCHEMA)


def _import(tmp_path, location, capsys, kinds: tuple[str, ...] = ()) -> tuple[dict, str]:
    """`tablespec import` of the table, saved as a spec file that plans with no changes (but
    `kinds`: the actions due, such as metadata-table upkeep or the rollback of a dead write)."""
    code, out, err = cli(capsys, "import", str(location), "--warehouse", str(tmp_path))
    assert code == 0, err
    spec_file = tmp_path / f"{location.name}.yaml"
    spec_file.write_text(out)
    if kinds:
        code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path), "--format", "json")
        assert code == 0 and [a["kind"] for t in json.loads(out)["tables"] for a in t["actions"]] == list(kinds), \
            out + err
    else:
        code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(tmp_path), "--detailed-exitcode")
        assert code == 0 and out.startswith("No changes."), out + err
    return spec_document(observe(HudiTable.open(str(location))), Location.parse(str(tmp_path))), str(spec_file)




def _table(spark, doc: dict, location) -> Table:
    return Table(TableSpec.model_validate(doc), str(location), spark)


def _kept(location, partitions: tuple[str, ...] = ("files",)) -> None:
    """Hudi's metadata table is there with the partitions tablespec maintains (`files`, and
    `record_index` where the table has it), and lists exactly the storage."""
    state = observe(HudiTable.open(str(location)))
    assert state.metadata_table.partitions == partitions and state.metadata_table.inflight == ()
    assert sorted(p.name for p in (location / ".hoodie" / "metadata").iterdir() if not p.name.startswith(".")) \
        == sorted(partitions)
    assert_listing_is_storage(str(location))



def test_simple_table_full_chain(hudi, tmp_path, capsys):
    """SIMPLE (Hudi's default): import, upsert, bucket bootstrap, clustering, clean; then Hudi reads
    through its metadata table, writes with its defaults (rebuilding it) and reads again."""
    location = tmp_path / "simple"
    hudi_write(_df(hudi, FIRST), location, _options("simple"))
    assert observe(HudiTable.open(str(location))).metadata_table.partitions == ("files",)
    sidecar = checksum_sidecar(str(location / ".hoodie" / "hoodie.properties"))
    assert os.path.exists(sidecar)  # Hadoop's checksum sidecar, which a rewrite must not leave stale
    doc, spec_file = _import(tmp_path, location, capsys)

    code, out, _ = cli(capsys, "show", str(location), "--format", "json")
    shown = json.loads(out)["metadataTable"]
    assert shown["present"] and shown["partitions"] == ["files"] and shown["bytes"] > 0
    code, out, _ = cli(capsys, "show", str(location))
    assert "metadata    Hudi metadata table: .hoodie/metadata" in out and "partitions files; inflight (none)" in out
    assert "index       SIMPLE (assumed: hoodie.properties records no index type)" in out

    # update_settings rewrites hoodie.properties only: the metadata table and its keys stay, and
    # Hudi reads through it (a stale .crc beside the rewritten file fails Hudi's read).
    doc["spec"]["retention"]["keepCommits"] = 5
    save_spec(doc, spec_file)
    assert apply_until_done(capsys, spec_file, tmp_path) == ["update_settings"]
    assert observe(HudiTable.open(str(location))).metadata_table.partitions == ("files",)
    assert not os.path.exists(sidecar)   # dropped with the rewrite
    assert len(hudi_rows(hudi, str(location))) == len(FIRST)

    # An action that changes files is planned alone: the metadata table is kept, nothing to build or drop.
    save_spec({**doc, "spec": {**doc["spec"], "index": {"type": "BUCKET", "numBuckets": 2}}}, spec_file)
    code, out, err = cli(capsys, "plan", spec_file, "--warehouse", str(tmp_path), "--format", "json")
    assert code == 0 and [a["kind"] for t in json.loads(out)["tables"] for a in t["actions"]] == \
        ["bucket_bootstrap"], out + err
    save_spec(doc, spec_file)

    _table(hudi, doc, location).write(_df(hudi, [("a", 10, "2024-01-01", 2), ("d", 4, "2024-01-02", 2)]))
    _kept(location)  # Hudi's metadata table recorded tablespec's commit
    assert_readers_agree(hudi, _table(hudi, doc, location))
    assert hudi_rows(hudi, str(location), **{"hoodie.metadata.enable": "true"}) == \
        hudi_rows(hudi, str(location), **{"hoodie.metadata.enable": "false"})

    doc["spec"]["index"] = {"type": "BUCKET", "numBuckets": 2, "hashFields": ["id"]}
    doc["spec"]["clustering"].update(strategy="SORT", sortColumns=["v"], everyNCommits=1)
    doc["spec"]["retention"]["keepCommits"] = 1
    save_spec(doc, spec_file)
    kinds = apply_until_done(capsys, spec_file, tmp_path)
    assert {"bucket_bootstrap", "clustering", "clean"} <= set(kinds), kinds
    table = _table(hudi, doc, location)
    expected = assert_readers_agree(hudi, table)
    orphans = [str(c) for c in location.glob("*/.*.crc") if not (c.parent / c.name[1:-4]).exists()]
    assert orphans == []  # the clean deleted Hudi's replaced files together with their sidecars

    hudi_write(_df(hudi, [("b", 20, "2024-01-01", 3), ("e", 5, "2024-01-03", 3)]), location,
               _options("simple", **{"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "2",
                                     "hoodie.bucket.index.hash.field": "id"}))
    _kept(location)   # Hudi continued it
    after = assert_readers_agree(hudi, table)
    assert len(after) == len(expected) + 1
    assert {dict(r)["id"]: dict(r)["v"] for r in after} == {"a": 10, "b": 20, "c": 3, "d": 4, "e": 5}


@pytest.mark.parametrize("case, options", [
    ("bloom", {"hoodie.index.type": "BLOOM"}),
    ("record_index", {"hoodie.index.type": "RECORD_INDEX", "hoodie.metadata.record.index.enable": "true"}),
])
def test_indexed_table_import_and_upsert(hudi, tmp_path, capsys, case, options):
    """BLOOM, and the record index in Hudi's metadata table: import, upsert, then Hudi writes with
    its index again (looking up keys in the files tablespec wrote; the record index tablespec kept)."""
    location = tmp_path / case
    hudi_write(_df(hudi, FIRST), location, _options(case, **options))
    if case == "record_index":
        assert "record_index" in observe(HudiTable.open(str(location))).metadata_table.partitions
    doc, _ = _import(tmp_path, location, capsys)       # the record index is a partition tablespec maintains
    if case == "record_index":  # Hudi's writers used its record index: the table is RECORD_LEVEL, and tags with it
        assert doc["spec"]["index"] == {"type": "RECORD_LEVEL"}
    table = _table(hudi, doc, location)
    table.write(_df(hudi, [("b", 20, "2024-01-01", 2), ("d", 4, "2024-01-02", 2)]))
    _kept(location, ("files", "record_index") if case == "record_index" else ("files",))
    if case == "record_index":     # the write's insert recorded in the index Hudi built
        assert set(rli_reader.scan(HudiTable.open(str(location)))) == {"a", "b", "c", "d"}
    hudi_write(_df(hudi, [("c", 30, "2024-01-02", 3)]), location, _options(case, **options))
    rows = assert_readers_agree(hudi, table)
    assert {dict(r)["id"]: dict(r)["v"] for r in rows} == {"a": 1, "b": 20, "c": 30, "d": 4}


def test_auto_generated_keys(hudi, tmp_path, capsys):
    location = tmp_path / "autokeys"
    hudi_write(_df(hudi, FIRST), location, {"hoodie.table.name": "autokeys", "hoodie.datasource.write.operation":
                                            "insert", "hoodie.datasource.write.partitionpath.field": "dt"})
    doc, _ = _import(tmp_path, location, capsys)
    assert doc["spec"]["recordKey"] == {"autoGenerate": True}
    table = _table(hudi, doc, location)
    table.write(_df(hudi, [("d", 4, "2024-01-02", 2)]), "insert")
    _kept(location)
    rows = assert_readers_agree(hudi, table)
    assert sorted(dict(r)["id"] for r in rows) == ["a", "b", "c", "d"]


def test_bucket_table_import_says_what_it_cannot_determine(hudi, tmp_path, capsys):
    """Hudi keeps no index type or bucket count in hoodie.properties: import must not guess SIMPLE
    for a bucketed layout (a SIMPLE write would break it), nor a bucket count it cannot know."""
    location = tmp_path / "bucket"
    hudi_write(_df(hudi, FIRST), location, _options("bucket", **{
        "hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "4"}))
    code, out, err = cli(capsys, "import", str(location), "--warehouse", str(tmp_path))
    assert code == 1 and out == "" and "Traceback" not in err
    assert "BUCKET" in err and "bucket count" in err
    assert observe(HudiTable.open(str(location))).metadata_table.partitions == ("files",)  # untouched


def test_clustered_cleaned_rolled_back_table(hudi, tmp_path, capsys):
    """A table Hudi clustered inline, cleaned and rolled back: import, upsert, Hudi reads."""
    location = tmp_path / "history"
    busy = _options("history", **{"hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "1",
                                  "hoodie.cleaner.commits.retained": "1"})
    hudi_write(_df(hudi, FIRST), location, busy)
    hudi_write(_df(hudi, [("a", 11, "2024-01-01", 2), ("b", 12, "2024-01-01", 2)]), location, busy)
    head = observe(HudiTable.open(str(location))).head
    assert [i.action for i in _timeline(location) if i.timestamp == head] == ["replacecommit"]  # a clustering
    hudi.sql(f"create table history using hudi location '{location}'")
    try:
        hudi.sql(f"call rollback_to_instant(table => 'history', instant_time => '{head}')").collect()
    finally:
        hudi.sql("drop table history")  # the catalog entry only; the files stay
    actions = {i.action for i in _timeline(location)}
    assert {"replacecommit", "clean", "rollback"} <= actions, actions
    code, out, err = cli(capsys, "verify", str(location))  # Hudi's cleaned and rolled-back files are no finding
    assert code == 0 and f"{location}: clean" in out, out + err
    doc, _ = _import(tmp_path, location, capsys)
    table = _table(hudi, doc, location)
    table.write(_df(hudi, [("c", 13, "2024-01-02", 4)]))
    _kept(location)
    rows = assert_readers_agree(hudi, table)
    assert {dict(r)["id"]: dict(r)["v"] for r in rows} == {"a": 11, "b": 12, "c": 13}  # the clustering was undone


def _timeline(location):
    from tablespec.hudi.timeline.active import Timeline
    return Timeline.load(LocalStorage(), str(location)).instants

"""HoodieMetadataRecord for the `files` partition, and the pure conversions from what a data
instant did to the records that say so.

A `files` record's key is a data partition (`.` for the non-partitioned table's "") with type 2
(FILE_LIST) and a map file name -> (size, isDeleted); the key `__all_partitions__` with type 1
(PARTITION_LIST) maps partition -> (0, isDeleted). Hudi merges records of one key oldest first
(`hfile.merge_files_records`). Files leave the listing when they leave the storage (a clean, a
rollback): a replacecommit's replaced file groups stay listed until cleaned, as in Hudi, so the
listing always equals the storage.

Hudi stores the records under the schema with its five meta fields in front (all null, but
`_hoodie_file_name` in a base file) and blanks the `key` field: the HFile cell key carries it.
`base_hfile` and `data_block` are the two forms records take on storage.
"""
from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import fastavro

from tablespec.hudi.formats.commit import CommitMetadata
from tablespec.hudi.formats.hfile import ALL_PARTITIONS_KEY, write_hfile
from tablespec.hudi.formats.logfile import WRAPPERS, BlockType, Header, LogBlock

PARTITION_LIST, FILE_LIST = 1, 2
NON_PARTITIONED_KEY = "."
NAMESPACE = "org.apache.hudi.avro.model"
# Java strings, not Avro's Utf8: Hudi's HoodieMetadataPayload casts map keys and fields to String.
STRING = {"type": "string", "avro.java.string": "String"}


def _optional(type_: Any) -> dict[str, Any]:
    return {"type": ["null", type_], "default": None}


# HoodieMetadataRecord of Apache Hudi 0.15 (field names, types, order and defaults; no docs).
SCHEMA: dict[str, Any] = {
    "type": "record", "name": "HoodieMetadataRecord", "namespace": NAMESPACE, "fields": [
        {"name": "key", "type": STRING},
        {"name": "type", "type": "int"},
        {"name": "filesystemMetadata", "type": ["null", {"type": "map", "avro.java.string": "String", "values": {
            "type": "record", "name": "HoodieMetadataFileInfo", "fields": [
                {"name": "size", "type": "long"}, {"name": "isDeleted", "type": "boolean"}]}}]},
        {"name": "BloomFilterMetadata", **_optional({
            "type": "record", "name": "HoodieMetadataBloomFilter", "fields": [
                {"name": "type", "type": STRING}, {"name": "timestamp", "type": STRING},
                {"name": "bloomFilter", "type": "bytes"}, {"name": "isDeleted", "type": "boolean"}]})},
        {"name": "ColumnStatsMetadata", **_optional({
            "type": "record", "name": "HoodieMetadataColumnStats", "fields": [
                {"name": "fileName", **_optional(STRING)}, {"name": "columnName", **_optional(STRING)},
                {"name": "minValue", "type": ["null", *WRAPPERS], "default": None},
                {"name": "maxValue", "type": ["null", *(w["name"] for w in WRAPPERS)], "default": None},
                {"name": "valueCount", **_optional("long")}, {"name": "nullCount", **_optional("long")},
                {"name": "totalSize", **_optional("long")}, {"name": "totalUncompressedSize", **_optional("long")},
                {"name": "isDeleted", "type": "boolean"}]})},
        {"name": "recordIndexMetadata", **_optional({
            "type": "record", "name": "HoodieRecordIndexInfo", "fields": [
                {"name": "partitionName", **_optional(STRING)}, {"name": "fileIdHighBits", **_optional("long")},
                {"name": "fileIdLowBits", **_optional("long")}, {"name": "fileIndex", **_optional("int")},
                {"name": "fileId", **_optional(STRING)}, {"name": "instantTime", **_optional("long")},
                {"name": "fileIdEncoding", "type": "int", "default": 0}]})},
    ]}
META_FIELDS = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
               "_hoodie_partition_path", "_hoodie_file_name")
# What Hudi's metadata writers store: the meta fields first.
STORED_SCHEMA: dict[str, Any] = {**SCHEMA, "fields": [{"name": n, **_optional("string")} for n in META_FIELDS]
                                 + SCHEMA["fields"]}
SCHEMA_JSON = json.dumps(SCHEMA, separators=(",", ":"))
STORED_SCHEMA_JSON = json.dumps(STORED_SCHEMA, separators=(",", ":"))


def _one_x(schema: dict[str, Any]) -> dict[str, Any]:
    """Hudi 1.x's HoodieMetadataRecord from 0.15's (measured on the files Hudi 1.2.0 writes into a
    new table's metadata table): column statistics gain LocalDateWrapper and ArrayWrapper values,
    `isTightBound` and `valueType`, the record index a `position`, and the record a
    SecondaryIndexMetadata. Readers that merge a slice (hudi-rs) expect the schema of
    the files Hudi 1.x appends to it."""
    out = json.loads(json.dumps(schema))
    fields = {f["name"]: f for f in out["fields"]}
    stats = {f["name"]: f for f in fields["ColumnStatsMetadata"]["type"][1]["fields"]}
    scalars = [w if isinstance(w, str) else w["name"] for w in stats["maxValue"]["type"][1:]] + ["LocalDateWrapper"]
    stats["minValue"]["type"] += [
        {"type": "record", "name": "LocalDateWrapper", "fields": [{"name": "value", "type": "int"}]},
        {"type": "record", "name": "ArrayWrapper", "fields": [
            {"name": "wrappedValues", **_optional({"type": "array", "items": ["null", *scalars]})}]}]
    stats["maxValue"]["type"] += ["LocalDateWrapper", "ArrayWrapper"]
    fields["ColumnStatsMetadata"]["type"][1]["fields"] += [
        {"name": "isTightBound", "type": "boolean", "default": False},
        {"name": "valueType", **_optional({"type": "record", "name": "HoodieValueTypeInfo", "fields": [
            {"name": "typeOrdinal", "type": "int"}, {"name": "additionalInfo", **_optional(STRING)}]})}]
    fields["recordIndexMetadata"]["type"][1]["fields"].append({"name": "position", **_optional("long")})
    out["fields"].append({"name": "SecondaryIndexMetadata", **_optional({
        "type": "record", "name": "HoodieSecondaryIndexInfo", "fields": [{"name": "isDeleted", "type": "boolean"}]})})
    return out


SCHEMA_1X_JSON = json.dumps(_one_x(SCHEMA), separators=(",", ":"))
STORED_SCHEMA_1X_JSON = json.dumps(_one_x(STORED_SCHEMA), separators=(",", ":"))
_PARSED = {False: fastavro.parse_schema(json.loads(STORED_SCHEMA_JSON)),
           True: fastavro.parse_schema(json.loads(STORED_SCHEMA_1X_JSON))}


def schema_json(one_x: bool = False) -> str:
    """The record schema commit metadata names (Hudi 0.15's or 1.x's)."""
    return SCHEMA_1X_JSON if one_x else SCHEMA_JSON


def stored_schema_json(one_x: bool = False) -> str:
    """The schema records are stored under, meta fields first (Hudi 0.15's or 1.x's)."""
    return STORED_SCHEMA_1X_JSON if one_x else STORED_SCHEMA_JSON


def partition_key(partition: str) -> str:
    """The record key of a data partition ("" -> ".")."""
    return partition or NON_PARTITIONED_KEY


def partition_of(key: str) -> str:
    return "" if key == NON_PARTITIONED_KEY else key


@dataclass
class FilesChange:
    """What one instant did to the table's files: partition -> file name -> size added, partition ->
    names removed from the storage, partitions created and dropped."""
    added: dict[str, dict[str, int]] = field(default_factory=dict)
    removed: dict[str, set[str]] = field(default_factory=dict)
    partitions_added: set[str] = field(default_factory=set)
    partitions_dropped: set[str] = field(default_factory=set)

    def records(self) -> list[tuple[str, dict[str, Any]]]:
        """The `files` records of this change, sorted by key (HFile order)."""
        out: dict[str, dict[str, Any]] = {}
        listed = {p: False for p in self.partitions_added | set(self.added)} | {p: True for p in self.partitions_dropped}
        if listed:
            out[ALL_PARTITIONS_KEY] = record(ALL_PARTITIONS_KEY, PARTITION_LIST,
                                             {partition_key(p): (0, gone) for p, gone in listed.items()})
        for partition in set(self.added) | set(self.removed):
            if partition in self.partitions_dropped:
                continue
            entries = {n: (s, False) for n, s in self.added.get(partition, {}).items()}
            entries.update((n, (0, True)) for n in self.removed.get(partition, set()) if n not in entries)
            if entries:
                key = partition_key(partition)
                out[key] = record(key, FILE_LIST, entries)
        return sorted(out.items(), key=lambda kv: kv[0].encode())

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.partitions_added or self.partitions_dropped)


def record(key: str, kind: int, entries: Mapping[str, tuple[int, bool]]) -> dict[str, Any]:
    return {"key": key, "type": kind,
            "filesystemMetadata": {n: {"size": int(s), "isDeleted": bool(d)} for n, (s, d) in sorted(entries.items())}}


def listing_records(listing: Mapping[str, Mapping[str, int]]) -> list[tuple[str, dict[str, Any]]]:
    """The records of a whole listing (partition -> file -> size): what initialization writes."""
    return FilesChange(added={p: dict(f) for p, f in listing.items()}, partitions_added=set(listing)).records()


def encode(record_: Mapping[str, Any], file_name: str | None = None, one_x: bool = False) -> bytes:
    """The Avro bytes Hudi stores for a record (key blanked, `_hoodie_file_name` in base files)."""
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _PARSED[one_x], {**dict.fromkeys(META_FIELDS), **record_, "key": "",
                                              "_hoodie_file_name": file_name})
    return buf.getvalue()


def base_hfile(records: Sequence[tuple[str, Mapping[str, Any]]], file_name: str, one_x: bool = False) -> bytes:
    """A base file: every record (sorted by key) with `_hoodie_file_name` set, Hudi's schema
    and min/max keys in file info. (Hudi adds a bloom filter of the keys no metadata reader uses.)"""
    return write_hfile(((key, encode(rec, file_name, one_x)) for key, rec in records),
                       {"schema": stored_schema_json(one_x)})


def data_block(instant: str, records: Sequence[tuple[str, Mapping[str, Any]]], one_x: bool = False) -> LogBlock:
    """The HFILE_DATA log block of one deltacommit: an inline HFile of the records (no key range in
    its file info, as Hudi writes it) with the instant and schema in the header."""
    schema = stored_schema_json(one_x)
    content = write_hfile(((key, encode(rec, None, one_x)) for key, rec in records), {"schema": schema},
                          key_range=False)
    return LogBlock(BlockType.HFILE_DATA, {Header.INSTANT_TIME: instant, Header.SCHEMA: schema}, content)


def from_commit(metadata: CommitMetadata) -> FilesChange:
    """A commit / replacecommit / deltacommit: the files its write stats name, with their sizes.
    Replaced file groups are not removed here: their files stay on the storage until a clean."""
    change = FilesChange()
    for partition, stats in metadata.partition_to_write_stats.items():
        for stat in stats:
            if not stat.path:
                continue
            name = stat.path.rsplit("/", 1)[-1]
            files = change.added.setdefault(partition, {})
            files[name] = max(files.get(name, 0), int(stat.file_size_in_bytes or stat.total_write_bytes or 0))
    if metadata.operation_type == "DELETE_PARTITION":
        change.partitions_dropped = set(metadata.partition_to_replace_file_ids or {})
    return change


def from_clean(metadata: Mapping[str, Any]) -> FilesChange:
    """A completed clean (HoodieCleanMetadata): the files it deleted."""
    change = FilesChange()
    for partition, info in (metadata.get("partitionMetadata") or {}).items():
        names = {p.rsplit("/", 1)[-1] for p in info.get("successDeleteFiles") or []}
        if names:
            change.removed[partition] = names
    return change


def from_deleted_files(deleted: Mapping[str, Iterable[str]]) -> FilesChange:
    """Files removed from the storage (a rollback's or restore's deletions): partition -> names."""
    return FilesChange(removed={p: {n.rsplit("/", 1)[-1] for n in names} for p, names in deleted.items() if names})

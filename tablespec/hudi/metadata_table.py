"""Hudi's metadata table (`.hoodie/metadata`): what a table has of it, and dropping the partitions
tablespec does not maintain.

Apache Hudi writers keep a metadata table (file listings, maybe column stats, bloom filters, a
record index) and list files through it. tablespec keeps its `files`, `record_index`,
`column_stats` and (version 9) `partition_stats` partitions in every change (mdt/sync.py); a
partition it does not maintain would go stale, so before tablespec changes
files it drops such partitions the way Hudi does: hoodie.properties first stops naming them
(readers stop using them), then their folders go. A crash in between leaves folders the
properties do not name, which Hudi ignores (a writer enabling the partition rebuilds it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tablespec.hudi import keys
from tablespec.hudi.config import META_FOLDER, PROPERTIES_FILE, named_partitions, write_table_config
from tablespec.hudi.formats import index_defs
from tablespec.hudi.io import join, join_inside

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

FOLDER = "metadata"
PARTITIONS_KEY = keys.METADATA_PARTITIONS.name
INFLIGHT_KEY = keys.METADATA_PARTITIONS_INFLIGHT.name


def folder(base: str) -> str:
    return join(base, META_FOLDER, FOLDER)


@dataclass(frozen=True)
class MetadataTable:
    """What hoodie.properties and the file system say about a table's metadata table."""
    present: bool                     # the folder exists
    partitions: tuple[str, ...]       # ready partitions named in hoodie.properties
    inflight: tuple[str, ...]         # partitions Hudi was still building
    bytes: int
    partition_bytes: tuple[tuple[str, int], ...] = ()   # bytes of each partition folder present

    @property
    def in_use(self) -> bool:
        """Whether Hudi readers and writers use it (any partition named), or it is being built."""
        return bool(self.partitions or self.inflight)

    def to_dict(self) -> dict:
        return {"present": self.present, "partitions": list(self.partitions),
                "inflightPartitions": list(self.inflight), "bytes": self.bytes,
                "partitionBytes": dict(self.partition_bytes)}


NONE = MetadataTable(False, (), (), 0)


def describe(table: HudiTable) -> MetadataTable:
    """The metadata table of an existing table, as its (cached) hoodie.properties name it."""
    storage, path = table.storage, folder(table.base)
    present = storage.is_dir(path)
    files = list(storage.walk_files(path)) if present else []
    by_partition: dict[str, int] = {}
    root = path.rstrip("/") + "/"
    for f in files:
        top = f.path[len(root):].split("/", 1)[0] if f.path.startswith(root) else ""
        if top and not top.startswith(".") and "/" in f.path[len(root):]:
            by_partition[top] = by_partition.get(top, 0) + f.size
    return MetadataTable(present, named_partitions(table.config), named_partitions(table.config, inflight=True),
                         sum(f.size for f in files), tuple(sorted(by_partition.items())))


def unmaintained(config, maintained: frozenset[str]) -> tuple[str, ...]:
    """Metadata partitions hoodie.properties name (ready, or being built) that are not `maintained`
    (a partition still being built is never maintained: tablespec cannot finish Hudi's build)."""
    ready, inflight = named_partitions(config), named_partitions(config, inflight=True)
    return tuple(dict.fromkeys([p for p in ready if p not in maintained] + list(inflight)))


def drop_partitions(table: HudiTable, partitions: tuple[str, ...]) -> tuple[str, ...]:
    """Stop naming `partitions` in hoodie.properties (ready or inflight), then delete their folders;
    returns the ones it found named or present. Call under Hudi's transaction lock (a Hudi writer
    names partitions inside its commit), before the table's files change."""
    # read now: under Hudi's transaction lock, a Hudi writer may just have named a partition
    config = table.fresh_config()
    if config is None or not partitions:
        return ()
    ready, inflight = named_partitions(config), named_partitions(config, inflight=True)
    named_ = [p for p in partitions if p in ready or p in inflight]
    index_defs.check(table.storage, table.base, config)   # refused before hoodie.properties changes
    if named_:
        table.wrote_config(write_table_config(table.storage, table.base, config.with_updates(extra={
            **config.extra, PARTITIONS_KEY: ",".join(p for p in ready if p not in partitions),
            INFLIGHT_KEY: ",".join(p for p in inflight if p not in partitions)})))
    index_defs.remove(table.storage, table.base, config, partitions)   # Hudi 1.x: their definitions too
    paths = {p: join_inside(folder(table.base), p, origin=f"{PROPERTIES_FILE} {PARTITIONS_KEY}") for p in partitions}
    present = [p for p in partitions if table.storage.is_dir(paths[p])]
    for partition in present:
        table.storage.delete_tree(paths[partition])
    return tuple(dict.fromkeys(named_ + present))


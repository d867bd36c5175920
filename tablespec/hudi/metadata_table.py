"""Hudi's metadata table (`.hoodie/metadata`): what a table has of it, and retiring it.

Apache Hudi writers keep a metadata table (file listings, maybe column stats, bloom filters, a
record index) and list files through it. tablespec does not maintain it, so before tablespec
changes a table it retires the metadata table the way Hudi does for a writer configured with
hoodie.metadata.enable=false: hoodie.properties first names no metadata partition (readers stop
using it), then the folder goes. A crash in between leaves a folder the properties do not name,
which Hudi ignores and the next retire deletes. A Hudi writer that enables it again rebuilds it
from a file listing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tablespec.hudi import keys
from tablespec.hudi.config import META_FOLDER, write_table_config
from tablespec.hudi.io import join

if TYPE_CHECKING:
    from tablespec.hudi.table import HudiTable

FOLDER = "metadata"
PARTITIONS_KEY = keys.METADATA_PARTITIONS.name
INFLIGHT_KEY = keys.METADATA_PARTITIONS_INFLIGHT.name


def folder(base: str) -> str:
    return join(base, META_FOLDER, FOLDER)


def _names(value: str | None) -> tuple[str, ...]:
    return tuple(p.strip() for p in (value or "").split(",") if p.strip())


@dataclass(frozen=True)
class MetadataTable:
    """What hoodie.properties and the file system say about a table's metadata table."""
    present: bool                     # the folder exists
    partitions: tuple[str, ...]       # ready partitions named in hoodie.properties
    inflight: tuple[str, ...]         # partitions Hudi was still building
    bytes: int

    @property
    def in_use(self) -> bool:
        """Whether Hudi readers and writers use it (any partition named), or it is being built."""
        return bool(self.partitions or self.inflight)

    def to_dict(self) -> dict:
        return {"present": self.present, "partitions": list(self.partitions),
                "inflightPartitions": list(self.inflight), "bytes": self.bytes}


NONE = MetadataTable(False, (), (), 0)


def describe(table: HudiTable) -> MetadataTable:
    """The metadata table of an existing table, as its (cached) hoodie.properties name it."""
    storage, path = table.storage, folder(table.base)
    props = table.config.to_properties() if table.config is not None else {}
    present = storage.is_dir(path)
    size = sum(f.size for f in storage.walk_files(path)) if present else 0
    return MetadataTable(present, _names(props.get(PARTITIONS_KEY)), _names(props.get(INFLIGHT_KEY)), size)


def named(props: dict[str, str]) -> bool:
    """Whether hoodie.properties name metadata-table partitions (ready or being built)."""
    return bool(_names(props.get(PARTITIONS_KEY)) or _names(props.get(INFLIGHT_KEY)))


def unname(table: HudiTable) -> bool:
    """Empty the metadata partitions hoodie.properties names (Hudi readers and writers stop using
    the metadata table); returns whether it named any."""
    # read now: callers hold Hudi's transaction lock, under which a Hudi writer may just have named a partition
    config = table.fresh_config()
    props = config.to_properties() if config is not None else {}
    if config is None or not named(props):
        return False
    table.wrote_config(write_table_config(table.storage, table.base, config.with_updates(
        extra={**config.extra, PARTITIONS_KEY: "", INFLIGHT_KEY: ""})))
    return True


def retire(table: HudiTable) -> bool:
    """Stop Hudi from using the metadata table, then delete it; returns whether there was one.
    Call under the table lock, before the table changes."""
    named = unname(table)
    storage, path = table.storage, folder(table.base)
    present = storage.is_dir(path)
    if present:
        storage.delete_tree(path)
        table.refresh(config=False)  # .hoodie/ lists no metadata folder any more
    return named or present

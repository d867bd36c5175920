"""Planning Hudi's metadata table: build it where a table has none, drop the partitions tablespec
does not maintain (they would go stale with tablespec's next change). Pure: from the observed state."""
from __future__ import annotations

from tablespec.hudi.config import unwritable_version
from tablespec.hudi.keys import METADATA_ENABLE
from tablespec.hudi.mdt.layout import FILES
from tablespec.hudi.mdt.sync import MAINTAINED
from tablespec.hudi.metadata_table import unmaintained
from tablespec.plan.actions import (
    BuildMetadataTable,
    DropMetadataPartitions,
    MetadataBuildEstimate,
    MetadataPartitions,
)
from tablespec.state import TableState


def metadata_table_actions(state: TableState) -> list:
    """The actions that make an existing table's metadata table one tablespec keeps true."""
    if not state.exists or unwritable_version(state.table_config) is not None:
        return []  # a table tablespec does not write keeps what its Hudi writers keep
    actions: list = []
    dropped = unmaintained(state.config, MAINTAINED)
    if dropped:
        actions.append(DropMetadataPartitions(params=MetadataPartitions(partitions=list(dropped)), reasons=[
            f"Hudi's metadata table has partition(s) tablespec does not maintain ({', '.join(dropped)}): "
            f"readers would find them stale after tablespec's next change; Hudi rebuilds them when a "
            f"writer enables them again"]))
    damaged = rebuilt(state)
    if damaged:
        actions.append(DropMetadataPartitions(params=MetadataPartitions(partitions=list(damaged)), reasons=[
            f"rebuild: {d.message}" for d in state.metadata_damage] + [
            f"the damaged partition(s) ({', '.join(damaged)}) are dropped, then built again from the table"]))
    if FILES not in state.metadata_table.partitions or FILES in damaged:   # version 6's layout or Hudi 1.x's
        files, size = state.data_files
        why = ("its files partition is not ready in hoodie.properties" if state.metadata_table.in_use
               or state.metadata_table.present else "the table has none (retired earlier, or written with "
                                                     f"{METADATA_ENABLE.name}=false)")
        actions.append(BuildMetadataTable(
            estimate=MetadataBuildEstimate(partitions=len(state.partitions), files=files, bytes=size),
            reasons=[f"Hudi's metadata table lists the table's files for every reader and writer; {why}"]))
    return actions


def rebuilt(state: TableState) -> tuple[str, ...]:
    """The metadata partitions a plan drops and builds again because they are damaged: a damaged
    `files` partition takes the whole metadata table (building it starts afresh)."""
    damaged = {d.partition for d in state.metadata_damage}
    if FILES in damaged:
        return tuple(dict.fromkeys([*state.metadata_table.partitions, *sorted(damaged)]))
    return tuple(sorted(damaged))

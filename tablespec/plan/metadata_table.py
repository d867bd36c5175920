"""Planning Hudi's metadata table: build it where a table has none, drop the partitions tablespec
does not maintain (they would go stale with tablespec's next change). Pure: from the observed state."""
from __future__ import annotations

from tablespec.errors import PlanError
from tablespec.hudi.config import unwritable_version
from tablespec.hudi.keys import METADATA_COLUMN_STATS_ENABLE, METADATA_ENABLE
from tablespec.hudi.mdt.column_stats import COLUMN_STATS, PARTITION_STATS
from tablespec.hudi.mdt.column_stats_changes import half_built, indexed_columns, kept_in
from tablespec.hudi.mdt.layout import FILES
from tablespec.hudi.mdt.sync import maintained_partitions
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
    dropped = unmaintained(state.config, maintained_partitions(state.config))
    if dropped:
        actions.append(DropMetadataPartitions(params=MetadataPartitions(partitions=list(dropped)), reasons=[
            f"Hudi's metadata table has partition(s) tablespec does not maintain ({', '.join(dropped)}): "
            f"readers would find them stale after tablespec's next change; Hudi rebuilds them when a "
            f"writer enables them again"]))
    unbuilt = half_built(state.table) if state.table is not None and kept_in(state.config) else ()
    if unbuilt:
        actions.append(DropMetadataPartitions(params=MetadataPartitions(partitions=list(unbuilt)), reasons=[
            f"Hudi's metadata table names {', '.join(unbuilt)} but holds no completed file group of it (a restore "
            "rolled back its build, or it was never finished): dropped, never trusted; Hudi rebuilds it when a "
            "writer enables it again"]))
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


def undeclared_indexes(spec, config) -> tuple[str, ...]:
    """The data-skipping partitions a table with `config` has that its spec's `dataSkipping` section (when
    it has one) does not declare: dropped, as a Hudi writer with them off drops them."""
    declared = spec.spec.data_skipping
    if declared is None:
        return ()
    wanted = {COLUMN_STATS} if declared.column_stats is not None else set()
    wanted |= {PARTITION_STATS} if declared.partition_stats else set()
    return tuple(p for p in kept_in(config) if p not in wanted)


def data_skipping_actions(spec, state: TableState) -> list:
    """Dropping the data-skipping partitions the spec does not declare; refused: one it declares that
    the table lacks (tablespec does not build them yet), or other columns than the table's."""
    if not state.exists or unwritable_version(state.table_config) is not None or spec.spec.data_skipping is None:
        return []
    declared = spec.spec.data_skipping
    found = kept_in(state.config)
    missing = [p for p, on in ((COLUMN_STATS, declared.column_stats is not None),
                               (PARTITION_STATS, declared.partition_stats)) if on and p not in found]
    where = f"table {spec.metadata.name} at {state.location}"
    if missing:
        raise PlanError(f"{where}: spec.dataSkipping declares {', '.join(missing)}, which its metadata table does "
                        "not have: tablespec keeps these indexes but does not build them yet (a Hudi writer with "
                        f"{METADATA_COLUMN_STATS_ENABLE.name}=true builds them); remove the declaration for now")
    columns = declared.column_stats.columns if declared.column_stats is not None else None
    if columns is not None and state.table_config.version >= 8 and list(columns) != list(
            indexed_columns(state.handle) or ()):
        raise PlanError(f"{where}: spec.dataSkipping.columnStats.columns differ from the columns the table's "
                        f"column statistics cover ({', '.join(indexed_columns(state.handle) or ())}): changing them "
                        "rebuilds the index, which tablespec does not do yet")
    dropped = undeclared_indexes(spec, state.config)
    if not dropped:
        return []
    return [DropMetadataPartitions(params=MetadataPartitions(partitions=list(dropped)), reasons=[
        f"the spec's dataSkipping section does not declare {', '.join(dropped)}: dropped, as a Hudi writer with "
        "them off drops them; declaring them again needs a Hudi writer to build them"])]


def rebuilt(state: TableState) -> tuple[str, ...]:
    """The metadata partitions a plan drops and builds again because they are damaged: a damaged
    `files` partition takes the whole metadata table (building it starts afresh)."""
    damaged = {d.partition for d in state.metadata_damage}
    if FILES in damaged:
        return tuple(dict.fromkeys([*state.metadata_table.partitions, *sorted(damaged)]))
    return tuple(sorted(damaged))

"""Planning Hudi's metadata table: build it where a table has none, drop the partitions tablespec
does not maintain (they would go stale with tablespec's next change). Pure: from the observed state."""
from __future__ import annotations

from tablespec.errors import PlanError
from tablespec.hudi.config import unwritable_version
from tablespec.hudi.keys import METADATA_COLUMN_STATS_ENABLE, METADATA_ENABLE
from tablespec.hudi.mdt import expression_index, secondary_index
from tablespec.hudi.mdt.bloom_filters import BLOOM_FILTERS
from tablespec.hudi.mdt.column_stats import COLUMN_STATS, PARTITION_STATS
from tablespec.hudi.mdt.column_stats_changes import half_built, hudi_default_columns, indexed_columns, kept_in
from tablespec.hudi.mdt.layout import FILES
from tablespec.hudi.mdt.record_index import RECORD_INDEX
from tablespec.hudi.mdt.sync import maintained_partitions
from tablespec.hudi.metadata_table import PARTITIONS_KEY, unmaintained
from tablespec.plan.actions import (
    BuildDataSkipping,
    BuildMetadataTable,
    Change,
    DataSkippingIndexes,
    DropMetadataPartitions,
    FooterEstimate,
    MetadataBuildEstimate,
    MetadataPartitions,
    SecondaryIndexBuild,
)
from tablespec.state import TableState


def metadata_table_actions(state: TableState, rebuilt_by_spec: tuple[str, ...] = ()) -> list:
    """The actions that make an existing table's metadata table one tablespec keeps true;
    `rebuilt_by_spec`: the data-skipping partitions a `build_data_skipping` builds (again): not
    dropped here (its apply drops a half-built one first)."""
    if not state.exists or unwritable_version(state.table_config) is not None:
        return []  # a table tablespec does not write keeps what its Hudi writers keep
    actions: list = []
    dropped = tuple(p for p in unmaintained(state.config, maintained_partitions(state.config)) if p not in rebuilt_by_spec)
    building = tuple(p for p in dropped if p in state.metadata_table.inflight)
    dropped = tuple(p for p in dropped if p not in building)
    if building:
        actions.append(DropMetadataPartitions(params=MetadataPartitions(partitions=list(building)), reasons=[
            f"Hudi's metadata table has {', '.join(building)} half-built (inflight in hoodie.properties: a build "
            "that died, or one still running): dropped, never trusted; built again where the spec needs it"]))
    if dropped:
        actions.append(DropMetadataPartitions(params=MetadataPartitions(partitions=list(dropped)), reasons=[
            f"Hudi's metadata table has partition(s) tablespec does not maintain ({', '.join(dropped)}): "
            f"readers would find them stale after tablespec's next change; Hudi rebuilds them when a "
            f"writer enables them again"]))
    unbuilt = tuple(p for p in half_built(state.table) if p not in rebuilt_by_spec) \
        if state.table is not None and _kept(state.config) else ()
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


def declared_indexes(spec) -> tuple[str, ...]:
    """The data-skipping partitions the spec's `dataSkipping` section declares."""
    declared = spec.spec.data_skipping
    if declared is None:
        return ()
    return tuple(p for p, on in ((COLUMN_STATS, declared.column_stats is not None),
                                 (PARTITION_STATS, declared.partition_stats),
                                 (BLOOM_FILTERS, declared.bloom_filters)) if on) + tuple(
        secondary_index.partition(i.name) for i in declared.secondary_indexes)


def _kept(config) -> tuple[str, ...]:
    return kept_in(config) + secondary_index.kept_in(config)


def undeclared_indexes(spec, config) -> tuple[str, ...]:
    """The data-skipping partitions a table with `config` has that its spec's `dataSkipping` section (when
    it has one) does not declare: dropped, as a Hudi writer with them off drops them."""
    if spec.spec.data_skipping is None:
        return ()
    return tuple(p for p in _kept(config) if p not in declared_indexes(spec))


def indexes_to_build(spec, state: TableState) -> tuple[str, ...]:
    """The declared data-skipping partitions the table lacks, has half-built or is building (a
    build that died): built (again) by `build_data_skipping`."""
    if not state.exists or unwritable_version(state.table_config) is not None:
        return ()
    ready = [p for p in _kept(state.config) if state.table is None or p not in half_built(state.table)]
    return tuple(p for p in declared_indexes(spec) if p not in ready)


def _secondary_index_problems(spec, state: TableState, where: str) -> str | None:
    """Why the spec's secondary indexes cannot be kept on this table, or None."""
    declared = spec.spec.data_skipping.secondary_indexes
    if not declared:
        return None
    config = state.table_config
    if config.version < 9 or config.table_type != "COPY_ON_WRITE":
        return (f"{where}: spec.dataSkipping.secondaryIndexes: tablespec keeps secondary indexes on table version 9 "
                f"COPY_ON_WRITE tables only (the table is version {config.version} {config.table_type})")
    if RECORD_INDEX not in state.metadata_table.partitions:
        return (f"{where}: spec.dataSkipping.secondaryIndexes need Hudi's record index, which the table lacks: "
                "apply index.type RECORD_LEVEL first, then declare the secondary indexes")
    have = secondary_index.columns(state.handle, secondary_index.kept_in(state.config))
    changed = [f"{i.name} ({have[p]} -> {i.column})" for i in declared
               if (p := secondary_index.partition(i.name)) in have and have[p] != i.column]
    if changed:
        return (f"{where}: spec.dataSkipping.secondaryIndexes change the column of {', '.join(changed)}: tablespec does "
                "not rebuild an index on another column yet; remove it (one apply drops it), then declare it again")
    return None


def _unkeyable_secondary_indexes(spec, state: TableState, where: str) -> str | None:
    """Why the table's secondary indexes this plan keeps cannot be kept: one on a column of a type tablespec
    cannot key (every write would fail after writing its data files), or None."""
    kept = [p for p in secondary_index.kept_in(state.config) if p not in undeclared_indexes(spec, state.config)]
    if kept and state.table is not None:      # a half-built one is dropped: no column to check
        kept = [p for p in kept if p not in half_built(state.table)]
    if not kept:
        return None
    types = {c.name: str(c.type) for c in state.columns}
    found = [f"secondary index {p[len(secondary_index.PREFIX):]} is on column {column} of type {types[column]}"
             for p, column in secondary_index.columns(state.handle, kept).items()
             if types.get(column, "string") not in secondary_index.COLUMN_TYPES]
    if not found:
        return None
    return (f"{where}: the table's {'; '.join(found)}: tablespec keeps secondary indexes on string and integer "
            f"columns only ({', '.join(secondary_index.COLUMN_TYPES)}); remove it: declare spec.dataSkipping "
            "without it (apply drops it), or DROP INDEX with Apache Hudi")


def _kept_expression_indexes(spec, state: TableState, where: str) -> str | None:
    """Why the plan would keep expression indexes, which tablespec's writes would leave stale: declared ones,
    or the table's where the spec has no dataSkipping section (which keeps what the table has); or None."""
    declared = spec.spec.data_skipping
    if declared is not None and declared.expression_indexes:
        kept = [i.model_dump() for i in declared.expression_indexes]
        whose = "spec.dataSkipping.expressionIndexes declares"
    elif declared is None and expression_index.named(state.config) and (kept := expression_index.found(state.handle)):
        whose = "the spec keeps the table's data-skipping indexes (it has no dataSkipping section), among them"
    else:
        return None
    return (f"{where}: {whose} the expression index(es) {'; '.join(map(expression_index.described, kept))}: "
            "tablespec's writes cannot keep Hudi's expression indexes (their values are Spark SQL functions of every "
            "row), so they would go stale; declare spec.dataSkipping without them (apply drops them) or DROP INDEX "
            "with Apache Hudi")


def expression_index_refusal(spec, state: TableState) -> str | None:
    """Why a write must not go on, or None: the table has expression indexes, which its files' change would
    leave stale (a spec keeping them) or which it would drop unplanned (a spec leaving them out: apply drops
    them, visibly)."""
    where = f"table {spec.metadata.name} at {state.location}"
    if (kept := _kept_expression_indexes(spec, state, where)) is not None:
        return kept
    if named := expression_index.named(state.config):
        return (f"{where} has Hudi's expression index(es) {', '.join(p[len(expression_index.PREFIX):] for p in named)}, "
                "which its spec leaves out: run `tablespec plan` and `tablespec apply` first (they drop them)")
    return None


def secondary_index_refusal(spec, state: TableState) -> str | None:
    """Why a write must not go on, or None: a secondary index the table keeps is on a column tablespec
    cannot key, which its tasks would find only after writing the data files."""
    return _unkeyable_secondary_indexes(spec, state, f"table {spec.metadata.name} at {state.location}")


def _indexed_columns(spec, state: TableState) -> list[str] | None:
    """The columns a build indexes: on version 9 the declared ones or Hudi 1.x's default selection
    (its definition lists them); None on version 6 (every column Hudi 0.15 indexes)."""
    if state.table_config.version < 8:
        return None
    listed = spec.spec.data_skipping.column_stats.columns if spec.spec.data_skipping.column_stats else None
    return list(listed) if listed is not None else hudi_default_columns((c.name, c.type) for c in state.columns)


def _kept_columns(state: TableState, missing: tuple[str, ...]) -> list[str] | None:
    """The columns partition_stats built beside the column_stats a table keeps covers: those the index
    definition lists, the only ones each write keeps (bounds of another column would go stale)."""
    covered = indexed_columns(state.handle) if PARTITION_STATS in missing else None
    return None if covered is None else list(covered)


def data_skipping_actions(spec, state: TableState) -> list:
    """Building the declared data-skipping partitions the table lacks (or has half-built), and
    dropping those the spec does not declare; refused: other columns than the table's."""
    where = f"table {spec.metadata.name} at {state.location}"
    if not state.exists:   # declared expression indexes are refused on a new table too: no write keeps them
        if (problem := _kept_expression_indexes(spec, state, where)) is not None:
            raise PlanError(problem)
        return []
    if unwritable_version(state.table_config) is not None:
        return []
    if (problem := _unkeyable_secondary_indexes(spec, state, where) or _kept_expression_indexes(spec, state, where)):
        raise PlanError(problem)
    if spec.spec.data_skipping is None:
        return []
    declared = spec.spec.data_skipping
    actions: list = []
    if (problem := _secondary_index_problems(spec, state, where)) is not None:
        raise PlanError(problem)
    missing = indexes_to_build(spec, state)
    if missing and state.table_config.table_type == "MERGE_ON_READ":
        raise PlanError(f"{where}: spec.dataSkipping declares {', '.join(missing)}, which the table lacks: tablespec "
                        "builds them from base files' Parquet footers, and a MERGE_ON_READ table's log files have "
                        f"none; build them with a Hudi writer ({METADATA_COLUMN_STATS_ENABLE.name}=true) or "
                        "remove the declaration")
    if missing:
        files = [g for g in state.file_groups if g.base_file]
        named = [p for p in missing if p in _kept(state.config) or p in state.metadata_table.inflight]
        secondary = [p for p in missing if p.startswith(secondary_index.PREFIX)]
        built = [SecondaryIndexBuild(name=i.name, column=i.column) for i in declared.secondary_indexes
                 if secondary_index.partition(i.name) in secondary]
        columns = _indexed_columns(spec, state) if COLUMN_STATS in missing else _kept_columns(state, missing)
        actions.append(BuildDataSkipping(
            params=DataSkippingIndexes(partitions=list(missing), columns=columns, secondary_indexes=built or None),
            changes=[Change(path="metadataTable.partitions", new=list(missing), property=PARTITIONS_KEY)] + (
                [Change(path="metadataTable.columnStats.columns", new=columns)]
                if columns is not None and COLUMN_STATS in missing else []),
            estimate=FooterEstimate(partitions=len({g.partition for g in files}), files=len(files),
                                    bytes=sum(g.size for g in files)),
            reasons=[f"spec.dataSkipping declares {', '.join(missing)}, which the table's metadata table "
                     + (f"has half-built ({', '.join(named)}: dropped and built again, never trusted)" if named
                        else "does not have") + "; built from the " + (
                         "Parquet footers of its latest base files" if not secondary else
                         "latest base files (footers; the indexed and key columns of each file for "
                         f"{', '.join(secondary)})")
                     + (" (their bloom filters; a file written without one: the filter of its record keys)"
                        if BLOOM_FILTERS in missing else "")]))
    listed = declared.column_stats.columns if declared.column_stats is not None else None
    if COLUMN_STATS not in missing and listed is not None and state.table_config.version >= 8 and list(
            listed) != list(indexed_columns(state.handle) or ()):
        raise PlanError(f"{where}: spec.dataSkipping.columnStats.columns differ from the columns the table's "
                        f"column statistics cover ({', '.join(indexed_columns(state.handle) or ())}): changing them "
                        "rebuilds the index, which tablespec does not do yet")
    dropped = undeclared_indexes(spec, state.config)
    if dropped:
        actions.append(DropMetadataPartitions(params=MetadataPartitions(partitions=list(dropped)), reasons=[
            f"the spec's dataSkipping section does not declare {', '.join(dropped)}: dropped, as a Hudi writer "
            "with them off drops them"]))
    return actions


def rebuilt(state: TableState) -> tuple[str, ...]:
    """The metadata partitions a plan drops and builds again because they are damaged: a damaged
    `files` partition takes the whole metadata table (building it starts afresh)."""
    damaged = {d.partition for d in state.metadata_damage}
    if FILES in damaged:
        return tuple(dict.fromkeys([*state.metadata_table.partitions, *sorted(damaged)]))
    return tuple(sorted(damaged))

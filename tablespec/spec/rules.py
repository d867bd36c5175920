"""Rules relating fields of a table spec to each other: errors (run by the model) and warnings.

Locations use the YAML (camelCase) names; errors are relative to the model they check, warnings
to the document.
"""
from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from tablespec.spec.base import Problem, Unparsed, as_written, parsed
from tablespec.types import Array, Map, Struct

if TYPE_CHECKING:
    from tablespec.spec.model import Clustering, Column, Compaction, Retention, TableBody, TableSpec


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate `word` most likely misspells (case differences first), or None."""
    candidates = list(candidates)
    same_case = [c for c in candidates if c.lower() == word.lower()]
    close = same_case or difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`"; did you mean 'x'?"` for the closest candidate, or `""` when nothing is close."""
    match = closest(word, candidates)
    return f"; did you mean '{match}'?" if match else ""


def _duplicates(loc: tuple, values: list[str], what: str) -> list[Problem]:
    seen: set[str] = set()
    out = []
    for i, value in enumerate(values):
        if value in seen:
            out.append(((*loc, i), f"{what} '{value}' is listed twice"))
        seen.add(value)
    return out


Rule = Callable[[Any], list[Problem]]
_BODY_RULES: list[Rule] = []
_CLUSTERING_RULES: list[Rule] = []
_RETENTION_RULES: list[Rule] = []
_COMPACTION_RULES: list[Rule] = []


def _rule(rules: list[Rule]) -> Callable[[Rule], Rule]:
    def register(rule: Rule) -> Rule:
        rules.append(rule)
        return rule
    return register


_body_rule = _rule(_BODY_RULES)
_clustering_rule = _rule(_CLUSTERING_RULES)
_retention_rule = _rule(_RETENTION_RULES)
_compaction_rule = _rule(_COMPACTION_RULES)


def _run(rules: list[Rule], model: Any) -> list[Problem]:
    """The problems found by `rules`, each run on its own.

    `model` may be partial (validation.py builds one when some fields are invalid, so their errors
    and these come in one report): a rule that reads a field that failed validation raises
    `Unparsed` and is skipped, the other rules still run.
    """
    problems: list[Problem] = []
    for rule in rules:
        try:
            problems += rule(model)
        except Unparsed:
            pass
    return problems


def body_problems(body: TableBody) -> list[Problem]:
    """Every cross-field error of a table body, relative to `spec`."""
    return _run(_BODY_RULES, body)


def clustering_problems(clustering: Clustering) -> list[Problem]:
    """Every cross-field error of a clustering block, relative to it."""
    return _run(_CLUSTERING_RULES, clustering)


def retention_problems(retention: Retention) -> list[Problem]:
    """Every cross-field error of a retention block, relative to it."""
    return _run(_RETENTION_RULES, retention)


def compaction_problems(compaction: Compaction) -> list[Problem]:
    """Every cross-field error of a compaction block, relative to it."""
    return _run(_COMPACTION_RULES, compaction)


def _columns_by_name(body: TableBody) -> dict[str, Column]:
    """The first column of each name; a column whose name failed its own check is found by the name as written."""
    out: dict[str, Column] = {}
    for column in body.columns:
        name = as_written(column, "name")
        if isinstance(name, str):
            out.setdefault(name, column)
    return out


def _reference(by_name: dict[str, Column], loc: tuple, name: str, what: str, primitive: bool) -> list[Problem]:
    column = by_name.get(name)
    if column is None:
        return [(loc, f"{what} '{name}' is not a column{did_you_mean(name, by_name)}")]
    if primitive and parsed(column, "type") and isinstance(column.data_type, Array | Map | Struct):
        return [(loc, f"{what} '{name}' has the complex type {column.type}; it must be a primitive type")]
    return []


def _references(body: TableBody, loc: tuple, names: list[str], what: str, primitive: bool = False) -> list[Problem]:
    """`names` (the list at `loc`) must be columns, of a primitive type if `primitive`, each listed once."""
    try:
        by_name = _columns_by_name(body)
    except Unparsed:  # the columns failed validation: only "listed twice" can be checked
        return _duplicates(loc, names, what)
    problems = [p for i, name in enumerate(names) for p in _reference(by_name, (*loc, i), name, what, primitive)]
    return problems + _duplicates(loc, names, what)


@_body_rule
def _compaction_needs_merge_on_read(body: TableBody) -> list[Problem]:
    if body.compaction is not None and body.table_type != "MERGE_ON_READ":
        return [(("compaction",), f"compaction merges log files, which only MERGE_ON_READ tables have (tableType is "
                                  f"{body.table_type}); remove it or set tableType: MERGE_ON_READ")]
    return []


@_body_rule
def _unique_columns(body: TableBody) -> list[Problem]:
    problems: list[Problem] = []
    first_of: dict[str, int] = {}
    for i, column in enumerate(body.columns):
        if not parsed(column, "name"):
            continue
        first = first_of.setdefault(column.name.lower(), i)
        if first != i:
            problems.append((("columns", i, "name"), f"duplicate column '{column.name}' (first declared as spec.columns[{first}])"))
    return problems


@_body_rule
def _record_key_fields(body: TableBody) -> list[Problem]:
    return _references(body, ("recordKey", "fields"), body.record_key.fields, "record key field", primitive=True)


@_body_rule
def _partition_fields(body: TableBody) -> list[Problem]:
    return _references(body, ("partitioning", "fields"), body.partitioning.fields, "partition field", primitive=True)


@_body_rule
def _ordering_field(body: TableBody) -> list[Problem]:
    if body.ordering_field is None:
        return []
    return _reference(_columns_by_name(body), ("orderingField",), body.ordering_field, "ordering field", primitive=True)


@_body_rule
def _bucket_index_needs_key_fields(body: TableBody) -> list[Problem]:
    if body.index.type == "BUCKET" and body.record_key.auto_generate:
        return [(("index", "type"), "a BUCKET index hashes record key fields, so it cannot be used with recordKey.autoGenerate")]
    return []


@_body_rule
def _hash_fields(body: TableBody) -> list[Problem]:
    index = body.index
    if index.type != "BUCKET" or index.hash_fields is None:
        return []
    empty = [(("index", "hashFields"), "hashFields must not be empty; omit it to hash the record key fields")]
    return (empty if not index.hash_fields else []) + _references(body, ("index", "hashFields"), index.hash_fields, "hash field")


@_body_rule
def _hash_fields_in_record_key(body: TableBody) -> list[Problem]:
    index, key = body.index, body.record_key
    if index.type != "BUCKET" or index.hash_fields is None or not key.fields:
        return []
    by_name = _columns_by_name(body)
    return [(("index", "hashFields", i), f"hash field '{name}' is not a record key field; Hudi hashes a subset of "
                                          f"the record key ({', '.join(key.fields)})")
            for i, name in enumerate(index.hash_fields) if name in by_name and name not in key.fields]


# Hudi's meta columns: column statistics may cover them too.
META_COLUMNS = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
                "_hoodie_file_name")


@_body_rule
def _data_skipping(body: TableBody) -> list[Problem]:
    skipping = body.data_skipping
    if skipping is None:
        return []
    problems: list[Problem] = []
    if skipping.partition_stats and skipping.column_stats is None:
        problems.append((("dataSkipping", "partitionStats"), "partition statistics are computed from column "
                                                             "statistics: declare columnStats too"))
    if skipping.partition_stats and body.table_version == 6:
        problems.append((("dataSkipping", "partitionStats"), "partition statistics need table version 9 "
                                                             "(Hudi 1.1+); version 6 has none"))
    problems += _secondary_indexes(body, skipping.secondary_indexes)
    columns = skipping.column_stats.columns if skipping.column_stats is not None else None
    if columns is None:
        return problems
    loc = ("dataSkipping", "columnStats", "columns")
    if body.table_version == 6:
        problems.append((loc, "version 6 keeps statistics of every column (Hudi 0.15's default): omit columns"))
    by_name = _columns_by_name(body)
    problems += [p for i, name in enumerate(columns) if name not in META_COLUMNS
                 for p in _reference(by_name, (*loc, i), name, "column with statistics", primitive=True)]
    return problems + _duplicates(loc, columns, "column with statistics")


def _secondary_indexes(body: TableBody, indexes: list) -> list[Problem]:
    """Secondary indexes: Hudi 1.x's (table version 9), on copy-on-write tables with the record index."""
    if not indexes:
        return []
    loc = ("dataSkipping", "secondaryIndexes")
    if body.table_version not in (None, 9):   # None: the project's version, checked against the table by plan
        return [(loc, f"secondary indexes are Hudi 1.x's (CREATE INDEX): they need tableVersion: 9 (the spec says "
                      f"{body.table_version})")]
    if body.table_type != "COPY_ON_WRITE":
        return [(loc, "tablespec keeps secondary indexes on COPY_ON_WRITE tables only: not yet on MERGE_ON_READ "
                      "(remove secondaryIndexes)")]
    problems: list[Problem] = []
    if body.index.type != "RECORD_LEVEL":
        problems.append((loc, f"a secondary index needs Hudi's record index: set index.type: RECORD_LEVEL "
                              f"(it is {body.index.type})"))
    problems += _references(body, loc, [i.column for i in indexes], "secondary index column", primitive=True)
    problems += _secondary_index_types(body, loc, [i.column for i in indexes])
    return problems + _duplicates(loc, [i.name for i in indexes], "secondary index name")


def _secondary_index_types(body: TableBody, loc: tuple, names: list[str]) -> list[Problem]:
    """Primitive columns whose values tablespec cannot key as Hudi does (their text form is not measured):
    refused here, as every write would otherwise fail after writing its data files."""
    from tablespec.hudi.mdt.secondary_index import COLUMN_TYPES
    try:
        by_name = _columns_by_name(body)
    except Unparsed:
        return []
    found = [(i, by_name[n]) for i, n in enumerate(names) if n in by_name and parsed(by_name[n], "type")]
    return [((*loc, i), f"secondary index column '{c.name}' has the type {c.type}: tablespec keeps secondary indexes "
                        f"on string and integer columns only ({', '.join(COLUMN_TYPES)})")
            for i, c in found if not isinstance(c.data_type, Array | Map | Struct) and c.type not in COLUMN_TYPES]


@_body_rule
def _sort_columns(body: TableBody) -> list[Problem]:
    return _references(body, ("clustering", "sortColumns"), body.clustering.sort_columns, "sort column", primitive=True)


def _or(words) -> str:
    return ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else words[0]


@_body_rule
def _timestamp_problems(body: TableBody) -> list[Problem]:
    from tablespec.hudi.keygen import INPUTS

    ts = body.partitioning.timestamp
    if ts is None:
        return []
    loc = ("partitioning", "timestamp", "field")
    if ts.field not in body.partitioning.fields:
        return [(loc, f"timestamp field '{ts.field}' is not one of the partition fields "
                      f"({', '.join(body.partitioning.fields) or 'none'})")]
    column = _columns_by_name(body).get(ts.field)
    accepted = INPUTS[ts.input][2]
    if column is not None and parsed(column, "type") and column.type not in accepted:
        return [(("partitioning", "timestamp", "input"),
                 f"input {ts.input} reads {_or(accepted)} columns, but '{ts.field}' is {column.type}")]
    return []


@_clustering_rule
def _sort_columns_needed(clustering: Clustering) -> list[Problem]:
    if clustering.strategy != "NONE" and not clustering.sort_columns:
        return [(("sortColumns",), f"strategy {clustering.strategy} needs sortColumns")]
    return []


@_clustering_rule
def _small_files_below_target(clustering: Clustering) -> list[Problem]:
    if clustering.small_file_limit >= clustering.target_file_size:
        return [(("smallFileLimit",), f"smallFileLimit ({clustering.small_file_limit} bytes) must be smaller "
                                      f"than targetFileSize ({clustering.target_file_size} bytes)")]
    return []


@_compaction_rule
def _target_io_in_mib(compaction: Compaction) -> list[Problem]:
    from tablespec.hudi.keys import COMPACTION_TARGET_IO
    from tablespec.spec.sizes import MiB
    if compaction.target_io % MiB:
        return [(("targetIO",), f"targetIO ({compaction.target_io} bytes) must be a whole number of MiB: Apache Hudi "
                                f"counts it in MB ({COMPACTION_TARGET_IO.name})")]
    return []


@_compaction_rule
def _latest_partitions_day_based(compaction: Compaction) -> list[Problem]:
    if compaction.latest_partitions is not None and compaction.strategy != "DAY_BASED":
        return [(("latestPartitions",), f"latestPartitions is for strategy DAY_BASED, not {compaction.strategy}")]
    return []


@_retention_rule
def _archive_limits(retention: Retention) -> list[Problem]:
    """Hudi's archiving rules: more commits stay active than the cleaner retains (archiving would
    otherwise take instants the cleaner and incremental readers still need), and archiving starts
    above the number it leaves."""
    archive = retention.archive
    if archive is None:
        return []
    problems: list[Problem] = []
    if parsed(retention, "keep_commits") and archive.min_commits <= retention.keep_commits:
        problems.append((("archive", "minCommits"), f"minCommits ({archive.min_commits}) must be greater than "
                                                     f"keepCommits ({retention.keep_commits}): archiving must not "
                                                     "take commits the cleaner still retains"))
    if archive.max_commits <= archive.min_commits:
        problems.append((("archive", "maxCommits"), f"maxCommits ({archive.max_commits}) must be greater than "
                                                     f"minCommits ({archive.min_commits})"))
    return problems


def spec_warnings(spec: TableSpec) -> list[Problem]:
    """Settings that are legal but probably not what the author wants."""
    body = spec.spec
    warnings: list[Problem] = []
    for i, column in enumerate(body.columns):
        if column.name in body.record_key.fields and column.nullable:
            warnings.append((("spec", "columns", i, "nullable"),
                             f"record key column '{column.name}' is nullable; Hudi refuses null keys at write time "
                             "(declare it nullable: false)"))
    ts = body.partitioning.timestamp
    if ts is not None and len(body.partitioning.fields) > 1 and "/" in ts.output_format:
        warnings.append((("spec", "partitioning", "timestamp", "outputFormat"),
                         f"outputFormat {ts.output_format!r} makes several directory levels for one of several "
                         "partition fields; Apache Hudi 0.15's Spark reader fails on such a table (tablespec and "
                         "hudi-rs read it): prefer a format without '/'"))
    clustering = body.clustering
    if clustering.strategy == "NONE" and clustering.sort_columns:
        warnings.append((("spec", "clustering", "sortColumns"), "sortColumns is ignored when strategy is NONE"))
    if clustering.strategy in ("ZORDER", "HILBERT") and len(clustering.sort_columns) == 1:
        warnings.append((("spec", "clustering", "sortColumns"),
                         f"{clustering.strategy} on a single column orders like SORT; give at least two sortColumns"))
    compaction = body.compaction
    if compaction is not None:
        unused = {"DELTA_COMMITS": "elapsed_seconds", "ELAPSED_TIME": "delta_commits"}.get(compaction.trigger)
        if unused in compaction.model_fields_set:
            name = {"elapsed_seconds": "elapsedSeconds", "delta_commits": "deltaCommits"}[unused]
            warnings.append((("spec", "compaction", name), f"{name} is ignored when trigger is {compaction.trigger}"))
    return warnings

"""Timestamp partitioning checked against the rows a table stores.

Apache Hudi does not record every setting of its timestamp key generators in hoodie.properties
(tablespec/hudi/keygen.py), so what `import` derives and what a spec claims for such a table is
confirmed on a few base files first: each sampled row's partition path, computed from its field
values, must be the folder the row is stored in. Reads a few columns of a few files with pyarrow
(no JVM), and only for tables that lack a setting.
"""
from __future__ import annotations

from tablespec.errors import TablespecError
from tablespec.hudi import keygen
from tablespec.hudi.io import join
from tablespec.plan.settings import BY_PROP, diff_settings
from tablespec.state import TableState

SAMPLE_FILES = 3


def _sample_rows(state: TableState, columns: list[str]):
    """(partition, rows of `columns`) of a few latest base files: what the table's writers made of them."""
    import pyarrow.parquet as pq

    storage, base = state.handle.storage, state.handle.base
    for fg in [fg for fg in state.file_groups if fg.base_file][:SAMPLE_FILES]:
        with storage.open_input_file(join(base, fg.partition, fg.base_file)) as f:
            yield fg.partition, pq.read_table(f, columns=columns)


def mismatch(state: TableState, ts: keygen.TimestampPartitioning, fields: list[str], hive_style: bool,
             url_encode: bool = False) -> str | None:
    """None when `ts` (with `fields`, `hive_style` and `url_encode`) gives every sampled row its
    file's partition path, else the first disagreement."""
    from tablespec.arrow.keys import partition_paths

    for partition, rows in _sample_rows(state, fields):
        try:
            paths = partition_paths(rows, fields, hive_style, url_encode, timestamp=ts).unique().to_pylist()
        except (TablespecError, ValueError) as e:  # a zone or pattern the rows cannot be formatted with (ArrowInvalid too)
            return str(e)
        wrong = [p for p in paths if p != partition]
        if wrong:
            return f"a row stored in partition {partition!r} would go to {wrong[0]!r}"
    return None


def unrecorded(spec, props: dict[str, str]) -> list[str]:
    """The spec's timestamp partitioning settings the table's hoodie.properties does not record."""
    if spec.timestamp_partitioning is None:
        return []
    wanted = {s.prop for s in BY_PROP.values() if s.unrecorded and s.desired(spec) is not None}
    return sorted(p for p in wanted if p not in props)


def unconfirmed(spec, state: TableState) -> str | None:
    """Why the table's stored rows contradict the spec's timestamp partitioning, or None. Checked
    only where the table keys and partitions as the spec says but does not record all of it
    (a table Apache Hudi wrote): a wrong setting there would put rows into other partitions."""
    if not state.exists:
        return None
    props = state.table_config.to_properties()
    if not unrecorded(spec, props) or any(c.category == "key" for c in diff_settings(spec, props)):
        return None
    parts = spec.spec.partitioning
    why = mismatch(state, spec.timestamp_partitioning, list(parts.fields), parts.hive_style, parts.url_encode)
    if why is None:
        return None
    return (f"the table's files are not partitioned this way ({why}); hoodie.properties does not record all of "
            "spec.partitioning.timestamp, so tablespec checks it against the stored rows: state the settings the "
            "table's writers used")

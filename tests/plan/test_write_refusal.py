"""Which drift stops a write (planner.write_refusal, a pure function of spec and observed state):
settings that change where or how rows are written do; names, labels and housekeeping do not.
A MERGE_ON_READ table whose spec says COPY_ON_WRITE is refused by writes in the one line `plan` gives."""
from __future__ import annotations

import dataclasses
import re

import pytest
from test_builder import BASE, actions, load, state_for

from tablespec.errors import UnsupportedTableError
from tablespec.hudi.timeline.instant import Instant
from tablespec.plan.builder import write_refusal
from tablespec.plan.settings import REGISTRY


def _spec(text: str):
    return load(text)[0].spec


def _with(text: str, **spec_lines: str) -> str:
    """BASE with top-level `spec:` lines added or replaced."""
    for key, value in spec_lines.items():
        line = f"  {key}: {value}\n"
        text = re.sub(rf"^  {key}: .*\n", line, text, flags=re.M) if f"\n  {key}:" in text else text + line
    return text


@pytest.mark.parametrize(("lines", "refused"), [
    ({"clustering": "{targetFileSize: 512MB}"}, True),     # where new rows go (file sizing)
    ({"orderingField": "amount"}, True),                     # which of two rows wins
    ({"retention": "{keepCommits: 3}"}, False),              # housekeeping
    ({"protection": "{preventDestroy: true}"}, False),
    ({"clustering": "{sortColumns: [customer_id]}"}, False),  # clustering runs only
])
def test_only_drift_that_shapes_rows_stops_a_write(lines, refused):
    text = _with(BASE, **lines)
    state = state_for(BASE)
    assert [a.kind for a in actions(text, state)] == ["update_settings"]   # plan shows every drift
    why = write_refusal(_spec(text), state)
    assert (why is not None) == refused, why
    if refused:
        assert "does not match its spec (update_settings pending)" in why


def test_a_database_the_table_names_and_the_spec_leaves_unset_stands():
    """Spark SQL's `CREATE TABLE ... USING hudi LOCATION` writes hoodie.database.name=default."""
    unset = BASE.replace("metadata: {name: orders, database: sales}", "metadata: {name: orders}")
    state = state_for(unset, **{"hoodie.database.name": "default"})
    assert actions(unset, state) == []                      # the table's value stands: no drift
    assert write_refusal(_spec(unset), state) is None
    other = state_for(BASE, **{"hoodie.database.name": "default"})   # the spec names another one
    assert [c.path for a in actions(BASE, other) for c in a.changes] == ["metadata.database"]
    assert write_refusal(_spec(BASE), other) is None          # a name: the write goes on


def test_labels_do_not_stop_a_write():
    state = state_for(BASE, **{"tablespec.label.team": "payments"})
    assert [a.kind for a in actions(BASE, state)] == ["update_settings"]
    assert write_refusal(_spec(BASE), state) is None


def test_every_row_shaping_setting_is_classified():
    """Keys, partitioning, key generator and index always stop a write; of the rest, only the
    ordering field and file sizing do."""
    assert all(s.shapes_rows for s in REGISTRY if s.category in ("key", "index"))
    assert {s.path for s in REGISTRY if s.category == "settings" and s.shapes_rows} == {
        "spec.orderingField", "spec.clustering.targetFileSize", "spec.clustering.smallFileLimit"}


def test_a_merge_on_read_table_is_refused_by_writes_as_by_plan():
    """A spec saying COPY_ON_WRITE for a MERGE_ON_READ table: plan and writes refuse it in one line.
    A spec saying MERGE_ON_READ plans (no actions); writes commit deltacommits on versions 6 and 9 with the
    BUCKET, SIMPLE, BLOOM and RECORD_LEVEL indexes, and are refused on version 8 and while a compaction is
    pending, unless the spec gives compaction to tablespec (the writer runs it first)."""
    state = state_for(BASE, **{"hoodie.table.type": "MERGE_ON_READ"})
    why = write_refusal(_spec(BASE), state)
    with pytest.raises(UnsupportedTableError) as planned:
        actions(BASE, state)
    assert why == str(planned.value)
    assert why == ("/wh/sales/orders: table sales.orders is a MERGE_ON_READ table and its spec says COPY_ON_WRITE: "
                   "tablespec does not convert it back (Apache Hudi's copy-on-write readers take neither log files "
                   "nor the base files deltacommits wrote); set spec.tableType: MERGE_ON_READ")
    merge_on_read = _with(BASE, tableType="MERGE_ON_READ")
    state = state_for(merge_on_read)
    assert actions(merge_on_read, state) == []
    assert write_refusal(_spec(merge_on_read), state) is None   # version 6, BUCKET: deltacommits
    compacting = dataclasses.replace(state, pending=(Instant("20261122000000000", "compaction", "requested"),))
    assert write_refusal(_spec(merge_on_read), compacting) == (
        "table sales.orders at /wh/sales/orders is a MERGE_ON_READ table: compaction 20261122000000000 is pending; "
        "tablespec writes deltacommits once it has run (Apache Hudi's `run_compaction`, or `tablespec apply` "
        "with the spec's compaction runBy: tablespec)")
    ours = _with(merge_on_read, compaction="{runBy: tablespec}")   # the writer runs the pending plan first
    assert write_refusal(_spec(ours), dataclasses.replace(state_for(ours), pending=compacting.pending)) is None
    simple = _with(merge_on_read, index="{type: SIMPLE}")
    assert write_refusal(_spec(simple), state_for(simple)) is None   # SIMPLE (and BLOOM): deltacommits too
    record_level = _with(merge_on_read, index="{type: RECORD_LEVEL}")
    indexed = {"hoodie.table.metadata.partitions": "files,record_index"}   # its record index built
    assert write_refusal(_spec(record_level), state_for(record_level, **indexed)) is None   # versions 6 and 9: deltacommits
    assert write_refusal(_spec(record_level), state_for(record_level, **indexed, **{"hoodie.table.version": "9"})) is None
    assert write_refusal(_spec(record_level), state_for(record_level, **indexed, **{"hoodie.table.version": "8"})) == (
        "table sales.orders at /wh/sales/orders is a MERGE_ON_READ table: tablespec writes deltacommits on table "
        "versions 6 and 9 (this one: version 8); write it with Apache Hudi")

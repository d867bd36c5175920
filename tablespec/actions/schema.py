"""Schema evolution: make the spec's columns the table's schema without rewriting any data.

Hudi readers take a table's schema from the latest completed commit that records one
(`extraMetadata.schema`), so the change is one empty commit carrying the new Avro schema, with
operationType ALTER_SCHEMA as Hudi's own ALTER TABLE writes it. Files written before it keep
their columns and types; readers fill added columns with nulls and cast widened ones.
`hoodie.table.create.schema` stays the schema the table was created with.

Like a write, the commit is a transaction under the table lock: leftover failed writes are
rolled back first, and a crash before the completed file leaves a pending instant that the
next writer or apply rolls back (the table keeps its old schema). Re-running after a crash past
the commit point finds nothing left to change.
"""
from __future__ import annotations

import json

from tablespec.engine.commit import Transaction, locked
from tablespec.errors import StalePlanError
from tablespec.hudi.formats.avro import to_avro_schema
from tablespec.hudi.formats.commit import CommitMetadata
from tablespec.hudi.table import HudiTable
from tablespec.hudi.timeline.instant import COMMIT
from tablespec.hudi.timeline.lock import DEFAULT_TIMEOUT_SECONDS, TableLock
from tablespec.plan.columns import diff_columns, spec_columns
from tablespec.state import observe

OPERATION = "ALTER_SCHEMA"


def evolve_schema(table: HudiTable, spec, lock_timeout: float = DEFAULT_TIMEOUT_SECONDS,
                  heartbeat_tolerance: float | None = None, held: TableLock | None = None) -> str | None:
    """Commit the spec's columns as the table schema; returns the instant, or None when the
    table already has them. `held`: the table lock, when the caller holds it already."""
    with locked(table, "apply", lock_timeout, heartbeat_tolerance, held=held) as lock:
        if not _changes(table, spec):
            return None
        schema = json.dumps(to_avro_schema(spec_columns(spec), spec.metadata.name), separators=(",", ":"))
        with Transaction(table, COMMIT, lock) as txn:
            txn.commit([], CommitMetadata(extra_metadata={"schema": schema}, operation_type=OPERATION))
        return txn.instant


def _changes(table: HudiTable, spec) -> list:
    """The column changes still to make, observed under the lock; only evolutions may remain."""
    base = table.base
    state = observe(table)
    changes = diff_columns(spec_columns(spec), [(c.name, c.type, c.nullable) for c in state.columns])
    destructive = [c.describe() for c in changes if c.destructive]
    if destructive:
        raise StalePlanError(f"{base}: the table's columns changed since the plan was made; the spec now needs "
                             f"{'; '.join(destructive)}. Run `tablespec plan` again.")
    return changes

"""What an action did, typed: each executor (apply's `EXECUTORS`) returns one of these, and apply
prints it next to the action's estimate, each value by its field's type (`tablespec.quantities`).
A field left None did not apply to this run (a clustering only scheduled has no bytes written)."""
from __future__ import annotations

from tablespec.quantities import Bytes, Count, Measured, Seconds, Shift


class NoResult(Measured):
    """Metadata-only actions: what they did is the plan's changes."""


class IndexResult(Measured):
    """Hudi's record index built (its initializing metadata-table deltacommit, `instant`; None:
    it was there already), and tablespec's earlier private index folder removed."""

    rows: Count | None = None            # a build: the keys indexed
    instant: str | None = None
    file_groups: Count
    private_files_removed: Count = 0


class IndexDropped(Measured):
    """Leaving RECORD_LEVEL: the metadata table's record_index partition dropped."""
    partitions_dropped: Count
    private_files_removed: Count = 0


class Rebucketed(Measured):
    partitions: Count
    file_groups: Shift | None = None
    bytes_read: Bytes | None = None
    bytes_written: Bytes | None = None
    seconds: Seconds | None = None
    record_index_dropped: Count | None = None  # the record index partition the buckets replace


class Replaced(Measured):
    rows: Count
    files_written: Count
    replaced_file_groups: Count


class Cleaned(Measured):
    clean_instant: str | None = None     # None: nothing was out of retention any more
    files: Count
    bytes_freed: Bytes


class MetadataBuilt(Measured):
    instant: str | None = None           # the initializing deltacommit (None: it existed already)
    files: Count = 0                     # data files it lists


class DataSkippingBuilt(Measured):
    instants: list[str] = []             # the initializing deltacommit of each partition built
    files: Count = 0                     # base files whose footers were read
    seconds: Seconds | None = None


class MetadataDropped(Measured):
    partitions: list[str] = []           # metadata-table partitions dropped (none: gone already)


class Archived(Measured):
    instants: Count                      # completed instants moved to the archived timeline


class Clustered(Measured):
    pending: str | None = None           # --schedule-only: the pending plan left to run
    scheduled: str | None = None         # --schedule-only: the plan written
    instant: str | None = None           # the replacecommit a run completed
    groups: Count | None = None
    files: Shift | None = None
    bytes_read: Bytes | None = None
    bytes_written: Bytes | None = None
    rows: Count | None = None
    seconds: Seconds | None = None


class Compacted(Measured):
    """A compaction: the plan tablespec scheduled (`scheduled`; None: not due any more) and, unless
    apply only schedules, the commit that ran it (`instant`)."""
    scheduled: str | None = None         # the plan written
    instant: str | None = None           # the compaction run and completed (its commit)
    file_slices: Count = 0
    log_files: Count | None = None       # merged into new base files
    rows: Count | None = None
    bytes_written: Bytes | None = None
    seconds: Seconds | None = None


class RolledBack(Measured):
    rolled_back: Count
    plans_discarded: Count | None = None


class CatalogSynced(Measured):
    """What a catalog sync changed (all zero: the catalog already matched the table)."""

    registered: Count = 0             # 1: the table was registered (again)
    properties: Count = 0
    columns_changed: Count = 0        # 1: the columns were replaced
    partitions_added: Count = 0
    partitions_dropped: Count = 0


class Upgraded(Measured):
    """What a table-version upgrade moved (or, finishing one that stopped, deleted)."""

    files_moved: Count = 0            # instant files rewritten into .hoodie/timeline/
    archived_instants: Count = 0      # archived instants carried into the LSM history
    metadata_table_deleted: bool | None = None
    leftovers_deleted: Count | None = None


ActionOutcome = (NoResult | IndexResult | IndexDropped | Rebucketed | Replaced | Cleaned | Archived | Clustered
                 | RolledBack | MetadataBuilt | MetadataDropped | CatalogSynced | Upgraded | Compacted
                 | DataSkippingBuilt)

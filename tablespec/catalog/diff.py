"""Observed catalog table vs the registration Hudi's sync would write: what a sync must change. Pure."""
from __future__ import annotations

from dataclasses import dataclass, field

from tablespec.catalog.registration import LAST_COMPLETION, METASTORE_OWNED, Registration

IGNORED = METASTORE_OWNED | {LAST_COMPLETION}
"""Not compared: the metastore's own parameters, and the completion time (it follows `last_commit_time_sync`)."""


@dataclass(frozen=True)
class CatalogDiff:
    """The changes that make the catalog's table the desired registration (empty: in sync)."""

    desired: Registration
    register: bool = False                  # no such catalog table yet
    replace: bool = False                   # its partition keys differ: only dropping it and registering again helps
    location: tuple[str, str] | None = None
    storage: bool = False                   # formats, serde or table type differ
    columns: tuple[tuple, tuple] | None = None
    properties: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    add_partitions: tuple[tuple[str, ...], ...] = ()
    drop_partitions: tuple[tuple[str, ...], ...] = ()

    @property
    def in_sync(self) -> bool:
        return not (self.register or self.replace or self.location or self.storage or self.columns
                    or self.properties or self.add_partitions or self.drop_partitions)

    @property
    def destructive(self) -> bool:
        """Dropping a catalog table (its partitions and statistics) is destructive, like dropping a table."""
        return self.replace

    def lines(self) -> list[tuple[str, object, object]]:
        """(path, old, new) for the plan: what is registered now, and what it becomes."""
        name = self.desired.name
        if self.register or self.replace:
            out: list[tuple[str, object, object]] = [
                ("catalog.table", name if self.replace else None, f"{name} at {self.desired.location}")]
            if self.desired.partitions:
                out.append(("catalog.partitions", None, len(self.desired.partitions)))
            return out
        out = []
        if self.location:
            out.append(("catalog.location", *self.location))
        if self.storage:
            out.append(("catalog.storage", "other formats", "Hudi's input format and Parquet serde"))
        if self.columns:
            have, want = self.columns
            out.append(("catalog.columns", ", ".join(f"{n} {t}" for n, t in have), ", ".join(f"{n} {t}" for n, t in want)))
        for key, (old, new) in sorted(self.properties.items()):
            out.append((f"catalog.properties.{key}", old, new))
        if self.add_partitions:
            out.append(("catalog.partitions.added", None, ", ".join("/".join(v) for v in self.add_partitions)))
        if self.drop_partitions:
            out.append(("catalog.partitions.dropped", ", ".join("/".join(v) for v in self.drop_partitions), None))
        return out


def _shown(params: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in params.items() if k not in IGNORED}


def diff(observed: Registration | None, desired: Registration) -> CatalogDiff:
    """What a sync changes to turn `observed` (None: not registered) into `desired`."""
    if observed is None:
        return CatalogDiff(desired, register=True)
    if observed.partition_keys != desired.partition_keys:
        return CatalogDiff(desired, replace=True)
    have, want = _shown(observed.parameters), _shown(desired.parameters)
    properties = {k: (have.get(k), want.get(k)) for k in sorted(set(have) | set(want))
                  if have.get(k) != want.get(k) and k in want}   # extra properties someone set are kept
    partitions_moved = {v for v, loc in desired.partitions.items()
                        if v in observed.partitions and observed.partitions[v] != loc}
    return CatalogDiff(
        desired,
        location=(observed.location, desired.location) if observed.location != desired.location else None,
        storage=(observed.input_format, observed.output_format, observed.serde, observed.table_type,
                 _shown(observed.serde_parameters))
        != (desired.input_format, desired.output_format, desired.serde, desired.table_type, _shown(desired.serde_parameters)),
        columns=(observed.columns, desired.columns) if observed.columns != desired.columns else None,
        properties=properties,
        add_partitions=tuple(sorted(v for v in desired.partitions if v not in observed.partitions or v in partitions_moved)),
        drop_partitions=tuple(sorted(v for v in observed.partitions if v not in desired.partitions or v in partitions_moved)),
    )

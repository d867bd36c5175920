"""`tablespec verify` for any table: its files and its index against its timeline (driver side, no Spark).

    report = verify_table(HudiTable.open("warehouse/sales/orders"))
    report.ok            # False when anything was found
    print(report)        # one line per finding, then a summary

Files (every table, hudi/check.py): base files a completed commit wrote that readers still need
but storage lacks (`missing`), that differ from what the commit recorded (`truncated`), and data
files no completed commit wrote (`orphan`); on a merge-on-read table, log files of the latest file
slices whose committed blocks do not read or decode (`log`: hudi/merge_on_read.py's damage
rule). The index (`index`): a BUCKET table's file groups
against its bucket layout; a RECORD_LEVEL table's index (Hudi's record index) against its data (index.py's comparison,
which reads key columns with pyarrow: no Spark either). Other indexes keep no state to check. Hudi's metadata table
(`metadata`): its `files` and `record_index` partitions decode, the listing matches the storage, and the bloom
filters and secondary indexes hold what readers look up, however large (hudi/mdt/damage.py); `plan` rebuilds a
damaged one (a large index's missing entries only verify finds: its message says how to rebuild it).
"""
from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from tablespec.errors import TablespecError
from tablespec.hudi.config import RECORD_LEVEL, archive_folder, table_index_type
from tablespec.hudi.mdt import damage, layout
from tablespec.hudi.mdt.record_index import RECORD_INDEX
from tablespec.hudi.merge_on_read import damaged_logs
from tablespec.hudi.services.check import INDEX, LOG, METADATA, Finding, check_buckets, check_files
from tablespec.hudi.table import HudiTable
from tablespec.plan.buckets import BucketLayout


@dataclass
class TableReport:
    location: str
    findings: list[Finding]
    checked: list[str]  # what was looked at, for the summary

    @property
    def ok(self) -> bool:
        return not self.findings

    def lines(self) -> list[str]:
        """One line per finding: location, kind, file (relative to the table), message; tab-separated."""
        return [f"{self.location}\t{f}" for f in self.findings]

    def summary(self) -> str:
        verdict = "clean" if self.ok else f"{len(self.findings)} finding(s)"
        return f"{self.location}: {verdict} ({'; '.join(self.checked)})"

    def __str__(self) -> str:
        return "\n".join(self.lines() + [self.summary()])


def _record_index(table: HudiTable) -> tuple[list[Finding], str]:
    from tablespec.index import verify
    folder = layout.partition_path(table.base, RECORD_INDEX)[len(table.base.rstrip('/')) + 1:]

    def finding(message: str) -> Finding:
        return Finding(INDEX, "", folder, None, message)
    try:
        result = verify(table)
    except TablespecError as e:  # no record index yet, or a file of it is damaged
        return [finding(str(e))], "record-level index not compared"
    except (pa.ArrowException, OSError) as e:  # a data file it reads is damaged (reported as truncated)
        return [finding(f"cannot compare the record-level index with the data: {e}")], \
            "record-level index not compared"
    found = [finding(f"record-level index: {d.kind}: {d.count} key(s) (e.g. {'; '.join(d.examples)})")
             for d in result.differences]
    return found, (f"record-level index: {result.keys} live keys, {result.entries} entries"
                   f"{', matches the data' if result.ok else ''}")


def verify_table(table: HudiTable) -> TableReport:
    """Check `table` (see the module doc); raises TablespecError when there is no Hudi table
    there or its timeline cannot be read."""
    storage, base = table.storage, table.base
    config = table.config
    if config is None:
        raise TablespecError(f"{base}: no Hudi table here (no .hoodie/hoodie.properties)")
    with table.listing_snapshot():   # object stores: sizes from one LIST, not a HEAD per file
        timeline = table.timeline
        files = check_files(storage, base, timeline, archive_folder(config))
    findings, checked = list(files.findings), [files.describe()]
    props = config.to_properties()
    index = table_index_type(props)
    if index == "BUCKET":
        layout = BucketLayout.from_properties(props)
        view = table.view
        findings += check_buckets(view, layout.buckets_for if layout else None)
        counts = "" if layout else ", bucket counts not recorded in hoodie.properties"
        checked.append(f"bucket index: {len(view.file_groups())} file group(s){counts}")
    if config.table_type == "MERGE_ON_READ":
        _log_files(table, findings, checked)
    damaged = _metadata_table(table, findings, checked)
    if index == RECORD_LEVEL and RECORD_INDEX in damaged:
        checked.append("record-level index not compared (damaged)")
    elif index == RECORD_LEVEL:
        found, note = _record_index(table)
        findings += found
        checked.append(note)
    return TableReport(base, findings, checked)


def _log_files(table: HudiTable, findings: list[Finding], checked: list[str]) -> None:
    """Add the damaged log files of the latest file slices (merge-on-read)."""
    slices = [s for s in table.view.latest_slices() if s.log_files]
    found = damaged_logs(table.storage, table.timeline, slices)
    start = len(table.base.rstrip("/")) + 1
    findings += [Finding(LOG, "", e.path[start:], None, str(e)) for e in found]
    checked.append(f"{sum(len(s.log_files) for s in slices)} log file(s) read")


def _metadata_table(table: HudiTable, findings: list[Finding], checked: list[str]) -> set[str]:
    """Add what is damaged in Hudi's metadata table; returns the damaged partitions."""
    named = damage.checked(table)
    if not named:
        return set()
    found = damage.find(table, full=True)
    rel = lambda p: layout.partition_path(table.base, p)[len(table.base.rstrip('/')) + 1:]  # noqa: E731
    findings += [Finding(METADATA, "", rel(d.partition), None, d.message) for d in found]
    checked.append(f"metadata table: {', '.join(named)} "
                   + ("damaged" if found else "decode" + (", listing matches the storage" if layout.FILES in named else "")))
    return {d.partition for d in found}

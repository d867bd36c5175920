"""A table's health score: 100, less a fixed number of points for each finding, with the reason
(the figure that lowered it) beside. The weights are the report's own judgement, stated in
docs/report.md: work left undone (failed writes, damaged metadata) weighs most, then layout
(small files, skew, bucket sizing, clustering coverage), then drift and services due."""
from __future__ import annotations

from tablespec.spec.sizes import human_bytes
from tablespec.wording import counted

GRADES = ((90, "healthy"), (70, "fair"), (0, "poor"))


def grade(score: int) -> str:
    return next(name for floor, name in GRADES if score >= floor)


def score(t: dict) -> tuple[int, list[dict]]:
    """(score, reasons) of a table's figures (report/warehouse.table_entry); 0 for an unreadable table."""
    if t.get("error"):
        return 0, [{"points": -100, "reason": f"unreadable: {t['error']}"}]
    found: list[tuple[int, str]] = []
    files, parts, timeline, services = t["files"], t["partitions"], t["timeline"], t["services"]
    if files["count"]:
        share = files["smallShare"]
        if share > 0.25:
            found.append((20 if share > 0.5 else 10,
                          f"{files['smallFiles']} of {counted(files['count'], 'file')} ({share:.0%}) are below the "
                          f"small-file limit {human_bytes(files['smallFileLimit'])}"))
    if (skew := parts["bytesSkew"]) is not None and skew > 4:
        found.append((10, f"partition {parts['largest']} holds {skew:g} times the mean partition's bytes"))
    if parts["buckets"] and parts["buckets"]["advice"]:
        found.append((10, f"buckets: {parts['buckets']['advice']}"))
    failed = [p for p in timeline["pending"] if p["failed"]]
    if failed:
        found.append((15, f"{counted(len(failed), 'failed write')} not rolled back "
                          f"({', '.join(p['instant'] + '.' + p['action'] for p in failed)})"))
    if services["metadataTable"]["damage"]:
        found.append((20, f"Hudi's metadata table is damaged: {'; '.join(services['metadataTable']['damage'])}"))
    cov = services["clustering"]["coverage"]
    if cov and cov["percent"] < 50:
        found.append((10, f"only {cov['percent']}% of the file groups are laid out as declared ({cov['layout']})"))
    for due in services["due"] or []:
        if due["kind"] == "rollback":   # the failed writes above
            continue
        found.append((5, f"{due['kind']} due: {'; '.join(due['reasons'])}"))
    drift = t.get("drift")
    if drift and drift.get("error"):
        found.append((10, f"not planned: {drift['error']}"))
    elif drift and not drift["inSync"]:
        kinds = ", ".join(a["kind"] for a in drift["actions"])
        found.append((min(20, 10 * len(drift["actions"])), f"the table differs from its spec: plan would run {kinds}"))
    reasons = [{"points": -points, "reason": reason} for points, reason in found]
    return max(0, 100 - sum(points for points, _ in found)), reasons

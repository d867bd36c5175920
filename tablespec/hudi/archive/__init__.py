"""Hudi's archived timeline (table version 6 as Apache Hudi 0.15 writes it, versions 8/9 as Hudi 1.2
does): read it, plan and run archiving with Hudi's rules, crash-safely.

    entry.py     one archived instant state: the HoodieArchivedMetaEntry record
    log.py       the archive log files under .hoodie/archived/
    lsm.py       versions 8 and 9, read: the LSM history under .hoodie/timeline/history/
    lsm_write.py the LSM history written: a batch, manifests, compaction and cleaning
    timeline.py  the archived timeline (either form), and History: active and archived as one
    plan.py      which instants to archive (pure), and the settings
    active.py    the active files of instants being archived, and their deletion in Hudi's order
    archiver.py  the archiving run: write the archive, then delete the active files
    lsm_archiver.py  the same run on versions 8/9, into the LSM history
"""
from tablespec.hudi.archive.active import ArchiveResult
from tablespec.hudi.archive.archiver import archive, finish_archive, housekeep
from tablespec.hudi.archive.plan import ArchivePlan, ArchiveSettings, ArchiveSettingsError, Bounds, plan_archive
from tablespec.hudi.archive.timeline import ArchivedTimeline, History

__all__ = ["ArchivePlan", "ArchiveResult", "ArchiveSettings", "ArchiveSettingsError", "ArchivedTimeline", "Bounds",
           "History", "archive", "finish_archive", "housekeep", "plan_archive"]

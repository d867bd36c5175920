"""`retention.archive`: Hudi's archiving limits, checked against each other and the cleaner's retention."""
from __future__ import annotations

from tablespec.hudi.archive import ArchiveSettings
from tablespec.spec.loader import load_spec_text

RETENTION = "    smallFileLimit: 100MiB\n"


def _with(valid_text: str, edit, retention: str) -> list[str]:
    text = edit(valid_text, (RETENTION, RETENTION + "  retention:\n" + retention))
    return [str(d) for d in load_spec_text(text, "t.yaml").diagnostics]


def test_declared_limits_are_valid_and_map_to_settings(valid_text, edit):
    text = edit(valid_text, (RETENTION, RETENTION + "  retention:\n    keepCommits: 1\n"
                                        "    archive: {minCommits: 2, maxCommits: 3}\n"))
    spec = load_spec_text(text, "t.yaml").specs[0].spec
    assert spec.archive_settings == ArchiveSettings(2, 3, 1)


def test_min_commits_must_exceed_keep_commits(valid_text, edit):
    assert _with(valid_text, edit, "    keepCommits: 5\n    archive: {minCommits: 5, maxCommits: 8}\n") == [
        "t.yaml:31:15: spec.retention.archive.minCommits: minCommits (5) must be greater than keepCommits (5): "
        "archiving must not take commits the cleaner still retains"]


def test_max_commits_must_exceed_min_commits(valid_text, edit):
    assert _with(valid_text, edit, "    archive:\n      minCommits: 25\n      maxCommits: 25\n") == [
        "t.yaml:32:7: spec.retention.archive.maxCommits: maxCommits (25) must be greater than minCommits (25)"]


def test_a_field_error_does_not_hide_the_other_rule(valid_text, edit):
    assert _with(valid_text, edit, "    keepCommits: 0\n    archive: {minCommits: 4, maxCommits: 3}\n") == [
        "t.yaml:30:5: spec.retention.keepCommits: must be >= 1, got 0",
        "t.yaml:31:30: spec.retention.archive.maxCommits: maxCommits (3) must be greater than minCommits (4)"]


def test_omitted_archive_follows_the_cleaner_as_hudi_does(valid_text, edit):
    spec = load_spec_text(valid_text, "t.yaml").specs[0].spec
    assert spec.archive_settings == ArchiveSettings(20, 30, 10)
    text = edit(valid_text, (RETENTION, RETENTION + "  retention:\n    keepCommits: 24\n"))
    assert load_spec_text(text, "t.yaml").specs[0].spec.archive_settings == ArchiveSettings(25, 35, 24)


def test_declared_limits_are_table_settings_and_omitted_ones_no_change(valid_text, edit):
    from tablespec.plan.settings import desired_properties, diff_settings
    plain = load_spec_text(valid_text, "t.yaml").specs[0].spec
    props = desired_properties(plain)
    assert "hoodie.keep.min.commits" not in props and not diff_settings(plain, props)
    text = edit(valid_text, (RETENTION, RETENTION + "  retention:\n    keepCommits: 1\n"
                                        "    archive: {minCommits: 2, maxCommits: 3}\n"))
    declared = load_spec_text(text, "t.yaml").specs[0].spec
    changes = {c.path: (c.old, c.new) for c in diff_settings(declared, props)}
    assert changes == {"spec.retention.keepCommits": ("10", "1"), "spec.retention.archive.minCommits": ("20", "2"),
                       "spec.retention.archive.maxCommits": ("30", "3")}
    assert desired_properties(declared)["hoodie.keep.max.commits"] == "3"

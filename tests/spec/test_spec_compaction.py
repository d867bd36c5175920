"""`tableType: MERGE_ON_READ` and its `compaction:` section: accepted, refused and warned about at
FILE:LINE:COL, and what the section means in Hudi's terms (tablespec/plan/settings.py)."""
from __future__ import annotations

import pytest

from tablespec.plan.settings import desired_properties
from tablespec.spec.loader import load_spec_text

MOR = ("  location: sales/orders\n", "  location: sales/orders\n  tableType: MERGE_ON_READ\n")


def _section(body: str) -> tuple[str, str]:
    """The compaction section after the last line of the valid spec (line 29, 30 with MOR)."""
    return "    smallFileLimit: 100MiB\n", f"    smallFileLimit: 100MiB\n  compaction: {body}\n"


def test_merge_on_read_is_accepted_with_and_without_compaction(broken):
    assert broken(MOR) == []
    assert broken(MOR, _section("{runBy: tablespec, trigger: BOTH, deltaCommits: 3, elapsedSeconds: 60}")) == []


ERRORS = [
    pytest.param((), "{deltaCommits: 3}",
                 "t.yaml:29:3: spec.compaction: compaction merges log files, which only MERGE_ON_READ tables have "
                 "(tableType is COPY_ON_WRITE); remove it or set tableType: MERGE_ON_READ", id="copy-on-write"),
    pytest.param((MOR,), "{strategy: BOUNDED_IO, latestPartitions: 3}",
                 "t.yaml:30:38: spec.compaction.latestPartitions: latestPartitions is for strategy DAY_BASED, "
                 "not BOUNDED_IO", id="latest-partitions-not-day-based"),
    pytest.param((MOR,), "{targetIO: 1500KiB}",
                 "t.yaml:30:16: spec.compaction.targetIO: targetIO (1536000 bytes) must be a whole number of MiB: "
                 "Apache Hudi counts it in MB (hoodie.compaction.target.io)", id="target-io-not-mib"),
    pytest.param((MOR,), "{targetIO: 1KiB}",
                 "t.yaml:30:16: spec.compaction.targetIO: must be >= 1048576, got 1KiB", id="target-io-too-small"),
    pytest.param((MOR,), "{trigger: NUM_COMMITS}",
                 "t.yaml:30:16: spec.compaction.trigger: expected one of DELTA_COMMITS, ELAPSED_TIME, EITHER, BOTH, "
                 "got the string 'NUM_COMMITS'", id="hudi-trigger-name"),
    pytest.param((MOR,), "{strategy: LogFileSizeBasedCompactionStrategy}",
                 "t.yaml:30:16: spec.compaction.strategy: expected one of LOG_FILE_SIZE, LOG_FILE_COUNT, BOUNDED_IO, "
                 "DAY_BASED, UNBOUNDED", id="hudi-strategy-class"),
    pytest.param((MOR,), "{runBy: spark}",
                 "t.yaml:30:16: spec.compaction.runBy: expected one of hudi, tablespec, got the string 'spark'", id="run-by"),
    pytest.param((MOR,), "{deltaCommits: 0}",
                 "t.yaml:30:16: spec.compaction.deltaCommits: must be >= 1, got 0", id="delta-commits"),
]


@pytest.mark.parametrize("before, body, expected", ERRORS)
def test_compaction_errors_name_file_line_and_field(broken, before, body, expected):
    found = broken(*before, _section(body))
    assert any(m.startswith(expected) for m in found), found


def test_a_setting_the_trigger_ignores_is_a_warning(broken):
    assert broken(MOR, _section("{deltaCommits: 3, elapsedSeconds: 60}")) == [
        "t.yaml:30:33: warning: spec.compaction.elapsedSeconds: elapsedSeconds is ignored when trigger is DELTA_COMMITS"]
    assert broken(MOR, _section("{trigger: ELAPSED_TIME, deltaCommits: 3}")) == [
        "t.yaml:30:39: warning: spec.compaction.deltaCommits: deltaCommits is ignored when trigger is ELAPSED_TIME"]


def _properties(valid_text, edit, *replacements) -> dict[str, str]:
    loaded = load_spec_text(edit(valid_text, *replacements), "t.yaml")
    assert loaded.errors == [], loaded.errors
    return {k: v for k, v in desired_properties(loaded.specs[0].spec).items() if "compact" in k}


def test_recorded_in_hudi_terms(valid_text, edit):
    """hoodie.properties gets Hudi's keys and values (its writers load them from there), tablespec's own
    key says who schedules; a MERGE_ON_READ spec without the section records Hudi's defaults."""
    assert _properties(valid_text, edit) == {}   # copy-on-write: nothing about compaction
    assert _properties(valid_text, edit, MOR) == {
        "tablespec.compaction.run.by": "hudi", "hoodie.compact.inline.trigger.strategy": "NUM_COMMITS",
        "hoodie.compact.inline.max.delta.commits": "5", "hoodie.compact.inline.max.delta.seconds": "3600",
        "hoodie.compaction.strategy": "org.apache.hudi.table.action.compact.strategy.LogFileSizeBasedCompactionStrategy",
        "hoodie.compaction.target.io": "512000"}
    assert _properties(valid_text, edit, MOR, _section(
        "{runBy: tablespec, trigger: EITHER, elapsedSeconds: 600, strategy: DAY_BASED, latestPartitions: 2, "
        "targetIO: 1GiB}")) == {
        "tablespec.compaction.run.by": "tablespec", "hoodie.compact.inline.trigger.strategy": "NUM_OR_TIME",
        "hoodie.compact.inline.max.delta.commits": "5", "hoodie.compact.inline.max.delta.seconds": "600",
        "hoodie.compaction.strategy": "org.apache.hudi.table.action.compact.strategy.DayBasedCompactionStrategy",
        "hoodie.compaction.target.io": "1024", "hoodie.compaction.daybased.target.partitions": "2"}


def test_spec_without_compaction_keeps_its_digest(valid_text, edit):
    """A copy-on-write spec dumps (and digests) as before the section existed."""
    loaded = load_spec_text(valid_text, "t.yaml").specs[0]
    assert "compaction" not in loaded.spec.model_dump(by_alias=True)["spec"]


def test_recorded_values_read_back_as_the_spec_states_them(valid_text, edit):
    """What `import` writes from hoodie.properties is what the spec said (Hudi's class and trigger
    names, MB, back to the spec's words and sizes)."""
    from tablespec.plan.settings import REGISTRY, spec_value
    loaded = load_spec_text(edit(valid_text, MOR, _section(
        "{runBy: tablespec, trigger: BOTH, deltaCommits: 3, elapsedSeconds: 600, strategy: DAY_BASED, "
        "latestPartitions: 2, targetIO: 1GiB}")), "t.yaml")
    spec = loaded.specs[0].spec
    props = desired_properties(spec)
    read = {s.path.removeprefix("spec.compaction."): spec_value(s, props[s.prop])
            for s in REGISTRY if s.path.startswith("spec.compaction.")}
    assert read == spec.spec.compaction.model_dump(by_alias=True) | {"targetIO": "1GiB"}

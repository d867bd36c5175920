"""Typed plan actions: one model per kind, its parameters and estimates typed. Plan files in the
format version 1 shape (the golden files, and actions written by hand as plans have always held
them) still load and apply; a wrongly typed value is refused naming the table, action and field."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from _support import ROOT
from test_saved_plan_trust import edit_plan, edit_spec, props, run
from test_saved_plan_trust import project as project  # noqa: F401 (a fixture: scratch specs and warehouse)

from tablespec.apply import EXECUTORS, Applier
from tablespec.plan.actions import KINDS, BucketEstimate, BucketRescale, BucketSwitch, Clean, Rollback
from tablespec.plan.render import load_plan, render_json
from tablespec.quantities import BYTES, unit_of
from tablespec.results import Clustered, Rebucketed

NUM_BUCKETS = "hoodie.bucket.index.num.buckets"


def rescale_plan(project, capsys):
    """Tables created; a saved plan taking orders from 16 to 32 buckets (no data: configuration only)."""
    assert run(capsys, "apply", "specs", "--warehouse", "warehouse", "--auto-approve")[0] == 0
    edit_spec(project, "numBuckets: 16", "numBuckets: 32")
    assert run(capsys, "plan", "specs", "--warehouse", "warehouse", "--out", "plan.json")[0] == 0


@pytest.mark.parametrize("golden", sorted((ROOT / "tests" / "golden").glob("plan_*.json")), ids=lambda p: p.name)
def test_golden_plan_files_load_and_write_back_unchanged(tmp_path, monkeypatch, golden):
    """Plan files as the single-class `Action` wrote them load as typed actions and are written
    again byte for byte (format version 1 is unchanged)."""
    monkeypatch.chdir(tmp_path)
    text = golden.read_text().replace("<TMP>", str(tmp_path))
    Path("plan.json").write_text(text)
    assert render_json(load_plan("plan.json")) == text


def test_plan_file_in_version_1_shape_applies(project, capsys):
    """A bucket_rescale written by hand as plan files hold it (params and estimate as JSON objects,
    a derived `symbol`) is the action apply derives again, and runs."""
    rescale_plan(project, capsys)
    written = {
        "kind": "bucket_rescale", "destructive": False,
        "reasons": ["bucket layout changes for no existing partition: configuration only"],
        "changes": [{"path": "spec.index.numBuckets", "old": "16", "new": "32", "property": NUM_BUCKETS}],
        "params": {"from": "BUCKET", "to": "BUCKET", "partitions": []},
        "estimate": {"partitions": 0, "file_groups": "0 -> 0", "bytes_to_read": 0, "bytes_to_write": 0},
        "advice": [], "symbol": "~",
    }
    edit_plan("plan.json", "sales.orders", lambda t: t.update(actions=[written]))
    action = next(a for t in load_plan("plan.json").tables if t.name == "sales.orders" for a in t.actions)
    assert isinstance(action, BucketRescale) and action.params == BucketSwitch(from_="BUCKET", to="BUCKET", partitions=[])
    code, out, err = run(capsys, "apply", "plan.json")
    assert code == 0, err
    assert "sales.orders: bucket_rescale done" in out and "actual:   partitions=0" in out
    assert props(project)[NUM_BUCKETS] == "32"


@pytest.mark.parametrize("edit, field, got", [
    (lambda a: a["params"].update(partitions="order_date=2026-11-01"), "params.partitions", '"order_date=2026-11-01"'),
    (lambda a: a["estimate"].update(bytes_to_read="12"), "estimate.bytes_to_read", '"12"'),
    (lambda a: a["estimate"].update(suggested_num_buckets="4"), "estimate.suggested_num_buckets", '"4"'),
    (lambda a: a["params"].update(to="HASH"), "params.to", '"HASH"'),
    (lambda a: a["params"].pop("partitions"), "params.partitions", None),
    (lambda a: a.update(destructive="no"), "destructive", '"no"'),
])
def test_wrongly_typed_value_is_refused(project, capsys, edit, field, got):
    """A plan file value of the wrong type (a string where a list or a count belongs, an index type
    that does not exist, a missing parameter) is refused before anything runs, in one line naming
    the file, the table, the action and the field; it is never coerced ("12" is not 12 bytes)."""
    rescale_plan(project, capsys)
    edit_plan("plan.json", "sales.orders", lambda t: edit(t["actions"][0]))
    code, _, err = run(capsys, "apply", "plan.json")
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"error: plan.json: invalid plan file: table sales.orders: action 1 (bucket_rescale): "
                          f"{field}: "), err
    assert (f"(got {got})" in err) if got else "Field required" in err
    assert props(project)[NUM_BUCKETS] == "16"


def test_edited_parameters_are_refused(project, capsys):
    """Well-typed parameters other than the ones apply derives: the plan is refused, naming them."""
    rescale_plan(project, capsys)
    edit_plan("plan.json", "sales.orders",
              lambda t: t["actions"][0]["params"].update(partitions=["order_date=2026-11-01"]))
    code, _, err = run(capsys, "apply", "plan.json")
    assert code == 1 and "the plan no longer matches table sales.orders" in err, err
    assert "bucket_rescale parameters differ (partitions)" in err
    assert props(project)[NUM_BUCKETS] == "16"


def test_every_kind_has_one_model_and_one_executor():
    """What a kind is lives on its model; which step runs it is apply's EXECUTORS (checked at import)."""
    assert set(KINDS) == set(EXECUTORS)
    assert all(callable(getattr(Applier(), EXECUTORS[kind].__name__)) for kind in KINDS)
    assert {k for k, cls in KINDS.items() if cls.needs_spark} == {
        "bucket_bootstrap", "bucket_rescale", "replace_table", "index_migration", "record_index_build",
        "clustering", "compaction", "build_data_skipping"}
    assert {k for k, cls in KINDS.items() if cls.housekeeping} == {"update_settings", "schema_evolution", "rollback",
                                                                    "clean", "archive", "build_metadata_table",
                                                                    "drop_metadata_partitions", "compaction"}
    assert {k: cls.symbol for k, cls in KINDS.items() if cls.symbol != "~"} == {"create_table": "+",
                                                                                 "replace_table": "-/+"}


def test_rollback_takes_either_shape_and_nothing_else():
    """Rollback's two parameter shapes: dead writers' instants, or clustering plans to discard."""
    assert Rollback.model_validate({"kind": "rollback", "params": {"instants": ["1"]}}).params.model_dump() == {
        "instants": ["1"]}
    assert Rollback.model_validate({"kind": "rollback", "params": {"discard_plans": ["2"]}}).params.model_dump() == {
        "discard_plans": ["2"]}
    with pytest.raises(ValueError):
        Rollback.model_validate({"kind": "rollback", "params": {"instants": ["1"], "discard_plans": ["2"]}})


def test_values_are_shown_by_their_type():
    """Bytes print in units because their field is `Bytes`, whatever it is called; an unset field is left out."""
    estimate = BucketEstimate(partitions=2, file_groups="4 -> 8", bytes_to_read=3 * 1024 * 1024, bytes_to_write=1536)
    assert estimate.shown() == {"partitions": 2, "file_groups": "4 -> 8", "bytes_to_read": "3.0 MiB",
                                "bytes_to_write": "1.5 KiB"}
    assert unit_of(Clean.model_fields["estimate"].annotation, "bytes_to_free") is BYTES
    assert Clustered(scheduled="20261121093000000", groups=3).shown() == {"scheduled": "20261121093000000",
                                                                          "groups": 3}
    assert Rebucketed(partitions=1, bytes_written=2048, seconds=0.5).shown() == {
        "partitions": 1, "bytes_written": "2.0 KiB", "seconds": 0.5}
    assert json.loads(Clustered(groups=0).model_dump_json()) == {"groups": 0}

"""A saved plan is input, not authority: `apply PLAN.json` re-validates the embedded specs, derives
every table's actions again against the live table and refuses the plan unless they are the saved
ones, re-checks where the tables are, and decides destructiveness and protection itself. Through
the CLI, on real files; the edits are the ones a hand (or a script) can make to a plan file."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _support import EXAMPLES
from _support import cli as run

from tablespec.apply import Applier
from tablespec.hudi.config import read_table_config, write_table_config
from tablespec.hudi.io import LocalStorage
from tablespec.plan.render import load_plan
from tablespec.spec.loader import spec_digest
from tablespec.spec.model import TableSpec

RECORD_KEY = "hoodie.table.recordkey.fields"
KEEP_COMMITS = "hoodie.cleaner.commits.retained"
CLEAN_ESTIMATE = {"earliest_instant_to_retain": "20261121093000000", "partitions": 1, "files": 1, "bytes_to_free": 1}


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A scratch project: a copy of the example specs and an empty warehouse, cwd set to it."""
    shutil.copytree(EXAMPLES, tmp_path / "specs")
    for spec in (tmp_path / "specs").glob("*.yaml"):   # saved plans' trust, not catalogs: the examples unregistered
        spec.write_text("".join(ln for ln in spec.read_text().splitlines(True) if not ln.lstrip().startswith("catalog:")))
    (tmp_path / "warehouse").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TABLESPEC_WAREHOUSE", raising=False)
    return tmp_path



def edit_spec(project: Path, old: str, new: str, name: str = "orders.yaml"):
    path = project / "specs" / name
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


def edit_plan(path: str, table: str, change) -> None:
    """Apply `change` to the JSON of one table of a saved plan, as a hand edit would."""
    data = json.loads(Path(path).read_text())
    change(next(t for t in data["tables"] if t["name"] == table))
    Path(path).write_text(json.dumps(data, indent=2))


def props(project: Path, location: str = "warehouse/sales/orders") -> dict:
    return read_table_config(LocalStorage(), str(project / location)).to_properties()


def tables_in(root: Path) -> list[str]:
    return sorted(str(p.parent.relative_to(root)) for p in root.rglob(".hoodie")
                  if p.parent.name != "metadata")   # not Hudi's metadata table (.hoodie/metadata/.hoodie)


def saved_update(project, capsys):
    """Tables created; a saved plan raising orders' keepCommits from 10 to 11."""
    assert run(capsys, "apply", "specs", "--warehouse", "warehouse", "--auto-approve")[0] == 0
    edit_spec(project, "keepCommits: 10", "keepCommits: 11")
    assert run(capsys, "plan", "specs", "--warehouse", "warehouse", "--out", "plan.json")[0] == 0


def test_edited_destructive_flag_on_protected_table_is_refused(project, capsys):
    """(a) A replace_table on a preventDestroy table with "destructive": false edited in."""
    run(capsys, "apply", "specs", "--warehouse", "warehouse", "--auto-approve")
    edit_spec(project, "fields: [order_id]", "fields: [order_id, customer_id]")
    run(capsys, "plan", "specs", "--warehouse", "warehouse", "--out", "plan.json")

    def not_destructive(t):
        assert [a["kind"] for a in t["actions"]] == ["replace_table"] and t["actions"][0]["destructive"]
        t["actions"][0]["destructive"] = False
    edit_plan("plan.json", "sales.orders", not_destructive)
    for flags in ((), ("--allow-destructive",)):
        code, _, err = run(capsys, "apply", "plan.json", *flags)
        assert code == 1 and "no longer matches table sales.orders" in err and "replace_table (destructive)" in err
        assert "Traceback" not in err
        assert props(project)[RECORD_KEY] == "order_id"


def test_protection_in_table_properties_blocks_destructive_plans(project, capsys):
    """The table's own hoodie.properties say preventDestroy: a spec that drops it and changes the
    key in one go is refused, even with --allow-destructive, edited flag or not."""
    run(capsys, "apply", "specs", "--warehouse", "warehouse", "--auto-approve")
    assert props(project)["tablespec.protection.prevent.destroy"] == "true"
    edit_spec(project, "preventDestroy: true", "preventDestroy: false")
    edit_spec(project, "fields: [order_id]", "fields: [order_id, customer_id]")
    run(capsys, "plan", "specs", "--warehouse", "warehouse", "--out", "plan.json")
    edit_plan("plan.json", "sales.orders", lambda t: t["actions"][0].update(destructive=False))
    code, _, err = run(capsys, "apply", "plan.json")
    assert code == 1 and "no longer matches table sales.orders" in err
    run(capsys, "plan", "specs", "--warehouse", "warehouse", "--out", "plan.json")  # unedited
    for flags in ((), ("--allow-destructive",)):
        code, _, err = run(capsys, "apply", "plan.json", *flags)
        assert code == 1 and "preventDestroy" in err and "nothing was changed" in err
    assert props(project)[RECORD_KEY] == "order_id"
    assert props(project)["tablespec.protection.prevent.destroy"] == "true"


def test_location_outside_the_warehouse_is_refused(project, capsys):
    """(b) A plan creating tables, with one location moved outside the warehouse and its embedded
    spec changed (keepCommits: 1): refused, no table created anywhere."""
    run(capsys, "plan", "specs", "--warehouse", "warehouse", "--out", "plan.json")
    outside = project / "outside" / "orders"

    def move(t):
        t["location"] = str(outside)
        t["spec"]["spec"]["retention"]["keepCommits"] = 1
    edit_plan("plan.json", "sales.orders", move)
    code, _, err = run(capsys, "apply", "plan.json")
    assert code == 1 and "Traceback" not in err
    assert str(outside) in err and str(project / "warehouse" / "sales" / "orders") in err
    assert not (project / "outside").exists() and tables_in(project) == []


def test_location_moved_to_a_copy_of_the_table_is_refused(project, capsys):
    """(b) The same edit on an update plan, pointing at a copy of the table outside the warehouse
    (so the copy passes the stale checks): neither table changes."""
    saved_update(project, capsys)
    outside = project / "outside" / "orders"
    shutil.copytree(project / "warehouse" / "sales" / "orders", outside)

    def move(t):
        t["location"] = str(outside)
        t["spec"]["spec"]["retention"]["keepCommits"] = 1
    edit_plan("plan.json", "sales.orders", move)
    code, _, err = run(capsys, "apply", "plan.json")
    assert code == 1 and str(outside) in err and "is not where its spec puts it" in err
    assert props(project, "outside/orders")[KEEP_COMMITS] == props(project)[KEEP_COMMITS] == "10"


@pytest.mark.parametrize("field, change", [
    ("spec.index.numBuckets", lambda s: s["spec"]["index"].update(numBuckets=0)),
    ("spec.recordKey", lambda s: s["spec"].pop("recordKey")),
    ("spec.retention.keepCommits", lambda s: s["spec"]["retention"].update(keepCommits="ten")),
])
def test_invalid_embedded_spec_is_one_line_error(project, capsys, field, change):
    """(c) An invalid embedded spec: one line naming the plan file, the table and the field."""
    run(capsys, "plan", "specs", "--warehouse", "warehouse", "--out", "plan.json")
    edit_plan("plan.json", "sales.orders", lambda t: change(t["spec"]))
    code, out, err = run(capsys, "apply", "plan.json")
    assert code == 1 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("error: plan.json: table sales.orders: invalid embedded spec: ") and field in err
    assert tables_in(project) == []


def test_embedded_spec_edited_is_refused(project, capsys):
    """(d) The embedded spec edited (keepCommits: 1), the actions left as they were; then with its
    spec_digest edited to match too (the spec file still says otherwise)."""
    saved_update(project, capsys)
    edit_plan("plan.json", "sales.orders", lambda t: t["spec"]["spec"]["retention"].update(keepCommits=1))
    code, _, err = run(capsys, "apply", "plan.json")
    assert code == 1 and "sales.orders" in err and "embedded spec" in err
    assert props(project)[KEEP_COMMITS] == "10"

    def digest(t):
        t["spec_digest"] = spec_digest(TableSpec.model_validate(t["spec"]))
    edit_plan("plan.json", "sales.orders", digest)
    code, _, err = run(capsys, "apply", "plan.json")
    assert code == 1 and "stale" in err and "sales.orders" in err
    assert props(project)[KEEP_COMMITS] == "10"


@pytest.mark.parametrize("change, shown", [
    (lambda a: a["changes"][0].update(new="1"), "changes saved [spec.retention.keepCommits: 10 -> 1]"),
    (lambda a: a.update(kind="clean", estimate=CLEAN_ESTIMATE), "saved [clean], now [update_settings]"),
])
def test_edited_actions_are_refused(project, capsys, change, shown):
    """(d) Actions edited (a change's value, parameters, the kind): what the specs give for the
    table now is not the saved plan, so nothing runs."""
    saved_update(project, capsys)
    edit_plan("plan.json", "sales.orders", lambda t: change(t["actions"][0]))
    code, _, err = run(capsys, "apply", "plan.json")
    assert code == 1 and "the plan no longer matches table sales.orders" in err and shown in err, err
    assert props(project)[KEEP_COMMITS] == "10"


def test_parameters_an_action_does_not_take_are_refused(project, capsys):
    """(d) Parameters edited into an action whose kind takes none: the plan file is invalid (typed
    actions), so nothing runs."""
    saved_update(project, capsys)
    edit_plan("plan.json", "sales.orders", lambda t: t["actions"][0].update(params={"discard_plans": ["20260101000000000"]}))
    code, _, err = run(capsys, "apply", "plan.json")
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert ("plan.json: invalid plan file: table sales.orders: action 1 (update_settings): params.discard_plans: "
            "Extra inputs are not permitted") in err
    assert props(project)[KEEP_COMMITS] == "10"


def test_added_action_is_refused(project, capsys):
    saved_update(project, capsys)
    edit_plan("plan.json", "sales.orders", lambda t: t["actions"].append({"kind": "clean", "estimate": CLEAN_ESTIMATE}))
    code, _, err = run(capsys, "apply", "plan.json")
    assert code == 1 and "saved [update_settings, clean], now [update_settings]" in err
    assert props(project)[KEEP_COMMITS] == "10"


def test_stale_check_survives_emptied_requirements(project, capsys):
    """The requirements edited away, hoodie.properties changed behind the plan's back: still stale."""
    saved_update(project, capsys)
    edit_plan("plan.json", "sales.orders", lambda t: t.update(requirements=[]))
    base = str(project / "warehouse" / "sales" / "orders")
    cfg = read_table_config(LocalStorage(), base)
    write_table_config(LocalStorage(), base, cfg.with_updates(precombine_field="customer_id"))
    code, _, err = run(capsys, "apply", "plan.json")
    assert code == 1 and "no longer matches table sales.orders" in err
    assert props(project)[KEEP_COMMITS] == "10" and props(project)["hoodie.table.precombine.field"] == "customer_id"


def test_duplicated_table_is_refused(project, capsys):
    run(capsys, "plan", "specs", "--warehouse", "warehouse", "--out", "plan.json")
    data = json.loads(Path("plan.json").read_text())
    data["tables"].append(data["tables"][0])
    Path("plan.json").write_text(json.dumps(data))
    code, _, err = run(capsys, "apply", "plan.json")
    assert code == 1 and "is already defined at" in err
    assert tables_in(project) == []


def test_warehouse_given_at_apply_must_be_the_plans(project, capsys):
    run(capsys, "plan", "specs", "--warehouse", "warehouse", "--out", "plan.json")
    (project / "other").mkdir()
    code, _, err = run(capsys, "apply", "plan.json", "--warehouse", "other")
    assert code == 1 and str(project / "warehouse") in err and str(project / "other") in err
    assert tables_in(project) == []
    code, out, err = run(capsys, "apply", "plan.json", "--warehouse", "warehouse")
    assert code == 0, err
    assert tables_in(project) == ["warehouse/analytics/events", "warehouse/sales/customers", "warehouse/sales/orders"]


def test_unedited_saved_plans_apply(project, capsys):
    """(e) Plans as `plan --out` writes them still apply: three tables created, then an update."""
    run(capsys, "plan", "specs", "--warehouse", "warehouse", "--out", "plan.json")
    code, out, err = run(capsys, "apply", "plan.json")
    assert code == 0 and "Apply complete: 3 created" in out, err
    edit_spec(project, "keepCommits: 10", "keepCommits: 11")
    edit_spec(project, "team: growth", "team: marketing", "events.yaml")
    run(capsys, "plan", "specs", "--warehouse", "warehouse", "--out", "plan.json")
    code, out, err = run(capsys, "apply", "plan.json")
    assert code == 0 and "2 other actions applied" in out, err
    assert props(project)[KEEP_COMMITS] == "11"
    assert props(project, "warehouse/analytics/events")["tablespec.label.team"] == "marketing"
    assert run(capsys, "plan", "specs", "--warehouse", "warehouse", "--detailed-exitcode")[0] == 0


def test_table_changed_between_preflight_and_its_turn_is_refused(project, capsys):
    """Each table is checked again under its lock right before its actions run: a table changed
    while an earlier table of the plan was being applied is refused, not overwritten."""
    saved_update(project, capsys)
    edit_spec(project, "team: growth", "team: marketing", "events.yaml")
    run(capsys, "plan", "specs", "--warehouse", "warehouse", "--out", "plan.json")
    plan = load_plan("plan.json")
    assert [t.name for t in plan.tables if t.actions] == ["analytics.events", "sales.orders"]
    orders = str(project / "warehouse" / "sales" / "orders")

    def meanwhile(t, a, done):  # another writer changes orders while events is applied
        cfg = read_table_config(LocalStorage(), orders)
        write_table_config(LocalStorage(), orders, cfg.with_updates(precombine_field="customer_id"))
    from tablespec.errors import StalePlanError
    with pytest.raises(StalePlanError, match="sales.orders"):
        Applier(on_action=meanwhile).apply(plan)
    assert props(project, "warehouse/analytics/events")["tablespec.label.team"] == "marketing"
    assert props(project)[KEEP_COMMITS] == "10" and props(project)["hoodie.table.precombine.field"] == "customer_id"

"""Plan output in all three formats, against golden files (UPDATE_GOLDEN=1 rewrites them)."""
from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from _support import EXAMPLES, ROOT, check_golden

from tablespec.apply import Applier
from tablespec.hudi.io import table_location
from tablespec.hudi.table import HudiTable, Location
from tablespec.plan.builder import build_plan
from tablespec.plan.render import load_plan, render, render_json
from tablespec.spec.loader import load_specs
from tablespec.state import observe

NOW = datetime(2026, 11, 21, 9, 30, tzinfo=UTC)


def make_plan(specs_dir="specs"):
    loaded = load_specs([specs_dir])
    assert not loaded.errors, loaded.errors
    states = {}
    for ls in loaded.specs:
        loc = table_location("warehouse", ls.spec.spec.location)
        states[loc] = observe(HudiTable.open(loc))
    return build_plan(loaded.specs, states, Location.parse("warehouse"), {"env": "test"}, now=NOW)




@pytest.fixture
def workdir(tmp_path, monkeypatch):
    shutil.copytree(EXAMPLES, tmp_path / "specs")
    (tmp_path / "warehouse").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def edit(path: Path, old: str, new: str):
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize("fmt, ext", [("text", "txt"), ("markdown", "md"), ("json", "json")])
def test_render_golden(workdir, fmt, ext):
    create = make_plan()
    check_golden(f"plan_create.{ext}", render(create, fmt), workdir)
    Applier().apply(create)
    check_golden(f"plan_nochange.{ext}", render(make_plan(), fmt), workdir)
    edit(workdir / "specs" / "orders.yaml", "numBuckets: 16", "numBuckets: 32")
    edit(workdir / "specs" / "orders.yaml", "keepCommits: 10", "keepCommits: 20")
    edit(workdir / "specs" / "customers.yaml", "fields: [customer_id]", "fields: [customer_id, email]")
    edit(workdir / "specs" / "events.yaml", "team: growth", "team: marketing")
    check_golden(f"plan_change.{ext}", render(make_plan(), fmt), workdir)


@pytest.mark.parametrize("fmt, ext", [("text", "txt"), ("markdown", "md"), ("json", "json")])
def test_render_replace_shows_every_change_it_carries(workdir, fmt, ext):
    """A retyped column forces a replace; the added column, the index, a label and the retention
    it carries along are shown too (issue 27: they appeared nowhere)."""
    Applier().apply(make_plan())
    orders = workdir / "specs" / "orders.yaml"
    edit(orders, "{name: customer_id, type: long}", "{name: customer_id, type: string}")
    edit(orders, "    - {name: order_date, type: date}\n",
         "    - {name: order_date, type: date}\n    - {name: note, type: string}\n")
    edit(orders, "labels: {team: payments}", "labels: {}")
    edit(orders, "numBuckets: 16", "numBuckets: 32")
    edit(orders, "keepCommits: 10", "keepCommits: 20")
    plan = make_plan()
    [replace] = [a for t, a in plan.actions if t.name == "sales.orders"]
    assert (replace.kind, replace.destructive) == ("replace_table", True)
    assert [(c.path, c.old, c.new) for c in replace.changes] == [
        ("spec.columns.customer_id", "long", "string"), ("spec.columns.note", None, "string"),
        ("spec.index.numBuckets", "16", "32"), ("spec.retention.keepCommits", "10", "20"),
        ("metadata.labels.team", "payments", None)]
    assert replace.reasons == ["change type of column customer_id: long -> string (not a widening)",
                               "add column note string"]
    check_golden(f"plan_replace_carries.{ext}", render(plan, fmt), workdir)


def test_plan_json_round_trips(workdir, tmp_path):
    plan = make_plan()
    path = tmp_path / "plan.json"
    path.write_text(render_json(plan))
    assert load_plan(str(path)) == plan
    data = json.loads(path.read_text())
    assert data["summary"] == {"create": 3, "update": 0, "replace": 0, "unchanged": 0}
    assert {a["symbol"] for t in data["tables"] for a in t["actions"]} == {"+"}


def test_docs_plan_json_example_has_the_fields_plans_have(workdir):
    """The example in docs/plan-json.md names exactly the fields `plan --format json` writes, at
    every level (issue 27: it showed a `supported` plans lack and omitted `advice`)."""
    import re
    Applier().apply(make_plan())
    edit(workdir / "specs" / "orders.yaml", "keepCommits: 10", "keepCommits: 20")
    written = json.loads(render_json(make_plan()))
    page = (ROOT / "docs" / "plan-json.md").read_text()
    section = page[page.index("# Plan JSON format"):]
    documented = json.loads(re.search(r"```json\n(.*?)\n```", section, re.S).group(1))

    def levels(plan):
        table = next(t for t in plan["tables"] if t["actions"])
        action = table["actions"][0]
        return {"plan": set(plan), "table": set(table), "action": set(action), "change": set(action["changes"][0]),
                "requirements": {r["type"] for r in table["requirements"]}}
    assert levels(documented) == levels(written)


@pytest.mark.parametrize("fmt, ext", [("text", "txt"), ("markdown", "md")])
def test_render_clustering_golden(workdir, fmt, ext):
    """A clustering action shows its layout, its groups and their sizes."""
    from tablespec.hudi.services.clustering import ClusteringGroup, ClusteringPlan, Layout, SliceInfo
    from tablespec.plan.clustering import _action, group_summary
    Applier().apply(make_plan())
    plan = make_plan()
    mib = 1024 * 1024
    slices = [SliceInfo("order_date=2026-11-01", f"f{i}", f"f{i}_0-1-2_20261121093000000.parquet", 40 * mib)
              for i in range(7)]
    clustering = ClusteringPlan((ClusteringGroup(tuple(slices[:5]), 2), ClusteringGroup(tuple(slices[5:]), 1)),
                                Layout("ZORDER", ("customer_id", "amount")))
    action = _action(clustering, group_summary(clustering), ["5 commits and no clustering yet; everyNCommits is 4"])
    tables = [t.model_copy(update={"actions": [action]}) if t.name == "sales.orders" else t for t in plan.tables]
    check_golden(f"plan_clustering.{ext}", render(plan.model_copy(update={"tables": tables}), fmt), workdir)

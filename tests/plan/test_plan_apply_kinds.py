"""An action kind the applier cannot run is refused before any table is touched."""
import pytest

from tablespec.actions.metadata import create_table
from tablespec.apply import Applier
from tablespec.errors import PlanError
from tablespec.hudi.config import read_table_config
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.table import HudiTable, Location
from tablespec.plan.builder import build_plan
from tablespec.spec.loader import load_spec_text
from tablespec.state import observe_specs

SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {{name: {name}}}
spec:
  location: {name}
  columns:
    - {{name: id, type: string, nullable: false}}
  recordKey: {{fields: [id]}}
  retention: {{keepCommits: {keep}}}
"""


class WithoutCreate(Applier):
    visit_create_table = None   # e.g. an applier from before an action kind existed


def test_unknown_kind_refused_before_anything_runs(tmp_path):
    first = load_spec_text(SPEC.format(name="a_existing", keep=10), "a.yaml").specs
    create_table(HudiTable.open(str(tmp_path / "a_existing")), first[0].spec)
    loaded = (load_spec_text(SPEC.format(name="a_existing", keep=12), "a.yaml").specs
              + load_spec_text(SPEC.format(name="b_new", keep=10), "b.yaml").specs)
    plan = build_plan(loaded, observe_specs(loaded, Location.parse(str(tmp_path))), Location.parse(str(tmp_path)))
    assert [a.kind for _, a in plan.actions] == ["update_settings", "create_table"]
    with pytest.raises(PlanError, match=r"b_new: apply cannot run action kind\(s\) create_table.*nothing was changed"):
        WithoutCreate().apply(plan)
    props = read_table_config(LocalStorage(), str(tmp_path / "a_existing")).to_properties()
    assert props["hoodie.cleaner.commits.retained"] == "10"   # the first table's update did not run either
    assert not (tmp_path / "b_new").exists()
    Applier().apply(plan)
    assert read_table_config(LocalStorage(), str(tmp_path / "a_existing")).to_properties()["hoodie.cleaner.commits.retained"] == "12"

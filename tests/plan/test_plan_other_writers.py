"""`plan` shows what other writers are doing: their pending instants with heartbeat age, and who holds
tablespec's table lock and Hudi's transaction lock."""
from tablespec.actions.metadata import create_table
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.table import HudiTable, Location
from tablespec.hudi.timeline.active import TimelineWriter
from tablespec.hudi.timeline.heartbeat import Heartbeat
from tablespec.hudi.timeline.instant import new_instant_time
from tablespec.hudi.timeline.lock import TableLock
from tablespec.hudi.timeline.txn_lock import TransactionLock
from tablespec.plan.builder import build_plan
from tablespec.plan.render import render
from tablespec.spec.loader import load_spec_text
from tablespec.state import observe_specs

SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: busy}
spec:
  location: busy
  columns:
    - {name: id, type: string, nullable: false}
  recordKey: {fields: [id]}
"""


def _plan(tmp_path):
    loaded = load_spec_text(SPEC, "busy.yaml").specs
    return build_plan(loaded, observe_specs(loaded, Location.parse(str(tmp_path))), Location.parse(str(tmp_path)))


def test_plan_names_pending_writers_and_lock_holders(tmp_path):
    st = LocalStorage()
    loaded = load_spec_text(SPEC, "busy.yaml").specs
    base = str(tmp_path / "busy")
    create_table(HudiTable.open(base), loaded[0].spec)
    assert not _plan(tmp_path).tables[0].warnings
    ts = new_instant_time()
    with Heartbeat(st, base, ts):
        TimelineWriter(st, base).request("commit", ts)
        with TableLock(st, base, owner="ingest-job"), TransactionLock(st, base, "commit"):
            plan = _plan(tmp_path)
            warnings = plan.tables[0].warnings
            text = render(plan, "text")
    assert any(f"{ts}.commit (requested, heartbeat 0s ago)" in w for w in warnings), warnings
    assert any(w.startswith("locked: tablespec table lock: owner 'ingest-job'") for w in warnings), warnings
    assert any(w.startswith("locked: Hudi transaction lock (") and "tablespec commit" in w for w in warnings), warnings
    assert "ingest-job" in text and "heartbeat 0s ago" in text
    assert not plan.has_changes   # other writers' work is shown, not acted on

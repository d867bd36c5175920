"""End to end through the CLI on real files: validate, plan, apply, show, import, exit codes."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _support import COW_FIXTURES, EXAMPLES, MOR_FIXTURES, ROOT, scratch_project, table_files
from _support import cli as run

from tablespec.hudi.config import read_table_config, write_table_config
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.table import HudiTable
from tablespec.state import observe


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A scratch project: a copy of the example specs and an empty warehouse, cwd set to it; its
    catalog is the embedded metastore, as the demo's (the examples are registered)."""
    (tmp_path / "warehouse").mkdir()
    return scratch_project(tmp_path, monkeypatch, EXAMPLES, "catalog: hive\n")



def test_validate_examples_ok(project, capsys):
    code, out, err = run(capsys, "validate", "specs")
    assert code == 0, err
    assert "3 specs in 3 files: valid." in out
    assert err == ""


def test_validate_reports_file_line_field(project, capsys):
    bad = project / "specs" / "bad.yaml"
    bad.write_text((project / "specs" / "orders.yaml").read_text().replace("numBuckets: 16", "numBuckets: 0"))
    code, out, err = run(capsys, "validate", str(bad))
    assert code == 1
    line = next(i for i, l in enumerate(bad.read_text().splitlines(), 1) if "numBuckets" in l)
    assert f"{bad}:{line}:" in err and "spec.index.numBuckets" in err
    assert "Traceback" not in err


def test_validate_reports_every_problem_at_once(project, capsys):
    # A field error (numBuckets) must not hide the cross-field one (hashFields) nor the unknown key.
    orders = (project / "specs" / "orders.yaml").read_text()
    assert orders.count("numBuckets: 16") == orders.count("orderingField:") == 1
    hash_fields = next(line for line in orders.splitlines() if "hashFields:" in line)
    bad = project / "specs" / "orders.yaml"
    bad.write_text(orders.replace("numBuckets: 16", "numBuckets: 0").replace("orderingField:", "orderingFeild:")
                   .replace(hash_fields, hash_fields.split(":")[0] + ": [nope]"))
    code, out, err = run(capsys, "validate", "specs")
    assert code == 1 and "Traceback" not in err
    lines = bad.read_text().splitlines()
    line_of = {key: next(i for i, l in enumerate(lines, 1) if key in l) for key in ("numBuckets", "orderingFeild", "hashFields")}
    printed = [l for l in err.splitlines() if l.startswith("specs/orders.yaml:")]
    assert [l.split(": ", 2)[:2] for l in printed] == [
        [f"specs/orders.yaml:{line_of['orderingFeild']}:3", "spec.orderingFeild"],
        [f"specs/orders.yaml:{line_of['numBuckets']}:5", "spec.index.numBuckets"],
        [f"specs/orders.yaml:{line_of['hashFields']}:{hash_fields.index('[') + 2}", "spec.index.hashFields[0]"],
    ]
    assert printed[2].endswith("hash field 'nope' is not a column")


def test_plan_detailed_exitcode_and_apply_round_trip(project, capsys):
    code, out, _ = run(capsys, "plan", "specs", "--warehouse", "warehouse", "--detailed-exitcode")
    assert code == 2
    assert "Plan: 3 to create, 0 to update, 0 to replace, 0 unchanged." in out
    code, out, err = run(capsys, "apply", "specs", "--warehouse", "warehouse", "--auto-approve")
    assert code == 0, err
    assert "Apply complete: 3 created" in out
    code, out, _ = run(capsys, "plan", "specs", "--warehouse", "warehouse", "--detailed-exitcode")
    assert code == 0 and out.startswith("No changes.")
    code, out, _ = run(capsys, "apply", "specs", "--warehouse", "warehouse", "--auto-approve")
    assert code == 0 and out.startswith("No changes.") and "Apply complete" not in out
    state = observe(HudiTable.open(str(project / "warehouse" / "sales" / "orders")))
    assert state.exists and state.config.to_properties()["hoodie.bucket.index.num.buckets"] == "16"


def test_plan_error_exit_code_is_one(project, capsys):
    (project / "specs" / "orders.yaml").write_text("apiVersion: tablespec/v1\nkind: HudiTable\n")
    code, _, err = run(capsys, "plan", "specs", "--warehouse", "warehouse", "--detailed-exitcode")
    assert code == 1 and "orders.yaml:" in err


def test_warehouse_from_environment(project, capsys, monkeypatch):
    monkeypatch.setenv("TABLESPEC_WAREHOUSE", str(project / "warehouse"))
    code, out, _ = run(capsys, "plan", "specs")
    assert code == 0 and "3 to create" in out
    monkeypatch.delenv("TABLESPEC_WAREHOUSE")
    code, _, err = run(capsys, "plan", "specs")
    assert code == 1 and "no warehouse" in err


def test_settings_update_applies_without_spark(project, capsys):
    run(capsys, "apply", "specs", "--warehouse", "warehouse", "--auto-approve")
    spec = project / "specs" / "orders.yaml"
    spec.write_text(spec.read_text().replace("keepCommits: 10", "keepCommits: 24"))
    code, out, _ = run(capsys, "plan", "specs", "--warehouse", "warehouse", "--detailed-exitcode")
    assert code == 2 and "~ spec.retention.keepCommits: 10 -> 24" in out
    code, out, err = run(capsys, "apply", "specs", "--warehouse", "warehouse", "--auto-approve")
    assert code == 0, err
    props = read_table_config(LocalStorage(), str(project / "warehouse" / "sales" / "orders")).to_properties()
    assert props["hoodie.cleaner.commits.retained"] == "24"
    assert run(capsys, "plan", "specs", "--warehouse", "warehouse", "--detailed-exitcode")[0] == 0


def test_saved_plan_applies_and_refuses_when_stale(project, capsys):
    code, _, _ = run(capsys, "plan", "specs", "--warehouse", "warehouse", "--out", "plan.json")
    assert code == 0 and json.loads(Path("plan.json").read_text())["format_version"] == 1
    # a table created behind the plan's back makes it stale: nothing is applied
    orders = project / "warehouse" / "sales" / "orders"
    run(capsys, "apply", "specs/orders.yaml", "--warehouse", "warehouse", "--auto-approve")
    code, _, err = run(capsys, "apply", "plan.json")
    assert code == 1 and "stale" in err and "sales.orders" in err
    assert not (project / "warehouse" / "analytics").exists() or not any((project / "warehouse").rglob("events/.hoodie"))
    # a fresh plan applies exactly
    run(capsys, "plan", "specs", "--warehouse", "warehouse", "--out", "plan.json")
    code, out, err = run(capsys, "apply", "plan.json")
    assert code == 0, err
    assert observe(HudiTable.open(str(orders))).exists


def test_saved_plan_refused_when_spec_changed(project, capsys):
    run(capsys, "apply", "specs", "--warehouse", "warehouse", "--auto-approve")
    spec = project / "specs" / "orders.yaml"
    spec.write_text(spec.read_text().replace("keepCommits: 10", "keepCommits: 11"))
    run(capsys, "plan", "specs", "--warehouse", "warehouse", "--out", "plan.json")
    spec.write_text(spec.read_text().replace("keepCommits: 11", "keepCommits: 12"))
    code, _, err = run(capsys, "apply", "plan.json")
    assert code == 1 and "spec" in err and "stale" in err
    props = read_table_config(LocalStorage(), str(project / "warehouse" / "sales" / "orders")).to_properties()
    assert props["hoodie.cleaner.commits.retained"] == "10"


def test_saved_plan_refused_when_properties_changed(project, capsys):
    run(capsys, "apply", "specs", "--warehouse", "warehouse", "--auto-approve")
    spec = project / "specs" / "orders.yaml"
    spec.write_text(spec.read_text().replace("keepCommits: 10", "keepCommits: 11"))
    run(capsys, "plan", "specs", "--warehouse", "warehouse", "--out", "plan.json")
    base = str(project / "warehouse" / "sales" / "orders")
    storage = LocalStorage()
    cfg = read_table_config(storage, base)
    write_table_config(storage, base, cfg.with_updates(precombine_field="customer_id"))
    code, _, err = run(capsys, "apply", "plan.json")
    assert code == 1 and "hoodie.properties changed" in err


def test_apply_refuses_to_prompt_without_terminal(project, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", open(os.devnull))
    code, _, err = run(capsys, "apply", "specs", "--warehouse", "warehouse")
    assert code == 1 and "--auto-approve" in err
    assert not any((project / "warehouse").iterdir())


def test_apply_refuses_destructive_untouched(project, capsys):
    run(capsys, "apply", "specs", "--warehouse", "warehouse", "--auto-approve")
    orders = str(project / "warehouse" / "sales" / "orders")
    before = observe(HudiTable.open(orders)).fingerprint()
    spec = project / "specs" / "orders.yaml"
    text = spec.read_text()
    spec.write_text(text.replace("fields: [order_date]", "fields: [customer_id]"))
    code, out, err = run(capsys, "apply", "specs", "--warehouse", "warehouse", "--auto-approve")
    assert code == 1 and "destructive" in err
    assert "-/+ replace_table" in out
    assert observe(HudiTable.open(orders)).fingerprint() == before


def test_show_and_import_round_trip(project, capsys):
    run(capsys, "apply", "specs", "--warehouse", "warehouse", "--auto-approve")
    code, out, _ = run(capsys, "show", "warehouse/sales/orders")
    assert code == 0 and "BUCKET (16 buckets on order_id)" in out
    assert "metadata    Hudi metadata table: .hoodie/metadata" in out and "partitions files;" in out
    code, out, _ = run(capsys, "show", "warehouse/sales/orders", "--format", "json")
    assert json.loads(out)["index"]["numBuckets"] == 16
    shown = json.loads(out)["metadataTable"]   # created with the table
    assert shown["present"] and shown["partitions"] == ["files"] and shown["inflightPartitions"] == []
    code, out, _ = run(capsys, "import", "warehouse/sales/orders", "--warehouse", "warehouse")
    assert code == 0 and out.startswith("# yaml-language-server: $schema=")
    imported = project / "imported"
    imported.mkdir()
    (imported / "orders.yaml").write_text(out)
    code, out, err = run(capsys, "plan", "imported", "--warehouse", "warehouse", "--detailed-exitcode")
    assert code == 0, out + err


def test_show_counts_in_words_and_types_its_json(project, capsys):
    """`show`: one commit reads `1 commit` (issue 27: `1 completed commits`); JSON counts are ints
    and flags bools, not hoodie.properties strings."""
    run(capsys, "apply", "specs", "--warehouse", "warehouse", "--auto-approve")
    spec = project / "specs" / "orders.yaml"
    spec.write_text(spec.read_text().replace("    - {name: order_date, type: date}\n",
                                             "    - {name: order_date, type: date}\n    - {name: note, type: string}\n"))
    code, out, err = run(capsys, "apply", "specs", "--warehouse", "warehouse", "--auto-approve")
    assert code == 0 and "schema_evolution done" in out, out + err  # a commit, written without Spark
    code, out, _ = run(capsys, "show", "warehouse/sales/orders")
    assert code == 0 and "(1 completed commit)" in out and "clustering  never, 1 commit since" in out, out
    assert "BUCKET (16 buckets on order_id)" in out and "0 file groups in 0 partitions" in out
    code, out, _ = run(capsys, "show", "warehouse/sales/orders", "--format", "json")
    shown = json.loads(out)
    assert (shown["index"]["numBuckets"], shown["hiveStyle"], shown["commits"], shown["tableVersion"]) == (16, True, 1, 6)


def test_show_missing_table_is_an_error(project, capsys):
    code, _, err = run(capsys, "show", "nowhere")
    assert code == 1 and "no Hudi table" in err


VIRTUAL_KEYS = "cow_v6_simplekeygen_hivestyle_no_metafields"


@pytest.mark.parametrize("name", [n for n in COW_FIXTURES if n != VIRTUAL_KEYS])
def test_import_real_table_then_plan_no_changes(name, real_table, tmp_path, capsys, monkeypatch):
    """The imported spec matches the table: the plan changes nothing but building Hudi's metadata
    table, which these tables (written with it off) lack."""
    base = real_table(name)
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "import", str(base))
    assert code == 0, err
    (tmp_path / "imported.yaml").write_text(out)
    code, out, err = run(capsys, "plan", "imported.yaml", "--warehouse", str(base.parent), "--format", "json")
    assert code == 0, out + err
    assert [a["kind"] for t in json.loads(out)["tables"] for a in t["actions"]] == ["build_metadata_table"]


def test_virtual_keys_table_is_refused_by_import_and_plan_untouched(real_table, tmp_path, capsys, monkeypatch):
    """hoodie.populate.meta.fields=false: one line naming the setting and what to do, nothing changed."""
    base = real_table(VIRTUAL_KEYS)
    before = {p: p.read_bytes() for p in base.rglob("*") if p.is_file()}
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "import", str(base))
    assert code == 1 and out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "hoodie.populate.meta.fields=false" in err and "copy its rows into a new table" in err
    spec = tmp_path / "t.yaml"  # a spec written by hand for the table: plan and hudi-options refuse it too
    spec.write_text(f"""apiVersion: tablespec/v1
kind: HudiTable
metadata: {{name: {base.name}}}
spec:
  location: {base.name}
  columns: [{{name: id, type: int, nullable: false}}, {{name: byteField, type: int}}]
  recordKey: {{fields: [id]}}
  partitioning: {{fields: [byteField], hiveStyle: true}}
""")
    for argv in (("plan", str(spec)), ("apply", str(spec), "--auto-approve"), ("hudi-options", str(spec))):
        code, out, err = run(capsys, *argv, "--warehouse", str(base.parent))
        assert code == 1 and "hoodie.populate.meta.fields=false (virtual keys) is not supported" in err, argv
        assert "Traceback" not in err
    assert {p: p.read_bytes() for p in base.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("name", MOR_FIXTURES)
def test_merge_on_read_tables_import_and_plan_clean(name, real_table, capsys, tmp_path):
    """A merge-on-read table Hudi wrote imports and plans with no changes (housekeeping left to
    Hudi's writers, said once); a spec saying COPY_ON_WRITE, or one creating a MERGE_ON_READ table,
    is refused in one line; nothing is written."""
    base = real_table(name)
    before = table_files(base)
    code, out, err = run(capsys, "import", str(base))
    assert code == 0, err
    spec = tmp_path / "mor.yaml"
    spec.write_text(out)
    assert "tableType: MERGE_ON_READ" in out
    code, out, err = run(capsys, "plan", str(spec), "--warehouse", str(base.parent), "--detailed-exitcode")
    assert code == 0 and out.startswith("No changes."), out + err
    code, out, err = run(capsys, "show", str(base))
    assert code == 0 and "; 1 log file (" in out and "in 1 file slice" in out, out + err
    spec.write_text(spec.read_text().replace("tableType: MERGE_ON_READ", "tableType: COPY_ON_WRITE"))
    code, out, err = run(capsys, "plan", str(spec), "--warehouse", str(base.parent))
    errors = [line for line in err.splitlines() if "warning:" not in line]
    assert code == 1 and len(errors) == 1 and "is a MERGE_ON_READ table and its spec says COPY_ON_WRITE" in errors[0]
    text = re.sub(r"\n  tableVersion: \d+", "", spec.read_text().replace("tableType: COPY_ON_WRITE", "tableType: MERGE_ON_READ"))
    spec.write_text(text.replace(f"location: {base.name}", "location: elsewhere\n  tableVersion: 9"))
    code, out, err = run(capsys, "plan", str(spec), "--warehouse", str(base.parent))
    assert code == 1 and "spec.tableType: tablespec creates the MERGE_ON_READ tables it writes: at table version 6 " \
        "(this spec: 9)" in err, err
    assert "Traceback" not in err and table_files(base) == before


def test_validate_and_plan_need_no_java(project):
    """validate and plan must run with no Java anywhere and never import pyspark. The same
    interpreter runs them (in a virtual environment too, with its packages), but with no java on
    PATH (an empty directory) and no JAVA_HOME or SPARK_HOME: starting a JVM would fail."""
    nojava = project / "bin"
    nojava.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME", "PYSPARK_PYTHON")}
    env["PATH"] = str(nojava)
    env["PYTHONPATH"] = str(ROOT)
    assert shutil.which("java", path=env["PATH"]) is None
    code = ("import sys; from tablespec.cli import main; "
            "rcs = [main(['validate', 'specs']), main(['plan', 'specs', '--warehouse', 'warehouse']), "
            "main(['plan', 'specs', '--warehouse', 'warehouse', '--format', 'markdown']), "
            "main(['apply', 'specs', '--warehouse', 'warehouse', '--auto-approve'])]; "
            "assert 'pyspark' not in sys.modules, 'pyspark imported'; print(sys.prefix); print(rcs)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=project, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    prefix, rcs = proc.stdout.strip().splitlines()[-2:]
    assert prefix == sys.prefix  # the interpreter kept its environment (a venv's site-packages)
    assert rcs == "[0, 0, 0, 0]"


def test_created_tables_open_in_hudi_rs(project, capsys):
    import hudi
    run(capsys, "apply", "specs", "--warehouse", "warehouse", "--auto-approve")
    t = hudi.HudiTableBuilder.from_base_uri(str(project / "warehouse" / "sales" / "orders")).build()
    schema = t.get_schema()
    assert schema.names == ["order_id", "customer_id", "amount", "updated_at", "order_date"]
    assert str(schema.field("amount").type) == "decimal128(12, 2)"
    assert not schema.field("order_id").nullable
    assert t.hudi_options()["hoodie.index.type"] == "BUCKET"
    assert t.read() == [] and t.get_file_slices() == []

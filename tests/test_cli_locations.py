"""Where tables may be, through the CLI on real files: symbolic links out of the warehouse, tables
within tables, takeovers of another table's location (and explicit renames), creates over files."""
from __future__ import annotations

import os

import pytest
from _support import cli as run

from tablespec.errors import TablespecError
from tablespec.hudi.config import read_table_config
from tablespec.hudi.io import LocalStorage


def spec(name: str, location: str, renamed_from: str | None = None) -> str:
    renamed = f"  renamedFrom: {renamed_from}\n" if renamed_from else ""
    return f"""apiVersion: tablespec/v1
kind: HudiTable
metadata:
  name: {name}
{renamed}spec:
  location: {location}
  columns:
    - {{name: id, type: string, nullable: false}}
    - {{name: v, type: long}}
  recordKey: {{fields: [id]}}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    """An empty warehouse and specs/ folder, cwd set to the project (its real path, as the CLI sees it)."""
    root = tmp_path.resolve()
    (root / "warehouse").mkdir()
    (root / "specs").mkdir()
    monkeypatch.chdir(root)
    monkeypatch.delenv("TABLESPEC_WAREHOUSE", raising=False)
    return root



def write(project, file: str, text: str) -> str:
    (project / "specs" / file).write_text(text)
    return f"specs/{file}"


def line_of(project, file: str, key: str) -> int:
    return next(i for i, line in enumerate((project / "specs" / file).read_text().splitlines(), 1) if key in line)


def plan(capsys, *specs):
    return run(capsys, "plan", *specs, "--warehouse", "warehouse")


def apply(capsys, *specs):
    return run(capsys, "apply", *specs, "--warehouse", "warehouse", "--auto-approve")


def is_table(path) -> bool:
    return read_table_config(LocalStorage(), str(path)) is not None


# --- symbolic links ----------------------------------------------------------------------------

def test_location_through_a_symlink_out_of_the_warehouse_is_refused(project, capsys):
    outside = project / "outside"
    outside.mkdir()
    os.symlink(outside, project / "warehouse" / "sales")
    f = write(project, "orders.yaml", spec("orders", "sales/orders"))
    for command in (plan, apply):
        code, out, err = command(capsys, f)
        assert code == 1 and "Traceback" not in err
        assert err.startswith(f"{f}:{line_of(project, 'orders.yaml', 'location:')}:3: spec.location: ")
        assert f"resolves to {outside}/orders, which lies outside the warehouse" in err
    assert list(outside.iterdir()) == []  # nothing created out there

    # hudi-options would point a Hudi job there, and a Table write there: both refused
    code, _, err = run(capsys, "hudi-options", f, "--warehouse", "warehouse")
    assert code == 1 and "lies outside the warehouse" in err and "Traceback" not in err
    from tablespec.table import Table
    with pytest.raises(TablespecError, match="lies outside the warehouse"):
        Table.load(f, "warehouse")

    # a link that stays in the warehouse is followed
    (project / "warehouse" / "sales").unlink()
    (project / "warehouse" / "v2").mkdir()
    os.symlink("v2", project / "warehouse" / "sales")
    code, out, err = apply(capsys, f)
    assert code == 0, err
    assert is_table(project / "warehouse" / "v2" / "orders")


def test_saved_plan_refused_when_a_symlink_out_appeared_since(project, capsys):
    f = write(project, "orders.yaml", spec("orders", "sales/orders"))
    code, _, err = run(capsys, "plan", f, "--warehouse", "warehouse", "--out", "plan.json")
    assert code == 0, err
    outside = project / "outside"
    outside.mkdir()
    os.symlink(outside, project / "warehouse" / "sales")
    code, out, err = run(capsys, "apply", "plan.json")
    assert code == 1 and "lies outside the warehouse" in err and "nothing was changed" in err
    assert list(outside.iterdir()) == []


def test_two_specs_at_one_directory_through_a_symlink_are_refused(project, capsys):
    (project / "warehouse" / "sales").mkdir()
    os.symlink("sales", project / "warehouse" / "alias")
    a = write(project, "a.yaml", spec("orders", "sales/orders"))
    same = write(project, "same.yaml", spec("orders_copy", "alias/orders"))
    inside = write(project, "inside.yaml", spec("lines", "alias/orders/lines"))
    real = project / "warehouse" / "sales" / "orders"
    code, out, err = plan(capsys, a, same)
    assert code == 1 and "Traceback" not in err
    assert (f"{same}:6:3: spec.location: {project / 'warehouse' / 'alias' / 'orders'} resolves to {real}, which is "
            f"the same directory as the location of table 'orders' at {a}:6") in err
    code, out, err = plan(capsys, a, inside)
    assert code == 1 and "Traceback" not in err
    assert (f"{inside}:6:3: spec.location: {project / 'warehouse' / 'alias' / 'orders' / 'lines'} resolves to "
            f"{real}/lines, which lies inside the location of table 'orders' at {a}:6") in err
    code, out, err = plan(capsys, inside, a)
    assert code == 1 and (f"{a}:6:3: spec.location: {project / 'warehouse' / 'sales' / 'orders'} resolves to {real}, "
                          f"which contains the location of table 'lines' at {inside}:6") in err
    assert not (project / "warehouse" / "sales" / "orders").exists()


# --- tables within tables ----------------------------------------------------------------------

def test_table_inside_or_around_an_existing_table_is_refused(project, capsys):
    assert apply(capsys, write(project, "orders.yaml", spec("orders", "sales/orders")))[0] == 0
    inner = write(project, "inner.yaml", spec("inner", "sales/orders/archive"))
    outer = write(project, "outer.yaml", spec("sales", "sales"))
    orders = project / "warehouse" / "sales" / "orders"
    code, out, err = plan(capsys, inner)
    assert code == 1 and "Traceback" not in err
    assert err.startswith(f"{inner}:6:3: spec.location: {orders}/archive lies inside the Hudi table at {orders}")
    code, out, err = plan(capsys, outer)
    assert code == 1 and "Traceback" not in err
    assert err.startswith(f"{outer}:6:3: spec.location: {orders.parent} contains Hudi table(s) at orders")
    code, _, err = apply(capsys, inner)
    assert code == 1 and not (orders / "archive").exists()


# --- takeovers and renames ---------------------------------------------------------------------

def test_another_name_at_an_existing_table_is_refused_and_an_explicit_rename_applies(project, capsys):
    f = write(project, "orders.yaml", spec("orders", "sales/orders"))
    assert apply(capsys, f)[0] == 0
    location = project / "warehouse" / "sales" / "orders"

    write(project, "orders.yaml", spec("invoices", "sales/orders"))
    for command in (plan, apply):
        code, out, err = command(capsys, f)
        assert code == 1 and "Traceback" not in err
        assert err.startswith(f"{f}:4:3: metadata.name: the table at 'sales/orders' ")
        assert ("is named 'orders', the spec names 'invoices'; to rename it say metadata.renamedFrom: orders; "
                "to manage another table pick another location") in err
    assert read_table_config(LocalStorage(), str(location)).name == "orders"

    write(project, "orders.yaml", spec("invoices", "sales/orders", renamed_from="order"))
    code, _, err = plan(capsys, f)
    assert code == 1 and f"{f}:5:3: metadata.renamedFrom: " in err and "is named 'orders', not 'order'" in err

    write(project, "orders.yaml", spec("invoices", "sales/orders", renamed_from="orders"))
    code, out, err = plan(capsys, f)
    assert code == 0, err
    assert "~ update_settings\n      # rename orders -> invoices (metadata.renamedFrom)\n" \
           '      ~ metadata.name: "orders" -> "invoices"\n' in out
    assert apply(capsys, f)[0] == 0
    assert read_table_config(LocalStorage(), str(location)).name == "invoices"
    code, out, _ = run(capsys, "plan", f, "--warehouse", "warehouse", "--detailed-exitcode")
    assert code == 0 and out.startswith("No changes.")


# --- creating over what is already there -------------------------------------------------------

def test_create_over_a_timeline_without_properties_or_other_files_is_refused(project, capsys):
    f = write(project, "orders.yaml", spec("orders", "sales/orders"))
    location = project / "warehouse" / "sales" / "orders"
    (location / ".hoodie").mkdir(parents=True)
    (location / ".hoodie" / "20240101000000000.commit").write_text("{}")
    for command in (plan, apply):
        code, out, err = command(capsys, f)
        assert code == 1 and "Traceback" not in err
        assert err.startswith(f"{f}:6:3: spec.location: {location} is not empty: it holds a .hoodie folder without "
                              "hoodie.properties (.hoodie/20240101000000000.commit); a table is created only in an "
                              "empty directory. To manage an existing Hudi table, adopt it with `tablespec import`")
    assert not is_table(location)

    (location / ".hoodie" / "20240101000000000.commit").unlink()
    (location / "data.csv").write_text("id,v\n")
    code, _, err = plan(capsys, f)
    assert code == 1 and f"{location} is not empty: it holds files (data.csv)" in err

    (location / "data.csv").unlink()  # empty folders only (what an interrupted create leaves): created
    code, _, err = apply(capsys, f)
    assert code == 0, err
    assert is_table(location)


def test_create_refused_when_files_appeared_since_the_plan(project, capsys):
    f = write(project, "orders.yaml", spec("orders", "sales/orders"))
    assert run(capsys, "plan", f, "--warehouse", "warehouse", "--out", "plan.json")[0] == 0
    location = project / "warehouse" / "sales" / "orders"
    location.mkdir(parents=True)
    (location / "part-0000.parquet").write_bytes(b"PAR1")
    code, out, err = run(capsys, "apply", "plan.json")
    assert code == 1 and "Traceback" not in err
    assert f"{location} is not empty: it holds files (part-0000.parquet)" in err and "nothing was created" in err
    assert not is_table(location) and (location / "part-0000.parquet").read_bytes() == b"PAR1"

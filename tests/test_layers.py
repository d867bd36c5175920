"""The package's layers (docs/architecture.md), checked from its import statements.

Each module imports only from its own layer or the ones below, and no group of modules imports
itself around a circle, counting imports inside functions too (a lazy import is still a dependency)."""
from __future__ import annotations

import ast
from pathlib import Path

import tablespec

ROOT = Path(tablespec.__file__).parent

# Lowest first. A module belongs to the first entry naming it or a package above it.
LAYERS = [
    ("errors", "types", "wording", "version", "faults"),
    ("hudi", "arrow"),                 # the format, and the pyarrow kernels executors run (no Spark)
    ("spec", "quantities"),
    ("state", "catalog"),
    ("plan", "stored_paths", "results"),
    ("actions", "engine"),
    ("apply", "importer", "index", "verify", "show", "hudi_options", "report"),
    ("table", "cli", "demo", "demo_data", "docs_reference", ""),   # "": the package's __init__
]


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(p for p in parts if p != "__init__")] = path
    return out


MODULES = _modules()


def _layer(module: str) -> int:
    best = None
    for rank, names in enumerate(LAYERS):
        for name in names:
            if module == name or module.startswith(name + ".") if name else module == "":
                if best is None or len(name) > best[1]:
                    best = (rank, len(name))
    assert best is not None, f"tablespec.{module} is in no layer: add it to LAYERS"
    return best[0]


def _imports(module: str) -> set[str]:
    """The package modules `module` imports (relative to `tablespec`), anywhere in its body."""
    out = set()
    tree = ast.parse(MODULES[module].read_text())
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
                   for n in ast.walk(block)}   # annotations only: no import at run time
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "tablespec":
            base = node.module.removeprefix("tablespec").lstrip(".")
            names = [f"{base}.{a.name}".lstrip(".") for a in node.names]
            if not any(n in MODULES for n in names):   # names from a module, not submodules of a package
                names = [base]
        elif isinstance(node, ast.Import):
            names = [a.name.removeprefix("tablespec").lstrip(".") for a in node.names if a.name.split(".")[0] == "tablespec"]
        for name in names:
            while name not in MODULES and "." in name:
                name = name.rsplit(".", 1)[0]
            if name in MODULES and name != module:
                out.add(name)
    return out


GRAPH = {m: _imports(m) for m in MODULES}


def test_every_import_points_down_or_sideways():
    upward = sorted(f"tablespec.{m} -> tablespec.{t}" for m, targets in GRAPH.items() for t in targets
                    if _layer(t) > _layer(m))
    assert not upward, "imports that run up a layer:\n" + "\n".join(upward)


def test_no_import_circles():
    # Tarjan's strongly connected components; any component of two or more modules is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_the_graph_is_read():
    """The checks above see the package's real imports (a parser that found none would pass them)."""
    assert "hudi.timeline.active" in GRAPH["hudi.table"] and "state" in GRAPH["plan.builder"]


STATE_LOADERS = {("Timeline", "load"), ("FileSystemView", "build"), (None, "read_table_config"), (None, "storage_for")}


def _state_loads(module: str) -> list[str]:
    """Calls in `module` that read a table's timeline, file-system view or config, or its storage,
    from a location instead of through the table handle."""
    found = []
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute):
            key = (func.value.id if isinstance(func.value, ast.Name) else None, func.attr)
        else:
            key = (None, func.id) if isinstance(func, ast.Name) else None
        if key in STATE_LOADERS or (key is not None and (None, key[1]) in STATE_LOADERS):
            found.append(f"tablespec.{module}:{node.lineno}: {ast.unparse(func)}(...)")
    return found


def test_only_the_handle_loads_table_state():
    """A table is opened once (docs/architecture.md, "The table handle"): only `hudi.table` loads
    a table's config, timeline or file-system view."""
    assert _state_loads("hudi.table"), "the check finds the handle's own loads"
    elsewhere = [hit for m in sorted(MODULES) if m != "hudi.table" for hit in _state_loads(m)]
    assert not elsewhere, "table state loaded outside the table handle:\n" + "\n".join(elsewhere)

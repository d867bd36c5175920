"""The demo: validate, plan, apply and show the example specs in a fresh local warehouse.

Run with `python -m tablespec.demo [--warehouse DIR]`. It drives the same CLI a user types,
printing each command first, and stops at the first failure.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from tablespec.cli import main as cli

ROOT = Path(__file__).resolve().parents[1]


def run(*argv: str) -> int:
    print(f"\n$ tablespec {' '.join(argv)}", flush=True)
    return cli(list(argv))


def demo(warehouse: Path) -> int:
    specs = str(ROOT / "specs" / "examples")
    if warehouse.exists():
        shutil.rmtree(warehouse)
    warehouse.mkdir(parents=True)
    steps = [
        (("validate", specs), {0}),
        (("plan", specs, "--warehouse", str(warehouse), "--detailed-exitcode"), {2}),
        (("apply", specs, "--warehouse", str(warehouse), "--auto-approve"), {0}),
        (("plan", specs, "--warehouse", str(warehouse), "--detailed-exitcode"), {0}),
    ]
    for argv, ok in steps:
        code = run(*argv)
        if code not in ok:
            print(f"\ndemo failed: exit code {code}", file=sys.stderr)
            return 1
    for table in sorted(p.parent.parent for p in warehouse.rglob(".hoodie/hoodie.properties")):
        if run("show", str(table)) != 0:
            return 1
    print(f"\nDemo complete: tables are in {warehouse}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", default="demo-warehouse", help="emptied and re-created (default: ./demo-warehouse)")
    return demo(Path(parser.parse_args().warehouse).resolve())


if __name__ == "__main__":
    sys.exit(main())

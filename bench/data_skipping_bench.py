"""What a filtered read pays for the metadata table's column statistics (no Spark).

A version 9 table created from a spec (`--columns` int columns, 30 partitions `dt=DD`) gets a
`column_stats` and a `partition_stats` partition built through the format layer
(`column_stats_init.initialize`) from synthetic ranges of `--files` base files: file i of
partition p holds values [100 i, 100 i + 99] in every column. Timed (best of `--repeat`, warm OS
page cache, the parsed HFile heads cleared before each):
- whole: the column_stats partition read whole and merged (every key), what a filtered read did
  before it looked keys up;
- file keys: the statistics `Table.read(filters=[("c0", ">=", ...)])` looks up, one column's key
  for every file (`column_stats_reader.file_stats`);
- one partition: the same for one partition's files, and the partition_stats lookup of one
  column in every partition (what `partitions_ruled_out` looks up).

    PYTHONPATH=$PWD python bench/data_skipping_bench.py [--files 3000 --columns 40 --repeat 3]
"""
from __future__ import annotations

import argparse
import itertools
import json
import tempfile
import time
from pathlib import Path

from tablespec.actions.metadata import create_table
from tablespec.hudi.formats import hfile
from tablespec.hudi.mdt import column_stats, column_stats_init, column_stats_reader, layout, reader
from tablespec.hudi.mdt.column_stats import COLUMN_STATS, PARTITION_STATS, ColumnRange
from tablespec.hudi.table import HudiTable
from tablespec.spec.loader import load_spec_text

PARTITIONS = [f"dt={d:02d}" for d in range(1, 31)]


def _spec(columns: int) -> str:
    fields = "\n".join(f"    - {{name: c{i}, type: int}}" for i in range(columns))
    return f"""apiVersion: tablespec/v1
kind: HudiTable
metadata: {{name: wide}}
spec:
  location: wide
  tableVersion: 9
  columns:
    - {{name: id, type: string, nullable: false}}
    - {{name: dt, type: string}}
{fields}
  recordKey: {{fields: [id]}}
  partitioning: {{fields: [dt]}}
"""


def _table(root: Path, files: int, columns: int) -> tuple[HudiTable, list[tuple[str, str]]]:
    spec = load_spec_text(_spec(columns), "wide.yaml").specs[0].spec
    table = HudiTable.open(str(root / "wide"))
    create_table(table, spec)
    names = [(PARTITIONS[i % 30], f"{i:08d}-0_0-1-1_20260101000000000.parquet") for i in range(files)]
    ranges = {(p, f): [ColumnRange(f, f"c{c}", "int", 100 * i, 100 * i + 99, 100, 0, 400, 400) for c in range(columns)]
              for i, (p, f) in enumerate(names)}
    column_stats_init.initialize(table, ranges, [COLUMN_STATS, PARTITION_STATS], [f"c{c}" for c in range(columns)])
    return table.refresh(), names


def _whole(table: HudiTable) -> int:
    fmt = layout.Format.of(table.config)
    metadata = layout.timeline(table.storage, table.base, fmt)
    valid = reader.valid_instants(table.timeline, metadata)
    slices = layout.latest_slices(table.storage, table.base, layout.completions(metadata), COLUMN_STATS, fmt)
    return len(column_stats.latest(itertools.chain.from_iterable(
        reader.slice_records(table.storage, table.base, s, valid) for s in slices)))


def _best(repeat: int, run) -> tuple[float, int]:
    times, found = [], 0
    for _ in range(repeat):
        hfile.clear_hfile_heads()
        start = time.perf_counter()
        found = run()
        times.append(time.perf_counter() - start)
    return round(min(times) * 1000, 1), found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--columns", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default="bench/results/data_skipping_bench.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        started = time.perf_counter()
        table, names = _table(Path(root), args.files, args.columns)
        built = round(time.perf_counter() - started, 1)
        conds = [("c0", ">=", 100 * (args.files - 5))]
        kinds = {f"c{c}": "int" for c in range(args.columns)}
        one = [n for n in names if n[0] == PARTITIONS[0]]
        results = {
            "whole": _best(args.repeat, lambda: _whole(table)),
            "file keys": _best(args.repeat, lambda: len(column_stats_reader.file_stats(table, names, conds, kinds) or {})),
            "one partition": _best(args.repeat, lambda: len(column_stats_reader.file_stats(table, one, conds, kinds) or {})),
            "partition_stats": _best(args.repeat, lambda: len(column_stats_reader.stored(table, PARTITION_STATS, [
                column_stats.partition_stats_key("c0", p) for p in PARTITIONS]) or {})),
        }
    print(f"{args.files} files x {args.columns} columns = {args.files * args.columns} column_stats entries "
          f"(built in {built} s)")
    for name, (ms, found) in results.items():
        print(f"  {name:16} {ms:9.1f} ms  ({found} entries / partitions)")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"files": args.files, "columns": args.columns,
                                          "ms": {k: v[0] for k, v in results.items()}}, indent=2) + "\n")


if __name__ == "__main__":
    main()

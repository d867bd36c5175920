"""The table handle's baseline: S3 requests of four table operations, and `plan` ms per table on local disk.

A table travels as one handle (storage, config, timeline and file-system view loaded once)
instead of every layer reloading them from a location string. On an object store each reload is
requests and latency, so this bench counts them, to be run before and after that change:

1. `plan` (the CLI, in process) of one unchanged table;
2. one 10k-row upsert through `Table.write` (half updates spread over every partition, half new
   keys) into a SIMPLE table with 4 partitions and 3 prior commits;
3. one bucket bootstrap: `apply` of the same spec switched to BUCKET;
4. one clustering: `apply` of the spec declaring a SORT layout (a newly declared sorted layout is
   proposed at once, docs/clustering.md).

Each runs against an `s3://` warehouse on the loopback S3 API server of the tests
(tests/s3server.py, moto behind a counting middleware, Spark `local[2]`); the counter is reset
right before each measured command and read right after it, so each count is that one command's
(an `apply`'s includes the plan the command makes itself; the bench's check that the apply left
nothing to do runs after the count). Runs before 2026-11-25's i28-requests counted that check's
`plan` inside each `apply` (about 3 to 7 requests more). The server counts requests by HTTP method and bytes; its
request log (werkzeug's, the same server) splits them further into LIST (a GET of the bucket, no
key) and DELETE (DELETE, or a batched DeleteObjects POST), checked against the counter's total.
Then, with no JVM involved:

5. `plan` ms per table of 200 unchanged SIMPLE tables on local disk (tables made as
   bench/plan_bench.py and bench/s3_plan.py make them: 3 commits x 4 partitions of small files;
   the CLI in process, best of 3).

Goals: each request count at most half of today's; `plan` at most 7 ms per table on
local disk. Prints a table; writes JSON (default bench/results/handle_bench.json) with the git
commit measured, the machine's cores and the date. Run it on a quiet machine.

    PYTHONPATH=$PWD python bench/handle_bench.py
    PYTHONPATH=$PWD python bench/handle_bench.py --quick      # development: smaller sizes
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import _common
from _common import make_table, orders, spec_text
from s3_plan import SPEC as PLAN_SPEC  # also puts tests/ on sys.path
from s3_plan import setup as make_tables
from s3_plan import timed_plan
from s3server import COUNTS_PATH, S3Server
from upsert_bench import update_ids

from tablespec.cli import main as cli

ROOT = Path(_common.ROOT)
BUCKET = "bench"
PARTITIONS = 4
SIMPLE, BUCKET_INDEX = "{type: SIMPLE}", "{type: BUCKET, numBuckets: 4}"
SORT_LAYOUT = "  clustering: {strategy: SORT, sortColumns: [customer_id]}\n"
# plan_bench's spec (BUCKET 16) as a SIMPLE table: the 200 tables of the plan measurement
SIMPLE_PLAN_SPEC = PLAN_SPEC.replace("{{type: BUCKET, numBuckets: {buckets}}}", "{{type: SIMPLE}}")
assert SIMPLE_PLAN_SPEC != PLAN_SPEC, "bench/plan_bench.py's SPEC changed its index line"
METHODS = ("GET", "PUT", "HEAD", "LIST", "DELETE", "other")
GOAL_PLAN_MS = 7.0
REQUEST_LINE = re.compile(r'"([A-Z]+) (\S+) HTTP/[0-9.]+"')


class RequestLog:
    """The server's requests since the last `reset`, by kind, read from its werkzeug request log
    (opened anew by its /proc path, so the offset the server writes at is left alone)."""

    def __init__(self, server: S3Server):
        self.server, self.path, self.offset = server, f"/proc/self/fd/{server.log.fileno()}", 0

    def reset(self) -> None:
        self.server.requests(reset=True)
        self._lines()  # everything logged so far

    def _lines(self) -> list[str]:
        """The complete lines logged since the last call."""
        with open(self.path, "rb") as fh:
            fh.seek(self.offset)
            data = fh.read()
        data = data[:data.rfind(b"\n") + 1]
        self.offset += len(data)
        return data.decode(errors="replace").splitlines()

    def counted(self) -> dict:
        """{"requests": {total and per kind}, "bytes_received", "bytes_sent"} since `reset`."""
        counts = self.server.requests()
        kinds = dict.fromkeys(METHODS, 0)
        deadline = time.monotonic() + 10
        while True:  # a request's log line follows its response: wait for the counter's total
            for line in self._lines():
                m = REQUEST_LINE.search(line)
                if m and not m.group(2).startswith(COUNTS_PATH):
                    kinds[_kind(*m.groups())] += 1
            if sum(kinds.values()) >= counts["total"] or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if sum(kinds.values()) != counts["total"]:
            raise SystemExit(f"request log ({kinds}) disagrees with the server's counter ({counts})")
        return {"requests": {"total": counts["total"], **kinds},
                "bytes_received": counts["bytes_received"], "bytes_sent": counts["bytes_sent"]}


def _kind(method: str, target: str) -> str:
    path, _, query = target.partition("?")
    if method == "GET":
        return "LIST" if path.strip("/") == BUCKET else "GET"
    if method == "DELETE" or (method == "POST" and re.search(r"(^|&)delete(=|&|$)", query)):
        return "DELETE"
    return method if method in METHODS else "other"


def cli_quiet(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli(argv)
    return code, out.getvalue()


def plan_local(tables: int, commits: int, repeat: int) -> dict:
    """`plan` of `tables` unchanged SIMPLE tables on local disk, ms per table (best of `repeat`)."""
    with tempfile.TemporaryDirectory() as tmp:
        specs, warehouse = Path(tmp, "specs"), str(Path(tmp, "warehouse"))
        specs.mkdir()
        for i in range(tables):
            (specs / f"t{i:04d}.yaml").write_text(SIMPLE_PLAN_SPEC.format(i=i, keep=10))
        make_tables(specs, warehouse, commits, PARTITIONS)
        runs = [timed_plan(specs, warehouse)[0] for _ in range(repeat)]
    ms = [round(s / tables * 1000, 3) for s in runs]
    return {"tables": tables, "commits_per_table": commits, "partitions_per_table": PARTITIONS,
            "runs_ms_per_table": ms, "ms_per_table": min(ms)}


def batch(spark, stored: int, n: int, version: int):
    """n rows: half updates of stored keys over every partition, half new keys after `stored`."""
    updates = n // 2
    return orders(update_ids(spark, stored, updates), PARTITIONS, version).unionByName(
        orders(spark.range(stored, stored + n - updates), PARTITIONS, version))


def s3_actions(args, tmp: str) -> list[dict]:
    """The four counted operations on one table in an s3:// warehouse of the loopback server."""
    rows = []
    with S3Server() as server:
        import boto3

        from tablespec.engine.session import get_spark
        os.environ.update(AWS_ENDPOINT_URL=server.endpoint, AWS_REGION="us-east-1",
                          AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench")
        boto3.client("s3", endpoint_url=server.endpoint).create_bucket(Bucket=BUCKET)
        log = RequestLog(server)
        warehouse, specs = f"s3://{BUCKET}/warehouse", Path(tmp, "specs")
        specs.mkdir()
        spec_file = specs / "orders.yaml"
        spark = get_spark("local[2]", {"spark.sql.shuffle.partitions": "4"})

        t = time.perf_counter()
        spec_file.write_text(spec_text("orders", SIMPLE))
        table = make_table(spark, warehouse, "orders", SIMPLE)
        stored = args.rows
        table.write(orders(spark.range(0, stored), PARTITIONS, 0), "bulk_insert")
        for version in range(1, args.prior_commits):
            table.write(batch(spark, stored, args.upsert_rows, version), "upsert")
            stored += args.upsert_rows - args.upsert_rows // 2
        print(f"setup: {stored:,} rows in {PARTITIONS} partitions, {args.prior_commits} commits, "
              f"{time.perf_counter() - t:.1f}s", flush=True)

        def measure(action: str, run, expect: str | None = None) -> None:
            log.reset()
            t = time.perf_counter()
            out = run()
            ms = (time.perf_counter() - t) * 1000
            row = {"action": action, **log.counted(), "ms": round(ms, 1)}
            if expect is not None:  # after counting: an apply left nothing to do (exit 0 of --detailed-exitcode)
                timed_plan(specs, warehouse)
            if expect is not None:  # apply: the actions it ran (`orders: <kind> done in ...`)
                row["applied"] = re.findall(r"^\S+: (\w+) done in ", out, re.MULTILINE)
                if expect not in row["applied"]:
                    raise SystemExit(f"{action}: expected a {expect} action:\n{out[-3000:]}")
            rows.append(row)
            print(_line(row) + (f"  ({', '.join(row['applied'])})" if "applied" in row else ""), flush=True)

        def apply() -> str:
            code, out = cli_quiet(["apply", str(specs), "--warehouse", warehouse, "--auto-approve"])
            if code != 0:
                raise SystemExit(f"apply failed ({code}):\n{out[-3000:]}")
            return out

        print(_header(), flush=True)
        measure("plan (1 unchanged table)", lambda: timed_plan(specs, warehouse)[1])  # exit 0: no changes

        def upsert() -> str:
            result = table.write(batch(spark, stored, args.upsert_rows, args.prior_commits), "upsert")
            assert result.updated == args.upsert_rows // 2, result
            return ""
        measure(f"upsert {args.upsert_rows:,} rows (SIMPLE)", upsert)

        spec_file.write_text(spec_text("orders", BUCKET_INDEX))
        measure("bucket bootstrap (apply)", apply, "bucket_bootstrap")
        spec_file.write_text(spec_text("orders", BUCKET_INDEX) + SORT_LAYOUT)
        measure("clustering SORT (apply)", apply, "clustering")
        spark.stop()
    return rows


def _header() -> str:
    return f"{'action':<30}{'requests':>9}" + "".join(f"{m:>8}" for m in METHODS) + f"{'MB in':>8}{'MB out':>8}{'ms':>9}"


def _line(row: dict) -> str:
    r = row["requests"]
    return (f"{row['action']:<30}{r['total']:>9}" + "".join(f"{r[m]:>8}" for m in METHODS)
            + f"{row['bytes_received'] / 2**20:>8.2f}{row['bytes_sent'] / 2**20:>8.2f}{row['ms']:>9.0f}")


def git_commit() -> dict:
    def git(*a):
        return subprocess.run(["git", *a], check=True, cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return {"commit": git("rev-parse", "HEAD"), "subject": git("log", "-1", "--format=%s"),
            "dirty_paths": [line[3:] for line in git("status", "--porcelain").splitlines()]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=200, help="tables planned on local disk")
    ap.add_argument("--commits", type=int, default=3, help="commits per planned table")
    ap.add_argument("--repeat", type=int, default=3, help="plan runs on local disk (best taken)")
    ap.add_argument("--rows", type=int, default=100_000, help="rows bulk-inserted into the S3 table")
    ap.add_argument("--prior-commits", type=int, default=3, help="commits before the measured upsert")
    ap.add_argument("--upsert-rows", type=int, default=10_000, help="rows of each upsert (half updates)")
    ap.add_argument("--quick", action="store_true", help="development: 20 tables, 20k rows, 2k-row upserts")
    ap.add_argument("--out", help="JSON written (default bench/results/handle_bench.json; "
                                  "with --quick, handle_bench.quick.json)")
    args = ap.parse_args()
    if args.quick:
        args.tables, args.repeat, args.rows, args.upsert_rows = 20, 2, 20_000, 2_000
    args.out = args.out or str(ROOT / "bench/results" / f"handle_bench{'.quick' if args.quick else ''}.json")
    started, load = datetime.now(UTC), os.getloadavg()
    plan = plan_local(args.tables, args.commits, args.repeat)  # first: no JVM in this process yet
    with tempfile.TemporaryDirectory() as tmp:
        rows = s3_actions(args, tmp)
    rows.append({"action": f"plan, local disk ({plan['tables']} tables)", "ms_per_table": plan["ms_per_table"]})
    print(f"{rows[-1]['action']:<30}{'':>{9 + 8 * len(METHODS) + 16}}{plan['ms_per_table']:>9.2f} ms/table "
          f"(goal <= {GOAL_PLAN_MS}; runs {plan['runs_ms_per_table']})")
    result = {
        "bench": "handle_bench", "quick": args.quick, **git_commit(),
        "date": started.isoformat(timespec="seconds"), "cpu_cores": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in load],
        "s3_table": {"index": "SIMPLE", "partitions": PARTITIONS, "bulk_insert_rows": args.rows,
                     "prior_commits": args.prior_commits, "upsert_rows": args.upsert_rows,
                     "bootstrap_to": BUCKET_INDEX, "clustering": SORT_LAYOUT.strip()},
        "goals": {"requests": "each at most half of the baseline's (run before the handle)", "plan_local_ms_per_table": GOAL_PLAN_MS},
        "actions": rows[:-1], "plan_local": plan,
    }
    if Path(args.out).exists():  # the before run's counts (added by hand) stay next to this run's
        before = json.loads(Path(args.out).read_text()).get("baseline")
        if before is not None:
            result["baseline"] = before
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

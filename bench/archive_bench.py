"""Archiving: what `plan`, `show`, one small upsert and `verify` cost after 10, 100, 1,000 and 5,000
commits, with archiving on (the spec's default, Hudi's 20/30) and off (today's behaviour before
`retention.archive.maxCommits` too large to reach).

The history. A Spark upsert per commit (1-2 s) would make 5,000 commits take hours, so the
commits are made by `DriverWriter`: tablespec's own writer (engine/writer.py: the table lock and
recovery, the check against the spec, the commit transaction of engine/commit.py with its
heartbeat, conflict check and completion, then archiving as housekeeping) with its one Spark job
replaced by the same task functions (engine/tasks.py: prepare, then write_file_groups over rows
sorted by file group, as the Spark job sorts them) run in this process on an Arrow table. So each
commit is a real tablespec commit whose base file pyarrow writes on the driver. The table is the
benches' orders table (bench/_common.py) with a BUCKET index (1 bucket, 2 partitions: the bucket
needs no lookup step, which is the Spark part left out); each commit upserts 4 rows of one
partition (updates once the 400 keys are used up), so it rewrites one file group. Every 10
commits `tablespec apply` runs (the CLI, in process), which cleans file versions out of the
spec's retention as a user's scheduled apply would: data files stay bounded, and what grows is
the timeline only. The history is built on local disk.

The baseline. The same table with archiving off, at each checkpoint: a copy of the table above
with every archived instant written back into `.hoodie/` as the state files it was archived
from (commit metadata as JSON, clean plans and metadata as Avro, a commit's requested and
inflight files empty, as tablespec's writer leaves them) and the archive folder removed, then
`tablespec apply` of the spec with `retention.archive` out of reach (which records it in
hoodie.properties). That is the table the same commits and cleans make with archiving off,
instant for instant; it is built this way because the writer's own cost grows with the active
timeline (each commit lists `.hoodie/` three times: about 1 s per commit at 1,000 commits on
this machine, hours to 5,000). The copy is checked: `.hoodie/` then holds exactly three files
per commit and per clean, `verify` finds nothing, and `plan` leaves nothing to do.

The measurements. At each checkpoint the table is copied to a fresh prefix of the loopback S3
API server of the tests (tests/s3server.py: moto, requests counted at the server), and there
`plan` (the CLI, in process: no JVM work), `show`, `verify` (CLI) and one 4-row upsert through
the Python API (`Table.write`, Spark local[2]) are timed and their S3 requests counted (the
counter is reset right before each, read right after; kinds from the server's request log, as
bench/handle_bench.py counts them). `plan`, `show` and `verify` are timed on local disk too.
Files under `.hoodie/` are counted on the local table (every file at any depth: active
instants, the archive, lock files). At the end both local tables pass `verify`, and a read
through tablespec's reader returns exactly the keys the commits wrote.

Goal: with archiving on, each cost and the `.hoodie/` file count at 5,000 commits at
most 1.2x those at 100. Writes JSON (default bench/results/archive_bench.json).

    PYTHONPATH=$PWD python bench/archive_bench.py            # 10 / 100 / 1,000 / 5,000
    PYTHONPATH=$PWD python bench/archive_bench.py --quick    # 10 / 100 / 300
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import _common
import pyarrow as pa
from _common import EPOCH_2026, orders, spec_text
from handle_bench import METHODS, RequestLog, cli_quiet, git_commit  # also puts tests/ on sys.path
from s3server import S3Server

from tablespec.actions.metadata import create_table
from tablespec.engine import tasks
from tablespec.engine.schema import data_schema
from tablespec.engine.writer import TableWriter
from tablespec.hudi.io import table_location
from tablespec.hudi.table import HudiTable
from tablespec.spec.loader import load_spec_text
from tablespec.table import Table

ROOT = Path(_common.ROOT)
BUCKET = "bench"
INDEX = "{type: BUCKET, numBuckets: 1}"
PARTITIONS = 2
KEYS = 400                 # distinct keys the commits write (then they update them)
ROWS_PER_COMMIT = 4
CLEAN_EVERY = 10           # commits between two `apply` runs (which clean)
ARCHIVING_OFF = "  retention: {archive: {minCommits: 1000000, maxCommits: 1000001}}\n"
VARIANTS = {"on": "", "off": ARCHIVING_OFF}
GOAL = 1.2
OPS = ("plan", "show", "verify", "upsert")


class ArrowRows:
    """An Arrow table of the spec's columns where the writer takes a DataFrame: past conforming, the
    writer asks it only whether it is empty, and hands it to `_run`."""

    def __init__(self, table: pa.Table):
        self.table = table

    def isEmpty(self) -> bool:  # noqa: N802 - the DataFrame method the writer calls
        return self.table.num_rows == 0


class DriverWriter(TableWriter):
    """tablespec's writer with its Spark job run in this process: the rows are an Arrow table of the
    spec's columns (conformed already), and the tasks run as one task on the driver."""

    def _conformed(self, rows: pa.Table, operation: str) -> ArrowRows:
        return ArrowRows(rows)

    def _run(self, arrow: ArrowRows, job, view, index=None, bulk: bool = False):
        assert job.buckets and index is None, "the driver path covers the BUCKET index only"
        rows = arrow.table
        prepared = pa.Table.from_batches(list(tasks.prepare(job, rows.to_batches())))
        prepared = prepared.sort_by([(tasks.FG, "ascending"), (tasks.SEQ, "ascending")])  # as the job sorts
        out = list(tasks.write_file_groups(job, prepared.to_batches()))
        return (pa.Table.from_batches(out).to_pylist() if out else []), 0.0


def commit_rows(schema: pa.Schema, n: int) -> pa.Table:
    """Commit n's rows: 4 keys of one partition (the key's id modulo 2 is its partition)."""
    ids = [(n * 2 * ROWS_PER_COMMIT + 2 * k + n % 2) % KEYS for k in range(ROWS_PER_COMMIT)]
    return pa.table({
        "order_id": [f"ord-{i:010d}" for i in ids],
        "customer_id": [(i * 2_654_435_761) % 1_000_003 for i in ids],
        "amount": [Decimal((i * 7919 + n * 13) % 10_000_000) / 100 for i in ids],
        "updated_at": [datetime.fromtimestamp(EPOCH_2026 + 60 * n + i % 60, UTC) for i in ids],
        "order_date": [date(2026, 1, 1) + timedelta(days=i % PARTITIONS) for i in ids],
    }, schema=schema)


def hoodie_files(base: str) -> int:
    return sum(len(files) for _, _, files in os.walk(os.path.join(base, ".hoodie")))


def archive_files(base: str) -> int:
    folder = os.path.join(base, ".hoodie", "archived")
    return len(os.listdir(folder)) if os.path.isdir(folder) else 0


def upload(s3, local: str, prefix: str) -> int:
    """Copy the table at `local` to s3://BUCKET/prefix/ (every file); returns the files copied."""
    files = [os.path.join(d, f) for d, _, fs in os.walk(local) for f in fs]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda p: s3.upload_file(p, BUCKET, f"{prefix}/{os.path.relpath(p, local)}"), files))
    return len(files)


def unarchive(base: str) -> int:
    """Write every archived instant of the table at `base` back into `.hoodie/` as the state file it
    was archived from, and remove the archive; returns the instants restored (see the docstring)."""
    from tablespec.hudi.archive import ArchivedTimeline
    from tablespec.hudi.archive.entry import commit_metadata
    from tablespec.hudi.io import LocalStorage
    from tablespec.hudi.services.clean import CLEAN_METADATA_SCHEMA, CLEANER_PLAN_SCHEMA
    from tablespec.hudi.timeline.active import avro_record
    storage = LocalStorage()
    meta = os.path.join(base, ".hoodie")
    archived = ArchivedTimeline.load(storage, base)
    for instant, record in archived.records.items():
        if instant.action == "commit":
            data = commit_metadata(record).to_json() if instant.is_completed else b""
        elif instant.action == "clean":
            data = (avro_record(CLEAN_METADATA_SCHEMA, record["hoodieCleanMetadata"]) if instant.is_completed
                    else avro_record(CLEANER_PLAN_SCHEMA, record["hoodieCleanerPlan"]))
        else:
            raise SystemExit(f"unexpected archived {instant}")
        path = os.path.join(meta, instant.file_name)
        assert not os.path.exists(path), path
        with open(path, "wb") as fh:
            fh.write(data)
    shutil.rmtree(os.path.join(meta, "archived"), ignore_errors=True)   # none yet at the first checkpoints
    return len(archived.instants)


class History:
    """One variant's table on local disk, and the commits made so far."""

    def __init__(self, variant: str, tmp: str):
        self.variant = variant
        self.specs = Path(tmp, f"specs-{variant}")
        self.specs.mkdir()
        text = spec_text("orders", INDEX) + VARIANTS[variant]
        (self.specs / "orders.yaml").write_text(text)
        result = load_spec_text(text, "orders.yaml")
        if result.errors:
            raise SystemExit(f"bench spec invalid: {result.errors}")
        self.spec = result.specs[0].spec
        self.warehouse = str(Path(tmp, f"warehouse-{variant}"))
        self.base = table_location(self.warehouse, self.spec.spec.location)
        create_table(HudiTable.open(self.base), self.spec)
        self.writer = DriverWriter(None, self.spec, HudiTable.open(self.base))
        self.schema = data_schema(self.spec)
        self.commits, self.keys, self.archived, self.seconds = 0, set(), 0, 0.0

    def advance(self, to: int) -> None:
        t = time.perf_counter()
        while self.commits < to:
            rows = commit_rows(self.schema, self.commits)
            result = self.writer.write(rows, "upsert")
            assert result.instant is not None, result
            self.archived += result.archived
            self.keys.update(rows.column("order_id").to_pylist())
            self.commits += 1
            if self.commits % CLEAN_EVERY == 0:
                code, out = cli_quiet(["apply", str(self.specs), "--warehouse", self.warehouse, "--auto-approve"])
                if code != 0:
                    raise SystemExit(f"apply failed ({code}):\n{out[-3000:]}")
        self.seconds += time.perf_counter() - t


class Baseline:
    """The table of `on` at its checkpoint with archiving off (see the docstring), in a warehouse
    of its own per checkpoint."""

    def __init__(self, on: History, tmp: str):
        self.variant, self.on = "off", on
        self.specs = Path(tmp, "specs-off")
        self.specs.mkdir()
        text = spec_text("orders", INDEX) + VARIANTS["off"]
        (self.specs / "orders.yaml").write_text(text)
        self.spec = load_spec_text(text, "orders.yaml").specs[0].spec
        self.tmp, self.commits, self.archived, self.seconds = tmp, 0, 0, 0.0

    @property
    def keys(self) -> set:
        return self.on.keys

    def advance(self, to: int) -> None:
        assert self.on.commits == to, "the baseline follows the table with archiving on"
        t = time.perf_counter()
        self.warehouse = str(Path(self.tmp, f"warehouse-off-{to}"))
        self.base = table_location(self.warehouse, self.spec.spec.location)
        shutil.copytree(self.on.base, self.base)
        restored = unarchive(self.base)
        code, out = cli_quiet(["apply", str(self.specs), "--warehouse", self.warehouse, "--auto-approve"])
        if code != 0 or "update_settings done" not in out:
            raise SystemExit(f"apply of the baseline's spec ({code}):\n{out[-3000:]}")
        meta = os.path.join(self.base, ".hoodie")
        instants = [f for f in os.listdir(meta) if f[:1].isdigit()]
        commits = sum(1 for f in instants if f.endswith(".commit"))
        cleans = sum(1 for f in instants if f.endswith(".clean"))
        if commits != to or len(instants) != 3 * (commits + cleans):
            raise SystemExit(f"baseline at {to}: {commits} commits, {cleans} cleans in {len(instants)} files")
        for argv, ok in ((["verify", self.base], (0,)),
                         (["plan", str(self.specs), "--warehouse", self.warehouse, "--detailed-exitcode"], (0, 2))):
            code, out = cli_quiet(argv)
            if code not in ok:
                raise SystemExit(f"baseline at {to}: {argv[0]} exited {code}:\n{out[-3000:]}")
        self.commits, self.restored, self.seconds = to, restored, time.perf_counter() - t


def timed_cli(argv: list[str], ok=(0,)) -> float:
    t = time.perf_counter()
    code, out = cli_quiet(argv)
    seconds = time.perf_counter() - t
    if code not in ok:
        raise SystemExit(f"{' '.join(argv[:2])} exited {code}:\n{out[-3000:]}")
    return seconds


def measure(h: History, spark, s3, log: RequestLog, upsert_version: int, repeat: int) -> dict:
    """The four operations at this checkpoint: on local disk (not the upsert), then on an S3 copy;
    each the best of `repeat` runs (the upserts: one commit each, one after the other)."""
    n = h.commits
    row: dict = {"variant": h.variant, "commits": n, "hoodie_files": hoodie_files(h.base),
                 "archive_files": archive_files(h.base), "archived_so_far": h.archived,
                 "history_seconds": round(h.seconds, 1)}
    specs, local = str(h.specs), h.warehouse

    def best(argv: list[str], ok=(0,)) -> float:
        return round(min(timed_cli(argv, ok) for _ in range(repeat)) * 1000, 1)
    row["load_average"] = round(os.getloadavg()[0], 2)
    row["local_ms"] = {
        "plan": best(["plan", specs, "--warehouse", local, "--detailed-exitcode"], (0, 2)),
        "show": best(["show", "bench/orders", "--warehouse", local]),
        "verify": best(["verify", h.base]),
    }
    prefix = f"{h.variant}-{n}"
    warehouse = f"s3://{BUCKET}/{prefix}"
    upload(s3, h.base, f"{prefix}/bench/orders")
    location = f"{warehouse}/bench/orders"
    s3_rows = {}

    def counted(op: str, run) -> None:
        """The best of `repeat` runs (the machine is shared), with the requests of the first."""
        runs = []
        for _ in range(repeat):
            log.reset()
            t = time.perf_counter()
            run()
            runs.append(((time.perf_counter() - t) * 1000, log.counted()))
        s3_rows[op] = {"ms": round(min(ms for ms, _ in runs), 1), "runs_ms": [round(ms) for ms, _ in runs],
                       "runs_requests": [c["requests"]["total"] for _, c in runs], **runs[0][1]}

    counted("plan", lambda: timed_cli(["plan", specs, "--warehouse", warehouse, "--detailed-exitcode"], (0, 2)))
    counted("show", lambda: timed_cli(["show", "bench/orders", "--warehouse", warehouse]))
    counted("verify", lambda: timed_cli(["verify", location]))
    table = Table(h.spec, location, spark)
    inputs = [orders(spark.range(n % KEYS, n % KEYS + ROWS_PER_COMMIT), PARTITIONS, upsert_version + k).cache()
              for k in range(repeat)]   # each run newer than the one before: each commits
    for df in inputs:
        df.count()  # the input is made before the clock starts
    archived = []

    def upsert() -> None:
        result = table.write(inputs[len(archived)], "upsert")
        assert result.instant is not None, result
        archived.append(result.archived)
    counted("upsert", upsert)
    for df in inputs:
        df.unpersist()
    row["s3_upsert_archived"] = archived   # instants each measured upsert's housekeeping archived
    row["s3"] = s3_rows
    return row


def check_valid(h: History, spark) -> dict:
    """The local table at the end: `verify` finds nothing, and a read has exactly the keys written."""
    code, out = cli_quiet(["verify", h.base])
    if code != 0:
        raise SystemExit(f"verify of the {h.variant} table found problems:\n{out[-3000:]}")
    keys = {r.order_id for r in Table(h.spec, h.base, spark).read().select("order_id").collect()}
    if keys != h.keys:
        raise SystemExit(f"{h.variant}: the read has {len(keys)} keys, the commits wrote {len(h.keys)}")
    return {"verify": out.strip().splitlines()[-1], "rows_read": len(keys)}


def header() -> str:
    cols = "".join(f"{op + ' ms':>11}{'req':>5}" for op in OPS)
    return f"{'archiving':<10}{'commits':>8}{'.hoodie':>8}{'archive':>8}{cols}{'  local plan/show/verify ms':>28}"


def line(r: dict) -> str:
    cols = "".join(f"{r['s3'][op]['ms']:>11.0f}{r['s3'][op]['requests']['total']:>5}" for op in OPS)
    loc = r["local_ms"]
    return (f"{r['variant']:<10}{r['commits']:>8}{r['hoodie_files']:>8}{r['archive_files']:>8}{cols}"
            f"{loc['plan']:>12.0f}/{loc['show']:.0f}/{loc['verify']:.0f}")


def ratios(rows: list[dict], low: int, high: int) -> dict:
    """Archiving on: each figure at `high` commits over the same at `low`."""
    at = {r["commits"]: r for r in rows if r["variant"] == "on"}
    a, b = at[low], at[high]
    out = {"hoodie_files": round(b["hoodie_files"] / a["hoodie_files"], 2)}
    for op in OPS:
        out[f"{op}_ms"] = round(b["s3"][op]["ms"] / a["s3"][op]["ms"], 2)
        out[f"{op}_requests"] = round(b["s3"][op]["requests"]["total"] / a["s3"][op]["requests"]["total"], 2)
    for op in ("plan", "show", "verify"):
        out[f"local_{op}_ms"] = round(b["local_ms"][op] / a["local_ms"][op], 2)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoints", default="10,100,1000,5000", help="commit counts measured")
    ap.add_argument("--quick", action="store_true", help="development: 10, 100 and 300 commits")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each measured operation (best taken)")
    ap.add_argument("--baseline", action=argparse.BooleanOptionalAction, default=True,
                    help="also measure the same table with archiving off (default: yes)")
    ap.add_argument("--out", help="JSON written (default bench/results/archive_bench.json; "
                                  "with --quick, archive_bench.quick.json)")
    args = ap.parse_args()
    if args.quick:
        args.checkpoints = "10,100,300"
    checkpoints = sorted(int(c) for c in args.checkpoints.split(","))
    args.out = args.out or str(ROOT / "bench/results" / f"archive_bench{'.quick' if args.quick else ''}.json")
    started, load = datetime.now(UTC), os.getloadavg()
    rows, valid = [], {}
    with tempfile.TemporaryDirectory() as tmp, S3Server() as server:
        import boto3

        from tablespec.engine.session import get_spark
        os.environ.update(AWS_ENDPOINT_URL=server.endpoint, AWS_REGION="us-east-1",
                          AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench")
        s3 = boto3.client("s3", endpoint_url=server.endpoint)
        s3.create_bucket(Bucket=BUCKET)
        log = RequestLog(server)
        spark = get_spark("local[2]", {"spark.sql.shuffle.partitions": "4"})
        on = History("on", tmp)
        histories = [on] + ([Baseline(on, tmp)] if args.baseline else [])
        warm = Table(histories[0].spec, str(Path(tmp, "warm")), spark)  # the first Spark write, not measured
        create_table(HudiTable.open(warm.location), histories[0].spec)
        warm.write(orders(spark.range(0, ROWS_PER_COMMIT), PARTITIONS, 0), "upsert")
        print(header(), flush=True)
        for n in checkpoints:
            for h in histories:
                h.advance(n)
                rows.append(measure(h, spark, s3, log, checkpoints[-1] * 2, args.repeat))
                print(line(rows[-1]), f"  (history {h.seconds:.0f}s)", flush=True)
        for h in histories:
            valid[h.variant] = check_valid(h, spark)
            print(f"{h.variant}: {valid[h.variant]}", flush=True)
        spark.stop()
    low = 100 if 100 in checkpoints else checkpoints[0]
    goal = ratios(rows, low, checkpoints[-1]) if any(r["variant"] == "on" for r in rows) else {}
    if goal:
        print(f"archiving on, {checkpoints[-1]:,} commits over {low}: "
              + ", ".join(f"{k} {v}x" for k, v in goal.items())
              + f"  (goal <= {GOAL}x: {'met' if max(goal.values()) <= GOAL else 'NOT met'})")
    result = {
        "bench": "archive_bench", "quick": args.quick, **git_commit(),
        "date": started.isoformat(timespec="seconds"), "cpu_cores": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in load],
        "table": {"index": INDEX, "partitions": PARTITIONS, "keys": KEYS, "rows_per_commit": ROWS_PER_COMMIT,
                  "apply_every": CLEAN_EVERY, "archiving_off": ARCHIVING_OFF.strip()},
        "request_kinds": list(METHODS), "goal": f"on: each figure at the last checkpoint <= {GOAL}x at {low}",
        "ratios_on": goal, "checkpoints": rows, "valid_at_end": valid,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

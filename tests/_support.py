"""Test support shared by every test directory: paths, and the real Hudi tables in
../shared/fixtures/hudi-v6 unzipped on demand."""
from __future__ import annotations

import os
import struct
import zipfile
from pathlib import Path

from tablespec.hudi.io import LocalStorage

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "specs" / "examples"
GOLDEN = ROOT / "tests" / "golden"
FIXTURES_DIR = ROOT.parent / "shared" / "fixtures" / "hudi-v6"
COW_FIXTURES = (
    "cow_v6_complexkeygen_hivestyle",
    "cow_v6_empty",
    "cow_v6_nonpartitioned",
    "cow_v6_simplekeygen_hivestyle_no_metafields",
    "cow_v6_simplekeygen_nonhivestyle",
)
MOR_FIXTURES = ("mor_parquet_v6_nonpartitioned", "mor_parquet_v6_simplekeygen_nonhivestyle")


# Every JVM the tests start runs tiny jobs on two shared cores: the JIT's first tier alone and one GC
# thread leave the cores to the work. A process started for a few jobs (a writer a test kills, a
# local-cluster, a Hive or Hudi job beside the session) halves its CPU seconds (measured: 10-11 s ->
# 5-6 s for a start and one job); the session's JVM and the Apache Hudi 1.x workers, which serve the
# whole run, spend a fifth less (measured: 166-169 -> 132-133 CPU s on test_hudi_1x_upgrade.py and
# test_engine_write.py). Nothing a test asserts depends on how the JVM compiles.
TINY_JOBS_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
SHORT_LIVED_JVM = {"JAVA_TOOL_OPTIONS": TINY_JOBS_JVM_OPTIONS}   # the environment of a subprocess that starts one


def _junk(member: str) -> bool:
    """macOS archive litter: resource forks under __MACOSX/ and Finder's .DS_Store files."""
    parts = member.split("/")
    return parts[0] == "__MACOSX" or parts[-1] == ".DS_Store"


def unzip_fixture(name: str, dest: Path | str) -> Path:
    """Unzip fixture `name` into `dest` and return the table's base directory.

    Raises FileNotFoundError when the fixture zip is not there.
    """
    archive = FIXTURES_DIR / f"{name}.zip"
    if not archive.is_file():
        raise FileNotFoundError(archive)
    dest = Path(dest)
    with zipfile.ZipFile(archive) as zf:
        members = [m for m in zf.namelist() if not _junk(m)]
        zf.extractall(dest, members)
    tops = {m.split("/")[0] for m in members}
    if len(tops) != 1:
        raise ValueError(f"{archive} does not hold exactly one table directory: {sorted(tops)}")
    return dest / tops.pop()


# A bucket-indexed orders table used across planner and engine tests.
# credentials the S3 tests set in the environment: no output, log or plan may show them
S3_KEY_ID, S3_SECRET = "AKIATESTTABLESPEC0001", "tablespec/test/secret+do-not-print"

ORDERS_SPEC = """apiVersion: tablespec/v1
kind: HudiTable
metadata: {name: orders, database: sales}
spec:
  location: sales/orders
  columns:
    - {name: order_id, type: string, nullable: false}
    - {name: customer_id, type: long}
    - {name: amount, type: "decimal(12,2)"}
    - {name: updated_at, type: timestamp}
    - {name: order_date, type: date}
  recordKey: {fields: [order_id]}
  partitioning: {fields: [order_date]}
  orderingField: updated_at
  index: {type: BUCKET, numBuckets: 16}
"""


def check_golden(name: str, text: str, tmp_path: Path):
    """`text` (tmp_path shown as <TMP>) equals tests/golden/`name`; UPDATE_GOLDEN=1 rewrites the file."""
    text = text.replace(str(tmp_path.resolve()), "<TMP>")
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}; run with UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{name} differs from its golden file; run with UPDATE_GOLDEN=1 if intended"


def storage_and_base(location: str, origin: str | None = None):
    """(storage, base path) of the table at `location`, through its handle (environment-configured storage)."""
    from tablespec.hudi.table import HudiTable
    table = HudiTable.open(location, origin=origin)
    return table.storage, table.base


LOCK_FILES = (".hoodie/.tablespec/lock/", ".hoodie/lock", ".hoodie/.lock")   # tablespec's table lock, Hudi's


def table_files(root) -> dict[str, tuple[int, str]]:
    """Every file under `root` (a table, or a folder of tables) but the lock files: relative path ->
    (size, sha256). Equal before and after a refusal: the refusal changed nothing."""
    import hashlib
    out = {}
    for path in sorted(Path(root).rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not any(f"/{lock}" in f"/{rel}" for lock in LOCK_FILES):
            data = path.read_bytes()
            out[rel] = (len(data), hashlib.sha256(data).hexdigest())
    return out


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    """`tablespec ARGV` in this process: exit code, stdout, stderr."""
    from tablespec.cli import main
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def scratch_project(root: Path, monkeypatch, specs: dict[str, str] | Path, settings: str | None = None) -> Path:
    """A project in `root` (the cwd from now on): `specs/` holding `specs` (name -> YAML text, or a
    folder to copy), `tablespec.project.yaml` holding `settings` when given, and no warehouse or
    catalog from the environment."""
    import shutil
    if isinstance(specs, Path):
        shutil.copytree(specs, root / "specs")
    else:
        (root / "specs").mkdir()
        for name, text in specs.items():
            (root / "specs" / f"{name}.yaml").write_text(text)
    if settings is not None:
        (root / "tablespec.project.yaml").write_text(settings)
    monkeypatch.chdir(root)
    monkeypatch.delenv("TABLESPEC_WAREHOUSE", raising=False)
    monkeypatch.delenv("TABLESPEC_CATALOG", raising=False)
    return root


def schema_key_offset(log: bytes) -> int:
    """Where a log file's first block has its SCHEMA header key (ordinal 2): after the magic, length,
    version, type, header count and the INSTANT_TIME entry (tests damage it)."""
    at = 6 + 8 + 4 + 4 + 4
    (length,) = struct.unpack_from(">i", log, at + 4)
    return at + 8 + length


class RecordingStorage(LocalStorage):
    """Local files, recording every read as (path, offset, length): (path, 0, -1) for a whole file,
    (path, None, None) for a file opened for pyarrow. A real store: the reads happen."""

    def __init__(self) -> None:
        self.reads: list[tuple[str, int | None, int | None]] = []

    def paths(self) -> list[str]:
        return [p for p, _, _ in self.reads]

    def read_bytes(self, path):
        self.reads.append((path, 0, -1))
        return super().read_bytes(path)

    def read_range(self, path, offset, length):
        self.reads.append((path, offset, length))
        return super().read_range(path, offset, length)

    def open_input_file(self, path, size=None):
        self.reads.append((path, None, None))
        return super().open_input_file(path, size)

    def open_whole_file(self, path):
        self.reads.append((path, None, None))
        return super().open_whole_file(path)


class DriverReads(LocalStorage):
    """Local files, recording the byte ranges each opening of a file reads (`opened`: path and its
    ranges, a pyarrow footer read first). It pickles as plain local storage, so a table opened with it
    records its driver's reads alone (Spark's tasks get their own). A real store: the reads happen."""

    def __init__(self) -> None:
        self.opened: list[tuple[str, list[tuple[int, int]]]] = []

    def __reduce__(self):
        return LocalStorage, ()

    def open_input_file(self, path, size=None):
        import io

        import pyarrow as pa
        ranges: list[tuple[int, int]] = []

        class Recorded(io.FileIO):
            def read(self, size=-1):
                start = self.tell()
                data = super().read(size)
                ranges.append((start, len(data)))
                return data

        self.opened.append((path, ranges))
        return pa.PythonFile(Recorded(path, "rb"), mode="r")

    def open_whole_file(self, path):
        self.opened.append((path, [(0, 0), (0, os.path.getsize(path))]))   # every byte, past a footer read
        return super().open_whole_file(path)

    def column_read(self, column: str) -> list[str]:
        """The Parquet files of which a read past the footer covered a byte of `column`."""
        import pyarrow.parquet as pq
        out = []
        for path, ranges in self.opened:
            if not path.endswith(".parquet") or len(ranges) < 2:
                continue
            meta = pq.read_metadata(path)
            chunks = [(c.dictionary_page_offset or c.data_page_offset, c.total_compressed_size)
                      for g in range(meta.num_row_groups) for c in (meta.row_group(g).column(i)
                      for i in range(meta.num_columns)) if c.path_in_schema == column]
            if any(start < o + n and o < start + length for start, length in ranges[1:] for o, n in chunks):
                out.append(path)
        return out

"""Property-based fuzzing of the timeline files a table holds: commit metadata (JSON in version 6,
Avro in version 9: .commit, .replacecommit), clean plans and metadata (Avro) and Hudi 1.x's index
definitions, each a real file tablespec's format layer wrote, mutated byte by byte or in its
structure. Reading the table as `plan` does (observe) and its rows (the file-system view's latest
base files) then gives the same result as before, or a one-line refusal naming the file; never a
traceback, never other rows (the HFile and log-block readers have a fuzz test of their own)."""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hudi_layout2 import _version_9_table
from test_hudi_rollback import ST, _make_table, _write

from tablespec.errors import TablespecError
from tablespec.hudi.formats import index_defs
from tablespec.hudi.formats.naming import new_file_id
from tablespec.hudi.fs_view import FileSystemView
from tablespec.hudi.services.clean import execute_clean, plan_clean
from tablespec.hudi.table import HudiTable
from tablespec.state import observe

FUZZ = settings(max_examples=100, deadline=None,  # a loaded machine pauses; a hang meets the run's timeout
                derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
ODD_VALUES = [5, -1, 0, "x", "", None, [], {}, [1], {"a": 1}, 1e308, 10 ** 30, True, "../../other", "/etc",
              "20261128001823509", "\u0000"]


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> dict[int, Path]:
    """Version 6: three commits and a replacecommit (JSON) and a clean (Avro) tablespec wrote, over real
    Parquet files;
    version 9: commits and a pending clustering in timeline layout 2 (Avro), and an LSM history."""
    root = tmp_path_factory.mktemp("fuzz")
    base, ids = _make_table(str(root / "v6"))
    _write(base, {("part=a", ids["a"]): [("1", 11), ("2", 12)]})
    _write(base, {("part=a", ids["a"]): [("1", 21), ("2", 22)], ("part=b", ids["b"]): [("3", 23)]})
    _write(base, {("part=c", new_file_id()): [("5", 5)]}, action="replacecommit")   # an insert_overwrite
    table = HudiTable.open(base)
    execute_clean(table, plan_clean(base, table.timeline, table.view, keep_commits=1))
    (root / "v9").mkdir()
    _version_9_table(root / "v9")
    defs = root / "v9" / ".hoodie" / ".index_defs" / "index.json"
    defs.parent.mkdir(parents=True)
    ST.write_bytes(str(defs), json.dumps({"indexDefinitions": {"record_index": index_defs.RECORD_INDEX_DEFINITION}})
                   .encode())
    return {6: Path(base), 9: root / "v9"}


def outcome(base: Path):
    """What plan and a read see: the observed state's head and columns, and the rows of the latest
    base files; or the refusal."""
    try:
        table = HudiTable.open(str(base))
        state = observe(table)
        files = sorted(s.base_file.path for s in FileSystemView.build(ST, str(base), table.timeline).latest_slices()
                       if s.base_file is not None)
        rows = sorted(tuple(r.values()) for f in files if Path(f).exists() for r in pq.read_table(f).to_pylist())
        return ("read", state.head, state.fingerprint(), [str(Path(f).relative_to(base)) for f in files], rows)
    except TablespecError as e:
        return ("refused", str(e))


def _timeline_files(base: Path, suffixes: tuple[str, ...]) -> list[Path]:
    return sorted(p for p in base.rglob("*") if p.is_file() and p.name[:1].isdigit() and p.name.endswith(suffixes)
                  and p.stat().st_size and "metadata" not in p.parts)


def _mutate(data, raw: bytes) -> bytes:
    op = data.draw(st.sampled_from(["flip", "truncate", "insert", "delete", "json"]))
    at = data.draw(st.integers(0, max(len(raw) - 1, 0)))
    if op == "flip":
        return raw[:at] + bytes([raw[at] ^ data.draw(st.integers(1, 255))]) + raw[at + 1:]
    if op == "truncate":
        return raw[:at]
    if op == "insert":
        return raw[:at] + data.draw(st.binary(min_size=1, max_size=8)) + raw[at:]
    if op == "delete":
        return raw[:at] + raw[at + data.draw(st.integers(1, 16)):]
    try:
        doc = json.loads(raw)
    except ValueError:
        return raw[::-1]
    return json.dumps(_replace_somewhere(data, doc)).encode()


def _replace_somewhere(data, doc):
    """`doc` with one value somewhere in it (a map key, or a value at any depth) replaced by an odd one."""
    if not isinstance(doc, (dict, list)) or not doc or data.draw(st.booleans()):
        return data.draw(st.sampled_from(ODD_VALUES))
    if isinstance(doc, list):
        i = data.draw(st.integers(0, len(doc) - 1))
        return [*doc[:i], _replace_somewhere(data, doc[i]), *doc[i + 1:]]
    key = data.draw(st.sampled_from(sorted(doc)))
    if data.draw(st.booleans()):   # the key itself (a partition path, a field name)
        return {(data.draw(st.sampled_from(["../x", "", "a/../../b", "/abs", "5"])) if k == key else k): v
                for k, v in doc.items()}
    return {**doc, key: _replace_somewhere(data, doc[key])}


def _check(base: Path, suffixes: tuple[str, ...], data) -> None:
    target = data.draw(st.sampled_from(_timeline_files(base, suffixes)))
    expected = outcome(base)
    assert expected[0] == "read", expected
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "t"
        shutil.copytree(base, copy)
        mutated = copy / target.relative_to(base)
        raw = mutated.read_bytes()
        changed = _mutate(data, raw)
        mutated.write_bytes(changed)
        found = outcome(copy)
        if found[0] == "refused":
            message = found[1]
            assert "\n" not in message and mutated.name in message, (target.name, changed[:300], message)
        else:
            # a change the readers do not act on (statistics, the plan's metrics): all the same
            assert found[3:] == expected[3:], (target.name, changed[:300])
            assert found[1] == expected[1], (target.name, changed[:300])


@FUZZ
@given(st.data())
def test_mutated_version_6_commit_and_clean_files_read_the_same_or_are_refused(tables, data):
    _check(tables[6], (".commit", ".replacecommit", ".clean", ".clean.requested", ".clean.inflight"), data)


@FUZZ
@given(st.data())
def test_mutated_version_9_commit_and_clustering_files_read_the_same_or_are_refused(tables, data):
    _check(tables[9], (".commit", ".clustering.requested"), data)


@FUZZ
@given(st.data())
def test_mutated_index_definitions_are_read_checked_or_refused(tables, data):
    """An index change reads the definitions first: a mutated file is refused naming it, or read
    and written back as strict JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "t"
        shutil.copytree(tables[9], copy)
        defs = copy / ".hoodie" / ".index_defs" / "index.json"
        defs.write_bytes(_mutate(data, defs.read_bytes()))
        table = HudiTable.open(str(copy))
        try:
            index_defs.check(ST, str(copy), table.config)
            index_defs.remove(ST, str(copy), table.config.with_updates(extra={
                **table.config.extra, "hoodie.table.index.defs.path": ".hoodie/.index_defs/index.json"}),
                ("record_index",))
        except TablespecError as e:
            assert "\n" not in str(e) and str(defs) in str(e)
            return
        json.loads(defs.read_bytes(), parse_constant=lambda c: pytest.fail(f"{c} written"))

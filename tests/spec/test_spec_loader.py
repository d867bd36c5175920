"""Loading spec files: discovery, multi-document files, all errors at once, clashes between specs, digests."""
from __future__ import annotations

import textwrap

import pytest

from tablespec.errors import SpecError
from tablespec.spec.loader import discover, load_spec_text, load_specs


def doc(name: str, location: str, database: str | None = None, extra: str = "") -> str:
    """A minimal valid spec document (7 lines plus `extra`)."""
    db = f", database: {database}" if database else ""
    return textwrap.dedent(f"""\
        apiVersion: tablespec/v1
        kind: HudiTable
        metadata: {{name: {name}{db}}}
        spec:
          location: {location}
          columns: [{{name: id, type: long, nullable: false}}]
          recordKey: {{fields: [id]}}
        """) + extra


def test_multi_document_file(tmp_path):
    text = doc("a", "x/a") + "---\n" + "---\n" + doc("b", "x/b") + "---\n" + doc("c", "x/c", extra="  orderingField: ts\n")
    (tmp_path / "many.yaml").write_text(text)
    result = load_specs([tmp_path])
    file = str(tmp_path / "many.yaml")
    assert [(s.spec.name, s.document, s.line) for s in result.specs] == [("a", 0, 1), ("b", 2, 10)]
    assert [str(d) for d in result.diagnostics] == [
        f"{file}:25:3: spec.orderingField: ordering field 'ts' is not a column"]


def test_all_errors_of_all_files_at_once(tmp_path):
    (tmp_path / "a.yaml").write_text(doc("a", "/abs") + "---\n" + doc("b", "b", extra="  index: {type: BUCKET}\n"))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.yml").write_text(doc("c", "c", extra="  retention: {keepCommits: 0}\n"))
    (tmp_path / "z.yaml").write_text("apiVersion: [\n")
    result = load_specs([tmp_path])
    printed = [str(d).replace(str(tmp_path), "W") for d in result.diagnostics]
    assert printed[:3] == [
        "W/a.yaml:5:3: spec.location: location must be relative to the warehouse root, got '/abs'",
        "W/a.yaml:16:3: spec.index.numBuckets: missing required key 'numBuckets'",
        "W/sub/c.yml:8:15: spec.retention.keepCommits: must be >= 1, got 0",
    ]
    assert printed[3].startswith("W/z.yaml:2:1: invalid YAML: ") and len(printed) == 4
    assert result.specs == []


def test_discover_walks_directories_sorted_and_skips_project_and_hidden_files(tmp_path):
    for rel in ["b.yaml", "a/z.yml", "a/y.yaml", "notes.txt", ".git/x.yaml", "tablespec.project.yaml", "a/.hidden.yaml"]:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    found = [p.relative_to(tmp_path).as_posix() for p in discover([tmp_path])]
    assert found == ["a/y.yaml", "a/z.yml", "b.yaml"]
    assert discover([tmp_path / "b.yaml", tmp_path / "b.yaml"]) == [tmp_path / "b.yaml"]
    assert discover([tmp_path / "tablespec.project.yaml"]) == []


def test_discover_missing_path_is_a_spec_error(tmp_path):
    with pytest.raises(SpecError) as info:
        discover([tmp_path / "nope"])
    (diagnostic,) = info.value.diagnostics
    assert (diagnostic.line, diagnostic.col) == (0, 0)
    assert str(diagnostic) == f"{tmp_path / 'nope'}: no such file or directory"


def test_load_specs_reports_missing_path_with_the_other_problems(tmp_path):
    (tmp_path / "a.yaml").write_text(doc("a", "/abs"))
    result = load_specs([tmp_path / "nope", tmp_path])
    assert [d.message for d in result.errors] == [
        "no such file or directory", "location must be relative to the warehouse root, got '/abs'"]


def test_empty_and_comment_only_files_are_errors(tmp_path):
    (tmp_path / "empty.yaml").write_text("")
    (tmp_path / "comments.yaml").write_text("# nothing yet\n---\n")
    result = load_specs([tmp_path])
    assert not result.specs
    assert sorted(str(d) for d in result.errors) == [
        f"{tmp_path / 'comments.yaml'}: empty spec file: no HudiTable document in it",
        f"{tmp_path / 'empty.yaml'}: empty spec file: no HudiTable document in it"]


def test_a_template_rendering_to_nothing_is_a_warning(tmp_path):
    (tmp_path / "maybe.yaml").write_text("{% if env == 'prod' %}\nkind: HudiTable\n{% endif %}\n")
    result = load_specs([tmp_path], {"env": "dev"})
    assert not result.errors and [d.message for d in result.diagnostics] == ["the template renders to no spec"]


def test_yaml_bounds_refuse_alias_bombs_deep_nesting_and_cut_echoes():
    from tablespec.spec.loader import load_spec_text
    rows = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    rows += [f"{c}: &{c} [{','.join(['*' + p] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi")]
    (bomb,) = load_spec_text("\n".join(rows) + "\n", "x.yaml").diagnostics  # 9^9 values from ~400 bytes
    assert str(bomb).startswith("x.yaml:") and "expands to more than 100,000 values" in str(bomb)
    (deep,) = load_spec_text("a: " + "[" * 20000 + "]" * 20000, "x.yaml").diagnostics
    assert str(deep) == "x.yaml:1:67: invalid YAML: nested deeper than 64 levels"
    junk = load_spec_text("apiVersion: " + "x" * 5_000_000, "x.yaml").diagnostics
    assert junk and all(len(str(d)) < 600 for d in junk)


def test_undecodable_file_is_a_diagnostic(tmp_path):
    (tmp_path / "bin.yaml").write_bytes(b"\xff\xfe\x00")
    (diagnostic,) = load_specs([tmp_path]).diagnostics
    assert diagnostic.message.startswith("cannot read file:")


def test_same_table_twice_points_at_the_first(tmp_path):
    (tmp_path / "a.yaml").write_text(doc("orders", "one", database="sales"))
    (tmp_path / "b.yaml").write_text(doc("other", "two") + "---\n" + doc("ORDERS", "three", database="sales"))
    result = load_specs([tmp_path])
    assert [str(d).replace(str(tmp_path), "W") for d in result.errors] == [
        "W/b.yaml:11:12: metadata.name: table 'sales.ORDERS' is already defined at W/a.yaml:3"]


@pytest.mark.parametrize("second", ["catalog: {database: sales, table: orders}",
                                    "catalog: {database: SALES, table: Orders}",
                                    "catalog:\n    database: Sales\n    table: ORDERS"])
def test_one_catalog_name_registered_twice_names_both_files_and_lines(tmp_path, capsys, second):
    """Two tables registered as one catalog table (its case aside): `apply` would move the name between
    them on every run (issue 34), so `validate` refuses the second at its catalog line."""
    from _support import cli
    (tmp_path / "a.yaml").write_text(doc("orders", "sales/orders", extra="  catalog: {database: sales}\n"))
    (tmp_path / "b.yaml").write_text(doc("orders_v2", "sales/orders_v2", extra=f"  {second}\n"))
    result = load_specs([tmp_path])
    at = "10:5" if "\n" in second else "8:30"       # the second's `table:` key
    assert [str(d).replace(str(tmp_path), "W") for d in result.errors] == [
        f"W/b.yaml:{at}: spec.catalog.table: "
        "catalog table 'sales.orders' is already registered by table 'orders' at W/a.yaml:8"]
    assert cli(capsys, "validate", str(tmp_path))[0] == 1


def test_same_name_in_other_database_is_fine():
    result = load_spec_text(doc("orders", "a", database="x") + "---\n" + doc("orders", "b", database="y"))
    assert result.diagnostics == [] and len(result.specs) == 2


def test_same_location_twice(tmp_path):
    result = load_spec_text(doc("a", "sales/orders") + "---\n" + doc("b", "sales/./orders/"), "f.yaml")
    assert [str(d) for d in result.errors] == [
        "f.yaml:13:3: spec.location: location 'sales/orders' is already used by table 'a' at f.yaml:5"]


@pytest.mark.parametrize("first, second, relation", [
    ("sales", "sales/orders", "is inside the location of"),
    ("sales/orders", "sales", "contains the location of"),
])
def test_nested_locations(first, second, relation):
    result = load_spec_text(doc("a", first) + "---\n" + doc("b", second), "f.yaml")
    assert [str(d) for d in result.errors] == [
        f"f.yaml:13:3: spec.location: location '{second}' {relation} table 'a' at f.yaml:5"]


def test_sibling_locations_with_common_prefix_are_fine():
    assert load_spec_text(doc("a", "sales/orders") + "---\n" + doc("b", "sales/orders_v2")).diagnostics == []


def test_digest_ignores_spelling_but_not_meaning():
    plain = doc("a", "x", extra="  clustering: {targetFileSize: 256MiB}\n")
    spelled = textwrap.dedent("""\
        # a comment
        kind: HudiTable
        apiVersion: tablespec/v1
        metadata:
          name: a
          labels: {}
        spec:
          recordKey:
            fields: [id]
            autoGenerate: false
          columns:
            - name: id
              type: BIGINT
              nullable: false
          location: ./x/
          tableType: COPY_ON_WRITE
          index: {type: SIMPLE}
          clustering:
            targetFileSize: 268435456
            smallFileLimit: 100 MiB
        """)
    other = doc("a", "x", extra="  clustering: {targetFileSize: 512MiB}\n")
    digests = [load_spec_text(t).specs[0].digest for t in (plain, spelled, other)]
    assert digests[0] == digests[1] != digests[2]
    assert len(digests[0]) == 64


def test_position_falls_back_to_nearest_parent():
    (loaded,) = load_spec_text(doc("a", "x", extra="  index:\n    type: BUCKET\n    numBuckets: 4\n")).specs
    assert loaded.position("spec.index.numBuckets") == (10, 5)
    assert loaded.position("spec.index.hashFields") == (8, 3)
    assert loaded.position("spec.retention.keepCommits") == (4, 1)
    assert loaded.position("spec.columns[0].comment") == (6, 13)
    assert loaded.position("") == (1, 1)


@pytest.mark.parametrize("text, expected", [
    ('a: 1\nb:\n  c: !!python/object/apply:os.system ["touch pwned"]\n',
     "t.yaml:3:3: b.c: YAML tag '!!python/object/apply:os.system' is not allowed in specs"),
    ("a: !!python/name:os.system\n", "t.yaml:1:1: a: YAML tag '!!python/name:os.system' is not allowed in specs"),
    ("!custom {a: 1}\n", "t.yaml:1:1: YAML tag '!custom' is not allowed in specs"),
])
def test_yaml_tags_never_build_objects(text, expected, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert [str(d) for d in load_spec_text(text, "t.yaml").diagnostics] == [expected]
    assert not (tmp_path / "pwned").exists()


def test_core_yaml_features_still_work():
    text = doc("a", "x", extra="  partitioning: &p {fields: [id]}\n  orderingField: !!str id\n")
    (loaded,) = load_spec_text(text).specs
    assert loaded.spec.spec.partitioning.fields == ["id"] and loaded.spec.spec.ordering_field == "id"

"""Jinja2 templating of specs: variables work, and a hostile spec can neither run code nor read files or env."""
from __future__ import annotations

import pytest

from tablespec.errors import SpecError
from tablespec.spec.loader import load_spec_text, load_specs
from tablespec.spec.templating import needs_rendering, parse_var_assignments, render

SECRET = "s3cr3t-value-that-must-not-leak"

TEMPLATED = """\
apiVersion: tablespec/v1
kind: HudiTable
metadata:
  name: orders_{{ env }}
  labels: {env: "{{ vars.env }}"}
spec:
  location: "{{ env }}/orders"
  columns: [{name: id, type: long, nullable: false}]
  recordKey: {fields: [id]}
  retention: {keepCommits: {{ vars.retention | default(10) }}}
"""


def test_variables_at_top_level_and_under_vars():
    (loaded,) = load_spec_text(TEMPLATED, "t.yaml", {"env": "prod", "retention": "3"}).specs
    spec = loaded.spec
    assert (spec.name, spec.metadata.labels, spec.spec.location, spec.spec.retention.keep_commits) == (
        "orders_prod", {"env": "prod"}, "prod/orders", 3)


def test_default_filter_works_with_strict_undefined():
    (loaded,) = load_spec_text(TEMPLATED, "t.yaml", {"env": "dev"}).specs
    assert loaded.spec.spec.retention.keep_commits == 10


def test_project_vars_are_defaults_and_cli_vars_override():
    project_vars = {"env": "dev", "retention": 7}
    variables = {**project_vars, **parse_var_assignments(["env=prod"])}
    (loaded,) = load_spec_text(TEMPLATED, "t.yaml", variables).specs
    assert (loaded.spec.name, loaded.spec.spec.retention.keep_commits) == ("orders_prod", 7)


def test_undefined_variable_names_file_and_line(tmp_path):
    (tmp_path / "t.yaml").write_text(TEMPLATED)
    result = load_specs([tmp_path], {"retention": "3"})
    assert [str(d) for d in result.diagnostics] == [f"{tmp_path / 't.yaml'}:4:1: template error: 'env' is undefined"]


def test_template_syntax_error_names_line():
    text = "apiVersion: tablespec/v1\nkind: HudiTable\nmetadata: {name: {{ name }\n"
    assert [str(d) for d in load_spec_text(text, "t.yaml", {"name": "x"}).diagnostics] == [
        "t.yaml:3:1: template syntax error: unexpected '}'"]


def test_plain_yaml_is_not_rendered():
    text = "labels: {note: '{# not a template #}'}\n"
    assert not needs_rendering(text)
    assert render(text, "t.yaml", {}) is text


def test_rendering_keeps_lines_and_trailing_newline():
    assert render("a: {{ x }}\nb: 2\n", "t.yaml", {"x": 1}) == "a: 1\nb: 2\n"


ATTACKS = [
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ ''.__class__.__base__.__subclasses__() }}",
    "{{ cycler.__init__.__globals__.os.environ }}",
    "{{ joiner.__init__.__globals__ }}",
    "{{ namespace.__init__.__globals__ }}",
    "{{ lipsum.__globals__['os'].environ }}",
    "{{ self._TemplateReference__context }}",
    "{{ self.__init__.__globals__ }}",
    "{{ range.__init__.__globals__ }}",
    "{{ dict.__base__.__subclasses__() }}",
    "{{ (1).__class__.__base__ }}",
    "{{ x|attr('__class__') }}",
    "{{ '{0.__class__.__init__.__globals__}'.format(x) }}",
    "{{ config.items() }}",
    "{{ request.environ }}",
    "{{ environ }}",
    "{{ os.environ }}",
    "{% set l = [] %}{{ l.append(1) }}",
    "{% set d = {} %}{{ d.update(a=1) }}",
    "{% include '/etc/passwd' %}",
    "{% import '/etc/passwd' as p %}",
    "{% extends '/etc/passwd' %}",
    "{% from '/etc/hostname' import x %}",
    "{{ 'x' * 100000000 }}",
    "{{ [1] * 100000000 }}",
    "{{ 10 ** 100000000 }}",
    "{{ (2 ** 50000) * (2 ** 50000) * (2 ** 50000) }}",
    "{% for i in range(100000000) %}{% endfor %}",
]


@pytest.mark.parametrize("attack", ATTACKS)
def test_sandbox_refuses_cleanly(attack, monkeypatch, capsys):
    monkeypatch.setenv("TABLESPEC_TEST_SECRET", SECRET)
    text = f"apiVersion: tablespec/v1\nkind: HudiTable\nmetadata:\n  name: {attack}\n"
    result = load_spec_text(text, "evil.yaml", {"x": "1"})
    assert result.specs == []
    assert [(d.file, d.line, d.path) for d in result.diagnostics] == [("evil.yaml", 4, "")]
    (diagnostic,) = result.diagnostics
    assert diagnostic.message.startswith(("template error: ", "template refused: "))
    assert "root:" not in diagnostic.message
    assert SECRET not in str(diagnostic) + "".join(capsys.readouterr())


def test_rendered_size_is_bounded():
    text = "a: {% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}\n"
    assert [str(d) for d in load_spec_text(text, "t.yaml").diagnostics] == [
        "t.yaml: template refused: rendered spec is larger than 10000000 characters"]


def test_environment_variables_are_not_variables(monkeypatch):
    monkeypatch.setenv("env", SECRET)
    monkeypatch.setenv("TABLESPEC_TEST_SECRET", SECRET)
    result = load_spec_text("a: '{{ env }}{{ TABLESPEC_TEST_SECRET }}'\n", "t.yaml")
    assert [str(d) for d in result.diagnostics] == ["t.yaml:1:1: template error: 'env' is undefined"]


def test_file_contents_never_reach_the_output(tmp_path):
    secret_file = tmp_path / "secret.txt"
    secret_file.write_text(SECRET)
    for text in (f"{{% include '{secret_file}' %}}", f"{{{{ '{secret_file}' | read }}}}"):
        out = str(load_spec_text(text, "t.yaml").diagnostics)
        assert SECRET not in out and "template" in out


def test_parse_var_assignments():
    assert parse_var_assignments(["env=prod", "expr=a=b", "empty=", "env=dev"]) == {
        "env": "dev", "expr": "a=b", "empty": ""}


@pytest.mark.parametrize("bad", ["noequals", "=value", "1x=2", "a-b=c", "vars=x"])
def test_parse_var_assignments_refuses_malformed(bad):
    with pytest.raises(SpecError) as info:
        parse_var_assignments([bad])
    (diagnostic,) = info.value.diagnostics
    assert str(diagnostic).startswith("--var: ")
    assert "'vars' cannot be assigned" in str(diagnostic) if bad == "vars=x" else repr(bad) in str(diagnostic)


@pytest.mark.parametrize("template, message", [
    ("{{ 'x'|center(2000000000) }}", "center would build"),
    ("{{ 'x'|indent(2000000000, true) }}", "indent would build"),
    ("{{ '%2000000000d'|format(1) }}", "format would build"),
    ("{{ 'x'|wordwrap(2000000000) }}", "wordwrap would build"),
    ("{{ ('x' * 1000000)|replace('x', 'xxxxxxxxxx') }}", "replace would build"),
    ("{{ 'x'.ljust(2000000000) }}", "str.ljust would build"),
    ("{{ 'x'.rjust(2000000000) }}", "str.rjust would build"),
    ("{{ 'x'.center(2000000000) }}", "str.center would build"),
    ("{{ 'x'.zfill(2000000000) }}", "str.zfill would build"),
    ("{{ ('x' * 1000000).replace('x', 'xxxxxxxxxx') }}", "str.replace would build"),
    ("{{ '{:>2000000000}'.format(1) }}", "str.format would build"),
    ("{{ '%2000000000d' % 1 }}", "'%' formatting would build"),
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "longer than 0.5 s"),
    ("{% set s = 'x' * 1000000 %}{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}", "longer than 0.5 s"),
])
def test_templates_cannot_build_huge_strings_or_run_forever(template, message, monkeypatch):
    from tablespec.spec import templating
    monkeypatch.setattr(templating, "MAX_SECONDS", 0.5)
    with pytest.raises(SpecError) as e:
        render(template + "\n", "t.yaml")
    (d,) = e.value.diagnostics
    assert d.message.startswith("template refused:") and message in d.message, d.message


def test_bounded_filters_still_work():
    assert render("{{ 'ab'|center(6) }}|{{ 'a b'|replace(' ', '_') }}|{{ '%03d'|format(7) }}|{{ 'x'.ljust(3) }}.\n") \
        == "  ab  |a_b|007|x  .\n"

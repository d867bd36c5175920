"""Jinja2 variables in spec files, rendered so that a spec from a pull request cannot run code or read files.

The environment is Jinja's immutable sandbox (no attribute starting with `_`, no mutation of
containers) with no loader (`include`/`import`/`extends` fail), no globals beyond `range`
and `dict`, strict undefined variables (a typo is an error, not an empty string), and
bounded `*`, `**` and output size so a spec cannot exhaust memory. (CPU time is not bounded:
nested loops can still run long; CI job timeouts are the backstop.)
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from jinja2 import StrictUndefined, Template, TemplateError, TemplateSyntaxError
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from tablespec.errors import SpecError
from tablespec.spec.diagnostics import Diagnostic

MAX_SEQUENCE = 1_000_000
"""Longest string or list a template may build with `*`."""
MAX_INT_BITS = 100_000
"""Largest integer a template may build with `*` or `**`."""
MAX_OUTPUT = 10_000_000
"""Largest rendered spec file, in characters."""
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TEMPLATE_NAME = "<template>"  # the file name Jinja gives templates made from strings


class _SpecEnvironment(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset(["*", "**"])

    def call_binop(self, context, operator: str, left: Any, right: Any) -> Any:
        if isinstance(left, int) and isinstance(right, int):
            bits = left.bit_length() * abs(right) if operator == "**" else left.bit_length() + right.bit_length()
            if bits > MAX_INT_BITS:
                raise SecurityError(f"result of '{operator}' would be larger than {MAX_INT_BITS} bits")
        elif operator == "*":
            for seq, count in ((left, right), (right, left)):
                if isinstance(seq, str | list | tuple) and isinstance(count, int) and len(seq) * count > MAX_SEQUENCE:
                    raise SecurityError(f"result of '*' would be longer than {MAX_SEQUENCE}")
        return left ** right if operator == "**" else left * right

    def get_template(self, *args: Any, **kwargs: Any) -> Any:
        raise SecurityError("specs cannot include, import or extend other templates")

    select_template = get_or_select_template = get_template


def _environment() -> _SpecEnvironment:
    env = _SpecEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True, loader=None)
    env.globals = {"range": env.globals["range"], "dict": dict}
    return env


_ENV = _environment()


def needs_rendering(text: str) -> bool:
    return "{{" in text or "{%" in text


def _template_line(error: BaseException) -> int:
    """The template line an error was raised at, from the frames Jinja rewrites to template lines."""
    line = getattr(error, "lineno", None) or 0
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == _TEMPLATE_NAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _render_bounded(template: Template, context: dict[str, Any]) -> str:
    chunks, size = [], 0
    for chunk in template.generate(context):
        size += len(chunk)
        if size > MAX_OUTPUT:
            raise SecurityError(f"rendered spec is larger than {MAX_OUTPUT} characters")
        chunks.append(chunk)
    return "".join(chunks)


def render(text: str, file: str = "<string>", variables: Mapping[str, Any] | None = None) -> str:
    """Render `text` with `variables` (also reachable as `vars.NAME`); plain YAML is returned unchanged."""
    if not needs_rendering(text):
        return text
    context = dict(variables or {})
    context["vars"] = dict(variables or {})
    try:
        return _render_bounded(_ENV.from_string(text), context)
    except TemplateSyntaxError as e:
        line, message = e.lineno or 0, f"template syntax error: {e.message}"
    except SecurityError as e:
        line, message = _template_line(e), f"template refused: {e}"
    except TemplateError as e:
        line, message = _template_line(e), f"template error: {e.message or type(e).__name__}"
    except Exception as e:  # expressions fail in ordinary Python ways too (1/0, int('x'), ...)
        line, message = _template_line(e), f"template error: {type(e).__name__}: {e}"
    raise SpecError([Diagnostic(file, line, 1 if line else 0, "", message)])


def parse_var_assignments(assignments: Iterable[str]) -> dict[str, str]:
    """`["env=prod", "retention=5"]` -> `{"env": "prod", "retention": "5"}` (later assignments win)."""
    out: dict[str, str] = {}
    problems = []
    for item in assignments:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not _VARIABLE.fullmatch(name):
            problems.append(f"invalid variable assignment {item!r}: expected NAME=VALUE with NAME an identifier")
        elif name == "vars":
            problems.append("'vars' cannot be assigned: it is the mapping of all variables")
        else:
            out[name] = value
    if problems:
        raise SpecError([Diagnostic("--var", 0, 0, "", p) for p in problems])
    return out

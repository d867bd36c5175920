"""Jinja2 variables in spec files, rendered so that a spec from a pull request cannot run code or read files.

The environment is Jinja's immutable sandbox (no attribute starting with `_`, no mutation of
containers) with no loader (`include`/`import`/`extends` fail), no globals beyond `range`
and `dict`, strict undefined variables (a typo is an error, not an empty string). Memory is
bounded: `*`, `**`, `%`, padding and formatting (filters `center`, `indent`, `format`,
`wordwrap`, `replace`; string methods `ljust`, `rjust`, `center`, `zfill`, `format`, ...) refuse
results longer than MAX_SEQUENCE, and the output is bounded. Time is bounded: rendering stops
after MAX_SECONDS (a timer signal in the main thread; `range` checks the clock in any thread).
"""
from __future__ import annotations

import contextlib
import re
import signal
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from jinja2 import StrictUndefined, Template, TemplateError, TemplateSyntaxError
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError, safe_range

from tablespec.errors import SpecError
from tablespec.spec.diagnostics import Diagnostic

MAX_SEQUENCE = 1_000_000
"""Longest string or list a template may build with `*`."""
MAX_INT_BITS = 100_000
"""Largest integer a template may build with `*` or `**`."""
MAX_OUTPUT = 10_000_000
"""Largest rendered spec file, in characters."""
MAX_SECONDS = 5.0
"""Longest a spec file may take to render."""
_NUMBERS = re.compile(r"\d+")
# str methods whose result length an int argument sets
_PADDING_METHODS = {"center", "ljust", "rjust", "zfill", "expandtabs"}
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TEMPLATE_NAME = "<template>"  # the file name Jinja gives templates made from strings


class _Deadline:
    """The render's time budget (per thread: Jinja renders on the caller's thread)."""

    def __init__(self):
        self.until = float("inf")

    def check(self) -> None:
        if time.monotonic() > self.until:
            raise SecurityError(f"rendering takes longer than {MAX_SECONDS:g} s")


_DEADLINE = threading.local()


def _check_deadline() -> None:
    deadline = getattr(_DEADLINE, "value", None)
    if deadline is not None:
        deadline.check()


def _too_long(n: Any) -> bool:
    return isinstance(n, int) and not isinstance(n, bool) and n > MAX_SEQUENCE


def _check_size(what: str, *numbers: Any, text: str = "", estimate: int = 0) -> None:
    """Refuse a width, count or format field (digits in `text`) that would build a huge string."""
    if estimate > MAX_SEQUENCE or any(_too_long(n) for n in numbers) or \
            any(int(d) > MAX_SEQUENCE for d in _NUMBERS.findall(text or "") if len(d) < 30) or \
            any(len(d) >= 30 for d in _NUMBERS.findall(text or "")):
        raise SecurityError(f"{what} would build a string longer than {MAX_SEQUENCE}")


def _bounded_filters(filters: dict) -> dict:
    """Jinja's string-building filters, refusing huge widths and growth."""
    out = dict(filters)
    plain = {name: filters[name] for name in ("center", "indent", "format", "wordwrap", "replace", "join")}

    def center(value, width=80):
        _check_size("center", width)
        return plain["center"](value, width)

    def indent(value, width=4, *args, **kwargs):
        lines = str(value).count("\n") + 1
        _check_size("indent", estimate=(width if isinstance(width, int) else len(str(width))) * lines + len(str(value)))
        return plain["indent"](value, width, *args, **kwargs)

    def format_(value, *args, **kwargs):
        _check_size("format", text=str(value))
        return plain["format"](value, *args, **kwargs)

    def wordwrap(environment, value, width=79, *args, **kwargs):
        _check_size("wordwrap", width)
        return plain["wordwrap"](environment, value, width, *args, **kwargs)

    def replace(eval_ctx, value, old, new, count=None):
        value, old, new = str(value), str(old), str(new)
        _check_size("replace", estimate=len(value) + (value.count(old) if old else len(value) + 1) * len(new))
        return plain["replace"](eval_ctx, value, old, new, count)

    for name, fn in (("center", center), ("indent", indent), ("format", format_)):
        out[name] = fn
    wordwrap.jinja_pass_arg = plain["wordwrap"].jinja_pass_arg  # type: ignore[attr-defined]
    replace.jinja_pass_arg = plain["replace"].jinja_pass_arg  # type: ignore[attr-defined]
    out["wordwrap"], out["replace"] = wordwrap, replace
    return out


class _SpecEnvironment(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset(["*", "**", "%"])

    def call(self, __context, __obj, *args, **kwargs):
        _check_deadline()
        text, name = getattr(__obj, "__self__", None), getattr(__obj, "__name__", "")
        if isinstance(text, str) and name in _PADDING_METHODS:
            _check_size(f"str.{name}", *args, *kwargs.values())
        elif isinstance(text, str) and name == "replace" and len(args) >= 2:
            old, new = str(args[0]), str(args[1])
            _check_size("str.replace", estimate=len(text) + (text.count(old) if old else len(text) + 1) * len(new))
        return super().call(__context, __obj, *args, **kwargs)

    def getattr(self, obj: Any, attribute: str) -> Any:
        if isinstance(obj, str) and attribute in ("format", "format_map"):  # the sandbox wraps these
            _check_size(f"str.{attribute}", text=obj)
        return super().getattr(obj, attribute)

    def call_binop(self, context, operator: str, left: Any, right: Any) -> Any:
        _check_deadline()
        if operator == "%":
            if isinstance(left, str):
                _check_size("'%' formatting", text=left)
            return left % right
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


def _timed_range(*args: Any):
    """Jinja's bounded `range` that also checks the render's deadline at every step."""
    for i in safe_range(*args):
        _check_deadline()
        yield i


def _environment() -> _SpecEnvironment:
    env = _SpecEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True, loader=None)
    env.globals = {"range": _timed_range, "dict": dict}
    env.filters = _bounded_filters(env.filters)
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
    deadline = _Deadline()
    deadline.until = time.monotonic() + MAX_SECONDS
    _DEADLINE.value = deadline
    chunks, size = [], 0
    try:
        with _alarm():
            for chunk in template.generate(context):
                size += len(chunk)
                if size > MAX_OUTPUT:
                    raise SecurityError(f"rendered spec is larger than {MAX_OUTPUT} characters")
                chunks.append(chunk)
    finally:
        _DEADLINE.value = None
    return "".join(chunks)


@contextlib.contextmanager
def _alarm():
    """A timer signal that interrupts a loop the deadline checks cannot see (main thread, POSIX)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expired(signum, frame):
        raise SecurityError(f"rendering takes longer than {MAX_SECONDS:g} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, MAX_SECONDS)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


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

"""YAML documents as plain Python data plus the line/column of every key and list item.

Specs are read once, from the events of libyaml's C parser (PyYAML), which carry line marks: a
`path -> (line, col)` map is built as values arrive, and pydantic gets plain dicts/lists/scalars
(strict validation should not depend on ruamel's scalar subclasses). Plain scalars resolve as
ruamel's round-trip loader resolves them (YAML 1.2). What that fast reader does not build itself
(a syntax or bounds error, tags, merge keys, directives, complex or duplicate keys, text the two
parsers read differently) is read by the round-trip loader, as before: its positions, refusals and
error messages are the ones users see.
"""
from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq, TaggedScalar
from ruamel.yaml.constructor import DuplicateKeyError
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import AliasEvent, CollectionEndEvent, CollectionStartEvent, DocumentStartEvent, ScalarEvent
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.resolver import Resolver
from ruamel.yaml.scalarbool import ScalarBoolean
from ruamel.yaml.tag import Tag

from tablespec.spec.diagnostics import Diagnostic, child_path, format_path, locate

Positions = dict[str, tuple[int, int]]


@dataclass(frozen=True)
class Document:
    """One non-empty YAML document of a file."""

    index: int
    """0-based index among all documents of the file (empty ones included)."""
    line: int
    col: int
    data: Any
    positions: Positions = field(default_factory=dict)


_CORE_TAGS = {f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "map", "seq")}


class _TagRefused(Exception):
    def __init__(self, loc: tuple, tag: str):
        self.loc, self.tag = loc, tag


def _position(lc_position: Any) -> tuple[int, int] | None:
    return (lc_position[0] + 1, lc_position[1] + 1) if lc_position else None


def _plain(node: Any, loc: tuple, positions: Positions) -> Any:
    tag = getattr(getattr(node, "tag", None), "value", None)
    if tag and tag not in _CORE_TAGS:  # e.g. !!python/object/apply: a spec is data, never objects
        raise _TagRefused(loc, tag)
    if isinstance(node, CommentedMap):
        out: dict = {}
        for key, value in node.items():
            if (position := _position((node.lc.data or {}).get(key))) is not None:  # merged (`<<`) keys have none
                positions[format_path((*loc, key))] = position
            out[key] = _plain(value, (*loc, key), positions)
        return out
    if isinstance(node, CommentedSeq):
        items: list = []
        for i, value in enumerate(node):
            if (position := _position(node.lc.item(i))) is not None:
                positions[format_path((*loc, i))] = position
            items.append(_plain(value, (*loc, i), positions))
        return items
    return _plain_scalar(node)


def _plain_scalar(node: Any) -> Any:
    if isinstance(node, TaggedScalar):
        return str(node.value)
    if isinstance(node, bool | ScalarBoolean):
        return bool(node)
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    if isinstance(node, datetime.datetime):  # ruamel's TimeStamp subclass
        return datetime.datetime.fromisoformat(node.isoformat())
    return node


def _document_lines(text: str) -> list[int]:
    """1-based start line of every document, from the parser's events (scalar documents carry no marks)."""
    return [event.start_mark.line + 1 for event in YAML().parse(text) if isinstance(event, DocumentStartEvent)]


MAX_DEPTH = 64
"""Deepest nesting of mappings and lists a spec file may have (specs need fewer than 10)."""
MAX_NODES = 100_000
"""Most values a document may hold once its aliases are expanded ("billion laughs" stays small)."""


class _Bounds(Exception):
    def __init__(self, mark, message: str):
        self.mark, self.message = mark, message


def _check_bounds(text: str) -> None:
    """Refuse deep nesting and alias expansion from the parser's event stream, before anything is
    built: the stream is flat (no recursion) and an alias costs what its anchored value holds."""
    sizes: dict[str, int] = {}
    stack: list[list] = []          # open collections: [anchor, values so far]
    total = 0
    for event in YAML().parse(text):
        if isinstance(event, CollectionStartEvent):
            if len(stack) >= MAX_DEPTH:
                raise _Bounds(event.start_mark, f"nested deeper than {MAX_DEPTH} levels")
            stack.append([event.anchor, 0])
            continue
        if isinstance(event, CollectionEndEvent):
            anchor, count = stack.pop()
            size = count + 1
        elif isinstance(event, ScalarEvent):
            anchor, size = event.anchor, 1
        elif isinstance(event, AliasEvent):
            anchor, size = None, sizes.get(event.anchor, 1)
        else:
            total = 0 if isinstance(event, DocumentStartEvent) else total
            continue
        if anchor is not None:
            sizes[anchor] = size
        if stack:
            stack[-1][1] += size
            if stack[-1][1] > MAX_NODES:
                raise _Bounds(event.start_mark, f"expands to more than {MAX_NODES:,} values through its aliases")
        else:
            total += size


class _RoundTripOnly(Exception):
    """What the fast reader leaves to the round-trip loader: an error, to be reported in its words at
    its position, or something only it builds (tags, merge keys, directives, complex keys)."""


_EVENTS_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's C parser where PyYAML has it
_IMPLICIT = Resolver.yaml_implicit_resolvers  # ruamel's YAML 1.2 resolution of plain scalars, by first character
_NULL = "tag:yaml.org,2002:null"
_BUILT = {f"tag:yaml.org,2002:{name}" for name in ("bool", "int", "float", "timestamp")}
_CONSTRUCTOR = YAML(typ="rt").constructor
_NO_KEY = object()
_ROUND_TRIP_TEXT = re.compile("[\t\x85\u2028\u2029]|(?s:.)\ufeff|(?m:^\\.\\.\\.)|[|>][-+0-9]*#")
"""Where the two parsers differ: tabs (libyaml takes some as separation), YAML 1.1's line breaks, a
byte order mark after the start, document end markers (libyaml takes two in a row), a comment right
after a block scalar's indicator (libyaml takes it)."""


def _scalar(event: yaml.ScalarEvent) -> Any:
    """The value the round-trip loader builds for an untagged scalar (a ruamel subclass for some)."""
    if event.tag is not None:
        raise _RoundTripOnly
    value = event.value
    if event.style:  # quoted, literal or folded: a string
        return value
    tag = next((tag for tag, regexp in _IMPLICIT.get(value[:1], ()) if regexp.match(value)), None)
    if tag is None:
        return value
    if tag == _NULL:
        return None
    if tag not in _BUILT:  # `<<` (merge) and `=` (value)
        raise _RoundTripOnly
    return _CONSTRUCTOR.yaml_constructors[tag](_CONSTRUCTOR, ScalarNode(Tag(suffix=tag), value))


def _copy(value: Any) -> Any:
    """A fresh copy of an anchored value for each alias, as the round-trip reading makes."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


class _Open:
    """A mapping or list being read: its path, the values it holds so far (aliases expanded, for the
    bound), its anchor, where its positions start, and a mapping's key waiting for its value."""

    __slots__ = ("container", "path", "position", "anchor", "count", "first_mark", "key")

    def __init__(self, container: dict | list, path: str, position: tuple[int, int], anchor: str | None, first_mark: int):
        self.container, self.path, self.position, self.anchor = container, path, position, anchor
        self.count, self.first_mark, self.key = 0, first_mark, _NO_KEY


def _read_events(text: str) -> list[Document]:
    """Every document of `text` in one pass over libyaml's events, with the bounds of `_check_bounds`;
    raises _RoundTripOnly for anything the round-trip loader must read instead."""
    if _ROUND_TRIP_TEXT.search(text):
        raise _RoundTripOnly
    documents: list[Document] = []
    index = -1
    stack: list[_Open] = []
    marks: list[tuple[str, tuple[int, int]]] = []  # (path, position) in the order the round-trip reading records them
    anchors: dict[str, tuple[Any, int, str, int, int, tuple[int, int]]] = {}  # value, size, path, marks[a:b], position
    root: Any = None
    root_position = (0, 0)

    def place(value: Any, position: tuple[int, int]) -> str:
        """Put a value into the open collection (or make it the document's); its path."""
        nonlocal root, root_position
        if not stack:
            root, root_position = value, position
            return ""
        parent = stack[-1]
        if isinstance(parent.container, list):
            path = child_path(parent.path, len(parent.container))
            marks.append((path, position))
            parent.container.append(value)
            return path
        key, parent.key = parent.key, _NO_KEY
        parent.container[key] = value
        return child_path(parent.path, key)

    def count(size: int) -> None:
        if stack:
            stack[-1].count += size
            if stack[-1].count > MAX_NODES:
                raise _RoundTripOnly

    def remember(anchor: str | None, value: Any, size: int, path: str, first: int, position: tuple[int, int]) -> None:
        if anchor is not None:
            if anchor in anchors:  # a reused anchor: the round-trip loader warns
                raise _RoundTripOnly
            anchors[anchor] = (value, size, path, first, len(marks), position)

    try:
        for event in yaml.parse(text, Loader=_EVENTS_LOADER):
            kind = type(event)
            expects_key = bool(stack) and stack[-1].key is _NO_KEY and isinstance(stack[-1].container, dict)
            if kind is yaml.ScalarEvent:
                value = _scalar(event)
                position = (event.start_mark.line + 1, event.start_mark.column + 1)
                if not stack:  # a document that is a scalar: none (skipped) or no spec
                    if value is not None:
                        raise _RoundTripOnly
                elif expects_key:
                    if event.anchor is not None or event.style in ("|", ">") or value in stack[-1].container:
                        raise _RoundTripOnly  # a duplicate key is reported in the round-trip loader's words
                    stack[-1].key = value
                    marks.append((child_path(stack[-1].path, value), position))
                else:
                    value = _plain_scalar(value)
                    path = place(value, position)
                    remember(event.anchor, value, 1, path, len(marks), position)
                count(1)
            elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                if expects_key or event.tag is not None or len(stack) >= MAX_DEPTH:
                    raise _RoundTripOnly
                container: dict | list = {} if kind is yaml.MappingStartEvent else []
                position = (event.start_mark.line + 1, event.start_mark.column + 1)
                stack.append(_Open(container, place(container, position), position, event.anchor, len(marks)))
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                done = stack.pop()
                size = done.count + 1
                remember(done.anchor, done.container, size, done.path, done.first_mark, done.position)
                count(size)
            elif kind is yaml.AliasEvent:
                if expects_key or event.anchor not in anchors:  # an alias as a key, undefined or recursive
                    raise _RoundTripOnly
                value, size, anchored, first, last, position = anchors[event.anchor]
                count(size)  # before the copy: an alias bomb stops at the bound
                path = place(_copy(value), position)
                if last > first and not (anchored and path):  # an empty key's path would read differently
                    raise _RoundTripOnly
                marks.extend((path + p[len(anchored):], at) for p, at in marks[first:last])
            elif kind is yaml.DocumentStartEvent:
                if event.version or event.tags:
                    raise _RoundTripOnly
                index += 1
                root, marks, anchors = None, [], {}
            elif kind is yaml.DocumentEndEvent and root is not None:
                line, col = root_position
                documents.append(Document(index, line, col, root, {"": root_position, **dict(marks)}))
    except (yaml.YAMLError, UnicodeError):
        raise _RoundTripOnly from None
    return documents


def read_documents(text: str, file: str) -> tuple[list[Document], list[Diagnostic]]:
    """Parse every document of `text`; a syntax error ends the file with one diagnostic."""
    try:
        return _read_events(text), []
    except _RoundTripOnly:
        return _read_round_trip(text, file)


def _read_round_trip(text: str, file: str) -> tuple[list[Document], list[Diagnostic]]:
    """Parse with ruamel's round-trip loader: positions, tag refusals and error messages in its words."""
    documents: list[Document] = []
    try:
        _check_bounds(text)
    except _Bounds as e:
        return documents, [Diagnostic(file, e.mark.line + 1, e.mark.column + 1, "", f"invalid YAML: {e.message}")]
    except (MarkedYAMLError, YAMLError):
        pass  # reported with its position by the load below
    try:
        for index, node in enumerate(YAML(typ="rt").load_all(text)):
            if node is None:
                continue
            if isinstance(node, CommentedMap | CommentedSeq):
                line, col = node.lc.line + 1, node.lc.col + 1
            else:
                line, col = _document_lines(text)[index], 1
            positions: Positions = {"": (line, col)}
            try:
                data = _plain(node, (), positions)
            except _TagRefused as e:
                path = format_path(e.loc)
                line, col = locate(positions, path)
                tag = e.tag.replace("tag:yaml.org,2002:", "!!")
                return documents, [Diagnostic(file, line, col, path, f"YAML tag '{tag}' is not allowed in specs")]
            documents.append(Document(index, line, col, data, positions))
    except MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        message = str(e.problem or e.context or "invalid YAML").split("\n")[0]
        if isinstance(e, DuplicateKeyError):
            message = message.split(" with value")[0]
        elif e.context and e.problem:
            message = f"{message} ({e.context})"
        line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        return documents, [Diagnostic(file, line, col, "", f"invalid YAML: {message}")]
    except YAMLError as e:
        return documents, [Diagnostic(file, 0, 0, "", f"invalid YAML: {e}")]
    return documents, []

"""YAML documents as plain Python data plus the line/column of every key and list item.

The round-trip loader keeps positions on its containers; we copy them into a flat
`path -> (line, col)` map and hand pydantic plain dicts/lists/scalars (strict validation
should not depend on ruamel's scalar subclasses).
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq, TaggedScalar
from ruamel.yaml.constructor import DuplicateKeyError
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import AliasEvent, CollectionEndEvent, CollectionStartEvent, DocumentStartEvent, ScalarEvent
from ruamel.yaml.scalarbool import ScalarBoolean

from tablespec.spec.diagnostics import Diagnostic, format_path, locate

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
            if (position := _position(node.lc.key(key))) is not None:
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


def read_documents(text: str, file: str) -> tuple[list[Document], list[Diagnostic]]:
    """Parse every document of `text`; a syntax error ends the file with one diagnostic."""
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

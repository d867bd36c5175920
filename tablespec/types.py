"""Spark SQL column types, parsed without a JVM.

Specs declare column types in Spark SQL syntax (`decimal(12,2)`, `array<struct<a:int>>`).
This module turns such a string into a small immutable tree and renders the tree back in
one canonical spelling, so two specs that mean the same type compare equal.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# Canonical primitive names and the aliases Spark accepts for them.
PRIMITIVES = {
    "string": "string", "varchar": "string", "char": "string",
    "int": "int", "integer": "int",
    "long": "long", "bigint": "long",
    "short": "short", "smallint": "short",
    "byte": "byte", "tinyint": "byte",
    "float": "float", "real": "float",
    "double": "double",
    "boolean": "boolean", "bool": "boolean",
    "date": "date",
    "timestamp": "timestamp", "timestamp_ltz": "timestamp",
    "timestamp_ntz": "timestamp_ntz",
    "binary": "binary",
}
MAX_DECIMAL_PRECISION = 38


class TypeParseError(ValueError):
    """A type string is not valid Spark SQL type syntax; `position` is the 0-based offset."""

    def __init__(self, message: str, text: str, position: int):
        self.text, self.position = text, position
        super().__init__(f"{message} in type {text!r} at offset {position}")


@dataclass(frozen=True)
class Primitive:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Decimal:
    precision: int = 10
    scale: int = 0

    def __str__(self) -> str:
        return f"decimal({self.precision},{self.scale})"


@dataclass(frozen=True)
class Array:
    element: DataType

    def __str__(self) -> str:
        return f"array<{self.element}>"


@dataclass(frozen=True)
class Map:
    key: DataType
    value: DataType

    def __str__(self) -> str:
        return f"map<{self.key},{self.value}>"


@dataclass(frozen=True)
class Field:
    name: str
    type: DataType
    nullable: bool = True

    def __str__(self) -> str:
        name = self.name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.name) else f"`{self.name}`"
        return f"{name}:{self.type}" + ("" if self.nullable else " not null")


@dataclass(frozen=True)
class Struct:
    fields: tuple[Field, ...]

    def __str__(self) -> str:
        return "struct<" + ",".join(str(f) for f in self.fields) + ">"


DataType = Primitive | Decimal | Array | Map | Struct

_TOKEN = re.compile(r"\s*(?:(`(?:[^`]|``)*`)|([A-Za-z_][A-Za-z0-9_]*)|(\d+)|([<>(),:]))")


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens: list[tuple[str, int]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if not m:
                raise TypeParseError(f"unexpected character {text[pos:].lstrip()[0]!r}", text, pos)
            tok = m.group(1) or m.group(2) or m.group(3) or m.group(4)
            self.tokens.append((tok, m.start(m.lastindex or 0)))
            pos = m.end()
        self.i = 0

    def peek(self) -> str | None:
        return self.tokens[self.i][0] if self.i < len(self.tokens) else None

    def pos(self) -> int:
        return self.tokens[self.i][1] if self.i < len(self.tokens) else len(self.text)

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None:
            raise TypeParseError(f"expected {expected!r}, found end" if expected else "unexpected end", self.text, self.pos())
        if expected is not None and tok.lower() != expected:
            raise TypeParseError(f"expected {expected!r}, found {tok!r}", self.text, self.pos())
        self.i += 1
        return tok

    def parse(self) -> DataType:
        dt = self.type_()
        if self.peek() is not None:
            raise TypeParseError(f"unexpected {self.peek()!r}", self.text, self.pos())
        return dt

    def int_(self) -> int:
        at = self.pos()
        tok = self.take()
        if not tok.isdigit():
            raise TypeParseError(f"expected a number, found {tok!r}", self.text, at)
        return int(tok)

    def type_(self) -> DataType:
        at = self.pos()
        name = self.take().lower()
        if name in ("decimal", "dec", "numeric"):
            if self.peek() != "(":
                return Decimal()
            self.take("(")
            precision = self.int_()
            scale = 0
            if self.peek() == ",":
                self.take(",")
                scale = self.int_()
            self.take(")")
            if not 1 <= precision <= MAX_DECIMAL_PRECISION:
                raise TypeParseError(f"decimal precision must be 1..{MAX_DECIMAL_PRECISION}", self.text, at)
            if scale > precision:
                raise TypeParseError("decimal scale must not exceed precision", self.text, at)
            return Decimal(precision, scale)
        if name in ("varchar", "char") and self.peek() == "(":
            self.take("(")
            self.int_()
            self.take(")")
            return Primitive("string")
        if name == "array":
            self.take("<")
            element = self.type_()
            self.take(">")
            return Array(element)
        if name == "map":
            self.take("<")
            key = self.type_()
            self.take(",")
            value = self.type_()
            self.take(">")
            return Map(key, value)
        if name == "struct":
            self.take("<")
            fields: list[Field] = []
            while self.peek() != ">":
                if fields:
                    self.take(",")
                fat = self.pos()
                fname = self.take()
                if fname.startswith("`"):
                    fname = fname[1:-1].replace("``", "`")
                elif not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", fname):
                    raise TypeParseError(f"expected a field name, found {fname!r}", self.text, fat)
                if fname in {f.name for f in fields}:
                    raise TypeParseError(f"duplicate struct field {fname!r}", self.text, fat)
                self.take(":")
                ftype = self.type_()
                nullable = True
                if (self.peek() or "").lower() == "not":
                    self.take("not")
                    self.take("null")
                    nullable = False
                fields.append(Field(fname, ftype, nullable))
            self.take(">")
            return Struct(tuple(fields))
        if name in PRIMITIVES:
            return Primitive(PRIMITIVES[name])
        raise TypeParseError(f"unknown type {name!r}", self.text, at)


def parse_type(text: str) -> DataType:
    """Parse a Spark SQL type string (case-insensitive, aliases allowed) into a type tree."""
    if not isinstance(text, str) or not text.strip():
        raise TypeParseError("empty type", str(text), 0)
    return _Parser(text).parse()


def canonical(text: str) -> str:
    """The canonical spelling of a type string: `BIGINT` -> `long`, `DECIMAL(12, 2)` -> `decimal(12,2)`."""
    return str(parse_type(text))


def is_widening(old: DataType, new: DataType) -> bool:
    """Whether values of `old` can be read as `new` without loss (Hudi's schema-evolution rules)."""
    if old == new:
        return True
    if isinstance(old, Primitive) and isinstance(new, Primitive):
        order = {"byte": 0, "short": 1, "int": 2, "long": 3}
        if old.name in order and new.name in order:
            return order[old.name] <= order[new.name]
        return (old.name, new.name) in {("float", "double"), ("int", "double"), ("long", "double"), ("int", "float")}
    if isinstance(old, Decimal) and isinstance(new, Decimal):
        return new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale
    if isinstance(old, Array) and isinstance(new, Array):
        return is_widening(old.element, new.element)
    if isinstance(old, Map) and isinstance(new, Map):
        return old.key == new.key and is_widening(old.value, new.value)
    if isinstance(old, Struct) and isinstance(new, Struct):
        new_fields = {f.name: f for f in new.fields}
        return all(f.name in new_fields and is_widening(f.type, new_fields[f.name].type) for f in old.fields) and all(
            f.nullable for f in new.fields if f.name not in {o.name for o in old.fields})
    return False


def stored(dt: DataType) -> DataType:
    """The type a Hudi table stores for `dt`: Avro has no byte or short, so they are kept as int."""
    if isinstance(dt, Primitive) and dt.name in ("byte", "short"):
        return Primitive("int")
    if isinstance(dt, Array):
        return Array(stored(dt.element))
    if isinstance(dt, Map):
        return Map(stored(dt.key), stored(dt.value))
    if isinstance(dt, Struct):
        return Struct(tuple(Field(f.name, stored(f.type), f.nullable) for f in dt.fields))
    return dt

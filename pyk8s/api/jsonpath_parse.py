"""The parser of kubectl's JSONPath templates (upstream: client-go util/jsonpath parser.go and node.go): the
parse tree, and upstream's messages for a malformed template. Evaluation is in pyk8s.api.jsonpath."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any


class JSONPathError(ValueError):
    """A template that does not parse, or that cannot be evaluated over the given data; the message is upstream's."""


# -- the parse tree (node names and String() forms are upstream's, for comparing trees) ---------------------


@dataclass(eq=False, slots=True)
class ListNode:
    nodes: list[Any]

    def __str__(self) -> str:
        return "NodeList"


@dataclass(frozen=True, slots=True)
class TextNode:
    text: str

    def __str__(self) -> str:
        return f"NodeText: {self.text}"


@dataclass(frozen=True, slots=True)
class FieldNode:
    name: str

    def __str__(self) -> str:
        return f"NodeField: {self.name}"


@dataclass(frozen=True, slots=True)
class IdentifierNode:
    name: str

    def __str__(self) -> str:
        return f"NodeIdentifier: {self.name}"


@dataclass(frozen=True, slots=True)
class ArrayNode:
    """start, end, step, each (value, known, derived); `[i]` has a derived end of i+1."""

    params: tuple[tuple[int, bool, bool], ...]

    def __str__(self) -> str:
        inner = " ".join(f"{{{v} {str(k).lower()} {str(d).lower()}}}" for v, k, d in self.params)
        return f"NodeArray: [{inner}]"


@dataclass(frozen=True, slots=True)
class FilterNode:
    left: ListNode
    right: ListNode
    operator: str

    def __str__(self) -> str:
        return f"NodeFilter: {self.left} {self.operator} {self.right}"


@dataclass(frozen=True, slots=True)
class IntNode:
    value: int

    def __str__(self) -> str:
        return f"NodeInt: {self.value}"


@dataclass(frozen=True, slots=True)
class FloatNode:
    value: float

    def __str__(self) -> str:
        return f"NodeFloat: {self.value:f}"


@dataclass(frozen=True, slots=True)
class BoolNode:
    value: bool

    def __str__(self) -> str:
        return f"NodeBool: {str(self.value).lower()}"


@dataclass(frozen=True, slots=True)
class WildcardNode:
    def __str__(self) -> str:
        return "NodeWildcard"


@dataclass(frozen=True, slots=True)
class RecursiveNode:
    def __str__(self) -> str:
        return "NodeRecursive"


@dataclass(frozen=True, slots=True)
class UnionNode:
    lists: tuple[ListNode, ...]

    def __str__(self) -> str:
        return "NodeUnion"


# -- the parser ------------------------------------------------------------------------------------------

_DICT_KEY = re.compile(r"'([^']*)'")
_SLICE = re.compile(r"(-?[0-9]*)(:-?[0-9]*)?(:-?[0-9]*)?")
_COMPARISON = re.compile(r"([^!<>=]+)([!<>=]+)(.+?)")
_GO_INT = re.compile(r"[+-]?[0-9]+")
_GO_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)")
_INT64 = (-(2**63), 2**63 - 1)
_TERMINATORS = frozenset(" \t\r\n.,[]$@{}")
_SIMPLE_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92}
_HEX_WIDTH = {"x": 2, "u": 4, "U": 8}


def _is_terminator(r: str) -> bool:
    return r == "" or r in _TERMINATORS


def _is_digit(r: str) -> bool:
    return r != "" and r.isdecimal()


def _is_alphanumeric(r: str) -> bool:
    return r == "_" or (r != "" and (r.isalpha() or r.isdecimal()))


def _go_rune(r: str) -> str:
    """Go's %#U."""
    return f"U+{ord(r):04X} '{r}'" if r.isprintable() else f"U+{ord(r):04X}"


def _unquote(s: str) -> str:
    """strconv.Unquote extended to single quotes (upstream: UnquoteExtend); ValueError("invalid syntax")."""
    bad = ValueError("invalid syntax")
    if len(s) < 2 or s[0] != s[-1] or s[0] not in "\"'":
        raise bad
    quote, body = s[0], s[1:-1]
    if "\\" not in body and quote not in body:
        return body
    out = bytearray()
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c == quote:
            raise bad
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        if i + 1 >= n:
            raise bad
        e = body[i + 1]
        i += 2
        if e in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[e])
        elif e in _HEX_WIDTH:
            digits = body[i : i + _HEX_WIDTH[e]]
            if len(digits) < _HEX_WIDTH[e] or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise bad
            v = int(digits, 16)
            i += len(digits)
            if e == "x":
                out.append(v)  # a single byte, possibly not UTF-8
            elif v > 0x10FFFF or 0xD800 <= v < 0xE000:
                raise bad
            else:
                out += chr(v).encode()
        elif e in "01234567":
            digits = body[i - 1 : i + 2]
            if len(digits) < 3 or any(d not in "01234567" for d in digits):
                raise bad
            v = int(digits, 8)
            if v > 255:
                raise bad
            out.append(v)
            i += 2
        elif e in "'\"" and e == quote:
            out.append(ord(e))
        else:
            raise bad
    return out.decode("utf-8", "surrogateescape")


class _Parser:
    def __init__(self, text: str) -> None:
        self.input = text
        self.pos = 0
        self.start = 0
        self.width = 0
        self.root = ListNode([])

    def consume(self) -> str:
        value = self.input[self.start : self.pos]
        self.start = self.pos
        return value

    def next(self) -> str:
        """The next character, or "" at the end of the input."""
        if self.pos >= len(self.input):
            self.width = 0
            return ""
        self.width = 1
        self.pos += 1
        return self.input[self.pos - 1]

    def backup(self) -> None:
        self.pos -= self.width

    def peek(self) -> str:
        r = self.next()
        self.backup()
        return r

    def parse(self) -> ListNode:
        # Upstream recurses once per token; this is the same state machine as a loop (text, then action).
        cur: ListNode | None = None
        while True:
            if cur is None:
                at = self.input.find("{", self.pos)
                self.pos = len(self.input) if at < 0 else at
                if self.pos > self.start:
                    self.root.nodes.append(TextNode(self.consume()))
                if at < 0:
                    return self.root
                self.pos += 1
                self.consume()
                cur = ListNode([])
                self.root.nodes.append(cur)
                continue
            rest = self.input[self.pos : self.pos + 3]
            if rest.startswith("}"):
                self.pos += 1
                self.consume()
                cur = None
                continue
            if rest == "[?(":
                self.parse_filter(cur)
                continue
            if rest.startswith(".."):
                self.parse_recursive(cur)
                continue
            r = self.next()
            if r in ("", "\r", "\n"):
                raise JSONPathError("unclosed action")
            if r in " @$":
                self.consume()  # spaces, and the current object `@`/`$`, are simply passed over
            elif r == "[":
                self.parse_array(cur)
            elif r in "\"'":
                self.parse_quote(cur, r)
            elif r == ".":
                self.parse_field(cur)
            elif r in "+-" or _is_digit(r):
                self.backup()
                self.parse_number(cur)
            elif _is_alphanumeric(r):
                self.backup()
                self.parse_identifier(cur)
            else:
                raise JSONPathError(f"unrecognized character in action: {_go_rune(r)}")

    def parse_identifier(self, cur: ListNode) -> None:
        while not _is_terminator(self.next()):
            pass
        self.backup()
        value = self.consume()
        cur.nodes.append(BoolNode(value == "true") if value in ("true", "false") else IdentifierNode(value))

    def parse_recursive(self, cur: ListNode) -> None:
        if cur.nodes and isinstance(cur.nodes[-1], RecursiveNode):
            raise JSONPathError("invalid multiple recursive descent")
        self.pos += 2
        self.consume()
        cur.nodes.append(RecursiveNode())
        if _is_alphanumeric(self.peek()):
            self.parse_field(cur)

    def parse_number(self, cur: ListNode) -> None:
        if self.peek() in ("+", "-"):
            self.next()
        while True:
            r = self.next()
            if r != "." and not _is_digit(r):
                self.backup()
                break
        value = self.consume()
        if _GO_INT.fullmatch(value) and _INT64[0] <= int(value) <= _INT64[1]:
            cur.nodes.append(IntNode(int(value)))
            return
        if _GO_FLOAT.fullmatch(value) and not math.isinf(float(value)):
            cur.nodes.append(FloatNode(float(value)))
            return
        raise JSONPathError(f"cannot parse number {value}")

    def parse_array(self, cur: ListNode) -> None:
        while True:
            r = self.next()
            if r in ("", "\n"):
                raise JSONPathError("unterminated array")
            if r == "]":
                break
        text = self.consume()[1:-1]
        if text == "*":
            text = ":"
        parts = text.split(",")
        if len(parts) > 1:
            cur.nodes.append(UnionNode(tuple(_parse_action(f"[{p.strip(' ')}]") for p in parts)))
            return
        key = _DICT_KEY.fullmatch(text)
        if key:
            # `['a.b']` is read as `.a.b`: the dots inside still separate fields, as upstream does.
            cur.nodes.extend(_parse_action(f".{key[1]}").nodes)
            return
        m = _SLICE.fullmatch(text)
        if m is None:
            raise JSONPathError(f"invalid array index {text}")
        params: list[tuple[int, bool, bool]] = []
        for i, group in enumerate(m.groups()):
            raw = group or ""
            if raw:
                if i > 0:
                    raw = raw[1:]
                if i > 0 and raw == "":
                    params.append((0, False, False))
                elif raw == "-" or not _INT64[0] <= int(raw) <= _INT64[1]:
                    raise JSONPathError(f"array index {raw} is not a number")
                else:
                    params.append((int(raw), True, False))
            elif i == 1:
                params.append((params[0][0] + 1, True, True))
            else:
                params.append((0, False, False))
        cur.nodes.append(ArrayNode(tuple(params)))

    def parse_filter(self, cur: ListNode) -> None:
        self.pos += 3
        self.consume()
        begin = end = False
        pair = ""
        while True:
            r = self.next()
            if r in ("", "\n"):
                raise JSONPathError("unterminated filter")
            if r in "\"'":
                if not begin:
                    begin, pair = True, r
                    continue
                if self.input[self.pos - 2] != "\\" and r == pair:
                    end = True
            elif r == ")" and begin == end:
                # a `)` inside a quoted operand does not close the filter
                break
        if self.next() != "]":
            raise JSONPathError("unclosed array expect ]")
        text = self.consume()[:-2]
        m = _COMPARISON.fullmatch(text)
        if m is None:
            cur.nodes.append(FilterNode(_parse_action(text), ListNode([]), "exists"))
        else:
            cur.nodes.append(FilterNode(_parse_action(m[1]), _parse_action(m[3]), m[2]))

    def parse_quote(self, cur: ListNode, end: str) -> None:
        while True:
            r = self.next()
            if r in ("", "\n"):
                raise JSONPathError("unterminated quoted string")
            if r == end and self.input[self.pos - 2] != "\\":
                break
        value = self.consume()
        try:
            cur.nodes.append(TextNode(_unquote(value)))
        except ValueError as err:
            raise JSONPathError(f"unquote string {value} error {err}") from None

    def parse_field(self, cur: ListNode) -> None:
        self.consume()
        while True:
            r = self.next()
            if r == "\\":
                self.next()
            elif _is_terminator(r):
                self.backup()
                break
        value = self.consume()
        cur.nodes.append(WildcardNode() if value == "*" else FieldNode(value.replace("\\", "")))


def _parse_action(text: str) -> ListNode:
    """The node list of one action's inside (a filter operand, a union member, a bracketed key)."""
    return _Parser("{" + text + "}").parse().nodes[0]


def parse_template(template: str) -> ListNode:
    """The parse tree of `template`: its top-level pieces (text, and one ListNode per `{...}` action)."""
    return _Parser(template).parse()

"""Label and field selectors: parse their string forms, build them from LabelSelector objects, match.

Label selectors follow upstream's grammar (apimachinery/pkg/labels/selector.go): comma-separated
requirements `key`, `!key`, `key=v`, `key==v`, `key!=v`, `key in (a,b)`, `key notin (a,b)`, `key>n`, `key<n`.
Field selectors (apimachinery/pkg/fields) are `field=v`, `field==v`, `field!=v`, with `\\` escapes; which
fields a resource supports is the registry's business.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .errors import GoStrings, aggregate, go_quote, invalid
from .validation import is_label_value, is_qualified_name


class SelectorError(ValueError):
    """A selector that does not parse or names something invalid (400 BadRequest)."""


EXISTS, DOES_NOT_EXIST, IN, NOT_IN, EQUALS, NOT_EQUALS, GT, LT = (
    "exists", "!", "in", "notin", "=", "!=", "gt", "lt",
)  # fmt: skip


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.op
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        value = labels.get(self.key)
        if op in (IN, EQUALS):
            return value is not None and value in self.values
        if op in (NOT_IN, NOT_EQUALS):
            return value is None or value not in self.values
        if value is None:
            return False
        try:
            have, want = int(value), int(self.values[0])
        except ValueError:
            return False
        return have > want if op == GT else have < want

    def __str__(self) -> str:
        if self.op == EXISTS:
            return self.key
        if self.op == DOES_NOT_EXIST:
            return "!" + self.key
        if self.op in (IN, NOT_IN):
            return f"{self.key} {self.op} ({','.join(self.values)})"
        sym = {EQUALS: "=", NOT_EQUALS: "!=", GT: ">", LT: "<"}[self.op]
        return f"{self.key}{sym}{self.values[0]}"


@dataclass(frozen=True)
class LabelSelector:
    """A conjunction of requirements; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False  # a selector that matches nothing (a nil LabelSelector in some APIs)
    # When every requirement is `key=value` (matchLabels, the common case): those pairs, so that matching a dict of
    # labels is one subset test of its items. Controllers match every pod they own against their selector at each
    # sync, so this is worth keeping.
    _pairs: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.nothing and all(r.op in (EQUALS, IN) and len(r.values) == 1 for r in self.requirements):
            pairs = {r.key: r.values[0] for r in self.requirements}
            if len(pairs) == len(self.requirements):  # `a=1,a=2` stays with the requirements: it matches nothing
                object.__setattr__(self, "_pairs", pairs.items())

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.nothing:
            return False
        labels = labels or {}
        if self._pairs is not None and isinstance(labels, dict):
            return bool(self._pairs <= labels.items())
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements and not self.nothing

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


EVERYTHING = LabelSelector()
NOTHING = LabelSelector(nothing=True)

_SPECIAL = set("=!(),><")
_WS = set(" \t\r\n")
_OPERATOR_TOKENS = {
    "!": "!",
    "!=": "!=",
    "=": "=",
    "==": "==",
    ">": ">",
    "<": "<",
    "(": "(",
    ")": ")",
    ",": ",",
}


def _lex(s: str) -> list[tuple[str, str]]:
    """Tokens as (kind, literal); kind is "id" for identifiers and keywords, else the operator itself."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(s)
    while True:
        while i < n and s[i] in _WS:
            i += 1
        if i >= n:
            out.append(("end", ""))
            return out
        if s[i] in _SPECIAL:
            buf, best, best_end = "", None, i
            j = i
            while j < n and s[j] in _SPECIAL:
                buf += s[j]
                j += 1
                if buf in _OPERATOR_TOKENS:
                    best, best_end = buf, j
                elif best is not None:
                    break
            if best is None:
                raise SelectorError(f"unable to parse requirement: error expected: keyword found '{buf}'")
            out.append((best, best))
            i = best_end
        else:
            j = i
            while j < n and s[j] not in _SPECIAL and s[j] not in _WS:
                j += 1
            word = s[i:j]
            out.append(({"in": "in", "notin": "notin"}.get(word, "id"), word))
            i = j


class _Parser:
    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.pos = 0

    def peek(self, values: bool = True) -> tuple[str, str]:
        kind, lit = self.items[self.pos]
        if values and kind in ("in", "notin"):
            kind = "id"
        return kind, lit

    def take(self, values: bool = True) -> tuple[str, str]:
        item = self.peek(values)
        self.pos += 1
        return item

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            kind, lit = self.peek()
            if kind == "end":
                return reqs
            if kind not in ("id", "!"):
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                reqs.append(self.requirement())
            except SelectorError as err:
                raise SelectorError(f"unable to parse requirement: {err}") from None
            kind, lit = self.take()
            if kind == "end":
                return reqs
            if kind != ",":
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            k2, l2 = self.peek()
            if k2 not in ("id", "!"):
                raise SelectorError(f"found '{l2}', expected: identifier after ','")

    def requirement(self) -> Requirement:
        negate = False
        kind, lit = self.take()
        if kind == "!":
            negate = True
            kind, lit = self.take()
        if kind != "id":
            raise SelectorError(f"found '{lit}', expected: identifier")
        key = lit
        problems = is_qualified_name(key)
        if problems:
            raise SelectorError(f"key: Invalid value: {key!r}: {'; '.join(problems)}")
        nxt, _ = self.peek()
        if nxt in ("end", ","):
            return Requirement(key, DOES_NOT_EXIST if negate else EXISTS)
        if negate:
            raise SelectorError(f"found '{self.peek()[1]}', expected: ',' or 'end of string'")
        kind, lit = self.take(values=False)
        op = {"in": IN, "notin": NOT_IN, "=": EQUALS, "==": EQUALS, "!=": NOT_EQUALS, ">": GT, "<": LT}.get(kind)
        if op is None:
            raise SelectorError(f"found '{lit}', expected: in, notin, =, ==, !=, gt, lt")
        values = self.set_values() if op in (IN, NOT_IN) else self.exact_value()
        for v in values:
            problems = is_label_value(v)
            if problems:
                raise SelectorError(f"values[0][{key}]: Invalid value: {v!r}: {'; '.join(problems)}")
        if op in (GT, LT):
            try:
                int(values[0])
            except ValueError:
                detail = "for 'Gt', 'Lt' operators, the value must be an integer"
                raise SelectorError(f"values[0]: Invalid value: {values[0]!r}: {detail}") from None
        return Requirement(key, op, tuple(sorted(set(values))))

    def exact_value(self) -> list[str]:
        kind, _ = self.peek()
        if kind in ("end", ","):
            return [""]
        kind, lit = self.take()
        if kind != "id":
            raise SelectorError(f"found '{lit}', expected: identifier")
        return [lit]

    def set_values(self) -> list[str]:
        kind, lit = self.take()
        if kind != "(":
            raise SelectorError(f"found '{lit}' expected: '('")
        values: list[str] = []
        kind, lit = self.peek()
        if kind == ")":
            self.take()
            return [""]
        expect_value = True
        while True:
            kind, lit = self.take()
            if kind == "id" and expect_value:
                values.append(lit)
                expect_value = False
            elif kind == ",":
                if expect_value:
                    values.append("")
                expect_value = True
            elif kind == ")":
                if expect_value:
                    values.append("")
                return values
            else:
                raise SelectorError(f"found '{lit}', expected: ',' or ')'")


def parse_label_selector(text: str | None) -> LabelSelector:
    """The selector a `labelSelector=` query parameter describes (empty: everything)."""
    if not text or not text.strip():
        return EVERYTHING
    reqs = _Parser(text).parse()
    return LabelSelector(tuple(sorted(reqs, key=lambda r: r.key)))


def label_selector_from_object(obj: Any, path: str = "selector") -> LabelSelector:
    """A `metav1.LabelSelector` (matchLabels, matchExpressions) as a LabelSelector (upstream:
    LabelSelectorAsSelector).

    A missing selector (None) matches nothing, an empty one everything. Raises SelectorError with upstream's
    message for the first requirement that is invalid (`path` only names a value that is not an object).
    """
    if obj is None:
        return NOTHING
    if not isinstance(obj, dict):
        raise SelectorError(f"{path}: must be an object")
    reqs: list[Requirement] = []
    for k, v in sorted((obj.get("matchLabels") or {}).items()):
        reqs.append(_requirement(k, EQUALS, [str(v)]))
    for i, expr in enumerate(obj.get("matchExpressions") or []):
        if not isinstance(expr, dict):
            raise SelectorError(f"{path}.matchExpressions[{i}]: must be an object")
        op = expr.get("operator", "")
        mapped = _OBJECT_OPERATORS.get(op)
        if mapped is None:
            raise SelectorError(f"{go_quote(str(op))} is not a valid label selector operator")
        reqs.append(_requirement(expr.get("key", ""), mapped, [str(v) for v in expr.get("values") or ()]))
    return LabelSelector(tuple(sorted(reqs, key=lambda r: r.key)))


_OBJECT_OPERATORS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}


# Pods' selectors repeat the same few keys and values; the scheduler parses them on every cycle.
@lru_cache(maxsize=4096)
def _key_problems(key: str) -> tuple[str, ...]:
    return tuple(is_qualified_name(key))


@lru_cache(maxsize=4096)
def _value_problems(value: str) -> tuple[str, ...]:
    return tuple(is_label_value(value))


def _requirement(key: str, op: str, values: list[str]) -> Requirement:
    """One requirement checked as upstream's labels.NewRequirement checks it."""
    counted = bool(values) if op in (IN, NOT_IN) else not values if op in (EXISTS, DOES_NOT_EXIST) else True
    if counted and not _key_problems(key) and not any(_value_problems(v) for v in values):
        return Requirement(key, op, tuple(sorted(set(values))))
    raise SelectorError(_requirement_error(key, op, values))


def _requirement_error(key: str, op: str, values: list[str]) -> str:
    """Every problem of an invalid requirement in one aggregated error; with no field path given (as
    LabelSelectorAsSelector gives none) the errors name `key`, `values` and `values[i][key]`."""
    errs: list[str] = []
    problems = _key_problems(key)
    if problems:
        errs.append(str(invalid("key", key, "; ".join(problems))))
    if op in (IN, NOT_IN) and not values:
        # Upstream copies the values into a fresh slice, which is nil when there are none.
        errs.append(str(invalid("values", GoStrings(None), "for 'in', 'notin' operators, values set can't be empty")))
    elif op in (EXISTS, DOES_NOT_EXIST) and values:
        detail = "values set must be empty for exists and does not exist"
        errs.append(str(invalid("values", GoStrings(values), detail)))
    for i, v in enumerate(values):
        problems = _value_problems(v)
        if problems:
            errs.append(str(invalid(f"values[{i}][{key}]", v, "; ".join(problems))))
    return aggregate(errs)


# -- field selectors ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    op: str  # EQUALS or NOT_EQUALS
    value: str

    def matches(self, fields: Mapping[str, str]) -> bool:
        have = fields.get(self.field, "")
        return have == self.value if self.op == EQUALS else have != self.value


@dataclass(frozen=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all(r.matches(fields) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def fields(self) -> set[str]:
        return {r.field for r in self.requirements}

    def exact(self, field: str) -> str | None:
        """The value `field` must equal, if the selector pins it (used to narrow a list to one key)."""
        for r in self.requirements:
            if r.field == field and r.op == EQUALS:
                return r.value
        return None


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, buf, escaped = [], [], False
    for ch in text:
        if escaped:
            buf.append("\\" + ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == sep:
            parts.append("".join(buf))
            buf = []
        else:
            buf.append(ch)
    if escaped:
        buf.append("\\")
    parts.append("".join(buf))
    return parts


def _unescape(value: str) -> str:
    out, i = [], 0
    while i < len(value):
        ch = value[i]
        if ch == "\\":
            if i + 1 >= len(value):
                raise SelectorError(f"invalid field selector: {value}: unterminated escape")
            nxt = value[i + 1]
            if nxt not in "\\,=":
                raise SelectorError(f"invalid field selector: {value}: invalid escape sequence: \\{nxt}")
            out.append(nxt)
            i += 2
        else:
            if ch in ",=":
                raise SelectorError(f"invalid field selector: {value}: unescaped {ch}")
            out.append(ch)
            i += 1
    return "".join(out)


def parse_field_selector(text: str | None) -> FieldSelector:
    """The selector a `fieldSelector=` query parameter describes (empty: everything)."""
    if not text or not text.strip():
        return FieldSelector()
    reqs: list[FieldRequirement] = []
    for part in _split_unescaped(text, ","):
        if not part:
            continue
        for sym, op in (("!=", NOT_EQUALS), ("==", EQUALS), ("=", EQUALS)):
            idx = _find_unescaped(part, sym)
            if idx >= 0:
                field, value = part[:idx], part[idx + len(sym) :]
                reqs.append(FieldRequirement(field.strip(), op, _unescape(value)))
                break
        else:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
    return FieldSelector(tuple(reqs))


def _find_unescaped(text: str, sym: str) -> int:
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(sym, i):
            return i
        i += 1
    return -1

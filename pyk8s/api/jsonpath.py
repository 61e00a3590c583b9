"""kubectl's JSONPath templates over JSON values (upstream: client-go util/jsonpath): the syntax, the results and the
printed text a real cluster produces, e.g. for a CRD's additionalPrinterColumns and `kubectl -o jsonpath`.

`parse(name, template)` compiles a template once (raising `JSONPathError` with upstream's message); the returned
`JSONPath` keeps no state between runs and can be run over any number of objects: `find_results` gives one list of values per
template piece, `execute` the text kubectl prints. Values are plain JSON (dict, list, str, int, float, bool, None).
The parser and parse tree are in pyk8s.api.jsonpath_parse.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from .gofmt import go_json
from .jsonpath_parse import (
    ArrayNode,
    BoolNode,
    FieldNode,
    FilterNode,
    FloatNode,
    IdentifierNode,
    IntNode,
    JSONPathError,
    ListNode,
    RecursiveNode,
    TextNode,
    UnionNode,
    WildcardNode,
    parse_template,
)

__all__ = [
    "NO_VALUE",
    "ArrayNode",
    "BoolNode",
    "FieldNode",
    "FilterNode",
    "FloatNode",
    "IdentifierNode",
    "IntNode",
    "JSONPath",
    "JSONPathError",
    "ListNode",
    "RecursiveNode",
    "TextNode",
    "UnionNode",
    "WildcardNode",
    "parse",
]


class _NoValue:
    """Go's invalid reflect.Value: what a range body or a printer sees for a null it re-wraps (printed `<no value>`),
    as opposed to a null read out of a map or list (printed `null`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_VALUE"


NO_VALUE: Any = _NoValue()


def parse(name: str, template: str, *, allow_missing_keys: bool = False) -> JSONPath:
    """Compile `template` (text with `{...}` actions); JSONPathError with upstream's message if it is malformed."""
    return JSONPath(name, parse_template(template), allow_missing_keys=allow_missing_keys)


# -- Go's printing and comparison of values ----------------------------------------------------------------


def _go_float(f: float) -> str:
    """Go's %v of a float64 (strconv 'g' with the shortest digits)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    sign = "-" if f < 0 else ""
    t = Decimal(repr(abs(f))).as_tuple()
    digits = "".join(map(str, t.digits)).lstrip("0")
    exponent = int(t.exponent) + (len(digits) - len(digits.rstrip("0")))
    digits = digits.rstrip("0")
    point = len(digits) + exponent  # the decimal point's place relative to the digits
    exp10 = point - 1
    if exp10 < -4 or exp10 >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _go_value(v: Any) -> str:
    """Go's %v of a decoded JSON value (maps with sorted keys)."""
    if v is None:
        return "<nil>"
    if v is NO_VALUE:
        return "<invalid reflect.Value>"
    if v is True or v is False:
        return "true" if v else "false"
    if isinstance(v, float):
        return _go_float(v)
    if isinstance(v, dict):
        return "map[" + " ".join(f"{k}:{_go_value(v[k])}" for k in sorted(v)) + "]"
    if isinstance(v, list):
        return "[" + " ".join(_go_value(x) for x in v) + "]"
    return str(v)


def _go_type(v: Any) -> str:
    """The Go type of a value decoded into interface{}, as upstream names it in errors."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int64"
    if isinstance(v, float):
        return "float64"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dict):
        return "map[string]interface {}"
    return "[]interface {}"


def _text(v: Any) -> str:
    if v is NO_VALUE:
        return "<no value>"
    if v is None:
        return "null"
    if v is True or v is False:
        return "true" if v else "false"
    if isinstance(v, float):
        return _go_float(v)
    return str(v)


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "string"
    raise _WalkError("invalid type for comparison", [])


def _less(a: Any, b: Any) -> bool:
    ka, kb = _kind(a), _kind(b)
    if ka != kb:
        raise _WalkError("incompatible types for comparison", [])
    if ka == "bool":
        raise _WalkError("invalid type for comparison", [])
    return a < b


def _equal(a: Any, b: Any) -> bool:
    if _kind(a) != _kind(b):
        raise _WalkError("incompatible types for comparison", [])
    return a == b


def _compare(op: str, a: Any, b: Any) -> bool:
    # Built like Go's text/template: <= is "< or ==", > is "not <=", >= is "not <".
    if op == "==":
        return _equal(a, b)
    if op == "!=":
        return not _equal(a, b)
    if op == "<":
        return _less(a, b)
    if op == ">=":
        return not _less(a, b)
    le = _less(a, b) or _equal(a, b)
    return le if op == "<=" else not le


# -- evaluation ------------------------------------------------------------------------------------------


class _WalkError(Exception):
    """An evaluation error with the values upstream's step returns beside it (an existence filter looks at them)."""

    def __init__(self, message: str, partial: list[Any]) -> None:
        super().__init__(message)
        self.message = message
        self.partial = partial


class JSONPath:
    """A compiled template. `allow_missing_keys` turns `<name> is not found` into an empty result."""

    __slots__ = ("allow_missing_keys", "name", "root")

    def __init__(self, name: str, root: ListNode, *, allow_missing_keys: bool = False) -> None:
        self.name = name
        self.root = root
        self.allow_missing_keys = allow_missing_keys

    def find_results(self, data: Any) -> list[list[Any]]:
        """One list of values per top-level piece of the template (text, action, or range iteration piece)."""
        try:
            return _Run(self.root.nodes, self.allow_missing_keys).find(data, 0)
        except _WalkError as err:
            raise JSONPathError(err.message) from None

    def print_results(self, results: list[Any]) -> str:
        """One result list as upstream prints it: maps and lists as Go's compact JSON, scalars as Go prints them
        (`null` for a JSON null, `<no value>` for NO_VALUE), separated by single spaces."""
        return " ".join(go_json(r) if isinstance(r, dict | list) else _text(r) for r in results)

    def execute(self, data: Any) -> str:
        """The text the template renders over `data`."""
        return "".join(self.print_results(r) for r in self.find_results(data))


class _Run:
    """One evaluation: upstream keeps its range/end bookkeeping on the JSONPath; here it lives per run so a
    compiled template stays reusable (and safe to share) across objects."""

    __slots__ = ("allow_missing", "begin_range", "end_range", "in_range", "last_end", "nodes")

    def __init__(self, nodes: list[Any], allow_missing: bool) -> None:
        self.nodes = nodes
        self.allow_missing = allow_missing
        self.begin_range = self.in_range = self.end_range = 0
        self.last_end = -1

    def find(self, data: Any, start: int) -> list[list[Any]]:
        # `start` is the offset of this (range body) suffix in the template's top-level pieces; an `end` is
        # remembered by its absolute offset so the enclosing range can resume after it.
        cur = [NO_VALUE if data is None else data]
        nodes = self.nodes
        full: list[list[Any]] = []
        i = start
        while i < len(nodes):
            results = self.walk(cur, nodes[i])
            if 0 < self.end_range <= self.in_range:
                self.end_range -= 1
                self.last_end = i
                break
            if self.begin_range > 0:
                self.begin_range -= 1
                self.in_range += 1
                if results:
                    for value in results:
                        full.extend(self.find(value, i + 1))
                else:
                    # still walk the body so the matching `end` is found
                    self.find(None, i + 1)
                self.in_range -= 1
                if i < self.last_end < len(nodes):
                    i = self.last_end
                i += 1
                continue
            full.append(results)
            i += 1
        return full

    def walk(self, values: list[Any], node: Any) -> list[Any]:
        return _WALKERS[type(node)](self, values, node)

    def walk_text(self, values: list[Any], node: TextNode) -> list[Any]:
        return [node.text]

    def walk_list(self, values: list[Any], node: ListNode) -> list[Any]:
        for n in node.nodes:
            values = self.walk(values, n)
        return values

    def walk_constant(self, values: list[Any], node: IntNode | FloatNode | BoolNode) -> list[Any]:
        return [node.value] * len(values)

    def walk_identifier(self, values: list[Any], node: IdentifierNode) -> list[Any]:
        if node.name == "range":
            self.begin_range += 1
            return values
        if node.name == "end":
            if self.in_range > 0:
                self.end_range += 1
                return []
            raise _WalkError("not in range, nothing to end", [])
        raise _WalkError(f"unrecognized identifier {node.name}", values)

    def walk_field(self, values: list[Any], node: FieldNode) -> list[Any]:
        if not values:
            return []
        name = node.name
        out = [v[name] for v in values if isinstance(v, dict) and name in v]
        if not out and not self.allow_missing:
            raise _WalkError(f"{name} is not found", [])
        return out

    def walk_array(self, values: list[Any], node: ArrayNode) -> list[Any]:
        out: list[Any] = []
        (start, start_known, _), (end, end_known, end_derived), (step, step_known, _) = node.params
        for v in values:
            if v is None:
                continue
            if v is NO_VALUE:
                raise _WalkError("reflect: call of reflect.Value.Type on zero Value", values)
            if not isinstance(v, list):
                raise _WalkError(f"{_go_type(v)} is not array or slice", values)
            n = len(v)
            s = start if start_known else 0
            if s < 0:
                s += n
            e = end if end_known else n
            if e < 0 or (e == 0 and end_derived):
                e += n
            if e == s:
                # an empty selection ends the whole step, even for the remaining inputs (as upstream)
                return out
            if s >= n or s < 0:
                raise _WalkError(f"array index out of bounds: index {s}, length {n}", values)
            if e > n or e < 0:
                raise _WalkError(f"array index out of bounds: index {e - 1}, length {n}", values)
            if s > e:
                raise _WalkError(f"starting index {s} is greater than ending index {e}", values)
            if step_known and step <= 0:
                raise _WalkError("step must be > 0", values)
            out.extend(v[s:e:step] if step_known else v[s:e])
        return out

    def walk_union(self, values: list[Any], node: UnionNode) -> list[Any]:
        out: list[Any] = []
        for member in node.lists:
            try:
                out.extend(self.walk_list(values, member))
            except _WalkError as err:
                raise _WalkError(err.message, values) from None
        return out

    def walk_wildcard(self, values: list[Any], node: WildcardNode) -> list[Any]:
        out: list[Any] = []
        for v in values:
            out.extend(_children(v))
        return out

    def walk_recursive(self, values: list[Any], node: RecursiveNode) -> list[Any]:
        # Pre-order: every value that has children, then its descendants; leaves are not themselves results.
        out: list[Any] = []
        stack = list(reversed(values))
        while stack:
            v = stack.pop()
            if isinstance(v, str):
                if v:
                    out.append(v)  # a string's children are its bytes, which have none
                continue
            children = _children(v)
            if children:
                out.append(v)
                stack.extend(reversed(children))
        return out

    def walk_filter(self, values: list[Any], node: FilterNode) -> list[Any]:
        out: list[Any] = []
        op = node.operator
        for v in values:
            if not isinstance(v, list):
                raise _WalkError(f"{_go_value(v)} is not array or slice and cannot be filtered", values)
            for item in v:
                failure: _WalkError | None = None
                try:
                    lefts = self.walk_list([item], node.left)
                except _WalkError as err:
                    lefts, failure = err.partial, err
                if op == "exists":
                    if lefts:
                        out.append(item)
                    continue
                if failure is not None:
                    raise _WalkError(failure.message, values)
                if not lefts:
                    continue
                if len(lefts) > 1:
                    raise _WalkError("can only compare one element at a time", values)
                try:
                    rights = self.walk_list([item], node.right)
                except _WalkError as err:
                    raise _WalkError(err.message, values) from None
                if not rights:
                    continue
                if len(rights) > 1:
                    raise _WalkError("can only compare one element at a time", values)
                if op not in ("==", "!=", "<", ">", "<=", ">="):
                    raise _WalkError(f"unrecognized filter operator {op}", out)
                try:
                    passed = _compare(op, lefts[0], rights[0])
                except _WalkError as err:
                    raise _WalkError(err.message, out) from None
                if passed:
                    out.append(item)
        return out


_WALKERS: dict[type, Any] = {
    ListNode: _Run.walk_list,
    TextNode: _Run.walk_text,
    FieldNode: _Run.walk_field,
    ArrayNode: _Run.walk_array,
    FilterNode: _Run.walk_filter,
    IntNode: _Run.walk_constant,
    FloatNode: _Run.walk_constant,
    BoolNode: _Run.walk_constant,
    WildcardNode: _Run.walk_wildcard,
    RecursiveNode: _Run.walk_recursive,
    UnionNode: _Run.walk_union,
    IdentifierNode: _Run.walk_identifier,
}


def _children(v: Any) -> list[Any]:
    if isinstance(v, dict):
        return list(v.values())
    if isinstance(v, list):
        return v
    if isinstance(v, str):
        return list(v.encode())  # Go indexes a string by bytes
    return []

"""The checked syntax tree of a compiled CEL expression, read from the `cel.expr.CheckedExpr` protobuf that the
CEL runtime serializes (cel-spec proto/cel/expr/checked.proto and syntax.proto), plus a conservative static cost
estimate over it (in the spirit of cel-go checker/cost.go, which upstream's apiserver pkg/cel/library/cost.go
extends). The runtime exposes no tree of its own, so the wire format is decoded here directly.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

# -- protobuf wire format -----------------------------------------------------------------------------------------

Fields = dict[int, list[Any]]


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7


def _fields(buf: bytes) -> Fields:
    """One message's fields by number; length-delimited values stay bytes, fixed64 values stay 8 raw bytes."""
    out: Fields = {}
    i, n = 0, len(buf)
    while i < n:
        tag, i = _varint(buf, i)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 2:
            size, i = _varint(buf, i)
            value, i = buf[i : i + size], i + size
        elif wire == 1:
            value, i = buf[i : i + 8], i + 8
        elif wire == 5:
            value, i = buf[i : i + 4], i + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        out.setdefault(number, []).append(value)
    return out


def _one(f: Fields, number: int, default: Any = None) -> Any:
    values = f.get(number)
    return values[-1] if values else default


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


# -- the tree -----------------------------------------------------------------------------------------------------


@dataclass
class Node:
    """One expression: `kind` is const, ident, select, call, list, map, struct or comprehension."""

    id: int
    kind: str
    name: str = ""  # ident name, selected field, called function; a constant's type (int, uint, string, ...)
    value: Any = None  # a constant's value; for select, whether it is has()
    target: Node | None = None  # select operand, member call receiver
    args: list[Node] = field(default_factory=list)  # call args, list elements, map/struct values
    # comprehensions: (iter_var, iter_range, accu_var, accu_init, loop_condition, loop_step, result)
    iter_var: str = ""
    accu_var: str = ""
    parts: dict[str, Node] = field(default_factory=dict)


def _const(f: Fields) -> Any:
    if 2 in f:
        return bool(_one(f, 2))
    if 3 in f:
        return _signed(_one(f, 3))
    if 4 in f:
        return _one(f, 4)
    if 5 in f:
        return struct.unpack("<d", _one(f, 5))[0]
    if 6 in f:
        return _one(f, 6).decode()
    if 7 in f:
        return bytes(_one(f, 7))
    return None


_CONST_KINDS = {1: "null", 2: "bool", 3: "int", 4: "uint", 5: "double", 6: "string", 7: "bytes"}


def _const_kind(f: Fields) -> str:
    """A constant's CEL type (its `name` in the tree): an int and a uint are both Python ints."""
    for number, kind in _CONST_KINDS.items():
        if number in f:
            return kind
    return ""


def _expr(buf: bytes) -> Node:
    f = _fields(buf)
    eid = _one(f, 2, 0)
    if 3 in f:
        c = _fields(_one(f, 3))
        return Node(eid, "const", name=_const_kind(c), value=_const(c))
    if 4 in f:
        return Node(eid, "ident", name=_one(_fields(_one(f, 4)), 1, b"").decode())
    if 5 in f:
        s = _fields(_one(f, 5))
        operand = _one(s, 1)
        return Node(eid, "select", name=_one(s, 2, b"").decode(), value=bool(_one(s, 3, 0)),
                    target=_expr(operand) if operand is not None else None)  # fmt: skip
    if 6 in f:
        c = _fields(_one(f, 6))
        target = _one(c, 1)
        return Node(eid, "call", name=_one(c, 2, b"").decode(), target=_expr(target) if target is not None else None,
                    args=[_expr(a) for a in c.get(3, [])])  # fmt: skip
    if 7 in f:
        return Node(eid, "list", args=[_expr(a) for a in _fields(_one(f, 7)).get(1, [])])
    if 8 in f:
        s = _fields(_one(f, 8))
        kind = "struct" if _one(s, 1) else "map"
        values = []
        for entry in s.get(2, []):
            e = _fields(entry)
            if 3 in e:
                values.append(_expr(_one(e, 3)))
            values.append(_expr(_one(e, 4)))
        return Node(eid, kind, args=values)
    if 9 in f:
        c = _fields(_one(f, 9))
        names = ("iter_range", "accu_init", "loop_condition", "loop_step", "result")
        parts = {name: _expr(_one(c, num)) for name, num in zip(names, (2, 4, 5, 6, 7), strict=True) if num in c}
        return Node(eid, "comprehension", iter_var=_one(c, 1, b"").decode(), accu_var=_one(c, 3, b"").decode(),
                    parts=parts)  # fmt: skip
    return Node(eid, "unspecified")


@dataclass
class Checked:
    """A checked expression: its tree, the names of the variables it references, and each node's offset in the
    source (in characters)."""

    root: Node
    references: frozenset[str]
    positions: dict[int, int] = field(default_factory=dict)


def decode(serialized: bytes) -> Checked:
    """Decode a serialized `google.protobuf.Any` holding a `cel.expr.CheckedExpr`."""
    outer = _fields(serialized)
    checked = _fields(_one(outer, 2, serialized))
    names = set()
    for entry in checked.get(2, []):  # reference_map: map<int64, Reference>
        ref = _one(_fields(entry), 2)
        if ref is not None:
            names.add(_one(_fields(ref), 1, b"").decode())
    root = _expr(_one(checked, 4, b""))
    positions: dict[int, int] = {}
    source_info = _one(checked, 5)
    if source_info is not None:
        for entry in _fields(source_info).get(4, []):  # positions: map<int64, int32>
            e = _fields(entry)
            positions[_signed(_one(e, 1, 0))] = _one(e, 2, 0)
    return Checked(root, frozenset(names), positions)


def idents(root: Node) -> set[str]:
    """Every identifier the tree reads (comprehension and binding variables included)."""
    out: set[str] = set()
    stack = [root]
    while stack:
        n = stack.pop()
        if n.kind == "ident":
            out.add(n.name)
        if n.target is not None:
            stack.append(n.target)
        stack.extend(n.args)
        stack.extend(n.parts.values())
    return out


def selected_fields(root: Node, name: str) -> frozenset[str] | None:
    """The fields the tree selects on variable `name` (`self.a`, `has(self.b)`), or None when it reads the
    variable otherwise too (whole: `self == oldSelf`, `self.all(...)`, `self.?a`, a size or a call)."""
    out: set[str] = set()
    stack = [root]
    while stack:
        n = stack.pop()
        if n.kind == "ident" and n.name == name:
            return None  # a use that is not the operand of a select
        if n.kind == "select" and n.target is not None and n.target.kind == "ident" and n.target.name == name:
            out.add(n.name)
            continue
        if n.target is not None:
            stack.append(n.target)
        stack.extend(n.args)
        stack.extend(n.parts.values())
    return frozenset(out)


# -- cost estimate ------------------------------------------------------------------------------------------------

# Functions whose cost grows with the size of a string argument (cel-go charges 0.1 per character).
_STRING_TRAVERSAL = frozenset(
    ("contains", "startsWith", "endsWith", "matches", "find", "findAll", "indexOf", "lastIndexOf", "lowerAscii",
     "upperAscii", "replace", "split", "substring", "trim", "charAt", "join", "format", "quote", "url", "isURL",
     "quantity", "isQuantity", "ip", "isIP", "cidr", "isCIDR", "_+_", "_==_", "_!=_", "string", "bytes")
)  # fmt: skip
_LIST_TRAVERSAL = frozenset(("isSorted", "sum", "min", "max", "indexOf", "lastIndexOf", "_in_", "sets.contains",
                             "sets.equivalent", "sets.intersects", "join", "_==_", "_!=_", "_+_"))  # fmt: skip


_PASS_THROUGH = frozenset(("optional.of", "optional.ofNonZeroValue", "value", "orValue", "or", "dyn"))


@dataclass(frozen=True)
class Size:
    """What the estimate knows of a value: its largest size (elements, or characters) and, for a value that is a
    part of `self`, the schema node describing it (a `SizeInfo`)."""

    max: int
    info: Any = None


class SizeInfo:
    """The sizes the schema allows at a node, for the estimate: `max_elements` of this value and the infos of its
    children (properties, `elem` for items and map values). Supplied by the caller from the OpenAPI schema."""

    __slots__ = ("elem", "max_elements", "props")

    def __init__(self, max_elements: int, props: dict[str, SizeInfo] | None = None, elem: SizeInfo | None = None):
        self.max_elements = max_elements
        self.props = props or {}
        self.elem = elem

    def child(self, name: str | None) -> SizeInfo | None:
        """A property's info (a map's values when there is no such property), or the items' with None."""
        if name is not None and name in self.props:
            return self.props[name]
        return self.elem


class ValueSizes:
    """The sizes of an actual value, in the shape of a `SizeInfo`: what the runtime charge of an evaluation is
    estimated from (the largest element stands for all of a list's or map's elements)."""

    __slots__ = ("max_elements", "value")

    def __init__(self, value: Any) -> None:
        self.value = value
        self.max_elements = len(value) if isinstance(value, str | bytes | list | dict) else 1

    def child(self, name: str | None) -> ValueSizes | None:
        v = self.value
        if isinstance(v, dict):
            if name is not None and name in v:
                return ValueSizes(v[name])
            if name is not None:
                return ValueSizes(None)  # an absent field: evaluating it fails at once
            values: Any = v.values()
        elif isinstance(v, list):
            values = v
        else:
            return None
        return max((ValueSizes(x) for x in values), key=lambda s: s.max_elements, default=None)


class _ListOf:
    __slots__ = ("elem", "max_elements")

    def __init__(self, elem: Any) -> None:
        self.elem, self.max_elements = elem, 1

    def child(self, name: str | None) -> Any:
        return self.elem


UNKNOWN_SIZE = 3 * 1024 * 1024  # upstream's MaxRequestSizeBytes, the bound of anything in a request


def estimate_cost(
    root: Node,
    self_info: SizeInfo | ValueSizes | None,
    optional_list: str = "",
    variables: dict[str, Any] | None = None,
) -> int:
    """An upper bound of the evaluation cost of `root` in CEL cost units, taking `self` (and `oldSelf`) as
    described by `self_info`, and other variables (admission's `object`, `params`, ...) by `variables`. Coarser
    than cel-go's estimator in places (every call costs at least 1 and comprehension bodies are charged for every
    element), never lower for the forms it knows."""
    env: dict[str, Size] = {name: Size(info.max_elements, info) for name, info in (variables or {}).items()}
    if self_info is not None:
        env["self"] = env["oldSelf"] = Size(self_info.max_elements, self_info)
        if optional_list:  # the one-element list an optional oldSelf is bound from
            env[optional_list] = Size(1, _ListOf(self_info))
    cost, _ = _cost(root, env)
    return cost


def _child(size: Size, name: str | None) -> Size:
    info = size.info
    sub = info.child(name) if info is not None else None
    return Size(sub.max_elements, sub) if sub is not None else Size(UNKNOWN_SIZE)


def _cost(n: Node, env: dict[str, Size]) -> tuple[int, Size]:
    kind = n.kind
    if kind == "const":
        v = n.value
        return 0, Size(len(v) if isinstance(v, str | bytes) else 1)
    if kind == "ident":
        return 1, env.get(n.name, Size(UNKNOWN_SIZE))
    if kind == "select":
        c, size = _cost(n.target, env) if n.target is not None else (0, Size(UNKNOWN_SIZE))
        return c + (0 if n.value else 1), _child(size, n.name)
    if kind in ("list", "map", "struct"):
        total = 10  # cel-go's common.ListCreateBaseCost / MapCreateBaseCost
        for a in n.args:
            total += _cost(a, env)[0]
        return total, Size(len(n.args))
    if kind == "comprehension":
        return _comprehension(n, env)
    if kind == "call":
        return _call(n, env)
    return 1, Size(UNKNOWN_SIZE)


def _comprehension(n: Node, env: dict[str, Size]) -> tuple[int, Size]:
    parts = n.parts
    range_node = parts.get("iter_range")
    c, rng = _cost(range_node, env) if range_node is not None else (0, Size(UNKNOWN_SIZE))
    inner = dict(env)
    inner[n.iter_var] = _child(rng, None) if rng.info is not None else Size(UNKNOWN_SIZE)
    init = parts.get("accu_init")
    init_cost, init_size = _cost(init, env) if init is not None else (0, Size(0))
    c += init_cost
    inner[n.accu_var] = init_size if init_size.info is not None else Size(max(rng.max, init_size.max))
    per_step = 0
    for name in ("loop_condition", "loop_step"):
        part = parts.get(name)
        if part is not None:
            per_step += _cost(part, inner)[0]
    result = parts.get("result")
    rc, rsize = _cost(result, inner) if result is not None else (0, Size(1))
    return c + rng.max * per_step + rc, Size(max(rng.max, rsize.max))


def _call(n: Node, env: dict[str, Size]) -> tuple[int, Size]:
    fn = n.name
    sizes: list[Size] = []
    total = 0
    for a in ([n.target] if n.target is not None else []) + n.args:
        c, s = _cost(a, env)
        total += c
        sizes.append(s)
    if fn in ("_&&_", "_||_", "@not_strictly_false", "!_"):
        return total, Size(1)
    if fn == "_?_:_" and len(sizes) == 3:
        branch = max(sizes[1:], key=lambda s: (s.info is not None, s.max))
        return total, branch
    if fn in _PASS_THROUGH and sizes:
        return total + 1, sizes[0]
    if fn in ("_==_", "_!=_"):
        return total + 1 + min(s.max for s in sizes) // 10, Size(1)
    biggest = max((s.max for s in sizes), default=1)
    if fn in _STRING_TRAVERSAL or fn in _LIST_TRAVERSAL:
        call = 1 + biggest // 10 if fn in _STRING_TRAVERSAL and fn not in _LIST_TRAVERSAL else 1 + biggest
        if fn in ("matches", "find", "findAll", "replace", "split"):
            call = 1 + (biggest // 10) * max(1, min((s.max for s in sizes), default=1) // 10)
        return total + call, Size(biggest if fn not in ("size", "indexOf", "lastIndexOf") else 1)
    if fn == "_[_]":
        base = sizes[0] if sizes else Size(UNKNOWN_SIZE)
        key = n.args[1] if len(n.args) > 1 else None
        name = key.value if key is not None and key.kind == "const" and isinstance(key.value, str) else None
        return total + 1, _child(base, name)
    if fn == "_?._":
        base = sizes[0] if sizes else Size(UNKNOWN_SIZE)
        key = n.args[1] if len(n.args) > 1 else None
        return total + 1, _child(base, key.value if key is not None and key.kind == "const" else None)
    return total + 1, Size(biggest)

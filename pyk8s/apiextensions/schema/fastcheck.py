"""A fast yes/no for a custom resource's schema validation: Python code generated once per schema (in the manner
of fastjsonschema) that answers whether an object passes every value check of validation.SchemaValidator and
the list-type invariants of listtype.validate_lists. Valid objects — nearly every write — are answered by it
alone; for anything else it answers "no" and the validator's own walk finds and words the errors, so every
message stays that walk's.

The predicate is sound, not complete: True means the full walk would report nothing; False means only that the
walk must run. Whatever is rare or intricate (oneOf, not, uniqueItems, a value of a type the node does not
expect, floats against multipleOf, integers beyond int64) answers False.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .listtype import items_unique
from .values import go_int64

if TYPE_CHECKING:
    from .validation import _Node

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
# The value types a node's branches are generated for, its declared type's first.
_TYPE_NAMES = {str: "str", int: "int", float: "float", bool: "bool", list: "list", dict: "dict"}
_FIRST = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict}


_MISSING = object()
_INLINE_PROPS = 48  # up to this many properties, an object's are looked up one by one rather than walked
_INLINE_SMALL = 8  # a map of scalars with up to this many properties is checked inline, where it is reached
_MAX_LINES = 20_000  # of generated code (about 10 µs each to compile)


def _scalar(node: _Node) -> bool:
    return not (node.props or node.items is not None or node.additional is not None or node.has_comb)


class _Generator:
    """Writes one function per composite schema node; scalar nodes are checked inline where their parent
    reaches them. Each check is a statement that returns False when the value fails it, and falls through
    when it passes."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, Any] = {"_items_unique": items_unique, "_I64MIN": _INT64_MIN, "_I64MAX": _INT64_MAX,
                                      "_MISSING": _MISSING}  # fmt: skip
        self.done: dict[int, str] = {}  # function name by id(node)
        self.tables: list[str] = []  # the names of the property tables

    def const(self, prefix: str, value: Any) -> str:
        name = f"{prefix}{len(self.names)}"
        self.names[name] = value
        return name

    def function(self, node: _Node) -> str:
        """The name of the predicate of `node`, generated (with its children's) if it is not yet."""
        found = self.done.get(id(node))
        if found is not None:
            return found
        name = f"ok{len(self.done)}"
        self.done[id(node)] = name
        body = self.check(node, "d", 0)
        self.lines += [f"def {name}(d):", *(f"    {line}" for line in body), "    return True", ""]
        return name

    def check(self, node: _Node, v: str, depth: int) -> list[str]:
        """Statements checking the value in variable `v` against `node`."""
        t = f"t{depth}"
        first = _FIRST.get(node.type_str)
        order = sorted((x for x in node.fast_types if x in _TYPE_NAMES),
                       key=lambda x: (x is not first, _TYPE_NAMES[x]))  # fmt: skip
        comb = self._comb(node, v)
        null_passes = not node.null_type_error and node.enum is None
        if len(order) == 1 and not null_passes:  # the common case: one type, and no null
            [typ] = order
            checks = [*comb, *self._checks(node, typ, v, depth)]
            if node.enum is not None:
                checks += self._enum(node, typ, v)
            return [f"if type({v}) is not {_TYPE_NAMES[typ]}: return False", *checks]
        out = [f"{t} = type({v})"]
        keyword = "if"
        for typ in order:
            checks = [*comb, *self._checks(node, typ, v, depth)]
            if node.enum is not None:
                checks += self._enum(node, typ, v)
            out.append(f"{keyword} {t} is {_TYPE_NAMES[typ]}:")
            out += [f"    {line}" for line in checks or ["pass"]]
            keyword = "elif"
        # null: only the type and the enum are checked (not allOf and the like)
        if null_passes:
            out.append(f"{keyword} {v} is not None: return False")
        else:
            out.append("else: return False" if order else "return False")
        return out

    def _child(self, node: _Node, v: str, depth: int) -> list[str]:
        """The check of a child value: inline for a scalar node or a small map or list of scalars, else a call
        of the node's function."""
        if _scalar(node) or (
            not node.has_comb
            and len(node.props) <= _INLINE_SMALL
            and all(_scalar(c) for c in (*node.props.values(), node.items, node.additional) if c is not None)
        ):
            return self.check(node, v, depth)
        return [f"if not {self.function(node)}({v}): return False"]

    def _comb(self, node: _Node, v: str) -> list[str]:
        if node.one_of or node.not_ is not None:
            return ["return False"]  # exactly one branch, or none: the walk decides
        out: list[str] = []
        for branch in node.all_of:
            out.append(f"if not {self.function(branch)}({v}): return False")
        if node.any_of:
            either = " or ".join(f"{self.function(b)}({v})" for b in node.any_of)
            out.append(f"if not ({either}): return False")
        return out

    def _enum(self, node: _Node, t: type, v: str) -> list[str]:
        enum = node.enum or []
        if t is str:
            return [f"if {v} not in {self.const('E', frozenset(x for x in enum if type(x) is str))}: return False"]
        return [f"if not {self.const('IN', node._in_enum)}({v}): return False"]

    def _checks(self, node: _Node, t: type, v: str, depth: int) -> list[str]:
        if t is str:
            return self._string(node, v)
        if t is int:
            return self._integer(node, v) if node.has_num else []
        if t is float:
            return [f"if {self.const('NUM', functools.partial(_num_errors, node))}({v}): return False"] if node.has_num else []  # fmt: skip
        if t is list:
            return self._list(node, v, depth)
        if t is dict:
            return self._object(node, v, depth)
        return []

    def _string(self, node: _Node, v: str) -> list[str]:
        out: list[str] = []
        if node.max_len is not None:
            out.append(f"if len({v}) > {node.max_len}: return False")
        if node.min_len is not None:
            out.append(f"if len({v}) < {node.min_len}: return False")
        if node.pattern_src:
            if node.pattern_error:
                return ["return False"]
            if node.pattern is not None:
                out.append(f"if {self.const('P', node.pattern.search)}({v}) is None: return False")
        if node.fmt_check is not None:
            out.append(f"if not {self.const('F', node.fmt_check)}({v}): return False")
        return out

    def _integer(self, node: _Node, v: str) -> list[str]:
        # _check_num's integer branch: an int beyond int64 is a float there, which the walk handles
        out = [f"if {v} < _I64MIN or {v} > _I64MAX: return False"]
        m = node.multiple_of
        if m is not None:
            factor = go_int64(m)
            if factor is None or factor <= 0:
                return ["return False"]
            out.append(f"if {v} % {factor}: return False")
        for bound, exclusive, below in ((node.minimum, node.excl_min, True), (node.maximum, node.excl_max, False)):
            if bound is None:
                continue
            limit = go_int64(bound)
            shown = self.const("L", bound if limit is None else limit)
            op = ("<=" if exclusive else "<") if below else (">=" if exclusive else ">")
            out.append(f"if {v} {op} {shown}: return False")
        return out

    def _list(self, node: _Node, v: str, depth: int) -> list[str]:
        if node.unique:
            return ["return False"]
        out: list[str] = []
        if node.min_items is not None:
            out.append(f"if len({v}) < {node.min_items}: return False")
        if node.max_items is not None:
            out.append(f"if len({v}) > {node.max_items}: return False")
        if node.list_type == "map" and len(node.list_map_keys) == 1:
            # the usual map list, keyed by one string field: its items are maps with distinct keys
            seen, item, key = f"s{depth}", f"y{depth}", f"k{depth}"
            out += [f"{seen} = set()", f"for {item} in {v}:", f"    if type({item}) is not dict: return False",
                    f"    {key} = {item}.get({node.list_map_keys[0]!r})",
                    f"    if type({key}) is not str or {key} in {seen}: return False", f"    {seen}.add({key})"]  # fmt: skip
        elif node.list_type in ("set", "map"):
            keys = self.const("K", node.list_map_keys)
            out.append(f"if not _items_unique({v}, {node.list_type!r}, {keys}): return False")
        if node.items is not None:
            x = f"x{depth}"
            out += [f"for {x} in {v}:", *(f"    {line}" for line in self._child(node.items, x, depth + 1))]
        return out

    def _object(self, node: _Node, v: str, depth: int) -> list[str]:
        if node.props and node.additional is not None:
            return ["return False"]  # list types are looked for under both there: the walk decides
        out: list[str] = []
        if node.min_props is not None:
            out.append(f"if len({v}) < {node.min_props}: return False")
        if node.max_props is not None:
            out.append(f"if len({v}) > {node.max_props}: return False")
        if node.required:
            missing = " or ".join(f"{k!r} not in {v}" for k in node.required)
            out.append(f"if {missing}: return False")
        x = f"x{depth}"
        if node.props and not node.additional_false and len(node.props) <= _INLINE_PROPS:
            # only declared fields have checks (no additionalProperties): look each one up
            for k, p in node.props.items():
                out += [f"{x} = {v}.get({k!r}, _MISSING)", f"if {x} is not _MISSING:"]
                out += [f"    {line}" for line in self._child(p, x, depth + 1)]
        elif node.props:
            # by property, the name of its predicate: a function once the code has run
            props = self.const("PROPS", {k: self.function(p) for k, p in node.props.items()})
            self.tables.append(props)
            out += [f"for k{depth}, {x} in {v}.items():", f"    f{depth} = {props}.get(k{depth})"]
            if node.additional_false:
                out += [f"    if f{depth} is None or not f{depth}({x}): return False"]
            else:
                out += [f"    if f{depth} is not None and not f{depth}({x}): return False"]
        elif node.additional is not None:
            out += [
                f"for {x} in {v}.values():",
                *(f"    {line}" for line in self._child(node.additional, x, depth + 1)),
            ]
        elif node.additional_false:
            out.append(f"if {v}: return False")
        return out


def _never(obj: Any) -> bool:
    return False


def _num_errors(node: _Node, d: float) -> bool:
    errs: list[Any] = []
    node._check_num(d, "", errs)
    return bool(errs)


def compile_predicate(root: _Node) -> Callable[[Any], bool]:
    """The generated predicate of a compiled schema: True only when `root.check` would report no error and no
    set or map list under it breaks its invariants. Schemas too big to compile in a moment (some hundred
    milliseconds, on the event loop) get none: a predicate that always leaves it to the walk."""
    gen = _Generator()
    entry = gen.function(root)
    if len(gen.lines) > _MAX_LINES:
        return _never
    namespace: dict[str, Any] = dict(gen.names)
    exec(compile("\n".join(gen.lines), "<schema predicate>", "exec"), namespace)
    for name in gen.tables:  # property tables: function names, now functions
        namespace[name] = {k: namespace[f] for k, f in namespace[name].items()}
    predicate: Callable[[Any], bool] = namespace[entry]
    return predicate

"""A shortcut for the simplest validation rules: comparisons of `self`'s fields with each other and with
constants, `has()`, `size()`, `&&`, `||` and `!` (`self.minReplicas <= self.replicas`, `has(self.a) ||
has(self.b)`), worked out in Python from the same value the runtime would be given. It only ever answers
"true" where CEL's answer is true; anything else — false, an error, a value or an operator outside this small
subset — is "don't know", and the rule goes to the CEL runtime as before, which then words any failure. A
rule is compiled to the shortcut once, with its program (environment.Program).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .checked import Node

UNKNOWN: Any = type("Unknown", (), {"__repr__": lambda self: "UNKNOWN"})()  # a value the shortcut cannot tell

_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1
_COMPARISONS = {"_==_": "==", "_!=_": "!=", "_<_": "<", "_<=_": "<=", "_>_": ">", "_>=_": ">="}


class _Outside(Exception):
    """The expression uses something the shortcut does not know."""


def compile_shortcut(root: Node, self_name: str = "self") -> Callable[[Any], bool] | None:
    """A function of `self`'s value that is True only when the expression certainly evaluates to true (and
    False when it cannot tell), or None when the expression is outside the subset. The expression becomes
    straight-line Python: every operand is worked out (none has effects or raises), then combined."""
    gen = _Generator(self_name)
    try:
        result = gen.value(root)
    except _Outside:
        return None
    # the runtime converts the whole value it is given first, and fails on what it cannot hold
    body = ["if not _convertible(s): return False", *gen.lines, f"return {result} is True"]
    namespace: dict[str, Any] = {"UNKNOWN": UNKNOWN, "_convertible": _convertible, "_I64MIN": _INT64_MIN,
                                 "_I64MAX": _INT64_MAX, **gen.constants}  # fmt: skip
    exec(compile("def certainly_true(s):\n" + "\n".join(f"    {line}" for line in body), "<rule shortcut>", "exec"),
         namespace)  # fmt: skip
    fn: Callable[[Any], bool] = namespace["certainly_true"]
    return fn


class _Generator:
    """Statements that leave each operand's value (or UNKNOWN) in a variable of its own."""

    def __init__(self, self_name: str) -> None:
        self.self_name = self_name
        self.lines: list[str] = []
        self.constants: dict[str, Any] = {}

    def _var(self) -> str:
        return f"v{len(self.lines)}"

    def _assign(self, expression: str) -> str:
        var = self._var()
        self.lines.append(f"{var} = {expression}")
        return var

    def value(self, n: Node) -> str:
        kind = n.kind
        if kind == "const":
            value = n.value
            if (n.name, type(value)) not in (("int", int), ("string", str), ("bool", bool)):
                raise _Outside
            if type(value) is int and not _INT64_MIN <= value <= _INT64_MAX:
                raise _Outside
            name = f"c{len(self.constants)}"
            self.constants[name] = value
            return name
        if kind == "ident":
            if n.name != self.self_name:
                raise _Outside
            return "s"
        if kind == "select" and n.target is not None:
            t = self.value(n.target)
            if n.value:  # has(x.name): the key is there (a map's presence test)
                return self._assign(f"({n.name!r} in {t}) if type({t}) is dict else UNKNOWN")
            return self._assign(f"{t}.get({n.name!r}, UNKNOWN) if type({t}) is dict else UNKNOWN")
        if kind == "call":
            return self._call(n)
        raise _Outside

    def _call(self, n: Node) -> str:
        name = n.name
        if n.target is not None:
            if name == "size" and not n.args:
                return self._size(self.value(n.target))
            raise _Outside
        args = [self.value(a) for a in n.args]
        if name == "size" and len(args) == 1:
            return self._size(args[0])
        op = _COMPARISONS.get(name)
        if op is not None and len(args) == 2:
            a, b = args
            # the same Python type on both sides, and one CEL compares as Python does: strings, bools, ints
            # within int64, floats other than NaN
            exact = (f"type({a}) is str or type({a}) is bool or (type({a}) is int and _I64MIN <= {a} <= _I64MAX "
                     f"and _I64MIN <= {b} <= _I64MAX) or (type({a}) is float and {a} == {a} and {b} == {b})")  # fmt: skip
            return self._assign(f"({a} {op} {b}) if type({a}) is type({b}) and ({exact}) else UNKNOWN")
        if name == "_&&_" and len(args) == 2:
            a, b = args
            return self._assign(f"False if {a} is False or {b} is False else "
                                f"True if {a} is True and {b} is True else UNKNOWN")  # fmt: skip
        if name == "_||_" and len(args) == 2:
            a, b = args
            return self._assign(f"True if {a} is True or {b} is True else "
                                f"False if {a} is False and {b} is False else UNKNOWN")  # fmt: skip
        if name == "!_" and len(args) == 1:
            return self._assign(f"(not {args[0]}) if type({args[0]}) is bool else UNKNOWN")
        raise _Outside

    def _size(self, v: str) -> str:
        # a string's size counts code points, as Python's len does
        return self._assign(f"len({v}) if type({v}) is str or type({v}) is list or type({v}) is dict else UNKNOWN")


def _convertible(v: Any) -> bool:
    """Whether the runtime takes the value: JSON values, with integers within int64 or uint64."""
    t = type(v)
    if t is int:
        return _INT64_MIN <= v <= _UINT64_MAX
    if t is str or t is float or t is bool or v is None:
        return True
    if t is dict:
        for k, x in v.items():
            tx = type(x)
            if tx is int:  # (the usual field: checked here rather than by a call)
                if not _INT64_MIN <= x <= _UINT64_MAX:
                    return False
            elif not (tx is str or tx is bool or tx is float or x is None) and not _convertible(x):
                return False
            if type(k) is not str:
                return False
        return True
    if t is list:
        for x in v:
            if not _convertible(x):
                return False
        return True
    return False

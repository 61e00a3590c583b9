"""The schema-aware part of type checking that the runtime's checker cannot do, objects being declared as maps
there: field selections that name no property (`undefined field 'x'`) and results that cannot be a bool (or,
for a messageExpression, a string), following select chains from `self` and `oldSelf` and through comprehension
variables (upstream: cel-go's checker over the object types apiserver pkg/cel/common schemas.go declares).
"""

from __future__ import annotations

from typing import Any

from .checked import Node
from .environment import Program
from .values import escape

_SCALAR_TYPES = {"integer": "int", "number": "double", "string": "string", "boolean": "bool"}


def _closed_object(s: dict[str, Any]) -> dict[str, dict[str, Any]] | None:
    """The escaped properties of an object whose fields are exactly its properties, else None."""
    if s.get("type") != "object" or s.get("x-kubernetes-preserve-unknown-fields") is True:
        return None
    embedded = s.get("x-kubernetes-embedded-resource") is True
    props = s.get("properties")
    if not isinstance(props, dict) or not props:
        props = {}
        if not embedded:
            return None
    out: dict[str, dict[str, Any]] = {}
    if embedded:  # a resource's apiVersion, kind and (a sliver of) metadata are always there to read
        string = {"type": "string"}
        meta = {"type": "object", "properties": {"name": string, "generateName": string}}
        out.update(apiVersion=string, kind=string, metadata=meta)
    for name, sub in props.items():
        escaped = escape(name)
        if escaped is not None and isinstance(sub, dict) and not (embedded and name == "metadata"):
            out[escaped] = sub
    return out


def _element(s: dict[str, Any] | None) -> dict[str, Any] | None:
    if s is None:
        return None
    if s.get("type") == "array" and isinstance(s.get("items"), dict):
        return s["items"]
    return None


def _location(source: str, offset: int) -> str:
    line = source.count("\n", 0, offset) + 1
    start = source.rfind("\n", 0, offset) + 1
    end = source.find("\n", offset)
    text = source[start : end if end >= 0 else len(source)]
    column = offset - start
    return f"ERROR: <input>:{line}:{column + 1}: {{}}\n | {text}\n | {'.' * column}^"


def undefined_fields(program: Program, schema: dict[str, Any]) -> list[str]:
    """`ERROR: <input>:L:C: undefined field 'x'` for each selection of a field `schema` does not declare."""
    errors: list[str] = []
    shift = program.prefix_length
    positions = program.tree.positions

    def walk(n: Node, scope: dict[str, dict[str, Any] | None]) -> dict[str, Any] | None:
        """The schema of n's value when known."""
        if n.kind == "ident":
            return scope.get(n.name)
        if n.kind == "select" and n.target is not None:
            operand = walk(n.target, scope)
            if operand is None:
                return None
            props = _closed_object(operand)
            if props is None:
                additional = operand.get("additionalProperties")
                return additional if isinstance(additional, dict) else None
            if n.name not in props:
                offset = positions.get(n.id, 0) - shift
                errors.append(_location(program.source, max(0, offset)).format(f"undefined field '{n.name}'"))
                return None
            return props[n.name]
        if n.kind == "comprehension":
            rng = n.parts.get("iter_range")
            inner = dict(scope)
            inner[n.iter_var] = _element(walk(rng, scope)) if rng is not None else None
            inner[n.accu_var] = None
            for name in ("accu_init",):
                part = n.parts.get(name)
                if part is not None:
                    walk(part, scope)
            for name in ("loop_condition", "loop_step", "result"):
                part = n.parts.get(name)
                if part is not None:
                    walk(part, inner)
            return None
        for sub in ([n.target] if n.target is not None else []) + n.args:
            walk(sub, scope)
        if n.kind == "call" and n.name == "_[_]" and len(n.args) == 2:
            base = walk(n.args[0], scope)
            return _element(base)
        return None

    walk(program.tree.root, {"self": schema, "oldSelf": None if program.optional_old_self else schema})
    return errors


def result_type(program: Program, schema: dict[str, Any]) -> str:
    """The CEL type name of a rule's result when it is a select chain from `self` to a typed property, else the
    checker's answer (`dyn` for most of what goes through objects)."""
    n = program.tree.root
    steps: list[str] = []
    while n.kind == "select" and n.target is not None and not n.value:
        steps.append(n.name)
        n = n.target
    if n.kind != "ident" or n.name != "self" or not steps:
        return program.output
    s: Any = schema
    for name in reversed(steps):
        props = _closed_object(s) if isinstance(s, dict) else None
        if props is None or name not in props:
            return program.output
        s = props[name]
    if s.get("x-kubernetes-int-or-string") is True:
        return "dyn"
    t = s.get("type")
    if t == "string" and s.get("format") in ("byte", "duration", "date", "date-time"):
        return "dyn"
    return _SCALAR_TYPES.get(t, "list" if t == "array" else "map" if t == "object" else "dyn")

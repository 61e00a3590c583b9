"""Field paths and sets of them (upstream: structured-merge-diff's fieldpath package).

A path is a tuple of path elements written as FieldsV1 writes them: `f:<name>` for a field of a struct or a
key of a map, `k:<json>` for an item of a list keyed by its list-map keys (key fields sorted by name),
`v:<json>` for an item of a set, `i:<n>` for an index. A field set is a Python set of paths; a path is a
member when the node itself is owned, and FieldsV1 writes a member that also has owned children as `"."`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

import orjson

Path = tuple[str, ...]
FieldSet = set[Path]

# Upstream orders path elements by kind (PathElement.Compare): field names, then keys, then values, then indexes.
_KIND_ORDER = {"f": 0, "k": 1, "v": 2, "i": 3}


def key_element(keys: dict[str, Any]) -> str:
    """The element of a keyed list item: its key fields, sorted by name (value.FieldList.Sort)."""
    return "k:" + orjson.dumps({k: keys[k] for k in sorted(keys)}).decode()


def value_element(value: Any) -> str:
    return "v:" + orjson.dumps(value).decode()


def _value_order(value: Any) -> tuple[Any, ...]:
    """Upstream's total order of values (value.Compare): numbers (ints and floats together), then strings,
    booleans, lists, maps, null."""
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, int | float):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    if isinstance(value, list):
        return (3, tuple(_value_order(v) for v in value))
    if isinstance(value, dict):
        return (4, tuple((k, _value_order(value[k])) for k in sorted(value)))
    return (5,)


@functools.lru_cache(maxsize=1 << 16)
def _element_order(element: str) -> tuple[int, Any]:
    """Upstream's PathElement.Compare as a sort key: field names, then keys (their fields compared in turn,
    name then value), then values, then indexes."""
    kind = _KIND_ORDER.get(element[:1], 4)
    body = element[2:]
    if kind == 0:
        return kind, body
    if kind == 3:
        try:
            return kind, int(body)
        except ValueError:
            return kind, 0
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return kind, (5, body)
    if kind == 1 and isinstance(value, dict):
        return kind, tuple((k, _value_order(value[k])) for k in sorted(value))
    return kind, _value_order(value)


@functools.lru_cache(maxsize=1 << 16)
def normalize_element(element: str) -> str:
    """An element as upstream writes it back after reading it: key fields sorted, JSON compact."""
    if element[:2] not in ("k:", "v:"):
        return element
    try:
        value = orjson.loads(element[2:])
    except orjson.JSONDecodeError:
        return element
    if element[:2] == "k:" and isinstance(value, dict):
        return key_element(value)
    return value_element(value)


def from_fields_v1(fields: Any, prefix: Path = ()) -> FieldSet:
    """The set a FieldsV1 tree stands for: `{}` is a member leaf; `"."` makes its parent a member."""
    out: FieldSet = set()
    _read(fields, prefix, out)
    return out


def _read(fields: Any, prefix: Path, out: FieldSet) -> None:
    if not isinstance(fields, dict):
        return
    for element, sub in fields.items():
        if element == ".":
            if prefix:
                out.add(prefix)
            continue
        path = (*prefix, normalize_element(element))
        if isinstance(sub, dict) and sub:
            _read(sub, path, out)
        else:
            out.add(path)


def to_fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    """The FieldsV1 tree of a set, its siblings in upstream's order and `"."` first."""
    root: dict[str, Any] = {}
    members: set[int] = set()  # ids of the dicts whose node is a member
    for p in paths:
        cur = root
        for element in p:
            cur = cur.setdefault(element, {})
        members.add(id(cur))
    return _ordered(root, members)


def _ordered(tree: dict[str, Any], members: set[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for element in sorted(tree, key=_element_order):
        sub = tree[element]
        if sub:
            below = _ordered(sub, members)
            out[element] = {".": {}, **below} if id(sub) in members else below
        else:
            out[element] = {}
    return out


def render_element(element: str) -> str:
    """How upstream prints a path element in messages (PathElement.String)."""
    kind, body = element[:2], element[2:]
    if kind == "f:":
        return "." + body
    if kind == "k:":
        try:
            keys = orjson.loads(body)
        except orjson.JSONDecodeError:
            return "[" + body + "]"
        return "[" + ",".join(f"{k}={orjson.dumps(v).decode()}" for k, v in keys.items()) + "]"
    if kind == "v:":
        return "[=" + body + "]"
    if kind == "i:":
        return "[" + body + "]"
    return body


def render(path: Path) -> str:
    return "".join(render_element(e) for e in path)


def iteration_order(paths: Iterable[Path]) -> list[Path]:
    """The paths in the order upstream's Set.Iterate visits them: at each level the members, then the
    children, each in element order (so `.spec.replicas` before `.spec.template.…`)."""
    out: list[Path] = []

    def walk(node: dict[str, Any], prefix: Path) -> None:
        elements = sorted((e for e in node if e != _END), key=_element_order)
        out.extend((*prefix, e) for e in elements if _END in node[e])
        for e in elements:
            if any(k != _END for k in node[e]):
                walk(node[e], (*prefix, e))

    walk(trie(paths), ())
    return out


def without_prefixes(paths: FieldSet, prefixes: Iterable[Path]) -> FieldSet:
    """The set less every path at or below one of `prefixes` (upstream's exclude filter for reset fields)."""
    prefixes = tuple(prefixes)
    if not prefixes:
        return paths
    return {p for p in paths if not any(p[: len(x)] == x for x in prefixes)}


_END = ""  # in a trie of paths, the key marking a member (no path element is empty)


def trie(paths: Iterable[Path]) -> dict[str, Any]:
    """The set as nested dicts, for walking it beside a value: `_END in node` says the path is a member."""
    root: dict[str, Any] = {}
    for p in paths:
        cur = root
        for element in p:
            cur = cur.setdefault(element, {})
        cur[_END] = {}
    return root


def has(node: dict[str, Any] | None) -> bool:
    return node is not None and _END in node


def has_children(node: dict[str, Any] | None) -> bool:
    return node is not None and any(k != _END for k in node)

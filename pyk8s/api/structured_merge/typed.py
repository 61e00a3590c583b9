"""Schema-aware operations on objects as plain dicts (upstream: structured-merge-diff's typed package): the
field set a value sets, the comparison of two values, the merge of an applied configuration into a live
object, and the removal of a set of fields.

The schema is upstream's OpenAPI (api/schema.Node), read as schemaconv reads it: a list is atomic unless
`x-kubernetes-list-type` is `set` or `map` (or its patch strategy is `merge`, keyed by the merge key or a set
without one); a struct or map is granular unless `x-kubernetes-map-type: atomic`; free-form content
(preserve-unknown-fields, int-or-string, quantities, raw extensions) is "deduced": maps granular, lists
atomic.
"""

from __future__ import annotations

from typing import Any

from ..errors import go_value
from ..schema import Node
from .fieldpath import FieldSet, Path, has, has_children, key_element, render, render_element, trie, value_element

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING"})()

SCALAR, LIST_ATOMIC, LIST_ASSOC, MAP_ATOMIC, MAP, DEDUCED = range(6)

# List-map keys that upstream's schema defaults when an item leaves them out (their `+default` markers).
_KEY_DEFAULTS: dict[tuple[str, str], Any] = {
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.ServicePort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.LocalObjectReference", "name"): "",
}


class SchemaError(ValueError):
    """A value the schema does not admit (upstream's ValidationError), with the path it is at."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(f"{render(path)}: {message}" if path else message)
        self.path = path


_SHAPES: dict[int, tuple[int, tuple[str, ...] | None, bool, frozenset[str]]] = {}


def _describe(node: Node | None) -> tuple[int, tuple[str, ...] | None, bool, frozenset[str]]:
    """(shape, list keys, is a set, declared fields) of a schema node; kept per node (nodes live for ever)."""
    if node is None:
        return DEDUCED, None, False, frozenset()
    got = _SHAPES.get(id(node))
    if got is not None:
        return got
    keys: tuple[str, ...] | None = None
    is_set = False
    fields: frozenset[str] = frozenset()
    if node.open_ended:
        shape = DEDUCED
    elif node.is_array:
        keys, is_set = node.item_keying
        if not keys and not is_set and "merge" in node.patch_strategies and node.list_type != "atomic":
            is_set = True  # merge without a key: a set of scalars
        shape = LIST_ATOMIC if node.list_type == "atomic" or not (keys or is_set) else LIST_ASSOC
    elif node.is_object:
        shape = MAP_ATOMIC if node.map_type == "atomic" else MAP
        fields = frozenset(node.schema.get("properties") or ())
    else:
        shape = SCALAR
    got = (shape, keys, is_set, fields)
    _SHAPES[id(node)] = got
    return got


def _shape(node: Node | None, value: Any) -> int:
    """The shape `value` is walked as: its schema's, deduced from the value where the schema leaves it open,
    and a leaf where the value is not what the schema says (null, or the wrong type)."""
    shape = _describe(node)[0]
    if shape == DEDUCED:
        return MAP if isinstance(value, dict) else LIST_ATOMIC if isinstance(value, list) else SCALAR
    if shape == LIST_ASSOC and not isinstance(value, list):
        return SCALAR
    if shape == MAP and not isinstance(value, dict):
        return SCALAR
    return shape


def _child(node: Node | None, name: str) -> Node | None:
    if node is None or _describe(node)[0] == DEDUCED:
        return None
    return node.child(name)


def _is_field(node: Node | None, name: str) -> bool:
    return node is not None and name in _describe(node)[3]


def is_associative(node: Node) -> bool:
    """Whether the list's items are told apart (a set, or a map list), rather than the list being atomic."""
    return _describe(node)[0] == LIST_ASSOC


def is_atomic_map(node: Node) -> bool:
    """Whether a struct or map is owned and replaced as a unit (`x-kubernetes-map-type: atomic`)."""
    return _describe(node)[0] == MAP_ATOMIC


def item_element(item: Any, node: Node) -> str:
    """The path element of an item of an associative list; SchemaError when it has none."""
    _, keys, _, _ = _describe(node)
    if keys:
        if item is None:
            raise SchemaError((), "associative list with keys may not have a null element")
        if not isinstance(item, dict):
            raise SchemaError((), "associative list with keys may not have non-map elements")
        out: dict[str, Any] = {}
        items = node.items()
        for k in keys:
            if k in item:
                out[k] = item[k]
                continue
            default = _KEY_DEFAULTS.get((items.ref if items is not None else "", k), MISSING)
            if default is MISSING:
                raise SchemaError(
                    (), f'associative list with keys has an element that omits key field "{k}" (and doesn\'t have default value)'
                )  # fmt: skip
            out[k] = default
        return key_element(out)
    if isinstance(item, dict):
        raise SchemaError((), "associative list without keys has an element that's a map type")
    if isinstance(item, list):
        raise SchemaError((), "not supported: associative list with lists as elements")
    if item is None:
        raise SchemaError((), "associative list without keys has an element that's an explicit null")
    return value_element(item)


def _elements(items: list[Any], node: Node, path: Path) -> list[str]:
    out = []
    for i, item in enumerate(items):
        try:
            out.append(item_element(item, node))
        except SchemaError as e:
            raise SchemaError(path, f"element {i}: {e}") from None
    return out


# -- validation of an applied configuration ------------------------------------------------------------


def validate(value: Any, node: Node | None, path: Path = ()) -> None:
    """What upstream's conversion of an applied configuration to a typed value refuses: values of the wrong
    type, fields the schema does not declare, list items without their keys, duplicate items. Raises
    SchemaError with upstream's message."""
    if value is None:
        return  # null is every type's
    described = _describe(node)
    declared = described[0]
    if declared == DEDUCED:
        if node is not None and not node.is_object and not isinstance(value, (str, int, float)):
            raise SchemaError(path, f"expected any scalar, got {_go_v(value)}")  # int-or-string, quantities
        return
    if declared in (LIST_ATOMIC, LIST_ASSOC):
        if not isinstance(value, list):
            raise SchemaError(path, f"expected list, got {_go_v(value)}")
        if declared == LIST_ATOMIC:
            items = node.items() if node is not None else None
            for i, item in enumerate(value):
                validate(item, items, (*path, f"i:{i}"))
            return
        assert node is not None
        items = node.items()
        seen: set[str] = set()
        for element, item in zip(_elements(value, node, path), value, strict=True):
            if element in seen:
                raise SchemaError(path, f"duplicate entries for key {render_element(element)}")
            seen.add(element)
            validate(item, items, (*path, element))
        return
    if declared in (MAP, MAP_ATOMIC):
        if not isinstance(value, dict):
            raise SchemaError(path, f"expected map, got {_go_v(value)}")
        assert node is not None
        closed = "additionalProperties" not in node.schema
        for k, v in value.items():
            if closed and k not in described[3]:
                raise SchemaError((*path, "f:" + k), "field not declared in schema")
            validate(v, _child(node, k), (*path, "f:" + k))
        return
    types = node.types if node is not None else set()
    if types & {"integer", "number"}:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SchemaError(path, f"expected numeric (int or float), got {_go_type(value)}")
    elif "boolean" in types:
        if not isinstance(value, bool):
            raise SchemaError(path, f"expected boolean, got {_go_v(value)}")
    elif "string" in types and not isinstance(value, str):
        raise SchemaError(path, f"expected string, got &value.valueUnstructured{{Value:{go_value(value)}}}")


def _go_type(value: Any) -> str:
    """Go's %T of a decoded JSON value."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    return "map[string]interface {}"


def _go_v(value: Any) -> str:
    """How upstream prints a value in these messages (a pointer to its wrapper: `&{5}`)."""
    return "&{" + go_value(value) + "}"


# -- the field set of a value ------------------------------------------------------------------------


def to_field_set(value: Any, node: Node | None) -> FieldSet:
    """Every field `value` sets, as upstream's ToFieldSet: scalars and atomic values, list items, map
    entries that are null, empty or not declared fields; a struct field holding fields is only a prefix."""
    out: FieldSet = set()
    _to_field_set(value, node, (), out)
    return out


def _to_field_set(value: Any, node: Node | None, path: Path, out: FieldSet) -> None:
    shape = _shape(node, value)
    if shape == MAP:
        for k, v in value.items():
            p = (*path, "f:" + k)
            _to_field_set(v, _child(node, k), p, out)
            if v is None or (isinstance(v, dict) and not v) or not _is_field(node, k):
                out.add(p)
    elif shape == LIST_ASSOC:
        assert node is not None
        if not value:
            return
        items = node.items()
        elements = _elements(value, node, path)
        seen: set[str] = set()
        duplicated: set[str] = set()
        for e in elements:
            if e in seen:
                duplicated.add(e)
            seen.add(e)
        for e in duplicated:
            out.add((*path, e))  # duplicates are owned as one atomic item
        for e, item in zip(elements, value, strict=True):
            if e in duplicated:
                continue
            _to_field_set(item, items, (*path, e), out)
            out.add((*path, e))
    elif path:
        out.add(path)


# -- comparison --------------------------------------------------------------------------------------


class Comparison:
    """What changed from one value to another: fields added, modified and removed."""

    __slots__ = ("added", "modified", "removed")

    def __init__(self) -> None:
        self.added: FieldSet = set()
        self.modified: FieldSet = set()
        self.removed: FieldSet = set()


def compare(lhs: Any, rhs: Any, node: Node | None) -> Comparison:
    """Upstream's Compare: a leaf (scalar, atomic or empty value) is added, removed or modified; a node that
    appears or disappears as a whole is added or removed itself as well as its fields."""
    out = Comparison()
    _compare(lhs, rhs, node, (), out)
    return out


def _compare(lhs: Any, rhs: Any, node: Node | None, path: Path, out: Comparison) -> None:
    if lhs is not MISSING and rhs is not MISSING and lhs == rhs:
        return  # equal values have no differences (and this is where most of a write's object ends)
    shape = _shape(node, rhs if rhs is not MISSING and rhs is not None else lhs)
    if lhs not in (MISSING, None) and rhs not in (MISSING, None) and shape != _shape(node, lhs):
        shape = SCALAR  # a value changed type: compared as one leaf
    if shape in (MAP, LIST_ASSOC):
        empty_l = lhs is MISSING or lhs is None or not lhs
        empty_r = rhs is MISSING or rhs is None or not rhs
        if empty_l and empty_r:
            shape = SCALAR  # both empty: a leaf
    if shape == MAP:
        left = lhs if isinstance(lhs, dict) else {}
        right = rhs if isinstance(rhs, dict) else {}
        for k in {**left, **right}:
            _compare(left.get(k, MISSING), right.get(k, MISSING), _child(node, k), (*path, "f:" + k), out)
    elif shape == LIST_ASSOC:
        assert node is not None
        _compare_items(lhs if isinstance(lhs, list) else [], rhs if isinstance(rhs, list) else [], node, path, out)
    else:
        if not path:
            return
        if lhs is MISSING:
            out.added.add(path)
        elif rhs is MISSING:
            out.removed.add(path)
        elif lhs != rhs:
            out.modified.add(path)
        return
    if path:
        if lhs is MISSING:
            out.added.add(path)
        elif rhs is MISSING:
            out.removed.add(path)


def _compare_items(lhs: list[Any], rhs: list[Any], node: Node, path: Path, out: Comparison) -> None:
    items = node.items()
    left: dict[str, list[Any]] = {}
    for e, item in zip(_elements(lhs, node, path), lhs, strict=True):
        left.setdefault(e, []).append(item)
    right: dict[str, list[Any]] = {}
    for e, item in zip(_elements(rhs, node, path), rhs, strict=True):
        right.setdefault(e, []).append(item)
    for e in {**left, **right}:
        ls, rs = left.get(e, []), right.get(e, [])
        p = (*path, e)
        if len(ls) <= 1 and len(rs) <= 1:
            _compare(ls[0] if ls else MISSING, rs[0] if rs else MISSING, items, p, out)
        elif len(ls) >= 2 and len(rs) >= 2:
            if ls != rs:
                out.modified.add(p)
        elif len(ls) >= 2:
            if rs:
                _compare(MISSING, rs[0], items, p, out)
            out.removed.add(p)
        else:
            if ls:
                _compare(ls[0], MISSING, items, p, out)
            out.added.add(p)


# -- merge -------------------------------------------------------------------------------------------


def merge(lhs: Any, rhs: Any, node: Node | None) -> Any:
    """The applied configuration `rhs` merged into the live value `lhs` (upstream's Merge with keep-RHS):
    leaves and atomic values come from `rhs`; maps and associative lists are merged item by item, the
    list's order that of `rhs` for its items, with the live items it does not name kept where they were."""
    if rhs is MISSING:
        return lhs
    if lhs is MISSING:
        return rhs
    if rhs is None and _describe(node)[0] in (MAP, LIST_ASSOC) and isinstance(lhs, dict | list) and lhs:
        return lhs  # a null map or list is an empty one: merged into the live one, it leaves that as it is
    shape = _shape(node, rhs)
    if shape != _shape(node, lhs) or shape not in (MAP, LIST_ASSOC) or (not lhs and not rhs):
        return rhs
    if shape == MAP:
        out = {}
        for k in {**lhs, **rhs}:
            out[k] = merge(lhs.get(k, MISSING), rhs.get(k, MISSING), _child(node, k))
        return out
    assert node is not None
    return _merge_items(lhs, rhs, node)


def _merge_items(lhs: list[Any], rhs: list[Any], node: Node) -> list[Any]:
    items = node.items()
    rhs_pes = _elements(rhs, node, ())
    lhs_pes = _elements(lhs, node, ())
    seen_rhs = dict(zip(rhs_pes, rhs, strict=True))
    seen_lhs: dict[str, Any] = {}
    for e, item in zip(lhs_pes, lhs, strict=True):
        seen_lhs[e] = None if e in seen_lhs else item  # duplicated live items merge as null
    shared = [e for e in rhs_pes if e in seen_lhs]
    shared.reverse()
    next_shared = shared.pop() if shared else None
    merged_rhs: set[str] = set()
    out: list[Any] = []
    li = ri = 0
    while li < len(lhs_pes) or ri < len(rhs_pes):
        if li < len(lhs_pes) and ri < len(rhs_pes):
            e = lhs_pes[li]
            if e == rhs_pes[ri]:
                merged_rhs.add(e)
                out.append(merge(seen_lhs[e], seen_rhs[e], items))
                li += 1
                ri += 1
                next_shared = shared.pop() if shared else None
                continue
            if e in seen_rhs and next_shared is not None and next_shared != e:
                li += 1
                continue
        if li < len(lhs_pes):
            e = lhs_pes[li]
            if e not in seen_rhs:
                out.append(lhs[li])
                li += 1
                continue
            if e in merged_rhs:
                li += 1
        if ri < len(rhs_pes):
            e = rhs_pes[ri]
            merged_rhs.add(e)
            out.append(merge(seen_lhs.get(e, MISSING), seen_rhs[e], items))
            ri += 1
            if next_shared is not None and next_shared == e:
                next_shared = shared.pop() if shared else None
    return out


# -- removal -----------------------------------------------------------------------------------------


def remove_items(value: Any, node: Node | None, paths: FieldSet) -> Any:
    """`value` without the fields of `paths` (upstream's RemoveItems): a removed member goes with all below
    it; a map or list left empty becomes null (a struct field is removed whole when its own path is in
    the set: `ensure_named_fields_are_members`)."""
    if not paths:
        return value
    out = _remove(value, node, trie(paths))
    return {} if out is None and isinstance(value, dict) else out


def _remove(value: Any, node: Node | None, to_remove: dict[str, Any]) -> Any:
    shape = _shape(node, value)
    if shape == SCALAR:
        return value
    if shape in (LIST_ATOMIC, MAP_ATOMIC) or not value:
        return None
    if shape == MAP:
        new_map = {}
        for k, v in value.items():
            sub = to_remove.get("f:" + k)
            if has(sub):
                continue
            if has_children(sub):
                v = _remove(v, _child(node, k), sub)
            new_map[k] = v
        return new_map or None
    assert node is not None
    items = node.items()
    new_items = []
    for e, item in zip(_elements(value, node, ()), value, strict=True):
        sub = to_remove.get(e)
        if has(sub):
            continue
        if has_children(sub):
            item = _remove(item, items, sub)
        new_items.append(item)
    return new_items or None


def ensure_named_fields_are_members(paths: FieldSet, node: Node | None) -> FieldSet:
    """The set with every declared struct field that has members below it made a member itself (upstream's
    EnsureNamedFieldsAreMembers), so that removing a struct field's last owned child removes the field."""
    out = set(paths)
    for p in paths:
        n = node
        for i, element in enumerate(p[:-1]):
            if element.startswith("f:"):
                name = element[2:]
                if _describe(n)[0] == MAP and _is_field(n, name):
                    out.add(p[: i + 1])
                n = _child(n, name)
            else:
                n = n.items() if n is not None and _describe(n)[0] == LIST_ASSOC else None
    return out

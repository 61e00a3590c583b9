"""managedFields of a create, fast (upstream: apimachinery/pkg/util/managedfields, an `Update` from the
kind's zero value): the creator owns every field it set, in upstream's FieldsV1 form, with `"."` on the nodes
the create added whole (`with_added_nodes`). Creates are hot, so this walks the object once, building the
field set with its added nodes as it goes (`_owned`, by per-schema-node plans), and memoises the field sets of
workloads' repeated specs while they do repeat; every other write goes through api/field_manager, whose
general rule a create equals (tests/api/test_managed_fields.py checks the two agree, and
test_managed_fields_create_walk.py the one walk against the field set and `with_added_nodes` in turn).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from .content_memo import ContentMemo
from .meta import Object, rfc3339
from .schema import Node
from .structured_merge import typed

Path = tuple[str, ...]
# Metadata the server owns: never part of a manager's fields (upstream's stripMetaManager).
_SERVER_META = frozenset({"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                          "managedFields", "selfLink", "clusterName"})  # fmt: skip


def _not_a_field(path: Path, name: str) -> bool:
    """Whether `name` below `path` is left out of every manager's fields: the kind's apiVersion and kind, and
    the metadata the server owns."""
    return (not path and name in ("apiVersion", "kind")) or (path == ("f:metadata",) and name in _SERVER_META)


def _item_key(item: Any, node: Node | None) -> str | None:
    """The FieldsV1 element of a list item, or None when the list is atomic (or the item has no key)."""
    if node is None or not typed.is_associative(node):
        return None
    try:
        return typed.item_element(item, node)
    except typed.SchemaError:
        return None


def fieldset(value: Any, node: Node | None, path: Path = ()) -> dict[str, Any]:
    """The FieldsV1 of every leaf of `value`, built in one pass: the fields a create sets (creates are hot;
    api/field_manager's general rule gives the same, more slowly).

    For a whole object, the field sets of its spec and status are memoised by their content: the replicas of
    a workload, created by the thousand, repeat the same spec."""
    return _fieldset(value, node, path) or {}


# Where workloads repeat themselves; other sections (an Event's `regarding`) differ from object to object.
_MEMOISED_SECTIONS = frozenset({"spec", "status"})
_SECTIONS = ContentMemo()  # field sets as JSON: each hit is answered with a fresh copy


def _section_fieldset(value: dict[str, Any], node: Node, key: str) -> dict[str, Any] | None:
    # Schema nodes of named fields live as long as the process, so their ids are stable.
    missed = False

    def compute() -> bytes:
        nonlocal missed
        missed = True
        return orjson.dumps(_fieldset(value, node, (key,)))

    data = _SECTIONS.get(value, compute, extra=(id(node), key))
    use = _MEMO_USE.get((id(node), key))
    if use is not None:
        use[0] += 1
        use[1] += not missed
    result: dict[str, Any] | None = orjson.loads(data)
    return result


def _fieldset(value: Any, node: Node | None, path: Path) -> dict[str, Any] | None:
    """`{}` for a leaf, a nested dict for a parent, None for a map whose every field is server-owned."""
    if (
        isinstance(value, dict)
        and value
        and not (node is not None and node.open_ended and not node.is_object)
        and not (node is not None and typed.is_atomic_map(node))
    ):
        out: dict[str, Any] = {}
        for k in sorted(value):
            if _not_a_field(path, k):
                continue
            key = f"f:{k}"
            child = node.child(k) if node is not None else None
            if not path and k in _MEMOISED_SECTIONS and child is not None and isinstance(value[k], dict):
                sub = _section_fieldset(value[k], child, key)
            else:
                sub = _fieldset(value[k], child, (*path, key))
            if sub is not None:
                out[key] = sub
        return out or None
    if isinstance(value, list) and value and node is not None:
        keyed = [_item_key(x, node) for x in value]
        if all(keyed):
            items = node.items()
            out = {}
            duplicated = {k for k in keyed if keyed.count(k) > 1} if len(set(keyed)) < len(keyed) else set()
            for item_key, item in zip(keyed, value, strict=True):
                assert item_key is not None
                if item_key in duplicated:
                    out[item_key] = {}  # items sharing a key are owned as one, atomically
                elif item_key.startswith("k:"):
                    out[item_key] = {".": {}, **(_fieldset(item, items, (*path, item_key)) or {})}
                else:
                    out[item_key] = {}
            return {k: out[k] for k in sorted(out)}
    return {}


def record_create(
    new: Object, node: Node | None, manager: str, api_version: str, zero: Any = None, subresource: str = ""
) -> None:
    """Set `new`'s managedFields for its create by `manager`: one Update entry owning every field it set,
    with `"."` on the nodes absent from the kind's zero value `zero` (when given)."""
    md = new.setdefault("metadata", {})
    md.pop("managedFields", None)
    plan = _plan(node)
    fields_v1: dict[str, Any] | None
    if zero is not None and plan.walks_maps:
        fields_v1 = _owned(new, plan, _ROOT, zero)  # the field set and its added nodes in one walk
        if fields_v1 is None:
            return
    else:
        fields_v1 = fieldset(new, node)
        if not fields_v1:
            return
        if zero is not None:
            fields_v1 = with_added_nodes(fields_v1, zero)
    entry = {"manager": manager, "operation": "Update", "apiVersion": api_version, "time": rfc3339(),
             "fieldsType": "FieldsV1", "fieldsV1": fields_v1}  # fmt: skip
    if subresource:
        entry["subresource"] = subresource
    md["managedFields"] = [entry]


# -- the field set with its added nodes, in one walk ---------------------------------------------------------

# A string JSON writes between quotes unchanged (orjson escapes no more; it refuses lone surrogates).
_PLAIN = re.compile(r"[^\x00-\x1f\"\\\ud800-\udfff]*")
_ROOT, _METADATA, _BELOW = 0, 1, 2  # where a map is: which of its fields are not fields (_not_a_field)


class _Plan:
    """What the walk needs of one schema node (None: a field the schema does not declare), worked out once:
    whether its maps are walked or owned whole, whether its lists are keyed, and its fields' FieldsV1 keys
    and plans."""

    __slots__ = ("_items", "children", "item_keys", "item_prefix", "keyed", "node", "walks_maps")

    def __init__(self, node: Node | None) -> None:
        self.node = node
        # As _fieldset: maps are owned whole below free-form scalars and atomic maps.
        self.walks_maps = node is None or not ((node.open_ended and not node.is_object) or typed.is_atomic_map(node))
        self.keyed = node is not None and typed.is_associative(node)
        # a map list's key fields, sorted as its items' path elements write them
        keys = node.item_keying[0] if node is not None and self.keyed else None
        self.item_keys: tuple[str, ...] = tuple(sorted(keys)) if keys else ()
        # an item's path element up to its key's value, when there is one key: `k:{"name":`
        self.item_prefix = "k:{" + orjson.dumps(keys[0]).decode() + ":" if keys and len(keys) == 1 else ""
        self.children: dict[str, tuple[str, _Plan]] = {}
        self._items: _Plan | None = None

    def child(self, name: str) -> tuple[str, _Plan]:
        found = self.children.get(name)
        if found is None:
            found = ("f:" + name, _plan(self.node.child(name) if self.node is not None else None))
            if len(self.children) < 1024:  # free-form maps: names are unbounded
                self.children[name] = found
        return found

    @property
    def items(self) -> _Plan:
        if self._items is None:
            self._items = _plan(self.node.items() if self.node is not None else None)
        return self._items


_UNDECLARED = _Plan(None)
_PLANS: dict[int, _Plan] = {}  # by id(node): schema nodes live as long as the process


def _plan(node: Node | None) -> _Plan:
    if node is None:
        return _UNDECLARED
    found = _PLANS.get(id(node))
    if found is None or found.node is not node:
        if len(_PLANS) >= 1 << 16:
            _PLANS.clear()
        found = _PLANS[id(node)] = _Plan(node)
    return found


def _owned(value: dict[str, Any], plan: _Plan, where: int, zero: Any) -> dict[str, Any] | None:
    """`with_added_nodes(_fieldset(value), zero)` of a non-empty map that `plan` walks and that the kind's
    zero value has (`zero`, its value there), without building the field set first; None when the field set
    is None (every field server-owned)."""
    out: dict[str, Any] = {}
    owns = False
    zero_map: dict[str, Any] = zero if isinstance(zero, dict) else {}
    children = plan.children
    for k in sorted(value):
        if where == _ROOT:
            if k == "apiVersion" or k == "kind":
                continue
        elif where == _METADATA and k in _SERVER_META:
            continue
        entry = children.get(k) or plan.child(k)
        key, sub_plan = entry
        v = value[k]
        sub: dict[str, Any] | None = None  # None: a leaf
        walked = isinstance(v, dict) and len(v) > 0 and sub_plan.walks_maps
        memo = walked and where == _ROOT and k in _MEMOISED_SECTIONS and _memo_pays(sub_plan, key)
        if k in zero_map:  # not added: its fields may be
            if walked and where == _ROOT and k == "metadata" and v.keys() <= _SERVER_META:
                continue  # (the usual metadata of a create: the server's own, nobody's field)
            if memo:
                raw = _section_fieldset(v, sub_plan.node, key)  # type: ignore[arg-type]
                if raw is None:
                    continue
                sub = with_added_nodes(raw, zero_map[k])
            elif walked:
                sub = _owned(v, sub_plan, _METADATA if where == _ROOT and k == "metadata" else _BELOW, zero_map[k])
                if sub is None:
                    continue
            elif isinstance(v, list) and v and sub_plan.keyed:
                sub = _added_items(v, sub_plan)
                if sub is not None:
                    del sub["."]
            owns = True
            if sub is not None:
                out[key] = sub
            elif zero_map[k] != {}:
                out[key] = {}
            # else an empty struct the zero value has too: unchanged, so nobody's
            continue
        if walked:
            if where == _ROOT and k == "metadata":
                sub = _owned(v, sub_plan, _METADATA, None)
                sub = None if sub is None else sub if "." in sub else {".": {}, **sub}
            elif memo:
                raw = _section_fieldset(v, sub_plan.node, key)  # type: ignore[arg-type]
                sub = None if raw is None else {".": {}, **with_added_nodes(raw, None)}
            else:
                sub = _added(v, sub_plan)
            if sub is None:
                continue
        elif isinstance(v, list) and v and sub_plan.keyed:
            sub = _added_items(v, sub_plan)
        owns = True
        out[key] = {} if sub is None else sub
    return out if owns else None


def _added(value: dict[str, Any], plan: _Plan) -> dict[str, Any]:
    """The owned fields of a non-empty map that `plan` walks and that the create added whole: `"."` and
    every field, the maps and keyed lists among them added whole too."""
    out: dict[str, Any] = {".": {}}
    children = plan.children
    for k in sorted(value):
        key, sub_plan = children.get(k) or plan.child(k)
        v = value[k]
        t = type(v)
        if t is str or t is int or t is bool or v is None or t is float:
            out[key] = {}  # a leaf, whatever the schema says
            continue
        if isinstance(v, dict):
            if v and sub_plan.walks_maps:
                out[key] = _added(v, sub_plan)
                continue
        elif isinstance(v, list) and v and sub_plan.keyed:
            sub = _added_items(v, sub_plan)
            if sub is not None:
                out[key] = sub
                continue
        out[key] = {}
    return out


def _added_items(value: list[Any], plan: _Plan) -> dict[str, Any] | None:
    """The owned items of a non-empty associative list added whole (`"."` first: items are never in a zero
    value), or None when the list is owned whole (an item without a key)."""
    node = plan.node
    assert node is not None
    keys = plan.item_keys
    name = keys[0] if len(keys) == 1 else None
    keyed: list[str] = []
    try:
        for x in value:
            # an item with its key fields, as item_element writes it (the others: item_element itself)
            if name is not None and type(x) is dict and name in x:
                key = x[name]
                if type(key) is str and (key.isalnum() or _PLAIN.fullmatch(key)):  # JSON writes it as it is
                    keyed.append(f'{plan.item_prefix}"{key}"}}')
                else:
                    keyed.append("k:" + orjson.dumps({name: key}).decode())
            elif keys and name is None and type(x) is dict and all(k in x for k in keys):
                keyed.append("k:" + orjson.dumps({k: x[k] for k in keys}).decode())
            else:
                keyed.append(typed.item_element(x, node))
    except typed.SchemaError:
        return None
    items = plan.items
    out: dict[str, Any] = {".": {}}
    n = len(keyed)
    order: Any = None  # the items in their keys' order, when no two share one
    if n == 1:
        order = (0,)
    elif n == 2:
        order = (0, 1) if keyed[0] < keyed[1] else (1, 0) if keyed[1] < keyed[0] else None
    elif len(set(keyed)) == n:
        order = sorted(range(n), key=keyed.__getitem__)
    if order is not None:
        for i in order:
            item_key, item = keyed[i], value[i]
            if item_key[0] != "k":
                out[item_key] = {}  # a set's value
            elif isinstance(item, dict) and item and items.walks_maps:
                out[item_key] = _added(item, items)
            else:
                out[item_key] = {".": {}}
        return out
    duplicated = {k for k in keyed if keyed.count(k) > 1}
    found: dict[str, Any] = {}
    for item_key, item in zip(keyed, value, strict=True):
        if item_key in duplicated or not item_key.startswith("k:"):
            found[item_key] = {}  # a set's value, or items sharing a key (owned as one, atomically)
        elif isinstance(item, dict) and item and items.walks_maps:
            found[item_key] = _added(item, items)
        else:
            found[item_key] = {".": {}}
    for k in sorted(found):
        out[k] = found[k]
    return out


# Whether a memoised section's field sets repeat: (lookups, hits) per (node id, section) since the last probe.
# Sections whose content rarely repeats (custom resources, each configured on its own) skip the memo, whose
# canonical JSON and copies then cost more than they save; they are probed again now and then.
_MEMO_USE: dict[tuple[int, str], list[int]] = {}
_PROBE, _REPROBE = 64, 1 << 14


def _memo_pays(plan: _Plan, key: str) -> bool:
    """Whether to look a section's field set up in the memo (never for a field the schema does not declare)."""
    node = plan.node
    if node is None:
        return False
    use = _MEMO_USE.get((id(node), key))
    if use is None:
        use = _MEMO_USE[(id(node), key)] = [0, 0]
    lookups, hits = use
    if lookups < _PROBE or hits * 3 >= lookups:
        return True
    use[0] += 1  # counts the skipped lookups, until the next probe
    if lookups >= _PROBE + _REPROBE:
        use[0] = use[1] = 0
    return False


def with_added_nodes(fields: dict[str, Any], zero: Any) -> dict[str, Any]:
    """A create's field set with `"."` on every node the create added whole: one absent from the kind's zero
    value (`zero`, the JSON Go writes for an empty object of the kind) that has owned children. Upstream's
    create compares the object with that zero value and owns each added node itself as well as its fields:
    `labels` (omitempty, absent when empty) is `{".": {}, "f:app": {}}`, a pointer struct the client filled
    in likewise, while `spec` (a struct Go always writes) and `containers` (written as null) are not."""
    out: dict[str, Any] = {}
    for key, sub in fields.items():
        if not sub and key.startswith("f:") and isinstance(zero, dict) and zero.get(key[2:], None) == {}:
            continue  # an empty struct the zero value has too: unchanged, so nobody's
        if not sub or key == ".":
            out[key] = sub
            continue
        if key.startswith("f:") and isinstance(zero, dict) and key[2:] in zero:
            out[key] = with_added_nodes(sub, zero[key[2:]])
            continue
        below = with_added_nodes(sub, None)  # under an added node everything was added
        out[key] = below if "." in below else {".": {}, **below}
    return out


def default_manager(user_agent: str) -> str:
    """Upstream's default field manager: the User-Agent up to its first '/' (e.g. `kubectl`)."""
    name = user_agent.split("/", 1)[0].strip() if user_agent else ""
    return name[:128] or "unknown"

"""managedFields of a create, fast (upstream: apimachinery/pkg/util/managedfields, an `Update` from the
kind's zero value): the creator owns every field it set, in upstream's FieldsV1 form, with `"."` on the nodes
the create added whole (`with_added_nodes`). Creates are hot, so this walks the object once and memoises the
field sets of workloads' repeated specs; every other write goes through api/field_manager, whose general
rule a create equals (tests/api/test_managed_fields.py checks the two agree).
"""

from __future__ import annotations

from typing import Any

import orjson

from .content_memo import ContentMemo
from .meta import Object, rfc3339
from .schema import Node
from .structured_merge import typed

Path = tuple[str, ...]
# Metadata the server owns: never part of a manager's fields (upstream's stripMetaManager).
_SERVER_META = {"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "managedFields",
                "selfLink", "clusterName"}  # fmt: skip


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
    data = _SECTIONS.get(value, lambda: orjson.dumps(_fieldset(value, node, (key,))), extra=(id(node), key))
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

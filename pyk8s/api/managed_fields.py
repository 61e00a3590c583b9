"""managedFields for non-apply writes: which manager last set which fields (upstream:
apimachinery/pkg/util/managedfields, for `Update` operations).

A create gives its field manager every field it set; an update gives its manager the fields it changed and
takes them from the other managers; a manager left owning nothing is dropped. Field sets use upstream's
FieldsV1 form: `f:<name>` for fields, `k:{...}` for items of lists keyed by their list-map keys, `v:<json>`
for items of sets, and `.` for a node owned itself as well as through its fields (a list item; on create,
anything the create added whole: `with_added_nodes`). Server-apply (`Apply` operations, conflicts) is not
implemented yet.
"""

from __future__ import annotations

from typing import Any

import orjson

from .content_memo import ContentMemo
from .meta import Object, rfc3339
from .schema import Node

Path = tuple[str, ...]
_ABSENT = object()
# Metadata the server owns: never part of a manager's fields.
_SERVER_META = {"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink", "generateName"}  # fmt: skip


def _not_a_field(path: Path, name: str) -> bool:
    """Whether `name` below `path` is left out of every manager's fields: the kind's apiVersion and kind, and
    the metadata the server owns."""
    return (not path and name in ("apiVersion", "kind")) or (path == ("f:metadata",) and name in _SERVER_META)


def _item_key(item: Any, node: Node | None) -> str | None:
    if node is None:
        return None
    keys, is_set = node.item_keying
    if keys and isinstance(item, dict) and all(k in item for k in keys):
        return "k:" + orjson.dumps({k: item[k] for k in keys}).decode()
    if is_set and not isinstance(item, dict | list):
        return "v:" + orjson.dumps(item).decode()
    return None


def leaves(value: Any, node: Node | None, path: Path = ()) -> dict[Path, Any]:
    """Every leaf of `value` by its FieldsV1 path, with its value."""
    out: dict[Path, Any] = {}
    if isinstance(value, dict) and value and not (node is not None and node.open_ended and not node.is_object):
        for k, v in value.items():
            if _not_a_field(path, k):
                continue
            child = node.child(k) if node is not None else None
            out.update(leaves(v, child, (*path, f"f:{k}")))
        return out
    if isinstance(value, list) and value and node is not None:
        items = node.items()
        keyed = [_item_key(x, node) for x in value]
        if all(keyed):
            for key, item in zip(keyed, value, strict=True):
                assert key is not None
                if key.startswith("k:"):
                    out[(*path, key, ".")] = item
                    out.update(leaves(item, items, (*path, key)))
                else:
                    out[(*path, key)] = item
            return out
    out[path] = value
    return out


def fieldset(value: Any, node: Node | None, path: Path = ()) -> dict[str, Any]:
    """The FieldsV1 of every leaf of `value`, built in one pass: what `_nest(set(leaves(value, node)))`
    gives, without the intermediate paths (a create records exactly this, and creates are hot).

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
    if isinstance(value, dict) and value and not (node is not None and node.open_ended and not node.is_object):
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
            for item_key, item in zip(keyed, value, strict=True):
                assert item_key is not None
                if item_key.startswith("k:"):
                    out[item_key] = {".": {}, **(_fieldset(item, items, (*path, item_key)) or {})}
                else:
                    out[item_key] = {}
            return {k: out[k] for k in sorted(out)}
    return {}


_END = ""  # in a trie of paths, the key marking that a path ends at this node (no FieldsV1 key is empty)


def _trie(paths: set[Path]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for p in paths:
        cur = root
        for part in p:
            cur = cur.setdefault(part, {})
        cur[_END] = {}
    return root


def _without(fields: dict[str, Any], changed: dict[str, Any]) -> dict[str, Any] | None:
    """`fields` (FieldsV1) less every field that overlaps a path of the trie `changed`: one of those paths, a
    prefix of one, or below one. None when nothing overlaps (`fields` stays as it is)."""
    out: dict[str, Any] = {}
    removed = False
    for part, sub in fields.items():
        below = changed.get(part) if part != _END else None
        if below is None:
            out[part] = sub  # no changed path goes through here
        elif _END in below or not (isinstance(sub, dict) and sub):
            removed = True  # a changed field, one below a changed field, or a field holding changed ones
        else:
            rest = _without(sub, below)
            if rest is None:
                out[part] = sub
            else:
                removed = True
                if rest:
                    out[part] = rest
    return out if removed else None


def _nest(paths: set[Path]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for p in sorted(paths):
        cur = root
        for part in p:
            cur = cur.setdefault(part, {})
    return root


def record(
    new: Object,
    old: Object | None,
    node: Node | None,
    manager: str,
    api_version: str,
    subresource: str = "",
) -> None:
    """Update `new`'s managedFields for a write by `manager` (create when `old` is None)."""
    md = new.setdefault("metadata", {})
    entries = [e for e in (md.get("managedFields") or []) if isinstance(e, dict)]
    if old is not None and "managedFields" not in md:
        entries = [e for e in ((old.get("metadata") or {}).get("managedFields") or []) if isinstance(e, dict)]
    if old is None and not entries:
        # A create with no managedFields of its own: the manager owns every field it set.
        fields_v1 = fieldset(new, node)
        if fields_v1:
            entry = {"manager": manager, "operation": "Update", "apiVersion": api_version, "time": rfc3339(),
                     "fieldsType": "FieldsV1", "fieldsV1": fields_v1}  # fmt: skip
            if subresource:
                entry["subresource"] = subresource
            md["managedFields"] = [entry]
        else:
            md.pop("managedFields", None)
        return

    def is_mine(e: dict[str, Any]) -> bool:
        return (
            e.get("manager") == manager and e.get("operation") == "Update" and e.get("subresource", "") == subresource
        )

    mine: dict[str, Any] | None = None
    for e in entries:
        if is_mine(e):
            mine = e  # the last of them, should there be several
    differing: set[str] | None = None  # the top-level sections the write changed (None: all of them)
    if old is None or not isinstance(old, dict):
        changed = set(leaves(new, node))
    else:
        # Only the top-level sections that differ can hold changed fields (a status write leaves spec alone),
        # and within them only the subtrees that differ: equal values have equal leaves.
        differing = {
            k
            for k in new.keys() | old.keys()
            if k not in ("apiVersion", "kind") and new.get(k, _ABSENT) != old.get(k, _ABSENT)
        }
        changed = set()
        for k in differing:
            if k in new:
                child = node.child(k) if node is not None else None
                _changed_leaves(new[k], old.get(k, _ABSENT), child, (f"f:{k}",), changed)
    if not changed:
        md["managedFields"] = entries
        if not entries:
            md.pop("managedFields", None)
        return
    changed_trie = _trie(changed)
    kept = []
    for e in entries:
        if is_mine(e):
            continue
        owned = e.get("fieldsV1") or {}
        if differing is not None and not any(k[2:] in differing for k in owned):
            kept.append(e)  # nothing it owns is in a section this write changed
            continue
        rest = _without(owned, changed_trie)
        if rest is None:
            kept.append(e)  # it owns none of the changed fields
        elif rest:
            kept.append({**e, "fieldsV1": rest})
        # else: it owned nothing but changed fields, and is dropped
    # What the manager owned stays its own while the object still has it; what it changed is there.
    owned_now = set(changed)
    if mine is not None and isinstance(mine.get("fieldsV1"), dict):
        _still_owned(mine["fieldsV1"], new, node, (), owned_now)
    entry = {
        "manager": manager,
        "operation": "Update",
        "apiVersion": api_version,
        "time": rfc3339(),
        "fieldsType": "FieldsV1",
        "fieldsV1": _nest(owned_now),
    }
    if subresource:
        entry["subresource"] = subresource
    md["managedFields"] = [*kept, entry]


def _decomposes(value: Any, node: Node | None) -> bool:
    """Whether `leaves` goes below `value` (a non-empty map with fields, or a list all of whose items are keyed)
    rather than taking it as one leaf; for lists the keys are checked by the caller."""
    if isinstance(value, dict):
        return bool(value) and not (node is not None and node.open_ended and not node.is_object)
    return isinstance(value, list) and bool(value) and node is not None


def _keyed(items: list[Any], node: Node) -> dict[str, Any] | None:
    """A keyed list's items by their FieldsV1 keys (the last of duplicates, as `leaves` keeps it), or None when
    some item has no key (the list is then one leaf)."""
    out: dict[str, Any] = {}
    for x in items:
        key = _item_key(x, node)
        if key is None:
            return None
        out[key] = x
    return out


def _changed_leaves(new: Any, old: Any, node: Node | None, path: Path, out: set[Path]) -> None:
    """Add to `out` the paths of `leaves(new)` under `path` that `leaves(old)` lacks or holds another value at:
    `{p for p, v in leaves(new).items() if leaves(old).get(p, absent) != v}`, walking only where the two differ."""
    if new is old or (old is not _ABSENT and old == new):
        return
    if _decomposes(new, node) and isinstance(new, dict):
        old_fields = old if isinstance(old, dict) and _decomposes(old, node) else None
        for k, v in new.items():
            if _not_a_field(path, k):
                continue
            child = node.child(k) if node is not None else None
            before = old_fields.get(k, _ABSENT) if old_fields is not None else _ABSENT
            _changed_leaves(v, before, child, (*path, f"f:{k}"), out)
        return
    if _decomposes(new, node) and node is not None:
        keyed = _keyed(new, node)
        if keyed is not None:
            if len(keyed) < len(new):
                # Duplicate keys: `leaves` merges the items' fields, so compare its plain output.
                before = leaves(old, node, path) if old is not _ABSENT else {}
                out.update(p for p, v in leaves(new, node, path).items() if before.get(p, _ABSENT) != v)
                return
            old_keyed = _keyed(old, node) if isinstance(old, list) and _decomposes(old, node) else None
            if old_keyed is not None and len(old_keyed) < len(old):
                before = leaves(old, node, path)
                out.update(p for p, v in leaves(new, node, path).items() if before.get(p, _ABSENT) != v)
                return
            items = node.items()
            for key, item in keyed.items():
                was = old_keyed.get(key, _ABSENT) if old_keyed is not None else _ABSENT
                if key.startswith("k:"):
                    if was is _ABSENT or was != item:
                        out.add((*path, key, "."))
                    _changed_leaves(item, was, items, (*path, key), out)
                elif was is _ABSENT:
                    out.add((*path, key))
            return
    # `new` is one leaf at `path`, and `old` differs from it (or `old` is split into leaves below `path`).
    out.add(path)


def _leaf_paths(fields: dict[str, Any], path: Path) -> list[Path]:
    """The paths of the leaves of a FieldsV1 tree below `path`."""
    out: list[Path] = []
    for part, sub in fields.items():
        if isinstance(sub, dict) and sub:
            out += _leaf_paths(sub, (*path, part))
        else:
            out.append((*path, part))
    return out


def _still_owned(fields: dict[str, Any], value: Any, node: Node | None, path: Path, out: set[Path]) -> None:
    """Add to `out` the paths of the leaves of `fields` (a manager's FieldsV1 below `path`) that `value`, the object's
    value at `path`, still has: those that are, or lead to, one of its leaves. One walk of both trees, as deep
    as the manager's fields go."""
    if not _decomposes(value, node):
        return  # a leaf: nothing below it
    keyed = None
    if not isinstance(value, dict):
        assert node is not None
        keyed = _keyed(value, node)
        if keyed is None:
            return  # a list kept whole
        if len(keyed) < len(value):
            # Duplicate keys: `leaves` merges the items' fields, so look among its plain output.
            present = {q[:i] for q in leaves(value, node, path) for i in range(len(q) + 1)}
            out.update(q for q in _leaf_paths(fields, path) if q in present)
            return
    for part, sub in fields.items():
        p = (*path, part)
        if keyed is None:
            name = part[2:]
            if not part.startswith("f:") or name not in value:
                continue
            if _not_a_field(path, name):
                continue
            child, child_node = value[name], (node.child(name) if node is not None else None)
        else:
            if part not in keyed:
                continue
            if part.startswith("v:"):
                if not (isinstance(sub, dict) and sub):
                    out.add(p)  # an item of a set is a leaf: nothing below it
                continue
            assert node is not None
            child, child_node = keyed[part], node.items()
            if isinstance(sub, dict) and "." in sub and not (isinstance(sub["."], dict) and sub["."]):
                out.add((*p, "."))
        if isinstance(sub, dict) and sub:
            _still_owned(sub, child, child_node, p, out)
        elif not (p == ("f:metadata",) and isinstance(child, dict) and child and all(k in _SERVER_META for k in child)):
            out.add(p)  # a leaf, or a value with leaves below it (server-owned metadata alone has none)


def with_added_nodes(fields: dict[str, Any], zero: Any) -> dict[str, Any]:
    """A create's field set with `"."` on every node the create added whole: one absent from the kind's zero
    value (`zero`, the JSON Go writes for an empty object of the kind) that has owned children. Upstream's
    create compares the object with that zero value and owns each added node itself as well as its fields:
    `labels` (omitempty, absent when empty) is `{".": {}, "f:app": {}}`, a pointer struct the client filled
    in likewise, while `spec` (a struct Go always writes) and `containers` (written as null) are not."""
    out: dict[str, Any] = {}
    for key, sub in fields.items():
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

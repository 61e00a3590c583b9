"""managedFields for non-apply writes: which manager last set which fields (upstream:
apimachinery/pkg/util/managedfields, for `Update` operations).

A create gives its field manager every field it set; an update gives its manager the fields it changed and
takes them from the other managers; a manager left owning nothing is dropped. Field sets use upstream's
FieldsV1 form: `f:<name>` for fields, `k:{...}` for items of lists keyed by their list-map keys, `v:<json>`
for items of sets, and `.` for a list item itself. Server-apply (`Apply` operations, conflicts) is not
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


def _item_key(item: Any, node: Node | None) -> str | None:
    if node is None:
        return None
    keys = node.list_map_keys or ([node.patch_merge_key] if node.patch_merge_key else [])
    if node.list_type == "map" or (keys and "merge" in node.patch_strategies):
        if isinstance(item, dict) and all(k in item for k in keys) and keys:
            return "k:" + orjson.dumps({k: item[k] for k in keys}).decode()
    if node.list_type == "set" and not isinstance(item, dict | list):
        return "v:" + orjson.dumps(item).decode()
    return None


def leaves(value: Any, node: Node | None, path: Path = ()) -> dict[Path, Any]:
    """Every leaf of `value` by its FieldsV1 path, with its value."""
    out: dict[Path, Any] = {}
    if isinstance(value, dict) and value and not (node is not None and node.open_ended and not node.is_object):
        for k, v in value.items():
            if not path and k in ("apiVersion", "kind"):
                continue
            if path == ("f:metadata",) and k in _SERVER_META:
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
            if not path and k in ("apiVersion", "kind"):
                continue
            if path == ("f:metadata",) and k in _SERVER_META:
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


def _nest(paths: set[Path]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for p in sorted(paths):
        cur = root
        for part in p:
            cur = cur.setdefault(part, {})
    return root


def _flatten(fields: dict[str, Any], prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    for k, v in fields.items():
        p = (*prefix, k)
        if isinstance(v, dict) and v:
            out |= _flatten(v, p)
        else:
            out.add(p)
    return out


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
    mine_owned = _flatten(mine.get("fieldsV1") or {}) if mine else set()
    differing: set[str] | None = None  # the top-level sections the write changed (None: all of them)
    if old is None or not isinstance(old, dict):
        new_leaves = leaves(new, node)
        changed = set(new_leaves)
    else:
        # Only the top-level sections that differ can hold changed fields (a status write leaves spec alone);
        # of the others, only those the manager already owns fields in are walked, to see those fields still exist.
        differing = {
            k
            for k in new.keys() | old.keys()
            if k not in ("apiVersion", "kind") and new.get(k, _ABSENT) != old.get(k, _ABSENT)
        }
        walked = differing | {p[0][2:] for p in mine_owned if p}
        new_leaves = _section_leaves(new, node, walked)
        old_leaves = _section_leaves(old, node, differing)
        changed = {
            p
            for p, v in new_leaves.items()
            if p and p[0][2:] in differing and (p not in old_leaves or old_leaves[p] != v)
        }
    if not changed:
        md["managedFields"] = entries
        if not entries:
            md.pop("managedFields", None)
        return
    # A field overlaps the changed ones when it is one of their prefixes or has one of them as a prefix.
    changed_prefixes = {c[:i] for c in changed for i in range(len(c) + 1)}

    def overlaps(p: Path) -> bool:
        return p in changed_prefixes or any(p[:i] in changed for i in range(len(p)))

    kept = []
    for e in entries:
        if is_mine(e):
            continue
        if differing is not None and not any(k[2:] in differing for k in e.get("fieldsV1") or {}):
            kept.append(e)  # nothing it owns is in a section this write changed
            continue
        owned = _flatten(e.get("fieldsV1") or {})
        rest = {p for p in owned if not overlaps(p)} if owned else owned
        if owned and not rest:
            continue
        kept.append({**e, "fieldsV1": _nest(rest)} if owned != rest else e)
    present = {q[:i] for q in new_leaves for i in range(len(q) + 1)}
    owned_now = {p for p in mine_owned | changed if p in present}
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


def _section_leaves(obj: Object, node: Node | None, sections: set[str]) -> dict[Path, Any]:
    """`leaves(obj, node)` restricted to the top-level fields named in `sections`."""
    out: dict[Path, Any] = {}
    for k in sections:
        if k in obj and k not in ("apiVersion", "kind"):
            out.update(leaves(obj[k], node.child(k) if node is not None else None, (f"f:{k}",)))
    return out


def default_manager(user_agent: str) -> str:
    """Upstream's default field manager: the User-Agent up to its first '/' (e.g. `kubectl`)."""
    name = user_agent.split("/", 1)[0].strip() if user_agent else ""
    return name[:128] or "unknown"

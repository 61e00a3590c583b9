"""Patches: JSON patch (RFC 6902), JSON merge patch (RFC 7386) and Kubernetes' strategic merge patch.

Strategic merge patch follows upstream's rules (apimachinery/pkg/util/strategicpatch): lists whose schema says
`x-kubernetes-patch-strategy: merge` merge by their `x-kubernetes-patch-merge-key` (or as sets, for lists of
primitives) instead of being replaced; the directives `$patch` (replace, delete, merge), `$retainKeys`,
`$setElementOrder/<list>` and `$deleteFromPrimitiveList/<list>` are honoured. Computing patches (what kubectl
sends) is the client's side: `pyk8s.client.three_way_patch`.
"""

from __future__ import annotations

from typing import Any

import orjson

from .meta import json_copy
from .schema import Node


class PatchError(ValueError):
    """A patch that is malformed or cannot be applied to the object (the API answers 400 or 422)."""


# -- JSON merge patch --------------------------------------------------------------------------------------


def merge_patch(original: Any, patch: Any, *, in_place: bool = False) -> Any:
    """RFC 7386: objects merge recursively, null removes a key, anything else replaces.

    The result shares nothing with `patch`. With `in_place` the caller gives up `original` (a copy of its own):
    it is merged into and returned, and only what the patch replaces is new, instead of copying it whole."""
    if not isinstance(patch, dict):
        return json_copy(patch)
    if not isinstance(original, dict):
        result: dict[str, Any] = {}
    else:
        result = original if in_place else json_copy(original)
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v, in_place=True)
    return result


# -- JSON patch --------------------------------------------------------------------------------------------


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str):
        raise PatchError(f"path must be a string, not {type(path).__name__}")
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"JSON pointer must start with '/': {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str], path: str) -> Any:
    cur = doc
    for p in parts:
        if isinstance(cur, dict):
            if p not in cur:
                raise PatchError(f"doc is missing path: {path}")
            cur = cur[p]
        elif isinstance(cur, list):
            idx = _index(p, len(cur), path)
            if idx >= len(cur):
                raise PatchError(f"doc is missing path: {path}")
            cur = cur[idx]
        else:
            raise PatchError(f"doc is missing path: {path}")
    return cur


def _index(p: str, length: int, path: str, *, allow_end: bool = False) -> int:
    if p == "-" and allow_end:
        return length
    if not p.isdigit() or (len(p) > 1 and p[0] == "0"):
        raise PatchError(f"invalid array index {p!r} in {path}")
    i = int(p)
    if i > length or (i == length and not allow_end):
        raise PatchError(f"unable to access invalid index: {i} in {path}")
    return i


def _add(doc: Any, parts: list[str], value: Any, path: str) -> Any:
    if not parts:
        return value
    parent = _walk(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(last, len(parent), path, allow_end=True), value)
    else:
        raise PatchError(f"doc is missing path: {path}")
    return doc


def _remove(doc: Any, parts: list[str], path: str) -> Any:
    if not parts:
        raise PatchError("cannot remove the whole document")
    parent = _walk(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"unable to remove nonexistent key: {last}: missing value")
        return parent.pop(last)
    if isinstance(parent, list):
        i = _index(last, len(parent), path)
        return parent.pop(i)
    raise PatchError(f"doc is missing path: {path}")


# Upstream bounds what `copy` operations may add, together, at the request body limit (JSONPatchMaxCopyBytes).
MAX_COPY_BYTES = 3 * 1024 * 1024


def json_patch(original: Any, operations: Any, max_copy_bytes: int = MAX_COPY_BYTES) -> Any:
    """Apply an RFC 6902 patch; PatchError for a malformed operation, a failed `test`, or `copy` operations
    that together add more than `max_copy_bytes` (a small patch must not make a huge object)."""
    if not isinstance(operations, list):
        raise PatchError("a JSON patch must be a list of operations")
    doc = json_copy(original)
    copied = 0
    for op in operations:
        if not isinstance(op, dict) or "op" not in op:
            raise PatchError(f"invalid operation {op!r}")
        kind, raw_path = op["op"], op.get("path")
        parts = _pointer(raw_path)  # a missing or non-string path is an error here
        path = str(raw_path)
        if kind in ("add", "replace", "test") and "value" not in op:
            raise PatchError(f"missing value for {kind} operation")
        if kind == "add":
            doc = _add(doc, parts, json_copy(op["value"]), path)
        elif kind == "remove":
            _remove(doc, parts, path)
        elif kind == "replace":
            _walk(doc, parts, path)  # must exist
            if not parts:
                doc = json_copy(op["value"])
            else:
                _remove(doc, parts, path)
                doc = _add(doc, parts, json_copy(op["value"]), path)
        elif kind in ("move", "copy"):
            src = _pointer(op.get("from"))
            from_path = str(op.get("from"))
            value = _walk(doc, src, from_path)
            if kind == "copy" and max_copy_bytes > 0:
                copied += _json_size(value)
                if copied > max_copy_bytes:
                    raise PatchError(
                        f"Unable to complete the copy, the accumulated size increase of copy is {copied}, "
                        f"exceeding the limit {max_copy_bytes}"
                    )
            if kind == "move":
                if parts[: len(src)] == src and len(parts) > len(src):
                    raise PatchError("cannot move a value into one of its children")
                _remove(doc, src, from_path)
            doc = _add(doc, parts, json_copy(value), path)
        elif kind == "test":
            if _walk(doc, parts, path) != op["value"]:
                raise PatchError(f"testing value {path} failed")
        else:
            raise PatchError(f"Unexpected kind: {kind}")
    return doc


def _json_size(value: Any) -> int:
    try:
        return len(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):
        return MAX_COPY_BYTES + 1  # too deep or not JSON: more than any copy may add


# -- strategic merge patch ---------------------------------------------------------------------------------

PATCH = "$patch"
RETAIN_KEYS = "$retainKeys"
SET_ORDER = "$setElementOrder/"
DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"
_DELETE = object()


def _strategy(node: Node | None) -> tuple[bool, str, bool]:
    """(merge list?, merge key, retainKeys?) for the field `node` describes."""
    if node is None:
        return False, "", False
    s = node.patch_strategies
    return "merge" in s, node.patch_merge_key, "retainKeys" in s


def strategic_merge(original: Any, patch: Any, node: Node | None) -> Any:
    """Apply a strategic merge patch to `original` (a dict), guided by the schema `node`."""
    if not isinstance(patch, dict):
        raise PatchError("a strategic merge patch must be a JSON object")
    result = _merge_map(original if isinstance(original, dict) else {}, patch, node)
    if result is _DELETE:
        return {}
    return result


def _strip(value: Any) -> Any:
    """A patch value with its directives removed (what is stored when it replaces something)."""
    if isinstance(value, dict):
        return {
            k: _strip(v)
            for k, v in value.items()
            if k not in (PATCH, RETAIN_KEYS) and not k.startswith((SET_ORDER, DELETE_PRIMITIVE))
        }
    if isinstance(value, list):
        return [_strip(v) for v in value if not (isinstance(v, dict) and v.get(PATCH) in ("delete", "replace"))]
    return value


def _merge_map(original: dict[str, Any], patch: dict[str, Any], node: Node | None) -> Any:
    directive = patch.get(PATCH)
    if directive == "delete":
        return _DELETE
    if directive == "replace":
        return _strip(patch)
    if directive not in (None, "merge"):
        raise PatchError(f"Unknown patch type: {directive}")
    result = json_copy(original)
    retain = patch.get(RETAIN_KEYS)
    if retain is not None:
        if not isinstance(retain, list):
            raise PatchError(f"{RETAIN_KEYS} must be a list")
        result = {k: v for k, v in result.items() if k in retain}
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in (PATCH, RETAIN_KEYS):
            continue
        if key.startswith(SET_ORDER):
            orders[key[len(SET_ORDER) :]] = value
            continue
        if key.startswith(DELETE_PRIMITIVE):
            name = key[len(DELETE_PRIMITIVE) :]
            if isinstance(result.get(name), list) and isinstance(value, list):
                result[name] = [x for x in result[name] if x not in value]
            continue
        child = node.child(key) if node is not None else None
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            current = result.get(key)
            merged = _merge_map(current if isinstance(current, dict) else {}, value, child)
            if merged is _DELETE:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _merge_list(result.get(key), value, child)
        else:
            result[key] = value
    for name, order in orders.items():
        if isinstance(result.get(name), list) and isinstance(order, list):
            child = node.child(name) if node is not None else None
            result[name] = _apply_order(result[name], order, _strategy(child)[1])
    return result


def _merge_list(original: Any, patch: list[Any], node: Node | None) -> list[Any]:
    merge, key, _ = _strategy(node)
    items_node = node.items() if node is not None else None
    if any(isinstance(x, dict) and x.get(PATCH) == "replace" for x in patch):
        return [_strip(x) for x in patch if not (isinstance(x, dict) and x.get(PATCH) == "replace")]
    if not merge:
        return _strip(patch)
    base = list(original) if isinstance(original, list) else []
    if not key:
        # A set of primitives: add what is new, keep the rest.
        out = json_copy(base)
        for v in patch:
            if v not in out:
                out.append(json_copy(v))
        return out
    out = json_copy(base)
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError(f"the list item {item!r} is not a map but the list merges by key {key!r}")
        if key not in item:
            raise PatchError(f"map: {item} does not contain declared merge key: {key}")
        k = item[key]
        idx = next((i for i, x in enumerate(out) if isinstance(x, dict) and x.get(key) == k), None)
        if item.get(PATCH) == "delete":
            out = [x for x in out if not (isinstance(x, dict) and x.get(key) == k)]
            continue
        if idx is None:
            merged = _merge_map({}, item, items_node)
            if merged is not _DELETE:
                out.append(merged)
        else:
            merged = _merge_map(out[idx], item, items_node)
            if merged is _DELETE:
                out.pop(idx)
            else:
                out[idx] = merged
    return out


def _apply_order(items: list[Any], order: list[Any], key: str) -> list[Any]:
    """Reorder `items` as `order` lists them; items it does not mention keep their place after those."""

    def ident(x: Any) -> Any:
        return x.get(key) if key and isinstance(x, dict) else x

    wanted = [ident(o) for o in order]
    rank: dict[Any, int] = {}
    for i, w in enumerate(wanted):
        try:
            rank.setdefault(w, i)
        except TypeError:
            continue
    listed = [x for x in items if _hashable(ident(x)) and ident(x) in rank]
    rest = [x for x in items if not (_hashable(ident(x)) and ident(x) in rank)]
    listed.sort(key=lambda x: rank[ident(x)])
    return listed + rest


def _hashable(x: Any) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True

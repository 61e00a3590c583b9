"""The three-way patch `kubectl apply` sends: from original (the last-applied annotation), modified (the
manifest with its new annotation) and current (the live object).

- A strategic merge patch when the kind has a schema (upstream: apimachinery strategicpatch.CreateThreeWayMergePatch
  with overwrite, built here on the schema's patch strategies and merge keys, with `$setElementOrder`,
  `$deleteFromPrimitiveList` and `$retainKeys` as upstream emits them; the deletions patch and the
  changes-and-additions patch are joined as upstream's mergeMap with MergeOptions{} joins them):
  `three_way_strategic_patch`.
- A JSON merge patch otherwise (custom resources; upstream: apimachinery jsonmergepatch.CreateThreeWayJSONMergePatch,
  on evanphx/json-patch CreateMergePatch, with kubectl's preconditions that apiVersion, kind and name must not
  change): `three_way_merge_patch`.

Both keep what another client set and the manifest never mentioned, and return `{}` when there is nothing to
send. A patch that cannot be built raises `PatchError` (strategic) or `ApplyError` (merge).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import Any

from ..api.gofmt import go_float
from ..api.patch import PatchError
from ..api.schema import Node
from .last_applied import ApplyError, go_json

# -- strategic merge: the three-way patch ------------------------------------------------------------------


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dict):
        return "map"
    if isinstance(v, list):
        return "list"
    return type(v).__name__


def _equal(a: Any, b: Any) -> bool:
    """Deep equality that, like Go's reflect.DeepEqual on decoded JSON, tells `true` from `1`."""
    ka = _kind(a)
    if ka != _kind(b):
        return False
    if ka == "map":
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if ka == "list":
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _fmt(v: Any) -> str:
    """A scalar as Go's `%v` prints it: upstream sorts and pairs list items by this text."""
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return go_float(v)
    if isinstance(v, dict | list):
        return go_json(v)
    return str(v)


@dataclass(frozen=True)
class _Meta:
    node: Node | None
    strategy: str  # "merge", "replace" or ""
    retain_keys: bool
    merge_key: str

    @property
    def items(self) -> Node | None:
        return self.node.items() if self.node is not None else None


_NO_META = _Meta(None, "", False, "")


def _meta(node: Node | None, key: str) -> _Meta:
    """The patch metadata of field `key` below `node` (upstream: LookupPatchMetadataForStruct/ForSlice)."""
    child = node.child(key) if node is not None else None
    if child is None:
        return _NO_META
    strategies = child.patch_strategies
    others = sorted(strategies - {"retainKeys"})
    if len(others) > 1:
        raise PatchError(f"unexpected patch strategy: {','.join(sorted(strategies))}")
    return _Meta(child, others[0] if others else "", "retainKeys" in strategies, child.patch_merge_key)


@dataclass(frozen=True)
class _DiffOptions:
    """upstream: strategicpatch.DiffOptions."""

    set_element_order: bool = True
    ignore_changes_and_additions: bool = False
    ignore_deletions: bool = False
    build_retain_keys: bool = False


def _diff_maps(
    original: dict[str, Any], modified: dict[str, Any], node: Node | None, opts: _DiffOptions
) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    retain: list[str] = []
    for key, mv in modified.items():
        if opts.build_retain_keys and mv is not None:
            retain.append(key)
        if key not in original:
            if not opts.ignore_changes_and_additions:
                patch[key] = mv
            continue
        ov = original[key]
        if key == "$patch":
            if not isinstance(ov, str) or not isinstance(mv, str):
                raise PatchError("invalid value for special key: $patch")
            if ov != mv:
                patch[key] = mv
            continue
        if _kind(ov) != _kind(mv):
            if not opts.ignore_changes_and_additions:
                patch[key] = mv
            continue
        if isinstance(ov, dict):
            m = _meta(node, key)
            if m.strategy == "replace":
                # upstream replaces such a map whenever changes are wanted, equal or not.
                if not opts.ignore_changes_and_additions:
                    patch[key] = mv
                continue
            sub = _diff_maps(ov, mv, m.node, replace(opts, build_retain_keys=m.retain_keys))
            if sub:
                patch[key] = sub
        elif isinstance(ov, list):
            m = _meta(node, key)
            if m.strategy == "merge":
                add, delete, order = _diff_lists(ov, mv, m, replace(opts, build_retain_keys=m.retain_keys))
                if add:
                    patch[key] = add
                if delete:
                    patch[f"$deleteFromPrimitiveList/{key}"] = delete
                if order:
                    patch[f"$setElementOrder/{key}"] = order
            elif not opts.ignore_changes_and_additions and not _equal(ov, mv):
                patch[key] = mv
        elif not opts.ignore_changes_and_additions and not _equal(ov, mv):
            patch[key] = mv
    if not opts.ignore_deletions:
        for key in original:
            if key not in modified:
                patch[key] = None
    # $retainKeys goes with any change, or when a field of the original must be cleared.
    if retain and (patch or any(v is not None and k not in modified for k, v in original.items())):
        patch["$retainKeys"] = sorted(retain)
    return patch


def _element_kind(*lists: list[Any]) -> str:
    found = ""
    for lst in lists:
        for v in lst:
            k = _kind(v)
            if k == "list":
                raise PatchError("lists of lists are not supported")
            if found and k != found:
                raise PatchError(f"list element types are not identical: {lists}")
            found = k
    if not found:
        raise PatchError("no elements in any of the given slices")
    return found


def _key_of(item: Any, merge_key: str) -> Any:
    if not isinstance(item, dict):
        raise PatchError(f"expected a map in a list merged by {merge_key!r}, got {_fmt(item)}")
    if merge_key not in item:
        raise PatchError(f"map: {_fmt(item)} does not contain declared merge key: {merge_key}")
    return item[merge_key]


def _scalar_eq(a: Any, b: Any) -> bool:
    return _kind(a) == _kind(b) and a == b


def _index(items: list[Any], value: Any, merge_key: str, is_map: bool) -> int:
    def ident(x: Any) -> Any:
        if is_map:
            return x.get(merge_key) if isinstance(x, dict) else None
        return x

    target = ident(value)
    for i, v in enumerate(items):
        if _scalar_eq(target, ident(v)):
            return i
    return -1


def _normalize_slice_order(to_sort: list[Any], order: list[Any], merge_key: str, is_map: bool) -> list[Any]:
    """Sort `to_sort` as `order` lists them; delete directives go last (upstream: normalizeSliceOrder)."""
    to_delete: list[Any] = []
    if is_map:
        for item in [*to_sort, *order]:
            _key_of(item, merge_key)
        keep = [x for x in to_sort if x.get("$patch") != "delete"]
        to_delete = [x for x in to_sort if x.get("$patch") == "delete"]
        to_sort = keep
    # Go's stable insertion sort with upstream's comparator: items missing from `order` compare as smaller.
    out = list(to_sort)

    def less(a: Any, b: Any) -> bool:
        ia = _index(order, a, merge_key, is_map)
        if ia >= 0:
            ib = _index(order, b, merge_key, is_map)
            if ib >= 0:
                return ia < ib
        return True

    for i in range(1, len(out)):
        j = i
        while j > 0 and less(out[j], out[j - 1]):
            out[j], out[j - 1] = out[j - 1], out[j]
            j -= 1
    return out + to_delete


def _deduplicate_scalars(s: list[Any]) -> list[Any]:
    """upstream's deduplicateScalars, order of the survivors included."""
    s = list(s)
    length = len(s) - 1
    i = 0
    while i < length:
        j = i + 1
        while j <= length:
            if _scalar_eq(s[i], s[j]):
                s[j] = s[length]
                s = s[:length]
                length -= 1
                j -= 1
            j += 1
        i += 1
    return s


def _diff_lists_of_scalars(original: list[Any], modified: list[Any], opts: _DiffOptions) -> tuple[list[Any], list[Any]]:
    o = sorted(original, key=_fmt)
    m = sorted(modified, key=_fmt)
    i = j = 0
    add: list[Any] = []
    delete: list[Any] = []
    while i < len(o) or j < len(m):
        os_ = _fmt(o[i]) if i < len(o) else ""
        ms_ = _fmt(m[j]) if j < len(m) else ""
        if i < len(o) and j < len(m) and os_ == ms_:
            i += 1
            j += 1
        elif i >= len(o) or (j < len(m) and os_ > ms_):
            if not opts.ignore_changes_and_additions:
                add.append(m[j])
            j += 1
        else:
            if not opts.ignore_deletions:
                delete.append(o[i])
            i += 1
    return add, _deduplicate_scalars(delete)


def _diff_lists_of_maps(
    original: list[Any], modified: list[Any], items: Node | None, merge_key: str, opts: _DiffOptions
) -> tuple[list[Any], list[Any]]:
    o = sorted(original, key=lambda x: _fmt(_key_of(x, merge_key)))
    m = sorted(modified, key=lambda x: _fmt(_key_of(x, merge_key)))
    i = j = 0
    patch: list[Any] = []
    deletions: list[Any] = []
    while i < len(o) or j < len(m):
        os_ = _fmt(o[i][merge_key]) if i < len(o) else ""
        ms_ = _fmt(m[j][merge_key]) if j < len(m) else ""
        if i < len(o) and j < len(m) and os_ == ms_:
            sub = _diff_maps(o[i], m[j], items, opts)
            if sub:
                sub[merge_key] = m[j][merge_key]
                patch.append(sub)
            i += 1
            j += 1
        elif i >= len(o) or (j < len(m) and os_ > ms_):
            if not opts.ignore_changes_and_additions:
                patch.append(m[j])
            j += 1
        else:
            if not opts.ignore_deletions:
                deletions.append({merge_key: o[i][merge_key], "$patch": "delete"})
            i += 1
    return patch, deletions


def _diff_lists(
    original: list[Any], modified: list[Any], m: _Meta, opts: _DiffOptions
) -> tuple[list[Any], list[Any], list[Any]]:
    """(patch list, primitive deletion list, element order) for a list merged by key or as a set (upstream:
    diffLists)."""
    if not original:
        if not modified or opts.ignore_changes_and_additions:
            return [], [], []
        return modified, [], []
    if _element_kind(original, modified) == "map":
        patch, deletions = _diff_lists_of_maps(original, modified, m.items, m.merge_key, opts)
        patch = _normalize_slice_order(patch, modified, m.merge_key, True)
        order_same = len(original) == len(modified) and all(
            _scalar_eq(_key_of(a, m.merge_key), _key_of(b, m.merge_key))
            for a, b in zip(original, modified, strict=True)
        )
        patch += deletions
        order: list[Any] = []
        if opts.set_element_order and (
            (not opts.ignore_changes_and_additions and (patch or not order_same))
            or (not opts.ignore_deletions and patch)
        ):
            order = [{m.merge_key: item[m.merge_key]} for item in modified]
        return patch, [], order
    add, delete = _diff_lists_of_scalars(original, modified, opts)
    add = _normalize_slice_order(add, modified, "", False)
    order = []
    if opts.set_element_order and (
        (not opts.ignore_deletions and delete)
        or (not opts.ignore_changes_and_additions and not _equal(original, modified))
    ):
        order = modified
    return add, delete, order


# Merging the deletions patch with the additions-and-changes patch (upstream: mergeMap with MergeOptions{}:
# parallel lists are carried, not applied, and nulls are kept so they reach the server).


def _partition(merged: list[Any], by: list[Any], merge_key: str, is_map: bool) -> tuple[list[Any], list[Any]]:
    inside: list[Any] = []
    outside: list[Any] = []
    for v in merged:
        (inside if _index(by, v, merge_key, is_map) >= 0 else outside).append(v)
    return inside, outside


def _merge_sorted(
    left: list[Any], right: list[Any], server_order: list[Any], merge_key: str, is_map: bool
) -> list[Any]:
    out: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            out.append(right[j])
            j += 1
        elif j >= len(right):
            out.append(left[i])
            i += 1
        else:
            li = _index(server_order, left[i], merge_key, is_map)
            ri = _index(server_order, right[j], merge_key, is_map)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out


def _normalize_element_order(
    patch: list[Any],
    server_only: list[Any],
    patch_order: list[Any],
    server_order: list[Any],
    merge_key: str,
    is_map: bool,
) -> list[Any]:
    patch = _normalize_slice_order(patch, patch_order, merge_key, is_map)
    server_only = _normalize_slice_order(server_only, server_order, merge_key, is_map)
    return _merge_sorted(server_only, patch, server_order, merge_key, is_map)


def _merge_slice(original: list[Any], patch: list[Any], m: _Meta) -> list[Any]:
    if not original and not patch:
        return original
    is_map = _element_kind(original, patch) == "map"
    if not is_map:
        merged = _deduplicate_scalars(original + patch)
    else:
        if not m.merge_key:
            raise PatchError("cannot merge lists without merge key for type map")
        plain: list[Any] = []
        replace_all = False
        for v in patch:
            if "$patch" not in v:
                plain.append(v)
            elif v["$patch"] == "delete":
                key = _key_of(v, m.merge_key)
                original = [x for x in original if not (isinstance(x, dict) and _scalar_eq(x.get(m.merge_key), key))]
            elif v["$patch"] == "replace":
                replace_all = True
            elif v["$patch"] == "merge":
                raise PatchError("merging lists cannot yet be specified in the patch")
            else:
                raise PatchError(f"Unknown patch type: {v['$patch']} in map: {_fmt(v)}")
        if replace_all:
            original, plain = plain, []
        merged = list(original)
        for v in plain:
            key = _key_of(v, m.merge_key)
            at = next((i for i, x in enumerate(merged) if _scalar_eq(_key_of(x, m.merge_key), key)), -1)
            if at >= 0:
                merged[at] = _merge_map(merged[at], v, m.items)
            else:
                merged.append(v)
        patch = plain
    inside, outside = _partition(merged, patch, m.merge_key, is_map)
    return _normalize_element_order(inside, outside, patch, original, m.merge_key, is_map)


def _merge_map(original: dict[str, Any], patch: dict[str, Any], node: Node | None) -> dict[str, Any]:
    if "$patch" in patch:
        directive = patch["$patch"]
        if directive == "replace":
            return {k: v for k, v in patch.items() if k != "$patch"}
        if directive == "delete":
            return {}
        raise PatchError(f"Unknown patch type: {directive} in map: {_fmt(patch)}")
    patch = dict(patch)
    if "$retainKeys" in patch:
        keys = patch.pop("$retainKeys")
        if "$retainKeys" in original:
            if not _equal(original["$retainKeys"], keys):
                raise PatchError(f"{_fmt(original['$retainKeys'])} and {_fmt(keys)} are not deep equal")
        else:
            original["$retainKeys"] = keys
    for key in [k for k in patch if k.startswith("$setElementOrder/")]:
        order = patch.pop(key)
        if key in original:
            if not _equal(original[key], order):
                raise PatchError("invalid patch: $setElementOrder lists of the same field differ")
        else:
            original[key] = order
        if not isinstance(order, list):
            raise PatchError(f"invalid patch: {key} must be a list")
        name = key.split("/", 1)[1]
        in_original, in_patch = name in original, name in patch
        if not in_original and not in_patch:
            continue
        o_list = original.get(name) if in_original else []
        p_list = patch.get(name) if in_patch else []
        if not isinstance(o_list, list) or not isinstance(p_list, list):
            raise PatchError(f"invalid patch: {name} must be a list")
        m = _meta(node, name)
        if in_original and not in_patch:
            merged = o_list
        elif in_patch and not in_original:
            merged = p_list
        else:
            merged = _merge_slice(o_list, p_list, m) if m.strategy == "merge" else p_list
        is_map = bool(m.merge_key)
        inside, outside = _partition(merged, order, m.merge_key, is_map)
        original[name] = _normalize_element_order(inside, outside, order, o_list, m.merge_key, is_map)
        patch.pop(name, None)
    for key, pv in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            original[key] = pv
            continue
        if pv is None:
            original.pop(key, None)
        if key not in original:
            original[key] = pv
            continue
        ov = original[key]
        if _kind(ov) != _kind(pv):
            original[key] = pv
            continue
        m = _meta(node, key)
        if isinstance(ov, dict):
            original[key] = pv if m.strategy == "replace" else _merge_map(ov, pv, m.node)
        elif isinstance(ov, list):
            original[key] = _merge_slice(ov, pv, m) if m.strategy == "merge" else pv
        else:
            original[key] = pv
    return original


def two_way_strategic_patch(original: dict[str, Any], modified: dict[str, Any], node: Node | None) -> dict[str, Any]:
    """The strategic merge patch that turns `original` into `modified` (upstream: CreateTwoWayMergePatch)."""
    return _diff_maps(original, copy.deepcopy(modified), node, _DiffOptions())


def three_way_strategic_patch(
    original: dict[str, Any] | None, modified: dict[str, Any], current: dict[str, Any], node: Node | None
) -> dict[str, Any]:
    """The strategic merge patch kubectl apply sends (upstream: CreateThreeWayMergePatch with overwrite):
    the changes and additions from current to modified, plus the deletions from original to modified. What
    another client set and the manifest never mentioned is kept."""
    delta = _diff_maps(current, copy.deepcopy(modified), node, _DiffOptions(ignore_deletions=True))
    deletions = _diff_maps(
        original or {}, copy.deepcopy(modified), node, _DiffOptions(ignore_changes_and_additions=True)
    )
    return _merge_map(deletions, delta, node)


# -- JSON merge: the three-way patch for kinds without a schema --------------------------------------------


def _merge_diff(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """The RFC 7386 patch from `a` to `b` (upstream uses evanphx/json-patch CreateMergePatch)."""
    out: dict[str, Any] = {}
    for k, bv in b.items():
        if k not in a:
            out[k] = bv
            continue
        av = a[k]
        if _kind(av) != _kind(bv):
            out[k] = bv
        elif isinstance(av, dict):
            sub = _merge_diff(av, bv)
            if sub:
                out[k] = sub
        elif not _equal(av, bv):
            out[k] = bv
    for k in a:
        if k not in b:
            out[k] = None
    return out


def _keep_or_drop_nulls(m: dict[str, Any], keep_null: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in m.items():
        if v is None:
            if keep_null:
                out[k] = None
        elif isinstance(v, dict):
            # An explicitly empty map is a value, not an empty patch.
            if not v:
                if not keep_null:
                    out[k] = v
                continue
            sub = _keep_or_drop_nulls(v, keep_null)
            if sub:
                out[k] = sub
        elif not keep_null:
            out[k] = v
    return out


def _has_conflicts(left: Any, right: Any) -> bool:
    if isinstance(left, dict):
        if not isinstance(right, dict):
            return True
        return any(k in right and _has_conflicts(v, right[k]) for k, v in left.items())
    if isinstance(left, list):
        if not isinstance(right, list) or len(left) != len(right):
            return True
        return any(_has_conflicts(x, y) for x, y in zip(left, right, strict=True))
    return not _equal(left, right)


def _prune_nulls(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _prune_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_prune_nulls(x) for x in v]
    return v


def _apply_merge(doc: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    for k, v in patch.items():
        if v is None:
            doc.pop(k, None)
        elif isinstance(v, dict) and isinstance(doc.get(k), dict):
            doc[k] = _apply_merge(doc[k], v)
        else:
            doc[k] = _prune_nulls(v)
    return doc


def three_way_merge_patch(
    original: dict[str, Any] | None, modified: dict[str, Any], current: dict[str, Any]
) -> dict[str, Any]:
    """The JSON merge patch kubectl apply sends for kinds it has no schema for (upstream:
    jsonmergepatch.CreateThreeWayJSONMergePatch with kubectl's preconditions: apiVersion, kind and name
    must not change)."""
    changes = _keep_or_drop_nulls(_merge_diff(current, modified), keep_null=False)
    deletions = _keep_or_drop_nulls(_merge_diff(original or {}, modified), keep_null=True)
    if _has_conflicts(changes, deletions):
        raise ApplyError(
            f"patch:\n{go_json(changes)}\nconflicts with changes made from original to current:\n{go_json(deletions)}"
        )
    patch = _apply_merge(copy.deepcopy(deletions), changes)
    if "apiVersion" in patch or "kind" in patch or "name" in (patch.get("metadata") or {}):
        raise ApplyError("At least one of apiVersion, kind and name was changed")
    return patch

"""Client-side apply and delete from manifests, as `kubectl apply` and `kubectl delete -f` do them.

Apply (upstream: kubectl pkg/cmd/apply, `applyOneObject` and the `Patcher`):
- the last-applied annotation `kubectl.kubernetes.io/last-applied-configuration` holds the configuration
  exactly as kubectl writes it (upstream: util.GetModifiedConfiguration): the object from the manifest with
  that annotation removed and `metadata.annotations` present (`{}` when there are none), encoded like Go's
  encoding/json (keys sorted, compact, `<`, `>`, `&` escaped) plus a newline. A manifest applied by pyk8s and
  then by kubectl, or the other way round, is therefore "unchanged";
- GET the live object; when it is absent, POST the manifest carrying that annotation
  (`fieldManager=kubectl-client-side-apply`) → "created";
- otherwise compute a three-way patch from original (the live object's annotation), modified (the manifest
  with its new annotation) and current (the live object): a strategic merge patch when the kind has a schema
  (upstream: strategicpatch.CreateThreeWayMergePatch, built here on the schema's patch strategies and merge
  keys, with `$setElementOrder`, `$deleteFromPrimitiveList` and `$retainKeys` as upstream emits them), a
  JSON merge patch otherwise (custom resources; upstream: jsonmergepatch.CreateThreeWayJSONMergePatch). An
  empty patch is not sent → "unchanged"; else one PATCH → "configured". A 409 Conflict re-reads the object
  and recomputes the patch, up to five times, sleeping a second before each retry after the first
  (upstream: maxPatchRetry, triesBeforeBackOff, backOffPeriod). A single POST or PATCH is atomic on the
  server, so an object the server rejects (422 Invalid, …) is left as it was;
- `dry_run="server"` sends `dryRun=All`; `dry_run="client"` sends no write. Unlike kubectl, which reports every
  existing object as "configured (dry run)" without comparing, the client dry run computes the patch and
  reports "unchanged (dry run)" when there is nothing to send.

Delete (upstream: kubectl pkg/cmd/delete): one DELETE per object with `propagationPolicy` from `--cascade`
(background by default); with `ignore_not_found` a 404 is not an error; kubectl prints `configmap "x" deleted`.

Errors: each object's error names its source and document (`error when creating "app.yaml" (document 2):
...`); a server error keeps its type, code and reason. Objects are processed in manifest order, one at a
time (a Namespace before the objects inside it), and one object's failure does not stop the others
(kubectl's ContinueOnError).
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Literal

import orjson

from ..api import errors, schema
from ..api.patch import PatchError
from ..api.schema import Node
from .resource_builder import Info
from .rest import PatchType, RESTClient

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
FIELD_MANAGER = "kubectl-client-side-apply"
MAX_PATCH_RETRIES = 5
TRIES_BEFORE_BACKOFF = 1
BACKOFF_PERIOD = 1.0
CASCADE = {"background": "Background", "foreground": "Foreground", "orphan": "Orphan"}

DryRun = Literal["none", "client", "server"]


class ApplyError(Exception):
    """A failure of one object that is not a server error (a bad annotation, a patch that cannot be built)."""


# -- Go's encoding/json, for the annotation ----------------------------------------------------------------

_GO_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _go_string(s: str) -> str:
    return json.dumps(s, ensure_ascii=False).translate(_GO_ESCAPES)


def _go_float(f: float) -> str:
    if f != f or f in (float("inf"), float("-inf")):
        raise ApplyError(f"json: unsupported value: {f}")
    if f.is_integer() and abs(f) < 1e21:
        return str(int(f))
    a = abs(f)
    text = repr(f)
    if a < 1e-6 or a >= 1e21:
        # Go writes exponents with at least two digits but then trims a negative one's leading zero.
        return text.replace("e-0", "e-")
    if "e" in text:
        return format(Decimal(text), "f")
    return text


def go_json(value: Any) -> str:
    """`value` encoded as Go's json.Marshal encodes a map[string]interface{}: sorted keys, no spaces, HTML
    characters escaped, integral numbers without a fraction."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, str):
        return _go_string(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_go_string(str(k))}:{go_json(value[k])}" for k in sorted(value)) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    raise ApplyError(f"json: unsupported type: {type(value).__name__}")


# -- the last-applied configuration ------------------------------------------------------------------------


def get_original_configuration(live: dict[str, Any]) -> dict[str, Any] | None:
    """The configuration last applied to a live object, from its annotation (upstream:
    util.GetOriginalConfiguration); None when there is none."""
    text = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    if not text:
        return None
    try:
        original = orjson.loads(text)
    except orjson.JSONDecodeError as err:
        raise ApplyError(f"the {LAST_APPLIED} annotation is not valid JSON: {err}") from err
    if not isinstance(original, dict):
        raise ApplyError(f"the {LAST_APPLIED} annotation is not a JSON object")
    return original


def get_modified_configuration(obj: dict[str, Any], annotate: bool) -> str:
    """The configuration kubectl records for `obj` (upstream: util.GetModifiedConfiguration): the object
    without the last-applied annotation, `metadata.annotations` present even when empty, Go-encoded with a
    trailing newline. With `annotate`, the encoding of that object once the first encoding has been set as
    its annotation (what the patch is computed towards)."""
    o = dict(obj)
    meta = dict(o.get("metadata") or {})
    o["metadata"] = meta
    raw = meta.get("annotations")
    annotations = dict(raw) if isinstance(raw, dict) else {}
    annotations.pop(LAST_APPLIED, None)
    meta["annotations"] = annotations
    text = go_json(o) + "\n"
    if not annotate:
        return text
    meta["annotations"] = {**annotations, LAST_APPLIED: text}
    return go_json(o) + "\n"


def with_apply_annotation(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` carrying its last-applied annotation, for a create (upstream: util.CreateApplyAnnotation)."""
    text = get_modified_configuration(obj, annotate=False)
    meta = dict(obj.get("metadata") or {})
    raw = meta.get("annotations")
    meta["annotations"] = {**(raw if isinstance(raw, dict) else {}), LAST_APPLIED: text}
    return {**obj, "metadata": meta}


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
        return _go_float(v)
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
    inside, outside = [], []
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


# -- applying and deleting ---------------------------------------------------------------------------------


@dataclass
class ApplyOptions:
    """How objects are applied (upstream: ApplyOptions, the flags kubectl apply takes)."""

    dry_run: DryRun = "none"
    field_manager: str = FIELD_MANAGER
    field_validation: str | None = "Strict"
    max_patch_retries: int = MAX_PATCH_RETRIES
    backoff: float = BACKOFF_PERIOD
    command: str = "pyk8s"  # named in the warning about a missing annotation


@dataclass
class DeleteOptions:
    """How objects are deleted (upstream: DeleteOptions of kubectl delete)."""

    cascade: str = "background"
    ignore_not_found: bool = False
    grace_period: int | None = None
    dry_run: DryRun = "none"


@dataclass
class Outcome:
    """What happened to one object: its operation ("created", "configured", "unchanged", "deleted"; "" when
    a 404 was ignored or on error), the error, warnings, the patch sent and the server's answer."""

    info: Info
    operation: str = ""
    error: Exception | None = None
    warnings: list[str] = field(default_factory=list)
    patch: dict[str, Any] | None = None
    patch_type: str = ""
    obj: dict[str, Any] | None = None
    dry_run: DryRun = "none"

    @property
    def suffix(self) -> str:
        return {"client": " (dry run)", "server": " (server dry run)"}.get(self.dry_run, "")

    def line(self) -> str:
        """The line kubectl prints: `deployment.apps/web created`, `deployment.apps "web" deleted`."""
        if self.operation == "deleted":
            return f'{self.info.kind_name} "{self.info.name}" deleted{self.suffix}'
        return f"{self.info.object_name} {self.operation}{self.suffix}"


def add_source_to_error(verb: str, info: Info, err: Exception) -> Exception:
    """The error with its source in front, keeping a server error's type, code and reason (upstream:
    cmdutil.AddSourceToErr)."""
    if isinstance(err, errors.StatusError):
        wrapped = type(err)(err.code, err.reason, f"error when {verb} {info.where}: {err.message}", details=err.details)
        wrapped.list_meta = err.list_meta
        return wrapped
    return ApplyError(f"error when {verb} {info.where}: {err}")


def compute_patch(
    info: Info, original: dict[str, Any] | None, modified: dict[str, Any], current: dict[str, Any]
) -> tuple[dict[str, Any], PatchType]:
    """The three-way patch for one object and its type: strategic for kinds with a schema, merge otherwise."""
    r = info.resource
    node = schema.kind_node(r.group, r.version, r.kind)
    if node is not None:
        return three_way_strategic_patch(original, modified, current, node), "strategic"
    return three_way_merge_patch(original, modified, current), "merge"


def _missing_name(info: Info) -> Exception | None:
    if info.name:
        return None
    generate = (info.obj.get("metadata") or {}).get("generateName")
    if generate:
        return ApplyError(f"from {generate}: cannot use generate name with apply")
    return ApplyError(
        f"error when retrieving current configuration of {info.kind_name} from {info.where}: resource name may not be empty"
    )


class _Failed(Exception):
    """Carries one object's error, already naming its source, out of `_apply`."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


async def apply_one(client: RESTClient, info: Info, options: ApplyOptions | None = None) -> Outcome:
    """Apply one object; its failure is returned in the `Outcome`, not raised."""
    opts = options or ApplyOptions()
    out = Outcome(info, dry_run=opts.dry_run)
    out.error = _missing_name(info)
    if out.error is not None:
        return out
    try:
        await _apply(client, info, opts, out)
    except _Failed as failed:
        out.operation = ""
        out.error = failed.error
    return out


def _fail(verb: str, info: Info, err: Exception) -> _Failed:
    return _Failed(add_source_to_error(verb, info, err))


async def _apply(client: RESTClient, info: Info, opts: ApplyOptions, out: Outcome) -> None:
    r = info.resource
    server_dry_run = opts.dry_run == "server"
    try:
        modified = orjson.loads(get_modified_configuration(info.obj, annotate=True))
    except ApplyError as err:
        raise _fail("encoding", info, err) from err
    try:
        live = await client.get(r, info.name, info.namespace)
    except errors.NotFound:
        obj = with_apply_annotation(info.obj)
        out.operation = "created"
        if opts.dry_run == "client":
            out.obj = obj
            return
        try:
            out.obj = await client.create(
                r, obj, info.namespace, dry_run=server_dry_run, field_manager=opts.field_manager,
                field_validation=opts.field_validation,
            )  # fmt: skip
        except (errors.StatusError, ConnectionError) as err:
            raise _fail("creating", info, err) from err
        return
    except (errors.StatusError, ConnectionError) as err:
        raise _fail(f"retrieving current configuration of {info.object_name} from", info, err) from err
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    if LAST_APPLIED not in annotations:
        out.warnings.append(
            f"resource {r.plural}/{info.name} is missing the {LAST_APPLIED} annotation which is required by "
            f"{opts.command} apply. {opts.command} apply should only be used on resources created declaratively "
            f"by either {opts.command} create --save-config or {opts.command} apply. The missing annotation will "
            "be patched automatically."
        )
    attempt = 0
    while True:
        try:
            patch, patch_type = compute_patch(info, get_original_configuration(live), modified, live)
        except (ApplyError, PatchError) as err:
            raise _fail("creating patch for", info, err) from err
        out.patch, out.patch_type = patch, patch_type
        if not patch:
            out.operation, out.obj = "unchanged", live
            return
        out.operation = "configured"
        if opts.dry_run == "client":
            out.obj = live
            return
        try:
            out.obj = await client.patch(
                r, info.name, patch, info.namespace, patch_type=patch_type, dry_run=server_dry_run,
                field_manager=opts.field_manager, field_validation=opts.field_validation,
            )  # fmt: skip
            return
        except errors.Conflict as err:
            # Someone wrote in between: read the object again and recompute, as kubectl's Patcher does.
            attempt += 1
            if attempt > opts.max_patch_retries:
                raise _fail("patching", info, err) from err
            if attempt > TRIES_BEFORE_BACKOFF:
                await asyncio.sleep(opts.backoff)
            try:
                live = await client.get(r, info.name, info.namespace)
            except (errors.StatusError, ConnectionError) as get_err:
                raise _fail("patching", info, get_err) from get_err
        except (errors.StatusError, ConnectionError) as err:
            raise _fail("patching", info, err) from err


async def delete_one(client: RESTClient, info: Info, options: DeleteOptions | None = None) -> Outcome:
    """Delete one object; a 404 is not an error with `ignore_not_found` (operation "")."""
    opts = options or DeleteOptions()
    out = Outcome(info, dry_run=opts.dry_run)
    if not info.name:
        out.error = ApplyError(f"error when deleting {info.where}: resource name may not be empty")
        return out
    if opts.dry_run == "client":
        out.operation = "deleted"
        return out
    policy = CASCADE.get(opts.cascade.lower())
    if policy is None:
        out.error = ApplyError(
            f'invalid cascade value ({opts.cascade}). Must be "background", "foreground", or "orphan".'
        )
        return out
    try:
        out.obj = await client.delete(
            info.resource, info.name, info.namespace, propagation_policy=policy,
            grace_period_seconds=opts.grace_period, dry_run=opts.dry_run == "server",
        )  # fmt: skip
        out.operation = "deleted"
    except errors.NotFound as err:
        if not opts.ignore_not_found:
            out.error = add_source_to_error("deleting", info, err)
    except (errors.StatusError, ConnectionError) as err:
        out.error = add_source_to_error("deleting", info, err)
    return out


OnOutcome = Callable[[Outcome], Awaitable[None] | None]


async def _each(
    infos: Iterable[Info], run: Callable[[Info], Awaitable[Outcome]], on_outcome: OnOutcome | None
) -> list[Outcome]:
    outcomes = []
    for info in infos:
        outcome = await run(info)
        outcomes.append(outcome)
        if on_outcome is not None:
            res = on_outcome(outcome)
            if asyncio.iscoroutine(res):
                await res
    return outcomes


async def apply_all(
    client: RESTClient, infos: Iterable[Info], options: ApplyOptions | None = None, on_outcome: OnOutcome | None = None
) -> list[Outcome]:
    """Apply objects one after another in manifest order, calling `on_outcome` after each."""
    opts = options or ApplyOptions()
    return await _each(infos, lambda info: apply_one(client, info, opts), on_outcome)


async def delete_all(
    client: RESTClient, infos: Iterable[Info], options: DeleteOptions | None = None, on_outcome: OnOutcome | None = None
) -> list[Outcome]:
    """Delete objects one after another in manifest order, calling `on_outcome` after each."""
    opts = options or DeleteOptions()
    return await _each(infos, lambda info: delete_one(client, info, opts), on_outcome)

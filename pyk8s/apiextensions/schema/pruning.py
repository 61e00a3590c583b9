"""The structural view of a CRD schema (properties, additionalProperties, items and the x-kubernetes
extensions) and what it drives on decode: pruning the fields a schema does not declare, and dropping nulls
of non-nullable fields (upstream: apiextensions-apiserver pkg/apiserver/schema/{structural.go,convert.go},
pruning/algorithm.go and defaulting/prunenulls.go).
"""

from __future__ import annotations

from typing import Any

from ...api.meta import json_copy

META_FIELDS = frozenset(("apiVersion", "kind", "metadata"))
_CACHE_SIZE = 512


class Structural:
    """One node of a structural schema, compiled from the schema's JSON once and shared by every object the
    schema applies to. `has_additional` is set for `additionalProperties` in either form; `additional` is
    its schema (None for the boolean form)."""

    __slots__ = (
        "_root",
        "additional",
        "default",
        "defaulted",
        "defaults_below",
        "embedded",
        "embedded_below",
        "has_additional",
        "has_default",
        "items",
        "list_map_keys",
        "list_type",
        "listtype_below",
        "nullable",
        "preserve",
        "properties",
        "raw",
        "type",
    )

    def __init__(self) -> None:
        self._root: Structural | None = None
        self.raw: dict[str, Any] = {}
        self.type = ""
        self.properties: dict[str, Structural] = {}
        self.additional: Structural | None = None
        self.has_additional = False
        self.items: Structural | None = None
        self.preserve = False
        self.embedded = False
        self.nullable = False
        self.default: Any = None
        self.has_default = False
        self.list_type = ""
        self.list_map_keys: tuple[str, ...] = ()
        self.defaulted: tuple[tuple[str, Structural], ...] = ()  # the properties that have a default
        self.defaults_below = False  # whether anything under this node has a default
        self.embedded_below = False  # whether this node or anything under it is an embedded resource
        self.listtype_below = False  # whether this node or anything under it is a set or map list

    @classmethod
    def of(cls, schema: Any) -> Structural:
        """Compile a schema dict; anything malformed is read as absent rather than raising."""
        s = cls()
        if not isinstance(schema, dict):
            return s
        s.raw = schema
        t = schema.get("type")
        s.type = t if isinstance(t, str) else ""
        props = schema.get("properties")
        if isinstance(props, dict):
            s.properties = {k: cls.of(v) for k, v in props.items() if isinstance(v, dict)}
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            s.additional, s.has_additional = cls.of(additional), True
        elif isinstance(additional, bool):
            s.has_additional = True
        items = schema.get("items")
        if isinstance(items, dict):
            s.items = cls.of(items)
        s.preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
        s.embedded = schema.get("x-kubernetes-embedded-resource") is True
        s.nullable = schema.get("nullable") is True
        # A JSON null default is no default (upstream's JSON{nil}).
        s.default = schema.get("default")
        s.has_default = s.default is not None
        list_type = schema.get("x-kubernetes-list-type")
        s.list_type = list_type if isinstance(list_type, str) else ""
        keys = schema.get("x-kubernetes-list-map-keys")
        if isinstance(keys, list):
            s.list_map_keys = tuple(k for k in keys if isinstance(k, str))
        s.defaulted = tuple((k, p) for k, p in s.properties.items() if p.has_default)
        children = [*s.properties.values(), *(c for c in (s.additional, s.items) if c is not None)]
        s.defaults_below = any(c.has_default or c.defaults_below for c in children)
        s.embedded_below = s.embedded or any(c.embedded_below for c in children)
        s.listtype_below = s.list_type in ("set", "map") or any(c.listtype_below for c in children)
        return s

    def as_root(self) -> Structural:
        """This node treated as a resource root: its apiVersion, kind and metadata are kept as they are."""
        if self.embedded:
            return self
        if self._root is None:
            clone = Structural()
            for name in self.__slots__:
                setattr(clone, name, getattr(self, name))
            clone.embedded = clone.embedded_below = True
            clone._root = clone
            self._root = clone
        return self._root


_cache: dict[int, tuple[Any, Structural]] = {}


def structural(schema: Any) -> Structural:
    """The compiled structural schema of a CRD's openAPIV3Schema, with its defaults pruned as upstream
    prunes them when it serves the CRD. Compiled once per schema dict (the dict must not change after)."""
    if isinstance(schema, Structural):
        return schema
    hit = _cache.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    s = Structural.of(schema)
    _prune_defaults(s.as_root(), False)
    try:
        while len(_cache) >= _CACHE_SIZE:
            _cache.pop(next(iter(_cache)))
    except (KeyError, RuntimeError, StopIteration):  # another thread evicted first
        pass
    _cache[id(schema)] = (schema, s)
    return s


def _prune_defaults(s: Structural, under_meta: bool) -> None:
    # A default is pruned as part of the object it would land in. Under an apiVersion, kind or metadata of a
    # resource nothing is pruned (ObjectMeta there is coerced, not pruned).
    if s.has_default and not under_meta:
        pruned = json_copy(s.default)
        _prune(pruned, s, "", [])
        s.default = pruned
    for k, p in s.properties.items():
        _prune_defaults(p, under_meta or (s.embedded and k in META_FIELDS))
    for c in (s.additional, s.items):
        if c is not None:
            _prune_defaults(c, under_meta)
    s.defaulted = tuple((k, p) for k, p in s.properties.items() if p.has_default)


def prune(obj: Any, schema: Any, *, is_resource_root: bool = True) -> list[str]:
    """Remove, in place, the fields of obj that the schema does not declare, and return their paths sorted
    (`spec.foo`, `spec.items[0].bar`), as upstream reports them for `unknown field "<path>"`.

    x-kubernetes-preserve-unknown-fields keeps unknown fields below a node (declared ones are still pruned
    inside), and an embedded resource (or the root, with is_resource_root) keeps apiVersion, kind and
    metadata untouched."""
    s: Structural | None = structural(schema) if schema is not None else None
    if is_resource_root:
        s = (s or Structural()).as_root()
    out: list[str] = []
    _prune(obj, s, "", out)
    out.sort()
    return out


def _prune(x: Any, s: Structural | None, path: str, out: list[str]) -> None:
    if s is not None and s.preserve:
        _keep_unknown(x, s, path, out)
        return
    tx = type(x)
    if tx is dict:
        if s is None:
            out.extend(f"{path}.{k}" if path else k for k in x)
            x.clear()
            return
        props, embedded, has_additional, additional = s.properties, s.embedded, s.has_additional, s.additional
        doomed: list[str] = []
        for k, v in x.items():
            if embedded and k in META_FIELDS:
                continue
            p = props.get(k)
            if p is None and not has_additional:
                # at the root the meta fields go silently (upstream records them only when nested)
                if k not in META_FIELDS or path:
                    out.append(f"{path}.{k}" if path else k)
                doomed.append(k)
            elif type(v) is dict or type(v) is list:
                _prune(v, p if p is not None else additional, f"{path}.{k}" if path else k, out)
        for k in doomed:
            del x[k]
    elif tx is list:
        items = s.items if s is not None else None
        for i, v in enumerate(x):
            if type(v) is dict or type(v) is list:
                _prune(v, items, f"{path}[{i}]", out)


def _keep_unknown(x: Any, s: Structural | None, path: str, out: list[str]) -> None:
    # Below x-kubernetes-preserve-unknown-fields: unknown fields stay, declared ones are pruned inside.
    if s is None:
        return
    tx = type(x)
    if tx is dict:
        for k, v in x.items():
            if s.embedded and k in META_FIELDS:
                continue
            p = s.properties.get(k)
            if p is not None:
                _prune(v, p, f"{path}.{k}" if path else k, out)
            elif s.has_additional:
                _prune(v, s.additional, f"{path}.{k}" if path else k, out)
    elif tx is list:
        for i, v in enumerate(x):
            _keep_unknown(v, s.items, f"{path}[{i}]", out)


def _field_schema(s: Structural | None, k: str) -> Structural | None:
    if s is None:
        return None
    p = s.properties.get(k)
    return p if p is not None else s.additional


def prune_non_nullable_nulls(obj: Any, schema: Any) -> None:
    """Drop, in place, null values of fields that are neither nullable nor defaulted (the defaulted ones
    are left for defaulting to fill) — upstream's PruneNonNullableNullsWithoutDefaults."""
    _prune_nulls(obj, structural(schema) if schema is not None else None)


def _prune_nulls(x: Any, s: Structural | None) -> None:
    tx = type(x)
    if tx is dict:
        doomed = []
        for k, v in x.items():
            sub = _field_schema(s, k)
            if v is None:
                if sub is not None and not sub.nullable and not sub.has_default:
                    doomed.append(k)
            elif type(v) is dict or type(v) is list:
                _prune_nulls(v, sub)
        for k in doomed:
            del x[k]
    elif tx is list:
        items = s.items if s is not None else None
        for v in x:
            if type(v) is dict or type(v) is list:
                _prune_nulls(v, items)

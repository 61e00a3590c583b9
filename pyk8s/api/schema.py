"""Upstream's OpenAPI definitions for Kubernetes v1.32, from the `kubernetes-validate` package.

They describe every built-in kind field by field, with the extensions the API server needs: patch
strategies and merge keys (strategic merge patch), list types and list-map keys (apply), and each kind's
group/version/kind. pyk8s uses them to merge patches, to record managedFields, and to serve `/openapi/v2`
and `/openapi/v3` (unknown fields are found by the typed round trip, api/types/codec).
"""

from __future__ import annotations

import functools
import importlib.resources
from collections.abc import Iterator
from typing import Any

import orjson

KUBERNETES_VERSION = "v1.32.0"
_REF_PREFIX = "#/$defs/"


@functools.cache
def definitions() -> dict[str, Any]:
    """The `$defs` of the v1.32 schema, keyed like `io.k8s.api.core.v1.Pod` (loaded once)."""
    root = importlib.resources.files("kubernetes_validate").joinpath(
        "kubernetes-json-schema", f"{KUBERNETES_VERSION}-local", "_definitions.json"
    )
    data: dict[str, Any] = orjson.loads(root.read_bytes())["$defs"]
    return data


@functools.cache
def _gvk_index() -> dict[tuple[str, str, str], str]:
    out: dict[tuple[str, str, str], str] = {}
    for name, d in definitions().items():
        for gvk in d.get("x-kubernetes-group-version-kind") or []:
            out.setdefault((gvk.get("group", ""), gvk["version"], gvk["kind"]), name)
    return out


def definition_name(group: str, version: str, kind: str) -> str | None:
    return _gvk_index().get((group, version, kind))


def _types(schema: dict[str, Any]) -> set[str]:
    t = schema.get("type")
    if isinstance(t, list):
        return {x for x in t if x != "null"}
    return {t} if isinstance(t, str) else set()


_NODES: dict[int, Node] = {}


class Node:
    """A place in the schema: the property entry that led here (which carries the patch extensions) and
    the schema it resolves to."""

    __slots__ = ("_children", "_item_keying", "_items", "is_array", "is_object", "open_ended", "prop", "schema")

    def __init__(self, prop: dict[str, Any], schema: dict[str, Any]) -> None:
        self.prop = prop
        self.schema = schema
        self._children: dict[str, Node | None] = {}  # child() answers, kept: every write walks the schema
        self._items: Node | bool | None = False  # items(), once asked (False: not yet)
        self._item_keying: tuple[tuple[str, ...] | None, bool] | None = None
        types = _types(schema)
        self.is_object = "properties" in schema or "object" in types
        self.is_array = "array" in types
        # Anything goes below here: free-form objects, int-or-string, quantities, raw extensions.
        self.open_ended = bool(
            schema.get("x-kubernetes-preserve-unknown-fields")
            or "oneOf" in schema
            or "anyOf" in schema
            or (self.is_object and "properties" not in schema and "additionalProperties" not in schema)
            or not schema
            or (not types and "properties" not in schema and "items" not in schema)
        )

    @classmethod
    def of(cls, prop: dict[str, Any]) -> Node:
        # The definitions live for the whole process: one Node per property entry, built once.
        node = _NODES.get(id(prop))
        if node is not None and node.prop is prop:
            return node
        schema = prop
        seen = 0
        while "$ref" in schema and seen < 20:
            ref = schema["$ref"]
            schema = definitions()[ref[len(_REF_PREFIX) :]] if ref.startswith(_REF_PREFIX) else {}
            seen += 1
        node = cls(prop, schema)
        _NODES[id(prop)] = node
        return node

    @property
    def ref(self) -> str:
        ref = self.prop.get("$ref", "")
        return ref[len(_REF_PREFIX) :] if ref.startswith(_REF_PREFIX) else ""

    @property
    def types(self) -> set[str]:
        return _types(self.schema)

    def child(self, name: str) -> Node | None:
        """The node of field `name`: a declared property, else the additionalProperties schema, else None."""
        try:
            return self._children[name]
        except KeyError:
            pass
        props = self.schema.get("properties")
        extra = self.schema.get("additionalProperties")
        if props and name in props:
            node: Node | None = Node.of(props[name])
        elif isinstance(extra, dict):
            node = Node.of(extra)
        else:
            node = None
        if (props and name in props) or len(self._children) < 1024:  # free-form maps: names are unbounded
            self._children[name] = node
        return node

    def items(self) -> Node | None:
        if self._items is False:
            items = self.schema.get("items")
            self._items = Node.of(items) if isinstance(items, dict) else None
        return self._items  # type: ignore[return-value]

    @property
    def item_keying(self) -> tuple[tuple[str, ...] | None, bool]:
        """How the items of this list are told apart in managedFields: the key fields when it is a map list (or
        one patched by merge on a key; None otherwise), and whether it is a set (of scalars)."""
        if self._item_keying is None:
            keys = self.list_map_keys or ([self.patch_merge_key] if self.patch_merge_key else [])
            keyed = self.list_type == "map" or bool(keys and "merge" in self.patch_strategies)
            self._item_keying = (tuple(keys) if keyed else None, self.list_type == "set")
        return self._item_keying

    def properties(self) -> Iterator[tuple[str, Node]]:
        for name, prop in (self.schema.get("properties") or {}).items():
            yield name, Node.of(prop)

    # extensions on the property entry
    @property
    def patch_strategies(self) -> set[str]:
        raw = self.prop.get("x-kubernetes-patch-strategy") or self.schema.get("x-kubernetes-patch-strategy") or ""
        return {s for s in raw.split(",") if s}

    @property
    def patch_merge_key(self) -> str:
        return self.prop.get("x-kubernetes-patch-merge-key") or self.schema.get("x-kubernetes-patch-merge-key") or ""

    @property
    def list_type(self) -> str:
        return self.prop.get("x-kubernetes-list-type") or self.schema.get("x-kubernetes-list-type") or ""

    @property
    def list_map_keys(self) -> list[str]:
        return list(self.prop.get("x-kubernetes-list-map-keys") or self.schema.get("x-kubernetes-list-map-keys") or [])

    @property
    def map_type(self) -> str:
        return self.prop.get("x-kubernetes-map-type") or self.schema.get("x-kubernetes-map-type") or ""


@functools.cache
def kind_node(group: str, version: str, kind: str) -> Node | None:
    # Cached: each call would otherwise make a new root entry, and Node.of keeps every entry it is given.
    name = definition_name(group, version, kind)
    return Node.of({"$ref": _REF_PREFIX + name}) if name else None

"""Listers: reads from an informer's Indexer by namespace, name and label selector, never from the server
(upstream: tools/cache/listers.go, the generic lister)."""

from __future__ import annotations

import builtins
from typing import Any

from ...api.selectors import LabelSelector, parse_label_selector
from .indexer import NAMESPACE_INDEX, Indexer


def _matcher(selector: str | LabelSelector | None) -> LabelSelector | None:
    if selector is None or selector == "":
        return None
    return parse_label_selector(selector) if isinstance(selector, str) else selector


def _labels(obj: Any) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


class NamespaceLister:
    """The objects of one namespace."""

    def __init__(self, indexer: Indexer, namespace: str) -> None:
        self.indexer = indexer
        self.namespace = namespace

    def list(self, selector: str | LabelSelector | None = None) -> builtins.list[Any]:
        sel = _matcher(selector)
        objs = self.indexer.by_index(NAMESPACE_INDEX, self.namespace)
        return objs if sel is None else [o for o in objs if sel.matches(_labels(o))]

    def get(self, name: str) -> Any | None:
        return self.indexer.get_by_key(f"{self.namespace}/{name}")


class GenericLister:
    """All objects of a resource; `by_namespace(ns)` for a namespaced view."""

    def __init__(self, indexer: Indexer) -> None:
        self.indexer = indexer

    def list(self, selector: str | LabelSelector | None = None) -> builtins.list[Any]:
        sel = _matcher(selector)
        objs = self.indexer.list()
        return objs if sel is None else [o for o in objs if sel.matches(_labels(o))]

    def get(self, name: str) -> Any | None:
        """A cluster-scoped object by name, or a namespaced one by `namespace/name`."""
        return self.indexer.get_by_key(name)

    def by_namespace(self, namespace: str) -> NamespaceLister:
        return NamespaceLister(self.indexer, namespace)

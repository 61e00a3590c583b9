"""The Indexer: an informer's local copy of a resource, keyed by `namespace/name`, with named secondary
indexes (upstream: tools/cache thread_safe_store.go, index.go, store.go).

Index functions map an object to the values it is filed under; `by_index("namespace", "default")` answers
every object of a namespace without a scan. The namespace index is built in. Everything here runs on the
event loop without awaiting, so each method is atomic with respect to other tasks, as upstream's lock
gives. Objects are shared, not copied: callers must treat what they read as read-only.

`derived(name, fn)` keeps what a controller works out from an object (a pod's readiness, say) next to it: `fn` runs
once per object held and its answer is dropped when the object is replaced or deleted. `add_tally(name, group,
kind)` counts the objects held per group and kind (a ReplicaSet's pods by readiness and labels), kept up to date
with every write as an index is. Upstream has neither (Go recomputes at every sync); here a ReplicaSet's sync over
30,000 pods would otherwise re-read each one.
"""

from __future__ import annotations

import builtins
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, TypeVar

IndexFunc = Callable[[Any], list[str]]
T = TypeVar("T")
_MISSING = object()
NAMESPACE_INDEX = "namespace"


def meta_namespace_key(obj: Any) -> str:
    """`namespace/name`, or `name` for a cluster-scoped object (upstream: MetaNamespaceKeyFunc)."""
    key = getattr(obj, "key", None)
    if isinstance(key, str):  # DeletedFinalStateUnknown carries the key it was filed under
        return key
    meta = obj.get("metadata") or {}
    name = meta.get("name") or ""
    if not name:
        raise KeyError("object has no metadata.name")
    ns = meta.get("namespace")
    return f"{ns}/{name}" if ns else name


def split_meta_namespace_key(key: str) -> tuple[str, str]:
    """(namespace, name) from a key; namespace is "" for a cluster-scoped key."""
    parts = key.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise ValueError(f"unexpected key format: {key!r}")


def namespace_index_func(obj: Any) -> list[str]:
    ns = (obj.get("metadata") or {}).get("namespace")
    return [ns] if ns else [""]


class Indexer:
    """A keyed store with indexes. `key_func` defaults to `meta_namespace_key`."""

    def __init__(
        self,
        indexers: Mapping[str, IndexFunc] | None = None,
        key_func: Callable[[Any], str] = meta_namespace_key,
    ) -> None:
        self.key_func = key_func
        self._items: dict[str, Any] = {}
        self._indexers: dict[str, IndexFunc] = {NAMESPACE_INDEX: namespace_index_func}
        self._indices: dict[str, dict[str, set[str]]] = {NAMESPACE_INDEX: {}}
        # derived(): per name, (its function, answers by id() of an object this indexer holds)
        self._derived: dict[str, tuple[Callable[[Any], Any], dict[int, Any]]] = {}
        # add_tally(): per name, (group function, kind function, counts by group)
        self._tallies: dict[str, tuple[Callable[[Any], str | None], Callable[[Any], Hashable],
                                       dict[str, Counter[Hashable]]]] = {}  # fmt: skip
        if indexers:
            self.add_indexers(indexers)

    # -- writes ---------------------------------------------------------------------------------------

    def add(self, obj: Any) -> None:
        self.update(obj)

    def update(self, obj: Any) -> None:
        key = self.key_func(obj)
        old = self._items.get(key)
        self._items[key] = obj
        if old is not obj:
            if old is not None:
                self._forget_derived(old)
            self._retally(old, obj)
        self._reindex(key, old, obj)

    def delete(self, obj: Any) -> None:
        self.delete_key(self.key_func(obj))

    def delete_key(self, key: str) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self._forget_derived(old)
            self._retally(old, None)
            self._reindex(key, old, None)

    def replace(self, objs: Iterable[Any]) -> None:
        """Swap the whole content (indexes rebuilt from scratch)."""
        self._items = {self.key_func(o): o for o in objs}
        self._indices = {name: {} for name in self._indexers}
        for _, memo in self._derived.values():
            memo.clear()
        for _, _, counts in self._tallies.values():
            counts.clear()
        for obj in self._items.values():
            self._retally(None, obj)
        for key, obj in self._items.items():
            self._reindex(key, None, obj)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add index functions; existing objects are filed under them at once."""
        for name in indexers:
            if name in self._indexers:
                raise ValueError(f"indexer conflict: {name}")
        for name, fn in indexers.items():
            self._indexers[name] = fn
            index: dict[str, set[str]] = {}
            self._indices[name] = index
            for key, obj in self._items.items():
                for value in fn(obj):
                    index.setdefault(value, set()).add(key)

    def derived(self, name: str, fn: Callable[[Any], T]) -> Callable[[Any], T]:
        """An accessor answering `fn(obj)`, worked out once per object this indexer holds (see the module
        docstring). Every caller of one `name` shares the answers, so it must pass the same `fn`. Objects the
        indexer does not hold (a tombstone's, an old version) are answered without being remembered."""
        entry = self._derived.get(name)
        if entry is None:
            entry = self._derived[name] = (fn, {})
        elif entry[0] is not fn:
            raise ValueError(f"derived {name!r} is already worked out by another function")
        memo = entry[1]

        def get(obj: Any) -> T:
            value = memo.get(id(obj), _MISSING)
            if value is _MISSING:
                value = fn(obj)
                # By id() only while the object is held here: it is dropped from the memo when it leaves, before
                # its id can be reused.
                try:
                    held = self._items.get(self.key_func(obj)) is obj
                except (KeyError, AttributeError):
                    held = False
                if held:
                    memo[id(obj)] = value
            return value  # type: ignore[no-any-return]

        return get

    def add_tally(self, name: str, group: Callable[[Any], str | None], kind: Callable[[Any], Hashable]) -> None:
        """Count the objects held by `group(obj)` (None: not counted) and `kind(obj)`; `tally(name, g)` answers
        {kind: how many} of group g without a scan. Both functions must not raise. Adding a name twice is a no-op,
        so that every controller sharing an informer may ask for the tally it needs."""
        if name in self._tallies:
            return
        counts: dict[str, Counter[Hashable]] = {}
        self._tallies[name] = (group, kind, counts)
        for obj in self._items.values():
            g = group(obj)
            if g is not None:
                counts.setdefault(g, Counter())[kind(obj)] += 1

    def tally(self, name: str, group: str) -> Mapping[Hashable, int]:
        """{kind: how many} of the objects held in `group` (read-only)."""
        return self._tallies[name][2].get(group) or {}

    def _retally(self, old: Any, new: Any) -> None:
        for group, kind, counts in self._tallies.values():
            g_old = group(old) if old is not None else None
            g_new = group(new) if new is not None else None
            k_old = kind(old) if g_old is not None else None
            k_new = kind(new) if g_new is not None else None
            if g_old == g_new and k_old == k_new:
                continue  # the common update: same group, same kind
            if g_old is not None:
                c = counts[g_old]
                c[k_old] -= 1
                if c[k_old] <= 0:
                    del c[k_old]
                    if not c:
                        del counts[g_old]
            if g_new is not None:
                counts.setdefault(g_new, Counter())[k_new] += 1

    def _forget_derived(self, old: Any) -> None:
        for _, memo in self._derived.values():
            memo.pop(id(old), None)

    def _reindex(self, key: str, old: Any, new: Any) -> None:
        for name, fn in self._indexers.items():
            old_values = fn(old) if old is not None else []
            new_values = fn(new) if new is not None else []
            # The common case: an update that leaves the indexed values alone touches nothing.
            if old_values == new_values:
                continue
            index = self._indices[name]
            for value in old_values:
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
            for value in new_values:
                index.setdefault(value, set()).add(key)

    # -- reads ----------------------------------------------------------------------------------------

    def get(self, obj: Any) -> Any | None:
        return self._items.get(self.key_func(obj))

    def get_by_key(self, key: str) -> Any | None:
        return self._items.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def list(self) -> builtins.list[Any]:
        return list(self._items.values())

    def list_keys(self) -> builtins.list[str]:
        return list(self._items)

    def get_indexers(self) -> dict[str, IndexFunc]:
        return dict(self._indexers)

    def index(self, index_name: str, obj: Any) -> builtins.list[Any]:
        """Objects sharing any indexed value with `obj`."""
        fn = self._fn(index_name)
        index = self._indices[index_name]
        keys: set[str] = set()
        for value in fn(obj):
            keys |= index.get(value, set())
        return [self._items[k] for k in keys]

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]:
        self._fn(index_name)
        return list(self._indices[index_name].get(value, ()))

    def by_index(self, index_name: str, value: str) -> builtins.list[Any]:
        self._fn(index_name)
        return [self._items[k] for k in self._indices[index_name].get(value, ())]

    def list_index_func_values(self, index_name: str) -> builtins.list[str]:
        self._fn(index_name)
        return list(self._indices[index_name])

    def _fn(self, index_name: str) -> IndexFunc:
        fn = self._indexers.get(index_name)
        if fn is None:
            raise KeyError(f"index with name {index_name} does not exist")
        return fn

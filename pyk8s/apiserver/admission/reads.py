"""How admission plugins read other objects: from the API server's watch caches (upstream: the plugins' informer
listers), falling back to storage where upstream falls back to a live GET or LIST. Objects from the caches are
shared: a plugin copies what it changes."""

from __future__ import annotations

from typing import Any

from ...api.meta import Object
from ...storage.errors import KeyNotFoundError


def rest_of(host: Any, group_version: str, plural: str) -> Any:
    """The resource's RESTStore, or None (the server is still building its stores, or has no such resource)."""
    stores = getattr(host, "stores", None) or {}
    return stores.get((group_version, plural))


def cached_get(host: Any, group_version: str, plural: str, namespace: str, name: str) -> Object | None:
    rest = rest_of(host, group_version, plural)
    if rest is None or not rest.cacher.ready:
        return None
    entry = rest.cacher.get(rest.key(namespace, name))
    return entry.obj if entry is not None else None


async def live_get(host: Any, group_version: str, plural: str, namespace: str, name: str) -> Object | None:
    rest = rest_of(host, group_version, plural)
    if rest is None:
        return None
    try:
        obj: Object = await rest.store.get(rest.key(namespace, name))
    except KeyNotFoundError:
        return None
    return obj


async def get(host: Any, group_version: str, plural: str, namespace: str, name: str) -> Object | None:
    """The cached object, else the stored one (a cache may lag a write just made)."""
    found = cached_get(host, group_version, plural, namespace, name)
    return found if found is not None else await live_get(host, group_version, plural, namespace, name)


def cached_list(host: Any, group_version: str, plural: str, namespace: str = "") -> list[Object]:
    rest = rest_of(host, group_version, plural)
    if rest is None or not rest.cacher.ready:
        return []
    entries, _ = rest.cacher.list(rest.resource.collection_key(namespace))
    return [en.obj for en in entries]


async def live_list(host: Any, group_version: str, plural: str, namespace: str = "") -> list[Object]:
    rest = rest_of(host, group_version, plural)
    if rest is None:
        return []
    result = await rest.store.list(rest.resource.collection_key(namespace))
    return list(result.items)

"""The default RBAC policy, made and kept at every API server start (upstream: the `rbac/bootstrap-roles`
post-start hook, pkg/registry/rbac/rest/storage_rbac.go EnsureRBACPolicy).

Upstream's hook first carries over what older releases stored (pre-1.9 `admin`/`edit`/`view` rules into their
`system:aggregate-to-*` roles; 1.14's split of `system:public-info-viewer` out of `system:discovery`), then
reconciles every default ClusterRole, ClusterRoleBinding, Role and RoleBinding without removing anything. Here
the stored objects are read once, each default is compared with its stored copy, and only the missing or
changed ones are written, all at once: a restart with nothing changed writes nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ....api import errors
from ...registry.rest import Context, DeleteOptions, ListOptions, RESTStore
from . import reconciliation as rc
from .bootstrap_policy import (
    CLUSTER_ROLES_TO_AGGREGATE,
    RBAC_VERSION,
    cluster_role_bindings,
    cluster_role_bindings_to_split,
    cluster_roles,
)
from .controller_policy import controller_role_bindings, controller_roles
from .namespace_policy import namespace_role_bindings, namespace_roles

log = logging.getLogger(__name__)

Object = dict[str, Any]
Key = tuple[str, str]  # (namespace, name)
RestGetter = Callable[[str, str], RESTStore]

# what a copy under another name must not keep (upstream clears resourceVersion; create sets the rest anew)
_SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink")


def all_cluster_roles() -> list[Object]:
    """Upstream: AllClusterRoles (the policy's and the controllers')."""
    return cluster_roles() + controller_roles()


def all_cluster_role_bindings() -> list[Object]:
    return cluster_role_bindings() + controller_role_bindings()


def _key(obj: Object) -> Key:
    md = obj.get("metadata") or {}
    return (md.get("namespace") or "", md.get("name") or "")


async def _stored(store: RESTStore) -> dict[Key, Object]:
    result = await store.list_objects("", ListOptions())
    return {_key(o): o for o in result.items}


def _copy_as(obj: Object, name: str) -> Object:
    new = {k: v for k, v in obj.items() if k != "status"}
    new["metadata"] = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _SERVER_SET}
    new["metadata"]["name"] = name
    return new


async def _create(store: RESTStore, obj: Object, ctx: Context) -> None:
    try:
        await store.create(_key(obj)[0], obj, ctx)
    except errors.StatusError as err:
        if err.code != 409:
            raise


async def _prime_aggregated_cluster_roles(store: RESTStore, stored: dict[Key, Object], ctx: Context) -> None:
    """A plain `admin`/`edit`/`view` of before 1.9 has its rules copied to the role it now aggregates from
    (upstream: primeAggregatedClusterRoles)."""
    for old_name, new_name in CLUSTER_ROLES_TO_AGGREGATE.items():
        if ("", new_name) in stored:
            continue
        existing = stored.get(("", old_name))
        if existing is None:
            continue
        if existing.get("aggregationRule") is not None:
            return  # already moved to aggregation: nothing custom is left to carry over (upstream stops here)
        log.info("migrating %s to %s", old_name, new_name)
        new = _copy_as(existing, new_name)
        await _create(store, new, ctx)
        stored[("", new_name)] = new


async def _prime_split_cluster_role_bindings(store: RESTStore, stored: dict[Key, Object], ctx: Context) -> None:
    """A new binding split from an old one starts with the old one's subjects, labels and annotations (upstream:
    primeSplitClusterRoleBindings)."""
    for old_name, template in cluster_role_bindings_to_split().items():
        existing = stored.get(("", old_name))
        new_name = template["metadata"]["name"]
        if existing is None or ("", new_name) in stored:
            continue
        new = dict(template)
        new["subjects"] = list(existing.get("subjects") or [])
        md = {"name": new_name}
        for field in ("labels", "annotations"):
            if (existing.get("metadata") or {}).get(field) is not None:
                md[field] = dict(existing["metadata"][field])
        new["metadata"] = md
        await _create(store, new, ctx)
        stored[("", new_name)] = new


def _reconcile_role(store: RESTStore, existing: Object | None, expected: Object,
                    ctx: Context) -> Awaitable[None] | None:  # fmt: skip
    """The write that brings a stored role to its default, or None when it needs none."""
    result = rc.reconcile_role(existing, expected)
    if result.protected or result.operation == rc.NONE:
        return None
    ns, name = _key(expected)
    if result.operation == rc.CREATE:
        return _create(store, result.role, ctx)

    async def reconciled(current: Object | None) -> Object:
        # on a conflict the store calls again with what is stored now: reconcile that instead
        if current is None:
            return rc.reconcile_role(None, expected).role
        again = rc.reconcile_role(current, expected)
        return current if again.protected else again.role

    async def update() -> None:
        await store.update(ns, name, reconciled, ctx, force_allow_create=True, from_watch_cache=True)

    return update()


def _reconcile_binding(store: RESTStore, existing: Object | None, expected: Object,
                       ctx: Context) -> Awaitable[None] | None:  # fmt: skip
    result = rc.reconcile_role_binding(existing, expected)
    if result.protected or result.operation == rc.NONE:
        return None
    ns, name = _key(expected)
    if result.operation == rc.CREATE:
        return _create(store, result.binding, ctx)

    if result.operation == rc.RECREATE:

        async def recreate() -> None:
            try:
                await store.delete(ns, name, DeleteOptions(), ctx)
            except errors.NotFound:
                pass
            await _create(store, result.binding, ctx)

        return recreate()

    async def reconciled(current: Object | None) -> Object:
        if current is None:
            return rc.reconcile_role_binding(None, expected).binding
        again = rc.reconcile_role_binding(current, expected)
        return current if again.protected or again.operation == rc.RECREATE else again.binding

    async def update() -> None:
        await store.update(ns, name, reconciled, ctx, force_allow_create=True, from_watch_cache=True)

    return update()


async def ensure_rbac_policy(rest: RestGetter, ctx: Context) -> int:
    """Make and reconcile every default RBAC object (`rest`: the API server's RESTStore getter; `ctx`: its own
    privileged Context). Returns how many objects were written."""
    started = time.perf_counter()
    stores = {p: rest(RBAC_VERSION, p) for p in ("clusterroles", "clusterrolebindings", "roles", "rolebindings")}
    stored = dict(zip(stores, await asyncio.gather(*(_stored(s) for s in stores.values())), strict=True))
    await _prime_aggregated_cluster_roles(stores["clusterroles"], stored["clusterroles"], ctx)
    await _prime_split_cluster_role_bindings(stores["clusterrolebindings"], stored["clusterrolebindings"], ctx)

    writes: list[Awaitable[None]] = []
    for plural, defaults, reconcile in (
        ("clusterroles", all_cluster_roles(), _reconcile_role),
        ("clusterrolebindings", all_cluster_role_bindings(), _reconcile_binding),
        ("roles", namespace_roles(), _reconcile_role),
        ("rolebindings", namespace_role_bindings(), _reconcile_binding),
    ):
        for expected in defaults:
            write = reconcile(stores[plural], stored[plural].get(_key(expected)), expected, ctx)
            if write is not None:
                writes.append(write)
    if not writes:
        return 0
    # all at once: the storage commits concurrent writes together
    outcomes = await asyncio.gather(*writes, return_exceptions=True)
    failures = [o for o in outcomes if isinstance(o, BaseException)]
    for failure in failures:
        log.error("unable to reconcile the default RBAC policy: %s", failure)
    if failures:
        raise failures[0]
    log.info(
        "reconciled the default RBAC policy: %d objects written in %.0f ms",
        len(writes),
        (time.perf_counter() - started) * 1000,
    )
    return len(writes)

"""The garbage collector: deletes objects whose owners are gone, and carries out foreground and orphan
deletion (upstream: pkg/controller/garbagecollector/garbagecollector.go).

For an object queued by the graph builder it reads the object fresh from the API server and sorts its
owner references (upstream's classifyReferences): *dangling* (the owner does not exist, or has another
uid), *waiting* (the owner is being deleted in the foreground) and *solid* (anything else). Then:
- solid owners left: only the dangling and waiting references are removed from the object;
- none solid: the object is deleted - in the foreground if it has dependents of its own and an owner is
  waiting, else with the policy its finalizers ask for (background by default);
- an object deleting in the foreground loses its `foregroundDeletion` finalizer once no dependent that
  blocks owner deletion is left, and the API server then removes it;
- an owner deleting with the `orphan` finalizer first has its reference removed from every dependent, then
  loses the finalizer.
Every decision about an owner's existence is made against the API server, through the dependent's own
reference (owners found absent are remembered by their full coordinates, as upstream's absentOwnerCache),
never against a possibly stale cache alone. A cluster-scoped object naming a namespaced owner is left alone,
as upstream does: such a reference can never be resolved, and deleting on it would be a guess.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import Any

from ...api import errors
from ...api.resources import TABLE, Resource
from ...client.cache import SharedInformerFactory
from ...client.discovery import DiscoveryClient
from ...client.rest import RESTClient
from ...client.workqueue import RateLimitingQueue, ShutDown
from .graph import FINALIZER_FOREGROUND, FINALIZER_ORPHAN, GraphBuilder, Node, ObjectReference

log = logging.getLogger(__name__)

ABSENT_OWNER_CACHE_SIZE = 500
# How often discovery is asked what custom resources exist (upstream: the controller manager's GC sync period,
# 30 s); a reference to an unknown kind asks at once, but not more often than MIN_RESYNC_SECONDS.
RESYNC_SECONDS = 30.0
MIN_RESYNC_SECONDS = 1.0


class UnknownKind(LookupError):
    """A reference to a kind the collector cannot map to a resource (yet: a CRD may define it since the last
    discovery): tried again later, as upstream retries REST-mapping errors."""


class NamespacedOwnerOfClusterScopedObject(LookupError):
    """A cluster-scoped object's owner reference names a namespaced kind: unresolvable, so never acted on."""


def deletable_resources() -> list[Resource]:
    """Every stored resource that can be listed, watched and deleted: what the collector monitors."""
    return [r for r in TABLE.stored() if {"watch", "delete"} <= set(r.verbs)]


class GarbageCollector:
    def __init__(
        self,
        client: RESTClient,
        factory: SharedInformerFactory,
        *,
        workers: int = 20,
        resources: list[Resource] | None = None,
    ) -> None:
        self.client = client
        self.workers = workers
        self.factory = factory
        self.graph = GraphBuilder(factory, resources if resources is not None else deletable_resources())
        self._absent: OrderedDict[tuple[str, str, str, str, str], None] = OrderedDict()
        # What CRDs define, from discovery: every served version by (apiVersion, kind); the preferred ones
        # are monitored. Only when the collector was given no fixed list of resources.
        self.discover = resources is None
        self.custom: dict[tuple[str, str], Resource] = {}
        self._discovery = DiscoveryClient(client)
        self._resync_now = asyncio.Event()

    async def run(self) -> None:
        """Wait for the informers' first lists, then work both queues until cancelled."""
        await asyncio.gather(*(i.wait_for_sync() for i in self.graph.informers))
        # The informers' first lists must also have reached the graph, or a foreground owner could look
        # dependent-free and lose its finalizer too early.
        while not self.graph.has_synced():  # noqa: ASYNC110 - registrations expose a flag, not an event
            await asyncio.sleep(0.05)
        log.info("garbage collector: caches synced, %d objects in the graph", len(self.graph.nodes))
        tasks = [
            asyncio.create_task(self._worker(self.graph.attempt_to_delete, self.attempt_to_delete))
            for _ in range(self.workers)
        ]
        tasks += [
            asyncio.create_task(self._worker(self.graph.attempt_to_orphan, self.attempt_to_orphan))
            for _ in range(max(1, self.workers // 4))
        ]
        if self.discover:
            tasks.append(asyncio.create_task(self._resync_monitors()))
        try:
            await asyncio.gather(*tasks)
        finally:
            self.graph.shut_down()
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _worker(self, queue: RateLimitingQueue[str], process: Any) -> None:
        while True:
            try:
                uid = await queue.get()
            except ShutDown:
                return
            try:
                requeue = await process(uid)
            except (errors.StatusError, ConnectionError) as err:
                log.info("garbage collector: %s: %s; will retry", uid, err)
                requeue = True
            except Exception:
                log.exception("garbage collector: processing %s failed", uid)
                requeue = True
            if requeue:
                queue.add_rate_limited(uid)
            else:
                queue.forget(uid)
            queue.done(uid)

    # -- looking things up --------------------------------------------------------------------------------

    def _resource_of(self, ref: ObjectReference) -> Resource | None:
        r = TABLE.for_api_version(ref.api_version, ref.kind)
        if r is None:
            r = self.custom.get((ref.api_version, ref.kind))
            if r is None and self.discover:
                self._resync_now.set()  # a kind defined since the last look, perhaps
        return r

    # -- custom resources ---------------------------------------------------------------------------------

    async def _resync_monitors(self) -> None:
        while True:
            try:
                await self.sync_monitors()
            except (errors.StatusError, ConnectionError) as err:
                log.info("garbage collector: discovery failed (%s); will retry", err)
            except Exception:
                log.exception("garbage collector: syncing monitors failed")
            await asyncio.sleep(MIN_RESYNC_SECONDS)
            try:
                await asyncio.wait_for(self._resync_now.wait(), RESYNC_SECONDS)
            except TimeoutError:
                pass
            self._resync_now.clear()

    async def sync_monitors(self) -> None:
        """Monitor the resources CRDs define now, as upstream's GarbageCollector.Sync does from discovery."""
        self._discovery.invalidate()
        groups = await self._discovery.server_groups_and_resources()
        builtin = {r.group for r in TABLE.resources}
        custom: dict[tuple[str, str], Resource] = {}
        monitored: list[Resource] = []
        for g in groups:
            if g.name in builtin or g.name == "metrics.k8s.io":
                continue
            for version, resources in g.resources.items():
                for r in resources:
                    if "/" in r.plural or not {"list", "watch", "delete"} <= set(r.verbs):
                        continue
                    custom[(r.api_version, r.kind)] = r
                    if version == g.preferred_version:
                        monitored.append(r)
        self.custom = custom
        added, removed = self.graph.sync_monitors(monitored)
        for r in removed:
            self.factory.stop_resource(r)
        if added:
            self.factory.start()
            log.info("garbage collector: now monitoring %s", ", ".join(r.qualified_name for r in added))

    async def _get_live(self, ref: ObjectReference) -> dict[str, Any] | None:
        """The object now, or None when it is absent or its uid differs (a new object under an old name)."""
        r = self._resource_of(ref)
        if r is None:
            raise UnknownKind(f"cannot map {ref.kind}.{ref.api_version} to a resource")
        if r.namespaced and not ref.namespace:
            raise LookupError(f"{ref}: a namespaced kind without a namespace")
        try:
            obj = await self.client.get(r, ref.name, ref.namespace if r.namespaced else None)
        except errors.NotFound:
            return None
        if (obj.get("metadata") or {}).get("uid") != ref.uid:
            return None
        return obj

    async def _owner(self, item: Node, ref: dict[str, Any]) -> dict[str, Any] | None:
        """The live owner a reference names, or None when it is dangling."""
        owner_ref = ObjectReference(
            ref.get("apiVersion", ""), ref.get("kind", ""), item.identity.namespace, ref.get("name", ""), ref["uid"]
        )
        r = self._resource_of(owner_ref)
        if r is None:
            raise UnknownKind(f"cannot map owner {owner_ref.kind}.{owner_ref.api_version} of {item.identity}")
        if r.namespaced and not item.identity.namespace:
            raise NamespacedOwnerOfClusterScopedObject(
                f"{item.identity} is cluster-scoped but names a namespaced owner {owner_ref}"
            )
        if not r.namespaced:
            owner_ref.namespace = ""
        # Absence is remembered per full reference: another dependent naming the same uid under other
        # coordinates (a wrong name, say) must not make this one look orphaned.
        coords = (r.group, r.kind, owner_ref.namespace, owner_ref.name, owner_ref.uid)
        if coords in self._absent:
            return None
        owner = await self._get_live(owner_ref)
        if owner is None:
            self._absent[coords] = None
            if len(self._absent) > ABSENT_OWNER_CACHE_SIZE:
                self._absent.popitem(last=False)
        return owner

    # -- attempt to delete --------------------------------------------------------------------------------

    async def attempt_to_delete(self, uid: str) -> bool:
        """Process one queued object; True means: try again later."""
        node = self.graph.nodes.get(uid)
        if node is None:
            return False
        if node.virtual:
            # An owner known only from references: each dependent checks it through its own reference.
            for dep in node.dependents:
                self.graph.attempt_to_delete.add(dep)
            return False
        try:
            latest = await self._get_live(node.identity)
        except UnknownKind as err:
            log.info("garbage collector: %s; will retry", err)
            return True
        except LookupError as err:
            log.info("garbage collector: %s", err)
            return False
        if latest is None:
            # Gone already; the informer will tell the graph, but its dependents need not wait for that.
            if self.graph.nodes.get(uid) is node:
                self.graph.remove_node(node)
            return False
        md = latest["metadata"]
        finalizers = md.get("finalizers") or []
        if md.get("deletionTimestamp"):
            if FINALIZER_FOREGROUND in finalizers:
                return await self._process_deleting_dependents(node, latest)
            return False
        refs = [r for r in md.get("ownerReferences") or [] if isinstance(r, dict) and r.get("uid")]
        if not refs:
            return False
        solid, dangling, waiting = [], [], []
        for ref in refs:
            try:
                owner = await self._owner(node, ref)
            except NamespacedOwnerOfClusterScopedObject as err:
                log.warning("garbage collector: %s; leaving it alone", err)
                return False
            except UnknownKind as err:
                log.info("garbage collector: %s; will retry", err)
                return True
            except LookupError as err:
                log.info("garbage collector: %s", err)
                solid.append(ref)  # an owner we cannot look up is never assumed gone
                continue
            if owner is None:
                dangling.append(ref)
            elif owner["metadata"].get("deletionTimestamp") and FINALIZER_FOREGROUND in (
                owner["metadata"].get("finalizers") or []
            ):
                waiting.append(ref)
            else:
                solid.append(ref)
        rv = str(md.get("resourceVersion") or "")
        if solid:
            if dangling or waiting:
                await self._remove_owner_references(node, {r["uid"] for r in dangling + waiting})
            return False
        if waiting and node.dependents:
            # Our owner waits for us, and we have dependents of our own: delete ourselves in the foreground
            # so the wait covers the whole subtree. A dependent that is itself waiting on its dependents may
            # close a cycle (A owns B owns A): unblock our references first so nobody waits forever.
            for dep_uid in node.dependents:
                dependent = self.graph.nodes.get(dep_uid)
                if dependent is not None and dependent.deleting_dependents:
                    await self._unblock_owner_references(node, refs)
                    rv = ""
                    break
            return await self._delete(node, "Foreground", rv)
        policy = "Background"
        if FINALIZER_ORPHAN in finalizers:
            policy = "Orphan"
        elif FINALIZER_FOREGROUND in finalizers:
            policy = "Foreground"
        return await self._delete(node, policy, rv)

    async def _process_deleting_dependents(self, node: Node, latest: dict[str, Any]) -> bool:
        blocking = self.graph.blocking_dependents(node)
        if not blocking:
            await self._remove_finalizer(node, FINALIZER_FOREGROUND)
            return False
        for dep in blocking:
            if not dep.deleting_dependents:
                self.graph.attempt_to_delete.add(dep.uid)
        return False  # each dependent's removal re-queues us

    async def _delete(self, node: Node, policy: str, resource_version: str = "") -> bool:
        """Delete with the uid (and the resourceVersion the decision was made on) as preconditions; True
        when the object changed since, so the decision must be made again."""
        r = self._resource_of(node.identity)
        if r is None:
            return False
        log.info("garbage collector: deleting %s (propagation %s)", node.identity, policy)
        pre = {"uid": node.uid}
        if resource_version:
            pre["resourceVersion"] = resource_version
        try:
            await self.client.delete(
                r, node.identity.name, node.identity.namespace or None, propagation_policy=policy, preconditions=pre
            )
        except errors.NotFound:
            pass
        except errors.Conflict:
            # Changed since we looked (adopted, say), or a new object took the name: look again.
            return bool(resource_version)
        return False

    async def _unblock_owner_references(self, node: Node, refs: list[dict[str, Any]]) -> None:
        r = self._resource_of(node.identity)
        if r is None:
            return
        unblocked = [{"uid": ref["uid"], "blockOwnerDeletion": False} for ref in refs if ref.get("blockOwnerDeletion")]
        if not unblocked:
            return
        patch = {"metadata": {"ownerReferences": unblocked, "uid": node.uid}}
        try:
            await self.client.patch(r, node.identity.name, patch, node.identity.namespace or None)
        except (errors.NotFound, errors.Conflict):
            pass

    async def _remove_owner_references(self, node: Node, uids: set[str]) -> None:
        r = self._resource_of(node.identity)
        if r is None:
            return
        # A strategic merge patch deleting by the merge key (uid), and the object's uid as a precondition.
        patch = {
            "metadata": {"ownerReferences": [{"$patch": "delete", "uid": u} for u in sorted(uids)], "uid": node.uid}
        }
        try:
            await self.client.patch(r, node.identity.name, patch, node.identity.namespace or None)
        except (errors.NotFound, errors.Conflict):
            pass

    async def _remove_finalizer(self, node: Node, finalizer: str) -> None:
        """Read-modify-write with the resourceVersion as precondition; a conflict re-reads."""
        r = self._resource_of(node.identity)
        if r is None:
            return
        ns = node.identity.namespace or None
        for _ in range(5):
            try:
                obj = await self.client.get(r, node.identity.name, ns)
            except errors.NotFound:
                return
            md = obj["metadata"]
            if md.get("uid") != node.uid or finalizer not in (md.get("finalizers") or []):
                return
            md["finalizers"] = [f for f in md["finalizers"] if f != finalizer]
            try:
                await self.client.update(r, obj, ns)
                return
            except errors.Conflict:
                continue
            except errors.NotFound:
                return
        raise errors.Conflict(409, "Conflict", f"removing finalizer {finalizer} from {node.identity}: kept conflicting")

    # -- attempt to orphan --------------------------------------------------------------------------------

    async def attempt_to_orphan(self, uid: str) -> bool:
        node = self.graph.nodes.get(uid)
        if node is None or node.virtual:
            return False
        for dep_uid in list(node.dependents):
            dep = self.graph.nodes.get(dep_uid)
            if dep is None or dep.virtual:
                continue
            await self._remove_owner_references(dep, {uid})
        await self._remove_finalizer(node, FINALIZER_ORPHAN)
        return False

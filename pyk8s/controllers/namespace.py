"""The namespace controller: empties a namespace being deleted, then releases it (upstream:
pkg/controller/namespace, NamespacedResourcesDeleter).

`kubectl delete namespace x` only marks the namespace (deletionTimestamp, phase Terminating); its
`kubernetes` finalizer in spec.finalizers keeps it. This controller deletes every namespaced object in it,
resource by resource, waits until nothing is left, and then removes the finalizer through the `finalize`
subresource, after which the API server removes the namespace. While content remains, the namespace's
conditions say what (NamespaceContentRemaining, NamespaceFinalizersRemaining, NamespaceDeletionContentFailure,
with upstream's wording), and the namespace is looked at again after a delay.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..api import errors, meta
from ..api.resources import TABLE, Resource
from ..client.cache import SharedInformerFactory
from ..client.discovery import DiscoveryClient
from ..client.rest import RESTClient
from ..client.workqueue import RateLimitingQueue, ShutDown
from .garbagecollector.garbagecollector import deletable_resources

log = logging.getLogger(__name__)

FINALIZER_KUBERNETES = "kubernetes"
# How long to wait before looking again at a namespace whose content is still going away: upstream estimates
# 15 s for content held by finalizers and waits half the estimate plus a second; content merely being
# deleted is looked at again sooner.
FINALIZER_ESTIMATE = 15.0
RECHECK_DELAY = 2.0


class ContentRemaining(Exception):
    """Objects are still in the namespace; try again after `delay` seconds."""

    def __init__(self, delay: float) -> None:
        super().__init__(f"content remaining, recheck in {delay}s")
        self.delay = delay


class NamespaceController:
    def __init__(self, client: RESTClient, factory: SharedInformerFactory, *, workers: int = 10) -> None:
        self.client = client
        self.workers = workers
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="namespace")
        self.resources = [r for r in deletable_resources() if r.namespaced]
        self.discovery = DiscoveryClient(client)
        self.informer = factory.informer_for("namespaces")
        self.informer.add_event_handler(
            on_add=lambda ns, _initial: self._enqueue(ns),
            on_update=lambda _old, ns: self._enqueue(ns),
        )

    def _enqueue(self, ns: dict[str, Any]) -> None:
        if (ns.get("metadata") or {}).get("deletionTimestamp"):
            self.queue.add(ns["metadata"]["name"])

    async def run(self) -> None:
        await self.informer.wait_for_sync()
        tasks = [asyncio.create_task(self._worker()) for _ in range(self.workers)]
        try:
            await asyncio.gather(*tasks)
        finally:
            self.queue.shut_down()
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _worker(self) -> None:
        while True:
            try:
                name = await self.queue.get()
            except ShutDown:
                return
            try:
                await self.sync(name)
                self.queue.forget(name)
            except ContentRemaining as wait:
                self.queue.add_after(name, wait.delay)
            except (errors.StatusError, ConnectionError) as err:
                log.info("namespace %s: %s; will retry", name, err)
                self.queue.add_rate_limited(name)
            except Exception:
                log.exception("namespace %s: deletion failed", name)
                self.queue.add_rate_limited(name)
            finally:
                self.queue.done(name)

    async def sync(self, name: str) -> None:
        try:
            ns = await self.client.get("namespaces", name)
        except errors.NotFound:
            return
        if not ns["metadata"].get("deletionTimestamp"):
            return
        if FINALIZER_KUBERNETES not in ((ns.get("spec") or {}).get("finalizers") or []):
            return
        remaining, with_finalizers, failures = await self._delete_content(name)
        ns = await self._set_conditions(ns, remaining, with_finalizers, failures)
        if with_finalizers:
            raise ContentRemaining(FINALIZER_ESTIMATE / 2 + 1)
        if remaining or failures:
            raise ContentRemaining(RECHECK_DELAY)
        ns["spec"]["finalizers"] = [f for f in ns["spec"]["finalizers"] if f != FINALIZER_KUBERNETES]
        try:
            await self.client.update("namespaces", ns, subresource="finalize")
        except errors.NotFound:
            return
        log.info("namespace %s: content deleted, finalizer removed", name)

    async def _delete_content(self, namespace: str) -> tuple[dict[str, int], dict[str, int], list[str]]:
        """Delete everything in the namespace; returns what is still there, per resource, what of it is held
        by finalizers, and the failures."""
        remaining: dict[str, int] = {}
        finalized: dict[str, int] = {}
        failures: list[str] = []

        async def one(r: Resource) -> None:
            try:
                if "deletecollection" in r.verbs:
                    await self.client.delete_collection(r, namespace, propagation_policy="Background")
                else:
                    listed = await self.client.list(r, namespace)
                    for item in listed.get("items") or ():
                        try:
                            await self.client.delete(
                                r, item["metadata"]["name"], namespace, propagation_policy="Background"
                            )
                        except errors.NotFound:
                            pass
                left = (await self.client.list(r, namespace)).get("items") or []
            except errors.StatusError as err:
                failures.append(f"{r.qualified_name}: {err.message}")
                return
            if left:
                remaining[r.qualified_name] = len(left)
                for item in left:
                    for f in item["metadata"].get("finalizers") or ():
                        finalized[f] = finalized.get(f, 0) + 1

        resources = self.resources + await self._custom_resources()
        results = await asyncio.gather(*(one(r) for r in resources), return_exceptions=True)
        for r, res in zip(resources, results, strict=True):
            if isinstance(res, BaseException):
                failures.append(f"{r.qualified_name}: {res}")
        return remaining, finalized, failures

    async def _custom_resources(self) -> list[Resource]:
        """The namespaced resources the server serves beyond the built-in ones (what CRDs define), asked anew
        for every namespace as upstream's controller does: a CRD may have come since the last one. Each
        group's preferred version only."""
        self.discovery.invalidate()
        try:
            groups = await self.discovery.server_groups_and_resources()
        except (errors.StatusError, ConnectionError) as err:
            log.info("namespace controller: discovery failed (%s); built-in resources only this time", err)
            return []
        builtin = {r.group for r in TABLE.resources}
        out: list[Resource] = []
        for g in groups:
            if g.name in builtin or g.name == "metrics.k8s.io":
                continue
            resources = g.resources.get(g.preferred_version) or []
            out += [r for r in resources if r.namespaced and {"list", "delete"} <= set(r.verbs)]
        return out

    async def _set_conditions(
        self, ns: dict[str, Any], remaining: dict[str, int], finalized: dict[str, int], failures: list[str]
    ) -> dict[str, Any]:
        """Upstream's status conditions for a terminating namespace, written only when they change."""
        now = meta.rfc3339(meta.now())
        changed = False
        for typ, problems, (true_reason, prefix), (false_reason, all_clear) in (
            (
                "NamespaceDeletionContentFailure",
                sorted(failures),
                ("ContentDeletionFailed", f"Failed to delete all resource types, {len(failures)} remaining: "),
                ("ContentDeleted", "All content successfully deleted, may be waiting on finalization"),
            ),
            (
                "NamespaceContentRemaining",
                [f"{k} has {v} resource instances" for k, v in sorted(remaining.items())],
                ("SomeResourcesRemain", "Some resources are remaining: "),
                ("ContentRemoved", "All content successfully removed"),
            ),
            (
                "NamespaceFinalizersRemaining",
                [f"{k} in {v} resource instances" for k, v in sorted(finalized.items())],
                ("SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: "),
                ("ContentHasNoFinalizers", "All content-preserving finalizers finished"),
            ),
        ):
            state, reason, message = (
                ("True", true_reason, prefix + ", ".join(problems)) if problems else ("False", false_reason, all_clear)
            )
            condition = {"type": typ, "status": state, "lastTransitionTime": now, "reason": reason, "message": message}
            changed |= meta.set_condition(ns, condition)
        if not changed:
            return ns
        try:
            return await self.client.update_status("namespaces", ns)
        except (errors.Conflict, errors.NotFound):
            return ns  # the next pass writes them

"""The PVC protection controller (upstream: pkg/controller/volume/pvcprotection, `persistentvolumeclaim-protection-
controller`): a claim keeps the `kubernetes.io/pvc-protection` finalizer (added here if the admission plugin did
not) while a scheduled pod uses it, so deleting a claim in use waits until its pods are gone.

A pod uses a claim when it is bound to a node and names the claim in a volume (or, not yet shut down, through a
generic ephemeral volume): phase does not matter, as upstream. The informer's pods are checked first; before the
finalizer goes, a live list of the namespace's pods confirms no pod the cache has not seen yet uses the claim.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from ...api import errors
from ...api.meta import json_copy
from ...client.cache import SharedInformerFactory
from ...client.cache.delta_fifo import deleted_object
from ...client.cache.indexer import meta_namespace_key, split_meta_namespace_key
from ...client.rest import RESTClient
from ...client.workqueue import RateLimitingQueue
from ...scheduler.plugins.storage_helpers import pod_claim_names, volume_is_for_pod
from ..workers import queue_workers, run_workers
from .persistentvolume.pv_controller import POD_PVC_INDEX, pvc_keys

log = logging.getLogger(__name__)

Object = Mapping[str, Any]
PVC_PROTECTION_FINALIZER = "kubernetes.io/pvc-protection"


def _shut_down(pod: Object) -> bool:
    """Done with by its kubelet or force-deleted: deleted with no grace left (upstream: podIsShutDown)."""
    md = pod.get("metadata") or {}
    return bool(md.get("deletionTimestamp")) and md.get("deletionGracePeriodSeconds") == 0


def pod_uses_claim(pod: Object, pvc: Object) -> bool:
    if not (pod.get("spec") or {}).get("nodeName"):
        return False  # the kubelet does not start a pod whose claim is being deleted
    if (pod.get("metadata") or {}).get("namespace") != (pvc.get("metadata") or {}).get("namespace"):
        return False
    name = (pvc.get("metadata") or {}).get("name")
    for claim, ephemeral, _ in pod_claim_names(pod):  # type: ignore[arg-type]
        if claim != name:
            continue
        if not ephemeral or (not _shut_down(pod) and volume_is_for_pod(pod, pvc) is None):  # type: ignore[arg-type]
            return True
    return False


def needs_finalizer(obj: Object, finalizer: str) -> bool:
    md = obj.get("metadata") or {}
    return not md.get("deletionTimestamp") and finalizer not in (md.get("finalizers") or ())


def is_deletion_candidate(obj: Object, finalizer: str) -> bool:
    md = obj.get("metadata") or {}
    return bool(md.get("deletionTimestamp")) and finalizer in (md.get("finalizers") or ())


class PVCProtectionController:
    def __init__(self, client: RESTClient, factory: SharedInformerFactory) -> None:
        self.client = client
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="pvcprotection")
        self.claims = factory.informer_for("persistentvolumeclaims")
        self.pods = factory.informer_for("pods")
        if POD_PVC_INDEX not in self.pods.indexer.get_indexers():
            self.pods.indexer.add_indexers({POD_PVC_INDEX: pvc_keys})
        self.claims.add_event_handler(
            on_add=lambda c, _initial: self._claim_changed(c), on_update=lambda _o, c: self._claim_changed(c)
        )
        self.pods.add_event_handler(
            on_add=lambda p, _initial: self._pod_changed(p, False),
            on_update=self._pod_updated,
            on_delete=lambda p: self._pod_changed(deleted_object(p), True),
        )

    def _claim_changed(self, pvc: Object) -> None:
        if needs_finalizer(pvc, PVC_PROTECTION_FINALIZER) or is_deletion_candidate(pvc, PVC_PROTECTION_FINALIZER):
            self.queue.add(meta_namespace_key(pvc))

    def _pod_updated(self, old: Object, new: Object) -> None:
        self._pod_changed(new, False)
        if (old.get("metadata") or {}).get("uid") != (new.get("metadata") or {}).get("uid"):
            self._pod_changed(old, True)  # a pod replaced by another of its name no longer holds its claims

    def _pod_changed(self, pod: Object, deleted: bool) -> None:
        # Only a pod that went away, ended, or never got a node can free a claim.
        terminated = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        if not deleted and not terminated and (pod.get("spec") or {}).get("nodeName"):
            return
        for key in pvc_keys(pod):
            self.queue.add(key)

    async def run(self) -> None:
        await asyncio.gather(self.claims.wait_for_sync(), self.pods.wait_for_sync())
        await run_workers(queue_workers(self.queue, self.sync, "sync pvc protection"), [self.queue])

    async def sync(self, key: str) -> None:
        pvc = self.claims.indexer.get_by_key(key)
        if pvc is None:
            return
        if needs_finalizer(pvc, PVC_PROTECTION_FINALIZER):
            await self._set_finalizers(
                pvc, [*((pvc.get("metadata") or {}).get("finalizers") or ()), PVC_PROTECTION_FINALIZER]
            )
        elif is_deletion_candidate(pvc, PVC_PROTECTION_FINALIZER) and not await self._in_use(pvc):
            rest = [f for f in (pvc.get("metadata") or {}).get("finalizers") or () if f != PVC_PROTECTION_FINALIZER]
            await self._set_finalizers(pvc, rest)

    async def _in_use(self, pvc: Object) -> bool:
        if any(pod_uses_claim(p, pvc) for p in self.pods.indexer.by_index(POD_PVC_INDEX, meta_namespace_key(pvc))):
            return True
        namespace, _ = split_meta_namespace_key(meta_namespace_key(pvc))
        live = await self.client.list("pods", namespace)
        return any(pod_uses_claim(p, pvc) for p in live.get("items") or ())

    async def _set_finalizers(self, pvc: Object, finalizers: list[str]) -> None:
        new = json_copy(pvc)
        new["metadata"]["finalizers"] = finalizers
        try:
            await self.client.update("persistentvolumeclaims", new)
        except errors.NotFound:
            pass

"""The PV protection controller (upstream: pkg/controller/volume/pvprotection, `persistentvolume-protection-
controller`): a PersistentVolume keeps the `kubernetes.io/pv-protection` finalizer (added here if the admission
plugin did not) while it is Bound, so deleting a volume a claim still uses waits until it is released."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ...api import errors
from ...api.meta import json_copy
from ...client.cache import SharedInformerFactory
from ...client.cache.indexer import meta_namespace_key
from ...client.rest import RESTClient
from ...client.workqueue import RateLimitingQueue
from ..workers import queue_workers, run_workers
from .pvc_protection import is_deletion_candidate, needs_finalizer

log = logging.getLogger(__name__)

Object = Mapping[str, Any]
PV_PROTECTION_FINALIZER = "kubernetes.io/pv-protection"


class PVProtectionController:
    def __init__(self, client: RESTClient, factory: SharedInformerFactory) -> None:
        self.client = client
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="pvprotection")
        self.volumes = factory.informer_for("persistentvolumes")
        self.volumes.add_event_handler(
            on_add=lambda v, _initial: self._changed(v), on_update=lambda _o, v: self._changed(v)
        )

    def _changed(self, pv: Object) -> None:
        if needs_finalizer(pv, PV_PROTECTION_FINALIZER) or is_deletion_candidate(pv, PV_PROTECTION_FINALIZER):
            self.queue.add(meta_namespace_key(pv))

    async def run(self) -> None:
        await self.volumes.wait_for_sync()
        await run_workers(queue_workers(self.queue, self.sync, "sync pv protection"), [self.queue])

    async def sync(self, key: str) -> None:
        pv = self.volumes.indexer.get_by_key(key)
        if pv is None:
            return
        finalizers = list((pv.get("metadata") or {}).get("finalizers") or ())
        if needs_finalizer(pv, PV_PROTECTION_FINALIZER):
            await self._set_finalizers(pv, [*finalizers, PV_PROTECTION_FINALIZER])
        elif is_deletion_candidate(pv, PV_PROTECTION_FINALIZER) and (pv.get("status") or {}).get("phase") != "Bound":
            await self._set_finalizers(pv, [f for f in finalizers if f != PV_PROTECTION_FINALIZER])

    async def _set_finalizers(self, pv: Object, finalizers: list[str]) -> None:
        new = json_copy(pv)
        new["metadata"]["finalizers"] = finalizers
        try:
            await self.client.update("persistentvolumes", new)
        except errors.NotFound:
            pass

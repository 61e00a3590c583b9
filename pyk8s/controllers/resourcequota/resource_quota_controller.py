"""The resource quota controller (upstream: pkg/controller/resourcequota/resource_quota_controller.go,
`resourcequota-controller`): keeps each ResourceQuota's `status.hard` equal to its `spec.hard` and recomputes
`status.used` from what the namespace holds, with the same usage rules the admission plugin charges by.

A quota is synced when it appears or its `spec.hard` changes, when something it counts is deleted or changes
its usage (a pod finishing frees its compute resources: upstream's replenishment), and every
`--resource-quota-sync-period` (5 minutes) for all quotas. Pods, services, claims and the legacy counted
resources are read from shared informers; any other `count/<resource>.<group>` from a live list.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ...api import errors
from ...apiserver.admission.resource_quota import resources as rq
from ...apiserver.admission.resource_quota.evaluators import (
    LEGACY_OBJECT_COUNT_ALIASES,
    Evaluator,
    ObjectCountEvaluator,
    Registry,
    usage_stats,
)
from ...client.cache import SharedInformerFactory
from ...client.cache.delta_fifo import deleted_object
from ...client.rest import RESTClient, resolve_resource
from ...client.workqueue import RateLimitingQueue
from ..workers import queue_workers, run_workers

log = logging.getLogger(__name__)

DEFAULT_SYNC_PERIOD = 300.0  # --resource-quota-sync-period
DEFAULT_WORKERS = 5  # --concurrent-resource-quota-syncs

# The resources read from informers: what most quotas count, and what replenishment watches.
WATCHED = (("", "pods"), ("", "services"), ("", "persistentvolumeclaims"), *LEGACY_OBJECT_COUNT_ALIASES)


def _key(obj: dict[str, Any]) -> str:
    md = obj.get("metadata") or {}
    return f"{md.get('namespace', '')}/{md.get('name', '')}"


class ResourceQuotaController:
    def __init__(self, client: RESTClient, factory: SharedInformerFactory, *, workers: int = DEFAULT_WORKERS,
                 sync_period: float = DEFAULT_SYNC_PERIOD) -> None:  # fmt: skip
        self.client = client
        self.workers = workers
        self.sync_period = sync_period
        self.registry = Registry()
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="resourcequota_primary")
        self.quotas = factory.informer_for("resourcequotas")
        self.quotas.add_event_handler(on_add=lambda q, _initial: self._enqueue(q), on_update=self._quota_updated,
                                      on_delete=lambda q: None)  # fmt: skip
        self.informers = {}
        for group, plural in WATCHED:
            informer = factory.informer_for(f"{plural}.{group}" if group else plural)
            evaluator = self.registry.get(group, plural)
            informer.add_event_handler(
                on_update=lambda old, new, ev=evaluator: self._replenish_on_update(ev, old, new),
                on_delete=lambda obj, ev=evaluator: self._replenish(ev, deleted_object(obj)),
            )
            self.informers[(group, plural)] = informer

    # -- events ------------------------------------------------------------------------------------------------

    def _enqueue(self, quota: dict[str, Any]) -> None:
        self.queue.add(_key(quota))

    def _quota_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        # Status writes are this controller's (and admission's): only a change of spec.hard needs a sync here.
        if not rq.equals(rq.parse((old.get("spec") or {}).get("hard")), rq.parse((new.get("spec") or {}).get("hard"))):
            self._enqueue(new)

    def _replenish_on_update(self, evaluator: Evaluator, old: dict[str, Any], new: dict[str, Any]) -> None:
        if not rq.equals(evaluator.usage(old), evaluator.usage(new)):
            self._replenish(evaluator, new)

    def _replenish(self, evaluator: Evaluator, obj: dict[str, Any]) -> None:
        """Every quota of the object's namespace that counts something of its kind."""
        namespace = (obj.get("metadata") or {}).get("namespace") or ""
        for quota in self.quotas.indexer.list():
            if (quota.get("metadata") or {}).get("namespace") != namespace:
                continue
            if evaluator.matching_resources(((quota.get("status") or {}).get("hard")) or {}):
                self._enqueue(quota)

    # -- running -----------------------------------------------------------------------------------------------

    async def run(self) -> None:
        await asyncio.gather(self.quotas.wait_for_sync(), *(i.wait_for_sync() for i in self.informers.values()))
        tasks = queue_workers(self.queue, self.sync, "sync resource quota", self.workers)
        tasks.append(asyncio.create_task(self._resync_forever()))
        await run_workers(tasks, [self.queue])

    async def _resync_forever(self) -> None:
        while True:
            await asyncio.sleep(self.sync_period)
            for quota in self.quotas.indexer.list():
                self._enqueue(quota)

    async def _items(self, group: str, plural: str, namespace: str) -> list[dict[str, Any]] | None:
        informer = self.informers.get((group, plural))
        if informer is not None:
            return [o for o in informer.indexer.list() if (o.get("metadata") or {}).get("namespace") == namespace]
        try:
            resource = resolve_resource(f"{plural}.{group}" if group else plural)
        except errors.NotFound:
            return None  # not a resource this cluster serves (as upstream: its usage stays unknown)
        listed = await self.client.list(resource, namespace)
        return list(listed.get("items") or [])

    def _evaluators_for(self, hard: dict[str, Any]) -> list[Evaluator]:
        """The evaluators that count something `hard` names: the registry's, and one per other `count/...`."""
        found: list[Evaluator] = [self.registry.get(g, p) for g, p in WATCHED]
        for name in hard:
            if not name.startswith("count/"):
                continue
            plural, _, group = name.removeprefix("count/").partition(".")
            if (group, plural) not in WATCHED:
                found.append(ObjectCountEvaluator(group, plural))
        return found

    async def sync(self, key: str) -> None:
        quota = self.quotas.indexer.get_by_key(key)
        if quota is None:
            return
        namespace = quota["metadata"].get("namespace", "")
        spec_hard = (quota.get("spec") or {}).get("hard") or {}
        status = quota.get("status") or {}
        used = rq.parse(status.get("used"))
        for evaluator in self._evaluators_for(spec_hard):
            names = evaluator.matching_resources(spec_hard)
            if not names:
                continue
            items = await self._items(evaluator.group, evaluator.plural, namespace)
            if items is None:
                continue
            used.update(usage_stats(evaluator, items, quota, names))
        used = rq.mask(used, spec_hard)
        hard = rq.parse(spec_hard)
        if rq.equals(hard, rq.parse(status.get("hard"))) and rq.equals(used, rq.parse(status.get("used"))):
            return
        updated = {**quota, "status": {"hard": rq.to_json(hard), "used": rq.to_json(used)}}
        try:
            await self.client.update_status("resourcequotas", updated, namespace)
        except errors.Conflict:
            # admission charged the quota meanwhile: recompute on the new state
            self.queue.add_rate_limited(key)

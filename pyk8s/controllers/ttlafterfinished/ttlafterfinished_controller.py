"""The TTL-after-finished controller (upstream: pkg/controller/ttlafterfinished/ttlafterfinished_controller.go,
`ttl-after-finished-controller`): a Job with `ttlSecondsAfterFinished` is deleted (foreground propagation, so its
pods go first) that many seconds after its Complete or Failed condition's transition. The Job is read afresh
before it is deleted, and the delete carries its UID as a precondition, so a Job whose TTL was raised meanwhile,
or a new Job of the same name, is left alone."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping
from typing import Any

from ...api import errors
from ...api.meta import parse_time
from ...client.cache import SharedInformerFactory
from ...client.cache.indexer import meta_namespace_key, split_meta_namespace_key
from ...client.rest import RESTClient
from ...client.workqueue import RateLimitingQueue
from ..workers import queue_workers, run_workers

log = logging.getLogger(__name__)

JOBS = "jobs.batch"


def finish_time(job: Mapping[str, Any]) -> dt.datetime | None:
    """When the Job finished: its Complete or Failed (True) condition's lastTransitionTime."""
    for c in (job.get("status") or {}).get("conditions") or ():
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True" and c.get("lastTransitionTime"):
            return parse_time(str(c["lastTransitionTime"]))
    return None


def time_left(job: Mapping[str, Any], now: dt.datetime) -> float | None:
    """Seconds until the Job expires (≤ 0: expired); None when it has no TTL or has not finished."""
    ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    if ttl is None or (job.get("metadata") or {}).get("deletionTimestamp"):
        return None
    finished = finish_time(job)
    if finished is None:
        return None
    return (finished + dt.timedelta(seconds=int(ttl)) - now).total_seconds()


class TTLAfterFinishedController:
    def __init__(self, client: RESTClient, factory: SharedInformerFactory, *, workers: int = 5) -> None:
        self.client = client
        self.workers = workers
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name="ttl_jobs_to_delete")
        self.jobs = factory.informer_for(JOBS)
        self.jobs.add_event_handler(
            on_add=lambda j, _initial: self._enqueue(j), on_update=lambda _old, j: self._enqueue(j)
        )

    def _enqueue(self, job: Mapping[str, Any]) -> None:
        if time_left(job, dt.datetime.now(dt.UTC)) is not None:
            self.queue.add(meta_namespace_key(job))

    async def run(self) -> None:
        await self.jobs.wait_for_sync()
        tasks = queue_workers(self.queue, self.sync, "clean up finished job", self.workers)
        await run_workers(tasks, [self.queue])

    async def sync(self, key: str) -> None:
        namespace, name = split_meta_namespace_key(key)
        cached = self.jobs.indexer.get_by_key(key)
        if cached is None:
            return
        left = time_left(cached, dt.datetime.now(dt.UTC))
        if left is None:
            return
        if left > 0:
            self.queue.add_after(key, left)
            return
        # The cache may be stale (the TTL changed, the Job was replaced): decide on what is stored.
        try:
            fresh = await self.client.get(JOBS, name, namespace)
        except errors.NotFound:
            return
        left = time_left(fresh, dt.datetime.now(dt.UTC))
        if left is None:
            return
        if left > 0:
            self.queue.add_after(key, left)
            return
        uid = str(fresh["metadata"]["uid"])
        log.info("job %s: finished and its TTL expired; deleting it", key)
        try:
            await self.client.delete(JOBS, name, namespace, propagation_policy="Foreground", preconditions={"uid": uid})
        except errors.NotFound:
            pass

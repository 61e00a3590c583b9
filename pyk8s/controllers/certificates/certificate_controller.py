"""The loop the CSR approver and signers share (upstream: pkg/controller/certificates/certificate_controller.go,
CertificateController): every add, update and delete of a CertificateSigningRequest queues its name; a worker
hands a copy of each request that has no certificate yet to the controller's handler, and retries a failed one
with back-off (200 ms doubling to 1000 s per request, at most 10 retries a second overall)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ...api.certificates import CSRS
from ...api.meta import json_copy
from ...client.cache import SharedInformerFactory
from ...client.cache.delta_fifo import deleted_object
from ...client.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimitingQueue,
    ShutDown,
)
from ..workers import EXPECTED_SYNC_ERRORS, run_workers

log = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any]], Awaitable[None]]


class IgnorableError(Exception):
    """A sync that will be retried without it being worth more than a line in the log (upstream:
    certificates.IgnorableError): a request recognised but not yet allowed."""


class CertificateController:
    """`handler` is called with a deep copy of each CSR that has no certificate yet; `name` names the loop (the
    queue keeps upstream's name, `certificate`)."""

    def __init__(self, name: str, factory: SharedInformerFactory, handler: Handler, *, workers: int = 5) -> None:
        self.name = name
        self.handler = handler
        self.workers = workers
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(
            MaxOfRateLimiter(ItemExponentialFailureRateLimiter(0.2, 1000.0), BucketRateLimiter(qps=10.0, burst=100)),
            name="certificate",
        )
        self.csrs = factory.informer_for(CSRS)
        self.csrs.add_event_handler(
            on_add=lambda csr, _initial: self._enqueue(csr),
            on_update=lambda _old, csr: self._enqueue(csr),
            on_delete=lambda obj: self._enqueue(deleted_object(obj)),
        )

    def _enqueue(self, csr: Any) -> None:
        name = ((csr or {}).get("metadata") or {}).get("name")
        if name:
            self.queue.add(str(name))

    async def run(self) -> None:
        log.info("Starting certificate controller %s", self.name)
        await self.csrs.wait_for_sync()
        await run_workers([asyncio.create_task(self._worker()) for _ in range(self.workers)], [self.queue])

    async def _worker(self) -> None:
        """process_items' loop, but an IgnorableError is only a debug line (upstream logs it at V(4))."""
        while True:
            try:
                name = await self.queue.get()
            except ShutDown:
                return
            try:
                await self.sync(name)
                self.queue.forget(name)
            except IgnorableError as err:
                log.debug("sync certificate request %s failed: %s", name, err)
                self.queue.add_rate_limited(name)
            except EXPECTED_SYNC_ERRORS as err:
                log.warning("%s: sync %s failed with: %s", self.name, name, err)
                self.queue.add_rate_limited(name)
            except Exception:
                log.exception("%s: sync %s failed", self.name, name)
                self.queue.add_rate_limited(name)
            finally:
                self.queue.done(name)

    async def sync(self, name: str) -> None:
        csr = self.csrs.indexer.get_by_key(name)
        if csr is None:
            log.debug("csr %s has been deleted", name)
            return
        if (csr.get("status") or {}).get("certificate"):
            return  # issued: nothing left to do
        await self.handler(json_copy(csr))  # a copy: the informer's object is shared

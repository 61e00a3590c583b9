"""The shape the CRD server's controllers share (upstream: each of apiextensions-apiserver's controllers runs
an informer on CRDs and a workqueue of their names): `CRDController` watches the CRD store in this process,
queues the names its `on_event` picks, and `sync`s them one at a time; a sync that asks to be tried again, or
that fails, is queued again after `retry_delay`. `watch_crds` is the watch alone, started again whenever it
ends or fails, for the handler that serves the CRDs."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from ..api.meta import Object
from ..apiserver.registry.rest import ListOptions, RESTStore
from ..client.workqueue import DelayingQueue, ShutDown

log = logging.getLogger("pyk8s.apiextensions")


async def watch_crds(crds: RESTStore, handle: Callable[[str, Object], Awaitable[None]], what: str) -> None:
    """Every CRD event, as (type, object), to `handle`, for ever."""
    while True:
        try:
            watcher = await crds.watch("", ListOptions())
            async for ev in watcher:
                if ev.object is not None:
                    await handle(ev.type, ev.object)
        except asyncio.CancelledError:
            raise
        except Exception:  # one broken CRD must not stop the work on the others
            log.exception("%s: restarting its watch", what)
            await asyncio.sleep(1)


class CRDController:
    retry_delay = 1.0

    def __init__(self, crds: RESTStore, name: str) -> None:
        self.crds = crds
        self.name = name
        self.queue: DelayingQueue[str] = DelayingQueue(name)

    def on_event(self, event_type: str, crd: Object) -> None:
        """Queue what an event concerns (override)."""
        self.queue.add(crd["metadata"]["name"])

    async def sync(self, name: str) -> bool:
        """Bring one CRD up to date; True when it should be looked at again (override)."""
        raise NotImplementedError

    async def run(self) -> None:
        async def handle(event_type: str, crd: Object) -> None:
            self.on_event(event_type, crd)

        worker = asyncio.create_task(self._work())
        try:
            await watch_crds(self.crds, handle, self.name)
        finally:
            worker.cancel()
            self.queue.shut_down()

    async def _work(self) -> None:
        while True:
            try:
                name = await self.queue.get()
            except ShutDown:
                return
            try:
                again = await self.sync(name)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s: syncing %s", self.name, name)
                again = True
            finally:
                self.queue.done(name)
            if again:
                self.queue.add_after(name, self.retry_delay)

"""How a controller runs its worker tasks (upstream: the shape every controller's Run has, `go wait.Until(worker)`
with `defer queue.ShutDown()` and the event broadcaster's `defer Shutdown()`): until cancelled or a worker fails;
then its queues shut down, the workers are cancelled and awaited, and its events are written before it stops."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

from ..client.events import EventBroadcaster
from ..client.workqueue import ShutDown

log = logging.getLogger(__name__)
T = TypeVar("T")


class Stoppable(Protocol):
    def shut_down(self) -> None: ...


async def run_workers(
    tasks: Sequence[asyncio.Task[Any]], stop: Sequence[Stoppable], broadcaster: EventBroadcaster | None = None
) -> None:
    """Run `tasks` (and `broadcaster`, started here) until cancelled; then shut `stop` down and wind up."""
    events = broadcaster.start() if broadcaster is not None else None
    try:
        await asyncio.gather(*tasks)
    finally:
        for s in stop:
            s.shut_down()
        for t in tasks:
            t.cancel()
        # Cancellation may come twice (the manager's and ours): the events stop whatever happens.
        try:
            await asyncio.gather(*tasks, return_exceptions=True)
            if broadcaster is not None:
                await broadcaster.shutdown(timeout=5.0)
        finally:
            if events is not None:
                events.cancel()


class ItemQueue(Protocol[T]):
    async def get(self) -> T: ...

    def done(self, item: T) -> None: ...


async def process_items(
    queue: ItemQueue[T],
    handle: Callable[[T], Awaitable[None] | None],
    what: str,
    *,
    retry: Callable[[T], None] | None = None,
) -> None:
    """A worker (upstream: `for processNextWorkItem()`): hand each item of `queue` to `handle` until the queue shuts
    down. A failure is logged with `what` and the item, and handed to `retry` (e.g. the queue's add_rate_limited)."""
    while True:
        try:
            item = await queue.get()
        except ShutDown:
            return
        try:
            result = handle(item)
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("%s %s failed", what, item)
            if retry is not None:
                retry(item)
        finally:
            queue.done(item)

"""How a controller runs its worker tasks (upstream: the shape every controller's Run has, `go wait.Until(worker)`
with `defer queue.ShutDown()` and the event broadcaster's `defer Shutdown()`): until cancelled or a worker fails;
then its queues shut down, the workers are cancelled and awaited, and its events are written before it stops."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from ..api import errors
from ..client.events import EventBroadcaster
from ..client.workqueue import RateLimitingQueue, process_items

# What a sync may meet without it being a bug: the API answering no (409s on stale caches above all), a lost
# connection, a value that does not parse. Logged in a line and retried with back-off.
EXPECTED_SYNC_ERRORS: tuple[type[Exception], ...] = (errors.StatusError, ConnectionError, ValueError)


class Stoppable(Protocol):
    def shut_down(self) -> None: ...


def queue_workers(queue: RateLimitingQueue[Any], handle: Callable[[Any], Awaitable[None]], what: str,
                  count: int = 1) -> list[asyncio.Task[Any]]:  # fmt: skip
    """`count` workers handing `queue`'s items to `handle`, retrying failures with the queue's back-off."""
    return [
        asyncio.create_task(process_items(queue, handle, what, retry=True, expected=EXPECTED_SYNC_ERRORS))
        for _ in range(count)
    ]


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

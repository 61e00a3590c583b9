"""The in-flight limit: how many requests of a kind (read-only, mutating) the server serves at once, and what
happens to the ones past it.

Upstream has two filters for this. The max-in-flight filter (`--enable-priority-and-fairness=false`) answers 429 at
once past `--max-requests-inflight` / `--max-mutating-requests-inflight`. API Priority and Fairness, on by default
since v1.20, instead queues a request past its priority level's seats and rejects it only when its queue is full or
it has waited a quarter of its deadline (15 s of the default 60 s, at most a minute). Clients are built for the
latter: a controller manager that creates 500 pods at once sees them queued, not refused and retried a second later.

pyk8s keeps APF's queueing with a single priority level per kind (no FlowSchemas or PriorityLevelConfigurations
yet): the two flags' values are the seats; past them, requests wait first come first served, at most
`queue_limit` of them for at most `wait_limit` seconds, and are answered upstream's 429 "Too many requests, please
try again later." with Retry-After: 1 otherwise. A limit of 0 means no limit, as upstream.
"""

from __future__ import annotations

import asyncio
from collections import deque

# APF waits a request at most a quarter of its deadline; with the default --request-timeout of 60 s, 15 s.
WAIT_FRACTION = 0.25
MAX_WAIT = 60.0
# How many may wait per kind: APF's default priority levels hold tens of queues of 50 each.
DEFAULT_QUEUE_LIMIT = 2000


class InflightLimit:
    """The seats of one kind of request and the queue of those waiting for one."""

    def __init__(self, limit: int, *, queue_limit: int = DEFAULT_QUEUE_LIMIT, wait_limit: float = 15.0) -> None:
        self.limit = limit
        self.queue_limit = queue_limit
        self.wait_limit = min(wait_limit, MAX_WAIT)
        self.in_use = 0
        self._waiters: deque[asyncio.Future[bool]] = deque()
        self._waiting = 0  # waiters not yet answered (the deque may still hold answered ones)

    @property
    def waiting(self) -> int:
        return self._waiting

    async def acquire(self) -> bool:
        """Take a seat, waiting for one if need be; False when the request is to be refused (429)."""
        if not self.limit or (self.in_use < self.limit and not self._waiting):
            self.in_use += 1
            return True
        if self._waiting >= self.queue_limit:
            return False
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bool] = loop.create_future()
        self._waiters.append(fut)
        self._waiting += 1
        timer = loop.call_later(self.wait_limit, self._give_up, fut)
        try:
            return await fut
        except asyncio.CancelledError:
            # The client went away (or the server stops) while waiting: cancelling the task cancelled `fut` too,
            # unless a seat (or the refusal) reached it first. A seat handed over meanwhile is passed on.
            if fut.cancelled() or not fut.done():
                fut.cancel()
                self._waiting -= 1
            elif fut.result():
                self.release()
            raise
        finally:
            timer.cancel()

    def _give_up(self, fut: asyncio.Future[bool]) -> None:
        if not fut.done():
            fut.set_result(False)
            self._waiting -= 1

    def release(self) -> None:
        """Give the seat back: to the longest waiting request if there is one."""
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                self._waiting -= 1
                fut.set_result(True)
                return
        self.in_use -= 1

"""The per-zone queue of nodes waiting to be tainted NoExecute, drained under a token bucket (upstream:
pkg/controller/nodelifecycle/scheduler/rate_limited_queue.go, RateLimitedTimedQueue).

A node is added once: after it has been processed successfully it leaves the queue but stays in the set, so it
is not queued again until `remove` (the node is healthy again, or its taint must change). The limiter is swapped
as the zone's state changes; a rate of zero or less lets nothing through (upstream's fake never-limiter).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from ...client.flowcontrol import TokenBucket

# Upstream's constants (scheduler package of the node lifecycle controller).
NODE_EVICTION_PERIOD = 0.1  # how often the tainting pass runs
EVICTION_RATE_LIMITER_BURST = 1
NODE_HEALTH_UPDATE_RETRY = 5

Clock = Callable[[], float]


@dataclass(order=True)
class TimedValue:
    process_at: float
    added_at: float = field(compare=False)
    value: str = field(compare=False)
    uid: str = field(compare=False, default="")


class _NeverLimiter:
    qps = 0.0

    def try_accept(self) -> bool:
        return False


class RateLimitedTimedQueue:
    def __init__(self, qps: float, burst: int = EVICTION_RATE_LIMITER_BURST, *, clock: Clock = time.monotonic) -> None:
        self.clock = clock
        self.burst = burst
        self.limiter: TokenBucket | _NeverLimiter = self._limiter(qps)
        self._heap: list[TimedValue] = []
        self._queued: dict[str, TimedValue] = {}  # value -> its entry while in the heap
        self._set: set[str] = set()  # every value added and not removed, processed or not

    def _limiter(self, qps: float) -> TokenBucket | _NeverLimiter:
        return TokenBucket(qps, self.burst, clock=self.clock) if qps > 0 else _NeverLimiter()

    @property
    def qps(self) -> float:
        return self.limiter.qps

    def add(self, value: str, uid: str = "") -> bool:
        """Queue `value` to be processed now; False if it is already there (queued or processed)."""
        if value in self._set:
            return False
        now = self.clock()
        entry = TimedValue(now, now, value, uid)
        self._set.add(value)
        self._queued[value] = entry
        heapq.heappush(self._heap, entry)
        return True

    def remove(self, value: str) -> bool:
        """Forget `value` entirely; True if it was known."""
        if value not in self._set:
            return False
        self._set.discard(value)
        entry = self._queued.pop(value, None)
        if entry is not None and entry in self._heap:  # not while it is being processed
            self._heap.remove(entry)
            heapq.heapify(self._heap)
        return True

    def __contains__(self, value: str) -> bool:
        return value in self._set

    def queued(self) -> list[str]:
        return [e.value for e in sorted(self._heap)]

    async def try_process(self, fn: Callable[[TimedValue], Awaitable[tuple[bool, float]]]) -> list[TimedValue]:
        """Hand the due values to `fn`, one token each, until the bucket or the due values run out. `fn` answers
        (done, retry_after): done leaves the queue (the value stays known); otherwise it comes back after
        `retry_after` seconds. Returns the values handed over (for the caller's tests and logs)."""
        handed: list[TimedValue] = []
        while self._heap:
            head = self._heap[0]
            now = self.clock()
            if head.process_at > now:
                break
            if not self.limiter.try_accept():
                break
            heapq.heappop(self._heap)
            handed.append(head)
            done, retry_after = await fn(head)
            if self._queued.get(head.value) is not head:
                continue  # removed (or removed and added again) while it was processed
            if done:
                del self._queued[head.value]
            else:
                head.process_at = self.clock() + retry_after + 0.001
                heapq.heappush(self._heap, head)
        return handed

    def swap_limiter(self, qps: float) -> None:
        """Upstream SwapLimiter: a new bucket for a new rate; a caller that was waiting on the old one waits on
        the new one too (its one token is taken)."""
        if self.limiter.qps == qps:
            return
        new = self._limiter(qps)
        if isinstance(new, TokenBucket) and not self.limiter.try_accept():
            new.try_accept()
        self.limiter = new

"""Pacing for clients (upstream: client-go/util/flowcontrol): the token bucket behind the REST client's
QPS/burst, the workqueue's overall limiter and the event spam filter, and the jittered exponential
backoff of reflectors and request retries.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable

Clock = Callable[[], float]


class TokenBucket:
    """`burst` tokens at once, refilled at `qps` a second; it starts full (upstream's token-bucket limiter,
    golang.org/x/time/rate). `reserve` always takes a token, going into debt, and says how long to wait, so
    waiters leave in the order they came, 1/qps apart; `try_accept` takes one only if one is there. A
    clock that goes backwards refills nothing. A qps of zero or less means no limit."""

    __slots__ = ("_clock", "_last", "_tokens", "burst", "qps")

    def __init__(self, qps: float, burst: int, clock: Clock = time.monotonic) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._clock = clock
        self._tokens = float(self.burst)
        self._last = clock()

    @property
    def enabled(self) -> bool:
        return self.qps > 0

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + max(0.0, now - self._last) * self.qps)
        self._last = max(now, self._last)

    def reserve(self) -> float:
        """Take a token; returns how long to wait before using it."""
        if not self.enabled:
            return 0.0
        self._refill()
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def try_accept(self) -> bool:
        """Take a token if one is available now."""
        if not self.enabled:
            return True
        self._refill()
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    async def wait(self) -> None:
        delay = self.reserve()
        if delay > 0:
            await asyncio.sleep(delay)


class Backoff:
    """Exponential backoff with jitter that resets after a quiet period (upstream: the reflector's
    BackoffManager: 800 ms initial, 30 s cap, factor 2, jitter 1.0, reset after 2 minutes)."""

    def __init__(
        self, initial: float = 0.8, cap: float = 30.0, reset_after: float = 120.0, jitter: float = 1.0
    ) -> None:
        self.initial, self.cap, self.reset_after, self.jitter = initial, cap, reset_after, jitter
        self._current = 0.0
        self._last_failure = 0.0

    def next(self) -> float:
        """The delay before the next attempt, after one more failure."""
        now = time.monotonic()
        if not self._current or now - self._last_failure > self.reset_after:
            self._current = self.initial
        else:
            self._current = min(self.cap, self._current * 2)
        self._last_failure = now
        return self._current * (1 + self.jitter * random.random())


def retry_delay(attempt: int) -> float:
    """A request retry's wait after `attempt` failures: about 0.1 s, 0.2 s, 0.4 s … capped near 5 s, with
    jitter so that clients refused together do not come back together."""
    base = min(5.0, 0.1 * 2 ** (attempt - 1))
    return base * (0.5 + random.random() / 2)

"""Work queues for controllers (upstream: k8s.io/client-go/util/workqueue).

A controller's event handlers put object keys on a queue; its workers take them off, reconcile, and say
when they are done. Three layers, each a subclass of the one before, as upstream's interfaces nest:

- `Queue` (upstream `Type`, `New`/`NewNamed`): a de-duplicating FIFO. A key added many times before a worker
  takes it is handed out once; a key is never handed to two workers at once; a key added while a worker
  holds it is handed out again after that worker calls `done`.
- `DelayingQueue` (upstream `delayingType`, `NewDelayingQueue`): adds `add_after`, backed by a heap and a
  single timer on the event loop.
- `RateLimitingQueue` (upstream `rateLimitingType`, `NewRateLimitingQueue`): adds `add_rate_limited`,
  `forget` and `num_requeues`, asking a rate limiter how long each retry waits.

Rate limiters (upstream `RateLimiter` and its implementations): `ItemExponentialFailureRateLimiter`,
`ItemFastSlowRateLimiter`, `BucketRateLimiter` (upstream wraps golang.org/x/time/rate; this is the same
token bucket), `MaxOfRateLimiter` and `default_controller_rate_limiter` (upstream
`DefaultControllerRateLimiter`).

Everything runs on one asyncio event loop: `add`, `done` and `add_after` are plain calls, `get` and
`shut_down_with_drain` are awaited. Items must be hashable (object keys such as "namespace/name" are).

Metrics carry upstream's names and a `name` label (the queue's name): `workqueue_depth`,
`workqueue_adds_total`, `workqueue_queue_duration_seconds`, `workqueue_work_duration_seconds`,
`workqueue_retries_total`, `workqueue_unfinished_work_seconds` and
`workqueue_longest_running_processor_seconds`. A queue built without a name records none, as upstream. The
metric families are created once, at import, in the module's own registry `WORKQUEUE_REGISTRY`, so any
number of queues can be built without duplicate-registration errors; a component serves them by adding
`generate_latest(WORKQUEUE_REGISTRY)` to its /metrics output. Queues sharing a name share their series.
"""

from __future__ import annotations

import asyncio
import heapq
import inspect
import itertools
import logging
import math
import time
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Hashable, Iterator
from typing import Generic, Protocol, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric

from .flowcontrol import TokenBucket

__all__ = [
    "WORKQUEUE_REGISTRY",
    "BucketRateLimiter",
    "DelayingQueue",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "Queue",
    "RateLimiter",
    "RateLimitingQueue",
    "ShutDown",
    "default_controller_rate_limiter",
]

T = TypeVar("T", bound=Hashable)
log = logging.getLogger(__name__)
Clock = Callable[[], float]


class ShutDown(Exception):
    """Raised by `Queue.get` once the queue is shutting down and holds nothing more to hand out: the
    worker should return."""


# ---------------------------------------------------------------------------------------------- metrics

WORKQUEUE_REGISTRY = CollectorRegistry(auto_describe=True)

# Ten decades from 10 ns to 10 s, the spread upstream uses: queue waits are often sub-microsecond.
_DURATION_BUCKETS = tuple(1e-8 * 10**i for i in range(10))

_DEPTH = Gauge("workqueue_depth", "Items waiting in the workqueue.", ["name"], registry=WORKQUEUE_REGISTRY)
_ADDS = Counter("workqueue_adds_total", "Adds the workqueue accepted.", ["name"], registry=WORKQUEUE_REGISTRY)
_QUEUE_DURATION = Histogram(
    "workqueue_queue_duration_seconds",
    "Seconds an item waited in the workqueue before a worker took it.",
    ["name"],
    buckets=_DURATION_BUCKETS,
    registry=WORKQUEUE_REGISTRY,
)
_WORK_DURATION = Histogram(
    "workqueue_work_duration_seconds",
    "Seconds a worker held an item taken from the workqueue.",
    ["name"],
    buckets=_DURATION_BUCKETS,
    registry=WORKQUEUE_REGISTRY,
)
_RETRIES = Counter(
    "workqueue_retries_total",
    "Adds through add_after (retries) the workqueue was asked for.",
    ["name"],
    registry=WORKQUEUE_REGISTRY,
)

# Metrics of every live named queue, for the gauges computed at scrape time. Weak, so that a queue
# nobody holds any more drops out of the exposition instead of being kept alive by it.
_LIVE_METRICS: weakref.WeakSet[_QueueMetrics] = weakref.WeakSet()


class _QueueMetrics:
    """One named queue's bookkeeping: when each item was added and when each held item was taken."""

    def __init__(self, name: str, clock: Clock) -> None:
        self.name = name
        self.clock = clock
        # Resolve the labelled children once: labels() is a dictionary lookup under a lock per call.
        self.depth = _DEPTH.labels(name)
        self.adds = _ADDS.labels(name)
        self.queue_duration = _QUEUE_DURATION.labels(name)
        self.work_duration = _WORK_DURATION.labels(name)
        self.retries = _RETRIES.labels(name)
        self.add_times: dict[Hashable, float] = {}
        self.processing_start_times: dict[Hashable, float] = {}
        _LIVE_METRICS.add(self)

    def add(self, item: Hashable) -> None:
        self.adds.inc()
        self.depth.inc()
        self.add_times.setdefault(item, self.clock())

    def get(self, item: Hashable) -> None:
        now = self.clock()
        self.depth.dec()
        self.processing_start_times[item] = now
        added = self.add_times.pop(item, None)
        if added is not None:
            self.queue_duration.observe(now - added)

    def done(self, item: Hashable) -> None:
        started = self.processing_start_times.pop(item, None)
        if started is not None:
            self.work_duration.observe(self.clock() - started)

    def unfinished(self) -> tuple[float, float]:
        """(sum of the ages of held items, age of the oldest), in seconds."""
        now = self.clock()
        ages = [now - t for t in self.processing_start_times.values()]
        return sum(ages), max(ages, default=0.0)


class _UnfinishedWorkCollector:
    """Computes the two in-progress gauges when scraped.

    Upstream runs a ticker per queue that sets them every 500 ms. Computing them from the start times at
    scrape time gives fresher values and needs no task per queue (nor a running loop when a queue is
    built); a scrape costs one pass over the items currently held, which is at most the worker count."""

    def describe(self) -> Iterator[Metric]:
        yield from self._families()

    def collect(self) -> Iterator[Metric]:
        unfinished, longest = self._families()
        per_name: dict[str, tuple[float, float]] = {}
        for metrics in list(_LIVE_METRICS):
            total, oldest = metrics.unfinished()
            seen_total, seen_oldest = per_name.get(metrics.name, (0.0, 0.0))
            per_name[metrics.name] = (seen_total + total, max(seen_oldest, oldest))
        for name, (total, oldest) in sorted(per_name.items()):
            unfinished.add_metric([name], total)
            longest.add_metric([name], oldest)
        yield unfinished
        yield longest

    @staticmethod
    def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
        return (
            GaugeMetricFamily(
                "workqueue_unfinished_work_seconds",
                "Sum of the seconds every item now held by a worker has been held; a steady climb means stuck workers.",
                labels=["name"],
            ),
            GaugeMetricFamily(
                "workqueue_longest_running_processor_seconds",
                "Seconds the longest-held item now held by a worker has been held.",
                labels=["name"],
            ),
        )


WORKQUEUE_REGISTRY.register(_UnfinishedWorkCollector())  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- queues


class Queue(Generic[T]):
    """De-duplicating FIFO work queue (upstream `Type`).

    Every item is in at most one of two places at a time as far as workers are concerned: waiting in
    the FIFO, or held by a worker (the processing set). The dirty set holds the items that need a run:
    those waiting, plus those re-added while held. `done` moves a dirty held item back to the FIFO.
    """

    def __init__(self, name: str = "", *, clock: Clock = time.monotonic) -> None:
        self.name = name
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._shutting_down = False
        self._drain = False
        self._getters: deque[asyncio.Future[None]] = deque()
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._metrics = _QueueMetrics(name, clock) if name else None

    def add(self, item: T) -> None:
        """Mark `item` as needing processing. Ignored once shutting down."""
        if self._shutting_down or item in self._dirty:
            return
        if self._metrics is not None:
            self._metrics.add(item)
        self._dirty.add(item)
        if item in self._processing:
            # The holder's `done` will queue it: handing it out now would run it twice at once.
            return
        self._queue.append(item)
        self._wake_getter()

    def __len__(self) -> int:
        """Items waiting to be handed out (not those held). For information only: never gate on it."""
        return len(self._queue)

    async def get(self) -> T:
        """The next item, waiting for one if need be. The caller must call `done(item)` afterwards.

        After shut-down, items still waiting are handed out; once none remain this raises `ShutDown`."""
        while not self._queue and not self._shutting_down:
            waiter = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    # We were woken for an item we will not take: pass the wake-up on.
                    self._wake_getter()
                else:
                    try:
                        self._getters.remove(waiter)
                    except ValueError:
                        pass
                raise
        if not self._queue:
            raise ShutDown
        item = self._queue.popleft()
        if self._metrics is not None:
            self._metrics.get(item)
        self._processing.add(item)
        self._dirty.discard(item)
        return item

    def done(self, item: T) -> None:
        """The worker has finished with `item`. If it was added again meanwhile, it is queued again.

        Calling it for an item not held is a no-op (upstream would queue a duplicate)."""
        if item not in self._processing:
            return
        if self._metrics is not None:
            self._metrics.done(item)
        self._processing.remove(item)
        if item in self._dirty:
            self._queue.append(item)
            self._wake_getter()
        if not self._processing:
            self._wake_drainers()

    def shut_down(self) -> None:
        """Ignore further adds; `get` raises `ShutDown` once the waiting items are handed out. Also ends a
        `shut_down_with_drain` in progress without waiting for held items."""
        self._drain = False
        self._shut_down()
        self._wake_drainers()

    async def shut_down_with_drain(self) -> None:
        """Like `shut_down`, then wait until every held item is `done` (or `shut_down` is called). Workers
        must keep calling `done` after shut-down starts, or this waits for ever."""
        self._drain = True
        self._shut_down()
        while self._processing and self._drain:
            waiter = asyncio.get_running_loop().create_future()
            self._drain_waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._drain_waiters:
                    self._drain_waiters.remove(waiter)

    def shutting_down(self) -> bool:
        return self._shutting_down

    def _shut_down(self) -> None:
        self._shutting_down = True
        # Every blocked get must re-check: those finding the FIFO empty raise ShutDown.
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    def _wake_getter(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _wake_drainers(self) -> None:
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)


class DelayingQueue(Queue[T]):
    """A `Queue` that can also add an item later (upstream `delayingType`).

    Waiting items sit in a heap ordered by ready time with one event-loop timer armed for the earliest;
    when it fires, every item that is due is added. Ready times are on the event loop's clock
    (`loop.time()`, monotonic); the `clock` argument only times metrics."""

    def __init__(self, name: str = "", *, clock: Clock = time.monotonic) -> None:
        super().__init__(name, clock=clock)
        self._heap: list[tuple[float, int, T]] = []
        # The live heap entry per item; heap entries that are not live were superseded and are skipped.
        self._waiting: dict[T, tuple[float, int, T]] = {}
        self._sequence = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_when = 0.0

    def add_after(self, item: T, delay_seconds: float) -> None:
        """Add `item` once `delay_seconds` have passed (at once if <= 0). If the item is already waiting,
        the earlier of the two ready times stands. Must be called on the event loop."""
        if self._shutting_down:
            return
        if self._metrics is not None:
            self._metrics.retries.inc()
        if delay_seconds <= 0:
            self.add(item)
            return
        loop = asyncio.get_running_loop()
        ready_at = loop.time() + delay_seconds
        current = self._waiting.get(item)
        if current is not None and current[0] <= ready_at:
            return
        entry = (ready_at, next(self._sequence), item)
        self._waiting[item] = entry
        heapq.heappush(self._heap, entry)
        self._arm(loop)

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        while self._heap and self._waiting.get(self._heap[0][2]) is not self._heap[0]:
            heapq.heappop(self._heap)
        if not self._heap:
            self._cancel_timer()
            return
        when = self._heap[0][0]
        if self._timer is not None and self._timer_when <= when:
            return
        self._cancel_timer()
        self._timer = loop.call_at(when, self._fire, loop)
        self._timer_when = when

    def _fire(self, loop: asyncio.AbstractEventLoop) -> None:
        # The loop may run a timer a hair before its time (it rounds by its clock resolution); count the
        # time it was armed for as reached so that the head is never re-armed for a sliver.
        now = max(loop.time(), self._timer_when)
        self._timer = None
        while self._heap and self._heap[0][0] <= now:
            entry = heapq.heappop(self._heap)
            item = entry[2]
            if self._waiting.get(item) is entry:
                del self._waiting[item]
                self.add(item)
        self._arm(loop)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _shut_down(self) -> None:
        super()._shut_down()
        # Adds are ignored from now on, so the waiting items could never be added.
        self._cancel_timer()
        self._heap.clear()
        self._waiting.clear()


class RateLimiter(Protocol):
    """Decides how long an item waits before it is retried (upstream `RateLimiter`)."""

    def when(self, item: Hashable) -> float:
        """Seconds `item` should wait now; counts as one more failure for per-item limiters."""
        ...

    def forget(self, item: Hashable) -> None:
        """Stop tracking `item` (it succeeded, or was given up on)."""
        ...

    def num_requeues(self, item: Hashable) -> int:
        """How many failures `item` has had since it was last forgotten."""
        ...


class RateLimitingQueue(DelayingQueue[T]):
    """A `DelayingQueue` whose retries wait as long as a rate limiter says (upstream `rateLimitingType`).

    Remember to `forget` an item once it succeeds, or its failures stay counted for ever."""

    def __init__(
        self, rate_limiter: RateLimiter | None = None, name: str = "", *, clock: Clock = time.monotonic
    ) -> None:
        super().__init__(name, clock=clock)
        self.rate_limiter = rate_limiter if rate_limiter is not None else default_controller_rate_limiter()

    def add_rate_limited(self, item: T) -> None:
        """Add `item` after the delay the rate limiter gives it."""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Reset the rate limiter's failure count for `item`. `done` must still be called."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)


async def process_items(
    queue: Queue[T],
    handle: Callable[[T], Awaitable[None] | None],
    what: str,
    *,
    retry: bool = False,
    expected: tuple[type[Exception], ...] = (),
) -> None:
    """A worker (upstream: a controller's `for processNextWorkItem()` loop): hand each item of `queue` to `handle`
    until the queue shuts down. With `retry` (a RateLimitingQueue), an item that failed is queued again after its
    back-off and one that succeeded is forgotten. An `expected` error (the API answering no, a lost connection) is
    logged in a line; any other with its traceback."""
    if retry and not isinstance(queue, RateLimitingQueue):
        raise TypeError("retry needs a RateLimitingQueue")
    while True:
        try:
            item = await queue.get()
        except ShutDown:
            return
        try:
            result = handle(item)
            if inspect.isawaitable(result):
                await result
            if isinstance(queue, RateLimitingQueue) and retry:
                queue.forget(item)
        except Exception as err:
            if isinstance(err, expected):
                log.warning("%s %s: %s", what, item, err)
            else:
                log.exception("%s %s failed", what, item)
            if isinstance(queue, RateLimitingQueue) and retry:
                queue.add_rate_limited(item)
        finally:
            queue.done(item)


# ---------------------------------------------------------------------------------------------- rate limiters


class ItemExponentialFailureRateLimiter:
    """Per item: `base_delay * 2**failures`, capped at `max_delay`."""

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        exponent = self._failures.get(item, 0)
        self._failures[item] = exponent + 1
        # 2.0**n overflows a float from n = 1024; long before that any sane cap has been reached.
        if exponent >= 1024:
            return self.max_delay
        return min(self.base_delay * 2.0**exponent, self.max_delay)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class ItemFastSlowRateLimiter:
    """Per item: `fast_delay` for the first `max_fast_attempts` failures, `slow_delay` after."""

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        self.fast_delay = fast_delay
        self.slow_delay = slow_delay
        self.max_fast_attempts = max_fast_attempts
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        failures = self._failures[item] = self._failures.get(item, 0) + 1
        return self.fast_delay if failures <= self.max_fast_attempts else self.slow_delay

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter:
    """Overall (not per item): a token bucket refilled at `qps` tokens a second holding at most `burst`.

    `when` always takes a token, going into debt when the bucket is empty, and returns how long until
    that debt is paid: so successive calls on an empty bucket are spaced 1/qps apart."""

    def __init__(self, qps: float = 10.0, burst: int = 100, *, clock: Clock = time.monotonic) -> None:
        if qps <= 0:
            raise ValueError(f"qps must be positive, got {qps}")
        if burst < 1:
            raise ValueError(f"burst must be at least 1, got {burst}")
        self.qps = qps
        self.burst = burst
        self._bucket = TokenBucket(qps, burst, clock)

    def when(self, item: Hashable) -> float:
        if math.isinf(self.qps):
            return 0.0
        return self._bucket.reserve()

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """The longest delay any of `limiters` asks for. Every limiter is asked each time, so each keeps
    counting; with a bucket among them, an item another limiter held back longer still spent a token."""

    def __init__(self, *limiters: RateLimiter) -> None:
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        return max([0.0, *(limiter.when(item) for limiter in self.limiters)])

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max((limiter.num_requeues(item) for limiter in self.limiters), default=0)


def default_controller_rate_limiter(*, clock: Clock = time.monotonic) -> MaxOfRateLimiter:
    """What controllers use unless told otherwise (upstream `DefaultControllerRateLimiter`): per item,
    exponential from 5 ms to 1000 s; overall, 10 retries a second with bursts of 100."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(qps=10.0, burst=100, clock=clock),
    )

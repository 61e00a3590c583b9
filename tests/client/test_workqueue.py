"""pyk8s.client.workqueue: the de-duplicating queue against a model, a controller-shaped run with many
workers, delayed adds, the rate limiters on a fake clock, shut-down, and the metrics."""

from __future__ import annotations

import asyncio
import itertools
import random
import re
import uuid
from collections import Counter

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from prometheus_client import generate_latest

from pyk8s.client.workqueue import (
    WORKQUEUE_REGISTRY,
    BucketRateLimiter,
    DelayingQueue,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    Queue,
    RateLimitingQueue,
    ShutDown,
    default_controller_rate_limiter,
    process_items,
)


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def get_now(queue: Queue) -> object:
    """Run `queue.get()` to completion without an event loop. It must not suspend when an item is
    waiting; if it tried to, it would need a running loop and this fails."""
    coro = queue.get()
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise AssertionError("get() suspended although an item was waiting")


# ---------------------------------------------------------------------------------------------- model


class QueueMachine(RuleBasedStateMachine):
    """The queue against a plain model: a FIFO list, a dirty set and the set of items held by workers."""

    def __init__(self) -> None:
        super().__init__()
        self.queue: Queue[int] = Queue()
        self.fifo: list[int] = []
        self.dirty: set[int] = set()
        self.held: set[int] = set()

    @rule(item=st.integers(0, 5))
    def add(self, item: int) -> None:
        self.queue.add(item)
        if item not in self.dirty:
            self.dirty.add(item)
            if item not in self.held:
                self.fifo.append(item)

    @precondition(lambda self: self.fifo)
    @rule()
    def get(self) -> None:
        item = get_now(self.queue)
        assert item not in self.held, f"{item} handed out while already held"
        assert item == self.fifo.pop(0), "not first-in first-out"
        self.held.add(item)
        self.dirty.discard(item)

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        item = data.draw(st.sampled_from(sorted(self.held)))
        readded = item in self.dirty
        before = len(self.queue)
        self.queue.done(item)
        self.held.remove(item)
        if readded:
            self.fifo.append(item)
        # Re-added while held: back exactly once; otherwise not at all.
        assert len(self.queue) == before + (1 if readded else 0)

    @rule(item=st.integers(0, 5))
    def done_for_an_item_not_held(self, item: int) -> None:
        if item in self.held:
            return
        before = len(self.queue)
        self.queue.done(item)
        assert len(self.queue) == before

    @invariant()
    def length_matches(self) -> None:
        assert len(self.queue) == len(self.fifo)

    def teardown(self) -> None:
        # Whatever is left comes out once each, in model order, and then nothing more.
        rest = [get_now(self.queue) for _ in range(len(self.fifo))]
        assert rest == self.fifo
        assert len(self.queue) == 0
        assert not self.held & set(rest), "an item held was handed out again before done"


QueueMachine.TestCase.settings = settings(max_examples=100, stateful_step_count=40, deadline=None)
TestQueueModel = QueueMachine.TestCase


# ---------------------------------------------------------------------------------------------- controller


async def test_controller_workers_never_share_a_key_lose_no_add_and_retry_failures():
    rng = random.Random(20240601)
    name = f"controller-{uuid.uuid4().hex}"
    limiter = MaxOfRateLimiter(ItemExponentialFailureRateLimiter(0.001, 0.01), BucketRateLimiter(qps=1000, burst=50))
    queue: RateLimitingQueue[str] = RateLimitingQueue(limiter, name)
    keys = [f"default/pod-{i}" for i in range(6)]
    flaky = "default/flaky"

    seq = itertools.count()
    last_add: dict[str, int] = {}
    last_start: dict[str, int] = {}
    in_flight: set[str] = set()
    violations: list[str] = []
    processed: Counter[str] = Counter()
    flaky_requeues: list[int] = []
    flaky_succeeded = False
    rate_limited_adds = 0
    max_parallel = 0

    def add(key: str) -> None:
        last_add[key] = next(seq)
        queue.add(key)

    def retry(key: str) -> None:
        nonlocal rate_limited_adds
        # A retry is an add like any other: the key must be processed again after it.
        last_add[key] = next(seq)
        rate_limited_adds += 1
        queue.add_rate_limited(key)

    async def worker() -> None:
        nonlocal flaky_succeeded, max_parallel
        while True:
            try:
                key = await queue.get()
            except ShutDown:
                return
            if key in in_flight:
                violations.append(f"{key} handed to two workers at once")
            in_flight.add(key)
            max_parallel = max(max_parallel, len(in_flight))
            last_start[key] = next(seq)
            processed[key] += 1
            await asyncio.sleep(rng.choice([0, 0, 0.0005, 0.001]))
            if key == flaky and processed[key] <= 3:
                retry(key)
                flaky_requeues.append(queue.num_requeues(key))
            elif key != flaky and rng.random() < 0.1:
                retry(key)
            else:
                queue.forget(key)
                if queue.num_requeues(key) != 0:
                    violations.append(f"forget left {key} with {queue.num_requeues(key)} requeues")
                if key == flaky:
                    flaky_succeeded = True
            in_flight.discard(key)
            queue.done(key)

    async def producer() -> None:
        for _ in range(150):
            add(rng.choice(keys))
            await asyncio.sleep(rng.choice([0, 0, 0, 0.0002]))

    workers = [asyncio.create_task(worker()) for _ in range(8)]
    add(flaky)
    await asyncio.gather(*(producer() for _ in range(4)))

    def unserved() -> list[str]:
        return [key for key, added in last_add.items() if last_start.get(key, -1) < added]

    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5
    while unserved() or not flaky_succeeded or in_flight:
        assert loop.time() < deadline, f"adds never processed: {unserved()}, flaky done: {flaky_succeeded}"
        await asyncio.sleep(0.002)

    await asyncio.wait_for(queue.shut_down_with_drain(), 2)
    await asyncio.wait_for(asyncio.gather(*workers), 2)

    assert violations == []
    assert max_parallel >= 2, "the workers never overlapped: the test proved nothing"
    assert set(processed) == {*keys, flaky}
    assert flaky_requeues == [1, 2, 3]
    assert processed[flaky] == 4
    assert queue.num_requeues(flaky) == 0
    assert WORKQUEUE_REGISTRY.get_sample_value("workqueue_retries_total", {"name": name}) == rate_limited_adds


# ---------------------------------------------------------------------------------------------- delaying


async def test_delayed_items_come_out_in_ready_order():
    queue: DelayingQueue[str] = DelayingQueue()
    loop = asyncio.get_running_loop()
    start = loop.time()
    queue.add_after("c", 0.03)
    queue.add_after("a", 0.01)
    queue.add_after("b", 0.02)
    queue.add_after("now", 0)
    queue.add_after("negative", -1)
    assert len(queue) == 2, "a delay <= 0 adds at once"
    got = [await asyncio.wait_for(queue.get(), 2) for _ in range(5)]
    assert got == ["now", "negative", "a", "b", "c"]
    assert loop.time() - start >= 0.029, "an item came out before its delay"


@pytest.mark.parametrize("first,second", [(0.05, 0.01), (0.01, 0.05)])
async def test_the_earlier_ready_time_wins(first: float, second: float):
    queue: DelayingQueue[str] = DelayingQueue()
    queue.add_after("x", first)
    queue.add_after("x", second)
    queue.add_after("y", 0.03)
    # x is due at 10 ms whichever order the two delays came in, so before y at 30 ms.
    assert await asyncio.wait_for(queue.get(), 2) == "x"
    queue.done("x")
    assert await asyncio.wait_for(queue.get(), 2) == "y"
    queue.done("y")
    await asyncio.sleep(0.04)  # past the 50 ms deadline that lost
    assert len(queue) == 0, "the later deadline added x a second time"


async def test_a_delayed_add_of_a_waiting_item_is_deduplicated():
    queue: DelayingQueue[str] = DelayingQueue()
    queue.add("k")
    queue.add_after("k", 0.005)
    await asyncio.sleep(0.02)
    assert len(queue) == 1


async def test_a_delayed_add_of_a_held_item_runs_after_done():
    # The controller pattern: a worker fails, calls add_rate_limited, then done.
    queue: DelayingQueue[str] = DelayingQueue()
    queue.add("k")
    assert await queue.get() == "k"
    queue.add_after("k", 0.005)
    await asyncio.sleep(0.02)
    assert len(queue) == 0, "handed out while held"
    queue.done("k")
    assert len(queue) == 1
    assert await queue.get() == "k"


async def test_shut_down_cancels_waiting_items():
    queue: DelayingQueue[str] = DelayingQueue()
    queue.add_after("w", 0.01)
    queue.shut_down()
    await asyncio.sleep(0.03)
    assert len(queue) == 0
    with pytest.raises(ShutDown):
        await queue.get()


# ---------------------------------------------------------------------------------------------- rate limiters


def test_exponential_failure_rate_limiter():
    limiter = ItemExponentialFailureRateLimiter(0.005, 0.1)
    assert [limiter.when("a") for _ in range(7)] == pytest.approx([0.005, 0.01, 0.02, 0.04, 0.08, 0.1, 0.1])
    assert limiter.num_requeues("a") == 7
    assert limiter.when("b") == pytest.approx(0.005), "items back off independently"
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == pytest.approx(0.005)


def test_exponential_failure_rate_limiter_defaults_and_overflow():
    limiter = ItemExponentialFailureRateLimiter()
    delays = [limiter.when("a") for _ in range(2000)]
    assert delays[:3] == pytest.approx([0.005, 0.01, 0.02])
    assert delays[-1] == 1000.0
    assert max(delays) == 1000.0


def test_fast_slow_rate_limiter():
    limiter = ItemFastSlowRateLimiter(0.01, 1.0, 2)
    assert [limiter.when("a") for _ in range(4)] == [0.01, 0.01, 1.0, 1.0]
    assert limiter.num_requeues("a") == 4
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 0.01


def test_bucket_rate_limiter_bursts_then_spaces_by_one_over_qps():
    clock = FakeClock(100.0)
    limiter = BucketRateLimiter(qps=10, burst=3, clock=clock)
    assert [limiter.when(i) for i in range(6)] == pytest.approx([0, 0, 0, 0.1, 0.2, 0.3])
    clock.advance(0.2)  # pays two of the three tokens owed
    assert limiter.when("x") == pytest.approx(0.2)
    clock.advance(60)  # refills, but never beyond the burst
    assert [limiter.when(i) for i in range(4)] == pytest.approx([0, 0, 0, 0.1])
    limiter.forget("x")
    assert limiter.num_requeues("x") == 0


def test_max_of_rate_limiter():
    clock = FakeClock()
    exponential = ItemExponentialFailureRateLimiter(0.001, 10)
    fast_slow = ItemFastSlowRateLimiter(0.0, 5.0, 3)
    limiter = MaxOfRateLimiter(exponential, BucketRateLimiter(qps=1, burst=1, clock=clock), fast_slow)
    assert limiter.when("a") == pytest.approx(0.001)  # the bucket had a token
    assert limiter.when("a") == pytest.approx(1.0)  # now the bucket is the slowest
    fast_slow.when("a")
    fast_slow.when("a")
    assert limiter.num_requeues("a") == 4  # the largest count among the limiters
    limiter.forget("a")
    assert exponential.num_requeues("a") == 0
    assert fast_slow.num_requeues("a") == 0
    assert limiter.num_requeues("a") == 0


def test_default_controller_rate_limiter():
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock=clock)
    assert [limiter.when(i) for i in range(100)] == pytest.approx([0.005] * 100)
    assert limiter.when(100) == pytest.approx(0.1), "the 101st retry in a burst waits for the bucket"
    assert limiter.when(0) == pytest.approx(0.2)
    clock.advance(1000)
    assert limiter.when(0) == pytest.approx(0.02)  # its third failure, with a full bucket again
    assert limiter.num_requeues(0) == 3
    limiter.forget(0)
    assert limiter.num_requeues(0) == 0


# ---------------------------------------------------------------------------------------------- shut-down


async def test_get_raises_shut_down_on_an_empty_shut_down_queue():
    queue: Queue[str] = Queue()
    assert not queue.shutting_down()
    queue.shut_down()
    assert queue.shutting_down()
    with pytest.raises(ShutDown):
        await queue.get()


async def test_shut_down_wakes_every_blocked_get():
    queue: Queue[str] = Queue()
    getters = [asyncio.create_task(queue.get()) for _ in range(3)]
    await asyncio.sleep(0)
    assert not any(task.done() for task in getters)
    queue.shut_down()
    results = await asyncio.wait_for(asyncio.gather(*getters, return_exceptions=True), 1)
    assert all(isinstance(result, ShutDown) for result in results)


async def test_items_waiting_at_shut_down_are_still_handed_out():
    queue: Queue[int] = Queue()
    queue.add(1)
    queue.add(2)
    queue.shut_down()
    assert await queue.get() == 1
    assert await queue.get() == 2
    with pytest.raises(ShutDown):
        await queue.get()


async def test_adds_after_shut_down_are_ignored():
    name = f"shut-down-{uuid.uuid4().hex}"
    queue: RateLimitingQueue[str] = RateLimitingQueue(ItemExponentialFailureRateLimiter(0.001, 0.01), name)
    queue.add("held")
    assert await queue.get() == "held"
    queue.shut_down()
    queue.add("x")
    queue.add_after("y", 0)
    queue.add_after("z", 0.001)
    queue.add_rate_limited("w")
    queue.add("held")
    assert len(queue) == 0
    queue.done("held")
    assert len(queue) == 0, "the re-add of a held item after shut-down was kept"
    await asyncio.sleep(0.01)
    assert len(queue) == 0
    with pytest.raises(ShutDown):
        await queue.get()
    assert WORKQUEUE_REGISTRY.get_sample_value("workqueue_adds_total", {"name": name}) == 1
    assert WORKQUEUE_REGISTRY.get_sample_value("workqueue_retries_total", {"name": name}) == 0


async def test_shut_down_with_drain_waits_for_held_items():
    queue: Queue[str] = Queue()
    queue.add("a")
    queue.add("b")
    a = await queue.get()
    b = await queue.get()
    drain = asyncio.create_task(queue.shut_down_with_drain())
    await asyncio.sleep(0.01)
    assert queue.shutting_down()
    assert not drain.done()
    queue.done(a)
    await asyncio.sleep(0.01)
    assert not drain.done(), "returned with an item still held"
    queue.done(b)
    await asyncio.wait_for(drain, 1)


async def test_shut_down_with_drain_returns_at_once_when_nothing_is_held():
    queue: Queue[str] = Queue()
    await asyncio.wait_for(queue.shut_down_with_drain(), 1)
    assert queue.shutting_down()


async def test_shut_down_ends_a_drain_without_waiting():
    queue: Queue[str] = Queue()
    queue.add("a")
    await queue.get()
    drain = asyncio.create_task(queue.shut_down_with_drain())
    await asyncio.sleep(0.01)
    assert not drain.done()
    queue.shut_down()
    await asyncio.wait_for(drain, 1)


async def test_drain_lets_working_workers_finish_everything_queued():
    queue: Queue[int] = Queue()
    for i in range(5):
        queue.add(i)
    processed: list[int] = []

    async def worker() -> None:
        while True:
            try:
                item = await queue.get()
            except ShutDown:
                return
            await asyncio.sleep(0.001)
            processed.append(item)
            queue.done(item)

    workers = [asyncio.create_task(worker()) for _ in range(2)]
    await asyncio.sleep(0)
    await asyncio.wait_for(queue.shut_down_with_drain(), 1)
    assert sorted(processed) == [0, 1, 2, 3, 4]
    await asyncio.wait_for(asyncio.gather(*workers), 1)


async def test_a_cancelled_get_does_not_swallow_an_item():
    queue: Queue[str] = Queue()
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.add("x")  # wakes the first getter...
    first.cancel()  # ...which goes away before taking it
    assert await asyncio.wait_for(second, 1) == "x"
    assert first.cancelled()

    third = asyncio.create_task(queue.get())
    fourth = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    third.cancel()
    await asyncio.sleep(0)
    queue.add("y")
    assert await asyncio.wait_for(fourth, 1) == "y"


# ---------------------------------------------------------------------------------------------- metrics


async def test_metrics_of_a_named_queue():
    name = f"metrics-{uuid.uuid4().hex}"
    clock = FakeClock()
    queue: RateLimitingQueue[str] = RateLimitingQueue(ItemExponentialFailureRateLimiter(0.001, 0.01), name, clock=clock)

    def value(metric: str, **labels: str) -> float | None:
        return WORKQUEUE_REGISTRY.get_sample_value(metric, {"name": name, **labels})

    queue.add("a")
    queue.add("b")
    queue.add("a")
    assert value("workqueue_adds_total") == 2
    assert value("workqueue_depth") == 2

    clock.advance(1.5)
    assert await queue.get() == "a"
    assert value("workqueue_depth") == 1
    assert value("workqueue_queue_duration_seconds_count") == 1
    assert value("workqueue_queue_duration_seconds_sum") == pytest.approx(1.5)
    assert value("workqueue_queue_duration_seconds_bucket", le="1.0") == 0
    assert value("workqueue_queue_duration_seconds_bucket", le="10.0") == 1

    clock.advance(2)
    assert value("workqueue_unfinished_work_seconds") == pytest.approx(2.0)
    assert value("workqueue_longest_running_processor_seconds") == pytest.approx(2.0)
    assert await queue.get() == "b"  # waited 3.5 s
    assert value("workqueue_queue_duration_seconds_sum") == pytest.approx(5.0)
    clock.advance(1)
    assert value("workqueue_unfinished_work_seconds") == pytest.approx(3.0 + 1.0)
    assert value("workqueue_longest_running_processor_seconds") == pytest.approx(3.0)

    queue.add("a")  # while held: an add, and waiting, though not handed out until done
    assert value("workqueue_adds_total") == 3
    assert value("workqueue_depth") == 1
    assert len(queue) == 0
    queue.done("a")
    assert value("workqueue_work_duration_seconds_count") == 1
    assert value("workqueue_work_duration_seconds_sum") == pytest.approx(3.0)
    queue.done("b")
    assert value("workqueue_work_duration_seconds_count") == 2
    assert value("workqueue_work_duration_seconds_sum") == pytest.approx(4.0)
    assert value("workqueue_unfinished_work_seconds") == 0
    assert value("workqueue_longest_running_processor_seconds") == 0

    queue.add_rate_limited("c")
    queue.add_rate_limited("c")
    assert value("workqueue_retries_total") == 2
    queue.shut_down()


def test_an_unnamed_queue_records_no_metrics():
    queue: Queue[str] = Queue()
    queue.add("z")
    get_now(queue)
    assert WORKQUEUE_REGISTRY.get_sample_value("workqueue_adds_total", {"name": ""}) is None
    assert WORKQUEUE_REGISTRY.get_sample_value("workqueue_unfinished_work_seconds", {"name": ""}) is None


def test_many_queues_share_one_registry():
    name = f"shared-{uuid.uuid4().hex}"
    queues = [RateLimitingQueue(default_controller_rate_limiter(), name) for _ in range(3)]
    for queue in queues:
        queue.add("k")
    get_now(queues[0])
    assert WORKQUEUE_REGISTRY.get_sample_value("workqueue_adds_total", {"name": name}) == 3
    assert WORKQUEUE_REGISTRY.get_sample_value("workqueue_depth", {"name": name}) == 2
    text = generate_latest(WORKQUEUE_REGISTRY).decode()
    for family in (
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_queue_duration_seconds_bucket",
        "workqueue_work_duration_seconds_bucket",
        "workqueue_retries_total",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
    ):
        assert re.search(rf'^{family}{{[^}}]*name="{name}"', text, re.MULTILINE), family


async def test_process_items_retries_failures_with_back_off_and_forgets_successes(caplog):
    limiter = ItemExponentialFailureRateLimiter(0.001, 1.0)
    queue: RateLimitingQueue[str] = RateLimitingQueue(limiter)
    attempts: Counter[str] = Counter()

    async def handle(item: str) -> None:
        attempts[item] += 1
        if item == "flaky" and attempts[item] < 3:
            raise ConnectionError("refused")
        if item == "broken" and attempts[item] < 2:
            raise ValueError("bug")

    for item in ("ok", "flaky", "broken"):
        queue.add(item)
    worker = asyncio.create_task(process_items(queue, handle, "syncing", retry=True, expected=(ConnectionError,)))
    for _ in range(200):
        if attempts == Counter(ok=1, flaky=3, broken=2):
            break
        await asyncio.sleep(0.01)
    assert attempts == Counter(ok=1, flaky=3, broken=2)
    await asyncio.sleep(0.01)
    # Each succeeded in the end, so none keeps a failure count; an expected error is one line, a bug a traceback.
    assert [queue.num_requeues(i) for i in ("ok", "flaky", "broken")] == [0, 0, 0]
    assert "syncing flaky: refused" in caplog.text
    assert any(r.exc_info and "syncing broken failed" in r.getMessage() for r in caplog.records)
    queue.shut_down()
    await asyncio.wait_for(worker, 1.0)


async def test_process_items_without_retry_drops_a_failed_item():
    queue: Queue[str] = Queue()
    seen: list[str] = []

    def handle(item: str) -> None:  # a plain function works too
        seen.append(item)
        raise ValueError("no")

    queue.add("a")
    worker = asyncio.create_task(process_items(queue, handle, "x"))
    await asyncio.sleep(0.05)
    queue.shut_down()
    await asyncio.wait_for(worker, 1.0)
    assert seen == ["a"] and len(queue) == 0
    with pytest.raises(TypeError):
        await process_items(queue, handle, "x", retry=True)

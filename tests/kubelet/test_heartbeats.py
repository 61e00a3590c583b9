"""The simulated nodes' shared clock: jobs run when due (sync ones on the loop, async ones on the workers, never
more at once than there are workers), each rescheduled by what it returns, and a failing job comes back later."""

from __future__ import annotations

import asyncio
import gc
from collections import Counter

import pytest

from pyk8s.kubelet import heartbeats
from pyk8s.kubelet.heartbeats import TICK, Heartbeats


async def run_for(clock: Heartbeats, seconds: float) -> None:
    task = asyncio.create_task(clock.run())
    await asyncio.sleep(seconds)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_jobs_run_when_due_and_at_the_interval_they_return():
    clock = Heartbeats(workers=4)
    loop = asyncio.get_running_loop()
    start = loop.time()
    runs: dict[str, list[float]] = {"sync": [], "async": [], "late": []}

    def sync_job() -> float:
        runs["sync"].append(loop.time() - start)
        return 0.2

    async def async_job() -> float:
        runs["async"].append(loop.time() - start)
        await asyncio.sleep(0.05)
        return 0.3  # counted from the end of the run

    def late_job() -> float:
        runs["late"].append(loop.time() - start)
        return 10.0

    clock.schedule(start, sync_job)
    clock.schedule(start, async_job)
    clock.schedule(start + 0.5, late_job)
    await run_for(clock, 1.05)
    slack = TICK + 0.15  # the tick, and a loaded machine
    assert runs["sync"][0] < slack and len(runs["sync"]) in range(4, 7)
    assert all(0.2 <= b - a < 0.2 + slack for a, b in zip(runs["sync"], runs["sync"][1:], strict=False))
    assert all(0.35 <= b - a < 0.35 + slack for a, b in zip(runs["async"], runs["async"][1:], strict=False))
    assert len(runs["late"]) == 1 and 0.5 <= runs["late"][0] < 0.5 + slack


async def test_requests_in_flight_never_exceed_the_workers():
    clock = Heartbeats(workers=3)
    now = asyncio.get_running_loop().time()
    in_flight = peak = 0
    done: Counter[int] = Counter()

    def job_for(i: int):
        async def work() -> float:
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.05)
            in_flight -= 1
            done[i] += 1
            return 60.0

        return work

    for i in range(12):  # all due at once
        clock.schedule(now, job_for(i))
    await run_for(clock, 0.6)
    assert peak == 3
    assert sorted(done) == list(range(12)) and set(done.values()) == {1}
    assert clock.max_lag >= 0.1  # the last ones waited for a free worker


async def test_a_failing_job_is_run_again_later(monkeypatch):
    monkeypatch.setattr(heartbeats, "FAILED_JOB_DELAY", 0.2)
    clock = Heartbeats(workers=1)
    calls = {"sync": 0, "async": 0}

    def bad_sync() -> float:
        calls["sync"] += 1
        raise RuntimeError("boom")

    async def bad_async() -> float:
        calls["async"] += 1
        raise RuntimeError("boom")

    now = asyncio.get_running_loop().time()
    clock.schedule(now, bad_sync)
    clock.schedule(now, bad_async)
    await run_for(clock, 0.5)
    assert calls["sync"] >= 2 and calls["async"] >= 2


async def test_cancelled_clock_leaves_no_unawaited_work(recwarn):
    clock = Heartbeats(workers=1)

    async def slow() -> float:
        await asyncio.sleep(10)
        return 1.0

    now = asyncio.get_running_loop().time()
    for _ in range(5):  # one runs, four wait in the queue when the clock stops
        clock.schedule(now, slow)
    await run_for(clock, 0.2)
    gc.collect()
    assert not [w for w in recwarn if "never awaited" in str(w.message)]


def test_workers_grow_with_the_nodes():
    # One renewal per node every 10 s: a worker per 10 nodes keeps pace while requests take up to a second.
    assert heartbeats.workers_for(3) == heartbeats.WORKERS
    assert heartbeats.workers_for(5000) == 500

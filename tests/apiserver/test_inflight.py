"""The in-flight limit queues past its seats, as API Priority and Fairness does: first come first served, a
seat freed goes to the longest waiting request, and only a full queue or a wait past its limit is refused (429).
Through a real server: writes past --max-mutating-requests-inflight wait their turn instead of being refused."""

from __future__ import annotations

import asyncio
import ssl

import aiohttp
from hypothesis import given, settings
from hypothesis import strategies as st

from pyk8s.apiserver.inflight import InflightLimit
from pyk8s.testing.cluster import APIServerProcess


async def test_past_the_seats_requests_wait_in_arrival_order():
    limit = InflightLimit(2, queue_limit=10, wait_limit=5)
    assert await limit.acquire() and await limit.acquire()
    order: list[int] = []

    async def waiter(i: int) -> None:
        assert await limit.acquire()
        order.append(i)

    tasks = [asyncio.create_task(waiter(i)) for i in range(4)]
    await asyncio.sleep(0.01)
    assert limit.waiting == 4 and limit.in_use == 2 and not order
    for _ in range(4):
        limit.release()
        await asyncio.sleep(0)
    await asyncio.gather(*tasks)
    assert order == [0, 1, 2, 3]
    assert limit.in_use == 2 and limit.waiting == 0
    limit.release()
    limit.release()
    assert limit.in_use == 0


async def test_a_newcomer_does_not_overtake_those_waiting():
    limit = InflightLimit(1, queue_limit=10, wait_limit=5)
    assert await limit.acquire()
    first = asyncio.create_task(limit.acquire())
    await asyncio.sleep(0)
    limit.release()  # the seat goes to `first`, not to whoever asks next
    late = asyncio.create_task(limit.acquire())
    await asyncio.sleep(0)
    assert first.done() and first.result() is True
    assert not late.done()
    limit.release()
    assert await late is True


async def test_a_full_queue_and_a_long_wait_are_refused():
    limit = InflightLimit(1, queue_limit=1, wait_limit=0.05)
    assert await limit.acquire()
    waiting = asyncio.create_task(limit.acquire())
    await asyncio.sleep(0)
    assert await limit.acquire() is False  # the one place in the queue is taken
    assert await waiting is False  # waited past its limit
    assert limit.waiting == 0 and limit.in_use == 1


async def test_a_waiter_that_goes_away_gives_up_its_place_and_any_seat_it_was_handed():
    limit = InflightLimit(1, queue_limit=10, wait_limit=5)
    assert await limit.acquire()
    gone = asyncio.create_task(limit.acquire())
    then = asyncio.create_task(limit.acquire())
    await asyncio.sleep(0)
    gone.cancel()
    await asyncio.sleep(0)
    assert limit.waiting == 1
    limit.release()
    assert await then is True
    # Handed a seat and cancelled before it resumed: the seat passes on rather than leaking.
    handed = asyncio.create_task(limit.acquire())
    await asyncio.sleep(0)
    limit.release()
    handed.cancel()
    await asyncio.gather(handed, return_exceptions=True)
    assert limit.in_use == 0


async def test_no_limit_never_waits():
    limit = InflightLimit(0)
    assert all([await limit.acquire() for _ in range(1000)])
    assert limit.waiting == 0


@settings(max_examples=60, deadline=None)
@given(seats=st.integers(1, 4), steps=st.lists(st.sampled_from(["ask", "done", "leave"]), max_size=40))
def test_seats_in_use_never_pass_the_limit_and_none_leak(seats, steps):
    async def play() -> None:
        limit = InflightLimit(seats, queue_limit=100, wait_limit=60)
        holding: list[asyncio.Task[bool]] = []
        for step in steps:
            if step == "ask":
                holding.append(asyncio.create_task(limit.acquire()))
            elif holding:
                task = holding.pop(0)
                if step == "leave" and not task.done():
                    task.cancel()
                await asyncio.sleep(0)
                if task.done() and not task.cancelled() and task.result():
                    limit.release()
            await asyncio.sleep(0)
            assert limit.in_use <= seats
            granted = sum(1 for t in holding if t.done() and not t.cancelled() and t.result())
            assert granted == limit.in_use
        for task in holding:
            task.cancel()
        await asyncio.gather(*holding, return_exceptions=True)
        for task in holding:
            if not task.cancelled() and task.result():
                limit.release()
        assert limit.in_use == 0 and limit.waiting == 0

    asyncio.run(play())


def test_writes_past_the_limit_wait_instead_of_being_refused():
    server = APIServerProcess(extra_args=("--max-mutating-requests-inflight", "1")).start()
    try:
        server.create_namespace("queued")

        async def burst() -> list[int]:
            ctx = ssl.create_default_context(cafile=str(server.ca_file))
            headers = {"Authorization": f"Bearer {server.token}"}
            async with aiohttp.ClientSession(headers=headers) as http:

                async def create(i: int) -> int:
                    body = {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": f"c{i}"},
                        "data": {"i": str(i)},
                    }
                    async with http.post(f"{server.url}/api/v1/namespaces/queued/configmaps", json=body,
                                         ssl=ctx) as resp:  # fmt: skip
                        return resp.status

                return await asyncio.gather(*(create(i) for i in range(60)))

        # A plain HTTP client that never retries: every one of 60 concurrent writes through one seat is served.
        assert asyncio.run(burst()) == [201] * 60
    finally:
        server.cleanup()

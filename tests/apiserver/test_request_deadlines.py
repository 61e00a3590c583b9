"""The timeout filter's sweeper: a request past its deadline is cancelled (and told apart from a client
disconnect); one within it is left alone."""

from __future__ import annotations

import asyncio

from pyk8s.apiserver.filters import RequestDeadlines


async def test_overdue_request_is_cancelled_and_marked():
    deadlines = RequestDeadlines(resolution=0.02)
    outcome = {}

    async def slow(seconds: float, name: str) -> None:
        task = asyncio.current_task()
        deadlines.track(task, seconds)
        try:
            await asyncio.sleep(0.3)
            outcome[name] = "finished"
        except asyncio.CancelledError:
            outcome[name] = "timed out" if deadlines.untrack(task) else "cancelled"
            return
        deadlines.untrack(task)

    quick = asyncio.create_task(slow(5.0, "within"))
    late = asyncio.create_task(slow(0.05, "overdue"))
    gone = asyncio.create_task(slow(5.0, "client left"))
    await asyncio.sleep(0.01)
    gone.cancel()
    await asyncio.gather(quick, late, gone, return_exceptions=True)
    assert outcome == {"within": "finished", "overdue": "timed out", "client left": "cancelled"}
    assert not deadlines._deadlines and not deadlines.expired

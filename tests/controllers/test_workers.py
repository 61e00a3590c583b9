"""A controller's workers wound up: queues shut down, workers cancelled and awaited, events stopped."""

from __future__ import annotations

import asyncio

from pyk8s.client.events import EventBroadcaster
from pyk8s.client.workqueue import Queue, ShutDown
from pyk8s.controllers.workers import run_workers


async def test_cancelling_the_controller_winds_everything_up() -> None:
    queue: Queue[str] = Queue(name="q")
    ended: list[str] = []

    async def worker() -> None:
        try:
            await queue.get()
        except ShutDown:
            ended.append("shut down")
        except asyncio.CancelledError:
            ended.append("cancelled")
            raise

    broadcaster = EventBroadcaster(None)  # type: ignore[arg-type]  # nothing is recorded, nothing written
    tasks = [asyncio.create_task(worker()) for _ in range(3)]
    run = asyncio.create_task(run_workers(tasks, [queue], broadcaster))
    await asyncio.sleep(0.05)
    run.cancel()
    done, _ = await asyncio.wait([run], timeout=5)
    assert done and run.cancelled()
    assert len(ended) == 3 and all(t.done() for t in tasks)
    assert queue.shutting_down and broadcaster.start().done()

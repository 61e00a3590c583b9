"""Work to be done at a time, cancellable until then (upstream: pkg/controller/tainteviction/timed_workers.go).

Each piece of work is keyed (a pod's namespace/name) and fires once on the event loop at its time. A key whose
work succeeded stays known, with no timer, so the same eviction is not scheduled twice; cancelling forgets it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)


@dataclass
class TimedWorker:
    key: str
    created_at: float  # wall-clock seconds
    fire_at: float
    handle: asyncio.TimerHandle | None = field(default=None, repr=False)
    task: asyncio.Task[None] | None = field(default=None, repr=False)

    def cancel(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
        if self.task is not None:
            self.task.cancel()


class TimedWorkerQueue:
    def __init__(
        self, work: Callable[[str, float], Awaitable[None]], *, clock: Callable[[], float] = time.time
    ) -> None:
        """`work(key, fire_at)` runs when a key's time comes; it raises to say it failed."""
        self.work = work
        self.clock = clock
        self.workers: dict[str, TimedWorker | None] = {}

    def add_work(self, key: str, created_at: float, fire_at: float) -> None:
        if key in self.workers:
            log.debug("work for %s already exists; not added again", key)
            return
        worker = TimedWorker(key, created_at, fire_at)
        loop = asyncio.get_running_loop()
        worker.handle = loop.call_later(max(0.0, fire_at - self.clock()), self._start, worker)
        self.workers[key] = worker

    def _start(self, worker: TimedWorker) -> None:
        worker.handle = None
        worker.task = asyncio.get_running_loop().create_task(self._run(worker))

    async def _run(self, worker: TimedWorker) -> None:
        try:
            await self.work(worker.key, worker.fire_at)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            log.info("work for %s failed: %s", worker.key, err)
            if self.workers.get(worker.key) is worker:
                del self.workers[worker.key]
            return
        if self.workers.get(worker.key) is worker:
            self.workers[worker.key] = None  # done: remembered, so it is not scheduled again

    def cancel_work(self, key: str) -> bool:
        """Forget `key`; True if work was pending (or running) for it."""
        if key not in self.workers:
            return False
        worker = self.workers.pop(key)
        if worker is None:
            return False
        worker.cancel()
        return True

    def get_worker(self, key: str) -> TimedWorker | None:
        return self.workers.get(key)

    def shut_down(self) -> None:
        for w in self.workers.values():
            if w is not None:
                w.cancel()
        self.workers.clear()

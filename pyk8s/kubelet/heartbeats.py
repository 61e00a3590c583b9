"""The clock of a process's simulated nodes: one timer loop runs every node's periodic work (its Lease renewal,
its status check) at the times each one asks for, and a fixed pool of worker tasks makes the requests.

A kubelet runs each of these loops on its own goroutine. 5,000 nodes with two sleeping tasks each cost a timer,
a future and a task wake-up per run (1,000 a second); and nodes that start together renew together: thousands
of requests in flight at once, each holding its own keep-alive connection (the client's pool has no cap), which
the pool closes once idle and must open again, with a TLS handshake on both sides, at the next burst. Here one
heap holds every job's due time and the loop wakes every `TICK` to take what is due: a job that needs no request
(a status check that finds nothing changed) runs right there; one that does goes to one of `workers` tasks, so
at most that many requests are in flight. While the API server answers quickly only a few are busy, and the
connection pool (most recently used first) keeps only those warm.

A job is a callable returning the seconds until its next run, or an awaitable of them that a worker awaits; the
next run is counted from when it ends (upstream's JitterUntil with sliding periods).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)

Job = Callable[[], "float | Coroutine[Any, Any, float]"]

# Requests in flight at most, whatever the node count: an idle API server answers a lease PUT in a few ms, so 500
# renewals a second keep ~5 workers busy; a busy one takes longer (ours, saturated by 64 clients' lease PUTs on
# a slow 2-core machine: ~70 ms at the median, 400 ms at p99).
WORKERS = 128
# ... and one per this many nodes: each renews once per 10 s, so with a worker per 10 nodes renewals keep their
# pace as long as the API server answers within a second (5,000 nodes: 500 workers).
NODES_PER_WORKER = 10


def workers_for(nodes: int) -> int:
    """How many workers `nodes` nodes' heartbeats need (see NODES_PER_WORKER)."""
    return max(WORKERS, nodes // NODES_PER_WORKER)


# How often the loop wakes: a job runs up to this late (a kubelet's own jitter is up to 400 ms), and the loop
# wakes 20 times a second however many nodes there are, not once per job.
TICK = 0.05
# After a job raised (it should catch what it expects), it runs again after this long.
FAILED_JOB_DELAY = 10.0


class Heartbeats:
    """Due times of jobs, and the tasks that run them. `schedule()` before or while `run()` runs."""

    def __init__(self, workers: int = WORKERS) -> None:
        self.workers = workers
        self._heap: list[tuple[float, int, Job]] = []
        self._seq = itertools.count()  # ties at one due time run in scheduling order, never compare jobs
        self._ready: asyncio.Queue[tuple[float, Job, Coroutine[Any, Any, float]]] = asyncio.Queue()
        self.runs = 0  # jobs run so far
        # The longest a job waited past its due time for a free worker (the caller may reset it to measure
        # a window): how far behind the workers are.
        self.max_lag = 0.0

    def schedule(self, at: float, job: Job) -> None:
        """Run `job` at event-loop time `at` (or within `TICK` after)."""
        heapq.heappush(self._heap, (at, next(self._seq), job))

    async def run(self) -> None:
        """Run jobs as they come due, until cancelled."""
        loop = asyncio.get_running_loop()
        workers = [asyncio.create_task(self._worker(loop)) for _ in range(self.workers)]
        heap, ready = self._heap, self._ready
        try:
            while True:
                now = loop.time()
                while heap and heap[0][0] <= now:
                    at, _, job = heapq.heappop(heap)
                    try:
                        work = job()
                    except Exception:
                        log.exception("heartbeat job %r failed", job)
                        work = FAILED_JOB_DELAY
                    if isinstance(work, (int, float)):
                        self.runs += 1
                        self.schedule(now + work, job)
                    else:
                        ready.put_nowait((at, job, work))
                await asyncio.sleep(TICK)
        finally:
            for w in workers:
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            while not ready.empty():  # handed out, never started: close them (no "never awaited" warnings)
                ready.get_nowait()[2].close()

    async def _worker(self, loop: asyncio.AbstractEventLoop) -> None:
        while True:
            at, job, work = await self._ready.get()
            lag = loop.time() - at
            if lag > self.max_lag:
                self.max_lag = lag
            try:
                delay = await work
            except Exception:
                log.exception("heartbeat job %r failed", job)
                delay = FAILED_JOB_DELAY
            self.runs += 1
            self.schedule(loop.time() + delay, job)

"""How long-running components (the API server, the scheduler, the simulated kubelets) keep Python's cyclic
garbage collector from stalling them.

Their watch caches and informers hold every object of the cluster for the life of the process: millions of
dicts that the collector's full collections walk each time the heap has grown by a quarter — about 300 ms per
collection with 10,000 pods on this project's reference machine, 29 of them in one scheduling benchmark.
Those objects are plain JSON values, freed by reference counting when they are replaced; they do not form
cycles. So after each full collection the survivors are frozen (moved where the collector does not look:
`gc.freeze`), and the next full collection walks only what has survived since.

Left to Python, that next full collection still waits for a quarter's growth of the heap: with 150,000 pods it
walked 2 million new objects, stopping the API server for 3-4 s at a time (bench/density.py, 5,000 nodes). So a
component with an event loop also runs a full collection every `FULL_EVERY` seconds, which walks only the few
seconds' survivors: pauses of tens of milliseconds instead.

Reference counting still frees frozen objects; only a cycle that was alive at a freeze and dies later waits, for
a complete collection that unfreezes everything first. That one walks the whole heap (13.6 s with 150,000 pods)
and in that run found 0-225 objects each time; so it comes after `COMPLETE_EVERY` seconds, and each complete
collection that finds fewer than `COMPLETE_WORTHWHILE` objects doubles the wait, up to `COMPLETE_EVERY_MAX`.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from typing import Any

log = logging.getLogger(__name__)

COMPLETE_EVERY = 3600.0  # seconds before the first collection that looks at frozen objects too
COMPLETE_EVERY_MAX = 24 * 3600.0
COMPLETE_WORTHWHILE = 1000  # objects a complete collection must reclaim to keep its interval
FULL_EVERY = 5.0  # seconds between the event loop's own short full collections
# Allocations between young collections (Python's default is 700): a request allocates thousands of
# short-lived dicts, which reference counting frees anyway, so collecting every 700 mostly finds nothing.
YOUNG_THRESHOLD = 20_000
SLOW_COLLECTION = 1.0  # seconds: a full collection this long stalls every request, so it is logged


class _Policy:
    def __init__(self, complete_every: float, threshold: tuple[int, ...]) -> None:
        self.base_interval = complete_every
        self.complete_every = complete_every
        self.threshold = threshold  # what stop_freezing puts back
        self.last_complete = time.monotonic()
        self.started = 0.0
        self.complete = False  # whether the collection under way looks at frozen objects too
        self.timer: asyncio.TimerHandle | None = None

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self.started = time.monotonic()
            self.complete = self.started - self.last_complete >= self.complete_every
            if self.complete:
                # Back into the oldest generation, so the collection starting now sees everything.
                gc.unfreeze()
                self.last_complete = self.started
        elif phase == "stop":
            gc.freeze()
            took = time.monotonic() - self.started
            collected = int(info.get("collected", 0))
            if self.complete:
                # A complete collection that finds (almost) nothing is not worth its pause as often.
                worthwhile = collected >= COMPLETE_WORTHWHILE
                self.complete_every = self.base_interval if worthwhile else min(2 * self.complete_every,
                                                                                COMPLETE_EVERY_MAX)  # fmt: skip
            if took >= SLOW_COLLECTION:
                log.warning(
                    "%s garbage collection took %.1f s (%d objects frozen, %d collected)",
                    "complete" if self.complete else "full", took, gc.get_freeze_count(), collected,
                )  # fmt: skip

    def start_timer(self, loop: asyncio.AbstractEventLoop, every: float) -> None:
        def tick() -> None:
            gc.collect(2)
            self.timer = loop.call_later(every, tick)

        self.stop_timer()
        self.timer = loop.call_later(every, tick)

    def stop_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


_policy: _Policy | None = None


def freeze_long_lived(complete_every: float = COMPLETE_EVERY, full_every: float = FULL_EVERY) -> None:
    """Freeze what is alive now (call it once the caches are loaded) and after every full collection from
    then on; called from a running event loop, also run a short full collection every `full_every` seconds.
    Idempotent: a second call only freezes again (and restarts the timer with the new period)."""
    global _policy
    gc.freeze()
    if _policy is None:
        _policy = _Policy(complete_every, gc.get_threshold())
        gc.callbacks.append(_policy)
    else:
        _policy.base_interval = _policy.complete_every = complete_every
    gc.set_threshold(YOUNG_THRESHOLD, *_policy.threshold[1:])
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    _policy.start_timer(loop, full_every)


def stop_freezing() -> None:
    """Undo `freeze_long_lived` (tests): frozen objects go back under the collector's watch."""
    global _policy
    if _policy is not None:
        _policy.stop_timer()
        gc.callbacks.remove(_policy)
        gc.set_threshold(*_policy.threshold)
        _policy = None
    gc.unfreeze()

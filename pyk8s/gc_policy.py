"""How long-running components (the API server, the scheduler) keep Python's cyclic garbage collector from
rescanning their caches.

Their watch caches and informers hold every object of the cluster for the life of the process: millions of
dicts that the collector's full collections walk each time the heap has grown by a quarter — about 300 ms per
collection with 10,000 pods on this project's reference machine, 29 of them in one scheduling benchmark.
Those objects are plain JSON values, freed by reference counting when they are replaced; they do not form
cycles. So after each full collection the survivors are frozen (moved where the collector does not look:
`gc.freeze`), and the next full collection walks only what has survived since. Reference counting still frees
frozen objects; only a cycle that was alive at a freeze and dies later waits, until the periodic complete
collection (every `COMPLETE_EVERY` seconds) unfreezes everything first and reclaims it.
"""

from __future__ import annotations

import gc
import logging
import time
from typing import Any

log = logging.getLogger(__name__)

COMPLETE_EVERY = 600.0  # seconds between full collections that look at frozen objects too
# Allocations between young collections (Python's default is 700): a request allocates thousands of
# short-lived dicts, which reference counting frees anyway, so collecting every 700 mostly finds nothing.
YOUNG_THRESHOLD = 20_000
SLOW_COLLECTION = 1.0  # seconds: a full collection this long stalls every request, so it is logged


class _Policy:
    def __init__(self, complete_every: float, threshold: tuple[int, ...]) -> None:
        self.complete_every = complete_every
        self.threshold = threshold  # what stop_freezing puts back
        self.last_complete = time.monotonic()
        self.started = 0.0
        self.complete = False  # whether the collection under way looks at frozen objects too

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
            if took >= SLOW_COLLECTION:
                log.warning(
                    "%s garbage collection took %.1f s (%d objects frozen, %d collected)",
                    "complete" if self.complete else "full",
                    took,
                    gc.get_freeze_count(),
                    info.get("collected", 0),
                )


_policy: _Policy | None = None


def freeze_long_lived(complete_every: float = COMPLETE_EVERY) -> None:
    """Freeze what is alive now (call it once the caches are loaded) and after every full collection from
    then on. Idempotent: a second call only freezes again."""
    global _policy
    gc.freeze()
    if _policy is None:
        _policy = _Policy(complete_every, gc.get_threshold())
        gc.callbacks.append(_policy)
    else:
        _policy.complete_every = complete_every
    gc.set_threshold(YOUNG_THRESHOLD, *_policy.threshold[1:])


def stop_freezing() -> None:
    """Undo `freeze_long_lived` (tests): frozen objects go back under the collector's watch."""
    global _policy
    if _policy is not None:
        gc.callbacks.remove(_policy)
        gc.set_threshold(*_policy.threshold)
        _policy = None
    gc.unfreeze()

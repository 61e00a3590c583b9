"""Waiting, in tests, for what real processes bring about: poll with a generous deadline rather than sleep a
fixed time (the machine is small and loaded)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60.0, logs: Callable[[], str] = lambda: "") -> Any:
    """`check()`'s first truthy answer; AssertionError naming `what` (and `logs()`) once `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{logs()}".rstrip())
        time.sleep(0.2)

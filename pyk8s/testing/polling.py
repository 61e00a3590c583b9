"""Waiting, in tests, for what real processes bring about: poll with a generous deadline rather than sleep a
fixed time (the machine is small and loaded)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
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


async def until(what: str, check: Callable[[], Awaitable[Any]], timeout: float = 30.0) -> Any:
    """`await check()`'s first truthy answer, polled on the running event loop; AssertionError naming `what` once
    `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        got = await check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.05)

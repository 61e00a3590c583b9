"""The simulated nodes' kubelet endpoint on its own: what it serves and how it stops."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp

from pyk8s.api.meta import rfc3339
from pyk8s.kubelet.server import KubeletServer


def running_pod() -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"nodeName": "n0", "containers": [{"name": "c", "image": "busybox", "command": ["sh", "-c", "echo hi; sleep infinity"]}]},
        "status": {"containerStatuses": [{"name": "c", "containerID": "sim://1", "state": {"running": {"startedAt": rfc3339()}}}]},
    }  # fmt: skip


async def test_stop_ends_a_following_stream_at_once() -> None:
    pod = running_pod()
    server = KubeletServer(lambda ns, name: pod if (ns, name) == ("ns", "p") else None, {"n0"})
    await server.start()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as session:
        url = f"https://127.0.0.1:{server.port}/containerLogs/ns/p/c?follow=true"
        async with session.get(url) as resp:
            assert resp.status == 200
            assert await resp.content.readline() == b"hi\n"
            # The container prints nothing more and runs until deleted: only stopping the server ends the stream.
            started = time.monotonic()
            await asyncio.wait_for(server.stop(), 10)
            assert time.monotonic() - started < 5
            assert await asyncio.wait_for(resp.content.read(), 5) == b""

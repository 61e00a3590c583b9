"""An API server whose start() fails late (its secure port is taken, found after the watch caches are running)
stops promptly, even while writes still land in storage, as a controller's do during a shutdown. A cancel that
arrived as a write woke a storage watch used to be dropped, and stop() then waited for good."""

from __future__ import annotations

import asyncio
import itertools
import socket
from pathlib import Path

import pytest

from pyk8s.apiserver.server import APIServer, APIServerOptions
from pyk8s.storage.cacher import Cacher


async def _write_until_closed(server: APIServer) -> int:
    """ConfigMaps written straight into the server's storage, a few while it starts, then as fast as they go once
    it is stopping, until it has closed storage; how many. Bounded (count and time), should stop() hang."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 20
    written = 0
    while server.store is None and loop.time() < deadline:  # not open yet
        await asyncio.sleep(0.001)
    for i in itertools.count():
        store = server.store
        if store is None or written >= 5_000 or loop.time() > deadline:
            break
        obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"w{i}", "namespace": "default"}}
        try:
            await store.create(f"/registry/configmaps/default/w{i}", obj)
        except Exception:  # closed under this write
            break
        written += 1
        handlers = server.handlers
        if handlers is None or not handlers.subresources.stopping.is_set():
            await asyncio.sleep(0.01)  # still starting: a controller's pace
    return written


async def test_stop_returns_after_a_late_start_failure(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = APIServer(APIServerOptions(data_dir=tmp_path, secure_port=port, write_kubeconfig=False))
        writer = asyncio.create_task(_write_until_closed(server))
        with pytest.raises(OSError, match="address already in use"):
            await asyncio.wait_for(server.start(), 30)  # start() stops what it started before it raises
        await asyncio.wait_for(server.stop(), 5)  # and stopping again is quick too
        assert server.store is None and not server.cachers
        writes = await asyncio.wait_for(writer, 5)
        assert writes > 0


async def test_a_cache_stops_right_after_a_write(tmp_path: Path) -> None:
    """The narrowest form: a write commits, then the cache is stopped before its task has run again."""
    from pyk8s.storage import open_storage

    store = await open_storage(f"sqlite://{tmp_path}")
    try:
        cacher = Cacher(store, "/registry/configmaps/", lambda _obj: ({}, {}))
        await cacher.start()
        await cacher.wait_ready(10)
        await asyncio.sleep(0.05)  # its watch is live and waiting
        obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "d"}}
        await store.create("/registry/configmaps/d/a", obj)
        await asyncio.wait_for(cacher.stop(), 5)
    finally:
        await store.close()

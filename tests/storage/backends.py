"""Opening a fresh store on either backend, for the shared storage suite."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import AsyncIterator

import grpc
from aetcd import rpc

from pyk8s.storage import Store
from pyk8s.storage.factory import kv_from_url
from pyk8s.testing.etcd import EtcdServer

BACKENDS = ["sqlite", "etcd"]
PROGRESS_INTERVAL = 0.5


async def wipe_etcd(endpoint: str) -> None:
    """Delete every key, so each test starts empty (revisions keep counting, as they would in etcd)."""
    async with grpc.aio.insecure_channel(endpoint) as ch:
        await rpc.KVStub(ch).DeleteRange(rpc.DeleteRangeRequest(key=b"\x00", range_end=b"\x00"))


@contextlib.asynccontextmanager
async def open_store(backend: str, etcd: EtcdServer | None, **kwargs: object) -> AsyncIterator[Store]:
    kwargs.setdefault("compaction_interval", 0)
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="pyk8s-sqlite-") as d:
            store = Store(kv_from_url(f"sqlite://{d}?progress_notify_interval={PROGRESS_INTERVAL}"), **kwargs)
            await store.start()
            try:
                yield store
            finally:
                await store.close()
    else:
        assert etcd is not None
        await wipe_etcd(etcd.endpoint)
        store = Store(kv_from_url(etcd.url), **kwargs)
        await store.start()
        try:
            yield store
        finally:
            await store.close()

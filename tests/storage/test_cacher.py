"""The watch cache against SQLite and a real etcd: reads waiting for freshness while another resource is
written, watches from a revision the cache has not reached, concurrent progress requests on one storage
watch, and what each backend says about reliable progress requests (Debian's etcd 3.4.23 has none)."""

from __future__ import annotations

import asyncio
import tempfile

import pytest

from pyk8s.storage import ADDED, BOOKMARK, REQUEST_WATCH_PROGRESS, Store
from pyk8s.storage.cacher import Cacher
from pyk8s.storage.etcd import progress_requests_reliable
from pyk8s.storage.factory import kv_from_url


@pytest.fixture
async def pods(store):
    cacher = Cacher(store, "/registry/pods/", lambda obj: (obj["metadata"].get("labels") or {}, {}))
    await cacher.start()
    await cacher.wait_ready(10)
    yield cacher
    await cacher.stop()


def obj(name: str, ns: str = "default") -> dict:
    return {"metadata": {"name": name, "namespace": ns}}


async def test_backends_say_whether_progress_requests_are_reliable(store, etcd_server):
    if type(store.kv).__name__ == "SqliteKV":
        assert store.supports(REQUEST_WATCH_PROGRESS)
    else:
        # Debian's etcd 3.4.23 has progress requests, but they are reliable only from 3.4.31.
        version = await _etcd_version(etcd_server.endpoint)
        assert store.supports(REQUEST_WATCH_PROGRESS) is progress_requests_reliable(version)


async def _etcd_version(endpoint: str) -> str:
    import grpc
    from aetcd import rpc

    async with grpc.aio.insecure_channel(endpoint) as ch:
        return (await rpc.MaintenanceStub(ch).Status(rpc.StatusRequest())).version


@pytest.mark.parametrize(
    ("version", "reliable"),
    [
        ("3.4.23", False),
        ("3.4.30", False),
        ("3.4.31", True),
        ("3.5.1", False),
        ("3.5.12", False),
        ("3.5.13", True),
        ("3.5.13-rc.0", False),
        ("3.6.0", True),
        ("not a version", False),
    ],
)
def test_which_etcd_versions_have_reliable_progress_requests(version, reliable):
    assert progress_requests_reliable(version) is reliable


@pytest.fixture
async def quiet_sqlite_pods():
    """A pods cache over SQLite whose periodic progress notifications come only every 30 s: within a test,
    only progress requests can move the cache past writes to other resources."""
    with tempfile.TemporaryDirectory(prefix="pyk8s-sqlite-") as d:
        store = Store(kv_from_url(f"sqlite://{d}?progress_notify_interval=30"), compaction_interval=0)
        await store.start()
        cacher = Cacher(store, "/registry/pods/", lambda obj: (obj["metadata"].get("labels") or {}, {}))
        await cacher.start()
        await cacher.wait_ready(10)
        try:
            yield store, cacher
        finally:
            await cacher.stop()
            await store.close()


async def test_reads_waiting_for_freshness_are_answered_by_progress_requests(quiet_sqlite_pods):
    store, pods = quiet_sqlite_pods
    for i in range(3):
        await store.create(f"/registry/configmaps/default/c{i}", obj(f"c{i}"))
    target = await store.current_revision()
    assert pods.revision < target  # the cache has seen none of those writes
    await asyncio.wait_for(asyncio.gather(*(pods.wait_until_fresh(target) for _ in range(16))), 2)
    assert pods.revision >= target


async def test_many_reads_wait_for_freshness_while_another_resource_is_written(store, pods, caplog):
    """Readers wait for storage's current revision, which writes to ConfigMaps keep moving past the pods' cache:
    each gets there (by progress requests where reliable, else by storage's periodic notifications)."""
    stop = asyncio.Event()

    async def writer() -> None:
        i = 0
        while not stop.is_set():
            await store.create(f"/registry/configmaps/default/c{i}", obj(f"c{i}"))
            i += 1
            await asyncio.sleep(0.005)

    async def reader() -> None:
        for _ in range(5):
            await pods.wait_until_fresh(await store.current_revision())

    background = asyncio.create_task(writer())
    try:
        await asyncio.wait_for(asyncio.gather(*(reader() for _ in range(32))), 20)
    finally:
        stop.set()
        await background
    # The storage watch stayed up: the cache did not have to relist.
    assert not [r for r in caplog.records if "relisting" in r.getMessage()]


async def test_concurrent_progress_requests_on_one_storage_watch(store):
    """Progress requests from many tasks at once: the watch stays up and answers with bookmarks."""
    async with await store.watch("/registry/pods/", await store.current_revision()) as w:
        await asyncio.gather(*(w.request_progress() for _ in range(50)))
        first = await asyncio.wait_for(w.__anext__(), 5)
        assert first.type == BOOKMARK
        await store.create("/registry/pods/default/after", obj("after"))
        while True:
            e = await asyncio.wait_for(w.__anext__(), 5)
            if e.type != BOOKMARK:
                break
    assert e.type == ADDED and e.key.endswith("/after")


async def test_watch_from_a_revision_the_cache_has_not_reached_starts_at_once(store, pods):
    # A list from storage returns the storage's revision, which writes elsewhere put ahead of the pods' cache.
    await store.create("/registry/pods/default/before", obj("before"))
    for i in range(3):
        await store.create(f"/registry/configmaps/default/x{i}", obj(f"x{i}"))
    listed = (await store.list("/registry/pods/")).revision
    assert pods.revision < listed  # (the case under test: the cache is behind the listed revision)
    w = await asyncio.wait_for(pods.watch("/registry/pods/", listed), 1)
    try:
        await store.create("/registry/pods/default/later", obj("later"))
        e = await asyncio.wait_for(w.__anext__(), 5)
        assert (e.type, e.event.key if e.event else "") == (ADDED, "/registry/pods/default/later")
        assert e.revision > listed
    finally:
        w.stop()


async def test_a_watch_started_after_stop_ends_at_once(store):
    cacher = Cacher(store, "/registry/pods/", lambda obj: ({}, {}))
    await cacher.start()
    await cacher.wait_ready(10)
    await cacher.stop()
    # A client re-watching while the server shuts down must not hold the shutdown.
    w = await cacher.watch("/registry/pods/", None)

    async def drain() -> list[object]:
        return [ev async for ev in w]

    assert await asyncio.wait_for(drain(), 5) == []

"""The pod garbage collector's passes against a real API server, one case after another: terminated pods over the
threshold (evicted first, then the oldest), orphans of a node that is gone (after the quarantine: Failed with
DisruptionTarget/DeletionByPodGC, then force-deleted), unscheduled terminating pods, and terminating pods on an
out-of-service node. A finalizer holds some pods so that what the collector wrote before deleting can be seen."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from pyk8s.api import errors
from pyk8s.client.cache import SharedInformerFactory
from pyk8s.client.kubeconfig import load_kubeconfig
from pyk8s.client.rest import RESTClient
from pyk8s.controllers.podgc import PodGCController
from pyk8s.testing.cluster import APIServerProcess

HOLD = "pyk8s.io/test-hold"
NS = "gc"


@pytest.fixture(scope="module")
def server() -> Iterator[APIServerProcess]:
    proc = APIServerProcess().start()
    proc.create_namespace(NS)
    yield proc
    proc.cleanup()


@pytest.fixture
async def client(server: APIServerProcess) -> AsyncIterator[RESTClient]:
    async with RESTClient(load_kubeconfig(str(server.kubeconfig)).with_options(qps=-1)) as c:
        yield c


async def until(what: str, check: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (got := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)
    return got


def pod(name: str, node: str = "", finalizers: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "finalizers": list(finalizers)},
        "spec": {"containers": [{"name": "c", "image": "pause"}], **({"nodeName": node} if node else {})},
    }  # fmt: skip


async def get_pod(client: RESTClient, name: str) -> dict[str, Any] | None:
    try:
        return await client.get("pods", name, NS)
    except errors.NotFound:
        return None


async def release(client: RESTClient, name: str) -> None:
    await client.patch("pods", name, {"metadata": {"finalizers": None}}, NS, patch_type="merge")


async def test_pod_gc_passes(client: RESTClient) -> None:
    ready = {"type": "Ready", "status": "True"}
    await client.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                                  "status": {"conditions": [ready]}})  # fmt: skip
    factory = SharedInformerFactory(client)
    gc = PodGCController(client, factory, terminated_pod_threshold=2, quarantine_time=0.5)
    factory.start()
    await factory.wait_for_cache_sync()
    cache = gc.pods.indexer

    def cached(name: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = cache.get_by_key(f"{NS}/{name}")
        return found

    try:
        # Terminated pods: 4 over a threshold of 2; the evicted one goes first, then the oldest.
        for i, (phase, reason) in enumerate(
            (("Succeeded", ""), ("Failed", ""), ("Succeeded", ""), ("Failed", "Evicted"))
        ):
            await client.create("pods", pod(f"t{i}", "n1"), NS)
            await client.patch(
                "pods", f"t{i}", {"status": {"phase": phase, "reason": reason}}, NS, subresource="status"
            )
            if i == 0:
                await asyncio.sleep(1.1)  # t0 is the oldest by its creationTimestamp (whole seconds)
        await client.create("pods", pod("running", "n1"), NS)
        await until("the phases cached", lambda: all((p := cached(f"t{i}")) and p["status"].get("phase") != "Pending"
                                                       for i in range(4)))  # fmt: skip
        await gc.gc()
        assert await get_pod(client, "t3") is None and await get_pod(client, "t0") is None
        assert all([await get_pod(client, n) for n in ("t1", "t2", "running")])
        for n in ("t1", "t2"):
            await client.delete("pods", n, NS, grace_period_seconds=0)

        # An orphan: bound to a node that does not exist; deleted only after the quarantine.
        await client.create("pods", pod("orphan", "ghost", (HOLD,)), NS)
        await until("the orphan cached", lambda: cached("orphan"))
        await gc.gc()
        assert not (await get_pod(client, "orphan"))["metadata"].get("deletionTimestamp")  # type: ignore[index]
        await asyncio.sleep(0.6)
        await gc.gc()
        orphan = await get_pod(client, "orphan")
        assert orphan is not None and orphan["metadata"].get("deletionTimestamp")
        assert orphan["metadata"]["deletionGracePeriodSeconds"] == 0
        assert orphan["status"]["phase"] == "Failed"
        target = next(c for c in orphan["status"]["conditions"] if c["type"] == "DisruptionTarget")
        assert (target["status"], target["reason"], target["message"]) == (
            "True", "DeletionByPodGC", "PodGC: node no longer exists",
        )  # fmt: skip
        await release(client, "orphan")

        # Terminating and never scheduled.
        await client.create("pods", pod("pending", "", (HOLD,)), NS)
        await client.delete("pods", "pending", NS)
        await until(
            "the terminating pod cached", lambda: (p := cached("pending")) and p["metadata"].get("deletionTimestamp")
        )
        await gc.gc()
        pending = await get_pod(client, "pending")
        assert pending is not None and pending["status"]["phase"] == "Failed"
        assert not any(c["type"] == "DisruptionTarget" for c in pending["status"].get("conditions") or ())
        await release(client, "pending")

        # Terminating on a node that is not Ready and marked out of service.
        await client.create("nodes", {
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": "oos"},
            "spec": {"taints": [{"key": "node.kubernetes.io/out-of-service", "effect": "NoExecute"}]},
            "status": {"conditions": [{"type": "Ready", "status": "False"}]},
        })  # fmt: skip
        await client.create("pods", pod("stuck", "oos"), NS)
        await client.create("pods", pod("fine", "n1"), NS)
        for n in ("stuck", "fine"):
            await client.delete("pods", n, NS)  # graceful: they wait for their kubelets
        await until("both terminating in the cache", lambda: all(
            (p := cached(n)) and p["metadata"].get("deletionTimestamp") for n in ("stuck", "fine")))  # fmt: skip
        await gc.gc()
        assert await get_pod(client, "stuck") is None
        assert await get_pod(client, "fine") is not None  # its node is Ready: its kubelet finishes it
    finally:
        await factory.shutdown()

"""Informers against a real API server: 10k pods, a storm of concurrent writes, the API server killed and
restarted mid-stream, and a partition long enough for compaction to force a relist. The store must end
equal to the server's state and every handler must have seen a consistent history."""

from __future__ import annotations

import asyncio
import random

import pytest

from pyk8s.api import errors
from pyk8s.client.cache import DeletedFinalStateUnknown, SharedInformerFactory
from pyk8s.client.cache.shared_informer import drop_managed_fields
from pyk8s.client.kubeconfig import load_kubeconfig
from pyk8s.client.rest import RESTClient
from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.proxy import TCPProxy

NS = "storm"
INITIAL_PODS = 10_000
COMPACTION = 2  # seconds between compactions: history lasts 2 to 4 s


def pod(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"gen": "0"}},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
    }


class HandlerView:
    """What one handler believes, rebuilt from its notifications, and every inconsistency it noticed."""

    def __init__(self) -> None:
        self.state: dict[str, int] = {}
        self.problems: list[str] = []
        self.events = 0

    @staticmethod
    def key(obj) -> str:
        if isinstance(obj, DeletedFinalStateUnknown):
            return obj.key
        return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"

    def on_add(self, obj, _initial) -> None:
        self.events += 1
        k = self.key(obj)
        if k in self.state:
            self.problems.append(f"add of {k}, already present")
        self.state[k] = int(obj["metadata"]["resourceVersion"])

    def on_update(self, old, new) -> None:
        self.events += 1
        k = self.key(new)
        if k not in self.state:
            self.problems.append(f"update of {k} before its add")
        elif self.state[k] != int(old["metadata"]["resourceVersion"]):
            self.problems.append(
                f"update of {k}: old rv {old['metadata']['resourceVersion']}, handler had {self.state[k]}"
            )
        if int(new["metadata"]["resourceVersion"]) < int(old["metadata"]["resourceVersion"]):
            self.problems.append(f"{k} went back in time")
        self.state[k] = int(new["metadata"]["resourceVersion"])

    def on_delete(self, obj) -> None:
        self.events += 1
        k = self.key(obj)
        if self.state.pop(k, None) is None:
            self.problems.append(f"delete of {k}, not present")


async def server_state(client: RESTClient) -> dict[str, int]:
    lst = await client.list("pods", NS, limit=1000)
    return {f"{NS}/{p['metadata']['name']}": int(p["metadata"]["resourceVersion"]) for p in lst["items"]}


def store_state(informer) -> dict[str, int]:
    return {informer.indexer.key_func(o): int(o["metadata"]["resourceVersion"]) for o in informer.indexer.list()}


async def converge(client, informer, views, timeout=120.0) -> dict[str, int]:
    """Wait until the store and every handler view equal the server's (static) state."""
    truth = await server_state(client)
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        if store_state(informer) == truth and all(v.state == truth for v in views):
            return truth
        await asyncio.sleep(0.2)
    store = store_state(informer)
    missing = sorted(set(truth) - set(store))[:5]
    extra = sorted(set(store) - set(truth))[:5]
    stale = sorted(k for k in truth if k in store and store[k] != truth[k])[:5]
    pytest.fail(f"informer did not converge: missing {missing}, extra {extra}, stale {stale}")


async def storm(client: RESTClient, names: list[str], ops: int, workers: int = 16, seed: int = 0) -> int:
    """Concurrent creates, label updates and deletes; tolerates an API server that is down for a while."""
    rng = random.Random(seed)
    done = 0
    counter = iter(range(10**9))

    async def worker(wid: int) -> None:
        nonlocal done
        while done < ops:
            choice = rng.random()
            try:
                if choice < 0.3 or not names:
                    name = f"s{seed}-{wid}-{next(counter)}"
                    await client.create("pods", pod(name), NS)
                    names.append(name)
                elif choice < 0.75:
                    name = rng.choice(names)
                    await client.patch("pods", name, {"metadata": {"labels": {"gen": str(rng.randrange(10**6))}}}, NS)
                else:
                    name = names.pop(rng.randrange(len(names)))
                    await client.delete("pods", name, NS, grace_period_seconds=0)
            except (errors.NotFound, errors.AlreadyExists, errors.Conflict):
                pass
            except (ConnectionError, errors.ServiceUnavailable, errors.InternalError):
                await asyncio.sleep(0.2)  # the server is restarting
                continue
            done += 1

    await asyncio.gather(*(worker(i) for i in range(workers)))
    return done


@pytest.fixture(scope="module")
def storm_server():
    server = APIServerProcess(extra_args=("--etcd-compaction-interval", f"{COMPACTION}s")).start()
    server.create_namespace(NS)
    yield server
    server.cleanup()


async def test_watch_from_compacted_version_raises_gone(storm_server):
    config = load_kubeconfig(str(storm_server.kubeconfig)).with_options(qps=-1)
    async with RESTClient(config) as client:
        first = await client.create("configmaps", {"metadata": {"name": "old"}}, NS)
        await client.patch("configmaps", "old", {"data": {"a": "b"}}, NS)
        # Two compaction rounds: the second compacts past the patch, so the change after `first` is gone.
        await asyncio.sleep(COMPACTION * 2 + 1)
        with pytest.raises(errors.Gone) as exc:
            rv = first["metadata"]["resourceVersion"]
            async for _ in client.watch("configmaps", NS, resource_version=rv, timeout_seconds=10):
                pass
        assert exc.value.code == 410


async def test_informer_survives_storm_restart_and_compaction(storm_server):
    config = load_kubeconfig(str(storm_server.kubeconfig)).with_options(qps=-1)
    proxy = await TCPProxy("127.0.0.1", storm_server.port).start()
    async with RESTClient(config) as writer, RESTClient(config.with_options(server=proxy.url)) as reader:
        sem = asyncio.Semaphore(64)

        async def create(i: int) -> None:
            async with sem:
                await writer.create("pods", pod(f"p{i}"), NS)

        await asyncio.gather(*(create(i) for i in range(INITIAL_PODS)))
        names = [f"p{i}" for i in range(INITIAL_PODS)]

        factory = SharedInformerFactory(reader, namespace=NS, transform=drop_managed_fields)
        informer = factory.informer_for("pods")
        first = HandlerView()
        informer.add_event_handler(on_add=first.on_add, on_update=first.on_update, on_delete=first.on_delete)
        factory.start()
        synced = await factory.wait_for_cache_sync(timeout=120)
        assert synced == {"pods": True}
        assert len(informer.indexer) == INITIAL_PODS
        assert "managedFields" not in informer.indexer.list()[0]["metadata"]

        # A handler that arrives late first gets the current state as adds.
        late = HandlerView()
        reg = informer.add_event_handler(on_add=late.on_add, on_update=late.on_update, on_delete=late.on_delete)
        views = [first, late]

        # 1. A storm while everything is up.
        await storm(writer, names, ops=1500, seed=1)
        await converge(writer, informer, views)
        assert reg.has_synced()

        # 2. Kill the API server mid-storm and restart it; the storm goes on around the outage.
        async def crash_and_restart() -> None:
            await asyncio.sleep(1.0)
            await asyncio.to_thread(storm_server.kill)
            await asyncio.sleep(0.5)
            await asyncio.to_thread(storm_server.restart)

        await asyncio.gather(storm(writer, names, ops=1500, seed=2), crash_and_restart())
        await converge(writer, informer, views)

        # 3. Cut the informer off while writes go on and compaction removes the history it would need.
        lists_before = informer.reflector.lists + informer.reflector.watch_lists
        proxy.partition(hold=False)
        await storm(writer, names, ops=800, seed=3)
        await asyncio.sleep(COMPACTION * 2 + 1)
        await writer.create("pods", pod("after-compaction"), NS)
        proxy.heal()
        truth = await converge(writer, informer, views)
        assert informer.reflector.lists + informer.reflector.watch_lists > lists_before, (
            "the compaction should have forced a resync"
        )
        assert f"{NS}/after-compaction" in truth

        assert first.problems == [] and late.problems == []
        await factory.shutdown()
    await proxy.close()

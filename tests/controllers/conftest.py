"""A real `pyk8s apiserver` and a controller manager (garbage collector, namespace controller) running
against it in a thread of its own, for the whole session; kubectl drives the cluster as a user would."""

from __future__ import annotations

import asyncio
import itertools
import threading

import pytest

from pyk8s.client.kubeconfig import load_kubeconfig
from pyk8s.client.rest import RESTClient
from pyk8s.controllers.manager import ControllerManager
from pyk8s.testing.cluster import APIServerProcess

_counter = itertools.count()


@pytest.fixture(scope="session")
def cluster():
    server = APIServerProcess().start()
    config = load_kubeconfig(str(server.kubeconfig)).with_options(qps=-1)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder: dict = {}

    async def main() -> None:
        async with RESTClient(config) as client:
            holder["task"] = asyncio.current_task()
            ready.set()
            await ControllerManager(client).run()

    def run() -> None:
        try:
            loop.run_until_complete(main())
        except asyncio.CancelledError:
            pass

    thread = threading.Thread(target=run, name="controller-manager", daemon=True)
    thread.start()
    ready.wait(30)
    yield server
    loop.call_soon_threadsafe(holder["task"].cancel)
    thread.join(30)
    server.cleanup()


@pytest.fixture
def ns(cluster):
    name = f"g{next(_counter)}"
    cluster.create_namespace(name)
    return name


@pytest.fixture
async def client(cluster):
    async with RESTClient(load_kubeconfig(str(cluster.kubeconfig)).with_options(qps=-1)) as c:
        yield c

"""A real `pyk8s apiserver` and a controller manager running against it in a thread of its own, for the whole
session; and `full_cluster`, every part in its own process as `pyk8s up` runs them (API server, three simulated
nodes, scheduler, controller manager) for what needs pods to run. kubectl drives them as a user would."""

from __future__ import annotations

import asyncio
import itertools
import threading

import pytest

from pyk8s.client.kubeconfig import load_kubeconfig
from pyk8s.client.rest import RESTClient
from pyk8s.controllers.manager import ControllerManager
from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.components import ComponentProcess

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


@pytest.fixture(scope="session")
def full_cluster():
    server = APIServerProcess().start()
    parts = [
        ComponentProcess("nodes", server.kubeconfig, "--count", "3", "--name-prefix", "dn-", log_dir=server.dir,
                         secure_port=False),
        ComponentProcess("scheduler", server.kubeconfig, "--no-leader-elect", log_dir=server.dir),
        # Autoscalers synced every second rather than every 15 s, so that their tests need not wait.
        ComponentProcess("controller-manager", server.kubeconfig, "--no-leader-elect",
                         "--horizontal-pod-autoscaler-sync-period=1s", log_dir=server.dir),
    ]  # fmt: skip
    try:
        for p in parts:
            p.start()
        yield server
        # Every sync ended in a result or an expected error, as upstream's would: nothing went unhandled.
        log = parts[2].log_path.read_text(errors="replace")
        assert "Traceback" not in log, log[-4000:]
    finally:
        for p in parts:
            p.stop()
        server.cleanup()

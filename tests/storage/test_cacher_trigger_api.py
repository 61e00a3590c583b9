"""Through a real `pyk8s apiserver`: a watch or list of pods with `fieldSelector=spec.nodeName=<node>` (a
kubelet's), which the pods watch cache serves from its trigger index, sees that node's pods and nothing else —
with the real kubectl and with our client; a pod bound to the node arrives as ADDED, and a watch of unscheduled
pods (`spec.nodeName=`) sees it leave as DELETED."""

from __future__ import annotations

import asyncio
import queue
import subprocess
import threading
import time
from typing import Any

import pytest

from pyk8s.client.kubeconfig import load_kubeconfig
from pyk8s.client.rest import RESTClient
from pyk8s.testing.cluster import APIServerProcess, kubectl_binary

NS = "trigger"


@pytest.fixture(scope="module")
def cluster():
    server = APIServerProcess().start()
    server.create_namespace(NS)
    yield server
    server.cleanup()


def pod(name: str, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def binding(name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, "target": {"kind": "Node", "name": node}}


def client_for(cluster: APIServerProcess) -> RESTClient:
    return RESTClient(load_kubeconfig(str(cluster.kubeconfig)).with_options(qps=-1))


class Lines:
    """A process's stdout lines as they come, read by a thread."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.q: queue.Queue[str] = queue.Queue()
        assert proc.stdout is not None
        stdout = proc.stdout
        threading.Thread(target=lambda: [self.q.put(line.strip()) for line in stdout], daemon=True).start()

    def until(self, want: str, timeout: float = 20.0) -> list[str]:
        got: list[str] = []
        deadline = time.monotonic() + timeout
        while want not in got:
            got.append(self.q.get(timeout=max(0.01, deadline - time.monotonic())))
        return got


def post(cluster: APIServerProcess, path: str, body: dict[str, Any]) -> None:
    status, out = cluster.request("POST", f"/api/v1/namespaces/{NS}/{path}", body)
    assert status == 201, out


def test_kubectl_watch_by_node_sees_only_that_nodes_pods(cluster):
    post(cluster, "pods", pod("k-a1", "n1"))
    post(cluster, "pods", pod("k-b1", "n2"))
    post(cluster, "pods", pod("k-u"))
    # (--request-timeout=30s: kubectl writes 60s as "1m0s", which pyk8s's timeout parameter does not read yet)
    proc = subprocess.Popen(
        [kubectl_binary(), "-n", NS, "get", "pods", "-w", "--field-selector", "spec.nodeName=n1", "-o", "name",
         "--request-timeout=30s"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={"HOME": str(cluster.home), "KUBECONFIG": str(cluster.kubeconfig), "KUBECTL_COMMAND_HEADERS": "false"},
    )  # fmt: skip
    try:
        lines = Lines(proc)
        seen = lines.until("pod/k-a1")  # the initial list
        # Once a pod created now has arrived, the watch is open: what follows reaches it as the cache dispatches
        # each event (not from the cache's history, as for a watch that opens after the writes).
        post(cluster, "pods", pod("k-probe", "n1"))
        seen += lines.until("pod/k-probe")
        post(cluster, "pods", pod("k-b2", "n2"))
        status, out = cluster.request(
            "PATCH", f"/api/v1/namespaces/{NS}/pods/k-b1", {"metadata": {"labels": {"x": "1"}}},
            content_type="application/merge-patch+json",
        )  # fmt: skip
        assert status == 200, out
        post(cluster, "pods", pod("k-a2", "n1"))
        post(cluster, "pods/k-u/binding", binding("k-u", "n1"))
        post(cluster, "pods", pod("k-end", "n1"))
        seen += lines.until("pod/k-end")
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert seen == ["pod/k-a1", "pod/k-probe", "pod/k-a2", "pod/k-u", "pod/k-end"], err
    listed = cluster.kubectl("-n", NS, "get", "pods", "--field-selector", "spec.nodeName=n1", "-o", "name", check=True)
    assert listed.stdout.split() == ["pod/k-a1", "pod/k-a2", "pod/k-end", "pod/k-probe", "pod/k-u"]


async def test_client_watches_by_node_see_binds_and_deletes(cluster):
    async with client_for(cluster) as c:
        await c.create("pods", pod("c-a1", "n3"), NS)
        await c.create("pods", pod("c-b1", "n4"), NS)
        rv = (await c.list("pods", NS))["metadata"]["resourceVersion"]
        got: dict[str, list[tuple[str, str]]] = {"n3": [], "": []}
        arrived = {node: asyncio.Event() for node in got}

        async def consume(node: str, last: str) -> None:
            async with c.watch("pods", NS, resource_version=rv, field_selector=f"spec.nodeName={node}") as w:
                async for ev in w:
                    got[node].append((ev.type, ev.object["metadata"]["name"]))
                    if ev.object["metadata"]["name"].startswith("c-probe"):
                        arrived[node].set()
                    if got[node][-1] == last:
                        return

        tasks = [
            asyncio.create_task(consume("n3", ("DELETED", "c-a1"))),
            asyncio.create_task(consume("", ("ADDED", "c-end"))),
        ]
        # Once pods created now have arrived, both watches are open: what follows reaches them as the cache
        # dispatches each event (not from the cache's history, as for a watch that opens after the writes).
        await c.create("pods", pod("c-probe3", "n3"), NS)
        await c.create("pods", pod("c-probe"), NS)
        for e in arrived.values():
            await asyncio.wait_for(e.wait(), 20)
        await c.create("pods", pod("c-u"), NS)  # unscheduled
        await c.create("pods", pod("c-b2", "n4"), NS)
        await c.create("pods", binding("c-u", "n3"), NS, name="c-u", subresource="binding")
        await c.patch("pods", "c-a1", {"metadata": {"labels": {"x": "1"}}}, NS)
        await c.patch("pods", "c-b1", {"metadata": {"labels": {"x": "1"}}}, NS)
        await c.delete("pods", "c-a1", NS, grace_period_seconds=0)
        await c.create("pods", pod("c-end"), NS)  # unscheduled: the last event of the second watch
        await asyncio.wait_for(asyncio.gather(*tasks), 20)
        assert got["n3"] == [("ADDED", "c-probe3"), ("ADDED", "c-u"), ("MODIFIED", "c-a1"), ("DELETED", "c-a1")]
        assert got[""] == [("ADDED", "c-probe"), ("ADDED", "c-u"), ("DELETED", "c-u"), ("ADDED", "c-end")]
        # A list served from the watch cache (resourceVersion=0) and one from storage say the same.
        for list_rv in ("0", ""):
            listed = await c.list("pods", NS, field_selector="spec.nodeName=n3", resource_version=list_rv)
            assert [p["metadata"]["name"] for p in listed["items"]] == ["c-probe3", "c-u"]

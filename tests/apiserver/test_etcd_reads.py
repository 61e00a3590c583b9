"""Consistent reads on etcd whose progress requests are not reliable (Debian's 3.4.23), with etcd's default
progress-notify interval of 10 minutes, so nothing but events moves a watch cache forward: GETs and LISTs
answer at once while other resources are written, and a watch from the revision such a list returned starts at
once and delivers what follows."""

from __future__ import annotations

import asyncio
import json
import ssl
import urllib.request

import aiohttp
import pytest

from pyk8s.testing.cluster import APIServerProcess
from pyk8s.testing.etcd import EtcdServer


@pytest.fixture(scope="module")
def server():
    etcd = EtcdServer(progress_notify_interval="10m").start()
    proc = APIServerProcess(etcd_url=etcd.url).start()
    proc.create_namespace("reads")
    yield proc
    proc.cleanup()
    etcd.stop()


def pod(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "reads"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


def configmap(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "reads"}}


async def test_concurrent_gets_and_lists_answer_while_other_resources_are_written(server):
    ctx = ssl.create_default_context(cafile=str(server.ca_file))
    headers = {"Authorization": f"Bearer {server.token}"}
    base = f"{server.url}/api/v1/namespaces/reads"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=64), headers=headers) as s:
        for i in range(20):
            async with s.post(f"{base}/pods", json=pod(f"p{i}")) as r:
                assert r.status == 201
        stop = asyncio.Event()

        async def writer() -> None:
            i = 0
            while not stop.is_set():
                async with s.post(f"{base}/configmaps", json=configmap(f"c{i}")) as r:
                    assert r.status == 201
                i += 1

        statuses: list[int] = []

        async def reader(n: int) -> None:
            for i in range(10):
                url = f"{base}/pods/p{(n + i) % 20}" if i % 5 else f"{base}/pods"
                async with s.get(url, timeout=aiohttp.ClientTimeout(total=30)) as r:
                    await r.read()
                    statuses.append(r.status)

        background = asyncio.create_task(writer())
        try:
            await asyncio.wait_for(asyncio.gather(*(reader(n) for n in range(48))), 60)
        finally:
            stop.set()
            await background
    assert statuses.count(200) == len(statuses) == 480


def test_watch_from_a_consistent_lists_revision_starts_at_once(server):
    # Writes to ConfigMaps move etcd's revision past everything the pods' watch cache has seen.
    for i in range(3):
        server.request("POST", "/api/v1/namespaces/reads/configmaps", configmap(f"w{i}"))
    status, listed = server.request("GET", "/api/v1/namespaces/reads/pods")
    assert status == 200
    rv = listed["metadata"]["resourceVersion"]
    ctx = ssl.create_default_context(cafile=str(server.ca_file))
    req = urllib.request.Request(
        f"{server.url}/api/v1/namespaces/reads/pods?watch=1&resourceVersion={rv}&timeoutSeconds=10",
        headers={"Authorization": f"Bearer {server.token}"},
    )
    with urllib.request.urlopen(req, context=ctx, timeout=5) as stream:
        assert stream.status == 200
        status, _ = server.request("POST", "/api/v1/namespaces/reads/pods", pod("after-list"))
        assert status == 201
        event = json.loads(stream.readline())
    assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "after-list"

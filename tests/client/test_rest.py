"""The REST client against a real API server: verbs, typed errors, pagination, watches; and its retry and
rate-limit behaviour (against a scripted HTTP peer where a real server cannot be made to misbehave on cue)."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiohttp import web
from yarl import URL

from pyk8s.api import errors
from pyk8s.client.flowcontrol import TokenBucket
from pyk8s.client.kubeconfig import ClientConfig
from pyk8s.client.rest import RESTClient, resolve_resource
from pyk8s.testing.etcd import free_port


def cm(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": dict(data)}


async def test_crud_and_typed_errors(client, ns):
    created = await client.create("configmaps", cm("a", x="1"), ns)
    assert created["metadata"]["uid"]
    with pytest.raises(errors.AlreadyExists) as exc:
        await client.create("configmaps", cm("a"), ns)
    assert exc.value.status()["reason"] == "AlreadyExists"
    assert exc.value.code == 409

    got = await client.get("cm", "a", ns)
    assert got["data"] == {"x": "1"}

    got["data"]["x"] = "2"
    updated = await client.update("configmaps", got, ns)
    assert updated["data"] == {"x": "2"}
    # The old resourceVersion is stale now: the update is a compare-and-swap.
    with pytest.raises(errors.Conflict):
        await client.update("configmaps", got, ns)

    await client.patch("configmaps", "a", {"data": {"y": "s"}}, ns)
    await client.patch("configmaps", "a", {"data": {"z": "m"}}, ns, patch_type="merge")
    await client.patch("configmaps", "a", [{"op": "remove", "path": "/data/x"}], ns, patch_type="json")
    assert (await client.get("configmaps", "a", ns))["data"] == {"y": "s", "z": "m"}

    with pytest.raises(errors.Invalid) as inv:
        await client.create("configmaps", cm("Not_Valid"), ns)
    causes = inv.value.details["causes"]
    assert causes[0]["field"] == "metadata.name"

    with pytest.raises(errors.Conflict):
        await client.delete("configmaps", "a", ns, preconditions={"uid": "not-the-uid"})
    await client.delete("configmaps", "a", ns)
    with pytest.raises(errors.NotFound) as nf:
        await client.get("configmaps", "a", ns)
    assert nf.value.message == 'configmaps "a" not found'


async def test_dry_run_and_subresources(client, ns):
    await client.create("configmaps", cm("dry"), ns, dry_run=True)
    with pytest.raises(errors.NotFound):
        await client.get("configmaps", "dry", ns)
    dep = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    await client.create("deployments.apps", dep, ns)
    scale = await client.get("deployments", "web", ns, subresource="scale")
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 1
    await client.patch("deploy", "web", {"spec": {"replicas": 3}}, ns, subresource="scale", patch_type="merge")
    assert (await client.get("deployments", "web", ns))["spec"]["replicas"] == 3


async def test_list_follows_continue_tokens(client, ns):
    for i in range(25):
        await client.create("configmaps", cm(f"p{i:02d}"), ns)
    pages = [p async for p in client.list_pages("configmaps", ns, limit=10)]
    assert [len(p["items"]) for p in pages] == [10, 10, 5]
    # Every page is from one snapshot: the same resourceVersion.
    assert len({p["metadata"]["resourceVersion"] for p in pages}) == 1
    whole = await client.list("configmaps", ns, limit=10)
    assert [i["metadata"]["name"] for i in whole["items"]] == [f"p{i:02d}" for i in range(25)]
    assert "continue" not in whole["metadata"]
    selected = await client.list("configmaps", ns, field_selector="metadata.name=p03")
    assert [i["metadata"]["name"] for i in selected["items"]] == ["p03"]


async def test_watch_from_resource_version(client, ns):
    first = await client.create("configmaps", cm("w"), ns)
    rv = first["metadata"]["resourceVersion"]

    async def writes():
        await client.patch("configmaps", "w", {"data": {"k": "v"}}, ns)
        await client.delete("configmaps", "w", ns)

    seen = []
    async with client.watch("configmaps", ns, resource_version=rv, timeout_seconds=30) as w:
        task = asyncio.create_task(writes())
        async for event in w:
            seen.append((event.type, event.object["metadata"]["name"]))
            if event.type == "DELETED":
                break
        await task
    assert seen == [("MODIFIED", "w"), ("DELETED", "w")]


async def test_bad_token_is_unauthorized(client_config):
    # (without the client certificate too: a valid certificate is tried first and wins, as upstream's chain)
    cfg = client_config.with_options(token="not-the-token", token_file=None, client_cert_data=None,
                                     client_key_data=None, client_cert_file=None, client_key_file=None)  # fmt: skip
    async with RESTClient(cfg) as c:
        with pytest.raises(errors.Unauthorized):
            await c.get("namespaces", "default")


def test_resolve_resource_names():
    assert resolve_resource("po").plural == "pods"
    assert resolve_resource("deploy").group == "apps"
    assert resolve_resource("events").group == ""  # core v1 wins, as in kubectl
    assert resolve_resource("events.events.k8s.io").group == "events.k8s.io"
    assert resolve_resource("hpa").version == "v2"
    with pytest.raises(errors.NotFound):
        resolve_resource("frobnicators")


def test_token_bucket_burst_then_rate():
    now = [0.0]
    bucket = TokenBucket(qps=10, burst=3, clock=lambda: now[0])
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    # Waiters queue behind each other at 1/qps apart.
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)
    now[0] = 10.0  # long idle: the bucket refills to its burst, not beyond
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() > 0


async def test_rate_limit_spaces_requests(client_config):
    async with RESTClient(client_config.with_options(qps=20, burst=5)) as c:
        start = time.monotonic()
        await asyncio.gather(*(c.request("GET", "/version") for _ in range(25)))
        # 5 at once, then 20 more at 20/s: at least a second.
        assert time.monotonic() - start >= 0.9


# -- retries, against a scripted HTTP peer --------------------------------------------------------------


class Peer:
    """An HTTP server whose answers the test scripts: a list of (status, headers) per request."""

    def __init__(self, script: list[tuple[int, dict[str, str]]]) -> None:
        self.script = script
        self.requests: list[tuple[str, str]] = []
        self.targets: list[str] = []  # as sent, not decoded
        self.port = free_port()
        self.runner: web.AppRunner | None = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.method, request.path))
        self.targets.append(request.raw_path)
        status, headers = self.script.pop(0) if self.script else (200, {})
        if status == 0:  # drop the connection without an answer
            assert request.transport is not None
            request.transport.close()
            return web.Response()
        if status >= 400:
            body = {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "message": "slow down",
                "reason": "TooManyRequests",
                "code": status,
            }
            return web.json_response(body, status=status, headers=headers)
        return web.json_response({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "x"}}, headers=headers)

    async def start(self) -> Peer:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()
        return self

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


def peer_config(port: int) -> ClientConfig:
    return ClientConfig(server=f"http://127.0.0.1:{port}", qps=-1)


async def test_request_targets_are_the_ones_yarl_makes():
    # A plain path skips yarl but must go out exactly as yarl would have made it: after the server URL's own
    # path, unquoted; one with something to quote or a dot segment still goes through yarl.
    peer = await Peer([]).start()
    try:
        for server in (f"http://127.0.0.1:{peer.port}", f"http://127.0.0.1:{peer.port}/pre/fix"):
            peer.targets.clear()
            paths = ["/api/v1/namespaces/default/configmaps/x", "/api/v1/namespaces/d/configmaps/a b~c",
                     "/api/v1/x/../y", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n-1.z"]  # fmt: skip
            async with RESTClient(ClientConfig(server=server, qps=-1)) as c:
                for path in paths:
                    await c.request("GET", path)
                await c.request("GET", paths[0], params={"resourceVersion": "0"})
            want = [URL(server + p).raw_path_qs for p in paths] + [
                URL(server + paths[0] + "?resourceVersion=0").raw_path_qs
            ]
            assert peer.targets == want
    finally:
        await peer.stop()


async def test_429_retried_after_retry_after():
    peer = await Peer([(429, {"Retry-After": "1"}), (429, {"Retry-After": "0"})]).start()
    try:
        async with RESTClient(peer_config(peer.port)) as c:
            start = time.monotonic()
            obj = await c.create("configmaps", cm("x"), "default")
            assert obj["metadata"]["name"] == "x"
            assert time.monotonic() - start >= 0.9  # the server's Retry-After was honoured
        assert [m for m, _ in peer.requests] == ["POST", "POST", "POST"]
    finally:
        await peer.stop()


async def test_429_gives_up_after_max_retries():
    peer = await Peer([(429, {"Retry-After": "0"})] * 5).start()
    try:
        async with RESTClient(peer_config(peer.port), max_retries=2) as c:
            with pytest.raises(errors.TooManyRequests):
                await c.get("configmaps", "x", "default")
        assert len(peer.requests) == 3
    finally:
        await peer.stop()


async def test_refused_connection_is_retried_for_any_verb():
    port = free_port()
    peer = Peer([])
    peer.port = port

    async def late_start():
        await asyncio.sleep(0.5)
        await peer.start()

    starter = asyncio.create_task(late_start())
    try:
        async with RESTClient(peer_config(port)) as c:
            obj = await c.create("configmaps", cm("x"), "default")
        assert obj["metadata"]["name"] == "x"
        assert peer.requests == [("POST", "/api/v1/namespaces/default/configmaps")]
    finally:
        await starter
        await peer.stop()


async def test_dropped_connection_retries_reads_but_not_writes():
    peer = await Peer([(0, {}), (0, {})]).start()
    try:
        async with RESTClient(peer_config(peer.port)) as c:
            # A POST the server may have acted on is not sent twice.
            with pytest.raises(ConnectionError):
                await c.create("configmaps", cm("x"), "default")
            assert [m for m, _ in peer.requests] == ["POST"]
            # A GET is safe to repeat.
            got = await c.get("configmaps", "x", "default")
            assert got["metadata"]["name"] == "x"
            assert [m for m, _ in peer.requests] == ["POST", "GET", "GET"]
    finally:
        await peer.stop()

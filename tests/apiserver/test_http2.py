"""HTTP/2 beside HTTP/1.1 on the secure port: kubectl (client-go) negotiates it and authenticates with its
client certificate; many requests share one connection; a watch is a long-lived stream, and one whose reader
does not keep up holds up only itself; `--disable-http2-serving` turns it off."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from urllib.parse import urlsplit

import pytest

from pyk8s.testing.cluster import APIServerProcess, kubectl_binary
from pyk8s.testing.h2_client import H2Client


def client_for(server: APIServerProcess, **kw) -> H2Client:
    url = urlsplit(server.url)
    pki = server.data_dir / "pki"
    cert = (str(pki / "admin.crt"), str(pki / "admin.key"))
    return H2Client(url.hostname or "", url.port or 0, str(server.ca_file), cert=cert, **kw)


def test_kubectl_talks_http2_with_its_client_certificate(cluster):
    env = {"HOME": str(cluster.home), "KUBECONFIG": str(cluster.kubeconfig), "PATH": os.environ.get("PATH", ""),
           "GODEBUG": "http2debug=1"}  # fmt: skip
    res = subprocess.run([kubectl_binary(), "get", "namespaces", "-o", "name"], capture_output=True, text=True,
                         env=env, timeout=60)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "namespace/default" in res.stdout
    assert "http2: Transport" in res.stderr  # Go's HTTP/2 transport carried it


def test_requests_share_one_connection_and_a_slow_watcher_stalls_only_itself(cluster, ns):
    async def scenario() -> None:
        async with client_for(cluster, initial_window=4096) as c:
            assert c.alpn == "h2"
            base = f"/api/v1/namespaces/{ns}/configmaps"
            # A watcher that does not read: its stream may hold 4 KiB in flight, no more.
            slow = c.open("GET", f"{base}?watch=true", read=False)
            body = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"x": "y" * 1000}}
            creates = [c.request("POST", base, json.dumps({**body, "metadata": {"name": f"c{i}"}}).encode(),
                                 {"content-type": "application/json"}) for i in range(20)]  # fmt: skip
            for s in await asyncio.gather(*creates):
                assert s.status == 201, s.body
            # The watcher's stream is full, yet 50 more requests on the same connection are answered.
            gets = await asyncio.wait_for(
                asyncio.gather(*(c.request("GET", f"{base}/c{i % 20}") for i in range(50))), 30
            )
            assert all(s.status == 200 and json.loads(s.body)["metadata"]["name"] for s in gets)
            await asyncio.sleep(0.2)
            assert slow.status == 200 and 0 < slow.received <= 4096
            # Once it reads, the rest of its events arrive.
            c.resume(slow)
            for _ in range(100):
                if slow.body.count(b'"type":"ADDED"') >= 20:
                    break
                slow.arrived.clear()
                await asyncio.wait_for(slow.arrived.wait(), 10)
                c.resume(slow)
            assert slow.body.count(b'"type":"ADDED"') == 20
            c.cancel(slow)
            # The connection carries on after the watch is cancelled.
            assert (await c.request("GET", "/version")).status == 200

    asyncio.run(scenario())


def test_protobuf_and_errors_over_http2(cluster, ns):
    async def scenario() -> None:
        async with client_for(cluster) as c:
            s = await c.request("GET", f"/api/v1/namespaces/{ns}/pods/missing")
            assert s.status == 404 and json.loads(s.body)["reason"] == "NotFound"
            s = await c.request("GET", "/api/v1/namespaces", headers={"accept": "application/vnd.kubernetes.protobuf"})
            assert s.status == 200 and s.body.startswith(b"k8s\x00")
            assert s.headers["content-type"] == "application/vnd.kubernetes.protobuf"

    asyncio.run(scenario())


@pytest.fixture(scope="module")
def http1_only():
    s = APIServerProcess(extra_args=("--disable-http2-serving",)).start()
    yield s
    s.cleanup()


def test_http2_can_be_turned_off(http1_only):
    async def scenario() -> str:
        async with client_for(http1_only) as c:
            return c.alpn

    assert asyncio.run(scenario()) != "h2"  # ALPN offers HTTP/1.1 only
    res = http1_only.kubectl("get", "namespaces", "-o", "name")
    assert res.returncode == 0 and "namespace/default" in res.stdout


def test_malformed_http2_is_refused_and_the_server_carries_on(cluster):
    import ssl

    url = urlsplit(cluster.url)

    async def garbage() -> bytes:
        ctx = ssl.create_default_context(cafile=str(cluster.ca_file))
        ctx.set_alpn_protocols(["h2"])
        reader, writer = await asyncio.open_connection(url.hostname, url.port, ssl=ctx)
        writer.write(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x01\x00\x00\x00\x00\x00\x00x")  # DATA on stream 0
        data = await asyncio.wait_for(reader.read(), 10)  # the server says GOAWAY and closes
        writer.close()
        return data

    data, types = asyncio.run(garbage()), []
    while len(data) >= 9:  # the frames the server sent: 24-bit length, type, flags, stream
        length = int.from_bytes(data[:3], "big")
        types.append(data[3])
        data = data[9 + length :]
    assert types[-1] == 7  # GOAWAY, then the server closed the connection

    async def bad_headers() -> None:
        async with client_for(cluster) as c:
            c.conn.config.validate_outbound_headers = False
            c.conn.config.normalize_outbound_headers = False
            s = c.open("GET", "/version", headers={"Bad Header": "x"})
            await asyncio.wait_for(s.done.wait(), 10)
            assert s.status == 0  # reset, not answered
        async with client_for(cluster) as c:
            assert (await c.request("GET", "/version")).status == 200

    asyncio.run(bad_headers())

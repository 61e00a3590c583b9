"""The REST client's HTTP/1.1 transport (pyk8s.client.transport): against a real API server (TLS, client
certificates, keep-alive, concurrency, query quoting, typed errors), and against scripted loopback servers for
what a real server does not do on cue (chunked and close-delimited bodies, closing idle connections or hanging up
mid-answer, Connection: close, 429, malformed answers)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

import aiohttp
import pytest
import uvloop

from pyk8s.api import errors
from pyk8s.client.kubeconfig import ClientConfig
from pyk8s.client.rest import RESTClient
from pyk8s.client.transport import BadResponse, HTTPTransport
from pyk8s.testing.etcd import free_port


def cm(name: str, labels: dict[str, str] | None = None, **data: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels or {}},
        "data": dict(data),
    }


# -- against the API server ------------------------------------------------------------------------------------


async def test_crud_round_trip(client, ns):
    created = await client.create("configmaps", cm("a", x="1"), ns)
    assert created["metadata"]["uid"]
    got = await client.get("configmaps", "a", ns)
    assert got["data"] == {"x": "1"}
    got["data"]["x"] = "2"
    updated = await client.update("configmaps", got, ns)
    assert updated["data"] == {"x": "2"}
    patched = await client.patch("configmaps", "a", {"data": {"y": "3"}}, ns)
    assert patched["data"] == {"x": "2", "y": "3"}
    listed = await client.list("configmaps", ns)
    assert [o["metadata"]["name"] for o in listed["items"] if o["metadata"]["name"] == "a"] == ["a"]
    await client.delete("configmaps", "a", ns)
    with pytest.raises(errors.NotFound):
        await client.get("configmaps", "a", ns)
    # All of it went over the transport, on one connection: the aiohttp session was never even made.
    assert client._session is None
    assert client.transport.opened == 1


async def test_not_found_is_typed_with_the_status(client, ns):
    with pytest.raises(errors.NotFound) as exc:
        await client.get("configmaps", "nope", ns)
    assert exc.value.code == 404
    status = exc.value.status()
    assert status["kind"] == "Status"
    assert status["reason"] == "NotFound"
    assert status["details"]["name"] == "nope"


async def test_sequential_requests_reuse_one_connection(client):
    for _ in range(20):
        assert "gitVersion" in await client.server_version()
    assert client.transport.opened == 1
    assert client.transport.idle_connections == 1


async def test_concurrent_creates(client, ns):
    objs = await asyncio.gather(*(client.create("configmaps", cm(f"c{i}"), ns) for i in range(200)))
    assert sorted(o["metadata"]["name"] for o in objs) == sorted(f"c{i}" for i in range(200))
    transport = client.transport
    assert 1 <= transport.opened <= 200
    assert transport.idle_connections == transport.open_connections == transport.opened
    # Later requests reuse those connections.
    await asyncio.gather(*(client.get("configmaps", f"c{i}", ns) for i in range(50)))
    assert transport.opened <= 200


async def test_selectors_are_quoted_as_before(client, ns):
    await client.create("configmaps", cm("x", {"a": "x", "b": "c"}), ns)
    await client.create("configmaps", cm("y", {"a": "y", "b": "d"}), ns)
    await client.create("configmaps", cm("z", {"a": "z"}), ns)
    by_labels = await client.list("configmaps", ns, label_selector="a in (x, y),b!=c")
    assert [o["metadata"]["name"] for o in by_labels["items"]] == ["y"]
    by_field = await client.list("configmaps", ns, field_selector="metadata.name=x")
    assert [o["metadata"]["name"] for o in by_field["items"]] == ["x"]


async def test_client_certificate_authenticates(client_config, ns):
    # The admin kubeconfig authenticates with a client certificate, and nothing else.
    assert client_config.client_cert_data and client_config.client_key_data
    assert not client_config.token and not client_config.token_file
    async with RESTClient(client_config) as c:
        await c.create("configmaps", cm("cert"), ns)
    anonymous = client_config.with_options(client_cert_data=None, client_key_data=None)
    async with RESTClient(anonymous) as c:
        with pytest.raises((errors.Unauthorized, errors.Forbidden)):
            await c.get("configmaps", "cert", ns)


def test_round_trip_under_uvloop(client_config, ns):
    # Our components run uvloop, whose TLS transport is its own.
    async def main() -> None:
        async with RESTClient(client_config) as c:
            await asyncio.gather(*(c.create("configmaps", cm(f"u{i}"), ns) for i in range(20)))
            listed = await c.list("configmaps", ns)
            assert len(listed["items"]) >= 20
            assert c.transport.opened <= 20

    uvloop.run(main())


async def test_close_closes_the_connections(client_config):
    c = RESTClient(client_config)
    await asyncio.gather(*(c.server_version() for _ in range(5)))
    assert c.transport.open_connections >= 1
    await c.close()
    assert c.transport.open_connections == 0
    # The client still works after close (as with aiohttp: a new pool).
    assert "gitVersion" in await c.server_version()
    await c.close()


# -- against scripted servers ------------------------------------------------------------------------------------


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[None]]


class Server:
    """A loopback HTTP peer: `handler(reader, writer, n)` serves its n-th connection (from 0); the server counts
    connections and requests (method, target)."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.requests: list[tuple[str, str]] = []
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Server:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        n = self.connections
        self.connections += 1
        try:
            await self.handler(reader, writer, n)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def read_request(self, reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str], bytes] | None:
        """The next request on a connection, or None when the client closed it."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        self.requests.append((method, target))
        return method, target, headers, body

    def client(self, **options: object) -> RESTClient:
        return RESTClient(ClientConfig(server=f"http://127.0.0.1:{self.port}", qps=-1), **options)  # type: ignore[arg-type]


OBJ = b'{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x"}}'


def answer(body: bytes = OBJ, status: str = "200 OK", extra: str = "") -> bytes:
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode()
        + body
    )


def keep_answering(server_ref: list[Server]) -> Handler:
    """A handler that answers every request on the connection with OBJ."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        while await server_ref[0].read_request(reader) is not None:
            writer.write(answer())

    return handler


def scripted(handler_factory: Callable[[list[Server]], Handler]) -> Server:
    """A Server whose handler, made by `handler_factory`, can reach the server (its requests, read_request)."""
    ref: list[Server] = []
    server = Server(handler_factory(ref))
    ref.append(server)
    return server


async def test_chunked_answer_with_extensions_and_trailers():
    big = b'{"kind":"List","items":[' + b",".join(b'{"n":%d}' % i for i in range(3000)) + b"]}"

    def factory(ref: list[Server]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
            while await ref[0].read_request(reader) is not None:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
                # Chunks of odd sizes, some with an extension, written in pieces that split lines and CRLFs.
                out = bytearray()
                for i in range(0, len(big), 7001):
                    piece = big[i : i + 7001]
                    ext = b";name=value" if i % 2 else b""
                    out += b"%x%s\r\n%s\r\n" % (len(piece), ext, piece)
                out += b"0\r\nX-Trailer: yes\r\n\r\n"
                for i in range(0, len(out), 4093):
                    writer.write(out[i : i + 4093])
                    await writer.drain()
                    await asyncio.sleep(0)

        return handler

    async with scripted(factory) as server, server.client() as c:
        for _ in range(2):
            listed = await c.request("GET", "/api/v1/configmaps")
            assert len(listed["items"]) == 3000
        assert server.connections == 1  # a chunked answer leaves the connection reusable


async def test_answer_delimited_by_close():
    def factory(ref: list[Server]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
            await ref[0].read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + OBJ[:20])
            await writer.drain()
            await asyncio.sleep(0.05)
            writer.write(OBJ[20:])
            await writer.drain()
            writer.close()

        return handler

    async with scripted(factory) as server, server.client() as c:
        assert (await c.request("GET", "/x"))["metadata"]["name"] == "x"
        assert (await c.request("GET", "/x"))["metadata"]["name"] == "x"
        assert server.connections == 2


async def test_idle_connection_closed_by_the_server_is_not_reused():
    def factory(ref: list[Server]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
            await ref[0].read_request(reader)
            writer.write(answer())  # keep-alive, as far as the headers say
            await writer.drain()
            # ... then the server closes it, as a server's idle timeout does

        return handler

    async with scripted(factory) as server, server.client() as c:
        await c.create("configmaps", {"metadata": {"name": "x"}}, "default")
        await asyncio.sleep(0.1)
        assert c.transport.idle_connections == 0  # dropped from the pool when the server closed it
        # A POST is safe: it goes out on a new connection.
        await c.create("configmaps", {"metadata": {"name": "x"}}, "default")
        assert server.connections == 2
        assert [m for m, _ in server.requests] == ["POST", "POST"]


async def test_reused_connection_that_dies_unanswered_resends_only_reads():
    # The race Go's net/http guards against: the server closes an idle connection just as a request goes out on
    # it. Here the server reads the second request on a connection and hangs up without an answer.
    def factory(ref: list[Server]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
            await ref[0].read_request(reader)
            writer.write(answer())
            await writer.drain()
            await ref[0].read_request(reader)

        return handler

    async with scripted(factory) as server, server.client(max_retries=0) as c:
        await c.request("GET", "/a")
        # A GET is sent once more at once, on a new connection (no retry of the client's own is left).
        assert (await c.request("GET", "/b"))["metadata"]["name"] == "x"
        assert server.requests == [("GET", "/a"), ("GET", "/b"), ("GET", "/b")]
        assert server.connections == 2
        # A POST the server may have acted on is not.
        with pytest.raises(ConnectionError, match=r"POST /api/v1/namespaces/default/configmaps: .*without answering"):
            await c.create("configmaps", {"metadata": {"name": "x"}}, "default")
        assert [m for m, _ in server.requests][3:] == ["POST"]


async def test_new_connection_that_dies_is_not_resent_by_the_transport():
    def factory(ref: list[Server]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
            await ref[0].read_request(reader)

        return handler

    async with scripted(factory) as server, server.client(max_retries=2) as c:
        with pytest.raises(ConnectionError):
            await c.create("configmaps", {"metadata": {"name": "x"}}, "default")
        assert [m for m, _ in server.requests] == ["POST"]
        # A GET is retried by the client's own rule (max_retries), not more.
        with pytest.raises(ConnectionError, match="GET /version: the server closed the connection without answering"):
            await c.request("GET", "/version")
        assert [m for m, _ in server.requests] == ["POST", "GET", "GET", "GET"]


async def test_closed_mid_answer_retries_reads_but_not_writes():
    def factory(ref: list[Server]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
            while await ref[0].read_request(reader) is not None:
                if len(ref[0].requests) in (1, 2):  # the first two answers break off halfway
                    writer.write(answer()[:-10])
                    await writer.drain()
                    return
                writer.write(answer())

        return handler

    async with scripted(factory) as server, server.client() as c:
        with pytest.raises(ConnectionError, match="in the middle of its answer"):
            await c.create("configmaps", {"metadata": {"name": "x"}}, "default")
        assert [m for m, _ in server.requests] == ["POST"]
        assert (await c.get("configmaps", "x", "default"))["metadata"]["name"] == "x"
        assert [m for m, _ in server.requests] == ["POST", "GET", "GET"]


async def test_connection_close_is_honoured():
    def factory(ref: list[Server]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
            # The server says it closes, but leaves the socket open: the client must not reuse it anyway.
            while await ref[0].read_request(reader) is not None:
                writer.write(answer(extra="Connection: close\r\n"))

        return handler

    async with scripted(factory) as server, server.client() as c:
        for _ in range(3):
            await c.request("GET", "/x")
        assert server.connections == 3
        assert c.transport.idle_connections == 0


async def test_429_is_retried_after_retry_after():
    def factory(ref: list[Server]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
            while await ref[0].read_request(reader) is not None:
                if len(ref[0].requests) == 1:
                    status = (
                        b'{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429}'
                    )
                    writer.write(answer(status, "429 Too Many Requests", "Retry-After: 1\r\n"))
                else:
                    writer.write(answer())

        return handler

    async with scripted(factory) as server, server.client() as c:
        start = time.monotonic()
        await c.create("configmaps", {"metadata": {"name": "x"}}, "default")
        assert time.monotonic() - start >= 0.9
        assert [m for m, _ in server.requests] == ["POST", "POST"]
        assert server.connections == 1


async def test_no_body_answers_and_interim_answers():
    def factory(ref: list[Server]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
            while (req := await ref[0].read_request(reader)) is not None:
                method, target, _, _ = req
                if method == "HEAD":  # announces a length but, being HEAD, sends no body
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n")
                elif target == "/204":
                    writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
                elif target == "/304":
                    writer.write(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n")
                else:
                    writer.write(
                        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" + answer()
                    )

        return handler

    async with scripted(factory) as server:
        transport = HTTPTransport(f"http://127.0.0.1:{server.port}", None)
        try:
            head = await transport.request("HEAD", "/", [])
            assert (head.status, head.body, head.headers["content-length"]) == (200, b"", "1234")
            assert (await transport.request("GET", "/204", [])).status == 204
            assert (await transport.request("GET", "/304", [])).body == b""
            final = await transport.request("GET", "/", [])
            assert (final.status, final.body) == (200, OBJ)
            assert server.connections == 1
        finally:
            await transport.close()


async def test_request_bytes_are_one_write_with_host_and_length():
    seen: list[bytes] = []

    def factory(ref: list[Server]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
            seen.append(await reader.read(65536))
            writer.write(answer())
            await writer.drain()

        return handler

    async with scripted(factory) as server, server.client() as c:
        await c.create("configmaps", {"metadata": {"name": "x"}}, "default")
    raw = seen[0]
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /api/v1/namespaces/default/configmaps HTTP/1.1"
    fields = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    assert fields["host"] == f"127.0.0.1:{server.port}"
    assert fields["content-length"] == str(len(body))
    assert fields["content-type"] == "application/json"
    assert fields["accept"] == "application/json"
    assert fields["user-agent"].startswith("pyk8s/")
    assert "accept-encoding" not in fields  # nothing compressed comes back


async def test_query_is_quoted_exactly_as_aiohttp_did():
    targets: list[str] = []

    def factory(ref: list[Server]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
            while (req := await ref[0].read_request(reader)) is not None:
                targets.append(req[1])
                writer.write(answer(b'{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[]}'))

        return handler

    params = {"labelSelector": "a in (x, y),b!=c,é=ü/v", "fieldSelector": "metadata.name=x", "limit": "5"}
    async with scripted(factory) as server:
        async with server.client() as c:
            await c.list("configmaps", "default", label_selector=params["labelSelector"],
                         field_selector=params["fieldSelector"], limit=5)  # fmt: skip
        async with (
            aiohttp.ClientSession() as s,
            s.get(f"http://127.0.0.1:{server.port}/api/v1/namespaces/default/configmaps", params=params) as resp,
        ):
            await resp.read()
    assert targets[0] == targets[1]
    assert "a+in+(x,+y),b!%3Dc" in targets[0]


async def test_connect_refused_is_retried_then_raised():
    port = free_port()
    async with RESTClient(ClientConfig(server=f"http://127.0.0.1:{port}", qps=-1), max_retries=2) as c:
        start = time.monotonic()
        with pytest.raises(
            ConnectionError, match=f"POST /api/v1/namespaces/default/configmaps: cannot connect to 127.0.0.1:{port}"
        ):
            await c.create("configmaps", {"metadata": {"name": "x"}}, "default")
        assert time.monotonic() - start >= 0.1  # two retries, waiting between them


async def test_timeout_fails_a_write_and_retries_a_read():
    def factory(ref: list[Server]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
            while await ref[0].read_request(reader) is not None:
                if len(ref[0].requests) > 1:  # the first request gets no answer
                    writer.write(answer())

        return handler

    async with scripted(factory) as server:
        config = ClientConfig(server=f"http://127.0.0.1:{server.port}", qps=-1, timeout=0.3)
        async with RESTClient(config) as c:
            start = time.monotonic()
            with pytest.raises(ConnectionError, match="POST"):
                await c.create("configmaps", {"metadata": {"name": "x"}}, "default")
            assert time.monotonic() - start < 2
            assert (await c.get("configmaps", "x", "default"))["metadata"]["name"] == "x"
            assert [m for m, _ in server.requests] == ["POST", "GET"]


@pytest.mark.parametrize(
    "bad",
    [
        b"HTTP/2 200 OK\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nX: a\r\n folded\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\nX: y\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n",
    ],
)
async def test_malformed_answers_fail_the_request(bad):
    def factory(ref: list[Server]) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
            await ref[0].read_request(reader)
            writer.write(bad)
            await writer.drain()
            await asyncio.sleep(1)

        return handler

    async with scripted(factory) as server:
        transport = HTTPTransport(f"http://127.0.0.1:{server.port}", None)
        try:
            with pytest.raises(BadResponse):
                await transport.request("GET", "/", [])
            assert transport.idle_connections == 0
        finally:
            await transport.close()


async def test_long_idle_connections_are_not_reused():
    async with scripted(keep_answering) as server, server.client() as c:
        c.transport.idle_limit = 0.05
        await c.request("GET", "/x")
        await asyncio.sleep(0.1)
        await c.request("GET", "/x")
        assert server.connections == 2
        await c.request("GET", "/x")
        assert server.connections == 2


async def test_newline_in_a_header_value_is_refused():
    async with scripted(keep_answering) as server:
        config = ClientConfig(server=f"http://127.0.0.1:{server.port}", qps=-1, user_agent="x\r\nEvil: 1")
        async with RESTClient(config) as c:
            with pytest.raises(ValueError, match="newline"):
                await c.request("GET", "/x")
        assert server.requests == []


def test_a_client_moves_on_after_its_loop_closed():
    server_conns: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server_conns.append(1)
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while await reader.readuntil(b"\r\n\r\n"):
                writer.write(answer())

    async def start() -> asyncio.Server:
        return await asyncio.start_server(serve, "127.0.0.1", port)

    port = free_port()
    client = RESTClient(ClientConfig(server=f"http://127.0.0.1:{port}", qps=-1))

    async def use() -> None:
        server = await start()
        try:
            await client.request("GET", "/x")
        finally:
            server.close()

    asyncio.run(use())  # leaves its connection open: the loop closes under it
    asyncio.run(use())
    assert len(server_conns) == 2

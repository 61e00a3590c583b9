"""Which connections the API server's listeners keep: how long a peer may take to say what it wants, and how many
connections may be waiting to.

kube-apiserver's `http.Server` (apiserver/pkg/server/secure_serving.go) gives a connection `ReadHeaderTimeout` =
32 s ("just shy of requestTimeoutUpperBound") to send its request header, and Go's server derives the TLS
handshake's deadline from the same value: a connection that has not finished its handshake 32 s after it was
accepted, or its first request header 32 s after the handshake, is closed. Idle keep-alive connections close
after `IdleTimeout` = 90 s. aiohttp has no such limit on the header (its only timer is the keep-alive one), so
this module adds it: `READ_HEADER_TIMEOUT` for the handshake, then again for the first request's header; after
that aiohttp's keep-alive timer (`IDLE_TIMEOUT`) closes a connection that sends no complete request.

It also bounds what unauthenticated peers can hold, which upstream leaves to the file limit. A connection is
*pending* from the moment it is accepted until one of its requests is authenticated. At most `max_pending`
connections are pending at a time: accepting one more closes the oldest pending one. Connections of
authenticated clients are never counted and never closed for this. So a flood of idle or slow connections holds
at most `max_pending` descriptors, the rest stay for authenticated clients, watches and storage, and a new
client — the admin's kubectl — still gets in: its connection is the newest, and it authenticates within
milliseconds. A response to a request that was not authenticated (a 401, or an anonymous request to a public
path such as /healthz) closes its still-pending connection, so one request does not buy an unauthenticated peer
a keep-alive connection.

How: the listener's protocol factory wraps each accepted socket in a `_Connection`, which sits below TLS (it
hands the raw bytes to the SSL protocol, which hands HTTP to aiohttp's request handler), so it sees every
connection from accept to close, including those that never finish their handshake.
"""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import logging
import ssl
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from .http2 import ALPNSwitch

log = logging.getLogger("pyk8s.apiserver")

READ_HEADER_TIMEOUT = 32.0  # upstream: secure_serving.go, http.Server.ReadHeaderTimeout (and the TLS handshake)
IDLE_TIMEOUT = 90.0  # upstream: secure_serving.go, http.Server.IdleTimeout ("matches http.DefaultTransport")
# The default cap on pending connections: half the open-file limit, so that the other half is left for
# authenticated clients, watches, storage and files; at most this many (each costs about 50 KiB of memory, most
# of it the TLS layer's buffers, so the ceiling is some 200 MiB).
MAX_PENDING_CEILING = 4096
_WARN_EVERY = 60.0  # seconds between warnings that the cap is closing connections


def default_max_pending(nofile_limit: int) -> int:
    """The default bound on pending connections for a process allowed `nofile_limit` open files."""
    return max(16, min(nofile_limit // 2, MAX_PENDING_CEILING))


def _ssl_protocol_class(loop: asyncio.AbstractEventLoop) -> Any:
    """The SSL protocol the loop itself would put on a TLS connection (uvloop has its own, in C)."""
    try:
        import uvloop
        import uvloop.loop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        return asyncio.sslproto.SSLProtocol  # type: ignore[attr-defined]
    return uvloop.loop.SSLProtocol if isinstance(loop, uvloop.Loop) else asyncio.sslproto.SSLProtocol  # type: ignore[attr-defined]


class PendingConnections:
    """The connections of one API server that have not yet carried an authenticated request (see the module
    docstring); shared by its listeners, as the file limit is."""

    def __init__(self, *, max_pending: int, header_timeout: float = READ_HEADER_TIMEOUT) -> None:
        if max_pending < 1:
            raise ValueError("max_pending must be at least 1")
        self.max_pending = max_pending
        self.header_timeout = header_timeout
        self._pending: dict[_Connection, None] = {}  # in accept order: the first is the oldest
        self._by_handler: dict[object, _Connection] = {}  # aiohttp's request handler -> its pending connection
        self.timed_out = 0  # closed for not finishing the handshake or the header in time
        self.evicted = 0  # closed to make room under max_pending
        self._warned_at = -_WARN_EVERY

    def __len__(self) -> int:
        return len(self._pending)

    def protocol_factory(
        self, make_handler: Callable[[], asyncio.Protocol], ssl_context: ssl.SSLContext | None
    ) -> Callable[[], asyncio.BaseProtocol]:
        """The protocol factory for a listener (`loop.create_server` without `ssl`: TLS is set up here)."""
        loop = asyncio.get_running_loop()
        ssl_protocol = _ssl_protocol_class(loop) if ssl_context is not None else None

        def make() -> asyncio.BaseProtocol:
            handler = make_handler()
            if ssl_protocol is None:
                return _PlainConnection(self, loop, handler, handler)  # no TLS: the handler reads the socket
            handshake: asyncio.Future[None] = loop.create_future()
            # Under TLS, ALPN picks HTTP/2 or HTTP/1.1 (aiohttp's handler) once the handshake is done.
            app = ALPNSwitch(handler, make_handler, self._rekey)  # type: ignore[arg-type]
            tls = ssl_protocol(
                loop, app, ssl_context, handshake, server_side=True, ssl_handshake_timeout=self.header_timeout
            )
            return _TLSConnection(self, loop, handler, tls, handshake)

        return make

    def request_seen(self, handler: object, authenticated: bool) -> bool:
        """A request arrived on the connection of aiohttp's request handler `handler` (so its header is complete);
        an authenticated one ends the connection's pending state. Returns whether the connection is still
        pending."""
        conn = self._by_handler.get(handler)
        if conn is None:
            return False
        if authenticated:
            self._forget(conn)  # (which ends the header deadline too)
            return False
        conn.header_complete()
        return True

    def _rekey(self, handler: object, replacement: object) -> None:
        """An HTTP/2 connection stands in for the HTTP/1.1 handler made for it: requests name it instead."""
        conn = self._by_handler.pop(handler, None)
        if conn is not None:
            conn.handler = replacement
            self._by_handler[replacement] = conn

    def abort_all(self) -> None:
        """Close every pending connection (the server is stopping)."""
        for conn in list(self._pending):
            conn.abort()

    def _accepted(self, conn: _Connection) -> None:
        self._pending[conn] = None
        self._by_handler[conn.handler] = conn
        while len(self._pending) > self.max_pending:
            self.evicted += 1
            now = time.monotonic()
            if now - self._warned_at >= _WARN_EVERY:
                self._warned_at = now
                log.warning(
                    "%d connections have not authenticated (the limit): closing the oldest of them; %d closed so far",
                    self.max_pending,
                    self.evicted,
                )
            next(iter(self._pending)).abort()

    def _forget(self, conn: _Connection) -> None:
        if conn in self._pending:
            del self._pending[conn]
            del self._by_handler[conn.handler]
        conn.header_complete()


class _Connection:
    """One accepted socket, from accept to close: passes everything on to `inner` (what the transport would
    otherwise talk to: the SSL protocol, or aiohttp's request handler) and closes it if it is too slow."""

    def __init__(self, registry: PendingConnections, loop: asyncio.AbstractEventLoop, handler: Any, inner: Any) -> None:
        self.registry = registry
        self.loop = loop
        self.handler = handler
        self.inner = inner
        self.transport: asyncio.BaseTransport | None = None
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self._timer = self.loop.call_later(self.registry.header_timeout, self._too_slow)
        self.inner.connection_made(transport)
        self.registry._accepted(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.registry._forget(self)
        self.inner.connection_lost(exc)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()  # type: ignore[no-any-return]

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def header_complete(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def abort(self) -> None:
        self.registry._forget(self)
        if self.transport is not None and not self.transport.is_closing():
            self.transport.abort()  # type: ignore[attr-defined]

    def _too_slow(self) -> None:
        self._timer = None
        self.registry.timed_out += 1
        self.abort()


class _PlainConnection(_Connection, asyncio.Protocol):
    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)


class _TLSConnection(_Connection, asyncio.BufferedProtocol):
    def __init__(
        self,
        registry: PendingConnections,
        loop: asyncio.AbstractEventLoop,
        handler: Any,
        inner: Any,
        handshake: asyncio.Future[None],
    ) -> None:
        super().__init__(registry, loop, handler, inner)
        handshake.add_done_callback(self._handshake_done)

    def get_buffer(self, sizehint: int) -> Any:
        return self.inner.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> None:
        self.inner.buffer_updated(nbytes)

    def _handshake_done(self, fut: asyncio.Future[None]) -> None:
        failed = fut.cancelled() or fut.exception() is not None  # (retrieving it keeps asyncio from logging it)
        if failed:
            self.abort()  # the SSL protocol closes the socket too; this makes sure the connection is forgotten
        elif self._timer is not None:
            # Handshake done: the request header gets a deadline of its own, as in Go's server.
            self._timer.cancel()
            self._timer = self.loop.call_later(self.registry.header_timeout, self._too_slow)


class GuardedSite(web.BaseSite):
    """A TCP listener whose connections go through `PendingConnections` (aiohttp's TCPSite, plus that)."""

    __slots__ = ("_host", "_pending", "_port")

    def __init__(
        self,
        runner: web.BaseRunner,
        host: str,
        port: int,
        pending: PendingConnections,
        *,
        ssl_context: ssl.SSLContext | None = None,
        backlog: int = 128,
    ) -> None:
        super().__init__(runner, ssl_context=ssl_context, backlog=backlog)
        self._host = host
        self._port = port
        self._pending = pending

    @property
    def name(self) -> str:
        scheme = "https" if self._ssl_context else "http"
        return f"{scheme}://{self._host}:{self.port}"

    @property
    def port(self) -> int:
        """The port bound (the one asked for until started)."""
        if self._server is not None and self._server.sockets:  # type: ignore[attr-defined]
            return int(self._server.sockets[0].getsockname()[1])  # type: ignore[attr-defined]
        return self._port

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self._pending.protocol_factory(server, self._ssl_context),
            self._host,
            self._port,
            backlog=self._backlog,
            reuse_address=True,
        )

"""HTTP/1.1 for the REST client's unary requests: a pool of keep-alive connections to one API server and a
small, strict response parser, on asyncio protocols.

Why not aiohttp: its client costs about twice the CPU per request that this one does (bench/client_cost.py:
some 230 against 140 µs for a GET, 300 against 150 µs for a 1 KB POST), and every component pays it on every
write (the scheduler's binding and Event per pod, controllers' updates, kubelets' lease renewals). This
transport does only what a Kubernetes client's request-and-answer needs:

- `HTTPTransport.request` sends one request and returns the whole `Response`: status, headers (names in lower
  case), body. The request goes out in one write: request line, headers and body in one bytes object.
- Connections are kept alive and reused, most recently used first (so a quiet client keeps few of them
  warm); there is no cap on their number (each concurrent request holds one). One that sat idle for longer
  than `IDLE_LIMIT` is closed instead of reused, and one the server closes while idle leaves the pool then.
- The response parser takes the status line, header fields, and a body framed by Content-Length or chunked
  transfer coding (trailer fields are read and dropped), or running until the server closes (HTTP/1.0 style).
  HEAD answers and 1xx/204/304 have no body; interim 1xx answers are skipped. `Connection: close` (or an
  HTTP/1.0 answer) means the connection is not reused. Anything else malformed fails the request with
  `BadResponse` and closes the connection.
- A request that fails on a reused connection before any answer arrived is sent once more on a new
  connection when that cannot do harm (see `HTTPTransport.request`, after Go's net/http).
- Timeouts: `connect_timeout` for the TCP and TLS handshakes, `timeout` (if any) for the whole request.

What it leaves out: compression (it sends no Accept-Encoding, so servers answer uncompressed), streaming
bodies (watches stay on aiohttp), proxies, pipelining, `Expect: 100-continue`, protocol upgrades.

Errors are `ConnectionError`s: `ConnectError` when no connection could be made (the server never saw the
request), `ConnectionClosed` when the connection failed during the exchange, `BadResponse` when the answer
is not HTTP/1.1; and `TimeoutError` when the request's time ran out.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable
from typing import cast

from yarl import URL

CONNECT_TIMEOUT = 10.0  # seconds for TCP and TLS handshakes, as the aiohttp client's sock_connect was
# A connection idle for longer is closed, not reused (aiohttp's client keepalive_timeout): far below the
# servers' idle timeouts (kube-apiserver and ours: 90 s), so that a server's closing an idle connection
# does not race a request sent on it.
IDLE_LIMIT = 15.0
MAX_HEAD = 64 * 1024  # bytes of status line and header fields, and of trailer fields, we accept in an answer
_MAX_LINE = 4096  # bytes of a chunk-size line
# Methods whose request may be sent again when it failed before any answer (Go: Request.isReplayable).
_REPLAYABLE = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
# Methods that define a body: sent with Content-Length: 0 when they have none.
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})

# Where a connection's parser is.
_IDLE, _HEAD, _LENGTH, _CHUNK_SIZE, _CHUNK_DATA, _TRAILERS, _UNTIL_CLOSE = range(7)


class ConnectError(ConnectionError):
    """No connection to the server could be made (refused, unreachable, timed out, TLS handshake failed):
    no byte of the request was sent."""


class ConnectionClosed(ConnectionError):
    """The connection closed or broke before the whole answer arrived."""


class BadResponse(ConnectionError):
    """The server's answer is not valid HTTP/1.1."""


class Response:
    """A complete answer: status code, reason phrase, header fields (names in lower case; repeated fields
    joined with ", "), and body."""

    __slots__ = ("body", "headers", "reason", "status")

    def __init__(self, status: int, reason: str, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body

    def __repr__(self) -> str:
        return f"<Response {self.status} {self.reason} {len(self.body)} bytes>"


class _Connection(asyncio.Protocol):
    """One connection and the parser of the answer to its current request."""

    __slots__ = (
        "_body", "_buf", "_head_request", "_headers", "_keep_alive", "_pool", "_reason", "_remaining", "_state",
        "_status", "_waiter", "closed", "closed_here", "idle_since", "nothing_written", "response_started", "reusable", "transport",
    )  # fmt: skip

    def __init__(self, pool: HTTPTransport) -> None:
        self._pool = pool
        self.transport: asyncio.Transport | None = None
        self.closed = False  # the server closed it, or it broke
        self.closed_here = False  # we closed it
        self.reusable = True  # may carry another request after this one
        self.idle_since = 0.0
        self.nothing_written = False  # the current request was never written: the connection was already gone
        self.response_started = False  # a byte of the current request's answer arrived
        self._waiter: asyncio.Future[Response] | None = None
        self._buf = bytearray()
        self._state = _IDLE
        self._head_request = False
        self._status = 0
        self._reason = ""
        self._headers: dict[str, str] = {}
        self._keep_alive = True
        self._remaining = 0
        self._body = bytearray()

    # -- the request ------------------------------------------------------------------------------------

    def send(self, data: bytes, head_request: bool, loop: asyncio.AbstractEventLoop) -> asyncio.Future[Response]:
        """Write one request; the future gets its answer (or the connection's failure)."""
        waiter: asyncio.Future[Response] = loop.create_future()
        self._waiter = waiter
        self._state = _HEAD
        self._head_request = head_request
        self.response_started = False
        transport = self.transport
        if self.closed or transport is None or transport.is_closing():
            self.nothing_written = True
            self.reusable = False
            waiter.set_exception(ConnectionClosed("the connection closed before the request was written"))
            return waiter
        transport.write(data)
        return waiter

    def expire(self) -> None:
        """The request's time is up: fail it and drop the connection (an answer may still be on its way)."""
        self._fail(TimeoutError("no complete answer within the request's timeout"))

    def close(self) -> None:
        self.reusable = False
        self.closed_here = True
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        self.reusable = False
        self.closed_here = True
        if self.transport is not None:
            self.transport.abort()

    def _fail(self, err: BaseException) -> None:
        waiter = self._waiter
        self._waiter = None
        self._state = _IDLE
        if waiter is not None and not waiter.done():
            waiter.set_exception(err)
        self.abort()

    # -- asyncio.Protocol -------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport, though uvloop's TLS one does not derive from asyncio.Transport.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if self._waiter is None:
            # Bytes no request asked for: whatever they are, the connection's framing is lost.
            self.abort()
            return
        self.response_started = True
        self._buf += data
        try:
            self._parse()
        except BadResponse as err:
            self._fail(err)

    def eof_received(self) -> bool | None:
        self.closed = True
        self._pool._forget_idle(self)
        self._end(None)
        return None  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._pool._lost(self)
        self._end(exc)

    def _end(self, exc: Exception | None) -> None:
        """The server closed the connection (exc None) or it broke: this completes an answer that runs until
        the close, and fails one still expected."""
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        if self._state == _UNTIL_CLOSE and exc is None:
            body = bytes(self._buf)
            self._buf.clear()
            self._complete(body)
            return
        self._waiter = None
        self._state = _IDLE
        if exc is not None:
            err = ConnectionClosed(f"connection lost: {exc}")
        elif self.closed_here:
            err = ConnectionClosed("the connection was closed by the client")
        elif self.response_started:
            err = ConnectionClosed("the server closed the connection in the middle of its answer")
        else:
            err = ConnectionClosed("the server closed the connection without answering")
        waiter.set_exception(err)

    # -- the answer -------------------------------------------------------------------------------------

    def _parse(self) -> None:
        buf = self._buf
        while True:
            state = self._state
            if state == _HEAD:
                end = buf.find(b"\r\n\r\n")
                if end < 0 or end > MAX_HEAD:
                    if len(buf) > MAX_HEAD:
                        raise BadResponse(f"the answer's header is longer than {MAX_HEAD} bytes")
                    return
                head = bytes(buf[:end])
                del buf[: end + 4]
                self._parse_head(head)
                if self._waiter is None:  # complete without a body
                    return
            elif state == _LENGTH:
                n = self._remaining
                if len(buf) < n:
                    return
                body = bytes(buf[:n])
                del buf[:n]
                self._complete(body)
                return
            elif state == _CHUNK_SIZE:
                end = buf.find(b"\r\n")
                if end < 0:
                    if len(buf) > _MAX_LINE:
                        raise BadResponse("chunk-size line too long")
                    return
                # Chunk extensions (after ';') carry nothing we use.
                size = bytes(buf[:end]).split(b";", 1)[0].strip(b" \t")
                del buf[: end + 2]
                if not size or len(size) > 16 or size.strip(b"0123456789abcdefABCDEF"):
                    raise BadResponse(f"bad chunk size {size[:20]!r}")
                self._remaining = int(size, 16)
                self._state = _CHUNK_DATA if self._remaining else _TRAILERS
            elif state == _CHUNK_DATA:
                n = self._remaining
                if len(buf) < n + 2:
                    return
                if buf[n : n + 2] != b"\r\n":
                    raise BadResponse("chunk data not followed by CRLF")
                self._body += buf[:n]
                del buf[: n + 2]
                self._state = _CHUNK_SIZE
            elif state == _TRAILERS:
                # Trailer fields, up to an empty line: tolerated, not kept.
                end = buf.find(b"\r\n")
                if end < 0:
                    if len(buf) > MAX_HEAD:
                        raise BadResponse("trailer section too long")
                    return
                del buf[: end + 2]
                if end == 0:
                    self._complete(bytes(self._body))
                    return
            else:  # _UNTIL_CLOSE: everything up to the close is the body (see _end)
                return

    def _parse_head(self, head: bytes) -> None:
        # Header fields are ISO-8859-1 on the wire; a str is faster to split and clean than bytes.
        text = head.decode("latin-1")
        lines = text.split("\r\n")
        if text.count("\n") != len(lines) - 1 or text.count("\r") != len(lines) - 1:
            raise BadResponse("bare CR or LF in the answer's header")
        line = lines[0]
        # "HTTP/1.x NNN reason": strict, as the only servers we talk to are HTTP/1.1 ones.
        code = line[9:12]
        if (
            len(line) < 12
            or not line.startswith("HTTP/1.")
            or line[7] not in "01"
            or line[8] != " "
            or not (code.isascii() and code.isdigit())
            or (len(line) > 12 and line[12] != " ")
        ):
            raise BadResponse(f"bad status line {line[:80]!r}")
        status = int(code)
        headers: dict[str, str] = {}
        for i in range(1, len(lines)):
            name, colon, value = lines[i].partition(":")
            # No whitespace around the name: before the colon it is forbidden (RFC 9112 §5.1), and at the start
            # of a line it is an obsolete line folding.
            if not colon or not name or name[0] in " \t" or name[-1] in " \t":
                raise BadResponse(f"bad header field {lines[i][:80]!r}")
            key = name.lower()
            value = value.strip(" \t")
            if key in headers:
                headers[key] += ", " + value
            else:
                headers[key] = value
        if status < 200:
            if status == 101:
                raise BadResponse("unexpected 101 Switching Protocols")
            return  # an interim answer (100 Continue, 103 Early Hints): the final one follows
        self._status = status
        self._reason = line[13:]
        self._headers = headers
        connection = headers.get("connection")
        self._keep_alive = line[7] == "1" and not (
            connection is not None and "close" in (t.strip().lower() for t in connection.split(","))
        )
        if self._head_request or status == 204 or status == 304:
            self._complete(b"")
            return
        te = headers.get("transfer-encoding")
        if te is not None:
            if "content-length" in headers:
                # Both: Transfer-Encoding wins, and the connection must not be reused (RFC 9112 §6.3).
                self._keep_alive = False
            if te.rsplit(",", 1)[-1].strip().lower() == "chunked":
                self._body = bytearray()
                self._state = _CHUNK_SIZE
            else:  # another coding last: the body runs until the close (RFC 9112 §6.3)
                self._keep_alive = False
                self._state = _UNTIL_CLOSE
            return
        length = headers.get("content-length")
        if length is None:
            self._keep_alive = False
            self._state = _UNTIL_CLOSE
            return
        values = {v.strip() for v in length.split(",")}  # repeated identical values are allowed (RFC 9110 §8.6)
        n = values.pop() if len(values) == 1 else ""
        if not (n.isascii() and n.isdigit()):
            raise BadResponse(f"bad Content-Length {length[:40]!r}")
        self._remaining = int(n)
        if self._remaining:
            self._state = _LENGTH
        else:
            self._complete(b"")

    def _complete(self, body: bytes) -> None:
        waiter = self._waiter
        self._waiter = None
        self._state = _IDLE
        if not self._keep_alive or self._buf:
            # Asked to close, or bytes past the answer that no request asked for: not reusable.
            self.reusable = False
        assert waiter is not None
        if not waiter.done():
            waiter.set_result(Response(self._status, self._reason, self._headers, body))


class HTTPTransport:
    """Keep-alive HTTP/1.1 connections to one server (`base`: its URL) and requests over them. Bound to the
    event loop of its first request while it has connections open there (until `close()`, which closes them
    all, or until that loop is closed)."""

    def __init__(
        self,
        base: str | URL,
        ssl_context: ssl.SSLContext | None,
        *,
        server_hostname: str | None = None,
        timeout: float | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
        idle_limit: float = IDLE_LIMIT,
    ) -> None:
        url = URL(base)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"not an http(s) URL: {str(url)!r}")
        if url.scheme == "https" and ssl_context is None:
            raise ValueError("an https URL needs an SSL context")
        self.host = url.host
        self.port = url.port or (443 if url.scheme == "https" else 80)
        self.authority = url.host_port_subcomponent or self.host  # the Host header, as aiohttp sends it
        self.ssl_context = ssl_context if url.scheme == "https" else None
        # The name the server's certificate must carry, when not the URL's host (kubeconfig tls-server-name).
        self.server_hostname = server_hostname if self.ssl_context is not None and server_hostname else None
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.idle_limit = idle_limit
        self.opened = 0  # connections made so far
        # Idle connections, oldest first: popitem() takes the most recently used one, deletion is O(1).
        self._idle: dict[_Connection, None] = {}
        self._conns: set[_Connection] = set()  # every open connection, idle or busy
        self._loop: asyncio.AbstractEventLoop | None = None
        self._all_closed: asyncio.Future[None] | None = None

    @property
    def open_connections(self) -> int:
        return len(self._conns)

    @property
    def idle_connections(self) -> int:
        return len(self._idle)

    async def request(
        self, method: str, target: str, headers: Iterable[tuple[str, str]], body: bytes | None = None
    ) -> Response:
        """Send `method target` (target: the path and query, already quoted) with these header fields (Host
        and Content-Length are added) and return the whole answer, whatever its status."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            if self._conns and self._loop is not None and not self._loop.is_closed():
                raise RuntimeError("this HTTPTransport has connections on another event loop")
            # Connections of a closed loop are gone with it.
            self._idle.clear()
            self._conns.clear()
            self._loop = loop
        data = self._encode(method, target, headers, body)
        deadline = None if self.timeout is None else loop.time() + self.timeout
        head_request = method == "HEAD"
        conn = self._take_idle(loop.time())
        while True:
            reused = conn is not None
            if conn is None:
                conn = await self._connect(loop, deadline)
            waiter = conn.send(data, head_request, loop)
            timer = None if deadline is None else loop.call_at(deadline, conn.expire)
            try:
                resp = await waiter
            except ConnectionClosed:
                conn.abort()
                # Go's net/http (Transport.roundTrip, persistConn.shouldRetryRequest) sends a request once more
                # on a new connection only if the one that failed was reused (a server may close an idle
                # connection just as we write to it; a new connection that fails has a server that does not
                # want the request, and retrying could loop) and either nothing of the request was written, or
                # it is replayable (GET, HEAD, OPTIONS, TRACE: our requests carry no Idempotency-Key) and no
                # byte of the answer had arrived. A POST, PUT, PATCH or DELETE that was written may have been
                # acted on, so it is not sent twice here. Go tries again as long as it gets reused connections;
                # we try once, on a new one.
                if reused and (conn.nothing_written or (method in _REPLAYABLE and not conn.response_started)):
                    conn = None
                    continue
                raise
            except BaseException:
                # Timed out, a bad answer, or the caller gave up (cancelled): the connection is mid-exchange.
                conn.abort()
                raise
            finally:
                if timer is not None:
                    timer.cancel()
            self._release(conn, loop.time())
            return resp

    async def close(self, grace: float = 1.0) -> None:
        """Close every connection, idle or busy (a request on one fails with `ConnectionClosed`), waiting up to
        `grace` seconds for TLS to shut down cleanly before aborting the rest."""
        self._idle.clear()
        conns = list(self._conns)
        loop = asyncio.get_running_loop()
        if not conns or loop is not self._loop:
            # Connections of another loop (closed, most likely) cannot be closed from this one: forget them.
            self._conns.clear()
            self._loop = None
            return
        for conn in conns:
            conn.close()
        self._all_closed = loop.create_future()
        try:
            async with asyncio.timeout(grace):
                await self._all_closed
        except TimeoutError:
            for conn in list(self._conns):
                conn.abort()
        finally:
            self._all_closed = None
        if not self._conns:
            self._loop = None

    # -- internals --------------------------------------------------------------------------------------

    def _encode(self, method: str, target: str, headers: Iterable[tuple[str, str]], body: bytes | None) -> bytes:
        parts = [f"{method} {target} HTTP/1.1\r\nHost: {self.authority}\r\n"]
        for name, value in headers:
            if "\n" in value or "\r" in value or "\n" in name or "\r" in name:
                # A line break would let a value smuggle header fields or a second request.
                raise ValueError(f"newline in header field {name!r}")
            parts.append(f"{name}: {value}\r\n")
        if body is not None:
            parts.append(f"Content-Length: {len(body)}\r\n\r\n")
        elif method in _BODY_METHODS:
            parts.append("Content-Length: 0\r\n\r\n")
        else:
            parts.append("\r\n")
        head = "".join(parts).encode()
        return head + body if body else head

    async def _connect(self, loop: asyncio.AbstractEventLoop, deadline: float | None) -> _Connection:
        timeout = self.connect_timeout
        if deadline is not None:
            timeout = max(0.0, min(timeout, deadline - loop.time()))
        try:
            async with asyncio.timeout(timeout):
                _, conn = await loop.create_connection(
                    lambda: _Connection(self),
                    self.host,
                    self.port,
                    ssl=self.ssl_context,
                    server_hostname=self.server_hostname,
                )
        except TimeoutError as err:
            raise ConnectError(f"cannot connect to {self.authority}: no connection within {timeout:g}s") from err
        except OSError as err:  # refused, unreachable, no such host, TLS handshake (ssl.SSLError is an OSError)
            raise ConnectError(f"cannot connect to {self.authority}: {err}") from err
        self.opened += 1
        if not conn.closed:
            self._conns.add(conn)
        return conn

    def _take_idle(self, now: float) -> _Connection | None:
        idle = self._idle
        if not idle:
            return None
        conn, _ = idle.popitem()
        if now - conn.idle_since > self.idle_limit:
            # The most recently used connection is too old: so are the others.
            conn.close()
            for other in list(idle):
                other.close()
            idle.clear()
            return None
        return conn

    def _release(self, conn: _Connection, now: float) -> None:
        if conn.closed or not conn.reusable:
            conn.close()
            return
        conn.idle_since = now
        idle = self._idle
        idle[conn] = None
        # The oldest idle connections are the ones LIFO reuse never reaches once load drops: close those past
        # the limit here rather than keep a timer per connection.
        while True:
            oldest = next(iter(idle))
            if now - oldest.idle_since <= self.idle_limit:
                break
            del idle[oldest]
            oldest.close()

    def _forget_idle(self, conn: _Connection) -> None:
        self._idle.pop(conn, None)

    def _lost(self, conn: _Connection) -> None:
        self._idle.pop(conn, None)
        self._conns.discard(conn)
        if not self._conns and self._all_closed is not None and not self._all_closed.done():
            self._all_closed.set_result(None)

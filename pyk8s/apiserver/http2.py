"""HTTP/2 for the API server: what client-go negotiates (ALPN `h2`) so that a program's every request shares one
connection. Go's server speaks it beside HTTP/1.1 on the same port; so does this one.

The framing, HPACK and flow-control bookkeeping are the `h2` library's (a sans-I/O protocol machine); this
module is the I/O around it. Each stream's request is handed to the same aiohttp request handler HTTP/1.1
requests go to, as an aiohttp request whose body is the stream's data and whose response writer sends
HEADERS and DATA frames on the stream. A response waits for the stream's flow-control window, so a watcher
that reads slowly holds up only its own stream; request bodies are acknowledged as they arrive (their size is
bounded by the handlers, as over HTTP/1.1). Settings as Go's server: at most 250 concurrent streams per
connection (kube-apiserver's default), an idle connection (no open stream) closed after 90 s.

`ALPNSwitch` is what the TLS layer talks to: once the handshake has chosen the protocol it hands the
connection to aiohttp's HTTP/1.1 handler or to an `H2Connection`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
from aiohttp import web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.http import HttpVersion11, RawRequestMessage
from aiohttp.streams import EMPTY_PAYLOAD, StreamReader
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from .encoding import MAX_BODY_BYTES

log = logging.getLogger("pyk8s.apiserver")

MAX_CONCURRENT_STREAMS = 250  # upstream: http2.Server MaxConcurrentStreams as kube-apiserver sets it by default
IDLE_TIMEOUT = 90.0  # as over HTTP/1.1 (connections.IDLE_TIMEOUT)
# Windows we grant for request bodies: large, as Go's server does, so uploads need no round trips.
_STREAM_WINDOW = 1 << 20
_CONNECTION_WINDOW = 1 << 24
# Connection-specific headers HTTP/2 forbids (RFC 9113 8.2.2); aiohttp's response code sets some of them.
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"})


class ALPNSwitch(asyncio.Protocol):
    """The application protocol under TLS: HTTP/1.1 (aiohttp's handler) or HTTP/2, as ALPN chose. `on_h2` is
    told the `H2Connection` that stands in for the HTTP/1.1 handler (the pending-connection registry keys
    connections by it)."""

    def __init__(
        self, http1: Any, server: web.Server, on_h2: Callable[[Any, H2Connection], None]
    ) -> None:  # fmt: skip
        self.http1 = http1
        self.server = server
        self.on_h2 = on_h2
        self.inner: Any = http1

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is not None and ssl_object.selected_alpn_protocol() == "h2":
            h2conn = H2Connection(self.server)
            self.on_h2(self.http1, h2conn)
            self.inner = h2conn
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()  # type: ignore[no-any-return]

    def connection_lost(self, exc: Exception | None) -> None:
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


class _Stream:
    __slots__ = ("body", "closed", "headers", "size", "task", "window")

    def __init__(self, headers: list[tuple[str, str]]) -> None:
        self.headers = headers
        self.body: list[bytes] = []
        self.size = 0
        self.task: asyncio.Task[None] | None = None
        self.window: asyncio.Future[None] | None = None  # set while the response waits for window
        self.closed = False  # reset by the peer, or the connection is gone


class H2Connection(asyncio.Protocol):
    """One HTTP/2 connection. For the request handlers it is also `request.protocol` (aiohttp's handler on
    HTTP/1.1): it has the transport, the TLS context and peer, and `close()`."""

    def __init__(self, server: web.Server) -> None:
        self.server = server
        self.loop = asyncio.get_running_loop()
        # What we send is well-formed by construction: h2's checks of it are skipped (they cost a tenth of a request).
        config = h2.config.H2Configuration(
            client_side=False, header_encoding="utf-8", validate_inbound_headers=True,
            validate_outbound_headers=False, normalize_outbound_headers=False,
        )  # fmt: skip
        self.conn = h2.connection.H2Connection(config=config)
        self.transport: asyncio.Transport | None = None
        self.streams: dict[int, _Stream] = {}
        self._paused: asyncio.Future[None] | None = None  # set while the transport's buffer is full
        self._idle: asyncio.TimerHandle | None = None
        self._closing = False
        self._flush_scheduled = False

    # -- what aiohttp's request reads from its protocol ---------------------------------------------------

    @property
    def ssl_context(self) -> Any:
        return self.transport.get_extra_info("sslcontext") if self.transport is not None else None

    @property
    def peername(self) -> Any:
        return self.transport.get_extra_info("peername") if self.transport is not None else None

    @property
    def sockname(self) -> Any:
        return self.transport.get_extra_info("sockname") if self.transport is not None else None

    def close(self) -> None:
        """Say goodbye (GOAWAY) and close once the streams in progress are done... or now, if there are none.
        (The GOAWAY waits for them too: h2 sends nothing more on a connection it has said goodbye on, and the
        answers in progress, such as the 401 that closes an unauthenticated connection, must still go out.)"""
        if self.transport is None or self._closing:
            return
        self._closing = True
        if not self.streams:
            self._goodbye()

    def _goodbye(self) -> None:
        try:
            self.conn.close_connection(error_code=h2.errors.ErrorCodes.NO_ERROR)
        except h2.exceptions.ProtocolError:
            pass
        self._write_out()
        if self.transport is not None:
            self.transport.close()

    # -- asyncio.Protocol ---------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.conn.local_settings = h2.settings.Settings(
            client=False,
            initial_values={
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: MAX_CONCURRENT_STREAMS,
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: _STREAM_WINDOW,
                h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: 1 << 20,
            },
        )
        self.conn.initiate_connection()
        self.conn.increment_flow_control_window(_CONNECTION_WINDOW - 65535)
        self._flush()
        self._arm_idle()

    def data_received(self, data: bytes) -> None:
        try:
            events = self.conn.receive_data(data)
        except h2.exceptions.ProtocolError as e:
            log.debug("HTTP/2 protocol error from %s: %s", self.peername, e)
            self._write_out()  # h2's GOAWAY, before the close
            if self.transport is not None:
                self.transport.close()
            return
        for event in events:
            self._event(event)
        self._flush()

    def eof_received(self) -> bool | None:
        return None  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if self._idle is not None:
            self._idle.cancel()
        for stream in self.streams.values():
            self._end_stream(stream)
        if self._paused is not None and not self._paused.done():
            self._paused.set_result(None)

    def pause_writing(self) -> None:
        if self._paused is None or self._paused.done():
            self._paused = self.loop.create_future()

    def resume_writing(self) -> None:
        if self._paused is not None and not self._paused.done():
            self._paused.set_result(None)

    # -- events -------------------------------------------------------------------------------------------

    def _event(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.RequestReceived):
            headers = [(k, v) for k, v in event.headers]  # type: ignore[misc]
            self.streams[event.stream_id] = _Stream(headers)  # type: ignore[arg-type]
            self._disarm_idle()
            if event.stream_ended is not None:
                self._dispatch(event.stream_id)
        elif isinstance(event, h2.events.DataReceived):
            stream = self.streams.get(event.stream_id)
            if stream is not None and event.data:
                # Past the largest body a handler takes, the rest is only counted: the handler answers 413.
                if stream.size <= MAX_BODY_BYTES:
                    stream.body.append(event.data)
                stream.size += len(event.data)
            # Bodies are bounded by the handlers (413 past the limit): the window goes back at once.
            self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            if event.stream_ended is not None:
                self._dispatch(event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            self._dispatch(event.stream_id)
        elif isinstance(event, h2.events.StreamReset):
            stream = self.streams.get(event.stream_id)
            if stream is not None:
                self._end_stream(stream)
        elif isinstance(event, h2.events.WindowUpdated | h2.events.RemoteSettingsChanged):
            for stream in self.streams.values():
                if stream.window is not None and not stream.window.done():
                    stream.window.set_result(None)
        elif isinstance(event, h2.events.ConnectionTerminated):
            if self.transport is not None:
                self.transport.close()

    def _dispatch(self, stream_id: int) -> None:
        stream = self.streams.get(stream_id)
        if stream is None or stream.task is not None:
            return
        stream.task = self.loop.create_task(self._serve(stream_id, stream))

    def _end_stream(self, stream: _Stream) -> None:
        stream.closed = True
        if stream.window is not None and not stream.window.done():
            stream.window.set_result(None)
        if stream.task is not None and not stream.task.done():
            stream.task.cancel()

    # -- one request --------------------------------------------------------------------------------------

    async def _serve(self, stream_id: int, stream: _Stream) -> None:
        writer = _StreamWriter(self, stream_id, stream)
        try:
            request = self._request(stream, writer)
            try:
                resp = await self.server.request_handler(request)
            except web.HTTPException as exc:
                resp = exc
            await resp.prepare(request)
            await resp.write_eof()
        except (asyncio.CancelledError, ConnectionResetError):
            pass
        except Exception:
            log.exception("HTTP/2 stream %d failed", stream_id)
            self._reset(stream_id, h2.errors.ErrorCodes.INTERNAL_ERROR)
        finally:
            self.streams.pop(stream_id, None)
            if not self.streams:
                if self._closing and self.transport is not None:
                    self._goodbye()
                self._arm_idle()

    def _request(self, stream: _Stream, writer: _StreamWriter) -> web.BaseRequest:
        pseudo: dict[str, str] = {}
        headers: CIMultiDict[str] = CIMultiDict()
        for k, v in stream.headers:
            if k.startswith(":"):
                pseudo[k] = v
            else:
                headers.add(k, v)
        if ":authority" in pseudo and "host" not in headers:
            headers["Host"] = pseudo[":authority"]
        path = pseudo.get(":path", "/")
        message = RawRequestMessage(
            pseudo.get(":method", "GET"), path, HttpVersion11, CIMultiDictProxy(headers),
            tuple((k.encode(), v.encode()) for k, v in headers.items()), False, None, False, False,
            URL(path, encoded=True),
        )  # fmt: skip
        payload: StreamReader = EMPTY_PAYLOAD  # type: ignore[assignment]
        if stream.body:
            payload = StreamReader(self, 1 << 30, loop=self.loop)  # type: ignore[arg-type]
            for chunk in stream.body:
                payload.feed_data(chunk)
            payload.feed_eof()
            stream.body = []
        assert stream.task is not None
        return self.server.request_factory(message, payload, self, writer, stream.task)  # type: ignore[arg-type]

    # What a StreamReader calls on its protocol when a body is large (the body is all here already).
    def pause_reading(self, *args: Any, **kwargs: Any) -> None:
        pass

    def resume_reading(self, *args: Any, **kwargs: Any) -> None:
        pass

    # -- sending ------------------------------------------------------------------------------------------

    def _flush(self) -> None:
        """Send what h2 has framed, once per turn of the event loop: the frames of every stream that answered
        meanwhile go out in one TLS write (each write is a TLS record, and encrypting costs more than framing)."""
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.loop.call_soon(self._write_out)

    def _write_out(self) -> None:
        self._flush_scheduled = False
        data = self.conn.data_to_send()
        if data and self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def _reset(self, stream_id: int, code: h2.errors.ErrorCodes) -> None:
        try:
            self.conn.reset_stream(stream_id, error_code=code)
            self._flush()
        except (h2.exceptions.ProtocolError, h2.exceptions.StreamClosedError):
            pass

    def send_headers(self, stream_id: int, headers: list[tuple[str, str]], end_stream: bool) -> None:
        try:
            self.conn.send_headers(stream_id, headers, end_stream=end_stream)
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError) as e:
            raise ConnectionResetError(str(e)) from None
        self._flush()

    async def send_data(self, stream_id: int, stream: _Stream, data: bytes, end_stream: bool) -> None:
        """Send `data` as the stream's windows allow (waiting for window updates), then drain the socket."""
        view = memoryview(data)
        while True:
            if stream.closed or self.transport is None:
                raise ConnectionResetError("the HTTP/2 stream is closed")
            if not view:
                if end_stream:
                    self._end(stream_id)
                break
            try:
                window = min(self.conn.local_flow_control_window(stream_id), self.conn.max_outbound_frame_size)
            except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError) as e:
                raise ConnectionResetError(str(e)) from None
            if window <= 0:
                stream.window = self.loop.create_future()
                await stream.window
                stream.window = None
                continue
            chunk, view = view[:window], view[window:]
            try:
                self.conn.send_data(stream_id, chunk.tobytes(), end_stream=end_stream and not view)
            except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError) as e:
                raise ConnectionResetError(str(e)) from None
            self._flush()
            if not view and end_stream:
                break
        await self.drain()

    def _end(self, stream_id: int) -> None:
        try:
            self.conn.end_stream(stream_id)
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError) as e:
            raise ConnectionResetError(str(e)) from None
        self._flush()

    async def drain(self) -> None:
        if self._paused is not None and not self._paused.done():
            await self._paused

    # -- idleness -----------------------------------------------------------------------------------------

    def _arm_idle(self) -> None:
        self._disarm_idle()
        if self.transport is not None:
            self._idle = self.loop.call_later(IDLE_TIMEOUT, self.close)

    def _disarm_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None


class _StreamWriter(AbstractStreamWriter):
    """aiohttp's response writer for one stream: the status line and headers become a HEADERS frame (sent
    with the body's first DATA, or alone with END_STREAM when there is none), the body DATA frames."""

    def __init__(self, conn: H2Connection, stream_id: int, stream: _Stream) -> None:
        self.conn = conn
        self.stream_id = stream_id
        self.stream = stream
        self.buffer_size = 0
        self.output_size = 0
        self.length: int | None = None
        self._headers: list[tuple[str, str]] | None = None
        self._headers_sent = False

    async def write_headers(self, status_line: str, headers: CIMultiDict[str]) -> None:
        status = status_line.split(" ", 2)[1]
        out = [(":status", status)]
        out += [(k.lower(), v) for k, v in headers.items() if k.lower() not in _HOP_BY_HOP]
        self._headers = out

    def send_headers(self) -> None:
        if self._headers is not None and not self._headers_sent:
            self._headers_sent = True
            self.conn.send_headers(self.stream_id, self._headers, end_stream=False)

    async def write(self, chunk: bytes | bytearray | memoryview) -> None:
        self.send_headers()
        if chunk:
            self.output_size += len(chunk)
            await self.conn.send_data(self.stream_id, self.stream, bytes(chunk), end_stream=False)

    async def write_eof(self, chunk: bytes = b"") -> None:
        if not self._headers_sent and not chunk:
            if self._headers is not None:
                self._headers_sent = True
                self.conn.send_headers(self.stream_id, self._headers, end_stream=True)
            return
        self.send_headers()
        self.output_size += len(chunk)
        await self.conn.send_data(self.stream_id, self.stream, bytes(chunk), end_stream=True)

    async def drain(self) -> None:
        await self.conn.drain()

    def enable_compression(self, encoding: str = "deflate", strategy: int | None = None) -> None:
        pass  # the API server does not compress responses

    def enable_chunking(self) -> None:
        pass  # HTTP/2 frames the body itself

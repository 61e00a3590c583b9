"""A small HTTP/2 client for tests and benchmarks: one TLS connection (ALPN `h2`), any number of concurrent
streams, and control over flow control (a stream whose data is not acknowledged is a slow reader). Built on
the `h2` protocol library's client side, as client-go's transport would use one connection."""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass, field

import h2.config
import h2.connection
import h2.events
import h2.settings


@dataclass
class Stream:
    """One request's answer as it arrives."""

    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes] = field(default_factory=list)
    received: int = 0
    read: bool = True  # acknowledge data as it arrives (False: a reader that does not keep up)
    unacked: int = 0
    done: asyncio.Event = field(default_factory=asyncio.Event)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)


class H2Client:
    def __init__(self, host: str, port: int, ca_file: str, cert: tuple[str, str] | None = None,
                 token: str = "", initial_window: int | None = None) -> None:  # fmt: skip
        self.host, self.port, self.ca_file, self.cert, self.token = host, port, ca_file, cert, token
        self.initial_window = initial_window
        self.streams: dict[int, Stream] = {}
        self.alpn = ""

    async def __aenter__(self) -> H2Client:
        ctx = ssl.create_default_context(cafile=self.ca_file)
        ctx.set_alpn_protocols(["h2"])
        if self.cert is not None:
            ctx.load_cert_chain(*self.cert)
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port, ssl=ctx)
        self.alpn = self.writer.get_extra_info("ssl_object").selected_alpn_protocol() or ""
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        if self.initial_window is not None:
            self.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: self.initial_window})
        self._flush()
        self._task = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._task.cancel()
        self.writer.close()

    def _flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.writer.write(data)

    async def _read(self) -> None:
        while True:
            data = await self.reader.read(65536)
            if not data:
                for s in self.streams.values():
                    s.done.set()
                return
            for event in self.conn.receive_data(data):
                s = self.streams.get(getattr(event, "stream_id", 0) or 0)
                if isinstance(event, h2.events.ResponseReceived) and s is not None:
                    s.headers = dict(event.headers)  # type: ignore[arg-type]
                    s.status = int(s.headers.get(":status", "0"))
                elif isinstance(event, h2.events.DataReceived) and s is not None:
                    s.chunks.append(event.data)
                    s.received += len(event.data)
                    s.arrived.set()
                    if s.read:
                        self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    else:
                        s.unacked += event.flow_controlled_length
                elif isinstance(event, h2.events.StreamEnded | h2.events.StreamReset) and s is not None:
                    s.done.set()
            self._flush()

    def open(self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None,
             read: bool = True) -> Stream:  # fmt: skip
        """Start a request; its Stream fills in as the answer arrives."""
        stream_id = self.conn.get_next_available_stream_id()
        hdrs = [(":method", method), (":path", path), (":scheme", "https"), (":authority", f"{self.host}:{self.port}")]
        if self.token:
            hdrs.append(("authorization", f"Bearer {self.token}"))
        hdrs += [(k.lower(), v) for k, v in (headers or {}).items()]
        s = self.streams[stream_id] = Stream(read=read)
        self.conn.send_headers(stream_id, hdrs, end_stream=not body)
        if body:
            self.conn.send_data(stream_id, body, end_stream=True)
        self._flush()
        return s

    def resume(self, s: Stream) -> None:
        """Start reading a stream that was not being read: give back the window its data used."""
        stream_id = next(i for i, x in self.streams.items() if x is s)
        s.read = True
        if s.unacked:
            self.conn.acknowledge_received_data(s.unacked, stream_id)
            s.unacked = 0
            self._flush()

    def cancel(self, s: Stream) -> None:
        stream_id = next(i for i, x in self.streams.items() if x is s)
        self.conn.reset_stream(stream_id)
        self._flush()

    async def request(self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None) -> Stream:
        s = self.open(method, path, body, headers)
        await s.done.wait()
        return s

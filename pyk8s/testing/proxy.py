"""A TCP proxy between one client and an API server, for partition tests.

`TCPProxy` listens on a free loopback port and forwards every connection byte for byte to its target, so
TLS passes through untouched (the serving certificate's 127.0.0.1 SAN still matches). `partition()` cuts
the client off: connections in flight are aborted, and new ones are either held open in silence (a black
hole, the way a dead network looks to the client: the TCP connect succeeds and nothing ever answers) or
closed at once. `heal()` forwards new connections again. Everything runs on the caller's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

log = logging.getLogger(__name__)

_CHUNK = 64 * 1024


class TCPProxy:
    """`TCPProxy(host, port)`; `await start()`, then point a client at `127.0.0.1:<.port>`."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target_host = target_host
        self.target_port = target_port
        self.port = 0
        self.partitioned = False
        self.hold = True
        self._server: asyncio.Server | None = None
        # Every open client-side writer with its upstream writer (None while held), so partition() can
        # abort both ends of each.
        self._conns: dict[asyncio.StreamWriter, asyncio.StreamWriter | None] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    async def start(self) -> TCPProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def partition(self, *, hold: bool = True) -> None:
        """Cut the link: abort every open connection; from now on hold new ones silently (`hold=True`)
        or close them as soon as they are accepted."""
        self.partitioned = True
        self.hold = hold
        self._abort_all()

    def heal(self) -> None:
        """Forward new connections again. Connections held during the partition are closed, so their
        clients reconnect rather than wait on a stream that never started."""
        self.partitioned = False
        self._abort_all()

    def drop_connections(self) -> None:
        """Abort every open connection without partitioning: clients reconnect at once."""
        self._abort_all()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        self._abort_all()
        # Aborted connections end their handlers by themselves; cancel only what is still stuck.
        if self._tasks:
            _, stuck = await asyncio.wait(set(self._tasks), timeout=1.0)
            for task in stuck:
                task.cancel()
            if stuck:
                await asyncio.wait(stuck)

    async def __aenter__(self) -> TCPProxy:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- internals --------------------------------------------------------------------------------------

    def _abort_all(self) -> None:
        for client_w, upstream_w in list(self._conns.items()):
            _abort(client_w)
            if upstream_w is not None:
                _abort(upstream_w)
        self._conns.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except asyncio.CancelledError:
            # Only close() cancels a handler; asyncio's server would log a cancelled handler as an error.
            pass
        finally:
            self._tasks.discard(task)
            self._conns.pop(writer, None)
            _abort(writer)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.partitioned:
            if not self.hold:
                return
            self._conns[writer] = None
            # Read and discard until the connection is aborted (by heal, close or the client).
            with contextlib.suppress(ConnectionError, OSError):
                while await reader.read(_CHUNK):
                    pass
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(self.target_host, self.target_port)
        except OSError as err:
            log.debug("proxy: cannot reach %s:%d: %s", self.target_host, self.target_port, err)
            return
        if self.partitioned:  # cut while we were connecting
            _abort(up_writer)
            return
        self._conns[writer] = up_writer
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            _abort(up_writer)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(_CHUNK):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        # Either side closing ends the whole connection: half-open TLS streams only confuse clients.
        _abort(writer)


def _abort(writer: asyncio.StreamWriter) -> None:
    transport = writer.transport
    if not transport.is_closing():
        transport.abort()

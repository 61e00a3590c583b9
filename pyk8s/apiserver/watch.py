"""Watch streams: `?watch=true` answered with newline-delimited JSON events over a chunked response, or with
length-prefixed protobuf WatchEvent frames (`application/vnd.kubernetes.protobuf;stream=watch`) for a client
that prefers protobuf (upstream: apiserver/pkg/endpoints/handlers/watch.go).

Each event's encoding is computed once and cached on the watch cache's event, so a hundred watchers of
the same resource in the same format share it. Events that are already queued are written together. A
watch ends at `timeoutSeconds` (or after 30 to 60 minutes), when the client goes away, or with an ERROR
event (410 Expired when its resourceVersion is too old).
"""

from __future__ import annotations

import asyncio
import random
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web

from ..api import errors
from ..api.protobuf import codec as protobuf
from ..storage.cacher import CacheWatcher, WatchedEvent
from ..storage.interface import BOOKMARK
from .negotiation import JSON, PROTOBUF

if TYPE_CHECKING:
    from .handlers import Resolved

MIN_REQUEST_TIMEOUT = 1800
# The annotation on the bookmark that ends a WatchList's initial events (metav1.InitialEventsAnnotationKey).
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


# A watch asking for longer than this (a year) gets this: the event loop's timers take nothing larger.
MAX_WATCH_SECONDS = 365 * 24 * 3600


class WatchMetrics:
    """Counters the server exports for watches (set by the server)."""

    def __init__(self) -> None:
        self.events_sent = 0
        self.open_watches = 0


def _event_line(typ: str, obj_bytes: bytes) -> bytes:
    return b'{"type":"' + typ.encode() + b'","object":' + obj_bytes + b"}\n"


def _error_event(err: errors.StatusError, media: str) -> bytes:
    if media == PROTOBUF:
        return protobuf.watch_frame("ERROR", protobuf.encode_object(err.status()))
    return _event_line("ERROR", orjson.dumps(err.status()))


class WatchServer:
    def __init__(self, metrics: WatchMetrics, min_request_timeout: int = MIN_REQUEST_TIMEOUT) -> None:
        self.metrics = metrics
        self.min_request_timeout = min_request_timeout

    def timeout(self, query: Any) -> float:
        from .handlers import query_int

        seconds = query_int(query, "timeoutSeconds")
        if seconds is not None:
            return float(min(max(0, seconds), MAX_WATCH_SECONDS))
        return self.min_request_timeout * (1 + random.random())

    async def serve(
        self, request: web.Request, r: Resolved, table: bool, include: str, table_version: str, media: str = JSON
    ) -> web.StreamResponse:
        from .handlers import list_options

        opts = list_options(request.query, r.served)
        timeout = self.timeout(request.query)
        error_event: bytes | None = None
        watcher: CacheWatcher | None = None
        name = r.info.name
        try:
            watcher = await r.rest.watch(r.info.namespace, opts, name)
        except errors.StatusError as err:
            if err.code != 410:
                raise
            error_event = _error_event(err, media)
        media = PROTOBUF if media == PROTOBUF and not table else JSON
        content_type = PROTOBUF + ";stream=watch" if media == PROTOBUF else JSON
        resp = web.StreamResponse(
            status=200, headers={"Content-Type": content_type, "Cache-Control": "no-cache, private"}
        )
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        if error_event is not None or watcher is None:
            await resp.write(error_event or b"")
            await resp.write_eof()
            return resp
        self.metrics.open_watches += 1
        encoder = _Encoder(r, table, include, table_version, media)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            while True:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                try:
                    ev = await asyncio.wait_for(watcher.__anext__(), remaining)
                except (TimeoutError, StopAsyncIteration):
                    break
                except errors.StatusError as err:
                    await resp.write(_error_event(err, media))
                    break
                await encoder.prepare(ev)
                chunks = [encoder.line(ev)]
                while len(chunks) < 256:
                    more = watcher.next_nowait()
                    if more is None:
                        break
                    await encoder.prepare(more)
                    chunks.append(encoder.line(more))
                self.metrics.events_sent += len(chunks)
                await resp.write(b"".join(chunks))
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            watcher.stop()
            self.metrics.open_watches -= 1
        try:
            await resp.write_eof()
        except ConnectionResetError:
            pass
        return resp


class _Encoder:
    """Turns cache events into wire lines for one watcher's format, reusing encodings across watchers."""

    def __init__(self, r: Resolved, table: bool, include: str, table_version: str, media: str = JSON) -> None:
        self.r = r
        self.table = table
        self.include = include
        self.table_version = table_version
        self.first = True
        self.protobuf = media == PROTOBUF and not table
        if table:
            self.fmt: tuple[str, ...] = ("table", r.served.group_version, include, table_version)
        else:
            self.fmt = ("protobuf" if self.protobuf else "json", r.served.group_version)

    def _line(self, typ: str, doc: Any) -> bytes:
        if self.protobuf:
            return protobuf.watch_frame(typ, protobuf.encode_object(doc))
        return _event_line(typ, orjson.dumps(doc))

    async def prepare(self, ev: WatchedEvent) -> None:
        """What `line` needs done asynchronously: the object's conversion, unless its line is cached already."""
        if ev.event is None or ev.object is None:
            return
        if (self.table and self.first) or (self.fmt, ev.type) not in ev.event.memo:
            await self.r.ready_for_client([ev.object])

    def line(self, ev: WatchedEvent) -> bytes:
        r = self.r
        if ev.type == BOOKMARK or ev.event is None:
            md: dict[str, Any] = {"resourceVersion": str(ev.revision)}
            if ev.initial_events_end:
                md["annotations"] = {INITIAL_EVENTS_END: "true"}
            obj = {"kind": r.served.kind, "apiVersion": r.served.api_version, "metadata": md}
            if self.table:
                obj = self._table([obj], meta={"resourceVersion": str(ev.revision)})
            return self._line(BOOKMARK, obj)
        cache_event = ev.event
        if self.table and self.first:
            self.first = False
            return _event_line(ev.type, orjson.dumps(self._table([r.to_client(ev.object or {})], headers=True)))
        key = (self.fmt, ev.type)
        line = cache_event.memo.get(key)
        if line is None:
            client_obj = r.to_client(ev.object or {})
            doc = self._table([client_obj]) if self.table else client_obj
            line = self._line(ev.type, doc)
            cache_event.memo[key] = line
        return line

    def _table(self, objs: list[Any], headers: bool = False, meta: dict[str, Any] | None = None) -> dict[str, Any]:
        rv = (objs[0].get("metadata") or {}).get("resourceVersion", "") if objs else ""
        return self.r.table(
            objs,
            include=self.include,
            version=self.table_version,
            list_meta=meta or {"resourceVersion": rv},
            headers=headers,
        )

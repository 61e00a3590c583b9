"""`pods/log`: a container's log, streamed from the kubelet of the pod's node (upstream:
pkg/registry/core/pod/rest/log.go `LogREST`, pkg/registry/core/pod/strategy.go `LogLocation` and
`validateContainer`, apiserver's generic/rest/streamer.go `LocationStreamer` and response_checker.go).

The options are validated (422 PodLogOptions), the container chosen (the only one, or the one named), and
the kubelet's `containerLogs` URL built from the node's address and port (`kubelet_client`). A pod with no
node has no log yet: 204 No Content, as upstream's empty location gives. The kubelet's body is copied
through as text/plain, chunk by chunk, for as long as the kubelet keeps it open (`follow`); its errors
become Statuses as upstream's response checker makes them.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Mapping
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import aiohttp
from aiohttp import web

from ..api import errors
from ..api.gotime import format_utc
from ..api.meta import Object, parse_time
from ..kubelet.container_logs import LogOptions, go_bool, validation_errors
from .handlers import query_int
from .kubelet_client import connection_info, response_error

CONNECT_TIMEOUT = 10.0
MAX_ERROR_BODY = 50_000  # upstream maxReadLength
# How often a quiet stream checks whether its client is still there.
CLIENT_CHECK_SECONDS = 1.0
T = TypeVar("T")


def container_names(pod: Mapping[str, Any]) -> list[str]:
    """Every container of the pod in upstream's VisitContainers order: init, app, ephemeral."""
    spec = pod.get("spec") or {}
    kinds = ("initContainers", "containers", "ephemeralContainers")
    return [str(c.get("name", "")) for k in kinds for c in spec.get(k) or ()]


def go_string_list(items: list[str]) -> str:
    return "[" + " ".join(items) + "]"


def validate_container(container: str, pod: Mapping[str, Any]) -> str:
    """The container a request means (upstream validateContainer): the pod's only app container when none is
    named, else the one named, which must exist; BadRequest otherwise."""
    name = str((pod.get("metadata") or {}).get("name", ""))
    if not container:
        app = (pod.get("spec") or {}).get("containers") or []
        if len(app) == 1:
            return str(app[0].get("name", ""))
        if not app:
            raise errors.bad_request(f"a container name must be specified for pod {name}")
        choices = go_string_list(container_names(pod))
        raise errors.bad_request(f"a container name must be specified for pod {name}, choose one of: {choices}")
    if container not in container_names(pod):
        raise errors.bad_request(f"container {container} is not valid for pod {name}")
    return container


def log_options(query: Mapping[str, str], name: str) -> tuple[str, LogOptions, bool]:
    """The container, the options and insecureSkipTLSVerifyBackend of a `pods/log` query, decoded and
    validated as the API server does (422 PodLogOptions with upstream's field errors)."""
    since_time = None
    raw = query.get("sinceTime")
    if raw:
        try:
            since_time = parse_time(raw).timestamp()
        except ValueError:
            raise errors.bad_request(
                f'parsing time {errors.go_quote(raw)} as "2006-01-02T15:04:05Z07:00": cannot parse {errors.go_quote(raw)}'
            ) from None
    opts = LogOptions(
        follow=go_bool(query.get("follow", "")),
        previous=go_bool(query.get("previous", "")),
        timestamps=go_bool(query.get("timestamps", "")),
        since_seconds=query_int(query, "sinceSeconds"),
        since_time=since_time,
        tail_lines=query_int(query, "tailLines"),
        limit_bytes=query_int(query, "limitBytes"),
    )
    problems = validation_errors(opts)
    if problems:
        field_errors = [
            errors.forbidden(f, detail) if value is None else errors.invalid(f, value, detail)
            for f, value, detail in problems
        ]
        raise errors.invalid_object("PodLogOptions", name, field_errors)
    return query.get("container", ""), opts, go_bool(query.get("insecureSkipTLSVerifyBackend", ""))


def kubelet_query(opts: LogOptions) -> str:
    """The options LogLocation passes on: only those set, sinceTime as RFC 3339."""
    params: list[tuple[str, str]] = []
    if opts.follow:
        params.append(("follow", "true"))
    if opts.previous:
        params.append(("previous", "true"))
    if opts.timestamps:
        params.append(("timestamps", "true"))
    if opts.since_seconds is not None:
        params.append(("sinceSeconds", str(opts.since_seconds)))
    if opts.since_time is not None:
        # Go's RFC 3339 of any year: a sinceTime whose UTC form leaves 1-9999 is passed on, not a crash.
        params.append(("sinceTime", format_utc(math.floor(opts.since_time))))
    if opts.tail_lines is not None:
        params.append(("tailLines", str(opts.tail_lines)))
    if opts.limit_bytes is not None:
        params.append(("limitBytes", str(opts.limit_bytes)))
    return urlencode(sorted(params))  # Go's url.Values.Encode sorts by key


async def serve_log(
    request: web.Request, pod: Object, get_node: Any, stopping: asyncio.Event | None = None
) -> web.StreamResponse:
    """Answer a `pods/log` GET for `pod` (already read); `get_node(name)` reads a Node (raises NotFound). The
    stream ends when `stopping` is set (the API server is shutting down, and ends its watches too)."""
    md = pod.get("metadata") or {}
    name, namespace = str(md.get("name", "")), str(md.get("namespace", ""))
    container, opts, _insecure = log_options(request.query, name)  # the kubelet is never verified anyway
    container = validate_container(container, pod)
    node_name = (pod.get("spec") or {}).get("nodeName")
    if not node_name:
        return web.Response(status=204)
    info = connection_info(await get_node(node_name))
    path = f"/containerLogs/{quote(namespace, safe='')}/{quote(name, safe='')}/{quote(container, safe='')}"
    query = kubelet_query(opts)
    url = info.url(path) + (f"?{query}" if query else "")
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT)
    stop = asyncio.ensure_future((stopping or asyncio.Event()).wait())
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False), timeout=timeout) as session:
            try:
                # A kubelet that accepts and never answers is given up with its client, as a Go request context.
                upstream = await _unless_abandoned(request, session.get(url, allow_redirects=False), stop)
            except (aiohttp.ClientError, OSError, TimeoutError) as e:
                raise errors.StatusError(500, "", f'Get "{url}": {e}') from None
            if upstream is None:
                raise errors.StatusError(500, "", f'Get "{url}": context canceled')
            async with upstream:
                if not 200 <= upstream.status <= 206:
                    body = (await upstream.content.read(MAX_ERROR_BODY)).decode("utf-8", "replace")
                    raise response_error(upstream.status, body, "pods/log", name)
                resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
                resp.enable_chunked_encoding()
                await resp.prepare(request)
                await _copy(request, upstream, resp, stop)
                with contextlib.suppress(ConnectionError):
                    await resp.write_eof()
                return resp
    finally:
        stop.cancel()


async def _unless_abandoned(request: web.Request, aw: Awaitable[T], stop: asyncio.Future[Any]) -> T | None:
    """What `aw` gives, or None (and `aw` cancelled) once the client has gone or `stop` is done, whichever is
    first: aiohttp does not cancel a handler whose client hangs up."""
    task = asyncio.ensure_future(aw)
    try:
        while True:
            done, _ = await asyncio.wait(
                {task, stop}, timeout=CLIENT_CHECK_SECONDS, return_when=asyncio.FIRST_COMPLETED
            )
            if task in done:
                return task.result()
            if stop in done or request.transport is None or request.transport.is_closing():
                return None
    finally:
        if not task.done():
            task.cancel()


async def _copy(
    request: web.Request, upstream: aiohttp.ClientResponse, resp: web.StreamResponse, stop: asyncio.Future[Any]
) -> None:
    """Copy the kubelet's body as it arrives; stop when it ends, the client has gone or the server stops."""
    while True:
        try:
            chunk = await _unless_abandoned(request, upstream.content.readany(), stop)
        except (aiohttp.ClientError, OSError):
            return  # the kubelet went away mid-stream: the log simply ends, as upstream's io.Copy does
        if not chunk:
            return
        try:
            await resp.write(chunk)
        except ConnectionError:
            return

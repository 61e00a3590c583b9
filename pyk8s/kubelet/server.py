"""The kubelet's HTTPS endpoint for the simulated nodes of one `pyk8s nodes` process (upstream:
pkg/kubelet/server/server.go): `GET /containerLogs/{namespace}/{pod}/{container}` with the v1 PodLogOptions
query, and `/healthz`. The API server's `pods/log` connects here, to the address and port each node
registered (InternalIP 127.0.0.1, `daemonEndpoints.kubeletEndpoint.Port`): one server serves every node of
the process, telling them apart by the pod's `spec.nodeName`.

`exec`, `attach`, `portForward` and `run` answer 400 with a sentence saying the containers are simulated:
there is no process to talk to. It binds loopback only, with a self-signed certificate made at start, as a
kubelet with no --tls-cert-file does; the API server does not verify it (no --kubelet-certificate-authority).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

from aiohttp import web

from ..component_server import serve_https
from .container_logs import (
    ContainerLogError,
    Instance,
    LogOptions,
    LogOptionsError,
    container_instance,
    container_spec,
    end_of,
    parse_options,
    printed,
    render,
)

log = logging.getLogger(__name__)

PodLookup = Callable[[str, str], Mapping[str, Any] | None]
# How often a following stream looks at the pod again for the instance's end or the pod's deletion.
FOLLOW_POLL_SECONDS = 0.5
SIMULATED = "containers on pyk8s simulated nodes are not real processes: {what} is not available"


def not_real(what: str) -> str:
    """The sentence a streaming request (exec, attach, port-forward, run) gets on a simulated node."""
    return SIMULATED.format(what=what)


class _LimitedWriter:
    """Writes to the response until `limit` bytes went out in all (the kubelet's limitBytes)."""

    def __init__(self, resp: web.StreamResponse, limit: int | None) -> None:
        self.resp = resp
        self.left = limit

    @property
    def full(self) -> bool:
        return self.left is not None and self.left <= 0

    async def write(self, chunks: list[bytes]) -> None:
        data = b"".join(chunks)
        if self.left is not None:
            data = data[: self.left]
            self.left -= len(data)
        if data:
            await self.resp.write(data)


class KubeletServer:
    """`await start()` binds and serves until `await stop()`; `port` is the bound port. `lookup(namespace,
    name)` gives a pod as this process last saw it (the pod workers' informer), None if unknown; only pods
    bound to one of `node_names` are served."""

    def __init__(
        self,
        lookup: PodLookup,
        node_names: Collection[str],
        *,
        bind_address: str = "127.0.0.1",
        port: int = 0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.lookup = lookup
        self.node_names = node_names
        self.bind_address = bind_address
        self.requested_port = port
        self.clock = clock
        self.port: int | None = None
        self._runner: web.AppRunner | None = None
        # Set by stop(): following streams end at once rather than hold the shutdown for aiohttp's 60 s.
        self._stopping = asyncio.Event()

    def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self.container_logs)
        for prefix, what in (("exec", "exec"), ("attach", "attach"), ("portForward", "port-forward"), ("run", "run")):
            app.router.add_route("*", f"/{prefix}/{{rest:.*}}", self._not_real(what))
        return app

    async def start(self) -> None:
        self._stopping.clear()
        self._runner, self.port = await serve_https(self._app(), self.bind_address, self.requested_port)
        log.info("kubelet endpoint of the simulated nodes on https://%s:%s", self.bind_address, self.port)

    async def stop(self) -> None:
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self.port = None

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")

    def _not_real(self, what: str) -> Callable[[web.Request], Any]:
        async def handle(_: web.Request) -> web.Response:
            return web.Response(status=400, text=not_real(what))

        return handle

    def _pod(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        pod = self.lookup(namespace, name)
        if pod is None or (pod.get("spec") or {}).get("nodeName") not in self.node_names:
            return None
        return pod

    async def container_logs(self, request: web.Request) -> web.StreamResponse:
        ns, name, cname = (request.match_info[k] for k in ("namespace", "pod", "container"))
        try:
            opts = parse_options(request.query)
        except LogOptionsError as e:
            return web.Response(status=e.code, text=str(e))
        pod = self._pod(ns, name)
        if pod is None:
            return web.Response(status=404, text=f'pod "{name}" does not exist\n')
        container = container_spec(pod, cname)
        if container is None:
            return web.Response(status=404, text=f'container "{cname}" not found in pod "{name}"\n')
        try:
            inst = container_instance(pod, cname, opts.previous)
        except ContainerLogError as e:
            return web.Response(status=400, text=str(e))
        now = self.clock()
        lines = printed(pod, container, inst, now)
        resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        out = _LimitedWriter(resp, opts.limit_bytes)
        await out.write(render(lines, opts, now))
        if opts.follow and not opts.previous and not out.full:
            await self._follow(request, out, ns, name, cname, inst, len(lines), opts)
        await resp.write_eof()
        return resp

    async def _follow(
        self,
        request: web.Request,
        out: _LimitedWriter,
        ns: str,
        name: str,
        cname: str,
        inst: Instance,
        shown: int,
        opts: LogOptions,
    ) -> None:
        """Write the instance's lines as they become due, until it ends, another instance replaces it, or the
        pod goes away (the kubelet follows a log file until its container stops)."""
        unbounded = LogOptions(timestamps=opts.timestamps, since_seconds=opts.since_seconds, since_time=opts.since_time)
        while not out.full and not self._stopping.is_set():
            if request.transport is None or request.transport.is_closing():
                return  # the API server hung up (kubectl was interrupted)
            pod = self._pod(ns, name)
            container = container_spec(pod, cname) if pod is not None else None
            if pod is None or container is None:
                return
            try:
                current = container_instance(pod, cname, False)
            except ContainerLogError:
                return
            if (current.container_id, current.started) != (inst.container_id, inst.started):
                return
            now = self.clock()
            lines = printed(pod, container, current, now)
            if len(lines) > shown:
                await out.write(render(lines[shown:], unbounded, now))
                shown = len(lines)
            end = end_of(pod, container, current)
            if end is not None and now >= end:
                return
            wait = FOLLOW_POLL_SECONDS
            upcoming = printed(pod, container, current, float("inf"))
            if len(upcoming) > shown:
                wait = min(wait, max(upcoming[shown][0] - now, 0.0))
            if end is not None:
                wait = min(wait, max(end - now, 0.0))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), wait)

"""The secure port every pyk8s component serves besides the API server: `/healthz`, `/livez`, `/readyz` (each
with named checks, `?verbose` and `/<endpoint>/<check>`, as the API server's) and `/metrics`, over HTTPS with a
self-signed certificate made at start. kube-scheduler (port 10259) and kube-controller-manager (port 10257)
serve the same when given no certificate (upstream: component-base and the generic server's secure serving).

With port 0 the kernel picks a free port; `port_file` then tells whoever started the component (`pyk8s up`)
which one: the file appears, holding the port, only once the port accepts connections.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest

from .apiserver.certs import self_signed_server_context
from .apiserver.health import Check, HealthChecks
from .file_modes import write_private_file

log = logging.getLogger(__name__)


async def _ping() -> bool:
    return True


async def serve_https(app: web.Application, host: str, port: int) -> tuple[web.AppRunner, int]:
    """Serve `app` on `host:port` (0: a free port) over HTTPS with a self-signed certificate for the loopback
    names and `host`; the runner (its `cleanup()` stops it) and the bound port. Nothing is left bound on failure."""
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    ssl_ctx = self_signed_server_context(["localhost", "127.0.0.1", host])
    site = web.TCPSite(runner, host, port, ssl_context=ssl_ctx)
    try:
        await site.start()
    except OSError:
        await runner.cleanup()
        raise
    server = getattr(site, "_server", None)
    sockets = getattr(server, "sockets", None) or []
    return runner, (sockets[0].getsockname()[1] if sockets else port)


class ComponentServer:
    """`await start()` binds and serves until `await stop()`; `port` is the bound port (None while stopped
    or when disabled with a negative `secure_port`)."""

    def __init__(
        self,
        component: str,
        *,
        bind_address: str = "127.0.0.1",
        secure_port: int,
        ready_checks: dict[str, Check] | None = None,
        registries: list[CollectorRegistry] | None = None,
        port_file: Path | None = None,
    ) -> None:
        self.component = component
        self.bind_address = bind_address
        self.secure_port = secure_port
        self.registries = registries or []
        self.port_file = port_file
        self.port: int | None = None
        self.health = HealthChecks(
            {
                "healthz": {"ping": _ping},
                "livez": {"ping": _ping},
                "readyz": {"ping": _ping, **(ready_checks or {})},
            }
        )
        self._runner: web.AppRunner | None = None

    def _app(self) -> web.Application:
        app = web.Application()

        def endpoint(name: str) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
            async def handle(request: web.Request) -> web.StreamResponse:
                return await self.health.serve(request, name, request.match_info.get("check", ""))

            return handle

        async def metrics(_: web.Request) -> web.Response:
            body = b"".join(generate_latest(r) for r in self.registries)
            return web.Response(body=body, content_type="text/plain", charset="utf-8")

        for name in ("healthz", "livez", "readyz"):
            app.router.add_get(f"/{name}", endpoint(name))
            app.router.add_get(f"/{name}/{{check}}", endpoint(name))
        app.router.add_get("/metrics", metrics)
        return app

    async def start(self) -> None:
        if self.secure_port < 0:
            return
        self._runner, self.port = await serve_https(self._app(), self.bind_address, self.secure_port)
        if self.port_file is not None:
            write_private_file(self.port_file, f"{self.port}\n".encode())  # whole: never half a port
        log.info("%s: serving health and metrics on https://%s:%s", self.component, self.bind_address, self.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.port_file is not None:
            self.port_file.unlink(missing_ok=True)
        self.port = None

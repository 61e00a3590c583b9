"""`pyk8s scheduler`: the Scheduler as a component (upstream: cmd/kube-scheduler/app/server.go).

It serves `/healthz`, `/livez`, `/readyz` and `/metrics` on its secure port (HTTPS with a self-signed
certificate made at start, as kube-scheduler does without one), and schedules only while it holds the
`kube-system/kube-scheduler` Lease when leader election is on.
"""

from __future__ import annotations

import logging
import ssl
import tempfile
from pathlib import Path

from aiohttp import web
from prometheus_client import generate_latest

from ..client.rest import RESTClient
from .config import SchedulerConfig
from .metrics import SCHEDULER_REGISTRY
from .scheduler import Scheduler, default_identity

log = logging.getLogger(__name__)


class SchedulerServer:
    def __init__(
        self,
        client: RESTClient,
        config: SchedulerConfig,
        *,
        leader_elect: bool | None = None,
        bind_address: str = "127.0.0.1",
        secure_port: int = 10259,
        feature_gates: dict[str, bool] | None = None,
    ) -> None:
        self.client = client
        self.config = config
        self.leader_elect = config.leader_election.leader_elect if leader_elect is None else leader_elect
        self.bind_address = bind_address
        self.secure_port = secure_port
        self.feature_gates = feature_gates
        self.scheduler: Scheduler | None = None
        self.port: int | None = None
        self._runner: web.AppRunner | None = None
        self._leading = False

    # -- health and metrics -----------------------------------------------------------------------------------

    def _app(self) -> web.Application:
        app = web.Application()

        async def ok(_: web.Request) -> web.Response:
            return web.Response(text="ok")

        async def readyz(_: web.Request) -> web.Response:
            # Ready once informers synced; a standby replica (not leading) is ready too, as upstream's is.
            sched = self.scheduler
            if self.leader_elect and not self._leading:
                return web.Response(text="ok")
            if sched is None or not sched.ready.is_set():
                return web.Response(
                    status=500, text="[-]sched-handler-sync failed: caches not synced\nreadyz check failed"
                )
            return web.Response(text="ok")

        async def metrics_handler(_: web.Request) -> web.Response:
            return web.Response(body=generate_latest(SCHEDULER_REGISTRY), content_type="text/plain", charset="utf-8")

        for path in ("/healthz", "/livez"):
            app.router.add_get(path, ok)
        app.router.add_get("/readyz", readyz)
        app.router.add_get("/metrics", metrics_handler)
        return app

    def _ssl_context(self) -> ssl.SSLContext:
        from ..apiserver.certs import self_signed_serving_pair

        cert, key = self_signed_serving_pair(["localhost", "127.0.0.1", self.bind_address])
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        with tempfile.TemporaryDirectory() as d:  # ssl wants files; they live only as long as loading them
            cp, kp = Path(d, "tls.crt"), Path(d, "tls.key")
            cp.write_bytes(cert)
            kp.write_bytes(key)
            ctx.load_cert_chain(cp, kp)
        return ctx

    async def start_serving(self) -> None:
        if self.secure_port < 0:
            return
        self._runner = web.AppRunner(self._app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.bind_address, self.secure_port, ssl_context=self._ssl_context())
        await site.start()
        server = getattr(site, "_server", None)
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else self.secure_port
        log.info("scheduler: serving health and metrics on https://%s:%s", self.bind_address, self.port)

    # -- running ----------------------------------------------------------------------------------------------

    async def _schedule(self) -> None:
        self._leading = True
        self.scheduler = Scheduler(self.client, self.config, feature_gates=self.feature_gates)
        try:
            await self.scheduler.run()
        finally:
            self._leading = False

    async def run(self) -> None:
        await self.start_serving()
        try:
            if not self.leader_elect:
                await self._schedule()
                return
            from ..client.leaderelection import LeaderElectionConfig, LeaderElector, LeaseLock

            le = self.config.leader_election
            identity = default_identity()
            lock = LeaseLock(self.client, le.resource_namespace, le.resource_name, identity)

            def stopped() -> None:
                log.info("scheduler: %s stopped leading", identity)

            config = LeaderElectionConfig(
                lock=lock,
                lease_duration=le.lease_duration,
                renew_deadline=le.renew_deadline,
                retry_period=le.retry_period,
                on_started_leading=self._schedule,
                on_stopped_leading=stopped,
                release_on_cancel=True,
            )
            await LeaderElector(config).run()
        finally:
            if self._runner is not None:
                await self._runner.cleanup()

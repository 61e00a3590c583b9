"""`pyk8s scheduler`: the Scheduler as a component (upstream: cmd/kube-scheduler/app/server.go).

It serves `/healthz`, `/livez`, `/readyz` and `/metrics` on its secure port (`pyk8s.component_server`: HTTPS
with a self-signed certificate made at start, as kube-scheduler does without one), and schedules only while it
holds the `kube-system/kube-scheduler` Lease when leader election is on.
"""

from __future__ import annotations

import logging
from pathlib import Path

from ..client.rest import RESTClient
from ..component_server import ComponentServer
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
        port_file: Path | None = None,
    ) -> None:
        self.client = client
        self.config = config
        self.leader_elect = config.leader_election.leader_elect if leader_elect is None else leader_elect
        self.bind_address = bind_address
        self.secure_port = secure_port
        self.feature_gates = feature_gates
        self.port_file = port_file
        self.scheduler: Scheduler | None = None
        self._serving: ComponentServer | None = None
        self._leading = False
        self._leader_seen = ""
        self._identity = ""

    # -- health and metrics -----------------------------------------------------------------------------------

    async def _handlers_synced(self) -> bool:
        # Ready once informers synced. Upstream's standby replica is ready from its start; ours once it has seen
        # another replica hold the lease, so that a lone replica about to lead is not ready before it synced.
        if self.leader_elect and not self._leading:
            return self._leader_seen not in ("", self._identity)
        return self.scheduler is not None and self.scheduler.ready.is_set()

    def _observe_leader(self, identity: str) -> None:
        self._leader_seen = identity

    async def start_serving(self) -> None:
        self._serving = ComponentServer(
            "scheduler",
            bind_address=self.bind_address,
            secure_port=self.secure_port,
            ready_checks={"sched-handler-sync": self._handlers_synced},
            registries=[SCHEDULER_REGISTRY],
            port_file=self.port_file,
        )
        await self._serving.start()

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
            identity = self._identity = default_identity()
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
                on_new_leader=self._observe_leader,
                release_on_cancel=True,
            )
            await LeaderElector(config).run()
        finally:
            if self._serving is not None:
                await self._serving.stop()
